package httpapi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/store"
	"github.com/archmax-ai/archmax/core/store/memory"
	"github.com/archmax-ai/archmax/functions/handlers/access"
)

// greeter: one terminal agent state; `order` names its session by order_id and requires a
// typed quantity.
const greeter = `
title: Greeter
states:
  greet:
    instructions: Greet the person.
    triggers:
      manual:
      order:
        session: order_id
        requires: [order_id, { name: qty, type: integer }]
`

// fakeModel answers every call with the same text, or fails with err.
type fakeModel struct {
	err   error
	calls atomic.Int64
}

func (m *fakeModel) Converse(ctx context.Context, req *model.Request) (*model.Response, error) {
	m.calls.Add(1)
	if m.err != nil {
		return nil, m.err
	}
	return &model.Response{
		Message:    model.Message{Role: model.RoleAssistant, Content: []model.Block{{Kind: model.BlockText, Text: "Hello."}}},
		StopReason: model.StopEndTurn,
		Usage:      &model.Usage{InputTokens: 10, OutputTokens: 2},
	}, nil
}

// engines is an Engines over memory stores; a workflow not in the authored tree is unknown.
type engines struct {
	authored *memory.Files
	log      *memory.Store
	model    *fakeModel
	err      error // returned by Engine when set
}

func (e *engines) Log() store.Log { return e.log }

func (e *engines) Sessions() *session.Sessions { return session.NewSessions(e.log, nil, nil) }

func (e *engines) SessionWorkflow(ctx context.Context, id string) (string, error) {
	h, err := e.log.Get(ctx, id)
	if err != nil {
		return "", &session.SessionNotFoundError{SessionID: id}
	}
	return h.Workflow, nil
}

func (e *engines) Engine(ctx context.Context, workflow string) (*session.Engine, error) {
	if e.err != nil {
		return nil, e.err
	}
	if _, err := e.authored.Stat(ctx, "workflows/"+workflow+"/workflow.yaml"); err != nil {
		return nil, &session.UnknownWorkflowError{Workflow: workflow}
	}
	return session.New(session.Config{Workflow: workflow, Authored: e.authored, Log: e.log,
		Files: memory.NewFiles(), Model: e.model, ModelID: "test-model"})
}

func newFixture(t *testing.T) (*Handler, *engines) {
	t.Helper()
	authored := memory.NewFiles()
	ctx := context.Background()
	for key, src := range map[string]string{
		"workflows/greeter/workflow.yaml": greeter,
		"workflows/other/workflow.yaml":   greeter,
		"workflows/broken/workflow.yaml":  "title: Broken\nstates:\n  a:\n    type: nonsense\n",
	} {
		if err := authored.Write(ctx, key, []byte(src)); err != nil {
			t.Fatal(err)
		}
	}
	e := &engines{authored: authored, log: memory.New(), model: &fakeModel{}}
	return New(e, nil, nil, WithPolicy(testPolicy)), e
}

// testUserARN is who every test request is signed as (IAM authorization): a session of the
// role "tester", which testPolicy makes a decider.
const testUserARN = "arn:aws:sts::123456789012:assumed-role/tester/test-session"

// testPolicy: the tester role may decide (its own sessions too: four-eyes is off).
var testPolicy = access.Policy{IAMDeciders: []string{"arn:aws:iam::123456789012:role/tester"}}

// signedAs is req as IAM authorization delivers it for the caller userARN.
func signedAs(req events.APIGatewayV2HTTPRequest, userARN string) events.APIGatewayV2HTTPRequest {
	req.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
		IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{UserARN: userARN, AccountID: "123456789012"}}
	return req
}

// request builds an API Gateway event for a route key (RouteStart, RouteTurn) or, with
// routeKey "$default", for method and path only, signed as testUserARN.
func request(routeKey, method, path, body string) events.APIGatewayV2HTTPRequest {
	req := signedAs(events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: routeKey, RawPath: path, Body: body,
		Headers:        map[string]string{"content-type": "application/json"},
		RequestContext: events.APIGatewayV2HTTPRequestContext{RequestID: "req-1", HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path}},
	}, testUserARN)
	seg := strings.Split(strings.Trim(path, "/"), "/")
	switch routeKey {
	case RouteStart:
		req.PathParameters = map[string]string{"workflow": seg[2]}
	case RouteTurn:
		req.PathParameters = map[string]string{"workflow": seg[2], "sessionId": seg[4]}
	case RouteDecision, RouteDelivery:
		req.PathParameters = map[string]string{"sessionId": seg[2]}
	}
	return req
}

func start(workflow, body string) events.APIGatewayV2HTTPRequest {
	return request(RouteStart, "POST", "/v1/workflows/"+workflow+"/sessions", body)
}

func turn(workflow, id, body string) events.APIGatewayV2HTTPRequest {
	return request(RouteTurn, "POST", "/v1/workflows/"+workflow+"/sessions/"+id+"/turns", body)
}

func call(t *testing.T, h *Handler, req events.APIGatewayV2HTTPRequest) (int, map[string]any) {
	t.Helper()
	resp, err := h.Handle(context.Background(), req)
	if err != nil {
		t.Fatalf("Handle returned a Go error: %v", err)
	}
	if ct := resp.Headers["Content-Type"]; ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(resp.Body), &body); err != nil {
		t.Fatalf("body is not JSON: %v: %s", err, resp.Body)
	}
	return resp.StatusCode, body
}

func errCode(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func details(body map[string]any) map[string]any {
	e, _ := body["error"].(map[string]any)
	d, _ := e["details"].(map[string]any)
	return d
}

func TestStartMintsASessionAndAnswersTheSummary(t *testing.T) {
	h, _ := newFixture(t)
	status, body := call(t, h, start("greeter", `{"message":"hi"}`))
	if status != http.StatusOK {
		t.Fatalf("status %d: %v", status, body)
	}
	if id, _ := body["sessionId"].(string); !strings.HasPrefix(id, "session-") {
		t.Errorf("sessionId = %v, want a minted id", body["sessionId"])
	}
	if body["kind"] != "completed" || body["state"] != "greet" || body["reply"] != "Hello." || body["turn"] != 1.0 {
		t.Errorf("summary = %v", body)
	}
	if _, ok := body["messages"]; ok {
		t.Error("the summary must not carry the transcript")
	}
}

func TestStartUsesTheTriggersSessionPath(t *testing.T) {
	h, e := newFixture(t)
	status, body := call(t, h, start("greeter", `{"message":"order","trigger":"order","variables":{"order_id":"ord-7","qty":2}}`))
	if status != http.StatusOK || body["sessionId"] != "ord-7" {
		t.Fatalf("status %d: %v", status, body)
	}
	if _, err := e.log.Get(context.Background(), "ord-7"); err != nil {
		t.Errorf("session ord-7 not stored: %v", err)
	}
}

func TestTurnsContinueANamedSession(t *testing.T) {
	h, _ := newFixture(t)
	for i, want := range []float64{1, 2} {
		status, body := call(t, h, turn("greeter", "chat-1", `{"message":"hello again"}`))
		if status != http.StatusOK || body["sessionId"] != "chat-1" || body["turn"] != want {
			t.Fatalf("turn %d: status %d: %v", i+1, status, body)
		}
	}
}

func TestDefaultRouteMatchesTheRawPath(t *testing.T) {
	h, _ := newFixture(t)
	status, body := call(t, h, request("$default", "POST", "/v1/workflows/greeter/sessions/raw-1/turns", `{"message":"hi"}`))
	if status != http.StatusOK || body["sessionId"] != "raw-1" {
		t.Fatalf("turn: status %d: %v", status, body)
	}
	status, body = call(t, h, request("$default", "POST", "/v1/workflows/greeter/sessions", `{"message":"hi"}`))
	if status != http.StatusOK || !strings.HasPrefix(body["sessionId"].(string), "session-") {
		t.Fatalf("start: status %d: %v", status, body)
	}
}

func TestBase64BodyIsDecoded(t *testing.T) {
	h, _ := newFixture(t)
	req := turn("greeter", "b64", base64.StdEncoding.EncodeToString([]byte(`{"message":"hi"}`)))
	req.IsBase64Encoded = true
	if status, body := call(t, h, req); status != http.StatusOK {
		t.Fatalf("status %d: %v", status, body)
	}
}

// Every refusal of the contract, driven through Handle; none of them reaches the model.
func TestRefusals(t *testing.T) {
	bigBody := `{"message":"` + strings.Repeat("x", MaxBodyBytes) + `"}`
	badB64 := turn("greeter", "s1", "not base64!")
	badB64.IsBase64Encoded = true
	cases := []struct {
		name   string
		req    events.APIGatewayV2HTTPRequest
		status int
		code   string
	}{
		{"malformed JSON", turn("greeter", "s1", `{"message":`), 400, CodeInvalidRequest},
		{"syntax error", turn("greeter", "s1", `{"message" "hi"}`), 400, CodeInvalidRequest},
		{"not an object", turn("greeter", "s1", `["hi"]`), 400, CodeInvalidRequest},
		{"empty body", turn("greeter", "s1", ``), 400, CodeInvalidRequest},
		{"two values", turn("greeter", "s1", `{"message":"a"} {"message":"b"}`), 400, CodeInvalidRequest},
		{"unknown field", turn("greeter", "s1", `{"message":"hi","variabels":{}}`), 400, CodeInvalidRequest},
		{"message not a string", turn("greeter", "s1", `{"message":5}`), 400, CodeInvalidRequest},
		{"variables not an object", turn("greeter", "s1", `{"message":"hi","variables":[1]}`), 400, CodeInvalidRequest},
		{"bad base64", badB64, 400, CodeInvalidRequest},
		{"missing message", turn("greeter", "s1", `{}`), 400, "EmptyMessageError"},
		{"blank message on a start", start("greeter", `{"message":"  "}`), 400, "EmptyMessageError"},
		{"bad variable name", turn("greeter", "s1", `{"message":"hi","variables":{"Order":1}}`), 400, "InvalidVariableNameError"},
		{"trigger args", start("greeter", `{"message":"hi","trigger":{"id":"order","args":{"qty":1}}}`), 400, CodeInvalidTriggerInput},
		{"trigger object", start("greeter", `{"message":"hi","trigger":{"id":"order"}}`), 400, CodeInvalidTriggerInput},
		{"file not base64", turn("greeter", "s1", `{"message":"hi","files":{"doc":{"name":"a.txt","contentBase64":"%%%"}}}`), 400, "InvalidTurnFileError"},
		{"file name with a slash", turn("greeter", "s1", `{"message":"hi","files":{"doc":{"name":"../a.txt","contentBase64":"eA=="}}}`), 400, "InvalidTurnFileError"},
		{"file shape", turn("greeter", "s1", `{"message":"hi","files":{"doc":"a.txt"}}`), 400, "InvalidTurnFileError"},
		{"invalid session id", turn("greeter", ".", `{"message":"hi"}`), 400, "SessionStoreIdError"},
		{"too large", turn("greeter", "s1", bigBody), 413, CodePayloadTooLarge},
		{"unknown route", request("$default", "GET", "/v1/nowhere", ``), 404, CodeNotFound},
		{"wrong method", request("$default", "GET", "/v1/workflows/greeter/sessions", ``), 405, CodeMethodNotAllowed},
		{"unknown workflow", start("nope", `{"message":"hi"}`), 404, "UnknownWorkflowError"},
		{"unknown trigger", start("greeter", `{"message":"hi","trigger":"webhook"}`), 422, "UnknownTriggerError"},
		{"signature issues", start("greeter", `{"message":"hi","trigger":"order","variables":{"order_id":"o-1","qty":"2"}}`), 422, "SignatureIssuesError"},
		{"spec does not load", start("broken", `{"message":"hi"}`), 500, "WorkflowLoadError"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, e := newFixture(t)
			status, body := call(t, h, tc.req)
			if status != tc.status || errCode(body) != tc.code {
				t.Fatalf("got %d %s, want %d %s: %v", status, errCode(body), tc.status, tc.code, body)
			}
			if msg := body["error"].(map[string]any)["message"]; msg == "" {
				t.Error("empty error message")
			}
			if n := e.model.calls.Load(); n != 0 {
				t.Errorf("%d model calls on a refused request", n)
			}
		})
	}
}

// DESIGN.md §1: a start failing the trigger's requires is refused with the issues before
// anything is written — no session exists afterwards.
func TestSignatureIssuesWriteNothing(t *testing.T) {
	h, e := newFixture(t)
	status, body := call(t, h, start("greeter", `{"message":"hi","trigger":"order","variables":{"order_id":"o-9"}}`))
	if status != http.StatusUnprocessableEntity {
		t.Fatalf("status %d: %v", status, body)
	}
	issues, _ := details(body)["issues"].([]any)
	if len(issues) != 1 || issues[0].(map[string]any)["name"] != "qty" || issues[0].(map[string]any)["kind"] != "missing" {
		t.Errorf("issues = %v", details(body)["issues"])
	}
	if !strings.HasPrefix(body["error"].(map[string]any)["message"].(string), "Refusing to start: trigger 'order' requires 'qty'") {
		t.Errorf("message = %v", body["error"])
	}
	if _, err := e.log.Get(context.Background(), "o-9"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("session o-9 exists after a refused start: %v", err)
	}
}

func TestWorkflowLoadErrorNamesEveryDiagnostic(t *testing.T) {
	h, _ := newFixture(t)
	_, body := call(t, h, start("broken", `{"message":"hi"}`))
	diags, _ := details(body)["diagnostics"].([]any)
	if len(diags) == 0 {
		t.Fatalf("no diagnostics: %v", body)
	}
	for _, d := range diags {
		if d.(map[string]any)["message"] == "" {
			t.Errorf("diagnostic without a message: %v", d)
		}
	}
}

func TestSessionOfAnotherWorkflowConflicts(t *testing.T) {
	h, _ := newFixture(t)
	if status, body := call(t, h, turn("greeter", "shared", `{"message":"hi"}`)); status != http.StatusOK {
		t.Fatalf("first turn: %d %v", status, body)
	}
	status, body := call(t, h, turn("other", "shared", `{"message":"hi"}`))
	if status != http.StatusConflict || errCode(body) != "WorkflowMismatchError" || details(body)["workflow"] != "greeter" {
		t.Fatalf("got %d %v", status, body)
	}
}

func TestSecondWriterConflicts(t *testing.T) {
	h, e := newFixture(t)
	ctx := context.Background()
	if status, body := call(t, h, turn("greeter", "busy", `{"message":"hi"}`)); status != http.StatusOK {
		t.Fatalf("first turn: %d %v", status, body)
	}
	before, err := e.log.Get(ctx, "busy")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.log.Acquire(ctx, "busy", "another-lambda", time.Minute); err != nil {
		t.Fatal(err)
	}
	calls := e.model.calls.Load()
	status, body := call(t, h, turn("greeter", "busy", `{"message":"hi"}`))
	if status != http.StatusConflict || errCode(body) != "SessionNotResumableError" || details(body)["leaseExpiresAt"] == nil {
		t.Fatalf("got %d %v", status, body)
	}
	if e.model.calls.Load() != calls {
		t.Error("the second writer called the model")
	}
	after, err := e.log.Get(ctx, "busy")
	if err != nil || after.Version != before.Version || after.Messages != before.Messages {
		t.Errorf("checkpoint changed: before v%d/%d messages, after %+v (%v)", before.Version, before.Messages, after, err)
	}
}

func TestModelFailureIsABadGateway(t *testing.T) {
	h, e := newFixture(t)
	e.model.err = &model.CallError{Code: "ThrottlingException", Status: 429, Message: "slow down", Retryable: true, Attempts: 4}
	status, body := call(t, h, turn("greeter", "s1", `{"message":"hi"}`))
	if status != http.StatusBadGateway || errCode(body) != "ModelCallError" || details(body)["providerCode"] != "ThrottlingException" {
		t.Fatalf("got %d %v", status, body)
	}
}

func TestUnexpectedErrorsLeakNothing(t *testing.T) {
	h, e := newFixture(t)
	e.err = errors.New("dial tcp 10.0.0.7:443: secret-internal-host")
	resp, err := h.Handle(context.Background(), start("greeter", `{"message":"hi"}`))
	if err != nil || resp.StatusCode != http.StatusInternalServerError {
		t.Fatalf("got %d, %v", resp.StatusCode, err)
	}
	if strings.Contains(resp.Body, "secret-internal-host") || strings.Contains(resp.Body, "10.0.0.7") {
		t.Errorf("internal detail leaked: %s", resp.Body)
	}
}

// BenchmarkHandleTurn: the first turn of a session through Handle over memory stores and an instant model —
// the HTTP layer's own cost plus the engine's, without I/O.
func BenchmarkHandleTurn(b *testing.B) {
	authored := memory.NewFiles()
	if err := authored.Write(context.Background(), "workflows/greeter/workflow.yaml", []byte(greeter)); err != nil {
		b.Fatal(err)
	}
	h := New(&engines{authored: authored, log: memory.New(), model: &fakeModel{}}, nil, nil)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		n++ // a new session each time, so the cost does not grow with b.N
		resp, err := h.Handle(context.Background(), turn("greeter", "bench-"+strconv.Itoa(n), `{"message":"hi","variables":{"order_id":"o-1"}}`))
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("%d %v: %s", resp.StatusCode, err, resp.Body)
		}
	}
}

// testCaller is the caller testPolicy identifies in req.
func testCaller(t *testing.T, req events.APIGatewayV2HTTPRequest) access.Caller {
	t.Helper()
	c, err := testPolicy.Identify(req)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
