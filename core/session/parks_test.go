package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/events"
	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/transcript"
)

const reviewFlow = `
states:
  draft:
    triggers:
      manual:
    instructions: Draft the answer, then hand it to a reviewer.
    transitions:
      - to: review
        description: The draft is ready for a reviewer.
  review:
    type: human
    title: Finance sign-off
    instructions: Approve the draft or send it back.
    evidence: [scratchpad/draft.md]
    approvers: [finance-leads]
    transitions:
      - to: publish
        description: Approved.
        type: approve
      - to: draft
        description: Needs another pass.
        type: refine
  publish:
    instructions: Publish and stop.
`

// 02 §3.1–§3.5: advance into a human state → the park is committed, one reply-only handoff,
// parked; decide → [decision] note, human trail step, no trigger step, the loop continues.
func TestHumanParkAndDecide(t *testing.T) {
	h := newHarness(t, reviewFlow, nil)
	h.script(
		calls("", call{"archmax_advance", map[string]any{"to": "review", "reason": "ready", "evidence": []any{"scratchpad/notes.md", "scratchpad/draft.md"}}}),
		says("I've handed the draft to finance."),
	)
	out := h.send("s1", "write the report", nil)
	if out.Kind != KindParked || out.ParkedChannel != ChannelDecision || out.Status != StatusAwaitingDecision || out.State != "review" {
		t.Fatalf("outcome %s/%s in %s", out.Kind, out.ParkedChannel, out.State)
	}
	d := out.Pending.Decision
	if d == nil || d.Seq != 1 || d.Title != "Finance sign-off" || len(d.Transitions) != 2 || d.Transitions[0].Type != "approve" ||
		strings.Join(d.Evidence, ",") != "scratchpad/draft.md,scratchpad/notes.md" || d.Approvers[0] != "finance-leads" || out.Pending.ParkID == "" {
		t.Errorf("pending decision = %+v", d)
	}
	if out.Reply != "I've handed the draft to finance." {
		t.Errorf("reply = %q", out.Reply)
	}
	// the handoff call is reply-only: its per-call prompt carries the directive
	if sys := h.model.requests[1].System[len(h.model.requests[1].System)-1].Text; !strings.Contains(sys, "You have just handed this run to a person: 'review' (Finance sign-off) is now waiting") {
		t.Errorf("handoff directive missing: %q", sys)
	}
	if p := h.eventsOf(events.Parked); len(p) != 1 || p[0].Str("awaiting") != "decision" {
		t.Errorf("parked events = %+v", p)
	}
	head, _ := h.log.Get(context.Background(), "s1")
	if head.Status != "awaiting_decision" {
		t.Errorf("stored status = %s", head.Status)
	}
	if s := out.Summary(); s.Pending == nil || s.Pending.ParkID != out.Pending.ParkID {
		t.Errorf("outcome summary pending = %+v", s.Pending)
	}
	sum, err := NewSessions(h.log, nil, nil).Get(context.Background(), "s1")
	if err != nil || sum.State != "review" || sum.Pending == nil || sum.Pending.ParkID != out.Pending.ParkID || sum.Pending.Decision.Title != "Finance sign-off" {
		t.Errorf("session summary = %+v, %v", sum, err)
	}

	// decide: a bad target, then approve
	e := h.engine()
	var bad *InvalidDecisionTargetError
	if _, err := e.Decide(context.Background(), "s1", Decision{To: "nowhere"}); !errors.As(err, &bad) || strings.Join(bad.ValidTargets, ",") != "publish,draft" {
		t.Fatalf("bad target: %v", err)
	}
	var stale *ParkNotLiveError
	if _, err := e.Decide(context.Background(), "s1", Decision{To: "publish", ParkID: "p-other"}); !errors.As(err, &stale) {
		t.Fatalf("stale park id: %v", err)
	}
	h.script(says("Published."))
	out, err = e.Decide(context.Background(), "s1", Decision{To: "publish", Comment: "Looks right", ParkID: out.Pending.ParkID})
	if err != nil || out.Kind != KindCompleted || out.State != "publish" || out.Disposition != DispositionDecide || out.Turn != 2 {
		t.Fatalf("decide: %v %+v", err, out)
	}
	if got := trailOf(out); got != "trigger:draft agent:review human:publish" {
		t.Errorf("trail = %s (a decision adds no trigger step)", got)
	}
	ns := notes(out)
	if len(ns) != 1 || ns[0].Note != transcript.NoteDecision || ns[0].Text != "[decision] A human selected approve → 'publish' at the 'review' checkpoint: Looks right. The run has already been routed: you are now in 'publish'. Do its work and continue from here." {
		t.Errorf("notes = %+v", ns)
	}
	var np *SessionNotParkedError
	if _, err := e.Decide(context.Background(), "s1", Decision{To: "publish"}); !errors.As(err, &np) {
		t.Errorf("decide on a finished session: %v", err)
	}
}

// 02 §3.6: a message to a decision park is a reply-only turn that re-parks on the same record.
func TestReplyWhileParkedKeepsTheRecord(t *testing.T) {
	h := newHarness(t, reviewFlow, nil)
	h.script(calls("", advance("review", "ready")), says("Handed over."))
	first := h.send("s1", "go", nil)
	h.script(calls("", call{"archmax_advance", map[string]any{"to": "publish", "reason": "I approve"}})) // the model tries to act
	out := h.send("s1", "Any news?", nil)
	if out.Kind != KindParked || out.Disposition != DispositionReply || !out.Reparked {
		t.Fatalf("reply outcome %+v", out)
	}
	if out.Pending.ParkID != first.Pending.ParkID || out.Pending.Decision.Seq != first.Pending.Decision.Seq || out.Pending.Decision.CreatedAt != first.Pending.Decision.CreatedAt {
		t.Errorf("the record changed: %+v vs %+v", out.Pending.Decision, first.Pending.Decision)
	}
	if m := toolMessage(t, out, "archmax_advance", 1); !m.Blocked || !strings.Contains(m.Text, "cannot run — this run is parked and a person is deciding") {
		t.Errorf("reply-only refusal = %+v", m)
	}
	if got := trailOf(out); got != "trigger:draft agent:review" {
		t.Errorf("a reply adds no trail step: %s", got)
	}
	if pm := h.eventsOf(events.ParkMessage); len(pm) != 1 || pm[0].Str("direction") != "inbound" {
		t.Errorf("park-message events = %+v (no outbound: the model wrote nothing)", pm)
	}
	var empty *EmptyMessageError
	if _, err := h.engine().Reply(context.Background(), "s1", "  "); !errors.As(err, &empty) || !empty.Reply {
		t.Errorf("empty reply: %v", err)
	}
	// 02 §1.3 step 6: variables and a trigger on a reply are not applied, and a warning says so
	h.script(says("Still with finance."))
	out, err := h.engine().Send(context.Background(), "s1", SendInput{Message: "Any news now?", Trigger: "manual", Variables: map[string]any{"urgent": true}})
	if err != nil || out.Disposition != DispositionReply {
		t.Fatalf("reply with variables: %v %+v", err, out)
	}
	if _, set := out.Variables["urgent"]; set {
		t.Errorf("a reply's variable was applied")
	}
	w := h.eventsOf(events.Warning)
	if len(w) == 0 || w[len(w)-1].Str("message") != "The session is parked at a human state, so this message is a reply and its variables urgent and trigger 'manual' were not applied." {
		t.Errorf("warnings = %+v", w)
	}
}

// A refine decision loops back to the agent, which re-parks on a fresh record.
func TestRefineLoopReparksFresh(t *testing.T) {
	h := newHarness(t, reviewFlow, nil)
	h.script(calls("", advance("review", "ready")), says("Handed over."))
	first := h.send("s1", "go", nil)
	h.script(calls("", advance("review", "fixed")), says("Handed over again."))
	out, err := h.engine().Decide(context.Background(), "s1", Decision{To: "draft", Comment: "tighten it"})
	if err != nil || out.Kind != KindParked || !out.Reparked || out.Pending.Decision.Seq != 2 || out.Pending.ParkID == first.Pending.ParkID {
		t.Fatalf("refine: %v %+v", err, out)
	}
	if got := trailOf(out); got != "trigger:draft agent:review human:draft agent:review" {
		t.Errorf("trail = %s", got)
	}
}

const waitFlow = `
states:
  watch:
    triggers:
      manual:
    budget: { maxParks: 1 }
    on_error: give-up
    transitions:
      - to: give-up
        description: never
  give-up:
    instructions: Explain.
`

// 02 §4.1–§4.3: archmax_wait parks awaiting input with resumeAt; a delivery resumes in the
// parked state with the [event] note and the message committed together; a second wait over
// maxParks fails the state through on_error.
func TestWaitDeliverAndParkBudget(t *testing.T) {
	h := newHarness(t, waitFlow, nil)
	sched := &fakeScheduler{}
	h.cfg.Scheduler = sched
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	h.cfg.Clock = func() time.Time { return now }
	h.script(calls("", call{"archmax_wait", map[string]any{"reason": "the courier's scan", "until": "2h"}}), says("Waiting for the courier."))
	out := h.send("s1", "track parcel 7", nil)
	if out.Kind != KindParked || out.ParkedChannel != ChannelInput || out.Pending.Input.ResumeAt != "2026-11-30T11:00:00.000Z" || out.Pending.Input.Reason != "the courier's scan" {
		t.Fatalf("wait: %+v", out)
	}
	if m := toolMessage(t, out, "archmax_wait", 0); !strings.HasPrefix(m.Text, "Waiting in state 'watch'. The run is parked here") || !strings.Contains(m.Text, "2026-11-30T11:00:00.000Z") {
		t.Errorf("wait reply = %q", m.Text)
	}
	if len(sched.scheduled) != 1 || sched.scheduled[0].parkID != out.Pending.ParkID || !sched.scheduled[0].at.Equal(now.Add(2*time.Hour)) {
		t.Errorf("schedules = %+v", sched.scheduled)
	}
	head, _ := h.log.Get(context.Background(), "s1")
	if head.ParkDue != "2026-11-30T11:00:00.000Z" {
		t.Errorf("ParkDue = %q", head.ParkDue)
	}
	if sum, err := NewSessions(h.log, nil, nil).Get(context.Background(), "s1"); err != nil || sum.WaitReason != "the courier's scan" ||
		sum.ResumeAt != "2026-11-30T11:00:00.000Z" || sum.State != "watch" || sum.Pending.ParkID != out.Pending.ParkID {
		t.Errorf("summary of an input park = %+v, %v", sum, err)
	}
	// an early wake is a no-op that says why — and arranges the wake again for resumeAt, so
	// the park is not left for the sweep (R18-6)
	_, skipped, err := h.engine().Wake(context.Background(), "s1", out.Pending.ParkID)
	if err != nil || skipped == nil || !strings.Contains(skipped.Reason, "not due until") {
		t.Fatalf("early wake: %v %+v", err, skipped)
	}
	if len(sched.scheduled) != 2 || sched.scheduled[1].parkID != out.Pending.ParkID || !sched.scheduled[1].at.Equal(now.Add(2*time.Hour)) {
		t.Errorf("an early wake was not re-armed: %+v", sched.scheduled)
	}
	// a delivery with a message: note and message together, in the parked state
	h.script(calls("", call{"archmax_wait", map[string]any{"reason": "again"}}), says("sorry"))
	out, err = h.engine().Deliver(context.Background(), "s1", Delivery{Trigger: "courier", Variables: map[string]any{"scan": "delivered"}, Message: "It arrived!"})
	if err != nil {
		t.Fatal(err)
	}
	ns := notes(out)
	if len(ns) < 1 || ns[0].Text != `[event] 'courier' arrived while the run waited in 'watch': scan="delivered" (also readable as run variables) You are still in 'watch'; continue from here. The person's message that came with it follows.` {
		t.Errorf("event note = %+v", ns)
	}
	if v := out.Variables["scan"]; !v.Locked || v.Value != "delivered" || out.Variables["trigger"].Value != "courier" {
		t.Errorf("variables = %+v", out.Variables)
	}
	// the second wait exceeds maxParks: 1 and routes through on_error
	if out.State != "give-up" || !strings.Contains(trailOf(out), "trigger:watch on_error:give-up") {
		t.Errorf("park budget: state %s trail %s", out.State, trailOf(out))
	}
	if len(sched.cancelled) != 1 {
		t.Errorf("a delivered park's schedule is cancelled: %+v", sched.cancelled)
	}
	var na *SessionNotAwaitingInputError
	if _, err := h.engine().Deliver(context.Background(), "s1", Delivery{Trigger: "x"}); !errors.As(err, &na) {
		t.Errorf("delivery to a session not parked: %v", err)
	}
}

// DESIGN §5: a due wake delivers the timer trigger with `now`; a duplicate is a no-op.
func TestWakeWhenDue(t *testing.T) {
	h := newHarness(t, strings.Replace(waitFlow, "    budget: { maxParks: 1 }\n", "", 1), nil)
	var mu sync.Mutex
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	h.cfg.Clock = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	h.script(calls("", call{"archmax_wait", map[string]any{"reason": "a timer", "until": "30m"}}), says("Back in 30 minutes."))
	out := h.send("s1", "remind me", nil)
	parkID := out.Pending.ParkID
	mu.Lock()
	now = now.Add(31 * time.Minute)
	mu.Unlock()
	h.script(says("Time's up."))
	woke, skipped, err := h.engine().Wake(context.Background(), "s1", parkID)
	if err != nil || skipped != nil || woke.Kind != KindCompleted || woke.Variables["trigger"].Value != TimerTrigger || woke.Variables["now"].Value != "2026-11-30T09:31:00.000Z" {
		t.Fatalf("wake: %v %+v %+v", err, skipped, woke)
	}
	_, skipped, err = h.engine().Wake(context.Background(), "s1", parkID)
	if err != nil || skipped == nil {
		t.Fatalf("duplicate wake: %v %+v", err, skipped)
	}
}

// Exactly once: concurrent decisions on one park — one commits, every other is a typed
// conflict and changes nothing.
func TestConcurrentDecisionsExactlyOnce(t *testing.T) {
	h := newHarness(t, reviewFlow, nil)
	h.script(calls("", advance("review", "ready")), says("Handed over."))
	first := h.send("s1", "go", nil)
	h.script(says("Published."))
	const n = 20
	var wg sync.WaitGroup
	var okCount, conflicts int
	var mu sync.Mutex
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := h.engine().Decide(context.Background(), "s1", Decision{To: "publish", ParkID: first.Pending.ParkID})
			mu.Lock()
			defer mu.Unlock()
			var busy *SessionNotResumableError
			var stale *ParkNotLiveError
			var np *SessionNotParkedError
			switch {
			case err == nil:
				okCount++
			case errors.As(err, &busy), errors.As(err, &stale), errors.As(err, &np):
				conflicts++
			default:
				t.Errorf("unexpected error: %v", err)
			}
		}()
	}
	wg.Wait()
	if okCount != 1 || conflicts != n-1 {
		t.Fatalf("accepted %d, conflicts %d", okCount, conflicts)
	}
	trail, _ := NewSessions(h.log, h.files, nil).Trail(context.Background(), "s1")
	humans := 0
	for _, s := range trail {
		if s.Kind == transcript.TrailHuman {
			humans++
		}
	}
	if humans != 1 {
		t.Errorf("human steps = %d", humans)
	}
}

// fakeScheduler records Schedule/Cancel calls.
type fakeScheduler struct {
	mu        sync.Mutex
	scheduled []scheduledWake
	cancelled []string
}

type scheduledWake struct {
	sessionID, parkID string
	at                time.Time
}

func (f *fakeScheduler) Schedule(_ context.Context, sessionID, parkID string, at time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.scheduled = append(f.scheduled, scheduledWake{sessionID, parkID, at})
	return nil
}

func (f *fakeScheduler) Cancel(_ context.Context, sessionID, parkID string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cancelled = append(f.cancelled, parkID)
	return nil
}

// DESIGN §5: the sweep wakes overdue timed parks (a lost schedule is caught) and leaves
// parks not yet due alone; a second sweep finds nothing.
func TestSweepWakesOverdueParks(t *testing.T) {
	h := newHarness(t, strings.Replace(waitFlow, "    budget: { maxParks: 1 }\n", "", 1), nil)
	var mu sync.Mutex
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	h.cfg.Clock = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	h.script(calls("", call{"archmax_wait", map[string]any{"reason": "soon", "until": "10m"}}), says("Back soon."))
	h.send("soon", "remind me", nil)
	h.script(calls("", call{"archmax_wait", map[string]any{"reason": "later", "until": "5h"}}), says("Back later."))
	h.send("later", "remind me later", nil)
	engineFor := func(context.Context, string) (*Engine, error) { return h.engine(), nil }
	if due, err := NewSessions(h.log, nil, nil).ListDueParks(context.Background(), now.Add(11*time.Minute), 0); err != nil || len(due) != 1 || due[0].SessionID != "soon" || due[0].WaitReason != "soon" {
		t.Errorf("due parks = %+v, %v", due, err)
	}

	mu.Lock()
	now = now.Add(11 * time.Minute)
	mu.Unlock()
	h.script(says("Time's up."))
	res, err := Sweep(context.Background(), h.log, engineFor, h.cfg.Clock(), 10, nil)
	if err != nil || res != (SweepResult{Due: 1, Woken: 1}) {
		t.Fatalf("sweep = %+v, %v", res, err)
	}
	if head, _ := h.log.Get(context.Background(), "soon"); head.ParkDue != "" || head.Status == string(StatusAwaitingInput) {
		t.Errorf("woken session still parked: %+v", head)
	}
	if head, _ := h.log.Get(context.Background(), "later"); head.Status != string(StatusAwaitingInput) {
		t.Errorf("a park not yet due was touched: %s", head.Status)
	}
	if res, err := Sweep(context.Background(), h.log, engineFor, h.cfg.Clock(), 10, nil); err != nil || res.Due != 0 {
		t.Errorf("second sweep = %+v, %v", res, err)
	}
}

// Exactly once: a redelivered event (same id) is refused unapplied, even when the session
// has parked again awaiting input; a new id is delivered.
func TestDeliveryIDsAreIdempotent(t *testing.T) {
	h := newHarness(t, strings.Replace(waitFlow, "    budget: { maxParks: 1 }\n", "", 1), nil)
	h.script(calls("", call{"archmax_wait", map[string]any{"reason": "first scan"}}), says("Waiting."))
	h.send("s1", "track", nil)
	h.script(calls("", call{"archmax_wait", map[string]any{"reason": "second scan"}}), says("Waiting again."))
	out, err := h.engine().Deliver(context.Background(), "s1", Delivery{Trigger: "courier", ID: "ev-1"})
	if err != nil || out.Kind != KindParked {
		t.Fatalf("first delivery: %v %+v", err, out)
	}
	before, _ := h.log.Get(context.Background(), "s1")
	var dup *DuplicateDeliveryError
	if _, err := h.engine().Deliver(context.Background(), "s1", Delivery{Trigger: "courier", ID: "ev-1"}); !errors.As(err, &dup) {
		t.Fatalf("redelivery: %v", err)
	}
	if after, _ := h.log.Get(context.Background(), "s1"); after.Version != before.Version {
		t.Errorf("a refused redelivery committed: version %d → %d", before.Version, after.Version)
	}
	h.script(says("Both scans are in."))
	if out, err := h.engine().Deliver(context.Background(), "s1", Delivery{Trigger: "courier", ID: "ev-2"}); err != nil || out.Kind != KindCompleted {
		t.Fatalf("new id: %v %+v", err, out)
	}
}

// A resume whose first step fails (the model is throttled) leaves the park exactly as it
// was, so the retry of the decision, delivery or wake applies it — nothing is half-applied.
func TestFailedResumeLeavesTheParkLive(t *testing.T) {
	throttled := func(*model.Request) (*model.Response, error) {
		return nil, &model.CallError{Code: "ThrottlingException", Status: 429, Retryable: true}
	}
	ctx := context.Background()

	h := newHarness(t, reviewFlow, nil)
	h.script(calls("", advance("review", "ready")), says("Handed over."))
	parked := h.send("s1", "go", nil)
	before, _ := h.log.Get(ctx, "s1")
	h.script(throttled)
	var ce *model.CallError
	if _, err := h.engine().Decide(ctx, "s1", Decision{To: "publish", ParkID: parked.Pending.ParkID}); !errors.As(err, &ce) {
		t.Fatalf("decide with a throttled model: %v", err)
	}
	if after, _ := h.log.Get(ctx, "s1"); after.Version != before.Version || after.Status != before.Status || string(after.Body) != string(before.Body) {
		t.Fatalf("a failed decision changed the session: v%d→v%d %s", before.Version, after.Version, after.Status)
	}
	h.script(says("Published."))
	if out, err := h.engine().Decide(ctx, "s1", Decision{To: "publish", ParkID: parked.Pending.ParkID}); err != nil || out.Kind != KindCompleted {
		t.Fatalf("retried decision: %v %+v", err, out)
	}

	w := newHarness(t, strings.Replace(waitFlow, "    budget: { maxParks: 1 }\n", "", 1), nil)
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	w.cfg.Clock = func() time.Time { return now }
	w.script(calls("", call{"archmax_wait", map[string]any{"reason": "timer", "until": "1m"}}), says("Waiting."))
	waiting := w.send("w1", "go", nil)
	now = now.Add(2 * time.Minute)
	w.script(throttled)
	if _, _, err := w.engine().Wake(ctx, "w1", waiting.Pending.ParkID); !errors.As(err, &ce) {
		t.Fatalf("wake with a throttled model: %v", err)
	}
	if head, _ := w.log.Get(ctx, "w1"); head.Status != string(StatusAwaitingInput) || head.ParkDue == "" {
		t.Fatalf("a failed wake lost the park: %s due %q", head.Status, head.ParkDue)
	}
	w.script(says("Time's up."))
	if out, skipped, err := w.engine().Wake(ctx, "w1", waiting.Pending.ParkID); err != nil || skipped != nil || out.Kind != KindCompleted {
		t.Fatalf("retried wake: %v %+v %+v", err, skipped, out)
	}
}

// Parks that fail on every sweep (their workflow removed) do not starve the ones behind them.
func TestSweepLooksPastFailingParks(t *testing.T) {
	h := newHarness(t, strings.Replace(waitFlow, "    budget: { maxParks: 1 }\n", "", 1), nil)
	var mu sync.Mutex
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	h.cfg.Clock = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	for i, id := range []string{"a-broken", "b-broken", "c-fine"} {
		h.script(calls("", call{"archmax_wait", map[string]any{"reason": id, "until": fmt.Sprintf("%dm", i+1)}}), says("Waiting."))
		h.send(id, "wait", nil)
	}
	mu.Lock()
	now = now.Add(time.Hour)
	mu.Unlock()
	calls := 0
	engineFor := func(context.Context, string) (*Engine, error) {
		calls++
		if calls <= 2 {
			return nil, &UnknownWorkflowError{Workflow: "removed"}
		}
		return h.engine(), nil
	}
	h.script(says("Time's up."))
	res, err := Sweep(context.Background(), h.log, engineFor, h.cfg.Clock(), 1, nil)
	if err == nil || res.Failed != 2 || res.Woken != 1 {
		t.Fatalf("sweep = %+v, %v", res, err)
	}
	if head, _ := h.log.Get(context.Background(), "c-fine"); head.Status == string(StatusAwaitingInput) {
		t.Errorf("the park behind the failing ones was not woken")
	}
}

// 02 §4.3: the [event] note quotes what was stored — a delivered `trigger` variable is the
// trigger id, not the value sent, and an invalid title is not quoted.
func TestEventNoteQuotesStoredValues(t *testing.T) {
	h := newHarness(t, strings.Replace(waitFlow, "    budget: { maxParks: 1 }\n", "", 1), nil)
	h.script(calls("", call{"archmax_wait", map[string]any{"reason": "scan"}}), says("Waiting."))
	h.send("s1", "go", nil)
	h.script(says("Noted."))
	out, err := h.engine().Deliver(context.Background(), "s1", Delivery{Trigger: "courier",
		Variables: map[string]any{"trigger": "x", "title": 42, "scan": "in"}})
	if err != nil {
		t.Fatal(err)
	}
	if ns := notes(out); len(ns) == 0 || !strings.Contains(ns[0].Text, `scan="in"`) || strings.Contains(ns[0].Text, `trigger=`) || strings.Contains(ns[0].Text, `title=`) {
		t.Errorf("event note = %+v", ns)
	}
	if out.Variables["trigger"].Value != "courier" {
		t.Errorf("trigger = %v", out.Variables["trigger"].Value)
	}
	w := h.eventsOf(events.Warning)
	found := false
	for _, e := range w {
		found = found || e.Str("message") == deliveredTriggerIgnored
	}
	if !found {
		t.Errorf("no warning for the delivered trigger variable: %+v", w)
	}
}
