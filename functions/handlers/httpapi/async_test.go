package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/store"
	"github.com/archmax-ai/archmax/core/store/memory"
	"github.com/archmax-ai/archmax/functions/handlers/continuation"
)

// starts records the continuations the handler asks for; err refuses them.
type starts struct {
	mu   sync.Mutex
	refs []continuation.Ref
	err  error
}

func (s *starts) Start(_ context.Context, ref continuation.Ref) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	s.refs = append(s.refs, ref)
	return nil
}

func (s *starts) taken() []continuation.Ref {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]continuation.Ref(nil), s.refs...)
}

// newAsyncFixture is the greeter handler with a Runner that starts continuations through s.
func newAsyncFixture(t *testing.T, s *starts) (*Handler, *engines) {
	t.Helper()
	_, e := newFixture(t)
	return New(e, continuation.NewRunner(e, s, continuation.Budget{}, nil), nil), e
}

func decodeSummary(t *testing.T, body string) session.OutcomeSummary {
	t.Helper()
	var sum session.OutcomeSummary
	if err := json.Unmarshal([]byte(body), &sum); err != nil {
		t.Fatalf("not an outcome summary: %s", body)
	}
	return sum
}

// DESIGN.md §1: without Prefer the answer is 202 as soon as the turn's opening is committed,
// with kind running, the turn id and the summary's Location; the continuation finishes the
// turn, and the summary route shows that turn settled.
func TestStartAnswers202AndContinues(t *testing.T) {
	s := &starts{}
	h, e := newAsyncFixture(t, s)
	resp, _ := h.Handle(context.Background(), start("greeter", `{"message":"hello"}`))
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("start = %d %s, want 202", resp.StatusCode, resp.Body)
	}
	sum := decodeSummary(t, resp.Body)
	if sum.Kind != session.KindRunning || sum.Status != session.StatusRunning || sum.TurnID == "" || sum.State != "greet" || sum.Reply != "" {
		t.Fatalf("202 body = %+v", sum)
	}
	if loc := resp.Headers["Location"]; loc != "/v1/sessions/"+sum.SessionID {
		t.Errorf("Location = %q", loc)
	}
	if e.model.calls.Load() != 0 {
		t.Errorf("the model ran %d times before the 202", e.model.calls.Load())
	}
	refs := s.taken()
	if len(refs) != 1 || refs[0] != (continuation.Ref{SessionID: sum.SessionID, TurnID: sum.TurnID}) {
		t.Fatalf("continuations started = %+v", refs)
	}
	// the continuation invocation: the function's own event, served through HandleOrEvent
	raw, _ := json.Marshal(continuation.Event{Continue: &refs[0]})
	res, err := h.HandleOrEvent(context.Background(), raw, "turn", nil)
	if err != nil || res.(continuation.Result).Outcome != session.KindCompleted {
		t.Fatalf("continuation = %+v, %v", res, err)
	}
	got, _ := h.Handle(context.Background(), request("$default", "GET", "/v1/sessions/"+sum.SessionID, ""))
	var read session.SessionSummary
	_ = json.Unmarshal([]byte(got.Body), &read)
	if read.Status != session.StatusCompleted || read.TurnID != sum.TurnID || read.Interrupted {
		t.Errorf("summary after the continuation = %+v", read)
	}
}

// `Prefer: wait=N` answers 200 with the settled outcome when the work finishes in time; a
// refusal is answered synchronously whatever the preference.
func TestPreferWaitAnswersTheOutcome(t *testing.T) {
	s := &starts{}
	h, _ := newAsyncFixture(t, s)
	req := start("greeter", `{"message":"hello"}`)
	req.Headers["prefer"] = "respond-async, wait=5"
	resp, _ := h.Handle(context.Background(), req)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("start with wait = %d %s", resp.StatusCode, resp.Body)
	}
	if sum := decodeSummary(t, resp.Body); sum.Kind != session.KindCompleted || sum.TurnID == "" || sum.Reply != "Hello." {
		t.Errorf("outcome = %+v", sum)
	}
	if len(s.taken()) != 0 {
		t.Errorf("a settled turn started continuations: %v", s.taken())
	}
	bad, _ := h.Handle(context.Background(), start("nope", `{"message":"hello"}`))
	if bad.StatusCode != http.StatusNotFound {
		t.Errorf("unknown workflow = %d, want 404 at once", bad.StatusCode)
	}
}

// An Idempotency-Key repeat of an accepted request replays the 202 with the same turn and
// starts nothing more.
func TestIdempotencyKeyReplaysThe202(t *testing.T) {
	s := &starts{}
	h, e := newAsyncFixture(t, s)
	req := start("greeter", `{"message":"hello"}`)
	req.Headers["idempotency-key"] = "k-202"
	first, _ := h.Handle(context.Background(), req)
	again, _ := h.Handle(context.Background(), req)
	if first.StatusCode != http.StatusAccepted || again.StatusCode != http.StatusAccepted || again.Body != first.Body ||
		again.Headers["Idempotent-Replayed"] != "true" {
		t.Fatalf("first %d %s; repeat %d %s %v", first.StatusCode, first.Body, again.StatusCode, again.Body, again.Headers)
	}
	if n := len(s.taken()); n != 1 {
		t.Errorf("continuations started = %d, want 1", n)
	}
	if heads, _, _ := e.log.List(context.Background(), store.ListOptions{}); len(heads) != 1 {
		t.Errorf("sessions = %d, want 1", len(heads))
	}
}

// A continuation that cannot be started answers 503 ContinuationStartError naming the turn.
func TestContinuationStartFailureIs503(t *testing.T) {
	h, _ := newAsyncFixture(t, &starts{err: errors.New("TooManyRequestsException")})
	resp, _ := h.Handle(context.Background(), start("greeter", `{"message":"hello"}`))
	var body ErrorBody
	_ = json.Unmarshal([]byte(resp.Body), &body)
	if resp.StatusCode != http.StatusServiceUnavailable || body.Error.Code != "ContinuationStartError" || body.Error.Details["turnId"] == "" {
		t.Fatalf("answer = %d %s", resp.StatusCode, resp.Body)
	}
}

// RFC 7240 wait: read among other preferences, capped at MaxWait; anything unreadable is 0.
func TestPreferWait(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"":                      0,
		"wait=10":               10 * time.Second,
		"respond-async, wait=3": 3 * time.Second,
		"Wait = 7":              7 * time.Second,
		`wait="4"`:              4 * time.Second,
		"wait=600":              MaxWait,
		"wait=-1":               0,
		"wait=soon":             0,
		"respond-async":         0,
		"handling=strict":       0,
	} {
		if got := preferWait(in); got != want {
			t.Errorf("preferWait(%q) = %s, want %s", in, got, want)
		}
	}
}

// The 202 answer conforms to the OpenAPI document.
func TestRunningAnswerConformsToTheOpenAPIDocument(t *testing.T) {
	doc := loadOpenAPI(t)
	router, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := newAsyncFixture(t, &starts{})
	body := `{"message":"hello"}`
	hreq, _ := http.NewRequest("POST", "http://127.0.0.1:8080/v1/workflows/greeter/sessions", strings.NewReader(body))
	hreq.Header.Set("Content-Type", "application/json")
	rt, params, err := router.FindRoute(hreq)
	if err != nil {
		t.Fatal(err)
	}
	in := &openapi3filter.RequestValidationInput{Request: hreq, PathParams: params, Route: rt}
	resp, _ := h.Handle(context.Background(), start("greeter", body))
	header := http.Header{}
	for k, v := range resp.Headers {
		header.Set(k, v)
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: resp.StatusCode, Header: header,
		Body: io.NopCloser(bytes.NewReader([]byte(resp.Body)))}
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		t.Errorf("202 does not conform: %v\n%s", err, resp.Body)
	}
}

// The read-only function serves the GET routes and refuses every write, writing nothing.
func TestHandleReadRefusesWrites(t *testing.T) {
	h, e := newFixture(t)
	resp, _ := h.HandleRead(context.Background(), start("greeter", `{"message":"hello"}`))
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("a start on the read function = %d %s, want 405", resp.StatusCode, resp.Body)
	}
	resp, _ = h.HandleRead(context.Background(), request("$default", "POST", "/v1/sessions/x/decision", `{"to":"a"}`))
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("a decision on the read function = %d, want 405", resp.StatusCode)
	}
	resp, _ = h.HandleRead(context.Background(), request("$default", "GET", "/v2/elsewhere", ""))
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown path = %d, want 404", resp.StatusCode)
	}
	resp, _ = h.HandleRead(context.Background(), request("$default", "GET", "/v1/sessions", ""))
	if resp.StatusCode != http.StatusOK {
		t.Errorf("the listing = %d %s", resp.StatusCode, resp.Body)
	}
	if heads, _, _ := e.log.List(context.Background(), store.ListOptions{}); len(heads) != 0 || e.model.calls.Load() != 0 {
		t.Errorf("the read function wrote %d sessions and called the model %d times", len(heads), e.model.calls.Load())
	}
}

// dropDone is a log whose final Idempotency-Key answers never land: the process died after
// the request's turn had committed, before its answer was recorded.
type dropDone struct{ store.Log }

func (d dropDone) PutIdempotent(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if strings.Contains(string(value), `"state":"done"`) {
		return errors.New("the process died")
	}
	return d.Log.PutIdempotent(ctx, key, value, ttl)
}

type crashingEngines struct{ *engines }

func (c crashingEngines) Log() store.Log { return dropDone{c.engines.log} }

// DESIGN.md §1: once a request's turn has committed, a repeat of its Idempotency-Key never
// runs it again — even when the first process died before recording its answer: the
// repeat is answered from the session (the turn the first request opened, recognised by its
// key-derived turn id), here the settled outcome the first answer carried — not a 202 for a
// session that completed (Issue 18) — and that answer is then recorded.
func TestIdempotencyKeySurvivesACrashAfterTheTurnOpened(t *testing.T) {
	_, e := newFixture(t)
	h := New(crashingEngines{e}, continuation.NewRunner(e, &starts{}, continuation.Budget{}, nil), nil)
	req := start("greeter", `{"message":"hello"}`)
	req.Headers["idempotency-key"] = "k-crash"
	req.Headers["prefer"] = "wait=5"
	first, _ := h.Handle(context.Background(), req)
	if first.StatusCode != http.StatusOK {
		t.Fatalf("first = %d %s", first.StatusCode, first.Body)
	}
	for range 2 {
		again, _ := h.Handle(context.Background(), req)
		if again.StatusCode != http.StatusOK || again.Headers["Idempotent-Replayed"] != "true" || again.Body != first.Body {
			t.Fatalf("repeat after the crash = %d %s %v, want the first answer %s", again.StatusCode, again.Body, again.Headers, first.Body)
		}
	}
	if heads, _, _ := e.log.List(context.Background(), store.ListOptions{}); len(heads) != 1 || e.model.calls.Load() != 1 {
		t.Errorf("the repeat ran the request again: %d sessions, %d model calls", len(heads), e.model.calls.Load())
	}
}

// A replayed 202 carries its Location like the first.
func TestReplayed202HasLocation(t *testing.T) {
	h, _ := newAsyncFixture(t, &starts{})
	req := start("greeter", `{"message":"hello"}`)
	req.Headers["idempotency-key"] = "k-loc"
	first, _ := h.Handle(context.Background(), req)
	again, _ := h.Handle(context.Background(), req)
	if first.StatusCode != http.StatusAccepted || again.Headers["Location"] == "" || again.Headers["Location"] != first.Headers["Location"] {
		t.Fatalf("Location: first %q, replay %q", first.Headers["Location"], again.Headers["Location"])
	}
}

// DESIGN.md §1: a turn on a session that never ran is a start — its trigger's requires are
// checked before anything is written (422), as on the start route.
func TestTurnOnANewSessionIsCheckedAsAStart(t *testing.T) {
	h, e := newFixture(t)
	resp, _ := h.Handle(context.Background(), turn("greeter", "fresh-1", `{"message":"x","trigger":"order"}`))
	var body ErrorBody
	_ = json.Unmarshal([]byte(resp.Body), &body)
	if resp.StatusCode != http.StatusUnprocessableEntity || body.Error.Code != "SignatureIssuesError" {
		t.Fatalf("turn starting a session with unmet requires = %d %s", resp.StatusCode, resp.Body)
	}
	if _, err := e.log.Get(context.Background(), "fresh-1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the refused start wrote the session: %v", err)
	}
	resp, _ = h.Handle(context.Background(), turn("greeter", "fresh-2", `{"message":"  "}`))
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a blank first message = %d", resp.StatusCode)
	}
}

// A read cursor past the end answers the end as next; another method on a read route is 405.
func TestReadCursorPastTheEndAndMethods(t *testing.T) {
	h, _ := newFixture(t)
	if resp, _ := h.Handle(context.Background(), start("greeter", `{"message":"hello"}`)); resp.StatusCode != http.StatusOK {
		t.Fatalf("start: %d %s", resp.StatusCode, resp.Body)
	}
	resp, _ := h.Handle(context.Background(), request("$default", "GET", "/v1/sessions", ""))
	var page struct{ Sessions []session.SessionSummary }
	_ = json.Unmarshal([]byte(resp.Body), &page)
	id := page.Sessions[0].SessionID
	ev := request("$default", "GET", "/v1/sessions/"+id+"/messages", "")
	ev.QueryStringParameters = map[string]string{"after": "1000"}
	resp, _ = h.Handle(context.Background(), ev)
	var msgs struct {
		Messages []any
		Next     int64
	}
	_ = json.Unmarshal([]byte(resp.Body), &msgs)
	if resp.StatusCode != http.StatusOK || len(msgs.Messages) != 0 || msgs.Next != page.Sessions[0].MessageCount {
		t.Errorf("after=1000 → %d next %d, want next = messageCount %d", resp.StatusCode, msgs.Next, page.Sessions[0].MessageCount)
	}
	for _, method := range []string{"PUT", "PATCH", "POST"} { // DELETE deletes (delete_test.go)
		resp, _ = h.Handle(context.Background(), request("$default", method, "/v1/sessions/"+id, ""))
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s /v1/sessions/{id} = %d, want 405", method, resp.StatusCode)
		}
	}
}

// conflictLog loses its writer's lease at the second commit: the request's turn opened,
// then another writer took the session (409 SessionNotResumableError).
type conflictLog struct {
	*memory.Store
	commits *int
}

func (c conflictLog) Commit(ctx context.Context, id, owner string, cm *store.Commit) (*store.Head, error) {
	*c.commits++
	if *c.commits == 2 {
		return nil, store.ErrConflict
	}
	return c.Store.Commit(ctx, id, owner, cm)
}

type conflictEngines struct {
	*engines
	log conflictLog
}

func (c conflictEngines) Engine(ctx context.Context, workflow string) (*session.Engine, error) {
	return session.New(session.Config{Workflow: workflow, Authored: c.authored, Log: c.log,
		Files: memory.NewFiles(), Model: c.model, ModelID: "test-model"})
}

// A busy answer after the request's turn opened keeps its Idempotency-Key: the repeat does
// not run the request again (C6-18).
func TestIdempotencyKeyKeptWhenBusyAfterWriting(t *testing.T) {
	_, e := newFixture(t)
	n := 0
	ce := conflictEngines{engines: e, log: conflictLog{Store: e.log, commits: &n}}
	h := New(ce, nil, nil)
	req := start("greeter", `{"message":"hello"}`)
	req.Headers["idempotency-key"] = "k-busy"
	first, _ := h.Handle(context.Background(), req)
	var body ErrorBody
	_ = json.Unmarshal([]byte(first.Body), &body)
	if first.StatusCode != http.StatusConflict || body.Error.Code != "SessionNotResumableError" {
		t.Fatalf("first = %d %s", first.StatusCode, first.Body)
	}
	calls := e.model.calls.Load()
	again, _ := h.Handle(context.Background(), req)
	if again.Headers["Idempotent-Replayed"] != "true" || e.model.calls.Load() != calls {
		t.Fatalf("repeat = %d %s (replayed %q), model calls %d → %d: it ran again", again.StatusCode, again.Body,
			again.Headers["Idempotent-Replayed"], calls, e.model.calls.Load())
	}
	if heads, _, _ := e.log.List(context.Background(), store.ListOptions{}); len(heads) != 1 {
		t.Errorf("sessions = %d, want 1", len(heads))
	}
}
