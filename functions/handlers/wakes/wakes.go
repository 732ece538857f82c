// Package wakes is the body of the wake Lambda (DESIGN.md §5). It takes two events:
//
//   - {"sessionId": "…", "parkId": "…"} — the input of the EventBridge Scheduler one-time
//     schedule created for a timed park (core/scheduler/eventbridge.Wake): that park is
//     woken if it is still the live one and due; an early, late or duplicate wake is a
//     no-op that says why.
//   - an EventBridge "Scheduled Event" (the sweep rule, every 5 minutes): every overdue
//     timed park found through the sparse GSI is woken — the safety net behind lost or
//     failed schedules.
//
// A wake the engine cannot take now (the session is busy: SessionNotResumableError, or a
// store error) returns an error, so Lambda's and Scheduler's retries deliver it again; the
// park id makes every retry idempotent.
package wakes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/archmax-ai/archmax/core/identity"
	"github.com/archmax-ai/archmax/core/metrics"
	"github.com/archmax-ai/archmax/core/scheduler/eventbridge"
	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/functions/handlers/continuation"
	"github.com/archmax-ai/archmax/functions/handlers/metering"
)

// SweepLimit is how many overdue parks one sweep wakes at most; the rest wait for the
// next sweep (oldest due first).
const SweepLimit = 100

// Engines is what a wake needs of the assembly (functions/handlers/assembly.Engines).
type Engines interface {
	Engine(ctx context.Context, workflow string) (*session.Engine, error)
	SessionWorkflow(ctx context.Context, sessionID string) (string, error)
	Sweep(ctx context.Context, now time.Time, limit int, run session.RunFunc) (session.SweepResult, error)
}

// Result is the function's answer (also its log line): Action "wake" with the session,
// park and the outcome kind or the reason it was skipped; or Action "sweep" with counts.
type Result struct {
	Action    string               `json:"action"`
	SessionID string               `json:"sessionId,omitempty"`
	ParkID    string               `json:"parkId,omitempty"`
	Outcome   session.OutcomeKind  `json:"outcome,omitempty"`
	Skipped   string               `json:"skipped,omitempty"`
	Sweep     *session.SweepResult `json:"sweep,omitempty"`
}

// EventError is an event of neither shape; retrying it cannot help.
type EventError struct{ Reason string }

func (e *EventError) Error() string { return "wake: unrecognised event: " + e.Reason }

// Handler serves wake events. Clock gives the sweep's now (time.Now when nil).
type Handler struct {
	engines Engines
	run     *continuation.Runner
	log     *slog.Logger
	clock   func() time.Time
}

// New returns a Handler whose wakes run under run (a turn that outlives the invocation
// continues in another; nil runs every wake to its end); log may be nil (discarded).
func New(engines Engines, run *continuation.Runner, log *slog.Logger, clock func() time.Time) *Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if clock == nil {
		clock = time.Now
	}
	if run == nil {
		run = continuation.NewRunner(engines, nil, continuation.Budget{}, log)
	}
	return &Handler{engines: engines, run: run, log: log, clock: clock}
}

// event is the union of the two accepted shapes.
type event struct {
	eventbridge.Wake
	Source     string `json:"source"`
	DetailType string `json:"detail-type"`
}

// Handle serves one event. Errors: *EventError for an unrecognised event; the engine's
// errors for a wake that should be retried.
func (h *Handler) Handle(ctx context.Context, raw json.RawMessage) (any, error) {
	ctx = session.WithCaller(ctx, identity.Wake) // a timer's delivery is the system's
	if ref, ok, err := continuation.Parse(raw); ok {
		if err != nil {
			return nil, err
		}
		return h.run.Handle(ctx, ref)
	}
	var ev event
	if err := json.Unmarshal(raw, &ev); err != nil {
		return Result{}, &EventError{Reason: "not a JSON object"}
	}
	switch {
	case ev.SessionID != "":
		return h.Wake(ctx, ev.SessionID, ev.ParkID)
	case ev.DetailType == "Scheduled Event":
		return h.Sweep(ctx), nil
	default:
		return Result{}, &EventError{Reason: `want {"sessionId","parkId"} or an EventBridge Scheduled Event`}
	}
}

// Sweep wakes every overdue timed park (up to SweepLimit, oldest due first). Each woken
// session runs its first step here and goes on in its own continuation, so one long turn
// does not hold up the rest. It then publishes the notifications sessions left owed (a
// process that died between a commit and its publish, a bus that was failing). A partial
// failure is logged and left to the next sweep.
func (h *Handler) Sweep(ctx context.Context) Result {
	ctx = session.WithCaller(ctx, identity.Wake)
	res, err := h.engines.Sweep(ctx, h.clock(), SweepLimit, func(ctx context.Context, call func(context.Context) (*session.Outcome, error)) (*session.Outcome, error) {
		return h.run.Run(ctx, continuation.Options{YieldBy: h.run.Now()}, call)
	})
	metering.Sweep(ctx, res)
	if res.Due > 0 || res.Published > 0 || err != nil {
		h.log.InfoContext(ctx, "sweep", "due", res.Due, "woken", res.Woken, "continued", res.Continued, "skipped", res.Skipped, "failed", res.Failed,
			"published", res.Published)
	}
	if err != nil {
		h.log.WarnContext(ctx, "sweep: some wakes failed; the next sweep retries them", "error", err.Error())
	}
	return Result{Action: "sweep", Sweep: &res}
}

// Wake wakes park parkID of session sessionID — the body of a Scheduler payload, for
// callers that hold the pair already (`archmax serve`'s timers). A session that no longer
// exists is a skip; a busy session or a store error is returned for a retry.
func (h *Handler) Wake(ctx context.Context, sessionID, parkID string) (Result, error) {
	ctx = session.WithCaller(ctx, identity.Wake)
	res := Result{Action: "wake", SessionID: sessionID, ParkID: parkID}
	if parkID == "" {
		return res, &EventError{Reason: "a scheduled wake names its parkId"}
	}
	eng, _, err := session.EngineOf(ctx, h.engines, sessionID)
	var gone *session.SessionNotFoundError
	if errors.As(err, &gone) {
		res.Skipped = "the session no longer exists"
		metrics.From(ctx).Add(metrics.WakesSkipped, 1)
		h.log.InfoContext(ctx, "wake skipped", "sessionId", sessionID, "parkId", parkID, "reason", res.Skipped)
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("wake %s: %w", sessionID, err)
	}
	var skipped *session.WakeSkipped
	out, err := h.run.Run(ctx, continuation.Options{}, func(ctx context.Context) (*session.Outcome, error) {
		out, s, err := eng.Wake(ctx, sessionID, parkID)
		skipped = s
		return out, err
	})
	var deleting *session.SessionDeletingError
	if errors.As(err, &deleting) { // a deletion began (RD22-2): the park goes with the session
		res.Skipped = "the session is being deleted"
		metrics.From(ctx).Add(metrics.WakesSkipped, 1)
		h.log.InfoContext(ctx, "wake skipped", "sessionId", sessionID, "parkId", parkID, "reason", res.Skipped)
		return res, nil
	}
	if err != nil {
		h.log.WarnContext(ctx, "wake failed; it will be retried", "sessionId", sessionID, "parkId", parkID, "error", err.Error())
		return res, err
	}
	if skipped != nil {
		res.Skipped = skipped.Reason
		metrics.From(ctx).Add(metrics.WakesSkipped, 1)
		h.log.InfoContext(ctx, "wake skipped", "sessionId", sessionID, "parkId", parkID, "reason", skipped.Reason)
		return res, nil
	}
	res.Outcome = out.Kind
	metrics.From(ctx).Add(metrics.WakesOnTime, 1)
	h.log.InfoContext(ctx, "woke", "sessionId", sessionID, "parkId", parkID, "outcome", string(out.Kind), "state", out.State)
	return res, nil
}
