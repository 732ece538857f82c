package dynamodb_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	sdk "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/session"
	ddbstore "github.com/archmax-ai/archmax/core/store/dynamodb"
	"github.com/archmax-ai/archmax/core/store/memory"
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

// setBig writes a 300 KB variable, then answers.
type setBig struct {
	value string
	n     atomic.Int64
}

func (s *setBig) Converse(_ context.Context, _ *model.Request) (*model.Response, error) {
	if s.n.Add(1) == 1 {
		input, _ := json.Marshal(map[string]any{"variables": map[string]any{"report": s.value}})
		return &model.Response{StopReason: model.StopToolUse, Message: model.Message{Role: model.RoleAssistant, Content: []model.Block{
			{Kind: model.BlockToolUse, ToolUse: &model.ToolUse{ID: "tu_1", Name: "archmax_set_variables", Input: input}}}}}, nil
	}
	return &model.Response{StopReason: model.StopEndTurn, Message: model.Message{Role: model.RoleAssistant, Content: []model.Block{{Kind: model.BlockText, Text: "stored"}}}}, nil
}

// A 300 KB variable travels through the engine on DynamoDB: the record body and the tool
// message go to blobs, every item stays under 400 KB, and the value reads back identical in
// a later call (a fresh engine, as a later Lambda invocation).
func TestLargeVariableThroughTheEngine(t *testing.T) {
	client, table := dynamotest.NewTable(t)
	ctx := context.Background()
	authored := memory.NewFiles()
	if err := authored.Write(ctx, "workflows/wf/workflow.yaml", []byte("states:\n  work:\n    triggers:\n      manual:\n")); err != nil {
		t.Fatal(err)
	}
	big := make([]byte, 300<<10)
	for i := range big {
		big[i] = "abcdefghijklmnopqrstuvwxyz0123456789 \"\n"[i%39]
	}
	blobs := newBlobs()
	cfg := session.Config{Workflow: "wf", Authored: authored, Log: ddbstore.New(client, table, blobs), Files: memory.NewFiles(),
		Model: &setBig{value: string(big)}, ModelID: "m"}
	eng, err := session.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Send(ctx, "big", session.SendInput{Message: "store it"}); err != nil {
		t.Fatal(err)
	}
	answer := &setBig{}
	answer.n.Store(1) // the next call just answers
	cfg.Model = answer
	eng2, err := session.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out, err := eng2.Send(ctx, "big", session.SendInput{Message: "again"})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := out.Variables["report"].Value.(string); got != string(big) {
		t.Fatalf("the 300 KB variable did not read back identical (%d bytes)", len(got))
	}
	assertItemsUnder400KB(t, client, table)
	blobs.mu.Lock()
	defer blobs.mu.Unlock()
	if len(blobs.blobs) < 2 { // the record body and the assistant message carrying the value
		t.Errorf("%d blobs stored, want the large body and message offloaded", len(blobs.blobs))
	}
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
