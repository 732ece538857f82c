package session

import (
	"fmt"
	"strings"
)

// SessionNotResumableError: another call holds the session's writer lease, or the session
// changed under this writer (spec 02 §1.3 step 3, §15 Q1). HTTP 409.
type SessionNotResumableError struct {
	SessionID string
	Status    string
	// LeaseExpiresAt is when the current writer's lease ends ("" when unknown): a writer that
	// was killed holds the session until then.
	LeaseExpiresAt string
}

func (e *SessionNotResumableError) Error() string {
	st := e.Status
	if st == "" {
		st = "running"
	}
	msg := fmt.Sprintf("Session '%s' has a turn in progress (status '%s'). A session has a single writer: retry once the turn parks or ends.", e.SessionID, st)
	if e.LeaseExpiresAt != "" {
		msg += fmt.Sprintf(" The current writer's lease expires at %s; if that writer was stopped, the session is free again then.", e.LeaseExpiresAt)
	}
	return msg
}

// Name returns the spec error name.
func (e *SessionNotResumableError) Name() string { return "SessionNotResumableError" }

// EmptyMessageError: a turn (or reply) without a message (spec 02 §1.4 step 3, §3.6). HTTP 400.
type EmptyMessageError struct {
	SessionID string
	Reply     bool // the message was a reply to a human park
}

func (e *EmptyMessageError) Error() string {
	if e.Reply {
		return fmt.Sprintf("A message is required to reply to session '%s': there is nothing to answer, and a parked session is not moved by an empty turn.", e.SessionID)
	}
	return fmt.Sprintf("A message is required to start a turn on session '%s': say what is being asked.", e.SessionID)
}

// Name returns the spec error name.
func (e *EmptyMessageError) Name() string { return "EmptyMessageError" }

// TurnAbortedError: the call's context was cancelled (spec 02 §13). Everything committed
// before the cancellation stays. Interrupted reports that this call committed and left the
// session running (interrupted): Continue(SessionID, TurnID) carries it on from State. When
// false this call kept nothing (a refused call; a resume before its first commit, whose park
// is still live; a continuation cut inside its first step) and only a retry of the call
// itself can help — handing it on again would repeat the same cut step forever.
type TurnAbortedError struct {
	SessionID   string
	TurnID      string
	State       string
	Disposition Disposition // how the call was classified ("" when it never opened)
	Turn        int         // the session's call number
	Interrupted bool
	Cause       error
}

func (e *TurnAbortedError) Error() string {
	return fmt.Sprintf("turn on session '%s' was aborted: %v", e.SessionID, e.Cause)
}
func (e *TurnAbortedError) Unwrap() error { return e.Cause }

// Name returns the spec error name.
func (e *TurnAbortedError) Name() string { return "TurnAbortedError" }

// WorkflowMismatchError: the session belongs to another workflow (HTTP 409).
type WorkflowMismatchError struct{ SessionID, Workflow, Requested string }

func (e *WorkflowMismatchError) Error() string {
	return fmt.Sprintf("Session '%s' belongs to workflow '%s', not '%s'.", e.SessionID, e.Workflow, e.Requested)
}

// Name returns the error name.
func (e *WorkflowMismatchError) Name() string { return "WorkflowMismatchError" }

// UnknownWorkflowError: no workflows/<slug>/workflow.yaml (HTTP 404).
type UnknownWorkflowError struct{ Workflow string }

func (e *UnknownWorkflowError) Error() string {
	return fmt.Sprintf("No workflow.yaml found for workflow '%s'", e.Workflow)
}

// Name returns the error name.
func (e *UnknownWorkflowError) Name() string { return "UnknownWorkflowError" }

// InvalidTurnFileError: a turn file cannot be placed (spec 02 §1.8); nothing was written.
// HTTP 400.
type InvalidTurnFileError struct{ Variable, Cause string }

func (e *InvalidTurnFileError) Error() string {
	return fmt.Sprintf("Turn file for variable '%s' cannot be placed: %s.", e.Variable, e.Cause)
}

// Name returns the spec error name.
func (e *InvalidTurnFileError) Name() string { return "InvalidTurnFileError" }

// SessionNotParkedError: a decision (or reply) for a session not parked at a human state
// (spec 02 §3.4, §3.6). HTTP 409.
type SessionNotParkedError struct{ SessionID string }

func (e *SessionNotParkedError) Error() string {
	return fmt.Sprintf("Session '%s' is not parked at a human state; there is nothing to decide.", e.SessionID)
}

// Name returns the spec error name.
func (e *SessionNotParkedError) Name() string { return "SessionNotParkedError" }

// TurnSupersededError: a repeated request (WithTurnID) whose turn the session opened once
// and has since left for a newer call's turn: it is not applied again, and its outcome is no
// longer the session's to tell (read the session for how it went on). HTTP 409.
type TurnSupersededError struct{ SessionID, TurnID, CurrentTurnID string }

func (e *TurnSupersededError) Error() string {
	since := "its current turn is '" + e.CurrentTurnID + "'"
	if e.CurrentTurnID == "" {
		since = "past the turns it remembers, or it was deleted"
	}
	return fmt.Sprintf("This request was already applied to session '%s' as turn '%s', and the session has moved on since (%s): it is not applied again. Read the session for how it went on.",
		e.SessionID, e.TurnID, since)
}

// Name returns the error name.
func (e *TurnSupersededError) Name() string { return "TurnSupersededError" }

// InvalidDecisionTargetError: the decision names no transition of the park (spec 02 §3.4).
// HTTP 422.
type InvalidDecisionTargetError struct {
	SessionID, Target string
	ValidTargets      []string
}

func (e *InvalidDecisionTargetError) Error() string {
	choices := strings.Join(e.ValidTargets, ", ")
	if len(e.ValidTargets) == 0 {
		return fmt.Sprintf("No decision target remains for session '%s': the workflow was edited since it parked and declares none of the park's transitions, so the park can no longer be decided.", e.SessionID)
	}
	if e.Target == "" {
		return fmt.Sprintf("A decision target is required for session '%s'. Choose one of: %s.", e.SessionID, choices)
	}
	return fmt.Sprintf("'%s' is not a valid decision target for session '%s'. Choose one of: %s.", e.Target, e.SessionID, choices)
}

// Name returns the spec error name.
func (e *InvalidDecisionTargetError) Name() string { return "InvalidDecisionTargetError" }

// SessionNotAwaitingInputError: a delivery for a session without an input park (spec 02
// §4.3). HTTP 409.
type SessionNotAwaitingInputError struct{ SessionID string }

func (e *SessionNotAwaitingInputError) Error() string {
	return fmt.Sprintf("Session '%s' is not parked awaiting an event; there is nothing to deliver to. A session awaiting a human decision resumes through a decision instead.", e.SessionID)
}

// Name returns the spec error name.
func (e *SessionNotAwaitingInputError) Name() string { return "SessionNotAwaitingInputError" }

// MissingDeliveryTriggerError: a delivery without a trigger id (spec 02 §4.3). HTTP 400.
type MissingDeliveryTriggerError struct{ SessionID string }

func (e *MissingDeliveryTriggerError) Error() string {
	return fmt.Sprintf("A trigger id is required to deliver to session '%s': it becomes the session's current trigger, the `trigger` variable and the reason of the trail step. Any id is accepted — a park awaits no particular one.", e.SessionID)
}

// Name returns the spec error name.
func (e *MissingDeliveryTriggerError) Name() string { return "MissingDeliveryTriggerError" }

// ParkNotLiveError: a resume named a park that is no longer the live one (DESIGN.md §5):
// it was answered already, or replaced. HTTP 409.
type ParkNotLiveError struct{ SessionID, ParkID, LiveParkID string }

func (e *ParkNotLiveError) Error() string {
	return fmt.Sprintf("Park '%s' is not the live park of session '%s' (the live park is '%s'): it was answered already, or never existed.", e.ParkID, e.SessionID, e.LiveParkID)
}

// Name returns the error name.
func (e *ParkNotLiveError) Name() string { return "ParkNotLiveError" }

// DuplicateDeliveryError: a delivery whose id the session has already accepted (a
// redelivered EventBridge event, a retried request); nothing was applied (HTTP 409).
type DuplicateDeliveryError struct{ SessionID, ID string }

func (e *DuplicateDeliveryError) Error() string {
	return fmt.Sprintf("Delivery '%s' to session '%s' was already accepted; it is not applied twice.", e.ID, e.SessionID)
}

// Name returns the error name.
func (e *DuplicateDeliveryError) Name() string { return "DuplicateDeliveryError" }

// InvalidHistoryError: the step just run would store a conversation Bedrock refuses in every
// later request (a model answer the engine could not make valid); nothing of the step was
// committed, the session keeps its last valid checkpoint and the turn waits for a new
// message (not retryable). An engine fault: the host logs Cause.
type InvalidHistoryError struct {
	SessionID string
	Cause     error
}

func (e *InvalidHistoryError) Error() string {
	return fmt.Sprintf("The turn of session '%s' stopped: the model's last answer could not be stored as valid history (%v); nothing of that step was kept. Send a new message to go on.", e.SessionID, e.Cause)
}

// Name returns the error name.
func (e *InvalidHistoryError) Name() string { return "InvalidHistoryError" }

// Unwrap returns the validator's refusal.
func (e *InvalidHistoryError) Unwrap() error { return e.Cause }
