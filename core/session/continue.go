package session

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

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
	// BudgetBase is the session's usage when the turn took its first step: the turn's
	// budget counts from it (budget.go).
	BudgetBase *Usage `json:"budgetBase,omitempty"`
}

// newTurnID returns a fresh turn id: "t" + 16 lowercase base32 characters.
func newTurnID() string { return "t" + newMessageID()[1:] }

// TurnIDFor is the turn id a request identified by name opens (WithTurnID): "t" + 16
// lowercase base32 characters of its SHA-256, the shape of a fresh turn id. A host derives
// it from what makes the request the same request (an Idempotency-Key with its caller,
// method and path; an event id with its source), so the request's every repeat names the
// same turn.
func TurnIDFor(name string) string {
	sum := sha256.Sum256([]byte("archmax turn\n" + name))
	return "t" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:10]))
}

// SessionIDFor is the session id a start identified by name opens when its trigger names
// none (in place of spec.MintSessionID's random one): "session-" and the RFC 9562
// name-based (SHA-1) UUID of name, the shape of a minted id — so a repeated start names the
// session its first attempt opened.
func SessionIDFor(name string) string {
	return "session-" + uuid.NewSHA1(requestNamespace, []byte(name)).String()
}

// requestNamespace is the UUID namespace of SessionIDFor.
var requestNamespace = uuid.MustParse("5d0f3c2e-8a41-5b6e-9c7d-2f1e0a9b8c71")

type requestTurnKey struct{}

// WithTurnID returns a context under which the call opens its turn as id (TurnIDFor)
// instead of a fresh one, and is recognised when it is repeated: a Send, Decide, Reply or
// Deliver that finds the session's current turn to be id opens nothing and applies nothing —
// it carries that turn on when it is interrupted (as Continue does; a turn given up on, see
// givenUp, is answered as it stands) and otherwise answers the outcome the turn settled
// with — and one that finds id among the session's last MaxRequestTurns request turns, now
// superseded by a newer call, is refused with *TurnSupersededError. The session records the
// id with the turn's first commit (record.RequestTurns), so no crash between that commit
// and the host's own record of the request lets a repeat open a second turn. A call
// recognised this way is not guarded again (WithGuard): the id names the request, caller
// included, that was authorized when it opened the turn. Continue, Wake and sub-workflow
// children ignore it.
func WithTurnID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestTurnKey{}, id)
}

// requestTurnOf is the turn id WithTurnID set ("" when none).
func requestTurnOf(ctx context.Context) string {
	id, _ := ctx.Value(requestTurnKey{}).(string)
	return id
}

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

// MaxRequestTurns is how many turns opened under WithTurnID a session remembers.
const MaxRequestTurns = 32

// beginRequestTurn marks the call as the new turn id of a request (WithTurnID), remembered
// among the session's request turns from its first commit on.
func (r *run) beginRequestTurn(id string) {
	r.rec.CurrentTurn = &turnMark{ID: id, By: callerRef(r.ctx)}
	r.rec.RequestTurns = append(r.rec.RequestTurns, id)
	if n := len(r.rec.RequestTurns); n > MaxRequestTurns {
		r.rec.RequestTurns = r.rec.RequestTurns[n-MaxRequestTurns:]
	}
}

// repeated answers a request whose turn id the session already has (WithTurnID): the
// current turn carried on when it is interrupted, else the outcome it settled with (nothing
// written); a turn a newer call superseded is *TurnSupersededError. ok is false for a
// request the session has not seen: the call opens its turn.
func (r *run) repeated(id string) (out *Outcome, ok bool, err error) {
	ct := r.rec.CurrentTurn
	switch {
	case ct != nil && ct.ID == id:
		if r.rec.Status == StatusRunning && !givenUp(r.rec.LastError) {
			out, err = r.carryOn()
			return out, true, err
		}
		r.steps, r.disposition = ct.Steps, ct.Disposition
		return r.outcome(), true, nil
	case slices.Contains(r.rec.RequestTurns, id):
		current := ""
		if ct != nil {
			current = ct.ID
		}
		return nil, true, &TurnSupersededError{SessionID: r.id, TurnID: id, CurrentTurnID: current}
	}
	return nil, false, nil
}

// appliedTurn reports whether a committed head's record names turn id as its current turn
// or among its request turns (reading only those fields of the body).
func appliedTurn(body []byte, id string) bool {
	if id == "" || len(body) == 0 {
		return false
	}
	var rec struct {
		CurrentTurn  *turnMark `json:"currentTurn"`
		RequestTurns []string  `json:"requestTurns"`
	}
	if json.Unmarshal(body, &rec) != nil {
		return false
	}
	return rec.CurrentTurn != nil && rec.CurrentTurn.ID == id || slices.Contains(rec.RequestTurns, id)
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
