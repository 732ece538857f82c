package session

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/clock"
	"github.com/archmax-ai/archmax/core/scheduler/local"
	"github.com/archmax-ai/archmax/core/store"
	"github.com/archmax-ai/archmax/core/store/storetest"
)

// cancelRecorder is a Scheduler that records its cancellations (Delete's port to the
// schedules of timed parks).
type cancelRecorder struct {
	mu      sync.Mutex
	cancels []string
}

func (c *cancelRecorder) Schedule(context.Context, string, string, time.Time) error { return nil }
func (c *cancelRecorder) Cancel(_ context.Context, sessionID, parkID string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cancels = append(c.cancels, sessionID+"/"+parkID)
	return nil
}

// deleteTreeFiles are the files of the tree deleteFixture writes: true for a file the
// root's delete removes.
var deleteTreeFiles = map[string]bool{
	"root/scratchpad/notes.md":         true,
	"root/artifacts/trajectory.json":   true,
	"root~1/scratchpad/child.md":       true,
	"root~1~1/large_tool_results/r.md": true,
	"root~2/scratchpad/orphan.md":      true, // a child dispatched, never committed
	OutboxPrefix + "root":              true,
	OutboxPrefix + "root~1":            true,
	"rootx/scratchpad/keep.md":         false, // another session whose id starts the same
	OutboxPrefix + "rootx":             false,
	"_specs/0123abcd.json":             false, // the shared spec snapshots
}

// deleteFixture stores a session tree on h's memory stores: root (parked on a timed input,
// two children dispatched), root~1 (parked for a decision, one child), root~1~1
// (completed), root~2 (dispatched, never committed) and an unrelated rootx, with files.
func deleteFixture(t *testing.T, h *harness) {
	t.Helper()
	ctx := context.Background()
	commit := func(id string, rec record, parkDue string) {
		head, err := h.log.Acquire(ctx, id, "w", time.Minute)
		must(t, err)
		body, err := json.Marshal(rec)
		must(t, err)
		_, err = h.log.Commit(ctx, id, "w", &store.Commit{ExpectedVersion: head.Version, Head: store.Head{Workflow: "wf",
			Status: string(rec.Status), UpdatedAt: "2026-01-01T00:00:00.000Z", ParkDue: parkDue, Body: body, Messages: 1},
			Messages: []json.RawMessage{json.RawMessage(`{"role":"user","text":"hi"}`)}})
		must(t, err)
		must(t, h.log.Release(ctx, id, "w"))
	}
	commit("root", record{Workflow: "wf", Status: StatusAwaitingInput, State: "wait", DispatchCount: 2,
		Park: &Park{ParkID: "p-timer", Channel: ChannelInput, Input: &PendingInput{State: "wait", ResumeAt: "2026-12-03T00:00:00.000Z"}}},
		"2026-12-03T00:00:00.000Z")
	commit("root~1", record{Workflow: "wf", Status: StatusAwaitingDecision, State: "review", DispatchCount: 1,
		Park: &Park{ParkID: "p-decide", Channel: ChannelDecision, Decision: &PendingDecision{State: "review"}}}, "")
	commit("root~1~1", record{Workflow: "wf", Status: StatusCompleted, State: "done"}, "")
	commit("rootx", record{Workflow: "wf", Status: StatusCompleted, State: "done"}, "")
	for k := range deleteTreeFiles {
		must(t, h.files.Write(ctx, k, []byte("x")))
	}
}

// checkTreeDeleted fails t unless everything of the root's tree is gone and nothing else is.
func checkTreeDeleted(t *testing.T, h *harness) {
	t.Helper()
	ctx := context.Background()
	for _, id := range []string{"root", "root~1", "root~1~1", "root~2"} {
		if _, err := h.log.Get(ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s's head survived: %v", id, err)
		}
		if msgs, err := h.log.Messages(ctx, id, 0, 10); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s's messages survived: %d, %v", id, len(msgs), err)
		}
	}
	if _, err := h.log.Get(ctx, "rootx"); err != nil {
		t.Errorf("the other session: %v", err)
	}
	for k, gone := range deleteTreeFiles {
		_, err := h.files.Read(ctx, k)
		if gone && !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s survived: %v", k, err)
		}
		if !gone && err != nil {
			t.Errorf("%s was touched: %v", k, err)
		}
	}
}

// RD22-1: a session's delete takes its children (recursively, a never-committed one's files
// included), its timed park's schedule, its files and outbox marker, never another
// session's or the spec snapshots; a second delete is (false, nil).
func TestDeleteRemovesTheTree(t *testing.T) {
	h := newHarness(t, twoAgents, nil)
	deleteFixture(t, h)
	sched := &cancelRecorder{}
	s := NewSessions(h.log, h.files, nil).WithScheduler(sched)
	ctx := context.Background()

	existed, err := s.Delete(ctx, "root")
	if err != nil || !existed {
		t.Fatalf("Delete = %v, %v", existed, err)
	}
	checkTreeDeleted(t, h)
	if !slices.Equal(sched.cancels, []string{"root/p-timer"}) {
		t.Errorf("cancelled schedules = %v, want the timed park's", sched.cancels)
	}
	if existed, err := s.Delete(ctx, "root"); err != nil || existed {
		t.Errorf("second Delete = %v, %v; want false, nil", existed, err)
	}
	if existed, err := s.Delete(ctx, "never-ran"); err != nil || existed {
		t.Errorf("Delete of a session that never ran = %v, %v", existed, err)
	}
}

// RD22-1: a child is deleted with its root; a turn running anywhere in the tree refuses the
// delete with 409's error and changes nothing.
func TestDeleteRefusals(t *testing.T) {
	h := newHarness(t, twoAgents, nil)
	deleteFixture(t, h)
	s := NewSessions(h.log, h.files, nil)
	ctx := context.Background()
	var child *ChildSessionError
	if _, err := s.Delete(ctx, "root~1"); !errors.As(err, &child) || child.RootID != "root" {
		t.Fatalf("Delete of a child = %v, want *ChildSessionError naming root", err)
	}
	if _, err := h.log.Acquire(ctx, "root~1~1", "a-turn", time.Minute); err != nil {
		t.Fatal(err)
	}
	var busy *SessionNotResumableError
	if _, err := s.Delete(ctx, "root"); !errors.As(err, &busy) || busy.SessionID != "root" || busy.LeaseExpiresAt == "" {
		t.Fatalf("Delete with a grandchild's turn running = %v, want *SessionNotResumableError with the lease's expiry", err)
	}
	for _, id := range []string{"root", "root~1", "root~1~1"} {
		hd, err := h.log.Get(ctx, id)
		if err != nil || Status(hd.Status) == StatusDeleting {
			t.Errorf("%s after the refused delete: %+v, %v", id, hd, err)
		}
	}
	if _, err := h.files.Read(ctx, "root/scratchpad/notes.md"); err != nil {
		t.Errorf("the refused delete removed a file: %v", err)
	}
	// the delete's own leases were released: the running turn's writer is the only holder
	must(t, h.log.Release(ctx, "root~1~1", "a-turn"))
	if existed, err := s.Delete(ctx, "root"); err != nil || !existed {
		t.Fatalf("Delete once the turn settled = %v, %v", existed, err)
	}
	checkTreeDeleted(t, h)
}

// RD22-4: a delete that dies at any of its writes (before the write, or after it landed)
// leaves a state in which no call runs on the session (*SessionDeletingError once marked) and
// a repeated delete — once the dead deleter's lease lapsed — finishes.
func TestDeleteCrashAnywhereThenRepeat(t *testing.T) {
	marked := 0
	for _, after := range []bool{false, true} {
		for k := 1; ; k++ {
			now := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
			h := newHarness(t, twoAgents, nil)
			h.log.Clock = func() time.Time { return now }
			h.cfg.Clock = func() time.Time { return now }
			deleteFixture(t, h)
			log := storetest.NewCrashLog(h.log, k, after)
			files := &storetest.CrashFiles{Files: h.files, P: log.P}
			_, err := NewSessions(log, files, nil).Delete(context.Background(), "root")
			if !log.P.Dead() {
				if err != nil {
					t.Fatalf("clean delete: %v", err)
				}
				if k < 10 {
					t.Fatalf("a clean delete after %d kill points: %v", k-1, log.P.Ops())
				}
				break
			}
			now = now.Add(DeleteLeaseTTL + time.Second)
			if hd, gerr := h.log.Get(context.Background(), "root"); gerr == nil && Status(hd.Status) == StatusDeleting {
				var deleting *SessionDeletingError
				marked++
				if _, err := h.engine().Send(context.Background(), "root", SendInput{Message: "hello?"}); !errors.As(err, &deleting) {
					t.Fatalf("k=%d after=%v: a message to a session being deleted = %v", k, after, err)
				}
			}
			if _, err := NewSessions(h.log, h.files, nil).Delete(context.Background(), "root"); err != nil {
				t.Fatalf("k=%d after=%v: repeated delete: %v", k, after, err)
			}
			checkTreeDeleted(t, h)
		}
	}
	if marked == 0 {
		t.Error("no crash left a session marked deleting: the refusal was never tried")
	}
}

// RD22-1 with the local scheduler (archmax serve's timers): the deleted session's armed wake
// never fires, another session's still does.
func TestDeleteDisarmsTheLocalTimer(t *testing.T) {
	h := newHarness(t, twoAgents, nil)
	deleteFixture(t, h)
	clk := clock.NewFake(time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC))
	var mu sync.Mutex
	var fired []string
	loop := local.New(func(id, park string) { mu.Lock(); fired = append(fired, id+"/"+park); mu.Unlock() }, local.WithClock(clk))
	defer loop.Close()
	ctx := context.Background()
	must(t, loop.Schedule(ctx, "root", "p-timer", clk.Now().Add(time.Hour)))
	must(t, loop.Schedule(ctx, "rootx", "p-other", clk.Now().Add(time.Hour)))
	if _, err := NewSessions(h.log, h.files, nil).WithScheduler(loop).Delete(ctx, "root"); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Hour)
	loop.Close() // waits for the fire in progress
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(fired, []string{"rootx/p-other"}) {
		t.Errorf("fired = %v, want only the other session's wake", fired)
	}
}
