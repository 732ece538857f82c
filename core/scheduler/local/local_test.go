package local_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/clock"
	"github.com/archmax-ai/archmax/core/scheduler/local"
	"github.com/archmax-ai/archmax/core/session"
)

var _ session.Scheduler = (*local.Loop)(nil)

type firing struct {
	sessionID, parkID string
	at                time.Time
}

// recorder collects fires on a channel, each with the time its clock read.
type recorder struct {
	ch  chan firing
	now func() time.Time
}

func newRecorder(now func() time.Time) *recorder {
	return &recorder{ch: make(chan firing, 100), now: now}
}

func (r *recorder) fire(sessionID, parkID string) {
	r.ch <- firing{sessionID, parkID, r.now()}
}

// next takes a fire, waiting for one that runs on its own goroutine (a hang guard bounds
// the wait; it is never the thing asserted).
func (r *recorder) next(t *testing.T) firing {
	t.Helper()
	select {
	case f := <-r.ch:
		return f
	case <-time.After(time.Minute):
		t.Fatal("no fire")
		return firing{}
	}
}

// none asserts nothing has fired. On the fake clock a timer fires inside the Advance that
// reaches it, so "not yet" needs no waiting.
func (r *recorder) none(t *testing.T) {
	t.Helper()
	select {
	case f := <-r.ch:
		t.Fatalf("unexpected fire %+v", f)
	default:
	}
}

// newLoop is a Loop on a fake clock: time passes only by Advance.
func newLoop(t *testing.T) (*local.Loop, *recorder, *clock.Fake) {
	clk := clock.NewFake(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	r := newRecorder(clk.Now)
	l := local.New(r.fire, local.WithClock(clk))
	t.Cleanup(l.Close)
	return l, r, clk
}

// Spec 02 §4.4: the wake comes once, never before resumeAt.
func TestLoop_FiresOnceAtTheTime(t *testing.T) {
	l, r, clk := newLoop(t)
	at := clk.Now().Add(30 * time.Millisecond)
	if err := l.Schedule(context.Background(), "s1", "p1", at); err != nil {
		t.Fatal(err)
	}
	clk.Advance(30 * time.Millisecond)
	r.none(t) // a millisecond late rather than a hair early
	clk.Advance(time.Millisecond)
	f := r.next(t)
	if f.sessionID != "s1" || f.parkID != "p1" {
		t.Fatalf("fired %+v", f)
	}
	if f.at.Before(at) {
		t.Fatalf("fired %v before resumeAt", at.Sub(f.at))
	}
	clk.Advance(time.Hour)
	r.none(t)
}

func TestLoop_PastTimeFiresAtOnce(t *testing.T) {
	l, r, _ := newLoop(t)
	if err := l.Schedule(context.Background(), "s", "p", time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	if f := r.next(t); f.parkID != "p" {
		t.Fatalf("fired %+v", f)
	}
}

func TestLoop_CancelPreventsFiring(t *testing.T) {
	l, r, clk := newLoop(t)
	ctx := context.Background()
	if err := l.Schedule(ctx, "s", "p", clk.Now().Add(20*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if err := l.Cancel(ctx, "s", "p"); err != nil {
		t.Fatal(err)
	}
	if err := l.Cancel(ctx, "s", "unknown"); err != nil {
		t.Fatalf("Cancel of an unknown park: %v", err)
	}
	clk.Advance(time.Hour)
	r.none(t)
}

// Rescheduling a park replaces its wake: only the latest time fires, once.
func TestLoop_RescheduleReplaces(t *testing.T) {
	l, r, clk := newLoop(t)
	ctx := context.Background()
	if err := l.Schedule(ctx, "s", "p", clk.Now().Add(10*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	clk.Advance(5 * time.Millisecond)
	later := clk.Now().Add(80 * time.Millisecond)
	if err := l.Schedule(ctx, "s", "p", later); err != nil {
		t.Fatal(err)
	}
	clk.Advance(80 * time.Millisecond) // past the first time, not yet the second
	r.none(t)
	clk.Advance(time.Millisecond)
	if f := r.next(t); f.at.Before(later) {
		t.Fatalf("the replaced wake fired (%v before the new time)", later.Sub(f.at))
	}
	clk.Advance(time.Hour)
	r.none(t)
}

// Other parks, of the same or another session, keep their own wakes.
func TestLoop_ParksAreIndependent(t *testing.T) {
	l, r, clk := newLoop(t)
	ctx := context.Background()
	at := clk.Now().Add(10 * time.Millisecond)
	for _, k := range [][2]string{{"a", "p1"}, {"a", "p2"}, {"b", "p1"}} {
		if err := l.Schedule(ctx, k[0], k[1], at); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Cancel(ctx, "a", "p2"); err != nil {
		t.Fatal(err)
	}
	clk.Advance(11 * time.Millisecond)
	got := map[string]bool{}
	for range 2 {
		f := r.next(t)
		got[f.sessionID+"/"+f.parkID] = true
	}
	if !got["a/p1"] || !got["b/p1"] {
		t.Fatalf("fired %v, want a/p1 and b/p1", got)
	}
	clk.Advance(time.Hour)
	r.none(t)
}

func TestLoop_CloseStopsAndRefuses(t *testing.T) {
	l, r, clk := newLoop(t)
	if err := l.Schedule(context.Background(), "s", "p", clk.Now().Add(20*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	l.Close()
	clk.Advance(time.Hour)
	r.none(t)
	if err := l.Schedule(context.Background(), "s", "p", clk.Now()); !errors.Is(err, local.ErrClosed) {
		t.Fatalf("Schedule after Close: %v, want ErrClosed", err)
	}
	if err := l.Cancel(context.Background(), "s", "p"); err != nil {
		t.Fatalf("Cancel after Close: %v", err)
	}
	l.Close() // idempotent
}

// Close waits for a fire in progress; fire may schedule again (a re-park). On the system
// clock: a time already past fires at once, and "Close has not returned yet" can only hold
// longer on a slow machine, never fail.
func TestLoop_CloseWaitsForRunningFire(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	var l *local.Loop
	var rescheduled error
	l = local.New(func(sessionID, parkID string) {
		// a fire may schedule (no deadlock on the loop's lock); it does so before Close is
		// called, or Close's refusal of new schedules would race with it
		rescheduled = l.Schedule(context.Background(), sessionID, "next", time.Now().Add(time.Hour))
		close(started)
		<-release
	})
	if err := l.Schedule(context.Background(), "s", "p", time.Now()); err != nil {
		t.Fatal(err)
	}
	<-started
	closed := make(chan struct{})
	go func() { l.Close(); close(closed) }()
	select {
	case <-closed:
		t.Fatal("Close returned while fire was running")
	case <-time.After(30 * time.Millisecond):
	}
	close(release)
	<-closed
	if rescheduled != nil {
		t.Fatalf("Schedule from fire: %v", rescheduled)
	}
}

// Concurrent Schedule/Cancel/Close leave no goroutine behind (run with -race).
func TestLoop_NoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	l := local.New(func(string, string) {})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			for j := range 200 {
				park := fmt.Sprintf("p%d", j%7)
				_ = l.Schedule(ctx, fmt.Sprint(i), park, time.Now().Add(time.Duration(j%3)*time.Millisecond))
				if j%5 == 0 {
					_ = l.Cancel(ctx, fmt.Sprint(i), park)
				}
			}
		}()
	}
	wg.Wait()
	// Far-future wakes must not hold goroutines either.
	for i := range 50 {
		_ = l.Schedule(context.Background(), "far", fmt.Sprint(i), time.Now().Add(time.Hour))
	}
	l.Close()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("goroutines: %d before, %d after Close\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(5 * time.Millisecond)
	}
}
