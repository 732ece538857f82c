package httpapi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/store/memory"
	"github.com/archmax-ai/archmax/functions/handlers/continuation"
)

// summaryOf reads GET /v1/sessions/{id} through the handler.
func summaryOf(t *testing.T, h *Handler, id string) session.SessionSummary {
	t.Helper()
	resp, _ := h.Handle(context.Background(), get("/v1/sessions/"+id, nil))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/sessions/%s = %d %s", id, resp.StatusCode, resp.Body)
	}
	var sum session.SessionSummary
	if err := json.Unmarshal([]byte(resp.Body), &sum); err != nil {
		t.Fatal(err)
	}
	return sum
}

// C6-3 (fix C6-21): a wait too large for a Duration is capped at MaxWait before it is
// converted — it neither overflows into an instant 202 nor is read as no wait at all.
func TestPreferWaitHugeValuesGetTheCap(t *testing.T) {
	for _, v := range []string{"wait=25", "wait=26", "wait=10000000000", "wait=10000000000000000000",
		"wait=9223372036854775807", "wait=18446744073709551616", "wait=" + strings.Repeat("9", 40), `wait="10000000000"`} {
		if got := preferWait(v); got != MaxWait {
			t.Errorf("preferWait(%q) = %s, want the cap %s", v, got, MaxWait)
		}
	}
	for _, v := range []string{"wait=+5", "wait=1e10", "wait=5s", "wait=", "wait=0x10"} {
		if got := preferWait(v); got != 0 {
			t.Errorf("preferWait(%q) = %s, want 0 (not delta-seconds: ignored)", v, got)
		}
	}
	// through the handler: the turn settles within the (capped) wait and is answered 200
	h, _ := newAsyncFixture(t, &starts{})
	req := start("greeter", `{"message":"hello"}`)
	req.Headers["prefer"] = "wait=10000000000"
	resp, _ := h.Handle(context.Background(), req)
	if resp.StatusCode != http.StatusOK || decodeSummary(t, resp.Body).Kind != session.KindCompleted {
		t.Fatalf("Prefer: wait=10000000000 = %d %s, want 200 with the outcome", resp.StatusCode, resp.Body)
	}
}

// clockEngines serves greeter with an engine clock the model moves: its first call (a tool
// call) takes "two seconds" on that clock, so the step outlasts `Prefer: wait=1` without
// the test sleeping; the second call answers.
type clockEngines struct {
	*engines
	skew  atomic.Int64 // added to the engine's clock
	calls atomic.Int64
}

func (e *clockEngines) Engine(ctx context.Context, workflow string) (*session.Engine, error) {
	if _, err := e.authored.Stat(ctx, "workflows/"+workflow+"/workflow.yaml"); err != nil {
		return nil, &session.UnknownWorkflowError{Workflow: workflow}
	}
	return session.New(session.Config{Workflow: workflow, Authored: e.authored, Log: e.log, Files: memory.NewFiles(),
		Model: e, ModelID: "test-model", Clock: func() time.Time { return time.Now().Add(time.Duration(e.skew.Load())) }})
}

func (e *clockEngines) Converse(ctx context.Context, req *model.Request) (*model.Response, error) {
	if e.calls.Add(1) == 1 {
		e.skew.Add(int64(2 * time.Second)) // the step outlasts wait=1
		r := tool("list_files", map[string]any{"path": "scratchpad"})
		return &r, nil
	}
	return text("Hello."), nil
}

// DESIGN.md §1: `Prefer: wait=N` that elapses before the turn settles answers 202 (kind
// running, Location of the summary), and the turn goes on in a continuation: polling the
// Location finds it settled, with the outcome under lastTurn.
func TestPreferWaitElapsesAnswers202AndTheTurnGoesOn(t *testing.T) {
	_, base := newFixture(t)
	e := &clockEngines{engines: base}
	async := &continuation.InProcess{Timeout: time.Minute}
	run := continuation.NewRunner(e, async, continuation.Budget{ModelTimeout: time.Second, Margin: time.Second}, nil)
	async.Bind(run)
	t.Cleanup(async.Stop)
	h := New(e, run, nil)

	req := start("greeter", `{"message":"hello"}`)
	req.Headers["prefer"] = "wait=1"
	resp, _ := h.Handle(context.Background(), req)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("a turn outlasting wait=1 = %d %s, want 202", resp.StatusCode, resp.Body)
	}
	sum := decodeSummary(t, resp.Body)
	if sum.Kind != session.KindRunning || sum.TurnID == "" || resp.Headers["Location"] != "/v1/sessions/"+sum.SessionID {
		t.Fatalf("202 = %+v, Location %q", sum, resp.Headers["Location"])
	}
	async.Wait() // the continuation (and any it started) has finished
	read := summaryOf(t, h, sum.SessionID)
	if read.Status != session.StatusCompleted || read.TurnID != sum.TurnID || read.Interrupted {
		t.Fatalf("summary after the continuation = %+v", read)
	}
	if lt := read.LastTurn; lt == nil || lt.TurnID != sum.TurnID || lt.Kind != session.KindCompleted || lt.Reply != "Hello." {
		t.Errorf("lastTurn = %+v, want turn %s completed with its reply", read.LastTurn, sum.TurnID)
	}
	if n := e.calls.Load(); n != 2 {
		t.Errorf("model calls = %d, want 2 (one before the 202, one in the continuation)", n)
	}
}

// Issue 6 (C6-23): the summary carries the last settled turn's outcome under lastTurn, with
// the outcome summary's names and values, so a client polling after a 202 needs no
// transcript page; while a turn runs, lastTurn is still the one before.
func TestSummaryCarriesTheLastTurnsOutcome(t *testing.T) {
	s := &starts{}
	h, _ := newAsyncFixture(t, s)
	resp, _ := h.Handle(context.Background(), start("greeter", `{"message":"hello"}`))
	accepted := decodeSummary(t, resp.Body)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("start = %d %s", resp.StatusCode, resp.Body)
	}
	if sum := summaryOf(t, h, accepted.SessionID); sum.LastTurn != nil {
		t.Errorf("lastTurn before any turn settled = %+v", sum.LastTurn)
	}
	raw, _ := json.Marshal(continuation.Event{Continue: &s.taken()[0]})
	if _, err := h.HandleOrEvent(context.Background(), raw, "turn", nil); err != nil {
		t.Fatal(err)
	}
	sum := summaryOf(t, h, accepted.SessionID)
	want := session.TurnOutcome{TurnID: accepted.TurnID, Kind: session.KindCompleted, Disposition: session.DispositionTurn,
		Status: session.StatusCompleted, State: "greet", Reply: "Hello.", Exit: &session.Exit{Success: true}, Turn: 1}
	if lt := sum.LastTurn; lt == nil || lt.Exit == nil || *lt.Exit != *want.Exit || func() bool { c := *lt; c.Exit = want.Exit; return c != want }() {
		t.Fatalf("lastTurn = %+v, want %+v", sum.LastTurn, want)
	}

	// a synchronous answer and the summary's lastTurn say the same thing, field for field
	req := turn("greeter", accepted.SessionID, `{"message":"again"}`)
	req.Headers["prefer"] = "wait=20"
	resp, _ = h.Handle(context.Background(), req)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("turn with wait = %d %s", resp.StatusCode, resp.Body)
	}
	var answer, summary map[string]any
	_ = json.Unmarshal([]byte(resp.Body), &answer)
	got, _ := h.Handle(context.Background(), get("/v1/sessions/"+accepted.SessionID, nil))
	_ = json.Unmarshal([]byte(got.Body), &summary)
	lastTurn, _ := summary["lastTurn"].(map[string]any)
	for _, k := range []string{"turnId", "kind", "disposition", "status", "state", "reply", "exit", "turn"} {
		a, _ := json.Marshal(answer[k])
		l, _ := json.Marshal(lastTurn[k])
		if answer[k] == nil || string(a) != string(l) {
			t.Errorf("%s: the 200 answer says %s, the summary's lastTurn %s", k, a, l)
		}
	}
}

// C6-20: a turn failing with an error no retry fixes (502 ModelCallError, retryable false)
// leaves the session interrupted with that lastError and its previous lastTurn, and its
// continuation — Lambda's retry — calls the model no more.
func TestNonRetryableFailureIsNotContinued(t *testing.T) {
	s := &starts{}
	h, e := newAsyncFixture(t, s)
	req := turn("greeter", "nr-1", `{"message":"hello"}`)
	req.Headers["prefer"] = "wait=20"
	if resp, _ := h.Handle(context.Background(), req); resp.StatusCode != http.StatusOK {
		t.Fatalf("first turn = %d %s", resp.StatusCode, resp.Body)
	}
	first := summaryOf(t, h, "nr-1")
	e.model.err = &model.CallError{Code: "ValidationException", Status: 400, Message: "bad model id"}
	req = turn("greeter", "nr-1", `{"message":"again"}`)
	req.Headers["prefer"] = "wait=20"
	status, body := call(t, h, req)
	if status != http.StatusBadGateway || errCode(body) != "ModelCallError" || details(body)["retryable"] != false {
		t.Fatalf("failing turn = %d %v", status, body)
	}
	sum := summaryOf(t, h, "nr-1")
	if sum.Status != session.StatusRunning || !sum.Interrupted || sum.LastError == nil || sum.LastError.Retryable ||
		sum.LastTurn == nil || sum.LastTurn.TurnID != first.TurnID || sum.LastTurn.Kind != session.KindCompleted {
		t.Fatalf("summary = %+v", sum)
	}
	calls := e.model.calls.Load()
	raw, _ := json.Marshal(continuation.Event{Continue: &continuation.Ref{SessionID: "nr-1", TurnID: sum.TurnID}})
	res, err := h.HandleOrEvent(context.Background(), raw, "turn", nil)
	if err != nil || res.(continuation.Result).Skipped == "" || e.model.calls.Load() != calls {
		t.Errorf("continuation of the failed turn = %+v, %v, %d more model calls", res, err, e.model.calls.Load()-calls)
	}
}

// L5-6 (fix C6-22): a list cursor the API never issued is 400, however it is forged; an
// issued one pages on.
func TestForgedListCursorsAreRefused(t *testing.T) {
	h, _ := newFixture(t)
	for _, id := range []string{"c1", "c2"} {
		if status, body := call(t, h, turn("greeter", id, `{"message":"hi"}`)); status != http.StatusOK {
			t.Fatalf("turn: %d %v", status, body)
		}
	}
	status, body := call(t, h, get("/v1/sessions", map[string]string{"limit": "1"}))
	next, _ := body["nextCursor"].(string)
	if status != http.StatusOK || next == "" {
		t.Fatalf("first page: %d %v", status, body)
	}
	if status, body := call(t, h, get("/v1/sessions", map[string]string{"limit": "1", "cursor": next})); status != http.StatusOK ||
		len(body["sessions"].([]any)) != 1 {
		t.Fatalf("the issued cursor: %d %v", status, body)
	}
	b64 := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, forged := range []string{b64(`{"x":1}`), b64(`{"u":"garbage","s":""}`), b64(`{}`), b64(`null`), b64(`"c1"`),
		b64(`{"u":"2026-01-01T00:00:00.000Z","s":"../etc"}`), b64(`{"u":"2026-01-01T00:00:00.000Z","s":"c1","admin":true}`)} {
		status, body := call(t, h, get("/v1/sessions", map[string]string{"cursor": forged}))
		if status != http.StatusBadRequest || errCode(body) != CodeInvalidRequest {
			t.Errorf("cursor %q: %d %v, want 400", forged, status, body)
		}
	}
}

// RFC 9110 §15.5.6 (C6-24): every 405 carries Allow with the method the route takes — on
// the write routes, the read routes and the read-only function, with or without an
// Idempotency-Key.
func TestMethodNotAllowedCarriesAllow(t *testing.T) {
	h, _ := newFixture(t)
	keyed := request("$default", "PATCH", "/v1/sessions/x", "")
	keyed.Headers["idempotency-key"] = "k-405"
	for _, c := range []struct {
		name  string
		req   events.APIGatewayV2HTTPRequest
		read  bool
		allow string
	}{
		{"GET a start", request("$default", "GET", "/v1/workflows/greeter/sessions", ""), false, "POST"},
		{"PUT a decision", request("$default", "PUT", "/v1/sessions/x/decision", `{"to":"a"}`), false, "POST"},
		{"PUT a session", request("$default", "PUT", "/v1/sessions/x", ""), false, "GET, DELETE"},
		{"DELETE to the read function", request("$default", "DELETE", "/v1/sessions/x", ""), true, "GET"},
		{"POST the listing", request("$default", "POST", "/v1/sessions", `{}`), false, "GET"},
		{"PATCH messages", request("$default", "PATCH", "/v1/sessions/x/messages", ""), false, "GET"},
		{"PATCH with a key", keyed, false, "GET, DELETE"},
		{"POST to the read function", start("greeter", `{"message":"hi"}`), true, "POST"},
	} {
		handle := h.Handle
		if c.read {
			handle = h.HandleRead
		}
		for range 2 { // a repeat (with its key) answers the same
			resp, _ := handle(context.Background(), c.req)
			if resp.StatusCode != http.StatusMethodNotAllowed || resp.Headers["Allow"] != c.allow {
				t.Errorf("%s: %d Allow %q, want 405 Allow %q", c.name, resp.StatusCode, resp.Headers["Allow"], c.allow)
			}
		}
	}
	if resp, _ := h.Handle(context.Background(), request("$default", "GET", "/v1/nowhere", "")); resp.Headers["Allow"] != "" {
		t.Errorf("a 404 carries Allow %q", resp.Headers["Allow"])
	}
}

// L5-2 (fix C6-25): a decision or delivery is checked in one order on both routes — the
// body (400) before the session (404 unknown, 409 not parked).
func TestResumeRoutesCheckTheBodyBeforeTheSession(t *testing.T) {
	h, _ := newFixture(t)
	if status, body := call(t, h, turn("greeter", "done-1", `{"message":"hi"}`)); status != http.StatusOK {
		t.Fatalf("setup: %d %v", status, body)
	}
	for _, c := range []struct {
		name   string
		req    events.APIGatewayV2HTTPRequest
		status int
		code   string
	}{
		{"delivery without trigger, unknown session", delivery("nope", `{}`), 400, "MissingDeliveryTriggerError"},
		{"delivery without trigger, settled session", delivery("done-1", `{}`), 400, "MissingDeliveryTriggerError"},
		{"delivery with a blank trigger", delivery("nope", `{"trigger":"  "}`), 400, "MissingDeliveryTriggerError"},
		{"delivery with a bad variable, unknown session", delivery("nope", `{"trigger":"t","variables":{"Bad":1}}`), 400, "InvalidVariableNameError"},
		{"delivery with a bad file name, unknown session", delivery("nope", `{"trigger":"t","files":{"doc":{"name":"../a","contentBase64":"eA=="}}}`), 400, "InvalidTurnFileError"},
		{"delivery, unknown session", delivery("nope", `{"trigger":"t"}`), 404, "SessionNotFoundError"},
		{"delivery, settled session", delivery("done-1", `{"trigger":"t"}`), 409, "SessionNotAwaitingInputError"},
		{"decision without target, unknown session", decision("nope", `{}`), 400, CodeInvalidRequest},
		{"decision without target, settled session", decision("done-1", `{}`), 400, CodeInvalidRequest},
		{"decision, unknown session", decision("nope", `{"to":"a"}`), 404, "SessionNotFoundError"},
		{"decision, settled session", decision("done-1", `{"to":"a"}`), 409, "SessionNotParkedError"},
	} {
		if status, body := call(t, h, c.req); status != c.status || errCode(body) != c.code {
			t.Errorf("%s: %d %v, want %d %s", c.name, status, body, c.status, c.code)
		}
	}
}

// L5-6 (fix C6-26): the after cursor's refusal says what it takes in words; a huge one
// reads as the end. A path with a trailing slash or an empty segment is no route (404).
func TestAfterCursorWordingAndTrailingSlashes(t *testing.T) {
	h, _ := newFixture(t)
	if status, body := call(t, h, turn("greeter", "demo-2", `{"message":"hi"}`)); status != http.StatusOK {
		t.Fatalf("setup: %d %v", status, body)
	}
	for _, v := range []string{"-1", "x", "1.5", "-99999999999999999999"} {
		status, body := call(t, h, get("/v1/sessions/demo-2/messages", map[string]string{"after": v}))
		msg, _ := body["error"].(map[string]any)["message"].(string)
		if status != http.StatusBadRequest || !strings.Contains(msg, "non-negative integer") || strings.Contains(msg, "4611686018427387904") {
			t.Errorf("after=%s: %d %q", v, status, msg)
		}
	}
	count := summaryOf(t, h, "demo-2").MessageCount
	status, body := call(t, h, get("/v1/sessions/demo-2/events", map[string]string{"after": "99999999999999999999"}))
	if status != http.StatusOK || body["next"] == nil {
		t.Errorf("a huge after: %d %v", status, body)
	}
	status, body = call(t, h, get("/v1/sessions/demo-2/messages", map[string]string{"after": "9223372036854775807"}))
	if status != http.StatusOK || int64(body["next"].(float64)) != count {
		t.Errorf("after=max int64: %d %v, want next = %d", status, body, count)
	}
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/v1/sessions/demo-2/", ""},
		{"GET", "/v1/sessions/", ""},
		{"GET", "/v1/sessions/demo-2/messages/", ""},
		{"GET", "/v1//sessions", ""},
		{"POST", "/v1/sessions/demo-2/decision/", `{"to":"a"}`},
		{"POST", "/v1/workflows/greeter/sessions/", `{"message":"hi"}`},
		{"POST", "/v1/workflows/greeter/sessions/demo-2/turns/", `{"message":"hi"}`},
	} {
		if status, body := call(t, h, request("$default", c.method, c.path, c.body)); status != http.StatusNotFound || errCode(body) != CodeNotFound {
			t.Errorf("%s %s: %d %v, want 404 NotFound", c.method, c.path, status, body)
		}
	}
}
