package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/archmax-ai/archmax/core/model/scripted"
	"github.com/archmax-ai/archmax/core/session"
	ddbstore "github.com/archmax-ai/archmax/core/store/dynamodb"
	s3store "github.com/archmax-ai/archmax/core/store/s3"
	"github.com/archmax-ai/archmax/core/transcript"
	"github.com/archmax-ai/archmax/functions/handlers/starts"
	"github.com/archmax-ai/archmax/local/conversefake"
	"github.com/archmax-ai/archmax/local/dynamotest"
	"github.com/archmax-ai/archmax/local/s3test"
)

const (
	bucket    = "archmax-e2e"
	workspace = "../../fixtures/access-desk"
	eventsDir = "../../fixtures/events"
)

// stack is the turn Lambda's handler over real-protocol peers: DynamoDB Local, gofakes3
// over HTTP, and the Converse fake serving a scripted model through the Bedrock client.
type stack struct {
	h     *starts.Handler
	ddb   *dynamodb.Client
	table string
	log   *ddbstore.Store
	files *s3store.Files
	blobs *s3store.Blobs
}

func newStack(t *testing.T, modelScript string) *stack {
	t.Helper()
	ddb, table := dynamotest.NewTable(t) // skips without DYNAMODB_ENDPOINT
	ctx := context.Background()

	s3c, s3URL := s3test.NewBucket(t, bucket)
	s3test.Upload(t, s3c, bucket, workspace, "specs/")
	s3test.Upload(t, s3c, bucket, "testdata/specs", "specs/")

	src, err := os.ReadFile(modelScript)
	if err != nil {
		t.Fatal(err)
	}
	script, err := scripted.Parse(modelScript, src)
	if err != nil {
		t.Fatal(err)
	}
	model := httptest.NewServer(conversefake.New(script))
	t.Cleanup(model.Close)

	env := map[string]string{
		"ARCHMAX_TABLE":             table,
		"ARCHMAX_BUCKET":            bucket,
		"ARCHMAX_MODEL":             "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
		"ARCHMAX_DYNAMODB_ENDPOINT": os.Getenv("DYNAMODB_ENDPOINT"),
		"ARCHMAX_S3_ENDPOINT":       s3URL,
		"ARCHMAX_BEDROCK_ENDPOINT":  model.URL,
		"AWS_ACCESS_KEY_ID":         "local",
		"AWS_SECRET_ACCESS_KEY":     "local",
		"AWS_REGION":                "us-east-1",
	}
	h, _, err := newHandler(ctx, func(k string) string { return env[k] }, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	blobs := s3store.NewBlobs(s3c, bucket, "sessions/")
	return &stack{h: h, ddb: ddb, table: table, log: ddbstore.New(ddb, table, blobs), files: s3store.NewFiles(s3c, bucket, "sessions/"), blobs: blobs}
}

// event reads a fixture event; edit adjusts it for the case.
func event(t *testing.T, name string, edit func(*events.APIGatewayV2HTTPRequest)) events.APIGatewayV2HTTPRequest {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(eventsDir, name))
	if err != nil {
		t.Fatal(err)
	}
	var req events.APIGatewayV2HTTPRequest
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		t.Fatalf("%s is not an API Gateway v2 event: %v", name, err)
	}
	if edit != nil {
		edit(&req)
	}
	return req
}

// onSession points a turn event at session id.
func onSession(id string) func(*events.APIGatewayV2HTTPRequest) {
	return func(r *events.APIGatewayV2HTTPRequest) {
		r.PathParameters["sessionId"] = id
		r.RawPath = "/v1/workflows/" + r.PathParameters["workflow"] + "/sessions/" + id + "/turns"
		r.RequestContext.HTTP.Path = r.RawPath
	}
}

type answer struct {
	status int
	body   map[string]any
}

func (a answer) code() string {
	e, _ := a.body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func (s *stack) send(t *testing.T, req events.APIGatewayV2HTTPRequest) answer {
	t.Helper()
	raw, _ := json.Marshal(req) // as the Lambda runtime hands the event over
	got, err := s.h.Handle(context.Background(), raw)
	resp, ok := got.(events.APIGatewayV2HTTPResponse)
	if err != nil || !ok {
		t.Fatalf("Handle: %v %T", err, got)
	}
	a := answer{status: resp.StatusCode}
	if err := json.Unmarshal([]byte(resp.Body), &a.body); err != nil {
		t.Fatalf("answer is not JSON: %s", resp.Body)
	}
	return a
}

// items counts a session's DynamoDB items by kind: HEAD, M, T, E.
func (s *stack) items(t *testing.T, id string) map[string]int {
	t.Helper()
	counts := map[string]int{}
	p := dynamodb.NewQueryPaginator(s.ddb, &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":pk": &ddbtypes.AttributeValueMemberS{Value: "S#" + id}},
		ConsistentRead:            aws.Bool(true),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			sk := it["sk"].(*ddbtypes.AttributeValueMemberS).Value
			kind, _, _ := strings.Cut(sk, "#")
			counts[kind]++
		}
	}
	return counts
}

func (s *stack) tableSize(t *testing.T) int32 {
	t.Helper()
	out, err := s.ddb.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(s.table), Select: ddbtypes.SelectCount, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	return out.Count
}

func (s *stack) trail(t *testing.T, id string, n int64) string {
	t.Helper()
	raws, err := s.log.TrailSteps(context.Background(), id, 0, n)
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, raw := range raws {
		var step transcript.TrailStep
		if err := json.Unmarshal(raw, &step); err != nil {
			t.Fatal(err)
		}
		parts = append(parts, string(step.Kind)+":"+step.To)
	}
	return strings.Join(parts, " ")
}

// The issue's acceptance: the turn Lambda runs the fixture workflow's two-turn script on
// DynamoDB + S3 + Bedrock peers, with the HTTP contract's refusals (DESIGN.md §1, §3).
func TestTurnLambdaEndToEnd(t *testing.T) {
	s := newStack(t, path.Join(workspace, "model-scripts", "two-turn.model.yaml"))
	ctx := context.Background()

	// turn 1: a start with a minted id completes in clarify
	first := s.send(t, event(t, "turn-start.json", nil))
	if first.status != http.StatusOK || first.body["kind"] != "completed" || first.body["state"] != "clarify" || first.body["turn"] != 1.0 {
		t.Fatalf("turn 1: %d %v", first.status, first.body)
	}
	if first.body["reply"] != "Happy to help — which area do you need access to?" {
		t.Errorf("turn 1 reply = %v", first.body["reply"])
	}
	id, _ := first.body["sessionId"].(string)
	if !strings.HasPrefix(id, "session-") {
		t.Fatalf("sessionId = %q, want a minted id", id)
	}
	head, err := s.log.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if head.Workflow != "access-request" || head.Status != "completed" || head.Lease != nil {
		t.Errorf("head = %+v", head)
	}
	items := s.items(t, id)
	if items["HEAD"] != 1 || items["M"] != int(head.Messages) || items["T"] != int(head.Trail) || items["E"] != int(head.Events) ||
		head.Messages < 2 || head.Events == 0 {
		t.Errorf("items %v for head counters m=%d t=%d e=%d", items, head.Messages, head.Trail, head.Events)
	}
	if got := s.trail(t, id, head.Trail); got != "trigger:screen code:clarify" {
		t.Errorf("turn 1 trail = %s", got)
	}

	// a second writer while another holds the lease: 409, the first checkpoint intact
	if _, err := s.log.Acquire(ctx, id, "another-invocation", time.Minute); err != nil {
		t.Fatal(err)
	}
	busy := s.send(t, event(t, "turn-continue.json", onSession(id)))
	if busy.status != http.StatusConflict || busy.code() != "SessionNotResumableError" {
		t.Fatalf("second writer: %d %v", busy.status, busy.body)
	}
	after, err := s.log.Get(ctx, id)
	if err != nil || after.Version != head.Version || after.Messages != head.Messages || after.Trail != head.Trail || after.Events != head.Events {
		t.Errorf("checkpoint changed under a held lease: before %+v, after %+v (%v)", head, after, err)
	}
	if got := s.items(t, id); len(got) != len(items) || got["M"] != items["M"] || got["T"] != items["T"] || got["E"] != items["E"] {
		t.Errorf("items changed under a held lease: %v → %v", items, got)
	}
	if err := s.log.Release(ctx, id, "another-invocation"); err != nil {
		t.Fatal(err)
	}

	// turn 2 on the same session: the continuation ends in approve
	second := s.send(t, event(t, "turn-continue.json", onSession(id)))
	if second.status != http.StatusOK || second.body["sessionId"] != id || second.body["turn"] != 2.0 ||
		second.body["state"] != "approve" || second.body["kind"] != "completed" {
		t.Fatalf("turn 2: %d %v", second.status, second.body)
	}
	if second.body["reply"] != "Approved — your badge will open the Print Room within the hour." {
		t.Errorf("turn 2 reply = %v", second.body["reply"])
	}
	head2, err := s.log.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.trail(t, id, head2.Trail); got != "trigger:screen code:clarify trigger:clarify reset:screen code:check-grants agent:approve" {
		t.Errorf("turn 2 trail = %s", got)
	}
	if items := s.items(t, id); items["M"] != int(head2.Messages) || head2.Messages <= head.Messages {
		t.Errorf("after turn 2: items %v, messages %d → %d", items, head.Messages, head2.Messages)
	}

	// the refusals write nothing
	before := s.tableSize(t)

	sig := s.send(t, event(t, "turn-signature.json", nil))
	if sig.status != http.StatusUnprocessableEntity || sig.code() != "SignatureIssuesError" {
		t.Fatalf("signature: %d %v", sig.status, sig.body)
	}
	issues, _ := sig.body["error"].(map[string]any)["details"].(map[string]any)["issues"].([]any)
	var names []string
	for _, is := range issues {
		m := is.(map[string]any)
		names = append(names, m["name"].(string)+":"+m["kind"].(string))
	}
	if strings.Join(names, " ") != "badge_id:invalid expires_on:missing" {
		t.Errorf("issues = %v", issues)
	}
	if n := s.items(t, "48213"); len(n) != 0 {
		t.Errorf("a refused start wrote %v", n)
	}

	if bad := s.send(t, event(t, "turn-bad-json.json", nil)); bad.status != http.StatusBadRequest || bad.code() != "InvalidRequestError" {
		t.Errorf("bad JSON: %d %v", bad.status, bad.body)
	}
	unknown := s.send(t, event(t, "turn-start.json", func(r *events.APIGatewayV2HTTPRequest) {
		r.PathParameters["workflow"] = "no-such-workflow"
		r.RawPath = "/v1/workflows/no-such-workflow/sessions"
	}))
	if unknown.status != http.StatusNotFound || unknown.code() != "UnknownWorkflowError" {
		t.Errorf("unknown workflow: %d %v", unknown.status, unknown.body)
	}
	if after := s.tableSize(t); after != before {
		t.Errorf("the table went from %d to %d items across refused requests", before, after)
	}

	// session reads over the same DynamoDB log and S3 files (02 §9.6/§9.7)
	sessions := session.NewSessions(s.log, s.files, s.blobs)
	sum, err := sessions.Get(ctx, id)
	if err != nil || sum.Status != session.StatusCompleted || sum.WorkflowState != "approve" || sum.Turn != 2 ||
		sum.MessageCount != head2.Messages || sum.Variables["team"].Value != "finance" {
		t.Fatalf("summary = %+v, %v", sum, err)
	}
	list, _, err := sessions.List(ctx, session.ListOptions{Workflow: "access-request"})
	if err != nil || len(list) != 1 || list[0].SessionID != id {
		t.Errorf("list = %+v, %v", list, err)
	}
	page, next, err := sessions.Messages(ctx, id, 2, 3)
	if err != nil || len(page) != 3 || next != 5 {
		t.Errorf("messages page = %d, next %d, %v", len(page), next, err)
	}
	if existed, err := sessions.Delete(ctx, id); err != nil || !existed {
		t.Fatalf("delete = %v, %v", existed, err)
	}
	var nf *session.SessionNotFoundError
	if _, err := sessions.Get(ctx, id); !errors.As(err, &nf) {
		t.Errorf("after delete: %v", err)
	}
	if items := s.items(t, id); len(items) != 0 {
		t.Errorf("delete left items %v", items)
	}
}
