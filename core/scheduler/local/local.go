// Package local implements the session.Scheduler port in process for the local CLI and
// `archmax serve` (DESIGN.md §5, spec 02 §4.4): one timer per park, on the system clock
// (WithClock: a test's fake one). Wakes do not survive the process; the sweep over overdue
// parks covers a restart.
package local

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/archmax-ai/archmax/core/clock"
)

// ErrClosed is returned by Schedule after Close.
var ErrClosed = errors.New("local scheduler: closed")

// Loop is the in-process Scheduler: it calls fire(sessionID, parkID) once at each scheduled
// time, on a goroutine of its own. It is safe for concurrent use; fire may call Schedule and
// Cancel, but not Close.
type Loop struct {
	fire  func(sessionID, parkID string)
	clock clock.Clock

	mu      sync.Mutex
	pending map[key]*entry
	closed  bool
	running sync.WaitGroup // fire calls in progress
}

type key struct{ sessionID, parkID string }

// entry is one armed timer; its identity tells a live timer from a replaced or cancelled one.
type entry struct{ timer clock.Timer }

// Option configures a Loop.
type Option func(*Loop)

// WithClock arms the timers on c instead of the system clock (clock.Real): a test's fake
// clock, which must be the engine's too (session.Config.Clock).
func WithClock(c clock.Clock) Option { return func(l *Loop) { l.clock = clock.OrReal(c) } }

// New returns a Loop that calls fire when a scheduled time comes.
func New(fire func(sessionID, parkID string), opts ...Option) *Loop {
	l := &Loop{fire: fire, clock: clock.Real, pending: map[key]*entry{}}
	for _, o := range opts {
		o(l)
	}
	return l
}

// Schedule arms the wake of park parkID of session sessionID at at, replacing any wake armed
// for that park, so the latest time wins; a time not in the future fires at once. It returns
// ErrClosed after Close. ctx is unused: arming a timer does not block.
func (l *Loop) Schedule(_ context.Context, sessionID, parkID string, at time.Time) error {
	k := key{sessionID, parkID}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if old := l.pending[k]; old != nil {
		old.timer.Stop()
	}
	e := &entry{}
	// The callback waits for l.mu, so it cannot see the map before e is stored.
	// a millisecond late rather than a hair early: resumeAt is kept to the millisecond and a
	// timer may fire before the wall clock reads it (an early wake is re-armed anyway)
	e.timer = l.clock.AfterFunc(at.Sub(l.clock.Now())+time.Millisecond, func() { l.run(k, e) })
	l.pending[k] = e
	return nil
}

// run fires e if it is still the live wake of k: a timer stopped too late to prevent its
// callback (replaced, cancelled or closed meanwhile) does nothing.
func (l *Loop) run(k key, e *entry) {
	l.mu.Lock()
	if l.closed || l.pending[k] != e {
		l.mu.Unlock()
		return
	}
	delete(l.pending, k)
	l.running.Add(1)
	l.mu.Unlock()
	defer l.running.Done()
	l.fire(k.sessionID, k.parkID)
}

// Cancel disarms the wake of park parkID of session sessionID; once it returns, that wake
// will not fire unless scheduled again. An unknown park is not an error.
func (l *Loop) Cancel(_ context.Context, sessionID, parkID string) error {
	k := key{sessionID, parkID}
	l.mu.Lock()
	defer l.mu.Unlock()
	if e := l.pending[k]; e != nil {
		e.timer.Stop()
		delete(l.pending, k)
	}
	return nil
}

// Close disarms every wake, refuses further Schedule calls, and waits for fire calls in
// progress to return. It is idempotent.
func (l *Loop) Close() {
	l.mu.Lock()
	l.closed = true
	for k, e := range l.pending {
		e.timer.Stop()
		delete(l.pending, k)
	}
	l.mu.Unlock()
	l.running.Wait()
}
