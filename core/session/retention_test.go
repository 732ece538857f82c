package session

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/store"
)

// RD22-8: with a session TTL every commit of a root session sets its head's expiry to the
// commit's time plus the TTL (from the last activity); a child's head carries none; no TTL,
// no expiry.
func TestSessionTTLSetsTheHeadsExpiry(t *testing.T) {
	now := time.Date(2026, 12, 2, 9, 0, 0, 500, time.UTC)
	h := newHarness(t, twoAgents, nil)
	h.cfg.Clock = func() time.Time { return now }
	h.cfg.SessionTTL = 30 * 24 * time.Hour
	h.script(says("hello"))
	h.send("s1", "hi", nil)
	head, err := h.log.Get(context.Background(), "s1")
	must(t, err)
	if want := now.Add(30*24*time.Hour).Unix() + 1; head.ExpiresAt != want {
		t.Errorf("ExpiresAt = %d, want %d (the commit's time plus 30 days, rounded up)", head.ExpiresAt, want)
	}
	now = now.Add(48 * time.Hour)
	h.script(says("again"))
	h.send("s1", "later", nil)
	head, err = h.log.Get(context.Background(), "s1")
	must(t, err)
	if want := now.Add(30*24*time.Hour).Unix() + 1; head.ExpiresAt != want {
		t.Errorf("after a later turn ExpiresAt = %d, want %d: refreshed by the activity", head.ExpiresAt, want)
	}
	e := h.engine()
	if got := e.expiresAt("s1~1", ""); got != 0 {
		t.Errorf("a child's expiry = %d, want none", got)
	}
	h.cfg.SessionTTL = 0
	if got := h.engine().expiresAt("s1", ""); got != 0 {
		t.Errorf("without a TTL the expiry = %d", got)
	}
}

// RD22-9: once the root's head is gone (its expiry), DeleteExpired with the removed head's
// record deletes the children, the schedule, the files and what is left of the log, never
// _specs/ nor another session; a repeat is harmless; an id started again is left alone.
func TestDeleteExpiredFinishesTheTree(t *testing.T) {
	h := newHarness(t, twoAgents, nil)
	deleteFixture(t, h)
	ctx := context.Background()
	root, err := h.log.Get(ctx, "root")
	must(t, err)
	if _, err := h.log.Delete(ctx, "root"); err != nil { // what the TTL removed (here: more)
		t.Fatal(err)
	}
	sched := &cancelRecorder{}
	s := NewSessions(h.log, h.files, nil).WithScheduler(sched)
	for round := range 2 {
		if _, err := s.DeleteExpired(ctx, "root", root.Body); err != nil {
			t.Fatalf("round %d: DeleteExpired: %v", round, err)
		}
		checkTreeDeleted(t, h)
	}
	if len(sched.cancels) == 0 || sched.cancels[0] != "root/p-timer" {
		t.Errorf("cancelled = %v", sched.cancels)
	}

	// the id was started again after it expired: the new session is not touched
	h.script(says("new"))
	h.send("root", "a new start", nil)
	if deleted, err := s.DeleteExpired(ctx, "root", root.Body); err != nil || deleted {
		t.Errorf("DeleteExpired on a live id = %v, %v", deleted, err)
	}
	if _, err := h.log.Get(ctx, "root"); err != nil {
		t.Errorf("the new session under the id: %v", err)
	}
	var child *ChildSessionError
	if _, err := s.DeleteExpired(ctx, "root~1", json.RawMessage(`{}`)); !errors.As(err, &child) {
		t.Errorf("DeleteExpired of a child id = %v", err)
	}
}

// RD22-12: a local store's expired root sessions are deleted by DeleteExpiredBy (archmax
// serve's sweep): the expired one with its children and files, not one whose expiry is
// later, not one without an expiry, not one a turn holds.
func TestDeleteExpiredByLocalSweep(t *testing.T) {
	now := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	h := newHarness(t, twoAgents, nil)
	deleteFixture(t, h)
	ctx := context.Background()
	setExpiry := func(id string, at int64) {
		head, err := h.log.Acquire(ctx, id, "w", time.Minute)
		must(t, err)
		nh := *head
		nh.ExpiresAt, nh.Lease = at, nil
		_, err = h.log.Commit(ctx, id, "w", &store.Commit{ExpectedVersion: head.Version, Head: nh})
		must(t, err)
		must(t, h.log.Release(ctx, id, "w"))
	}
	setExpiry("root", now.Unix())                 // due
	setExpiry("rootx", now.Add(time.Hour).Unix()) // not yet
	s := NewSessions(h.log, h.files, nil)
	n, err := s.DeleteExpiredBy(ctx, now)
	if err != nil || n != 1 {
		t.Fatalf("DeleteExpiredBy = %d, %v; want 1", n, err)
	}
	checkTreeDeleted(t, h)
	// rootx falls due while a turn holds it: left for the next sweep
	if _, err := h.log.Acquire(ctx, "rootx", "a-turn", time.Minute); err != nil {
		t.Fatal(err)
	}
	if n, err := s.DeleteExpiredBy(ctx, now.Add(2*time.Hour)); err != nil || n != 0 {
		t.Errorf("with a turn running: %d, %v", n, err)
	}
	must(t, h.log.Release(ctx, "rootx", "a-turn"))
	if n, err := s.DeleteExpiredBy(ctx, now.Add(2*time.Hour)); err != nil || n != 1 {
		t.Errorf("once it settled: %d, %v", n, err)
	}
}

// RD22-15: a session parked on a timed wake later than its retention (retention 1h,
// `archmax_wait until: 3h`) is kept at least the TTL past the wake, so neither DynamoDB's TTL
// nor the local sweep deletes it before it wakes; once it woke, the expiry counts from then.
func TestExpiryIsNeverBeforeTheTimedWake(t *testing.T) {
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	h := newHarness(t, waitFlow, nil)
	h.cfg.Scheduler = &fakeScheduler{}
	h.cfg.Clock = func() time.Time { return now }
	h.cfg.SessionTTL = time.Hour
	h.script(calls("", call{"archmax_wait", map[string]any{"reason": "a timer", "until": "3h"}}), says("Back in 3 hours."))
	out := h.send("s1", "wait for it", nil)
	if out.Kind != KindParked {
		t.Fatalf("wait: %+v", out)
	}
	head, err := h.log.Get(context.Background(), "s1")
	must(t, err)
	if want := now.Add(4 * time.Hour).Unix(); head.ExpiresAt != want {
		t.Errorf("ExpiresAt = %s, want the wake (3h) plus the TTL (1h): %s", time.Unix(head.ExpiresAt, 0).UTC(), time.Unix(want, 0).UTC())
	}
	if n, err := NewSessions(h.log, h.files, nil).DeleteExpiredBy(context.Background(), now.Add(2*time.Hour)); err != nil || n != 0 {
		t.Errorf("the sweep past the TTL, before the wake: deleted %d, %v", n, err)
	}
}

// RD22-16: with retention turned off, a session that still carries an expiry from before is
// kept — the engines' sweep deletes nothing, however far past the expiry — and its next
// commit clears the expiry; with retention on, the same sweep deletes it.
func TestRetentionOffKeepsSessionsThatCarryAnExpiry(t *testing.T) {
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	h := newHarness(t, twoAgents, nil)
	h.cfg.Clock = func() time.Time { return now }
	h.cfg.SessionTTL = time.Hour
	h.script(says("hello"))
	h.send("s1", "hi", nil)
	head, err := h.log.Get(context.Background(), "s1")
	must(t, err)
	if head.ExpiresAt == 0 {
		t.Fatal("no expiry with retention on")
	}
	off := h.cfg
	off.SessionTTL = 0
	later := now.Add(48 * time.Hour)
	if n, err := NewEngines(off).DeleteExpiredBy(context.Background(), later, nil); err != nil || n != 0 {
		t.Fatalf("the sweep with retention off deleted %d, %v", n, err)
	}
	if _, err := h.log.Get(context.Background(), "s1"); err != nil {
		t.Fatalf("the session with retention off: %v", err)
	}
	h.cfg.SessionTTL = 0
	h.script(says("again"))
	h.send("s1", "still here?", nil)
	if head, err = h.log.Get(context.Background(), "s1"); err != nil || head.ExpiresAt != 0 {
		t.Fatalf("a commit with retention off left the expiry %d (%v)", head.ExpiresAt, err)
	}
	// on again: a session whose expiry passed is deleted by the same sweep
	on := h.cfg
	on.SessionTTL = time.Hour
	h.cfg.SessionTTL = time.Hour
	h.script(says("once more"))
	h.send("s1", "and now?", nil)
	if n, err := NewEngines(on).DeleteExpiredBy(context.Background(), later.Add(48*time.Hour), nil); err != nil || n != 1 {
		t.Fatalf("the sweep with retention on deleted %d, %v", n, err)
	}
}

// RD22-22: Keep clears a root session's expiry (nothing else of its head changes); a session
// that does not exist is (false, nil); a child is refused; a running turn refuses it.
func TestKeepClearsTheExpiry(t *testing.T) {
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	h := newHarness(t, twoAgents, nil)
	h.cfg.Clock = func() time.Time { return now }
	h.cfg.SessionTTL = time.Hour
	h.script(says("hello"))
	h.send("s1", "hi", nil)
	ctx := context.Background()
	before, err := h.log.Get(ctx, "s1")
	must(t, err)
	s := NewSessions(h.log, h.files, nil)
	if kept, err := s.Keep(ctx, "s1"); err != nil || !kept {
		t.Fatalf("Keep = %v, %v", kept, err)
	}
	after, err := h.log.Get(ctx, "s1")
	must(t, err)
	if after.ExpiresAt != 0 || after.UpdatedAt != before.UpdatedAt || after.Status != before.Status || string(after.Body) != string(before.Body) {
		t.Errorf("after Keep: %+v (before %+v)", after, before)
	}
	if n, err := NewEngines(h.cfg).DeleteExpiredBy(ctx, now.Add(48*time.Hour), nil); err != nil || n != 0 {
		t.Errorf("a kept session swept: %d, %v", n, err)
	}
	if kept, err := s.Keep(ctx, "never"); err != nil || kept {
		t.Errorf("Keep of nothing = %v, %v", kept, err)
	}
	var child *ChildSessionError
	if _, err := s.Keep(ctx, "s1~1"); !errors.As(err, &child) {
		t.Errorf("Keep of a child = %v", err)
	}
	if _, err := h.log.Acquire(ctx, "s1", "a-turn", time.Minute); err != nil {
		t.Fatal(err)
	}
	var busy *SessionNotResumableError
	if _, err := s.Keep(ctx, "s1"); !errors.As(err, &busy) {
		t.Errorf("Keep during a turn = %v", err)
	}
}
