package clock_test

import (
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/clock"
)

var start = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// Timers fire when an Advance reaches them, in time order, before Advance returns; a stopped
// timer never fires.
func TestFakeFiresInOrderOnAdvance(t *testing.T) {
	c := clock.NewFake(start)
	var got []string
	c.AfterFunc(30*time.Millisecond, func() { got = append(got, "b") })
	c.AfterFunc(10*time.Millisecond, func() { got = append(got, "a") })
	stopped := c.AfterFunc(20*time.Millisecond, func() { got = append(got, "stopped") })
	late := c.AfterFunc(time.Second, func() { got = append(got, "late") })
	if !stopped.Stop() || stopped.Stop() {
		t.Error("Stop of an armed timer: want true once, then false")
	}
	c.Advance(29 * time.Millisecond)
	if len(got) != 1 || got[0] != "a" {
		t.Fatalf("after 29 ms: %v, want [a]", got)
	}
	c.Advance(time.Millisecond)
	if len(got) != 2 || got[1] != "b" || c.Pending() != 1 {
		t.Fatalf("after 30 ms: %v (pending %d), want [a b] and one pending", got, c.Pending())
	}
	if !c.Now().Equal(start.Add(30 * time.Millisecond)) {
		t.Errorf("Now = %v", c.Now())
	}
	c.Advance(time.Hour)
	if len(got) != 3 || got[2] != "late" || late.Stop() {
		t.Errorf("after an hour: %v, and a fired timer does not stop", got)
	}
}

// A timer armed for now or earlier fires at once, on its own goroutine (not under the
// caller's locks); Armed tells a waiter that a timer was armed.
func TestFakeDueTimerFiresAtOnce(t *testing.T) {
	c := clock.NewFake(start)
	fired := make(chan struct{})
	armed := c.Armed()
	c.AfterFunc(0, func() { close(fired) })
	select {
	case <-fired:
	case <-time.After(time.Minute): // a hang guard only
		t.Fatal("a due timer did not fire")
	}
	select {
	case <-armed:
		t.Fatal("a timer that fired at once counts as armed")
	default:
	}
	c.AfterFunc(time.Second, func() {})
	select {
	case <-armed:
	default:
		t.Fatal("Armed was not closed by an arming")
	}
}

func TestOrReal(t *testing.T) {
	if clock.OrReal(nil) != clock.Real {
		t.Error("OrReal(nil) is not Real")
	}
	f := clock.NewFake(start)
	if clock.OrReal(f) != clock.Clock(f) {
		t.Error("OrReal(f) is not f")
	}
	before := time.Now()
	now := clock.Real.Now()
	if after := time.Now(); now.Before(before) || now.After(after) {
		t.Errorf("Real.Now = %v, not between %v and %v", now, before, after)
	}
}
