package session

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/archmax-ai/archmax/core/identity"
	"github.com/archmax-ai/archmax/core/model"
)

// turnMark is the session record's note of its latest call: the turn id every commit of
// the call carries, its disposition, and the loop steps the turn has taken across all the
// invocations that ran it (the step limit counts per turn, not per invocation).
type turnMark struct {
	ID          string      `json:"id"`
	Disposition Disposition `json:"disposition,omitempty"`
	Steps       int         `json:"steps,omitempty"`
	// By is who made the call (WithCaller): the summary's turnBy.
	By *identity.Principal `json:"by,omitempty"`
}

// newTurnID returns a fresh turn id: "t" + 16 lowercase base32 characters.
func newTurnID() string { return "t" + newMessageID()[1:] }

// StrandedAfter is how long a running session may go without a commit before the sweep
// takes it for stranded — its writer crashed and every retry of its continuation was lost —
// and continues it (plus one lease TTL, so a live writer's lease has lapsed): no invocation
// runs longer than Lambda's 15 minutes, and every live one commits at least once in that time.
const StrandedAfter = 15 * time.Minute

// MaxTurnAttempts bounds how many attempts of a turn may fail in a row before no host
// mechanism — a continuation's retry, the sweep, a restart of `archmax serve` — carries it
// on by itself: the session stays interrupted with its lastError, and the next message
// starts a new turn from where it stopped.
const MaxTurnAttempts = 5

// givenUp reports whether a turn's last failure ends its automatic retries: a failure no
// retry can fix (not retryable, e.g. a model ValidationException or AccessDeniedException),
// or the MaxTurnAttempts-th failure in a row.
func givenUp(te *TurnError) bool {
	return te != nil && (!te.Retryable || max(te.Attempts, 1) >= MaxTurnAttempts)
}

type stepDeadlineKey struct{}

type turnOpenedKey struct{}

// WithTurnOpened returns a context under which a call reports its first commit — the
// moment the request has left a durable mark (the turn opened, or a resume applied) — by
// calling fn once with the session and turn ids, on the call's goroutine. Hosts use it to
// record an accepted request (the Idempotency-Key of an asynchronous answer). Continue
// never calls it.
func WithTurnOpened(ctx context.Context, fn func(sessionID, turnID string)) context.Context {
	return context.WithValue(ctx, turnOpenedKey{}, fn)
}

// WithStepDeadline returns a context under which a call starts no new loop step at or
// after t (DESIGN.md §4): it commits what ran, leaves the session running with its lease
// released — interrupted — and returns an Outcome of kind KindRunning, so a fresh
// invocation can carry the turn on with Continue. A host sets t to its invocation's
// deadline minus one model call's timeout and a margin. A zero t removes the bound.
//
// Under the bound a resume (decision, delivery, wake) is committed before its first step
// (so a cut first step leaves an interrupted session, not a lost resume), and a
// continuation always takes one step before it may stop again: every invocation progresses.
func WithStepDeadline(ctx context.Context, t time.Time) context.Context {
	return context.WithValue(ctx, stepDeadlineKey{}, t)
}

// StepDeadline returns the bound set by WithStepDeadline, if any.
func StepDeadline(ctx context.Context) (time.Time, bool) {
	t, ok := ctx.Value(stepDeadlineKey{}).(time.Time)
	return t, ok && !t.IsZero()
}

// beginTurn marks the call as a new turn with a fresh id (committed with its first commit).
func (r *run) beginTurn() {
	r.rec.CurrentTurn = &turnMark{ID: newTurnID(), By: callerRef(r.ctx)}
}

// turnID is the id of the call's turn ("" before beginTurn on a record that never had one).
func (r *run) turnID() string {
	if r.rec.CurrentTurn == nil {
		return ""
	}
	return r.rec.CurrentTurn.ID
}

// yieldDue reports whether the loop must stop before its next step: the step deadline has
// passed, a resume is committed, and a continuation has made progress.
func (r *run) yieldDue() bool {
	t, ok := StepDeadline(r.ctx)
	if !ok || r.resumeUncommitted || (r.continuing && r.callSteps == 0) {
		return false
	}
	return !r.e.cfg.Clock().Before(t)
}

// ContinueSkipped says why Continue had nothing to do.
type ContinueSkipped struct{ Reason string }

// Continue carries turn turnID of session id on from its last commit (DESIGN.md §4, spec
// 02 §13): the session must be interrupted — stored running with no live writer — in that
// same turn. The loop resumes at the committed position with the turn's step count; no
// message is added and nothing committed is redone. It settles like any call (or yields
// again under WithStepDeadline, kind KindRunning).
//
// A turn that has settled, was replaced by a newer call, or a session that never ran is
// not continued: the result is a *ContinueSkipped with the reason, so a duplicated or
// retried continuation has no second effect. An empty turnID continues whatever turn the
// session is in (the sweep's recovery of a stranded session). A turn whose last attempt
// failed for good (a failure that is not retryable, or MaxTurnAttempts failures in a row;
// the summary's lastError) is skipped too, so neither Lambda's retries of its continuation
// nor the sweep call the model again for it: the next message starts a new turn. Errors:
// *SessionNotResumableError while another writer holds the session (retry later),
// *TurnAbortedError, *model.CallError and store errors as for Send.
func (e *Engine) Continue(ctx context.Context, id, turnID string) (*Outcome, *ContinueSkipped, error) {
	if err := refuseChild(id); err != nil {
		return nil, nil, err
	}
	var skipped *ContinueSkipped
	out, err := e.withSessionOf(ctx, id, false, func(r *run) (*Outcome, error) {
		switch {
		case r.isNew:
			skipped = &ContinueSkipped{Reason: "the session has not run"}
		case turnID != "" && r.turnID() != turnID:
			skipped = &ContinueSkipped{Reason: fmt.Sprintf("turn '%s' is no longer the session's current turn (now '%s')", turnID, r.turnID())}
		case r.rec.Status != StatusRunning:
			skipped = &ContinueSkipped{Reason: fmt.Sprintf("turn '%s' has settled (status %s)", turnID, r.rec.Status)}
		case givenUp(r.rec.LastError):
			le := r.rec.LastError
			skipped = &ContinueSkipped{Reason: fmt.Sprintf("turn '%s' stopped on %s (retryable %t, %d failed attempts in a row): it is not retried; a new message starts a new turn",
				r.turnID(), le.Code, le.Retryable, max(le.Attempts, 1))}
			if r.head.ParkDue != "" {
				// a head committed before failures were bounded: take it out of the sweep's index
				r.continuing, r.failing = true, true
				if ct := r.rec.CurrentTurn; ct != nil {
					r.steps, r.disposition = ct.Steps, ct.Disposition
				}
				if err := r.commit(); err != nil {
					return nil, err
				}
			}
		}
		if skipped != nil {
			return nil, nil
		}
		return r.carryOn()
	})
	return out, skipped, err
}

// carryOn continues the session's interrupted turn from its last commit: the turn's id,
// disposition and step count restored, the loop resumed, the call settled.
func (r *run) carryOn() (*Outcome, error) {
	r.continuing = true
	if ct := r.rec.CurrentTurn; ct != nil {
		r.steps, r.disposition = ct.Steps, ct.Disposition
	} else { // a record from before turn ids: carry it on as a new turn
		r.beginTurn()
	}
	s, err := r.loop()
	if err != nil {
		return nil, r.abandon(err)
	}
	return r.settle(s)
}

// turnErrorOf describes err for the session summary: a named error by its name and text
// (a model failure with the provider's code and retryability; any other named error is a
// refusal a retry repeats); anything else generically — its detail is for the host's log,
// not the session's readers — and presumed transient (a store or network failure), so
// retryable within MaxTurnAttempts.
func turnErrorOf(turnID string, err error, at string) *TurnError {
	te := &TurnError{TurnID: turnID, Code: "InternalError", Message: "The turn failed unexpectedly; the host logged the cause.", At: at, Retryable: true}
	var ce *model.CallError
	var named interface{ Name() string }
	switch {
	case errors.As(err, &ce):
		te.Code, te.Retryable = ce.Name(), ce.Retryable
		te.Message = fmt.Sprintf("The model provider failed: %s (HTTP %d): %s", ce.Code, ce.Status, ce.Message)
	case errors.As(err, &named):
		te.Code, te.Message, te.Retryable = named.Name(), err.Error(), false
	}
	return te
}
