package session

import (
	"context"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/spec"
)

// quotaGone is the model refusing a call for a quota used up for the day.
func quotaGone(*model.Request) (*model.Response, error) {
	return nil, &model.CallError{Code: "ThrottlingException", Status: 429, Message: "Too many tokens per day, please wait before trying again.", Quota: true, Attempts: 1}
}

// R18-5: a daily quota parks the turn awaiting input with a resumeAt after a back-off (1 h,
// then doubling), instead of retrying: nothing calls the model again until the wake, which
// resumes the state through the normal wake path; a model answer clears the back-off.
func TestAnExhaustedQuotaParksUntilLater(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	h := newHarness(t, twoAgents, nil)
	h.cfg.Clock = func() time.Time { return now }
	h.script(quotaGone)
	out := h.send("q1", "hi", nil)
	if out.Kind != KindParked || out.Pending == nil || out.Pending.Input == nil {
		t.Fatalf("outcome %s %+v", out.Kind, out.Pending)
	}
	in := out.Pending.Input
	if in.ResumeAt != spec.FormatInstant(now.Add(time.Hour)) || in.Reason != quotaWaitReason("ThrottlingException", time.Hour) {
		t.Errorf("pending input = %+v", in)
	}
	if n := len(h.model.requests); n != 1 {
		t.Errorf("%d model calls, want 1 (no retry)", n)
	}

	// early: nothing happens; at resumeAt: the wake resumes, still out of quota → 2 h
	if _, skipped, err := h.engine().Wake(context.Background(), "q1", out.Pending.ParkID); err != nil || skipped == nil {
		t.Fatalf("an early wake: skipped %v, err %v", skipped, err)
	}
	now = now.Add(time.Hour)
	h.script(quotaGone)
	o2, _, err := h.engine().Wake(context.Background(), "q1", out.Pending.ParkID)
	if err != nil || o2 == nil || o2.Kind != KindParked || o2.Pending.Input.ResumeAt != spec.FormatInstant(now.Add(2*time.Hour)) {
		t.Fatalf("the second park: %+v, %v", o2, err)
	}
	// the quota is back: the wake's turn answers, the back-off clears
	now = now.Add(2 * time.Hour)
	h.script(says("Back."))
	o3, _, err := h.engine().Wake(context.Background(), "q1", o2.Pending.ParkID)
	if err != nil || o3 == nil || o3.Kind != KindCompleted || o3.Reply != "Back." {
		t.Fatalf("after the quota: %+v, %v", o3, err)
	}
	h.script(quotaGone)
	if o4 := h.send("q1", "again", nil); o4.Pending == nil || o4.Pending.Input.ResumeAt != spec.FormatInstant(now.Add(time.Hour)) {
		t.Errorf("the back-off did not restart at 1 h: %+v", o4.Pending)
	}
}

func TestQuotaBackoff(t *testing.T) {
	for n, want := range map[int]time.Duration{1: time.Hour, 2: 2 * time.Hour, 3: 4 * time.Hour, 5: 16 * time.Hour, 6: 24 * time.Hour, 40: 24 * time.Hour} {
		if got := quotaBackoff(n); got != want {
			t.Errorf("quotaBackoff(%d) = %s, want %s", n, got, want)
		}
	}
}
