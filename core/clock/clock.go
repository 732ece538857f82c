// Package clock is the seam between code that reads the time or waits for it and the tests
// that drive it (DECISIONS T18-*): Real is the system clock, which production always uses; a
// *Fake moves only when a test advances it, so the deadlines, budgets and timers it drives do
// not depend on how fast the machine runs the test.
package clock

import (
	"slices"
	"sync"
	"time"
)

// Clock tells the time and runs a function once a duration has passed on it.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f, on a goroutine of its own for Real, once d has passed on this clock;
	// the Timer's Stop prevents a call that has not happened yet.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc call. Stop reports whether it prevented the call.
type Timer interface{ Stop() bool }

// Real is the system clock: time.Now and time.AfterFunc.
var Real Clock = realClock{}

type realClock struct{}

func (realClock) Now() time.Time                            { return time.Now() }
func (realClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// OrReal is c, or Real when c is nil.
func OrReal(c Clock) Clock {
	if c == nil {
		return Real
	}
	return c
}

// Fake is a manual clock for tests: its time changes only through Advance. Timers armed on
// it fire when an Advance reaches their time, in time order (then arming order), called on
// the goroutine that advances, after the clock reads the new time and before Advance
// returns — so a test knows every timer due has fired. A timer armed for a time not after
// now fires at once on a goroutine of its own (as time.AfterFunc's does), so arming one
// while holding a lock its function takes cannot deadlock. Functions must not block: they
// run on the advancing goroutine. Safe for concurrent use.
type Fake struct {
	mu     sync.Mutex
	now    time.Time
	seq    int
	timers []*fakeTimer
	armed  chan struct{} // closed and replaced whenever a timer is armed
}

type fakeTimer struct {
	c    *Fake
	at   time.Time
	seq  int
	f    func()
	done bool // fired or stopped
}

// NewFake returns a Fake reading start.
func NewFake(start time.Time) *Fake { return &Fake{now: start, armed: make(chan struct{})} }

// Now returns the fake's time.
func (c *Fake) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc arms f for d from now (see Fake for when it runs).
func (c *Fake) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	t := &fakeTimer{c: c, at: c.now.Add(d), seq: c.seq, f: f}
	if d <= 0 {
		t.done = true
		go f()
		return t
	}
	c.timers = append(c.timers, t)
	close(c.armed)
	c.armed = make(chan struct{})
	return t
}

// Stop implements Timer.
func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if t.done {
		return false
	}
	t.done = true
	t.c.timers = slices.DeleteFunc(t.c.timers, func(o *fakeTimer) bool { return o == t })
	return true
}

// Advance moves the clock d forward and fires the timers due by then. d must not be negative.
func (c *Fake) Advance(d time.Duration) {
	if d < 0 {
		panic("clock: Advance by a negative duration")
	}
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*fakeTimer
	c.timers = slices.DeleteFunc(c.timers, func(t *fakeTimer) bool {
		if t.at.After(c.now) {
			return false
		}
		t.done = true
		due = append(due, t)
		return true
	})
	c.mu.Unlock()
	slices.SortFunc(due, func(a, b *fakeTimer) int {
		if n := a.at.Compare(b.at); n != 0 {
			return n
		}
		return a.seq - b.seq
	})
	for _, t := range due {
		t.f()
	}
}

// Pending is how many timers are armed and have neither fired nor been stopped.
func (c *Fake) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// Armed returns a channel closed at the next arming of a timer (to wait, without polling,
// for a goroutine to reach its wait on the clock before advancing it).
func (c *Fake) Armed() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.armed
}
