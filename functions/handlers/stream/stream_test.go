package stream_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/store"
	ddbstore "github.com/archmax-ai/archmax/core/store/dynamodb"
	"github.com/archmax-ai/archmax/core/store/fs"
	"github.com/archmax-ai/archmax/core/store/memory"
	"github.com/archmax-ai/archmax/functions/handlers/continuation"
	"github.com/archmax-ai/archmax/functions/handlers/httpapi"
	"github.com/archmax-ai/archmax/functions/handlers/stream"
	"github.com/archmax-ai/archmax/local/dynamotest"
	"github.com/archmax-ai/archmax/local/runtimeapi"
)

// desk: one agent state; the model sets a variable, then answers.
const desk = `
title: Desk
states:
  desk:
    triggers:
      manual:
    instructions: Look it up, then answer.
`

// gateModel answers a step that sets n (with a text before it), then — once the history
// holds that step's result — waits for gate (when set) and closes with a text. entered
// receives the number of each call as it starts. Streamed (model.StreamClient), the first
// step's text comes in two pieces, and with mid set the call waits for it between them.
type gateModel struct {
	gate    chan struct{}
	mid     chan struct{}
	entered chan int
	calls   atomic.Int64
}

func (m *gateModel) Converse(ctx context.Context, req *model.Request) (*model.Response, error) {
	return m.ConverseStream(ctx, req, nil)
}

func (m *gateModel) ConverseStream(ctx context.Context, req *model.Request, onDelta func(model.Delta)) (*model.Response, error) {
	if onDelta == nil {
		onDelta = func(model.Delta) {}
	}
	if err := model.ValidateRequest(req); err != nil {
		return nil, err
	}
	n := int(m.calls.Add(1))
	if m.entered != nil {
		m.entered <- n
	}
	results := 0
	for _, msg := range req.Messages {
		for _, b := range msg.Content {
			if b.Kind == model.BlockToolResult {
				results++
			}
		}
	}
	usage := &model.Usage{InputTokens: 10, OutputTokens: 2}
	if results == 0 {
		onDelta(model.Delta{Text: "Looking "})
		if m.mid != nil {
			select {
			case <-m.mid:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		onDelta(model.Delta{Text: "it up."})
		input, _ := json.Marshal(map[string]any{"variables": map[string]any{"n": 1}})
		return &model.Response{StopReason: model.StopToolUse, Usage: usage, Message: model.Message{Role: model.RoleAssistant, Content: []model.Block{
			{Kind: model.BlockText, Text: "Looking it up."},
			{Kind: model.BlockToolUse, ToolUse: &model.ToolUse{ID: "tu_1", Name: "archmax_set_variables", Input: input}}}}}, nil
	}
	if m.gate != nil {
		select {
		case <-m.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	onDelta(model.Delta{Text: "All done."})
	return &model.Response{StopReason: model.StopEndTurn, Usage: usage,
		Message: model.Message{Role: model.RoleAssistant, Content: []model.Block{{Kind: model.BlockText, Text: "All done."}}}}, nil
}

// recordStarter records the continuations a Runner hands on: the test invokes them.
type recordStarter struct{ refs chan continuation.Ref }

func (s *recordStarter) Start(_ context.Context, ref continuation.Ref) error {
	s.refs <- ref
	return nil
}

// The Lambda runtime loops of this test process, serving every test's function through
// aws-lambda-go against the fake Runtime API; each test's function is found by its ARN.
var (
	rt        *runtimeapi.Server
	functions sync.Map // ARN → func(ctx, raw) (any, error)
)

func dispatch(ctx context.Context, raw json.RawMessage) (any, error) {
	lc, _ := lambdacontext.FromContext(ctx)
	fn, ok := functions.Load(lc.InvokedFunctionArn)
	if !ok {
		return nil, fmt.Errorf("no function %s", lc.InvokedFunctionArn)
	}
	return fn.(func(context.Context, json.RawMessage) (any, error))(ctx, raw)
}

func TestMain(m *testing.M) {
	var err error
	if rt, err = runtimeapi.Start(4, dispatch); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// fixture is one streaming function over one store.
type fixture struct {
	t       *testing.T
	arn     string
	api     *httpapi.Handler
	model   *gateModel
	starter *recordStarter
	engines *session.Engines
}

const (
	owner = "arn:aws:iam::123456789012:role/app"
	other = "arn:aws:iam::123456789012:role/someone-else"
)

func newFixture(t *testing.T, log store.Log, files store.Files) *fixture {
	t.Helper()
	authored := memory.NewFiles()
	if err := authored.Write(t.Context(), "workflows/desk/workflow.yaml", []byte(desk)); err != nil {
		t.Fatal(err)
	}
	m := &gateModel{gate: make(chan struct{}), entered: make(chan int, 16)}
	engines := session.NewEngines(session.Config{Authored: authored, Log: log, Files: files, Model: m, ModelID: "test"})
	starter := &recordStarter{refs: make(chan continuation.Ref, 4)}
	run := continuation.NewRunner(engines, starter, continuation.Budget{}, nil)
	api := httpapi.New(engines, run, nil)
	f := &fixture{t: t, arn: "arn:aws:lambda:us-east-1:123456789012:function:" + strings.ReplaceAll(t.Name(), "/", "-"),
		api: api, model: m, starter: starter, engines: engines}
	f.register(stream.Function(stream.New(api, nil, stream.WithPoll(5*time.Millisecond)), run, nil))
	return f
}

// register makes fn the function f.arn invokes.
func (f *fixture) register(fn func(context.Context, json.RawMessage) (any, error)) {
	arn := f.arn
	functions.Store(arn, fn)
	f.t.Cleanup(func() { functions.Delete(arn) })
}

// stores runs body on the file store and on DynamoDB Local.
func stores(t *testing.T, body func(t *testing.T, log store.Log, files store.Files)) {
	t.Run("fs", func(t *testing.T) {
		dir := t.TempDir()
		log, err := fs.Open(filepath.Join(dir, "log"))
		if err != nil {
			t.Fatal(err)
		}
		files, err := fs.OpenFiles(filepath.Join(dir, "files"))
		if err != nil {
			t.Fatal(err)
		}
		body(t, log, files)
	})
	t.Run("dynamodb", func(t *testing.T) {
		client, table := dynamotest.NewTable(t) // skips without DYNAMODB_ENDPOINT
		body(t, ddbstore.New(client, table, nil), memory.NewFiles())
	})
}

// urlRequest is a function URL request signed (AWS_IAM) by caller.
func urlRequest(method, path, rawQuery, body, caller string, headers map[string]string) []byte {
	h := map[string]string{"accept": "text/event-stream", "content-type": "application/json"}
	for k, v := range headers {
		h[k] = v
	}
	q := map[string]string{}
	for _, kv := range strings.Split(rawQuery, "&") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			q[k] = v
		}
	}
	req := events.LambdaFunctionURLRequest{
		Version: "2.0", RawPath: path, RawQueryString: rawQuery, Headers: h, QueryStringParameters: q, Body: body,
		RequestContext: events.LambdaFunctionURLRequestContext{
			AccountID: "123456789012", RequestID: "r-" + strconv.FormatInt(time.Now().UnixNano(), 36), APIID: "abc",
			DomainName: "abc.lambda-url.us-east-1.on.aws", DomainPrefix: "abc",
			HTTP: events.LambdaFunctionURLRequestContextHTTPDescription{Method: method, Path: path, Protocol: "HTTP/1.1", SourceIP: "192.0.2.1"},
			Authorizer: &events.LambdaFunctionURLRequestContextAuthorizerDescription{IAM: &events.LambdaFunctionURLRequestContextAuthorizerIAMDescription{
				AccountID: "123456789012", CallerID: "AROAEXAMPLE:session", UserARN: strings.Replace(strings.Replace(caller, ":iam::", ":sts::", 1), ":role/", ":assumed-role/", 1) + "/session",
				AccessKey: "ASIAEXAMPLE", UserID: "AROAEXAMPLE:session"}},
		},
	}
	b, _ := json.Marshal(req)
	return b
}

// frame is one Server-Sent Event.
type frame struct {
	ID, Event string
	Data      json.RawMessage
}

func (f frame) seq() int64 { n, _ := strconv.ParseInt(f.ID, 10, 64); return n }

// sse reads a streamed invocation's answer: the prelude, then frame by frame.
type sse struct {
	t      *testing.T
	status int
	header map[string]string
	r      *bufio.Reader
	body   []byte // a non-stream answer's body
}

// invoke sends payload through the runtime loop and reads the answer's prelude.
func (f *fixture) invoke(payload []byte) *sse {
	f.t.Helper()
	inv := rt.Invoke(f.arn, payload, time.Now().Add(15*time.Minute))
	ctx, cancel := context.WithTimeout(f.t.Context(), time.Minute)
	defer cancel()
	ct, body, err := inv.Response(ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	if ct != "application/vnd.awslambda.http-integration-response" {
		b, _ := io.ReadAll(body)
		f.t.Fatalf("content type %q, want Lambda's HTTP integration response stream: %s", ct, b)
	}
	r := bufio.NewReader(body)
	var prelude []byte
	for !bytes.HasSuffix(prelude, make([]byte, 8)) {
		b, err := r.ReadByte()
		if err != nil {
			f.t.Fatalf("prelude: %v (%q)", err, prelude)
		}
		prelude = append(prelude, b)
	}
	var p struct {
		StatusCode int               `json:"statusCode"`
		Headers    map[string]string `json:"headers"`
	}
	if err := json.Unmarshal(bytes.TrimRight(prelude, "\x00"), &p); err != nil {
		f.t.Fatalf("prelude %q: %v", prelude, err)
	}
	s := &sse{t: f.t, status: p.StatusCode, header: p.Headers, r: r}
	if p.Headers["Content-Type"] != stream.ContentType {
		s.body, _ = io.ReadAll(r)
	}
	return s
}

// next reads the next event (comments skipped); ok is false at the end of the stream.
func (s *sse) next() (frame, bool) {
	s.t.Helper()
	var f frame
	seen := false
	for {
		line, err := s.r.ReadString('\n')
		if err == io.EOF && line == "" {
			return f, false
		}
		if err != nil && err != io.EOF {
			s.t.Fatal(err)
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			if seen {
				return f, true
			}
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "id: "):
			f.ID, seen = strings.TrimPrefix(line, "id: "), true
		case strings.HasPrefix(line, "event: "):
			f.Event, seen = strings.TrimPrefix(line, "event: "), true
		case strings.HasPrefix(line, "data: "):
			f.Data, seen = append(f.Data, strings.TrimPrefix(line, "data: ")...), true
		}
	}
}

// until reads events until one of type typ, returning all read (it included).
func (s *sse) until(typ string) []frame {
	s.t.Helper()
	var out []frame
	for {
		f, ok := s.next()
		if !ok {
			s.t.Fatalf("the stream ended before a %s event; read %v", typ, types(out))
		}
		out = append(out, f)
		if f.Event == typ {
			return out
		}
	}
}

// rest reads every event to the end of the stream.
func (s *sse) rest() []frame {
	var out []frame
	for {
		f, ok := s.next()
		if !ok {
			return out
		}
		out = append(out, f)
	}
}

func types(fs []frame) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Event)
	}
	return out
}

// storedSeqs are the sessionSeqs of every stored event of id, read through the HTTP API.
func (f *fixture) storedSeqs(id string) []int64 {
	f.t.Helper()
	resp, _ := f.api.Handle(f.t.Context(), events.APIGatewayV2HTTPRequest{RouteKey: httpapi.RouteEvents, RawPath: "/v1/sessions/" + id + "/events",
		PathParameters: map[string]string{"sessionId": id}, QueryStringParameters: map[string]string{"limit": "500"},
		RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "GET"},
			Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{UserARN: owner}}}})
	if resp.StatusCode != http.StatusOK {
		f.t.Fatalf("events: %d %s", resp.StatusCode, resp.Body)
	}
	var page struct {
		Events []struct {
			SessionSeq int64  `json:"sessionSeq"`
			Type       string `json:"type"`
		} `json:"events"`
	}
	if err := json.Unmarshal([]byte(resp.Body), &page); err != nil {
		f.t.Fatal(err)
	}
	var out []int64
	for _, e := range page.Events {
		if e.Type == "agent-text-delta" {
			f.t.Errorf("a text delta was stored: %+v", e)
		}
		out = append(out, e.SessionSeq)
	}
	return out
}

// ids are the ids of the frames that carry one, checked strictly increasing.
func ids(t *testing.T, fs []frame) []int64 {
	t.Helper()
	var out []int64
	for _, f := range fs {
		if f.ID == "" {
			continue
		}
		if n := f.seq(); len(out) > 0 && n <= out[len(out)-1] {
			t.Errorf("id %d after %d: not increasing", n, out[len(out)-1])
		}
		out = append(out, f.seq())
	}
	return out
}

func outcomeOf(t *testing.T, f frame) session.OutcomeSummary {
	t.Helper()
	if f.Event != stream.OutcomeEvent {
		t.Fatalf("last event %q, want outcome", f.Event)
	}
	var sum session.OutcomeSummary
	if err := json.Unmarshal(f.Data, &sum); err != nil {
		t.Fatal(err)
	}
	return sum
}

// A start streamed through the Lambda runtime: the first piece of the model's text arrives
// while that model call is still blocked (and the next call's wait is seen too), the stream
// ends with the outcome, every stored
// event came with its sessionSeq as id (deltas without); a reconnect with Last-Event-ID
// replays the stored events after it, without gaps or duplicates.
func TestStreamedStartAndReconnect(t *testing.T) {
	stores(t, func(t *testing.T, log store.Log, files store.Files) {
		f := newFixture(t, log, files)
		f.model.mid = make(chan struct{})
		s := f.invoke(urlRequest("POST", "/v1/workflows/desk/sessions", "", `{"message":"Where is my order?"}`, owner, nil))
		if s.status != http.StatusOK {
			t.Fatalf("status %d: %s", s.status, s.body)
		}
		first := s.until("agent-text-delta")
		if delta := first[len(first)-1]; delta.ID != "" || !strings.Contains(string(delta.Data), `"text":"Looking "`) {
			t.Fatalf("first delta %s %s: want no id and the first piece of the text", delta.ID, delta.Data)
		}
		<-f.model.entered // call 1, still waiting for mid: the delta came before the model answered
		close(f.model.mid)
		first = append(first, s.until("agent-text-delta")...) // "it up."
		select {
		case n := <-f.model.entered: // call 2 has started and waits on the gate
			if n != 2 {
				t.Fatalf("call %d entered", n)
			}
		case <-time.After(time.Minute):
			t.Fatal("the model's second call never started")
		}
		close(f.model.gate) // the model finishes only now
		all := append(first, s.rest()...)
		sum := outcomeOf(t, all[len(all)-1])
		if sum.Kind != session.KindCompleted || sum.Reply != "All done." || sum.SessionID == "" {
			t.Fatalf("outcome %+v", sum)
		}
		got, want := ids(t, all), f.storedSeqs(sum.SessionID)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("streamed ids %v, stored sessionSeqs %v", got, want)
		}
		for _, fr := range all[:len(all)-1] {
			var ev struct {
				SessionID string `json:"sessionId"`
				Type      string `json:"type"`
			}
			if json.Unmarshal(fr.Data, &ev) != nil || ev.Type != fr.Event || ev.SessionID != sum.SessionID {
				t.Errorf("frame %s %s: data is not its lifecycle event", fr.Event, fr.Data)
			}
		}

		// reconnect after the third stored event
		cut := got[2]
		r := f.invoke(urlRequest("GET", "/v1/sessions/"+sum.SessionID+"/events", "", "", owner, map[string]string{"last-event-id": strconv.FormatInt(cut, 10)}))
		if r.status != http.StatusOK {
			t.Fatalf("reconnect: %d %s", r.status, r.body)
		}
		replay := r.rest()
		if again := outcomeOf(t, replay[len(replay)-1]); again.Kind != session.KindCompleted || again.TurnID != sum.TurnID {
			t.Errorf("reconnect outcome %+v", again)
		}
		resumed := append(append([]int64(nil), got[:3]...), ids(t, replay)...)
		if fmt.Sprint(resumed) != fmt.Sprint(want) {
			t.Fatalf("ids up to %d then the replay: %v, want %v", cut, resumed, want)
		}
		for _, fr := range replay {
			if fr.Event == "agent-text-delta" {
				t.Errorf("a delta was replayed: %s", fr.Data)
			}
		}

		// another caller: the HTTP API's 404, as JSON, before any stream
		o := f.invoke(urlRequest("GET", "/v1/sessions/"+sum.SessionID+"/events", "", "", other, nil))
		if o.status != http.StatusNotFound || !strings.Contains(string(o.body), "SessionNotFoundError") {
			t.Errorf("another caller: %d %s", o.status, o.body)
		}
	})
}

// A GET follow opened while a turn is handed to a continuation goes on with the events the
// second invocation (the continuation, run by the same function) stores, to the outcome.
func TestFollowAcrossAContinuation(t *testing.T) {
	stores(t, func(t *testing.T, log store.Log, files store.Files) {
		f := newFixture(t, log, files)
		// the buffered API's start: 202 after the opening, handed to a continuation
		start := events.APIGatewayV2HTTPRequest{RouteKey: httpapi.RouteStart, RawPath: "/v1/workflows/desk/sessions",
			PathParameters: map[string]string{"workflow": "desk"}, Body: `{"message":"Where is my order?"}`,
			RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "POST"},
				Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{UserARN: owner}}}}
		resp, _ := f.api.Handle(t.Context(), start)
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("start: %d %s", resp.StatusCode, resp.Body)
		}
		var sum session.OutcomeSummary
		_ = json.Unmarshal([]byte(resp.Body), &sum)
		ref := <-f.starter.refs
		if ref.SessionID != sum.SessionID {
			t.Fatalf("continuation %+v for %+v", ref, sum)
		}

		follow := f.invoke(urlRequest("GET", "/v1/sessions/"+sum.SessionID+"/events", "after=0", "", owner, nil))
		if follow.status != http.StatusOK {
			t.Fatalf("follow: %d %s", follow.status, follow.body)
		}
		opening := follow.until("state-enter")

		// the second invocation: the continuation event, served by the same function
		payload, _ := json.Marshal(continuation.Event{Continue: &ref})
		inv := rt.Invoke(f.arn, payload, time.Now().Add(15*time.Minute))
		for n := range f.model.entered { // the continuation's call that closes the turn waits on the gate
			if n == 2 {
				break
			}
		}
		close(f.model.gate)
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		ct, body, err := inv.Response(ctx)
		if err != nil {
			t.Fatal(err)
		}
		res, _ := io.ReadAll(body)
		var cont continuation.Result
		if ct == "application/vnd.awslambda.http-integration-response" || json.Unmarshal(res, &cont) != nil || cont.Outcome != session.KindCompleted {
			t.Fatalf("continuation answered %q %s", ct, res)
		}

		all := append(opening, follow.rest()...)
		out := outcomeOf(t, all[len(all)-1])
		if out.Kind != session.KindCompleted || out.TurnID != sum.TurnID || out.Reply != "All done." {
			t.Fatalf("outcome %+v", out)
		}
		if got, want := ids(t, all), f.storedSeqs(sum.SessionID); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("followed ids %v, stored %v", got, want)
		}
		var texts []string
		for _, fr := range all {
			if fr.Event == "agent-text" {
				texts = append(texts, string(fr.Data))
			}
		}
		if len(texts) == 0 || !strings.Contains(texts[len(texts)-1], "All done.") {
			t.Errorf("the continuation's closing text was not followed: %v", texts)
		}
	})
}
