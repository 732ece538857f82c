package session

import (
	"context"
	"errors"

	"github.com/archmax-ai/archmax/core/events"
	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/transcript"
)

// stepResult is what one iteration of the state loop did.
type stepResult struct {
	yielded bool        // children of this step are still running: stop, the session interrupted
	moved   bool        // the position changed; keep looping
	settled *settlement // the call settles
	failure string      // the state failed: route through on_error (else rejected)
}

// loop runs the state loop (spec 02 §1.5) until the call settles. Every agent model call,
// automated-state run and move counts one step; past the limit the call settles rejected
// without consulting on_error.
func (r *run) loop() (settlement, error) {
	for {
		if err := r.ctx.Err(); err != nil {
			return settlement{}, err
		}
		if r.yieldDue() {
			return settlement{status: StatusRunning, yielded: true}, nil
		}
		st := r.sp.State(r.rec.State)
		if st == nil {
			// the position is gone from the spec (edited while the turn was interrupted or
			// parked): it continues where an edited park does, as a turn opening there would
			to := r.fallbackState(r.rec.State)
			r.emit(events.WorkflowReset, map[string]any{"entry": to})
			r.rec.State, r.rec.StateTurns = to, nil
			st = r.sp.State(to)
		}
		if s := r.budgetStop(); s != nil { // a budget reached by the last step (budget.go)
			return *s, nil
		}
		if !r.step() {
			return settlement{status: StatusRejected, reason: stepLimitExceeded}, nil
		}
		stepDone := r.traceStep(st) // the step's span (trace.go)
		res, pending, err := r.pendingStep()
		switch {
		case pending:
		case st.Type == "agent":
			res, err = r.agentStep(st)
		case st.Type == "code":
			res, err = r.codeStep(st)
		case st.Type == "grader":
			res, err = r.graderStep(st)
		case st.Type == "human":
			res, err = r.presentDecision(st)
		default:
			res = stepResult{settled: &settlement{status: StatusRejected, reason: notSupportedYet(st.Type, st.Slug)}}
		}
		stepDone(res, err)
		if err != nil {
			return settlement{}, err
		}
		switch {
		case res.yielded:
			return settlement{status: StatusRunning, yielded: true}, nil
		case res.settled != nil:
			return *res.settled, nil
		case res.failure != "":
			if s := r.routeFailure(st.Slug, res.failure); s != nil {
				return *s, nil
			}
		}
		if err := r.commit(); err != nil {
			return settlement{}, err
		}
	}
}

// step counts one loop iteration; false when the step limit is exceeded.
func (r *run) step() bool {
	r.steps++
	r.callSteps++
	return r.steps <= r.e.cfg.StepLimit
}

// moveTo commits a move along a transition (or a reset): trail step, state-leave,
// advance (for moves a call drove), state-enter; the per-visit counter resets.
func (r *run) moveTo(to string, kind transcript.TrailKind, reason, callID string, withAdvance bool) {
	from := r.rec.State
	r.appendTrail(transcript.TrailStep{To: to, Kind: kind, Reason: reason})
	r.emit(events.StateLeave, map[string]any{"state": from, "next": to})
	if withAdvance {
		data := map[string]any{"from": from, "to": to, "kind": string(kind)}
		if reason != "" {
			data["reason"] = reason
		}
		if callID != "" {
			data["callId"] = callID
		}
		r.emit(events.Advance, data)
	}
	r.rec.State = to
	r.rec.StateTurns = nil
	r.emit(events.StateEnter, map[string]any{"state": to})
}

// routeFailure routes a failed state through its on_error (spec 02 §7.2); without one the
// call settles rejected with the failure reason.
func (r *run) routeFailure(state, reason string) *settlement {
	st := r.sp.State(state)
	if st == nil || st.OnError == "" || r.sp.State(st.OnError) == nil {
		return &settlement{status: StatusRejected, reason: reason}
	}
	to := st.OnError
	if !r.step() {
		return &settlement{status: StatusRejected, reason: stepLimitExceeded}
	}
	r.emit(events.StateErrorRouted, map[string]any{"state": state, "to": to, "reason": reason})
	r.emit(events.StateLeave, map[string]any{"state": state, "next": to})
	r.emit(events.StateEnter, map[string]any{"state": to})
	r.appendMessage(transcript.Message{Role: transcript.RoleRuntime, Note: transcript.NoteError, Text: noteError(state, reason, to), State: to})
	r.rec.State, r.rec.Status, r.rec.Rejected, r.rec.StateTurns = to, StatusRunning, "", nil
	r.appendTrail(transcript.TrailStep{To: to, Kind: transcript.TrailOnError, Reason: reason})
	return nil
}

// completion settles a turn that ended without a park or raise: in a terminal state the
// returns check runs first (spec 02 §2.4) — every declared return of the current trigger
// set and conforming, else rejected; a turn ending in a non-terminal state completes.
func (r *run) completion() settlement {
	st := r.sp.State(r.rec.State)
	trig := r.sp.Trigger(r.rec.CurrentTrigger)
	// a sub-workflow child short of its returns completes: its caller gets a note (02 §8.4)
	if st != nil && st.IsTerminal() && trig != nil && r.rec.Scope == nil {
		if reason := spec.ReturnsRefusal(r.rec.State, trig.ID, trig.Returns, r.vars()); reason != "" {
			return settlement{status: StatusRejected, reason: reason}
		}
	}
	return settlement{status: StatusCompleted}
}

// isCancel reports whether err is the call's own cancellation.
func (r *run) isCancel(err error) bool {
	return r.ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded))
}
