// Package continuation carries a turn past the end of the invocation that started it
// (DESIGN.md §4, spec 02 §13): API Gateway answers within ~29 s and Lambda stops at its
// timeout, while a turn may need many model calls.
//
// Every writing entry point (the turn, decide, deliver and wake functions, HTTP or event)
// runs its engine call through Runner.Run. Run gives the call a step deadline — the
// invocation's deadline minus one model call's timeout and a margin, or sooner for an HTTP
// request that answers early — and the engine stops between two committed steps once it
// passes, leaving the session interrupted. Run then starts a continuation: an asynchronous
// invocation of the same function (Lambda Invoke, InvocationType Event) whose payload is an
// Event naming the session and turn. Runner.Handle serves that payload with
// session.Engine.Continue, which resumes from the last commit and may hand on again, as
// many times as the turn needs.
//
// Duplicates have no second effect: Continue skips a turn that has settled or been
// replaced, and a continuation that finds the session held by a live writer fails so that
// Lambda's asynchronous retries (about 1 and 3 minutes later) try again once the writer is
// gone — including a writer that crashed, whose lease expires (session.DefaultLeaseTTL).
package continuation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/archmax-ai/archmax/core/clock"
	"github.com/archmax-ai/archmax/core/metrics"
	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/functions/handlers/metering"
)

// Defaults of Budget.
const (
	// DefaultModelTimeout bounds one model call, its retries included: 4 minutes.
	DefaultModelTimeout = 4 * time.Minute
	// DefaultMargin is kept beyond one model call for the step's tools and commit: 20 s.
	DefaultMargin = 20 * time.Second
	// DefaultCommit is the time before an invocation's hard deadline at which a step still
	// running is cancelled, so the engine commits what ran and releases the lease: 3 s.
	DefaultCommit = 3 * time.Second
	// StartTimeout bounds starting one continuation (the Invoke call): 10 s.
	StartTimeout = 10 * time.Second
)

// Budget is what an invocation keeps free before its deadline: no step starts once the
// remaining time is below ModelTimeout + Margin.
type Budget struct {
	ModelTimeout time.Duration // one model call's bound (default DefaultModelTimeout)
	Margin       time.Duration // tools, commit and hand-off (default DefaultMargin)
	// Commit is kept after the hard cut of a step still running, for the engine's last
	// commit, the lease release and the answer (default DefaultCommit, at most Margin).
	Commit time.Duration
}

// Ref names the turn a continuation carries on.
type Ref struct {
	SessionID string `json:"sessionId"`
	TurnID    string `json:"turnId"`
	// TraceParent is the W3C traceparent of the turn span that handed on (tracing on only):
	// the continuation's turn span is its child, in the same trace (trace.go).
	TraceParent string `json:"traceparent,omitempty"`
}

// Event is a continuation invocation's payload:
//
//	{"archmaxContinue": {"sessionId": "…", "turnId": "…"}}
type Event struct {
	Continue *Ref `json:"archmaxContinue"`
}

// Parse reports whether raw is a continuation Event and returns its Ref. A JSON object
// with the key but without both ids is an *EventError.
func Parse(raw json.RawMessage) (Ref, bool, error) {
	var ev Event
	if json.Unmarshal(raw, &ev) != nil || ev.Continue == nil {
		return Ref{}, false, nil
	}
	if ev.Continue.SessionID == "" || ev.Continue.TurnID == "" {
		return Ref{}, true, &EventError{Reason: "a continuation names its sessionId and turnId"}
	}
	return *ev.Continue, true, nil
}

// EventError is a continuation event no retry can help.
type EventError struct{ Reason string }

func (e *EventError) Error() string { return "continue: " + e.Reason }

// Starter starts a continuation asynchronously; nil means it was accepted (it runs later,
// at least once). Implementations: LambdaStarter (AWS), *InProcess (archmax serve, tests).
type Starter interface {
	Start(ctx context.Context, ref Ref) error
}

// Engines is what a Runner needs of the assembly (*session.Engines implements it).
type Engines = session.SessionEngines

// Runner runs engine calls under an invocation's deadline and serves continuations. Safe
// for concurrent use. A Runner without a Starter runs every call to its end (no step
// deadline): the synchronous mode of a host that cannot start a continuation.
type Runner struct {
	engines Engines
	starter Starter
	budget  Budget
	log     *slog.Logger
	clock   clock.Clock
	short   sync.Once // warns once per container of a timeout shorter than the budget
}

// Option configures a Runner.
type Option func(*Runner)

// WithClock sets the clock the Runner reads its budget on (default clock.Real): the step
// deadline, the hard cut and Now. It must be the clock of the engines' session.Config (the
// engine compares the step deadline with its own Clock). With clock.Real — every production
// assembly — the hard cut is the context's own deadline (context.WithDeadline); with any
// other clock it is a timer on that clock, and the invocation's deadline must come from
// WithInvocationDeadline (a test's virtual invocation, DECISIONS T18-2).
func WithClock(c clock.Clock) Option { return func(r *Runner) { r.clock = clock.OrReal(c) } }

type invocationDeadlineKey struct{}

// WithInvocationDeadline returns ctx carrying t as the invocation's deadline on the
// Runner's clock, in place of ctx's own deadline: a test's virtual invocation of N fake
// milliseconds, over a context whose real deadline (if any) is only a hang guard. Production
// never sets it: a Lambda invocation's deadline is its context's.
func WithInvocationDeadline(ctx context.Context, t time.Time) context.Context {
	return context.WithValue(ctx, invocationDeadlineKey{}, t)
}

// InvocationDeadline is the deadline Run budgets for: the one WithInvocationDeadline set,
// else ctx's own (Lambda's), if any.
func InvocationDeadline(ctx context.Context) (time.Time, bool) {
	if t, ok := ctx.Value(invocationDeadlineKey{}).(time.Time); ok && !t.IsZero() {
		return t, true
	}
	return ctx.Deadline()
}

// NewRunner returns a Runner; starter may be nil (synchronous), log nil (discarded), and
// zero Budget fields take their defaults.
func NewRunner(engines Engines, starter Starter, budget Budget, log *slog.Logger, opts ...Option) *Runner {
	if budget.ModelTimeout <= 0 {
		budget.ModelTimeout = DefaultModelTimeout
	}
	if budget.Margin <= 0 {
		budget.Margin = DefaultMargin
	}
	if budget.Commit <= 0 {
		budget.Commit = min(DefaultCommit, budget.Margin)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Runner{engines: engines, starter: starter, budget: budget, log: log, clock: clock.Real}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Async reports whether the Runner can start continuations (it has a Starter).
func (r *Runner) Async() bool { return r != nil && r.starter != nil }

// Now is the time on the Runner's clock; Options are instants on it (a nil Runner: time.Now).
func (r *Runner) Now() time.Time {
	if r == nil || r.clock == nil {
		return time.Now()
	}
	return r.clock.Now()
}

// cutAt returns ctx cancelled at instant at of the Runner's clock.
func (r *Runner) cutAt(ctx context.Context, at time.Time) (context.Context, context.CancelFunc) {
	if r.clock == clock.Real {
		return context.WithDeadline(ctx, at)
	}
	work, cancel := context.WithCancelCause(ctx)
	d := at.Sub(r.clock.Now())
	if d <= 0 {
		cancel(context.DeadlineExceeded)
		return work, func() { cancel(context.Canceled) }
	}
	t := r.clock.AfterFunc(d, func() { cancel(context.DeadlineExceeded) })
	return work, func() { t.Stop(); cancel(context.Canceled) }
}

// Options bound one Run beyond the invocation's own deadline.
// Both are instants on the Runner's clock (Runner.Now).
type Options struct {
	// YieldBy: start no step after this instant (an HTTP request answering 202 in time);
	// zero = only the invocation's budget.
	YieldBy time.Time
	// CutBy: cancel a step still running at this instant minus Budget.Commit (API Gateway's
	// limit for a request); zero = only the invocation's deadline.
	CutBy time.Time
}

// ContinuationStartError: the turn was to be handed to a continuation with every step
// committed — it stopped at the invocation's deadline, or at the request's (ByRequest: an
// HTTP request's wait ended, at once when it named none, or its time ran out) — but the
// continuation could not be started. The session is interrupted; its next call continues
// from State (spec 02 §13). HTTP 503.
type ContinuationStartError struct {
	SessionID, TurnID, State string
	ByRequest                bool
	Cause                    error
}

func (e *ContinuationStartError) Error() string {
	when := "at the invocation's deadline"
	if e.ByRequest {
		when = "when the request's wait or time ran out (a request without Prefer: wait hands its turn on at once)"
	}
	return fmt.Sprintf("Turn '%s' of session '%s' was handed on in state '%s' %s, but its continuation could not be started (%v); the session is interrupted and its next message continues from there.",
		e.TurnID, e.SessionID, e.State, when, e.Cause)
}
func (e *ContinuationStartError) Unwrap() error { return e.Cause }

// Name returns the error name.
func (e *ContinuationStartError) Name() string { return "ContinuationStartError" }

// Run runs one engine call (Send, Decide, Deliver, Wake, Continue) within this invocation:
// the call gets a step deadline (session.WithStepDeadline) of the invocation's deadline
// minus Budget, or opts.YieldBy if sooner, and is cancelled Budget.Commit before the
// invocation's deadline or opts.CutBy. A call that stops at either — an Outcome of kind
// running, or an interrupted *session.TurnAbortedError — is handed to a continuation and
// answered as kind running. Errors: the call's own, or *ContinuationStartError.
//
// Without a Starter the call runs unbounded by steps (only the hard cut applies).
//
// The invocation's deadline is InvocationDeadline(ctx): on AWS the Lambda context's. Every
// instant is read on the Runner's clock (WithClock), so a test drives a whole chain of
// invocations in virtual time.
func (r *Runner) Run(ctx context.Context, opts Options, call func(context.Context) (*session.Outcome, error)) (*session.Outcome, error) {
	deadline, hasDeadline := InvocationDeadline(ctx)
	cut, hasCut := deadline, hasDeadline
	if !opts.CutBy.IsZero() && (!hasCut || opts.CutBy.Before(cut)) {
		cut, hasCut = opts.CutBy, true
	}
	work := ctx
	if hasCut {
		var cancel context.CancelFunc
		work, cancel = r.cutAt(ctx, cut.Add(-r.budget.Commit))
		defer cancel()
	}
	// byRequest: the turn stops at the request's instant (opts), not the invocation's deadline
	cutByRequest := hasCut && !opts.CutBy.IsZero() && cut.Equal(opts.CutBy)
	byRequest := false
	if r.Async() {
		var yield time.Time
		if hasDeadline {
			yield = deadline.Add(-(r.budget.ModelTimeout + r.budget.Margin))
			if now := r.clock.Now(); now.After(yield) {
				r.short.Do(func() {
					r.log.WarnContext(ctx, "the invocation is shorter than one model call's timeout plus the margin: every invocation runs a single step; raise the function's timeout or lower ARCHMAX_MODEL_TIMEOUT",
						"remaining", deadline.Sub(now).String(), "modelTimeout", r.budget.ModelTimeout.String(), "margin", r.budget.Margin.String())
				})
			}
		}
		if !opts.YieldBy.IsZero() && (yield.IsZero() || opts.YieldBy.Before(yield)) {
			yield, byRequest = opts.YieldBy, true
		}
		work = session.WithStepDeadline(work, yield)
	}
	began := r.clock.Now()
	work, handOff := traceHandOff(work)
	out, err := call(work)
	defer func() { metering.Turn(ctx, out, r.clock.Now().Sub(began)) }()
	var ta *session.TurnAbortedError
	if r.Async() && errors.As(err, &ta) && ta.Interrupted && ctx.Err() == nil {
		byRequest = cutByRequest // cut while a step ran: at the instant cut names
		out, err = &session.Outcome{SessionID: ta.SessionID, TurnID: ta.TurnID, Kind: session.KindRunning,
			Status: session.StatusRunning, State: ta.State, Disposition: ta.Disposition, Turn: ta.Turn}, nil
	}
	if err != nil || out == nil || out.Kind != session.KindRunning || !r.Async() {
		return out, err
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), StartTimeout)
	defer cancel()
	ref := Ref{SessionID: out.SessionID, TurnID: out.TurnID, TraceParent: handOff(out.SessionID)}
	if err := r.starter.Start(sctx, ref); err != nil {
		r.log.ErrorContext(ctx, "continuation not started; the session stays interrupted", "sessionId", ref.SessionID, "turnId", ref.TurnID, "error", err.Error())
		return nil, &ContinuationStartError{SessionID: ref.SessionID, TurnID: ref.TurnID, State: out.State, ByRequest: byRequest, Cause: err}
	}
	r.log.InfoContext(ctx, "turn handed to a continuation", "sessionId", ref.SessionID, "turnId", ref.TurnID, "state", out.State)
	return out, nil
}

// Result is a continuation's answer (also its log line).
type Result struct {
	Action    string              `json:"action"` // "continue"
	SessionID string              `json:"sessionId"`
	TurnID    string              `json:"turnId"`
	Outcome   session.OutcomeKind `json:"outcome,omitempty"` // running: handed on again
	Skipped   string              `json:"skipped,omitempty"`
}

// Handle serves a continuation Event: Engine.Continue of the turn under Run, so it hands
// on again if it runs out of time. A settled, replaced or deleted turn is a skip (nil
// error: a duplicate has no effect). Errors — returned so the platform retries the
// invocation: *session.SessionNotResumableError while another writer holds the session,
// model and store errors; *EventError for a malformed ref (not worth retrying, but
// reported).
func (r *Runner) Handle(ctx context.Context, ref Ref) (Result, error) {
	res := Result{Action: "continue", SessionID: ref.SessionID, TurnID: ref.TurnID}
	ctx = session.ContextWithTraceParent(ctx, ref.TraceParent) // the turn's trace goes on (trace.go)
	// counted at the end: under the session's workflow, once looked up
	defer metrics.From(ctx).Add(metrics.Continuations, 1)
	if _, err := spec.CheckSessionID(ref.SessionID); err != nil {
		return res, &EventError{Reason: err.Error()}
	}
	id := ref.SessionID
	var skipped *session.ContinueSkipped
	out, err := r.Run(ctx, Options{}, func(work context.Context) (*session.Outcome, error) {
		eng, _, err := session.EngineOf(work, r.engines, id)
		if err != nil {
			return nil, err
		}
		out, s, err := eng.Continue(work, id, ref.TurnID)
		skipped = s
		return out, err
	})
	var gone *session.SessionNotFoundError
	switch {
	case errors.As(err, &gone):
		res.Skipped = "the session does not exist (deleted, or never ran)"
	case err != nil:
		r.log.WarnContext(ctx, "continuation failed; the platform retries it", "sessionId", id, "turnId", ref.TurnID, "error", err.Error())
		return res, err
	case skipped != nil:
		res.Skipped = skipped.Reason
	default:
		res.Outcome = out.Kind
	}
	if res.Skipped != "" {
		r.log.InfoContext(ctx, "continuation skipped", "sessionId", id, "turnId", ref.TurnID, "reason", res.Skipped)
	} else {
		r.log.InfoContext(ctx, "continuation ran", "sessionId", id, "turnId", ref.TurnID, "outcome", string(res.Outcome))
	}
	return res, nil
}
