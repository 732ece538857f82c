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
	if got := e.expiresAt("s1~1"); got != 0 {
		t.Errorf("a child's expiry = %d, want none", got)
	}
	h.cfg.SessionTTL = 0
	if got := h.engine().expiresAt("s1"); got != 0 {
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
