package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/scheduler/eventbridge"
	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/transcript"
	"github.com/archmax-ai/archmax/functions/handlers/wakes"
)

// parkWaiting starts a parcel session through the turn Lambda whose agent calls
// archmax_wait with an `until`, and returns its id, parkId and resumeAt (spec 02 §4.2).
func parkWaiting(t *testing.T, l *lambdas, message string) (id, parkID string, resumeAt time.Time) {
	t.Helper()
	a := call(t, l.turn, startReq("parcel", jsonText(t, map[string]string{"message": message})))
	if a.status != http.StatusOK || a.body["kind"] != "parked" || a.body["status"] != "awaiting_input" || a.body["state"] != "watch" {
		t.Fatalf("wait: %d %v", a.status, a.body)
	}
	at, err := time.Parse(time.RFC3339Nano, a.resumeAt())
	if err != nil || a.parkID() == "" {
		t.Fatalf("pending = %v, want a parkId and a resumeAt", a.body["pending"])
	}
	id, _ = a.body["sessionId"].(string)
	return id, a.parkID(), at
}

// DESIGN.md §5, spec 02 §4.4: a timed park creates an EventBridge Scheduler one-time
// schedule targeting the wake Lambda with {sessionId, parkId}; the wake Lambda given that
// input wakes the park only once it is due — with the timer trigger and the variable
// `now` — and an early or duplicate wake is a no-op that says why.
func TestTimedParkIsScheduledAndWoken(t *testing.T) {
	t.Parallel()
	s := newStack(t, "timer.model.yaml")
	clk := s.virtualTime() // the park falls due when the test says, and the early wake is early
	l := s.boot(t)
	parkedAt := clk.Now()
	id, parkID, resumeAt := parkWaiting(t, l, "Remind me in a second.")

	schedules := s.sched.Schedules()
	if len(schedules) != 1 {
		t.Fatalf("schedules = %+v, want one", schedules)
	}
	sc := schedules[0]
	var input eventbridge.Wake
	if err := json.Unmarshal([]byte(sc.Target.Input), &input); err != nil || input != (eventbridge.Wake{SessionID: id, ParkID: parkID}) {
		t.Errorf("schedule input = %s, want {sessionId: %s, parkId: %s}", sc.Target.Input, id, parkID)
	}
	if sc.Name != eventbridge.Name(id, parkID) || sc.Group != schedulerGroup || sc.Target.Arn != wakeTargetARN ||
		sc.Target.RoleArn != schedulerRole || sc.ActionAfterCompletion != "DELETE" || sc.FlexibleTimeWindow != "OFF" {
		t.Errorf("schedule = %+v", sc)
	}
	// a resumeAt nearer than the adapter's MinLead is scheduled at now+MinLead: the schedule
	// fires after the park is due, never before
	if sc.At.Before(resumeAt) || sc.At.Before(parkedAt.Add(eventbridge.MinLead).Truncate(time.Second)) {
		t.Errorf("schedule at %s, want at or after resumeAt %s and now+%s", sc.At, resumeAt, eventbridge.MinLead)
	}

	// an early wake (the same input, before resumeAt) changes nothing
	before := s.head(t, id)
	early, err := l.wakeWith(sc.Target.Input)
	if err != nil || early.Outcome != "" || !strings.Contains(early.Skipped, "not due until "+spec.FormatInstant(resumeAt)) {
		t.Fatalf("early wake = %+v, %v", early, err)
	}
	if after := s.head(t, id); after.Version != before.Version || after.Status != "awaiting_input" {
		t.Errorf("an early wake wrote: version %d → %d, status %s", before.Version, after.Version, after.Status)
	}

	// the early wake arranged the wake again: on the same clock, at the same time
	if again := s.sched.Schedules(); len(again) != 1 || !again[0].At.Equal(sc.At) {
		t.Errorf("after the early wake: schedules %+v, want the one at %s", again, sc.At)
	}
	s.advanceTo(resumeAt)
	fired := s.sched.Due(sc.At)
	if len(fired) != 1 || fired[0].Target.Input != sc.Target.Input {
		t.Fatalf("fired = %+v", fired)
	}
	woke, err := l.wakeWith(fired[0].Target.Input)
	if err != nil || woke.Action != "wake" || woke.Outcome != "completed" || woke.Skipped != "" || woke.SessionID != id || woke.ParkID != parkID {
		t.Fatalf("due wake = %+v, %v", woke, err)
	}
	sum := s.summary(t, id)
	trigger, now := sum.Variables["trigger"], sum.Variables["now"]
	if trigger.Value != "timer" || !trigger.Locked || !now.Locked {
		t.Errorf("variables after the wake: trigger %+v, now %+v", trigger, now)
	}
	if v, _ := now.Value.(string); v < spec.FormatInstant(resumeAt) {
		t.Errorf("now = %v, want an instant at or after resumeAt %s", now.Value, spec.FormatInstant(resumeAt))
	}
	steps := s.trailSteps(t, id)
	if got := s.trail(t, id); got != "trigger:watch trigger:watch" || steps[1].Reason != "timer" {
		t.Errorf("trail = %s (last %+v), want the timer's trigger step in the parked state", got, steps[len(steps)-1])
	}
	if sum.Status != "completed" || sum.Pending != nil || s.head(t, id).ParkDue != "" {
		t.Errorf("after the wake: %+v", sum)
	}
	if got := s.callers(t, id); got != "trigger:iam:"+clientRole+" trigger:system:wake" || sum.TurnBy == nil || sum.TurnBy.Key() != "system:wake" {
		t.Errorf("callers = %s, turnBy %+v: the wake function's timer delivery is the system's", got, sum.TurnBy)
	}
	msgs := s.messages(t, id, 0, 100)
	if m := msgs[len(msgs)-1]; m.Role != transcript.RoleAssistant || m.Text != "Time's up — here is your reminder." {
		t.Errorf("last message = %+v", m)
	}

	// the duplicate (a retried invocation of the same schedule) is a no-op with a reason
	before = s.head(t, id)
	dup, err := l.wakeWith(fired[0].Target.Input)
	if err != nil || dup.Outcome != "" || dup.Skipped == "" {
		t.Fatalf("duplicate wake = %+v, %v", dup, err)
	}
	if after := s.head(t, id); after.Version != before.Version {
		t.Errorf("a duplicate wake wrote: version %d → %d", before.Version, after.Version)
	}
	if left := s.sched.Schedules(); len(left) != 0 {
		t.Errorf("schedules left after firing: %+v", left)
	}
}

// DESIGN.md §5 (the sweep behind lost schedules): a due timed park whose schedule never
// fired is found by the wake Lambda's EventBridge "Scheduled Event" sweep through the
// sparse park index and woken with the timer trigger; the next sweep finds nothing.
func TestSweepWakesAParkWhoseScheduleWasLost(t *testing.T) {
	t.Parallel()
	s := newStack(t, "timer.model.yaml")
	s.virtualTime()
	l := s.boot(t)
	id, _, resumeAt := parkWaiting(t, l, "Remind me in a second.")
	if h := s.head(t, id); h.ParkDue != spec.FormatInstant(resumeAt) {
		t.Fatalf("ParkDue = %q, want the resumeAt %s", h.ParkDue, spec.FormatInstant(resumeAt))
	}
	sweep := map[string]any{"version": "0", "id": "5e1b7a0c-2f6e-4c1d-9a3b-8d7c6b5a4f3e", "detail-type": "Scheduled Event",
		"source": "aws.events", "account": "123456789012", "region": "us-east-1", "resources": []string{}, "detail": map[string]any{}}
	run := func() wakes.Result {
		t.Helper()
		out, err := invoke(l.wake.Handle, sweep)
		var res wakes.Result
		if err == nil {
			err = json.Unmarshal(out, &res)
		}
		if err != nil || res.Action != "sweep" || res.Sweep == nil {
			t.Fatalf("sweep = %s, %v", out, err)
		}
		return res
	}
	if early := run(); *early.Sweep != (session.SweepResult{}) {
		t.Errorf("a sweep before resumeAt = %+v, want nothing due", *early.Sweep)
	}

	s.advanceTo(resumeAt)
	if res := run(); *res.Sweep != (session.SweepResult{Due: 1, Woken: 1}) {
		t.Fatalf("the due sweep = %+v", *res.Sweep)
	}
	if sum := s.summary(t, id); sum.Status != "completed" || sum.Variables["trigger"].Value != "timer" || s.head(t, id).ParkDue != "" {
		t.Errorf("after the sweep: %+v", sum)
	}
	if again := run(); *again.Sweep != (session.SweepResult{}) {
		t.Errorf("the next sweep = %+v, want nothing due", *again.Sweep)
	}
}
