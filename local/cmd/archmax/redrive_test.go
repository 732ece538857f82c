package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/store/memory"
	"github.com/archmax-ai/archmax/functions/handlers/starts"
	"github.com/archmax-ai/archmax/local/lambdafake"
	"github.com/archmax-ai/archmax/local/sqsfake"
)

// redriveRig is a stage "dev" over real-protocol peers: the SQS fake holding the stage's
// queues and the Lambda fake running its functions, reached by the CLI through the SDK's
// endpoint variables; the turn function is the real start handler over a memory store.
type redriveRig struct {
	queues  *sqsfake.Fake
	lambda  *lambdafake.Fake
	client  *sqs.Client
	engines *session.Engines
	model   *countingModel

	mu      sync.Mutex
	results map[string][]string // function → the JSON answers of its invocations
	// lambdaHook, when set, sees each request to Lambda first; true: it answered it
	lambdaHook func(http.ResponseWriter, *http.Request) bool
	configs    int // GetFunctionConfiguration calls
}

// countingModel answers every call with one reply and counts the calls.
type countingModel struct {
	mu    sync.Mutex
	calls int
}

func (m *countingModel) Converse(context.Context, *model.Request) (*model.Response, error) {
	m.mu.Lock()
	m.calls++
	m.mu.Unlock()
	return &model.Response{Message: model.Message{Role: model.RoleAssistant, Content: []model.Block{{Kind: model.BlockText, Text: "Packed."}}},
		StopReason: model.StopEndTurn, Usage: &model.Usage{InputTokens: 5, OutputTokens: 1}}, nil
}

func (m *countingModel) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls
}

const packingWorkflow = `
title: Packing
states:
  pack:
    triggers:
      order:
        session: order_id
    instructions: Pack the order.
`

func newRedriveRig(t *testing.T) *redriveRig {
	t.Helper()
	rig := &redriveRig{queues: sqsfake.New(sqsfake.WithMaxWait(0)), lambda: lambdafake.New(lambdafake.WithRetryDelays(), lambdafake.WithStrictARNs()),
		model: &countingModel{}, results: map[string][]string{}}
	for _, q := range redriveQueues {
		rig.queues.CreateQueue("archmax-dev-" + q)
	}
	sqsSrv := httptest.NewServer(rig.queues)
	lambdaSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rig.mu.Lock()
		hook := rig.lambdaHook
		if strings.HasSuffix(r.URL.Path, "/configuration") {
			rig.configs++
		}
		rig.mu.Unlock()
		if hook != nil && hook(w, r) {
			return
		}
		rig.lambda.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { rig.lambda.Close(); lambdaSrv.Close(); sqsSrv.Close() })

	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL_SQS": sqsSrv.URL, "AWS_ENDPOINT_URL_LAMBDA": lambdaSrv.URL,
		"AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local", "AWS_REGION": "us-east-1",
		"AWS_CONFIG_FILE": filepath.Join(dir, "config"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "credentials"), "AWS_PROFILE": "",
	} {
		t.Setenv(k, v)
	}
	saved := redriveWait
	redriveWait = 0
	t.Cleanup(func() { redriveWait = saved })

	rig.client = sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(sqsSrv.URL), Credentials: aws.AnonymousCredentials{}})

	authored := memory.NewFiles()
	if err := authored.Write(context.Background(), "workflows/packing/workflow.yaml", []byte(packingWorkflow)); err != nil {
		t.Fatal(err)
	}
	rig.engines = session.NewEngines(session.Config{Authored: authored, Log: memory.New(), Files: memory.NewFiles(), Model: rig.model, ModelID: "test"})
	turn := starts.New(rig.engines, nil, []starts.Route{{Source: "orders.app", DetailType: "Order Placed", Workflow: "packing", Trigger: "order"}}, nil)
	rig.lambda.Register("archmax-dev-turn", rig.recording("turn", func(ctx context.Context, p []byte) (any, error) { return turn.Handle(ctx, p) }))
	for _, fn := range []string{"deliver", "wake"} { // recorders: what they were handed is what the test checks
		rig.lambda.Register("archmax-dev-"+fn, rig.recording(fn, func(context.Context, []byte) (any, error) { return map[string]bool{"ok": true}, nil }))
	}
	return rig
}

// recording wraps a handler so its answers are kept under fn.
func (rig *redriveRig) recording(fn string, h func(context.Context, []byte) (any, error)) lambdafake.Handler {
	return func(ctx context.Context, payload []byte) ([]byte, error) {
		out, err := h(ctx, payload)
		if err != nil {
			return nil, err
		}
		b, _ := json.Marshal(out)
		rig.mu.Lock()
		rig.results[fn] = append(rig.results[fn], string(b))
		rig.mu.Unlock()
		return b, nil
	}
}

// send puts a message on the stage's queue key as the services do.
func (rig *redriveRig) send(t *testing.T, key, body string, attrs map[string]string) {
	t.Helper()
	url, err := rig.client.GetQueueUrl(context.Background(), &sqs.GetQueueUrlInput{QueueName: aws.String("archmax-dev-" + key)})
	if err != nil {
		t.Fatal(err)
	}
	in := &sqs.SendMessageInput{QueueUrl: url.QueueUrl, MessageBody: aws.String(body), MessageAttributes: map[string]sqstypes.MessageAttributeValue{}}
	for k, v := range attrs {
		in.MessageAttributes[k] = sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
	}
	if _, err := rig.client.SendMessage(context.Background(), in); err != nil {
		t.Fatal(err)
	}
}

// redrive runs the command and waits for the functions' asynchronous invocations to end.
func (rig *redriveRig) redrive(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	code, out, errs := run(t, append([]string{"redrive", "--stage", "dev"}, args...)...)
	if err := rig.lambda.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	return code, out, errs
}

// invoked is what each function was handed, by function name.
func (rig *redriveRig) invoked(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, inv := range rig.lambda.Invocations() {
		if inv.Type != lambdafake.Event {
			t.Errorf("%s was invoked %s, want Event", inv.Function, inv.Type)
		}
		out[inv.Function] = append(out[inv.Function], string(inv.Payload))
	}
	return out
}

func jsonEqual(t *testing.T, got, want string) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		return false
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want is not JSON: %s", want)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	return string(gb) == string(wb)
}

const (
	startEvent = `{"version":"0","id":"e-start-1","detail-type":"Order Placed","source":"orders.app","account":"123456789012",` +
		`"time":"2026-11-30T10:00:00Z","region":"us-east-1","resources":[],"detail":{"order_id":"o-17","qty":3}}`
	deliveryEvent = `{"version":"0","id":"e-deliver-1","detail-type":"email_reply","source":"mail.app","account":"123456789012",` +
		`"time":"2026-11-30T10:00:00Z","region":"us-east-1","resources":[],"detail":{"sessionId":"conv-7","message":"It is ORD-1003"}}`
	wakeBody = `{"sessionId":"conv-9","parkId":"park-3"}`
)

// record is Lambda's on-failure destination record of payload on function fn.
func record(fn, payload string) string {
	return recordOn(lambdafake.FunctionARN(fn)+":$LATEST", payload)
}

// recordOn is Lambda's on-failure destination record of payload on the function ARN arn.
func recordOn(arn, payload string) string {
	return `{"version":"1.0","timestamp":"2026-11-30T10:06:00.000Z","requestContext":{"requestId":"r-1",` +
		`"functionArn":"` + arn + `","condition":"RetriesExhausted","approximateInvokeCount":3},` +
		`"requestPayload":` + payload + `,"responseContext":{"statusCode":200,"executedVersion":"$LATEST","functionError":"Unhandled"},` +
		`"responsePayload":{"errorType":"errorString","errorMessage":"ThrottlingException: slow down"}}`
}

var eventAttrs = func(fn string) map[string]string {
	return map[string]string{"RULE_ARN": "arn:aws:events:us-east-1:123456789012:rule/archmax-dev-starts", "TARGET_ARN": lambdafake.FunctionARN(fn),
		"ERROR_CODE": "Lambda.TooManyRequestsException", "ERROR_MESSAGE": "Rate exceeded"}
}

var scheduleAttrs = map[string]string{"ERROR_CODE": "AWS.Lambda.ResourceNotFoundException", "ERROR_MESSAGE": "Function not found",
	"EXECUTION_ID": "x-1", "SCHEDULE_ARN": "arn:aws:scheduler:us-east-1:123456789012:schedule/archmax/wake-1",
	"TARGET_ARN": lambdafake.FunctionARN("archmax-dev-wake")}

// decodeRecords splits --json output into the message records and the summary.
func decodeRecords(t *testing.T, out string) ([]redriveRecord, redriveSummary) {
	t.Helper()
	var recs []redriveRecord
	var sum redriveSummary
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var probe struct{ Type string }
		if err := json.Unmarshal([]byte(line), &probe); err != nil {
			t.Fatalf("not a JSON line: %q", line)
		}
		switch probe.Type {
		case "message":
			var r redriveRecord
			_ = json.Unmarshal([]byte(line), &r)
			recs = append(recs, r)
		case "summary":
			_ = json.Unmarshal([]byte(line), &sum)
		default:
			t.Errorf("record of type %q: %s", probe.Type, line)
		}
	}
	return recs, sum
}

// Each of the three formats is re-submitted to its function with its original payload and
// then deleted; what redrive does not recognise is kept, visible, and reported.
func TestRedriveEachFormat(t *testing.T) {
	rig := newRedriveRig(t)
	continuation := `{"archmaxContinue":{"sessionId":"conv-9","turnId":"t-4"}}`
	rig.send(t, "turn-failed", record("archmax-dev-turn", startEvent), nil)
	rig.send(t, "deliver-failed", record("archmax-dev-deliver", deliveryEvent), nil)
	rig.send(t, "wake-failed", record("archmax-dev-wake", continuation), nil)
	rig.send(t, "events-dlq", deliveryEvent, eventAttrs("archmax-dev-deliver"))
	rig.send(t, "schedules-dlq", wakeBody, scheduleAttrs)
	// kept: not a record; a record of another stage's function; an event for a function
	// outside the stage; a schedule input that is no wake
	rig.send(t, "turn-failed", `{"hello":"world"}`, nil)
	rig.send(t, "turn-failed", record("archmax-prod-turn", startEvent), nil)
	rig.send(t, "events-dlq", startEvent, eventAttrs("someone-elses-function"))
	rig.send(t, "schedules-dlq", `{"sessionId":"conv-9"}`, scheduleAttrs)

	code, out, errs := rig.redrive(t, "--json")
	if code != exitFail {
		t.Errorf("exit %d with messages kept, want 1\n%s", code, errs)
	}
	recs, sum := decodeRecords(t, out)
	if sum.Redriven != 5 || sum.Kept != 4 || sum.Failed != 0 || len(sum.Missing) != 0 || sum.DryRun {
		t.Errorf("summary = %+v\n%s", sum, out)
	}
	got := map[string]string{}
	for _, r := range recs {
		got[r.Queue+" "+r.Kind+" "+r.Action] = r.Target + " " + r.SessionID
	}
	for k, v := range map[string]string{
		"archmax-dev-turn-failed start redriven":        lambdafake.FunctionARN("archmax-dev-turn") + " ",
		"archmax-dev-deliver-failed delivery redriven":  lambdafake.FunctionARN("archmax-dev-deliver") + " conv-7",
		"archmax-dev-wake-failed continuation redriven": lambdafake.FunctionARN("archmax-dev-wake") + " conv-9",
		"archmax-dev-events-dlq delivery redriven":      lambdafake.FunctionARN("archmax-dev-deliver") + " conv-7",
		"archmax-dev-schedules-dlq wake redriven":       lambdafake.FunctionARN("archmax-dev-wake") + " conv-9",
		"archmax-dev-turn-failed unknown kept":          " ",
		"archmax-dev-events-dlq unknown kept":           " ",
		"archmax-dev-schedules-dlq unknown kept":        " ",
	} {
		if got[k] != v {
			t.Errorf("%s: target+session %q, want %q", k, got[k], v)
		}
	}
	for _, r := range recs {
		if r.Action == actKept && r.Reason == "" {
			t.Errorf("kept without a reason: %+v", r)
		}
		if r.Kind == "start" && r.Cause != "RetriesExhausted — errorString: ThrottlingException: slow down" {
			t.Errorf("cause = %q", r.Cause)
		}
	}

	inv := rig.invoked(t)
	if len(inv["archmax-dev-turn"]) != 1 || !jsonEqual(t, inv["archmax-dev-turn"][0], startEvent) {
		t.Errorf("turn was handed %v", inv["archmax-dev-turn"])
	}
	if d := inv["archmax-dev-deliver"]; len(d) != 2 || !jsonEqual(t, d[0], deliveryEvent) || !jsonEqual(t, d[1], deliveryEvent) {
		t.Errorf("deliver was handed %v", d)
	}
	if w := inv["archmax-dev-wake"]; len(w) != 2 || !slices.ContainsFunc(w, func(p string) bool { return jsonEqual(t, p, continuation) }) ||
		!slices.ContainsFunc(w, func(p string) bool { return jsonEqual(t, p, wakeBody) }) {
		t.Errorf("wake was handed %v", w)
	}
	if len(inv) != 3 {
		t.Errorf("invoked %v", inv)
	}
	// the real start handler ran the start
	if sum, err := rig.engines.Sessions().Get(context.Background(), "o-17"); err != nil || sum.Turn != 1 {
		t.Errorf("the start's session: %+v %v", sum, err)
	}

	// what was re-submitted is gone; what was kept is there, visible again at once
	left := map[string]int{}
	for _, q := range redriveQueues {
		for _, m := range rig.queues.Messages("archmax-dev-" + q) {
			if !m.Visible {
				t.Errorf("%s: a kept message is still in flight", q)
			}
			left[q]++
		}
	}
	if left["turn-failed"] != 2 || left["events-dlq"] != 1 || left["schedules-dlq"] != 1 || len(left) != 3 {
		t.Errorf("left in the queues: %v", left)
	}

	// the text form: one line per message, then the summary
	code, text, _ := rig.redrive(t, "--queue", "events-dlq,schedules-dlq")
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if code != exitFail || len(lines) != 3 || !strings.HasPrefix(lines[0], "archmax-dev-events-dlq ") || !strings.Contains(lines[0], ": unknown: kept — TARGET_ARN") ||
		lines[2] != "0 redriven, 2 kept, 0 failed" {
		t.Errorf("text: exit %d\n%s", code, text)
	}
}

// --dry-run reads and reports and changes nothing: no invocation, no delete, every message
// visible again.
func TestRedriveDryRunChangesNothing(t *testing.T) {
	rig := newRedriveRig(t)
	rig.send(t, "turn-failed", record("archmax-dev-turn", startEvent), nil)
	rig.send(t, "schedules-dlq", wakeBody, scheduleAttrs)
	code, out, errs := rig.redrive(t, "--dry-run")
	if code != exitOK || !strings.Contains(out, "archmax-dev-turn-failed ") || !strings.Contains(out, ": start → arn:aws:lambda:us-east-1:123456789012:function:archmax-dev-turn: would redrive\n") ||
		!strings.HasSuffix(out, "dry run: 2 would be re-submitted, 0 kept\n") {
		t.Errorf("dry run: exit %d\n%s%s", code, out, errs)
	}
	if inv := rig.lambda.Invocations(); len(inv) != 0 {
		t.Errorf("a dry run invoked %v", inv)
	}
	for _, q := range []string{"turn-failed", "schedules-dlq"} {
		if m := rig.queues.Messages("archmax-dev-" + q); len(m) != 1 || !m[0].Visible || m[0].ReceiveCount != 1 {
			t.Errorf("%s after a dry run: %+v", q, m)
		}
	}
}

// A refused invocation keeps its message, visible for the next run.
func TestRedriveFailedInvokeKeepsTheMessage(t *testing.T) {
	rig := newRedriveRig(t)
	rig.send(t, "decide-failed", record("archmax-dev-decide", `{"archmaxContinue":{"sessionId":"s-1","turnId":"t-1"}}`), nil) // decide is not deployed in the fake
	code, out, _ := rig.redrive(t, "--queue", "decide-failed", "--json")
	recs, sum := decodeRecords(t, out)
	if code != exitFail || sum.Failed != 1 || len(recs) != 1 || recs[0].Action != actFailed || !strings.Contains(recs[0].Reason, "ResourceNotFoundException") {
		t.Errorf("exit %d %+v\n%s", code, sum, out)
	}
	if m := rig.queues.Messages("archmax-dev-decide-failed"); len(m) != 1 || !m[0].Visible {
		t.Errorf("after a refused invocation: %+v", m)
	}
}

// A start re-driven twice — the same dead letter twice, as after a delete that was lost —
// is recorded once: the real start handler finds its event id done and starts nothing.
func TestRedriveAStartTwiceRecordsItOnce(t *testing.T) {
	rig := newRedriveRig(t)
	rig.send(t, "turn-failed", record("archmax-dev-turn", startEvent), nil)
	if code, out, errs := rig.redrive(t, "--queue", "turn-failed"); code != exitOK || !strings.HasSuffix(out, "1 redriven, 0 kept, 0 failed\n") {
		t.Fatalf("first: exit %d\n%s%s", code, out, errs)
	}
	rig.send(t, "events-dlq", startEvent, eventAttrs("archmax-dev-turn")) // the same event, from the bus's queue
	if code, out, errs := rig.redrive(t); code != exitOK || !strings.HasSuffix(out, "1 redriven, 0 kept, 0 failed\n") {
		t.Fatalf("second: exit %d\n%s%s", code, out, errs)
	}
	if n := rig.model.count(); n != 1 {
		t.Errorf("the model was called %d times for one start", n)
	}
	if inv := rig.invoked(t)["archmax-dev-turn"]; len(inv) != 2 {
		t.Fatalf("turn invoked %d times", len(inv))
	}
	rig.mu.Lock()
	results := slices.Clone(rig.results["turn"])
	rig.mu.Unlock()
	var second starts.Result
	if len(results) != 2 || json.Unmarshal([]byte(results[1]), &second) != nil || !second.Duplicate || second.SessionID != "o-17" {
		t.Errorf("answers = %v", results)
	}
	list, _, err := rig.engines.Sessions().List(context.Background(), session.ListOptions{})
	if err != nil || len(list) != 1 || list[0].Turn != 1 {
		t.Errorf("sessions = %+v %v", list, err)
	}
}

// --max bounds the messages handled over all the queues; the rest stay.
func TestRedriveMax(t *testing.T) {
	rig := newRedriveRig(t)
	for range 3 {
		rig.send(t, "schedules-dlq", wakeBody, scheduleAttrs)
	}
	code, out, _ := rig.redrive(t, "--max", "2")
	if code != exitOK || !strings.HasSuffix(out, "2 redriven, 0 kept, 0 failed\n") {
		t.Errorf("exit %d\n%s", code, out)
	}
	if m := rig.queues.Messages("archmax-dev-schedules-dlq"); len(m) != 1 {
		t.Errorf("left %d, want 1", len(m))
	}
}

// A queue the stage does not have is reported, and fails the run; usage errors exit 2.
func TestRedriveMissingQueueAndUsage(t *testing.T) {
	newRedriveRig(t)
	code, out, _ := run(t, "redrive", "--stage", "qa", "--queue", "wake-failed", "--json")
	_, sum := decodeRecords(t, out)
	if code != exitFail || len(sum.Missing) != 1 || sum.Missing[0] != "archmax-qa-wake-failed" {
		t.Errorf("missing queue: exit %d\n%s", code, out)
	}
	if code, out, _ := run(t, "__complete", "redrive", "--queue", ""); code != exitOK || !strings.Contains(out, "schedules-dlq\n") || !strings.Contains(out, "all\n") {
		t.Errorf("--queue completion: %d %q", code, out)
	}
	for _, c := range []struct{ args []string }{
		{[]string{"redrive"}},
		{[]string{"redrive", "--stage", "Dev!"}},
		{[]string{"redrive", "--stage", "dev", "--queue", "turn"}},
		{[]string{"redrive", "--stage", "dev", "--max", "-1"}},
		{[]string{"redrive", "--stage", "dev", "extra"}},
	} {
		code, out, errs := run(t, append(c.args, "--json")...)
		var rec errorRecord
		if code != exitUsage || json.Unmarshal([]byte(out), &rec) != nil || rec.Error.Code != "UsageError" || !strings.Contains(errs, "archmax redrive --help") {
			t.Errorf("%v: exit %d %s %s", c.args, code, out, errs)
		}
	}
}
