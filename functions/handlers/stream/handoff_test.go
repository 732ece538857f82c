package stream_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/store/fs"
	"github.com/archmax-ai/archmax/functions/handlers/continuation"
	"github.com/archmax-ai/archmax/functions/handlers/httpapi"
	"github.com/archmax-ai/archmax/functions/handlers/stream"
)

// fsFixture is a fixture on a fresh file store; tight makes every invocation's budget
// already spent at its start (a model timeout longer than the invocation), so each runs
// one step and hands the turn on.
func fsFixture(t *testing.T, tight bool) *fixture {
	t.Helper()
	dir := t.TempDir()
	log, err := fs.Open(filepath.Join(dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := fs.OpenFiles(filepath.Join(dir, "files"))
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, log, files)
	if tight {
		run := continuation.NewRunner(f.engines, f.starter, continuation.Budget{ModelTimeout: time.Hour}, nil)
		f.api = httpapi.New(f.engines, run, nil)
		f.register(stream.Function(stream.New(f.api, nil, stream.WithPoll(5*time.Millisecond)), run, nil))
	}
	close(f.model.gate)
	go func() {
		for range f.model.entered {
		}
	}()
	return f
}

// A streamed start whose invocation runs out of budget is handed to a continuation, and the
// stream follows the stored log from its last live event — across every continuation — to
// that turn's outcome: no event twice, none missed.
func TestStreamedStartFollowsItsContinuations(t *testing.T) {
	f := fsFixture(t, true)
	s := f.invoke(urlRequest("POST", "/v1/workflows/desk/sessions", "", `{"message":"Where is my order?"}`, owner, nil))
	if s.status != http.StatusOK {
		t.Fatalf("status %d: %s", s.status, s.body)
	}
	done := make(chan []frame, 1)
	go func() { done <- s.rest() }()
	continued := 0
	var all []frame
	for all == nil {
		select {
		case ref := <-f.starter.refs: // the platform runs each continuation: a second (third…) invocation
			continued++
			payload, _ := json.Marshal(continuation.Event{Continue: &ref})
			inv := rt.Invoke(f.arn, payload, time.Now().Add(15*time.Minute))
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			_, body, err := inv.Response(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if res, _ := io.ReadAll(body); !strings.Contains(string(res), `"action":"continue"`) {
				t.Errorf("continuation answered %s", res)
			}
			cancel()
		case all = <-done:
		case <-time.After(time.Minute):
			t.Fatal("the stream did not end")
		}
	}
	if continued == 0 {
		t.Fatal("the turn was never handed to a continuation")
	}
	sum := outcomeOf(t, all[len(all)-1])
	if sum.Kind != session.KindCompleted || sum.Reply != "All done." {
		t.Fatalf("outcome %+v after %d continuations", sum, continued)
	}
	if got, want := ids(t, all), f.storedSeqs(sum.SessionID); len(got) == 0 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("streamed ids %v, stored %v", got, want)
	}
}

// The stream's own refusals, and an Idempotency-Key repeat: the recorded outcome again,
// marked replayed, without the events.
func TestRefusalsAndReplays(t *testing.T) {
	f := fsFixture(t, false)
	if s := f.invoke(urlRequest("GET", "/v1/sessions", "", "", owner, nil)); s.status != http.StatusNotFound || !strings.Contains(string(s.body), httpapi.CodeNotFound) {
		t.Errorf("a route not streamed: %d %s", s.status, s.body)
	}
	if s := f.invoke(urlRequest("POST", "/v1/workflows/desk/sessions", "", `{"message":"hi"}`, owner, map[string]string{"accept": "application/json"})); s.status != http.StatusNotAcceptable ||
		!strings.Contains(string(s.body), stream.CodeNotAcceptable) {
		t.Errorf("no Accept: %d %s", s.status, s.body)
	}
	if s := f.invoke(urlRequest("POST", "/v1/workflows/nope/sessions", "", `{"message":"hi"}`, owner, nil)); s.status != http.StatusNotFound || !strings.Contains(string(s.body), "UnknownWorkflowError") {
		t.Errorf("an unknown workflow: %d %s", s.status, s.body)
	}
	if s := f.invoke(urlRequest("POST", "/v1/workflows/desk/sessions", "", `{"mesage":"hi"}`, owner, nil)); s.status != http.StatusBadRequest {
		t.Errorf("a bad body: %d %s", s.status, s.body)
	}
	key := map[string]string{"idempotency-key": "k-1"}
	first := f.invoke(urlRequest("POST", "/v1/workflows/desk/sessions", "", `{"message":"hi"}`, owner, key)).rest()
	firstSum := outcomeOf(t, first[len(first)-1])
	again := f.invoke(urlRequest("POST", "/v1/workflows/desk/sessions", "", `{"message":"hi"}`, owner, key))
	frames := again.rest()
	if again.status != http.StatusOK || again.header["Idempotent-Replayed"] != "true" || len(frames) != 1 {
		t.Fatalf("the repeat: %d %v %v", again.status, again.header, types(frames))
	}
	if sum := outcomeOf(t, frames[0]); sum.TurnID != firstSum.TurnID || sum.SessionID != firstSum.SessionID {
		t.Errorf("the repeat's outcome %+v, the first's %+v", sum, firstSum)
	}
	if s := f.invoke(urlRequest("POST", "/v1/workflows/desk/sessions", "", `{"message":"other"}`, owner, key)); s.status != http.StatusUnprocessableEntity {
		t.Errorf("the key with another body: %d %s", s.status, s.body)
	}
	if s := f.invoke(urlRequest("GET", "/v1/sessions/"+firstSum.SessionID+"/events", "", "", owner, map[string]string{"last-event-id": "x"})); s.status != http.StatusBadRequest {
		t.Errorf("a bad Last-Event-ID: %d %s", s.status, s.body)
	}
}

// recSink records what a stream writes.
type recSink struct {
	mu     sync.Mutex
	status int
	buf    strings.Builder
	wrote  chan struct{}
}

func (s *recSink) Header(status int, _ map[string]string) error {
	s.mu.Lock()
	s.status = status
	s.mu.Unlock()
	return nil
}

func (s *recSink) Write(p []byte) error {
	s.mu.Lock()
	s.buf.Write(p)
	s.mu.Unlock()
	select {
	case s.wrote <- struct{}{}:
	default:
	}
	return nil
}

func (s *recSink) text() string { s.mu.Lock(); defer s.mu.Unlock(); return s.buf.String() }

// While the model is silent the stream sends keepalive comments, which an SSE client skips.
func TestKeepaliveWhileTheModelIsSilent(t *testing.T) {
	dir := t.TempDir()
	log, _ := fs.Open(filepath.Join(dir, "log"))
	files, _ := fs.OpenFiles(filepath.Join(dir, "files"))
	f := newFixture(t, log, files)
	go func() {
		for range f.model.entered {
		}
	}()
	h := stream.New(f.api, nil, stream.WithKeepalive(time.Millisecond))
	req := stream.FromFunctionURL(func() (u events.LambdaFunctionURLRequest) {
		_ = json.Unmarshal(urlRequest("POST", "/v1/workflows/desk/sessions", "", `{"message":"hi"}`, owner, nil), &u)
		return u
	}())
	sink := &recSink{wrote: make(chan struct{}, 1)}
	done := make(chan struct{})
	go func() { h.Serve(context.Background(), req, sink); close(done) }()
	for !strings.Contains(sink.text(), ": keepalive\n\n") {
		select {
		case <-sink.wrote:
		case <-time.After(time.Minute):
			t.Fatalf("no keepalive while the model waits: %s", sink.text())
		}
	}
	close(f.model.gate)
	<-done
	if out := sink.text(); sink.status != http.StatusOK || !strings.Contains(out, "event: outcome\n") {
		t.Errorf("%d %s", sink.status, out)
	}
}
