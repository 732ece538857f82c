package e2e

import (
	"errors"
	"net/http"
	"sync"
	"testing"

	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/transcript"
	"github.com/archmax-ai/archmax/functions/handlers/wakes"
)

// Exactly once (DESIGN.md §3 lease + version condition, §5; spec 02 §3.4): 100 concurrent
// decisions on one park through the decide Lambda — one 200, 99 typed 409s — and the raced
// session's checkpoint is the one a lone decision leaves (a calm session decided once on
// the same workflow and script): same version, counters, items, trail and status.
func TestConcurrentDecisionsOnOnePark(t *testing.T) {
	s := newStack(t, "race-decide.model.yaml")
	l := s.boot(t)
	calm, calmPark := parkAtSignoff(t, l)
	raced, racedPark := parkAtSignoff(t, l)
	decide := func(id, parkID string) answer {
		return call(t, l.decide, decisionReq(id, `{"to":"publish","parkId":"`+parkID+`"}`))
	}
	if a := decide(calm, calmPark.parkID()); a.status != http.StatusOK {
		t.Fatalf("the calm decision: %d %v", a.status, a.body)
	}

	const n = 100
	answers := make([]answer, n)
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i := range answers {
		wg.Go(func() {
			<-gate
			answers[i] = decide(raced, racedPark.parkID())
		})
	}
	close(gate)
	wg.Wait()

	codes := map[string]int{}
	for _, a := range answers {
		switch {
		case a.status == http.StatusOK && a.body["kind"] == "completed" && a.body["state"] == "publish":
			codes["200"]++
		case a.status == http.StatusConflict && (a.code() == "SessionNotResumableError" || a.code() == "SessionNotParkedError" || a.code() == "ParkNotLiveError"):
			codes[a.code()]++
		default:
			t.Errorf("unexpected answer: %d %v", a.status, a.body)
		}
	}
	if codes["200"] != 1 || codes["SessionNotResumableError"]+codes["SessionNotParkedError"]+codes["ParkNotLiveError"] != n-1 {
		t.Fatalf("answers by code = %v, want one 200 and %d typed 409s", codes, n-1)
	}
	t.Logf("answers by code: %v", codes)

	want, got := s.head(t, calm), s.head(t, raced)
	if got.Version != want.Version || got.Messages != want.Messages || got.Trail != want.Trail || got.Events != want.Events ||
		got.Status != "completed" || got.Lease != nil {
		t.Errorf("raced head = %+v\nwant it like the calm one = %+v", got, want)
	}
	if items := s.items(t, raced); items["HEAD"] != 1 || items["M"] != int(got.Messages) || items["T"] != int(got.Trail) || items["E"] != int(got.Events) {
		t.Errorf("items %v for head counters m=%d t=%d e=%d", items, got.Messages, got.Trail, got.Events)
	}
	humans := 0
	for _, st := range s.trailSteps(t, raced) {
		if st.Kind == transcript.TrailHuman {
			humans++
		}
	}
	if tr := s.trail(t, raced); humans != 1 || tr != s.trail(t, calm) {
		t.Errorf("raced trail = %s (%d human steps), want the calm one %s", tr, humans, s.trail(t, calm))
	}
	decisions := 0
	for _, m := range s.messages(t, raced, 0, 100) {
		if m.Note == transcript.NoteDecision {
			decisions++
		}
	}
	if decisions != 1 {
		t.Errorf("%d [decision] notes, want 1", decisions)
	}
}

// Exactly once across Lambdas (spec 02 §4.3–§4.4): on one due timed park, the courier's
// delivery (deliver Lambda) and the scheduled wake (wake Lambda) race; exactly one resumes
// the park, the other is refused or skipped, and retrying the loser changes nothing.
func TestDeliveryRacingAWake(t *testing.T) {
	t.Parallel()
	s := newStack(t, "race-wake.model.yaml")
	s.virtualTime()
	l := s.boot(t)
	id, _, resumeAt := parkWaiting(t, l, "Tell me when the parcel arrives, or in a second.")
	schedules := s.sched.Schedules()
	if len(schedules) != 1 {
		t.Fatalf("schedules = %+v, want one", schedules)
	}
	input := schedules[0].Target.Input
	s.advanceTo(resumeAt)

	var (
		delivered answer
		woke      wakes.Result
		wakeErr   error
		wg        sync.WaitGroup
	)
	gate := make(chan struct{})
	wg.Go(func() { <-gate; delivered = l.deliverHTTP(t, deliveryReq(id, `{"trigger":"courier"}`)) })
	wg.Go(func() { <-gate; woke, wakeErr = l.wakeWith(input) })
	close(gate)
	wg.Wait()

	deliveryWon := delivered.status == http.StatusOK
	if !deliveryWon && (delivered.status != http.StatusConflict ||
		(delivered.code() != "SessionNotResumableError" && delivered.code() != "SessionNotAwaitingInputError")) {
		t.Errorf("the losing delivery: %d %v", delivered.status, delivered.body)
	}
	wakeWon := wakeErr == nil && woke.Outcome != ""
	var busy *session.SessionNotResumableError
	if !wakeWon && !errors.As(wakeErr, &busy) && (wakeErr != nil || woke.Skipped == "") {
		t.Errorf("the losing wake: %+v, %v", woke, wakeErr)
	}
	if deliveryWon == wakeWon {
		t.Fatalf("delivery won %v, wake won %v (delivery %d %v; wake %+v, %v): want exactly one", deliveryWon, wakeWon,
			delivered.status, delivered.body, woke, wakeErr)
	}
	winner := "timer"
	if deliveryWon {
		winner = "courier"
	}
	t.Logf("the %s resumed the park", winner)

	// the loser's retry (Lambda retries a failed invocation) is refused or skipped too
	before := s.head(t, id)
	if deliveryWon {
		if again, err := l.wakeWith(input); err != nil || again.Outcome != "" || again.Skipped == "" {
			t.Errorf("the wake retried: %+v, %v", again, err)
		}
	} else if again := l.deliverHTTP(t, deliveryReq(id, `{"trigger":"courier"}`)); again.code() != "SessionNotAwaitingInputError" {
		t.Errorf("the delivery retried: %d %v", again.status, again.body)
	}
	if after := s.head(t, id); after.Version != before.Version {
		t.Errorf("the loser's retry wrote: version %d → %d", before.Version, after.Version)
	}
	steps := s.trailSteps(t, id)
	if got := s.trail(t, id); got != "trigger:watch trigger:watch" || steps[1].Reason != winner || s.summary(t, id).Variables["trigger"].Value != winner {
		t.Errorf("trail = %s (%+v), want one resume by the %s", got, steps, winner)
	}
}
