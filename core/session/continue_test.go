package session

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/store"
	"github.com/archmax-ai/archmax/core/transcript"
)

// setVar is a model reply that sets variable n and keeps working (one agent step).
func setVar(n int) reply {
	return calls("", call{"archmax_set_variables", map[string]any{"variables": map[string]any{"topic": strings.Repeat("x", n)}}})
}

// past is a step deadline that has already passed: every call yields as early as it may.
func past() context.Context {
	return WithStepDeadline(context.Background(), time.Now().Add(-time.Second))
}

// storedMessages reads the session's committed transcript from the log.
func storedMessages(t *testing.T, h *harness, id string) []transcript.Message {
	t.Helper()
	head, err := h.log.Get(context.Background(), id)
	must(t, err)
	raws, err := h.log.Messages(context.Background(), id, 0, head.Messages)
	must(t, err)
	out := make([]transcript.Message, len(raws))
	for i, raw := range raws {
		must(t, json.Unmarshal(raw, &out[i]))
	}
	return out
}

// DESIGN.md §4, 02 §13: a call past its step deadline stops between steps with the session
// interrupted; Continue carries the same turn on, one step per invocation at least, and
// nothing committed is written twice.
func TestYieldAndContinueAcrossInvocations(t *testing.T) {
	h := newHarness(t, twoAgents, nil)
	h.script(setVar(1), setVar(2), setVar(3), says("Done."))
	eng := h.engine()

	out, err := eng.Send(past(), "s1", SendInput{Message: "go"})
	must(t, err)
	if out.Kind != KindRunning || out.Status != StatusRunning || out.TurnID == "" || out.State != "intake" {
		t.Fatalf("first call = %s/%s turn %q in %s, want running with a turn id", out.Kind, out.Status, out.TurnID, out.State)
	}
	if len(h.model.requests) != 0 {
		t.Fatalf("a fresh turn past its deadline made %d model calls before yielding, want 0", len(h.model.requests))
	}
	sum, err := NewSessions(h.log, h.files, nil).Get(context.Background(), "s1")
	must(t, err)
	if !sum.Interrupted || sum.TurnID != out.TurnID {
		t.Errorf("summary after the yield: interrupted=%v turnId=%q, want interrupted in %q", sum.Interrupted, sum.TurnID, out.TurnID)
	}

	turn := out.TurnID
	invocations := 0
	for out.Kind == KindRunning {
		invocations++
		if invocations > 10 {
			t.Fatal("the turn never settled")
		}
		var skipped *ContinueSkipped
		out, skipped, err = eng.Continue(past(), "s1", turn)
		must(t, err)
		if skipped != nil {
			t.Fatalf("continuation %d skipped: %s", invocations, skipped.Reason)
		}
		if out.TurnID != turn {
			t.Fatalf("continuation changed the turn id: %q → %q", turn, out.TurnID)
		}
		if got := len(h.model.requests); got != invocations {
			t.Fatalf("after continuation %d the model ran %d times, want exactly one step per invocation", invocations, got)
		}
	}
	if invocations != 4 || out.Kind != KindCompleted || out.Reply != "Done." || out.Turn != 1 {
		t.Fatalf("settled after %d continuations as %s (turn %d) reply %q", invocations, out.Kind, out.Turn, out.Reply)
	}
	if v := out.Variables["topic"].Value; v != "xxx" {
		t.Errorf("topic = %v, want the third step's value", v)
	}
	// every step is in the stored transcript exactly once: user, 3×(assistant, tool), final
	msgs := storedMessages(t, h, "s1")
	var roles []string
	for _, m := range msgs {
		roles = append(roles, string(m.Role))
	}
	if got, want := strings.Join(roles, " "), "user assistant tool assistant tool assistant tool assistant"; got != want {
		t.Errorf("stored transcript = %s, want %s", got, want)
	}
	seen := map[string]bool{}
	for _, m := range msgs {
		if seen[m.ID] {
			t.Errorf("message %s stored twice", m.ID)
		}
		seen[m.ID] = true
	}

	// a duplicate or late continuation of the settled turn has no effect
	again, skipped, err := eng.Continue(context.Background(), "s1", turn)
	must(t, err)
	if again != nil || skipped == nil || !strings.Contains(skipped.Reason, "has settled") {
		t.Fatalf("duplicate continuation = %v, skipped %+v", again, skipped)
	}
	if n := len(storedMessages(t, h, "s1")); n != len(msgs) {
		t.Errorf("the duplicate continuation wrote %d messages", n-len(msgs))
	}
}

// A continuation of a turn that a newer call replaced, or of a session that never ran, is skipped.
func TestContinueSkipsOtherTurns(t *testing.T) {
	h := newHarness(t, twoAgents, nil)
	eng := h.engine()
	_, skipped, err := eng.Continue(context.Background(), "never", "tabc")
	must(t, err)
	if skipped == nil || skipped.Reason != "the session has not run" {
		t.Fatalf("never-run session: skipped = %+v", skipped)
	}
	first, err := eng.Send(past(), "s1", SendInput{Message: "go"})
	must(t, err)
	// the interrupted session's next call runs as a new turn from the last commit (02 §13)
	h.script(says("Hello."))
	second := h.send("s1", "are you there?", nil)
	if second.TurnID == first.TurnID || second.Kind != KindCompleted {
		t.Fatalf("second call: turn %q (first %q) kind %s", second.TurnID, first.TurnID, second.Kind)
	}
	_, skipped, err = eng.Continue(context.Background(), "s1", first.TurnID)
	must(t, err)
	if skipped == nil || !strings.Contains(skipped.Reason, "no longer the session's current turn") {
		t.Fatalf("stale continuation: skipped = %+v", skipped)
	}
}

// 02 §1.5: the step limit counts per turn, across the invocations that carry it.
func TestStepLimitSpansContinuations(t *testing.T) {
	h := newHarness(t, twoAgents, nil)
	h.cfg.StepLimit = 2
	h.script(setVar(1), setVar(2))
	eng := h.engine()
	out, err := eng.Send(past(), "s1", SendInput{Message: "go"})
	must(t, err)
	for i := 0; out.Kind == KindRunning && i < 5; i++ {
		out, _, err = eng.Continue(past(), "s1", out.TurnID)
		must(t, err)
	}
	if out.Kind != KindRejected || out.Rejected != stepLimitExceeded {
		t.Fatalf("outcome %s (%q), want rejected by the step limit", out.Kind, out.Rejected)
	}
	if len(h.model.requests) != 2 {
		t.Errorf("model calls = %d, want the limit's 2", len(h.model.requests))
	}
}

// K5-11 with DESIGN.md §4: under a step deadline (a host that continues turns) a resume is
// committed before its first step, so the decision can be answered before any model call;
// the continuation runs the turn.
func TestResumeIsCommittedBeforeYielding(t *testing.T) {
	h := newHarness(t, reviewFlow, nil)
	h.script(calls("", advance("review", "ready")), says("Handed over."))
	parked := h.send("s1", "write it", nil)
	if parked.Kind != KindParked {
		t.Fatalf("setup: %s", parked.Kind)
	}
	eng := h.engine()
	out, err := eng.Decide(past(), "s1", Decision{To: "publish"})
	must(t, err)
	if out.Kind != KindRunning || out.Disposition != DispositionDecide || out.State != "publish" {
		t.Fatalf("decision past the deadline = %s/%s in %s, want running in publish", out.Kind, out.Disposition, out.State)
	}
	if len(h.model.requests) != 2 {
		t.Fatalf("model calls = %d, want none for the decision yet", len(h.model.requests))
	}
	h.script(setVar(1), says("Published."))
	done, skipped, err := eng.Continue(context.Background(), "s1", out.TurnID)
	must(t, err)
	if skipped != nil || done.Kind != KindCompleted || done.Disposition != DispositionDecide || done.Reply != "Published." {
		t.Fatalf("continuation = %+v skipped %+v", done, skipped)
	}
}

// Without a step deadline (no host to continue it) a resume still commits with its first
// step (K5-11): a failing first step leaves the park live for the caller's retry.
func TestResumeWithoutContinuationKeepsTheParkOnFailure(t *testing.T) {
	h := newHarness(t, reviewFlow, nil)
	h.script(calls("", advance("review", "ready")), says("Handed over."))
	h.send("s1", "write it", nil)
	h.script(func(*model.Request) (*model.Response, error) {
		return nil, &model.CallError{Code: "ThrottlingException", Status: 429, Retryable: true}
	})
	if _, err := h.engine().Decide(context.Background(), "s1", Decision{To: "publish"}); err == nil {
		t.Fatal("the throttled decision succeeded")
	}
	sum, err := NewSessions(h.log, h.files, nil).Get(context.Background(), "s1")
	must(t, err)
	if sum.Status != StatusAwaitingDecision || sum.Pending == nil {
		t.Errorf("after the failed resume: %s, want still parked", sum.Status)
	}
}

// 02 §13: a cancellation after the turn committed leaves it interrupted and says so, with the
// turn to continue; a cancelled resume before its first commit leaves the park and says not.
func TestTurnAbortedSaysWhetherInterrupted(t *testing.T) {
	h := newHarness(t, twoAgents, nil)
	ctx, cancel := context.WithCancel(context.Background())
	h.script(func(*model.Request) (*model.Response, error) { cancel(); return nil, ctx.Err() })
	_, err := h.engine().Send(ctx, "s1", SendInput{Message: "go"})
	var ta *TurnAbortedError
	if !errors.As(err, &ta) || !ta.Interrupted || ta.TurnID == "" || ta.State != "intake" {
		t.Fatalf("err = %v (%+v), want an interrupted TurnAbortedError", err, ta)
	}
	h.script(says("Done."))
	out, skipped, err := h.engine().Continue(context.Background(), "s1", ta.TurnID)
	must(t, err)
	if skipped != nil || out.Kind != KindCompleted {
		t.Fatalf("continue after abort: %+v %+v", out, skipped)
	}

	p := newHarness(t, reviewFlow, nil)
	p.script(calls("", advance("review", "ready")), says("Handed over."))
	p.send("s2", "write it", nil)
	ctx2, cancel2 := context.WithCancel(context.Background())
	p.script(func(*model.Request) (*model.Response, error) { cancel2(); return nil, ctx2.Err() })
	_, err = p.engine().Decide(ctx2, "s2", Decision{To: "publish"})
	if !errors.As(err, &ta) || ta.Interrupted {
		t.Fatalf("cancelled resume: err = %v (%+v), want TurnAbortedError not interrupted", err, ta)
	}
	sum, err := NewSessions(p.log, p.files, nil).Get(context.Background(), "s2")
	must(t, err)
	if sum.Status != StatusAwaitingDecision || sum.Pending == nil {
		t.Errorf("after a cancelled resume the session is %s, want still parked", sum.Status)
	}
}

// DESIGN.md §4: a running session that commits nothing for StrandedAfter plus a lease (its
// writer and every retry of its continuation lost) is found by the sweep and carried on; a
// session still inside that window is left alone.
func TestSweepContinuesStrandedSessions(t *testing.T) {
	h := newHarness(t, twoAgents, nil)
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	h.cfg.Clock = func() time.Time { return now }
	out, err := h.engine().Send(WithStepDeadline(context.Background(), now.Add(-time.Second)), "s1", SendInput{Message: "go"})
	must(t, err)
	if out.Kind != KindRunning {
		t.Fatalf("setup: %s", out.Kind)
	}
	head, _ := h.log.Get(context.Background(), "s1")
	if want := spec.FormatInstant(now.Add(StrandedAfter + DefaultLeaseTTL)); head.ParkDue != want {
		t.Fatalf("a running head's due = %q, want %q", head.ParkDue, want)
	}
	engineFor := func(context.Context, string) (*Engine, error) { return h.engine(), nil }
	res, err := Sweep(context.Background(), h.log, engineFor, now.Add(StrandedAfter), 10, nil)
	if err != nil || res.Due != 0 {
		t.Fatalf("sweep inside the window = %+v, %v", res, err)
	}
	h.script(says("Finished."))
	res, err = Sweep(context.Background(), h.log, engineFor, now.Add(StrandedAfter+DefaultLeaseTTL), 10, nil)
	if err != nil || res != (SweepResult{Due: 1, Continued: 1}) {
		t.Fatalf("sweep of the stranded session = %+v, %v", res, err)
	}
	head, _ = h.log.Get(context.Background(), "s1")
	if head.Status != string(StatusCompleted) || head.ParkDue != "" {
		t.Errorf("after the sweep: %s due %q", head.Status, head.ParkDue)
	}
	if got := storedMessages(t, h, "s1"); len(got) != 2 || got[1].Text != "Finished." {
		t.Errorf("transcript = %+v", got)
	}
}

// A turn whose attempt fails (here the model, after the opening committed) records why on
// the session — lastError on the summary, beside interrupted — so an asynchronous client
// sees it; the next commit that makes progress clears it.
func TestFailedAttemptIsRecordedUntilProgress(t *testing.T) {
	h := newHarness(t, twoAgents, nil)
	h.script(func(*model.Request) (*model.Response, error) {
		return nil, &model.CallError{Code: "ThrottlingException", Status: 429, Message: "slow down", Retryable: true}
	})
	_, err := h.engine().Send(context.Background(), "s1", SendInput{Message: "go"})
	var ce *model.CallError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v", err)
	}
	sum, err := NewSessions(h.log, h.files, nil).Get(context.Background(), "s1")
	must(t, err)
	le := sum.LastError
	if !sum.Interrupted || le == nil || le.Code != "ModelCallError" || !le.Retryable || le.Attempts != 1 || le.TurnID != sum.TurnID ||
		!strings.Contains(le.Message, "ThrottlingException") || le.At == "" {
		t.Fatalf("summary after the failure: interrupted=%v lastError=%+v", sum.Interrupted, le)
	}
	h.script(says("Recovered."))
	out, skipped, err := h.engine().Continue(context.Background(), "s1", sum.TurnID)
	must(t, err)
	if skipped != nil || out.Kind != KindCompleted {
		t.Fatalf("continue: %+v %+v", out, skipped)
	}
	if sum, _ = NewSessions(h.log, h.files, nil).Get(context.Background(), "s1"); sum.LastError != nil {
		t.Errorf("lastError after progress = %+v", sum.LastError)
	}
}

// A step cut between its model call and its tools (the invocation's hard deadline) commits
// the model's answer with every unrun call answered "not run", so the history stays one
// Bedrock accepts and the continuation's model knows which calls ran.
func TestCutMidToolsKeepsAValidHistory(t *testing.T) {
	h := newHarness(t, twoAgents, nil)
	ctx, cancel := context.WithCancel(context.Background())
	h.cfg.Tools = []HostTool{{Name: "slow", Description: "Slow.", Essential: true,
		InputSchema: []byte(`{"type":"object"}`),
		Handler:     func(c context.Context, _ HostCall) (string, error) { cancel(); <-c.Done(); return "", c.Err() }}}
	h.script(calls("", call{"slow", map[string]any{}}, call{"ls", map[string]any{}}))
	_, err := h.engine().Send(ctx, "s1", SendInput{Message: "go"})
	var ta *TurnAbortedError
	if !errors.As(err, &ta) || !ta.Interrupted {
		t.Fatalf("err = %v, want an interrupted TurnAbortedError", err)
	}
	msgs := storedMessages(t, h, "s1")
	if len(msgs) != 4 || msgs[2].Text != toolNotRun("slow") || msgs[3].Text != toolNotRun("ls") || !msgs[2].Error {
		t.Fatalf("stored = %+v", msgs)
	}
	h.script(says("Done."))
	out, _, err := h.engine().Continue(context.Background(), "s1", ta.TurnID)
	must(t, err) // the queue model refuses any request Bedrock would refuse
	if out.Kind != KindCompleted {
		t.Fatalf("continuation: %s", out.Kind)
	}
}

// A call cut during the handoff after it committed its park settles parked (without the
// message) instead of reporting a stopped turn for a parked session.
func TestCutHandoffSettlesParked(t *testing.T) {
	h := newHarness(t, reviewFlow, nil)
	ctx, cancel := context.WithCancel(context.Background())
	h.script(calls("", advance("review", "ready")), func(*model.Request) (*model.Response, error) {
		cancel()
		return nil, ctx.Err()
	})
	out, err := h.engine().Send(ctx, "s1", SendInput{Message: "write it"})
	must(t, err)
	if out.Kind != KindParked || out.Pending == nil || out.Reply != "" {
		t.Fatalf("outcome %s %+v %q, want parked without a handoff message", out.Kind, out.Pending, out.Reply)
	}
}

// failsWith answers a model call with err.
func failsWith(err error) reply {
	return func(*model.Request) (*model.Response, error) { return nil, err }
}

// C6-20: a turn that fails with an error no retry fixes (a non-retryable model error) stays
// interrupted with its lastError (spec 02 Q9: no status change) but is never carried on by
// itself: the head leaves the sweep's index, a continuation of the turn (Lambda's retry) is
// a skip, and nothing calls the model again until the next message starts a new turn. The
// summary's lastTurn still shows the turn that settled before.
func TestNonRetryableFailureIsNotRetried(t *testing.T) {
	h := newHarness(t, twoAgents, nil)
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	h.cfg.Clock = func() time.Time { return now }
	h.script(says("First answer."))
	first := h.send("s1", "hello", nil)
	if first.Kind != KindCompleted {
		t.Fatalf("setup: %s", first.Kind)
	}
	h.script(failsWith(&model.CallError{Code: "ValidationException", Status: 400, Message: "bad model id"}))
	_, err := h.engine().Send(context.Background(), "s1", SendInput{Message: "again"})
	var ce *model.CallError
	if !errors.As(err, &ce) || ce.Retryable {
		t.Fatalf("err = %v", err)
	}
	sum, err := NewSessions(h.log, h.files, nil).Get(context.Background(), "s1")
	must(t, err)
	if sum.Status != StatusRunning || !sum.Interrupted || sum.LastError == nil || sum.LastError.Retryable || sum.LastError.Attempts != 1 {
		t.Fatalf("after the failure: status %s interrupted %v lastError %+v", sum.Status, sum.Interrupted, sum.LastError)
	}
	if lt := sum.LastTurn; lt == nil || lt.TurnID != first.TurnID || lt.Kind != KindCompleted || lt.Reply != "First answer." || sum.TurnID == first.TurnID {
		t.Errorf("lastTurn = %+v (current turn %s), want the first turn's outcome", sum.LastTurn, sum.TurnID)
	}
	head, _ := h.log.Get(context.Background(), "s1")
	if head.ParkDue != "" {
		t.Errorf("a turn that failed for good is due at %q, want out of the sweep's index", head.ParkDue)
	}
	calls := len(h.model.requests)
	engineFor := func(context.Context, string) (*Engine, error) { return h.engine(), nil }
	res, err := Sweep(context.Background(), h.log, engineFor, now.AddDate(1, 0, 0), 10, nil)
	if err != nil || res != (SweepResult{}) {
		t.Errorf("sweep a year later = %+v, %v, want nothing due", res, err)
	}
	out, skipped, err := h.engine().Continue(context.Background(), "s1", sum.TurnID)
	if err != nil || out != nil || skipped == nil || !strings.Contains(skipped.Reason, "ModelCallError") {
		t.Errorf("continuation of the failed turn = %+v %+v %v, want a skip", out, skipped, err)
	}
	if n := len(h.model.requests); n != calls {
		t.Fatalf("the model was called %d more times for a turn that failed for good", n-calls)
	}
	// the next message is a new turn
	h.script(says("Second answer."))
	next := h.send("s1", "try again", nil)
	sum, _ = NewSessions(h.log, h.files, nil).Get(context.Background(), "s1")
	if next.Kind != KindCompleted || sum.LastError != nil || sum.LastTurn == nil || sum.LastTurn.TurnID != next.TurnID || sum.LastTurn.Reply != "Second answer." {
		t.Errorf("after a new message: %s, summary %+v", next.Kind, sum)
	}
}

// C6-20: a retryable failure is carried on by the sweep, MaxTurnAttempts attempts in a row
// at most; then the turn leaves the sweep's index like a non-retryable one.
func TestRetryableFailuresAreBounded(t *testing.T) {
	h := newHarness(t, twoAgents, nil)
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	h.cfg.Clock = func() time.Time { return now }
	throttled := failsWith(&model.CallError{Code: "ThrottlingException", Status: 429, Message: "slow down", Retryable: true})
	for range MaxTurnAttempts {
		h.script(throttled)
	}
	if _, err := h.engine().Send(context.Background(), "s1", SendInput{Message: "go"}); err == nil {
		t.Fatal("the first attempt did not fail")
	}
	engineFor := func(context.Context, string) (*Engine, error) { return h.engine(), nil }
	for attempt := 2; attempt <= MaxTurnAttempts+1; attempt++ {
		now = now.Add(time.Hour) // past StrandedAfter and a lease since the last attempt
		res, err := Sweep(context.Background(), h.log, engineFor, now, 10, nil)
		if attempt <= MaxTurnAttempts && (err == nil || res.Failed != 1) {
			t.Fatalf("sweep for attempt %d = %+v, %v, want one failed continuation", attempt, res, err)
		}
		if attempt > MaxTurnAttempts && (err != nil || res.Due != 0) {
			t.Fatalf("sweep after %d attempts = %+v, %v, want nothing due", MaxTurnAttempts, res, err)
		}
	}
	if n := len(h.model.requests); n != MaxTurnAttempts {
		t.Errorf("model calls = %d, want %d", n, MaxTurnAttempts)
	}
	sum, _ := NewSessions(h.log, h.files, nil).Get(context.Background(), "s1")
	if le := sum.LastError; le == nil || !le.Retryable || le.Attempts != MaxTurnAttempts || !sum.Interrupted {
		t.Errorf("summary = interrupted %v lastError %+v", sum.Interrupted, sum.LastError)
	}
}

// A head written before failures were bounded (due in the sweep's index with a lastError
// that is not retryable) is skipped by the sweep without a model call, and taken out of the
// index with its turn's step count kept.
func TestSweepDropsAGivenUpHeadFromItsIndex(t *testing.T) {
	h := newHarness(t, twoAgents, nil)
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	h.cfg.Clock = func() time.Time { return now }
	h.script(calls("", call{"archmax_set_variables", map[string]any{"variables": map[string]any{"topic": "x"}}}),
		failsWith(&model.CallError{Code: "AccessDeniedException", Status: 403, Message: "no access"}))
	if _, err := h.engine().Send(context.Background(), "s1", SendInput{Message: "go"}); err == nil {
		t.Fatal("setup: no failure")
	}
	ctx := context.Background()
	head, err := h.log.Acquire(ctx, "s1", "legacy", time.Minute)
	must(t, err)
	before, err := decodeRecord(ctx, head.Body, nil, "s1", nil)
	must(t, err)
	legacy := *head
	legacy.ParkDue, legacy.Lease = spec.FormatInstant(now), nil
	_, err = h.log.Commit(ctx, "s1", "legacy", &store.Commit{ExpectedVersion: head.Version, Head: legacy})
	must(t, err)
	must(t, h.log.Release(ctx, "s1", "legacy"))

	calls := len(h.model.requests)
	engineFor := func(context.Context, string) (*Engine, error) { return h.engine(), nil }
	res, err := Sweep(ctx, h.log, engineFor, now.Add(time.Minute), 10, nil)
	if err != nil || res != (SweepResult{Due: 1, Skipped: 1}) || len(h.model.requests) != calls {
		t.Fatalf("sweep = %+v, %v, %d model calls", res, err, len(h.model.requests)-calls)
	}
	after, _ := h.log.Get(ctx, "s1")
	rec, err := decodeRecord(ctx, after.Body, nil, "s1", nil)
	must(t, err)
	if after.ParkDue != "" || rec.CurrentTurn == nil || *rec.CurrentTurn != *before.CurrentTurn || rec.CurrentTurn.Steps == 0 || rec.LastError == nil {
		t.Errorf("after the sweep: due %q, turn %+v, lastError %+v", after.ParkDue, rec.CurrentTurn, rec.LastError)
	}
	if res, _ := Sweep(ctx, h.log, engineFor, now.AddDate(1, 0, 0), 10, nil); res.Due != 0 {
		t.Errorf("the next sweep still reads it: %+v", res)
	}
}
