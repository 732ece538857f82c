package dynamodb_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	sdk "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/session"
	ddbstore "github.com/archmax-ai/archmax/core/store/dynamodb"
	"github.com/archmax-ai/archmax/core/store/memory"
	s3store "github.com/archmax-ai/archmax/core/store/s3"
	"github.com/archmax-ai/archmax/local/dynamotest"
)

// metered counts DynamoDB write requests and the bytes they write (DynamoDB's item-size
// rule: a put writes its item; an update writes the whole item as it stands after it).
type metered struct {
	ddbstore.API
	table  string
	mu     sync.Mutex
	writes []int // per write request: bytes written
}

func (m *metered) BatchWriteItem(ctx context.Context, in *sdk.BatchWriteItemInput, opts ...func(*sdk.Options)) (*sdk.BatchWriteItemOutput, error) {
	out, err := m.API.BatchWriteItem(ctx, in, opts...)
	n := 0
	for _, reqs := range in.RequestItems {
		for _, r := range reqs {
			if r.PutRequest != nil {
				n += ddbstore.ItemBytes(r.PutRequest.Item)
			}
		}
	}
	m.record(n)
	return out, err
}

func (m *metered) UpdateItem(ctx context.Context, in *sdk.UpdateItemInput, opts ...func(*sdk.Options)) (*sdk.UpdateItemOutput, error) {
	out, err := m.API.UpdateItem(ctx, in, opts...)
	if err == nil {
		got, gerr := m.API.GetItem(ctx, &sdk.GetItemInput{TableName: in.TableName, Key: in.Key, ConsistentRead: aws.Bool(true)})
		if gerr == nil {
			m.record(ddbstore.ItemBytes(got.Item))
		}
	}
	return out, err
}

func (m *metered) record(n int) {
	m.mu.Lock()
	m.writes = append(m.writes, n)
	m.mu.Unlock()
}

// readLoop asks for read_file of the 2 KB tool result on every call, `steps` times.
type readLoop struct {
	steps int
	n     atomic.Int64
}

func (l *readLoop) Converse(_ context.Context, _ *model.Request) (*model.Response, error) {
	i := l.n.Add(1)
	if int(i) > l.steps {
		return &model.Response{StopReason: model.StopEndTurn, Usage: &model.Usage{InputTokens: 10, OutputTokens: 5},
			Message: model.Message{Role: model.RoleAssistant, Content: []model.Block{{Kind: model.BlockText, Text: "done"}}}}, nil
	}
	input, _ := json.Marshal(map[string]any{"file_path": "scratchpad/result.txt"})
	return &model.Response{StopReason: model.StopToolUse, Usage: &model.Usage{InputTokens: 1200, OutputTokens: 40},
		Message: model.Message{Role: model.RoleAssistant, Content: []model.Block{
			{Kind: model.BlockToolUse, ToolUse: &model.ToolUse{ID: fmt.Sprintf("tu_%d", i), Name: "read_file", Input: input}},
		}}}, nil
}

// TestBytesWrittenPerAgentStep measures, on DynamoDB Local, what one agent step writes —
// a model call that reads the 2 KB tool result of ../shared/bench/code-state, its tool
// message and events, committed as one step — at step 10 and at step 200 of one session.
// Goals (issue "Durable on AWS"): at most 2 write requests per step, at most 4 KB per step,
// and flat: step 200 ≤ 1.1 × step 10.
func TestBytesWrittenPerAgentStep(t *testing.T) {
	client, table := dynamotest.NewTable(t)
	m := &metered{API: client, table: table}
	payload, err := os.ReadFile("../../session/testdata/tool-result-2048.txt")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	authored, files := memory.NewFiles(), memory.NewFiles()
	if err := authored.Write(ctx, "workflows/wf/workflow.yaml", []byte("title: Bench\nstates:\n  work:\n    triggers:\n      manual:\n")); err != nil {
		t.Fatal(err)
	}
	if err := files.Write(ctx, "s/scratchpad/result.txt", payload); err != nil {
		t.Fatal(err)
	}
	const steps = 200
	eng, err := session.New(session.Config{Workflow: "wf", Authored: authored, Log: ddbstore.New(m, table, newBlobs()),
		Files: files, Model: &readLoop{steps: steps}, ModelID: "m", StepLimit: steps + 10})
	if err != nil {
		t.Fatal(err)
	}
	out, err := eng.Send(ctx, "s", session.SendInput{Message: "go"})
	if err != nil || out.Kind != session.KindCompleted {
		t.Fatalf("send: %v %+v", err, out)
	}
	// write requests: [acquire] [opening: batch, head] then per step [batch, head] … [settle] [release]
	w := m.writes
	if len(w) < 2*steps {
		t.Fatalf("only %d write requests", len(w))
	}
	step := func(k int) (int, int) { // the k-th agent step's commit (1-based): 2 requests after the opening commit
		i := 1 + 2 + 2*(k-1)
		return w[i] + w[i+1], 2
	}
	b10, n10 := step(10)
	b200, n200 := step(200)
	t.Logf("step 10: %d write requests, %d bytes; step 200: %d write requests, %d bytes (ratio %.3f)", n10, b10, n200, b200, float64(b200)/float64(b10))
	if b10 > 4096 || b200 > 4096 {
		t.Errorf("bytes per step over 4 KB: %d / %d", b10, b200)
	}
	if float64(b200) > 1.1*float64(b10) {
		t.Errorf("bytes per step grow with the session: %d → %d", b10, b200)
	}
	// every commit is exactly one BatchWriteItem and one UpdateItem: count the requests between
	// the opening commit and the settle by pairing
	// acquire + opening commit + 2 per step + settle + release
	if total := len(w); total != 1+2+2*steps+2+1 {
		t.Errorf("write requests = %d for %d steps; want exactly 2 per step (BatchWriteItem + head UpdateItem)", total, steps)
	}
}

// bigValues calls a host tool returning 1.5 MB, writes a 300 KB variable, then answers.
type bigValues struct {
	value string
	n     atomic.Int64
}

func (b *bigValues) Converse(_ context.Context, _ *model.Request) (*model.Response, error) {
	use := func(name string, args map[string]any) (*model.Response, error) {
		input, _ := json.Marshal(args)
		return &model.Response{StopReason: model.StopToolUse, Message: model.Message{Role: model.RoleAssistant, Content: []model.Block{
			{Kind: model.BlockToolUse, ToolUse: &model.ToolUse{ID: fmt.Sprintf("tu_%d", b.n.Load()), Name: name, Input: input}}}}}, nil
	}
	switch b.n.Add(1) {
	case 1:
		return use("export_ledger", map[string]any{})
	case 2:
		return use("archmax_set_variables", map[string]any{"variables": map[string]any{"report": b.value}})
	}
	return &model.Response{StopReason: model.StopEndTurn, Message: model.Message{Role: model.RoleAssistant, Content: []model.Block{{Kind: model.BlockText, Text: "stored"}}}}, nil
}

// Issue "Durable on AWS" acceptance: a 1.5 MB tool result and a 300 KB variable through the
// engine on DynamoDB Local + S3 (gofakes3): the result is offloaded to the session's files
// and the variable lives in a content-addressed blob, every DynamoDB item stays under
// 400 KB, and both read back byte-identical in a later call (a fresh engine, as a later
// Lambda invocation).
func TestLargeValuesThroughTheEngine(t *testing.T) {
	client, table := dynamotest.NewTable(t)
	ctx := context.Background()
	srv := httptest.NewServer(gofakes3.New(s3mem.New()).Server())
	t.Cleanup(srv.Close)
	s3c := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("archmax-test")}); err != nil {
		t.Fatal(err)
	}
	blobs := s3store.NewBlobs(s3c, "archmax-test", "sessions/")
	files := s3store.NewFiles(s3c, "archmax-test", "sessions/")
	authored := memory.NewFiles()
	if err := authored.Write(ctx, "workflows/wf/workflow.yaml", []byte("states:\n  work:\n    triggers:\n      manual:\n    tools:\n      allow: [export_ledger]\n")); err != nil {
		t.Fatal(err)
	}
	const line = "ledger line, amount 12.50\n"
	ledger := make([]byte, 1500<<10)
	for i := range ledger {
		ledger[i] = line[i%len(line)]
	}
	big := strings.Repeat("report \"quoted\" line\n", 300<<10/21)
	tool := session.HostTool{Name: "export_ledger", Description: "Export the ledger.", InputSchema: json.RawMessage(`{"type":"object"}`),
		Handler: func(context.Context, session.HostCall) (string, error) { return string(ledger), nil }}
	cfg := session.Config{Workflow: "wf", Authored: authored, Log: ddbstore.New(client, table, blobs), Files: files, Blobs: blobs,
		Model: &bigValues{value: big}, ModelID: "m", Tools: []session.HostTool{tool}}
	eng, err := session.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out, err := eng.Send(ctx, "big", session.SendInput{Message: "export and store"})
	if err != nil || out.Kind != session.KindCompleted {
		t.Fatalf("send: %v %+v", err, out)
	}
	entries, err := files.List(ctx, "big/large_tool_results")
	if err != nil || len(entries) != 1 {
		t.Fatalf("offloaded results = %+v, %v", entries, err)
	}
	if got, err := files.Read(ctx, "big/large_tool_results/"+entries[0].Name); err != nil || !bytes.Equal(got, ledger) {
		t.Fatalf("the 1.5 MB result did not read back identical (%d bytes, %v)", len(got), err)
	}
	answer := &bigValues{}
	answer.n.Store(2) // the next call just answers
	cfg.Model = answer
	eng2, err := session.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out, err = eng2.Send(ctx, "big", session.SendInput{Message: "again"})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := out.Variables["report"].Value.(string); got != big {
		t.Fatalf("the 300 KB variable did not read back identical (%d bytes)", len(got))
	}
	listed, err := s3c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("archmax-test"), Prefix: aws.String("sessions/big/_blobs/")})
	if err != nil || len(listed.Contents) == 0 {
		t.Fatalf("no blobs under sessions/big/_blobs/: %v", err)
	}
	assertItemsUnder400KB(t, client, table)
}

// assertItemsUnder400KB scans the table and checks every item by DynamoDB's size rule.
func assertItemsUnder400KB(t *testing.T, client *sdk.Client, table string) {
	t.Helper()
	p := sdk.NewScanPaginator(client, &sdk.ScanInput{TableName: aws.String(table)})
	n := 0
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			n++
			if size := ddbstore.ItemBytes(it); size >= ddbstore.MaxItemBytes {
				t.Errorf("item of %d bytes", size)
			}
		}
	}
	if n == 0 {
		t.Fatal("no items scanned")
	}
}
