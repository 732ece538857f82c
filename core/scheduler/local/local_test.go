package local_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/scheduler/local"
	"github.com/archmax-ai/archmax/core/session"
)

var _ session.Scheduler = (*local.Loop)(nil)

type firing struct {
	sessionID, parkID string
	at                time.Time
}

// recorder collects fires on a channel.
type recorder struct{ ch chan firing }

func newRecorder() *recorder { return &recorder{ch: make(chan firing, 100)} }

func (r *recorder) fire(sessionID, parkID string) {
	r.ch <- firing{sessionID, parkID, time.Now()}
}

// next waits for a fire (failing after a generous bound).
func (r *recorder) next(t *testing.T) firing {
	t.Helper()
	select {
	case f := <-r.ch:
		return f
	case <-time.After(5 * time.Second):
		t.Fatal("no fire")
		return firing{}
	}
}

// none asserts no fire arrives within d.
func (r *recorder) none(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case f := <-r.ch:
		t.Fatalf("unexpected fire %+v", f)
	case <-time.After(d):
	}
}

func newLoop(t *testing.T) (*local.Loop, *recorder) {
	r := newRecorder()
	l := local.New(r.fire)
	t.Cleanup(l.Close)
	return l, r
}

// Spec 02 §4.4: the wake comes once, never before resumeAt.
func TestLoop_FiresOnceAtTheTime(t *testing.T) {
	l, r := newLoop(t)
	at := time.Now().Add(30 * time.Millisecond)
	if err := l.Schedule(context.Background(), "s1", "p1", at); err != nil {
		t.Fatal(err)
	}
	f := r.next(t)
	if f.sessionID != "s1" || f.parkID != "p1" {
		t.Fatalf("fired %+v", f)
	}
	if f.at.Before(at) {
		t.Fatalf("fired %v before resumeAt", at.Sub(f.at))
	}
	r.none(t, 60*time.Millisecond)
}

func TestLoop_PastTimeFiresAtOnce(t *testing.T) {
	l, r := newLoop(t)
	if err := l.Schedule(context.Background(), "s", "p", time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	if f := r.next(t); f.parkID != "p" {
		t.Fatalf("fired %+v", f)
	}
}

func TestLoop_CancelPreventsFiring(t *testing.T) {
	l, r := newLoop(t)
	ctx := context.Background()
	if err := l.Schedule(ctx, "s", "p", time.Now().Add(20*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if err := l.Cancel(ctx, "s", "p"); err != nil {
		t.Fatal(err)
	}
	if err := l.Cancel(ctx, "s", "unknown"); err != nil {
		t.Fatalf("Cancel of an unknown park: %v", err)
	}
	r.none(t, 80*time.Millisecond)
}

// Rescheduling a park replaces its wake: only the latest time fires, once.
func TestLoop_RescheduleReplaces(t *testing.T) {
	l, r := newLoop(t)
	ctx := context.Background()
	if err := l.Schedule(ctx, "s", "p", time.Now().Add(10*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(80 * time.Millisecond)
	if err := l.Schedule(ctx, "s", "p", later); err != nil {
		t.Fatal(err)
	}
	if f := r.next(t); f.at.Before(later) {
		t.Fatalf("the replaced wake fired (%v before the new time)", later.Sub(f.at))
	}
	r.none(t, 50*time.Millisecond)
}

// Other parks, of the same or another session, keep their own wakes.
func TestLoop_ParksAreIndependent(t *testing.T) {
	l, r := newLoop(t)
	ctx := context.Background()
	at := time.Now().Add(10 * time.Millisecond)
	for _, k := range [][2]string{{"a", "p1"}, {"a", "p2"}, {"b", "p1"}} {
		if err := l.Schedule(ctx, k[0], k[1], at); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Cancel(ctx, "a", "p2"); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for range 2 {
		f := r.next(t)
		got[f.sessionID+"/"+f.parkID] = true
	}
	if !got["a/p1"] || !got["b/p1"] {
		t.Fatalf("fired %v, want a/p1 and b/p1", got)
	}
	r.none(t, 40*time.Millisecond)
}

func TestLoop_CloseStopsAndRefuses(t *testing.T) {
	r := newRecorder()
	l := local.New(r.fire)
	if err := l.Schedule(context.Background(), "s", "p", time.Now().Add(20*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	l.Close()
	r.none(t, 80*time.Millisecond)
	if err := l.Schedule(context.Background(), "s", "p", time.Now()); !errors.Is(err, local.ErrClosed) {
		t.Fatalf("Schedule after Close: %v, want ErrClosed", err)
	}
	if err := l.Cancel(context.Background(), "s", "p"); err != nil {
		t.Fatalf("Cancel after Close: %v", err)
	}
	l.Close() // idempotent
}

// Close waits for a fire in progress; fire may schedule again (a re-park).
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
