package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/store"
	ddbstore "github.com/archmax-ai/archmax/core/store/dynamodb"
	"github.com/archmax-ai/archmax/core/store/memory"
	"github.com/archmax-ai/archmax/core/transcript"
	"github.com/archmax-ai/archmax/local/dynamotest"
)

// Issue 18: the Idempotency-Key gap. A request's records (the claim, the accepted record,
// the answer) are not written with the session, so a process that dies between the
// session's commit and a record, or a record write that fails, must not let a repeat of the
// request open a second turn: the request's turn — and a start's session — is named by the
// key, and the engine recognises it under the lease.

// logEngines serves workflows over a log the test chooses (one per process: a dying one,
// then the durable store itself).
type logEngines struct {
	authored *memory.Files
	log      store.Log
	model    model.Client
}

func (e *logEngines) Log() store.Log              { return e.log }
func (e *logEngines) Sessions() *session.Sessions { return session.NewSessions(e.log, nil, nil) }
func (e *logEngines) SessionWorkflow(ctx context.Context, id string) (string, error) {
	h, err := e.log.Get(ctx, id)
	if err != nil {
		return "", &session.SessionNotFoundError{SessionID: id}
	}
	return h.Workflow, nil
}
func (e *logEngines) Engine(ctx context.Context, workflow string) (*session.Engine, error) {
	if _, err := e.authored.Stat(ctx, "workflows/"+workflow+"/workflow.yaml"); err != nil {
		return nil, &session.UnknownWorkflowError{Workflow: workflow}
	}
	return session.New(session.Config{Workflow: workflow, Authored: e.authored, Log: e.log,
		Files: memory.NewFiles(), Model: e.model, ModelID: "test-model"})
}

var errDied = errors.New("the process died")

// diesAtAcceptance is the log of a process that dies as it records a request's acceptance
// (after the session's opening commit): that write and every later one fail.
type diesAtAcceptance struct {
	store.Log
	dead atomic.Bool
}

func (d *diesAtAcceptance) PutIdempotent(ctx context.Context, key string, v []byte, ttl time.Duration) error {
	if d.dead.Load() || bytes.Contains(v, []byte(`"state":"accepted"`)) {
		d.dead.Store(true)
		return errDied
	}
	return d.Log.PutIdempotent(ctx, key, v, ttl)
}

func (d *diesAtAcceptance) Commit(ctx context.Context, id, owner string, c *store.Commit) (*store.Head, error) {
	if d.dead.Load() {
		return nil, errDied
	}
	return d.Log.Commit(ctx, id, owner, c)
}

func (d *diesAtAcceptance) Release(ctx context.Context, id, owner string) error {
	if d.dead.Load() {
		return errDied
	}
	return d.Log.Release(ctx, id, owner)
}

// throttledRecords is a log whose Idempotency-Key records are never written (throttled):
// every PutIdempotent fails, the claim lands.
type throttledRecords struct{ store.Log }

func (throttledRecords) PutIdempotent(context.Context, string, []byte, time.Duration) error {
	return errors.New("ProvisionedThroughputExceededException: throttled")
}

// greeterWorld is the greeter workflow over one durable memory store whose clock the test
// moves (claims and leases lapse on it).
type greeterWorld struct {
	authored *memory.Files
	store    *memory.Store
	model    *fakeModel
	offset   time.Duration
}

func newGreeterWorld(t *testing.T) *greeterWorld {
	t.Helper()
	w := &greeterWorld{authored: memory.NewFiles(), store: memory.New(), model: &fakeModel{}}
	w.store.Clock = func() time.Time { return time.Now().Add(w.offset) }
	if err := w.authored.Write(context.Background(), "workflows/greeter/workflow.yaml", []byte(greeter)); err != nil {
		t.Fatal(err)
	}
	return w
}

// process is a handler over log (the store itself, or a wrapper of it).
func (w *greeterWorld) process(log store.Log) *Handler {
	return New(&logEngines{authored: w.authored, log: log, model: w.model}, nil, nil, WithPolicy(testPolicy))
}

// lapse moves the store's clock past the claim's and the dead writer's lease.
func (w *greeterWorld) lapse() { w.offset += ClaimTTL + session.DefaultLeaseTTL + time.Second }

// sessions returns the stored sessions and their person messages.
func (w *greeterWorld) sessions(t *testing.T) (n int, people int) {
	t.Helper()
	ctx := context.Background()
	heads, _, err := w.store.List(ctx, store.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range heads {
		msgs, _, err := session.NewSessions(w.store, nil, nil).Messages(ctx, h.SessionID, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			if m.Role == transcript.RoleUser {
				people++
			}
		}
	}
	return len(heads), people
}

// A process dies after the start's opening commit, before its accepted record: the repeat,
// once the claim has lapsed, finds the turn the first opened (the same session id and turn
// id, both named by the key) and carries it on — one session, one person message.
func TestARepeatAfterACrashBeforeTheAcceptedRecordOpensNoSecondTurn(t *testing.T) {
	w := newGreeterWorld(t)
	req := withKey(start("greeter", `{"message":"hi"}`), "k-died")
	if _, err := w.process(&diesAtAcceptance{Log: w.store}).Handle(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if n, people := w.sessions(t); n != 1 || people != 1 {
		t.Fatalf("after the crash: %d sessions, %d person messages", n, people)
	}
	w.lapse()
	again, _ := w.process(w.store).Handle(context.Background(), req)
	sum := decodeSummary(t, again.Body)
	if again.StatusCode != http.StatusOK || sum.Kind != session.KindCompleted || sum.Reply != "Hello." {
		t.Fatalf("the repeat = %d %s, want the turn carried on to its end", again.StatusCode, again.Body)
	}
	if n, people := w.sessions(t); n != 1 || people != 1 {
		t.Errorf("the repeat opened a second turn: %d sessions, %d person messages", n, people)
	}
	if replay, _ := w.process(w.store).Handle(context.Background(), req); replay.Body != again.Body || replay.Headers["Idempotent-Replayed"] != "true" {
		t.Errorf("the next repeat = %d %s, want the recorded answer", replay.StatusCode, replay.Body)
	}
}

// The records cannot be written (throttled): the first answer is 200, and a repeat after
// the claim lapsed gets that answer again from the session — nothing runs twice.
func TestThrottledRecordsDoNotLetARepeatRunAgain(t *testing.T) {
	w := newGreeterWorld(t)
	h := w.process(throttledRecords{w.store})
	req := withKey(start("greeter", `{"message":"hi"}`), "k-throttled")
	first, _ := h.Handle(context.Background(), req)
	if first.StatusCode != http.StatusOK {
		t.Fatalf("first = %d %s", first.StatusCode, first.Body)
	}
	w.lapse()
	again, _ := h.Handle(context.Background(), req)
	if again.StatusCode != http.StatusOK || again.Body != first.Body {
		t.Errorf("the repeat = %d %s, want the first answer %s", again.StatusCode, again.Body, first.Body)
	}
	if n, people := w.sessions(t); n != 1 || people != 1 || w.model.calls.Load() != 1 {
		t.Errorf("the repeat ran again: %d sessions, %d person messages, %d model calls", n, people, w.model.calls.Load())
	}
	// a turn, as a start: the same
	turnReq := withKey(turn("greeter", "s-named", `{"message":"hello"}`), "k-turn")
	first, _ = h.Handle(context.Background(), turnReq)
	w.lapse()
	if again, _ := h.Handle(context.Background(), turnReq); first.StatusCode != http.StatusOK || again.Body != first.Body || w.model.calls.Load() != 2 {
		t.Errorf("a turn's repeat = %d %s (first %s), %d model calls", again.StatusCode, again.Body, first.Body, w.model.calls.Load())
	}
}

// A decider's decision whose records were lost: the repeat is the decider's own request,
// recognised by its key although the session, decided, is no longer theirs to see — so it
// gets the decision's answer, not a 404, and nothing is applied again.
func TestADecidersRepeatIsAnsweredAfterTheSessionMovedOn(t *testing.T) {
	var offset time.Duration
	f := newAuthz(t, authzPolicy, func(l store.Log) store.Log {
		l.(*memory.Store).Clock = func() time.Time { return time.Now().Add(offset) }
		return throttledRecords{l}
	})
	f.parked("s-dana")
	f.e.qm.push(*text("Done."))
	req := withKey(decision("s-dana", `{"to":"done","comment":"approved"}`), "k-decide")
	status, first := f.as(approverARN, req)
	if status != http.StatusOK || first["kind"] != "completed" {
		t.Fatalf("the decision: %d %v", status, first)
	}
	v := f.version("s-dana")
	offset += ClaimTTL + time.Second
	status, again := f.as(approverARN, req)
	if status != http.StatusOK || again["turnId"] != first["turnId"] || again["kind"] != "completed" {
		t.Errorf("the decider's repeat: %d %v, want the decision's answer %v", status, again, first)
	}
	if f.version("s-dana") != v {
		t.Error("the repeat wrote to the session")
	}
	// another caller's request with the same key is another request: the session is not
	// theirs to see
	status, body := f.as(eveARN, req)
	if status != http.StatusNotFound || errCode(body) != "SessionNotFoundError" {
		t.Errorf("another caller with the same key: %d %v, want 404", status, body)
	}
}

// bigModel answers every call with a reply of n bytes.
type bigModel struct{ n int }

func (m bigModel) Converse(context.Context, *model.Request) (*model.Response, error) {
	return text(strings.Repeat("x", m.n)), nil
}

// refusesBigRecords refuses an Idempotency-Key record over DynamoDB's item limit.
type refusesBigRecords struct{ store.Log }

func (r refusesBigRecords) PutIdempotent(ctx context.Context, key string, v []byte, ttl time.Duration) error {
	if len(v) > 400<<10 {
		return errors.New("ValidationException: Item size has exceeded the maximum allowed size")
	}
	return r.Log.PutIdempotent(ctx, key, v, ttl)
}

// memBlobs is an in-memory store.Blobs.
type memBlobs struct {
	mu    sync.Mutex
	blobs map[string][]byte
}

func (b *memBlobs) Put(_ context.Context, sessionID string, data []byte) (string, error) {
	sum := sha256.Sum256(data)
	ref := hex.EncodeToString(sum[:])
	b.mu.Lock()
	defer b.mu.Unlock()
	b.blobs[sessionID+"/"+ref] = bytes.Clone(data)
	return ref, nil
}

func (b *memBlobs) Get(_ context.Context, sessionID, ref string) ([]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if v, ok := b.blobs[sessionID+"/"+ref]; ok {
		return v, nil
	}
	return nil, store.ErrNotFound
}

func (b *memBlobs) DeleteSession(context.Context, string) error { return nil }

// Issue 18: an answer over DynamoDB's 400 KB item limit is recorded (through the blob path)
// and replayed as it was — not answered 202 running for a session that completed. Its
// repeat whose record could not be written at all is answered from the session too.
func TestALargeAnswerIsReplayed(t *testing.T) {
	client, table := dynamotest.NewTable(t) // skips without DynamoDB Local
	authored := memory.NewFiles()
	if err := authored.Write(context.Background(), "workflows/greeter/workflow.yaml", []byte(greeter)); err != nil {
		t.Fatal(err)
	}
	log := ddbstore.New(client, table, &memBlobs{blobs: map[string][]byte{}})
	h := New(&logEngines{authored: authored, log: log, model: bigModel{n: 450 << 10}}, nil, nil, WithPolicy(testPolicy))
	req := withKey(start("greeter", `{"message":"write me a long answer"}`), "k-big")
	first, _ := h.Handle(context.Background(), req)
	if first.StatusCode != http.StatusOK || len(first.Body) < 450<<10 {
		t.Fatalf("first = %d, %d bytes", first.StatusCode, len(first.Body))
	}
	again, _ := h.Handle(context.Background(), req)
	if again.StatusCode != http.StatusOK || again.Body != first.Body || again.Headers["Idempotent-Replayed"] != "true" {
		t.Errorf("the repeat = %d %.200s, want the first answer replayed", again.StatusCode, again.Body)
	}
	// a record that cannot be written (here: refused for its size, as DynamoDB did before
	// the blob path): the repeat is answered from the session — the same outcome, nothing
	// run again
	h = New(&logEngines{authored: authored, log: refusesBigRecords{log}, model: bigModel{n: 450 << 10}}, nil, nil, WithPolicy(testPolicy))
	req = withKey(start("greeter", `{"message":"write me a long answer"}`), "k-big-refused")
	first, _ = h.Handle(context.Background(), req)
	again, _ = h.Handle(context.Background(), req)
	if first.StatusCode != http.StatusOK || again.StatusCode != http.StatusOK || again.Body != first.Body {
		t.Errorf("an unrecorded answer: first %d, repeat %d %.200s", first.StatusCode, again.StatusCode, again.Body)
	}
}
