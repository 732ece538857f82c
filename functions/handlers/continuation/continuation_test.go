package continuation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/clock"
	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/store"
	"github.com/archmax-ai/archmax/core/store/memory"
	"github.com/archmax-ai/archmax/core/transcript"
)

// counter: one agent state that counts with set_variables until told to stop.
const counter = `
title: Counter
states:
  count:
    triggers:
      manual:
    instructions: Count, one step at a time.
`

// slowModel answers tool-calling steps (each sets n; tool-use ids tu_<answer number>) until
// the history holds steps tool results, then a closing text, each taking delay — on clock
// when it is set (the call advances it: virtual time), else real; a call cancelled while it
// waits fails with the context's error and is not counted as answered.
type slowModel struct {
	steps    int
	delay    time.Duration
	clock    *clock.Fake
	answered atomic.Int64
	block    chan struct{} // when set, every call waits for it (or the context)
	entered  chan struct{} // when set, every call sends on it as it starts (the test's signal)
}

func (m *slowModel) Converse(ctx context.Context, req *model.Request) (*model.Response, error) {
	if err := model.ValidateRequest(req); err != nil {
		return nil, err
	}
	if m.entered != nil {
		m.entered <- struct{}{}
	}
	switch {
	case m.block != nil:
		select {
		case <-m.block:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	case m.clock != nil:
		m.clock.Advance(m.delay)
	default:
		select {
		case <-time.After(m.delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	n := m.answered.Add(1)
	done := 0 // the steps the history shows answered
	for _, msg := range req.Messages {
		for _, b := range msg.Content {
			if b.Kind == model.BlockToolResult {
				done++
			}
		}
	}
	usage := &model.Usage{InputTokens: 10, OutputTokens: 2}
	if done >= m.steps {
		return &model.Response{StopReason: model.StopEndTurn, Usage: usage,
			Message: model.Message{Role: model.RoleAssistant, Content: []model.Block{{Kind: model.BlockText, Text: "Counted."}}}}, nil
	}
	input, _ := json.Marshal(map[string]any{"variables": map[string]any{"n": n}})
	return &model.Response{StopReason: model.StopToolUse, Usage: usage, Message: model.Message{Role: model.RoleAssistant,
		Content: []model.Block{{Kind: model.BlockToolUse, ToolUse: &model.ToolUse{ID: fmt.Sprintf("tu_%d", n), Name: "archmax_set_variables", Input: input}}}}}, nil
}

// crashLog is a process's view of the shared log: after `commits` more commits it dies —
// that commit and every later call fail, and its lease is never released (a crash).
type crashLog struct {
	store.Log
	left atomic.Int64
	dead atomic.Bool
}

var errCrashed = errors.New("process crashed")

func (c *crashLog) Commit(ctx context.Context, id, owner string, cm *store.Commit) (*store.Head, error) {
	if c.dead.Load() || c.left.Add(-1) < 0 {
		c.dead.Store(true)
		return nil, errCrashed
	}
	return c.Log.Commit(ctx, id, owner, cm)
}

func (c *crashLog) Acquire(ctx context.Context, id, owner string, ttl time.Duration) (*store.Head, error) {
	if c.dead.Load() {
		return nil, errCrashed
	}
	return c.Log.Acquire(ctx, id, owner, ttl)
}

func (c *crashLog) Release(ctx context.Context, id, owner string) error {
	if c.dead.Load() {
		return errCrashed
	}
	return c.Log.Release(ctx, id, owner)
}

// world is one authored tree and session store shared by any number of "processes".
type world struct {
	t        *testing.T
	authored *memory.Files
	log      *memory.Store
	files    *memory.Files
	model    *slowModel
	leaseTTL time.Duration
	clock    *clock.Fake // the engines' and the store's clock (nil: real time); see onClock
}

// onClock puts the world on a fake clock, the model's included: time passes only as the
// model calls take it.
func (w *world) onClock() *clock.Fake {
	w.clock = clock.NewFake(time.Now())
	w.log.Clock = w.clock.Now
	w.model.clock = w.clock
	return w.clock
}

func newWorld(t *testing.T, m *slowModel) *world {
	t.Helper()
	w := &world{t: t, authored: memory.NewFiles(), log: memory.New(), files: memory.NewFiles(), model: m}
	if err := w.authored.Write(context.Background(), "workflows/counter/workflow.yaml", []byte(counter)); err != nil {
		t.Fatal(err)
	}
	return w
}

// engines is a fresh process's engine cache over log (the shared log when nil).
func (w *world) engines(log store.Log) *session.Engines {
	if log == nil {
		log = w.log
	}
	cfg := session.Config{Authored: w.authored, Log: log, Files: w.files, Model: w.model, ModelID: "test-model", LeaseTTL: w.leaseTTL}
	if w.clock != nil {
		cfg.Clock = w.clock.Now
	}
	return session.NewEngines(cfg)
}

// stored is the committed transcript.
func (w *world) stored(id string) []transcript.Message {
	w.t.Helper()
	head, err := w.log.Get(context.Background(), id)
	if err != nil {
		w.t.Fatal(err)
	}
	raws, err := w.log.Messages(context.Background(), id, 0, head.Messages)
	if err != nil {
		w.t.Fatal(err)
	}
	out := make([]transcript.Message, len(raws))
	for i, raw := range raws {
		if err := json.Unmarshal(raw, &out[i]); err != nil {
			w.t.Fatal(err)
		}
	}
	return out
}

// checkTranscript asserts the stored transcript is the person's message, steps × (assistant,
// tool), the closing text — every step exactly once, in order.
func (w *world) checkTranscript(id string, steps int) {
	w.t.Helper()
	msgs := w.stored(id)
	if len(msgs) != 2+2*steps {
		w.t.Fatalf("stored %d messages, want %d (every step once)", len(msgs), 2+2*steps)
	}
	for i := 0; i < steps; i++ {
		a, tool := msgs[1+2*i], msgs[2+2*i]
		if a.Role != transcript.RoleAssistant || len(a.ToolCalls) != 1 || a.ToolCalls[0].ID != fmt.Sprintf("tu_%d", i+1) || tool.Role != transcript.RoleTool {
			w.t.Fatalf("step %d stored as %s %+v / %s, want assistant tu_%d then its tool result", i+1, a.Role, a.ToolCalls, tool.Role, i+1)
		}
	}
	if last := msgs[len(msgs)-1]; last.Text != "Counted." {
		w.t.Fatalf("last message = %q", last.Text)
	}
}

func (w *world) summary(id string) *session.SessionSummary {
	w.t.Helper()
	sum, err := session.NewSessions(w.log, w.files, nil).Get(context.Background(), id)
	if err != nil {
		w.t.Fatal(err)
	}
	return sum
}

// invocation is a virtual invocation of d on clk: the Runner budgets for its deadline,
// which only clk's advance brings nearer.
func invocation(clk *clock.Fake, d time.Duration) context.Context {
	return WithInvocationDeadline(context.Background(), clk.Now().Add(d))
}

// await waits for the model call the test is about to cut (a hang guard, not a timing).
func await(t *testing.T, entered chan struct{}) {
	t.Helper()
	select {
	case <-entered:
	case <-time.After(time.Minute):
		t.Fatal("the model was never called")
	}
}

// DESIGN.md §4: a turn slowed past a short invocation deadline completes across several
// invocations, each stopping between committed steps and starting the next; every step is
// committed once and the model is never asked twice for a committed step.
func TestTurnCompletesAcrossInvocations(t *testing.T) {
	// In virtual time: each model call takes 20 ms and no step starts in the last 80 ms
	// (model timeout 60 + margin 20) of a 200 ms invocation, so an invocation runs the steps
	// starting at 0, 20, …, 100 ms — six of the 17 model calls: 6 + 6 + 5, three invocations.
	const steps = 16
	w := newWorld(t, &slowModel{steps: steps, delay: 20 * time.Millisecond})
	clk := w.onClock()
	engines := w.engines(nil)
	async := &InProcess{Timeout: 200 * time.Millisecond, RetryDelays: []time.Duration{}, Clock: clk}
	run := NewRunner(engines, async, Budget{ModelTimeout: 60 * time.Millisecond, Margin: 20 * time.Millisecond, Commit: 10 * time.Millisecond}, nil, WithClock(clk))
	async.Bind(run)

	eng, err := engines.Engine(context.Background(), "counter")
	if err != nil {
		t.Fatal(err)
	}
	out, err := run.Run(invocation(clk, 200*time.Millisecond), Options{}, func(ctx context.Context) (*session.Outcome, error) {
		return eng.Send(ctx, "c1", session.SendInput{Message: "count to twelve"})
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.Kind != session.KindRunning || out.TurnID == "" {
		t.Fatalf("first invocation = %s (turn %q), want running", out.Kind, out.TurnID)
	}
	async.Wait()
	sum := w.summary("c1")
	if sum.Status != session.StatusCompleted || sum.TurnID != out.TurnID || sum.Interrupted {
		t.Fatalf("after the continuations: %s in turn %q (want completed in %q)", sum.Status, sum.TurnID, out.TurnID)
	}
	if invocations := 1 + async.Started(); invocations != 3 {
		t.Errorf("the turn took %d invocations, want 3 (six model calls fit one)", invocations)
	}
	if got := w.model.answered.Load(); got != steps+1 {
		t.Errorf("model answered %d calls, want %d (no step redone)", got, steps+1)
	}
	w.checkTranscript("c1", steps)
	if sum.Turn != 1 {
		t.Errorf("turn counter = %d, want 1: continuations are not new calls", sum.Turn)
	}
}

// A continuation delivered twice at once, and once more after the turn settled, has no
// second effect: one runs, the other finds the session held (an error, for the platform's
// retry) or the turn settled (a skip).
func TestDuplicateContinuationIsNoOp(t *testing.T) {
	const steps = 3
	w := newWorld(t, &slowModel{steps: steps, delay: 5 * time.Millisecond})
	engines := w.engines(nil)
	starter := &recordingStarter{}
	run := NewRunner(engines, starter, Budget{}, nil)
	eng, _ := engines.Engine(context.Background(), "counter")
	out, err := run.Run(context.Background(), Options{YieldBy: time.Now()}, func(ctx context.Context) (*session.Outcome, error) {
		return eng.Send(ctx, "d1", session.SendInput{Message: "count"})
	})
	if err != nil || out.Kind != session.KindRunning || len(starter.refs) != 1 {
		t.Fatalf("opening: %v %+v, starts %v", err, out, starter.refs)
	}
	ref := starter.refs[0]
	if ref != (Ref{SessionID: "d1", TurnID: out.TurnID}) {
		t.Fatalf("continuation ref = %+v", ref)
	}
	var wg sync.WaitGroup
	results := make([]Result, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = run.Handle(context.Background(), ref)
		}()
	}
	wg.Wait()
	ran := 0
	for i := range 2 {
		var busy *session.SessionNotResumableError
		switch {
		case errs[i] == nil && results[i].Outcome == session.KindCompleted:
			ran++
		case errors.As(errs[i], &busy), errs[i] == nil && results[i].Skipped != "":
		default:
			t.Errorf("duplicate %d: %+v, %v", i, results[i], errs[i])
		}
	}
	if ran != 1 {
		t.Fatalf("%d of two simultaneous duplicates ran the turn, want exactly 1", ran)
	}
	late, err := run.Handle(context.Background(), ref)
	if err != nil || late.Skipped == "" || !strings.Contains(late.Skipped, "settled") {
		t.Fatalf("late duplicate = %+v, %v; want a skip", late, err)
	}
	if got := w.model.answered.Load(); got != steps+1 {
		t.Errorf("model answered %d calls, want %d", got, steps+1)
	}
	w.checkTranscript("d1", steps)
}

// DESIGN.md §4: a process that dies between two commits (no clean stop: its lease is left to
// expire) is resumed by the next invocation from the last commit; only the step whose
// commit was lost runs again.
func TestCrashBetweenCommitsResumes(t *testing.T) {
	const steps = 6
	w := newWorld(t, &slowModel{steps: steps, delay: time.Millisecond})
	clk := w.onClock() // the dead process's lease lapses when the test says, not when the machine gets to it
	// the opening commit and two steps land; the third step's commit dies with the process
	crashing := &crashLog{Log: w.log}
	crashing.left.Store(3)
	dying := w.engines(crashing)
	eng, _ := dying.Engine(context.Background(), "counter")
	_, err := eng.Send(context.Background(), "k1", session.SendInput{Message: "count"})
	if !errors.Is(err, errCrashed) {
		t.Fatalf("crashed call: %v", err)
	}
	sum := w.summary("k1")
	if sum.Status != session.StatusRunning || sum.TurnID == "" {
		t.Fatalf("after the crash: %s turn %q", sum.Status, sum.TurnID)
	}
	if got := len(w.stored("k1")); got != 5 {
		t.Fatalf("after the crash %d messages are committed, want 5 (the message and two steps)", got)
	}

	// a fresh process: the lease is still live, so the retry fails and is retried later
	starter := &recordingStarter{}
	fresh := w.engines(nil)
	run := NewRunner(fresh, starter, Budget{}, nil)
	ref := Ref{SessionID: "k1", TurnID: sum.TurnID}
	var busy *session.SessionNotResumableError
	if _, err := run.Handle(context.Background(), ref); !errors.As(err, &busy) {
		t.Fatalf("continuation under the dead process's live lease: %v, want SessionNotResumableError", err)
	}
	clk.Advance(session.DefaultLeaseTTL + time.Millisecond)
	res, err := run.Handle(context.Background(), ref)
	if err != nil || res.Outcome != session.KindCompleted {
		t.Fatalf("retry after the lease expired: %+v, %v", res, err)
	}
	// the lost step (the third) ran twice; every committed one once
	if got := w.model.answered.Load(); got != steps+2 {
		t.Errorf("model answered %d calls, want %d (the uncommitted step again, nothing else)", got, steps+2)
	}
	w.checkTranscriptRenumbered("k1", steps)
}

// checkTranscriptRenumbered is checkTranscript for a run whose lost step was answered again
// under a new tool-use id: the shape is the same, every stored id unique.
func (w *world) checkTranscriptRenumbered(id string, steps int) {
	w.t.Helper()
	msgs := w.stored(id)
	if len(msgs) != 2+2*steps {
		w.t.Fatalf("stored %d messages, want %d", len(msgs), 2+2*steps)
	}
	seen := map[string]bool{}
	for i, m := range msgs {
		if seen[m.ID] {
			w.t.Fatalf("message %d (%s) stored twice", i, m.ID)
		}
		seen[m.ID] = true
	}
	var ns []string
	for _, m := range msgs {
		for _, tc := range m.ToolCalls {
			ns = append(ns, tc.ID)
		}
	}
	if got, want := strings.Join(ns, " "), "tu_1 tu_2 tu_4 tu_5 tu_6 tu_7"; got != want {
		w.t.Errorf("stored tool calls = %s, want %s (tu_3's commit was lost)", got, want)
	}
}

// recordingStarter records the continuations it is asked to start; err fails them.
type recordingStarter struct {
	mu   sync.Mutex
	refs []Ref
	err  error
}

func (s *recordingStarter) Start(_ context.Context, ref Ref) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	s.refs = append(s.refs, ref)
	return nil
}

// A step still running at the hard cut is cancelled; the turn, committed up to the step
// before, is handed to a continuation and answered as running.
func TestHardCutHandsOn(t *testing.T) {
	m := &slowModel{steps: 1, block: make(chan struct{}), entered: make(chan struct{}, 8)}
	w := newWorld(t, m)
	clk := w.onClock()
	engines := w.engines(nil)
	starter := &recordingStarter{}
	run := NewRunner(engines, starter, Budget{}, nil, WithClock(clk))
	eng, _ := engines.Engine(context.Background(), "counter")
	type result struct {
		out *session.Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := run.Run(context.Background(), Options{YieldBy: clk.Now().Add(time.Hour), CutBy: clk.Now().Add(DefaultCommit + 100*time.Millisecond)},
			func(ctx context.Context) (*session.Outcome, error) {
				return eng.Send(ctx, "h1", session.SendInput{Message: "count"})
			})
		done <- result{out, err}
	}()
	await(t, m.entered) // the first step is in its model call
	clk.Advance(100 * time.Millisecond)
	var res result
	select {
	case res = <-done:
	case <-time.After(time.Minute):
		t.Fatal("the hard cut did not end the call")
	}
	out, err := res.out, res.err
	if err != nil || out.Kind != session.KindRunning || len(starter.refs) != 1 || starter.refs[0].TurnID != out.TurnID || out.Disposition != session.DispositionTurn || out.Turn != 1 {
		t.Fatalf("cut: %v %+v starts %v", err, out, starter.refs)
	}
	if sum := w.summary("h1"); !sum.Interrupted {
		t.Errorf("the session is not interrupted after the cut: %+v", sum)
	}
	close(m.block)
	cont, err := run.Handle(context.Background(), starter.refs[0])
	if err != nil || cont.Outcome != session.KindCompleted {
		t.Fatalf("continuation: %+v %v", cont, err)
	}
}

// A continuation that cannot be started is a ContinuationStartError naming the turn; the
// session stays interrupted, and its next message continues it.
func TestStartFailure(t *testing.T) {
	w := newWorld(t, &slowModel{steps: 0, delay: time.Millisecond})
	engines := w.engines(nil)
	run := NewRunner(engines, &recordingStarter{err: errors.New("throttled")}, Budget{}, nil)
	eng, _ := engines.Engine(context.Background(), "counter")
	_, err := run.Run(context.Background(), Options{YieldBy: time.Now()}, func(ctx context.Context) (*session.Outcome, error) {
		return eng.Send(ctx, "f1", session.SendInput{Message: "count"})
	})
	var se *ContinuationStartError
	if !errors.As(err, &se) || se.SessionID != "f1" || se.TurnID == "" || se.State != "count" || !strings.Contains(se.Error(), "throttled") {
		t.Fatalf("err = %v, want ContinuationStartError", err)
	}
	if sum := w.summary("f1"); !sum.Interrupted || sum.TurnID != se.TurnID {
		t.Errorf("summary = %+v, want interrupted in %s", sum, se.TurnID)
	}
	// handed on at once for the request (no Prefer: wait): the message says so, not a deadline
	if !se.ByRequest || !strings.Contains(se.Error(), "when the request's wait or time ran out") || strings.Contains(se.Error(), "deadline") {
		t.Errorf("a turn the request handed on: ByRequest %v, %q", se.ByRequest, se.Error())
	}
}

// A turn stopped at the invocation's deadline (no request instant: an event's invocation)
// whose continuation cannot be started says it was the deadline.
func TestStartFailureAtTheDeadline(t *testing.T) {
	w := newWorld(t, &slowModel{steps: 3, delay: 20 * time.Millisecond})
	clk := w.onClock()
	engines := w.engines(nil)
	run := NewRunner(engines, &recordingStarter{err: errors.New("throttled")}, Budget{ModelTimeout: 60 * time.Millisecond, Margin: 20 * time.Millisecond}, nil, WithClock(clk))
	eng, _ := engines.Engine(context.Background(), "counter")
	_, err := run.Run(invocation(clk, 120*time.Millisecond), Options{}, func(ctx context.Context) (*session.Outcome, error) {
		return eng.Send(ctx, "f2", session.SendInput{Message: "count"})
	})
	var se *ContinuationStartError
	if !errors.As(err, &se) || se.ByRequest || !strings.Contains(se.Error(), "at the invocation's deadline") || strings.Contains(se.Error(), "request") {
		t.Fatalf("err = %v (ByRequest %v), want a ContinuationStartError at the invocation's deadline", err, se != nil && se.ByRequest)
	}
}

// Without a Starter the Runner is synchronous: no step deadline, the call settles.
func TestRunnerWithoutStarterRunsToTheEnd(t *testing.T) {
	w := newWorld(t, &slowModel{steps: 2, delay: time.Millisecond})
	engines := w.engines(nil)
	run := NewRunner(engines, nil, Budget{}, nil)
	eng, _ := engines.Engine(context.Background(), "counter")
	out, err := run.Run(context.Background(), Options{YieldBy: time.Now()}, func(ctx context.Context) (*session.Outcome, error) {
		if _, ok := session.StepDeadline(ctx); ok {
			t.Error("a synchronous Runner set a step deadline")
		}
		return eng.Send(ctx, "s1", session.SendInput{Message: "count"})
	})
	if err != nil || out.Kind != session.KindCompleted || run.Async() {
		t.Fatalf("%v %+v async=%v", err, out, run.Async())
	}
}

func TestParse(t *testing.T) {
	for _, tt := range []struct {
		raw     string
		ok, bad bool
	}{
		{`{"archmaxContinue":{"sessionId":"s1","turnId":"t1"}}`, true, false},
		{`{"archmaxContinue":{"sessionId":"s1"}}`, true, true},
		{`{"sessionId":"s1","parkId":"p1"}`, false, false},
		{`[1,2]`, false, false},
		{`not json`, false, false},
	} {
		ref, ok, err := Parse(json.RawMessage(tt.raw))
		if ok != tt.ok || (err != nil) != tt.bad {
			t.Errorf("Parse(%s) = %+v, %v, %v", tt.raw, ref, ok, err)
		}
		if tt.ok && !tt.bad && ref != (Ref{SessionID: "s1", TurnID: "t1"}) {
			t.Errorf("Parse(%s) ref = %+v", tt.raw, ref)
		}
	}
	var ee *EventError
	if _, err := NewRunner(nil, nil, Budget{}, nil).Handle(context.Background(), Ref{SessionID: "a/b", TurnID: "t"}); !errors.As(err, &ee) {
		t.Errorf("a session id with a slash: %v, want EventError", err)
	}
}

// A continuation whose first step is cut by the invocation's end made no progress: it is not
// handed on again (that would repeat the same cut step forever) but fails, for the
// platform's retry; the session stays interrupted.
func TestContinuationCutInItsFirstStepIsRetriedNotHandedOn(t *testing.T) {
	m := &slowModel{steps: 1, block: make(chan struct{}), entered: make(chan struct{}, 8)}
	w := newWorld(t, m)
	clk := w.onClock()
	engines := w.engines(nil)
	starter := &recordingStarter{}
	run := NewRunner(engines, starter, Budget{ModelTimeout: time.Millisecond, Margin: 10 * time.Millisecond}, nil, WithClock(clk))
	eng, _ := engines.Engine(context.Background(), "counter")
	out, err := run.Run(context.Background(), Options{YieldBy: clk.Now()}, func(ctx context.Context) (*session.Outcome, error) {
		return eng.Send(ctx, "x1", session.SendInput{Message: "count"})
	})
	if err != nil || out.Kind != session.KindRunning || len(starter.refs) != 1 {
		t.Fatalf("opening: %v %+v", err, out)
	}
	handled := make(chan error, 1)
	go func() {
		_, err := run.Handle(invocation(clk, 150*time.Millisecond), starter.refs[0])
		handled <- err
	}()
	await(t, m.entered)                 // the continuation's first step is in its model call
	clk.Advance(150 * time.Millisecond) // past the cut, 10 ms before the invocation's end
	select {
	case err = <-handled:
	case <-time.After(time.Minute):
		t.Fatal("the hard cut did not end the continuation")
	}
	var ta *session.TurnAbortedError
	if !errors.As(err, &ta) || ta.Interrupted {
		t.Fatalf("cut continuation: %v, want a TurnAbortedError that is not handed on", err)
	}
	if len(starter.refs) != 1 {
		t.Errorf("the cut continuation started %d more", len(starter.refs)-1)
	}
	if sum := w.summary("x1"); !sum.Interrupted {
		t.Errorf("summary = %+v, want interrupted", sum)
	}
	close(m.block)
	if res, err := run.Handle(context.Background(), starter.refs[0]); err != nil || res.Outcome != session.KindCompleted {
		t.Fatalf("the retry: %+v %v", res, err)
	}
}

// The sample continuation event of fixtures/events (for `sam local invoke` of any writing
// function) is a continuation this package serves; its session never ran, so it is a skip.
func TestFixtureEvent(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("../../../fixtures/events", "continuation.json"))
	if err != nil {
		t.Fatal(err)
	}
	ref, ok, err := Parse(data)
	if !ok || err != nil || ref.SessionID != "demo-1" || ref.TurnID == "" {
		t.Fatalf("Parse(fixture) = %+v %v %v", ref, ok, err)
	}
	w := newWorld(t, &slowModel{})
	res, err := NewRunner(w.engines(nil), nil, Budget{}, nil).Handle(context.Background(), ref)
	if err != nil || res.Skipped != "the session does not exist (deleted, or never ran)" {
		t.Errorf("Handle(fixture) = %+v, %v", res, err)
	}
}

// Stop cancels running in-process continuations: each commits what ran and releases its
// lease (the turn interrupted, for the next process), and nothing starts afterwards.
func TestInProcessStop(t *testing.T) {
	m := &slowModel{steps: 1, block: make(chan struct{}), entered: make(chan struct{}, 8)}
	w := newWorld(t, m)
	engines := w.engines(nil)
	async := &InProcess{RetryDelays: []time.Duration{time.Hour}}
	run := NewRunner(engines, async, Budget{}, nil)
	async.Bind(run)
	eng, _ := engines.Engine(context.Background(), "counter")
	out, err := run.Run(context.Background(), Options{YieldBy: time.Now()}, func(ctx context.Context) (*session.Outcome, error) {
		return eng.Send(ctx, "p1", session.SendInput{Message: "count"})
	})
	if err != nil || out.Kind != session.KindRunning || async.Started() != 1 {
		t.Fatalf("opening: %v %+v started %d", err, out, async.Started())
	}
	await(t, m.entered) // the continuation is now blocked in its model call
	async.Stop()
	if sum := w.summary("p1"); !sum.Interrupted || sum.Status != session.StatusRunning {
		t.Errorf("after Stop: %+v, want an interrupted running turn (lease released)", sum)
	}
	if err := async.Start(context.Background(), Ref{SessionID: "p1", TurnID: out.TurnID}); !errors.Is(err, ErrStopped) {
		t.Errorf("Start after Stop = %v, want ErrStopped", err)
	}
}
