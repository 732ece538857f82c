package session

import "fmt"

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

// EmptyMessageError: a turn (or reply) without a message (spec 02 §1.4 step 3). HTTP 400.
type EmptyMessageError struct{ SessionID string }

func (e *EmptyMessageError) Error() string {
	return fmt.Sprintf("A message is required to start a turn on session '%s': say what is being asked.", e.SessionID)
}

// Name returns the spec error name.
func (e *EmptyMessageError) Name() string { return "EmptyMessageError" }

// TurnAbortedError: the call's context was cancelled (spec 02 §13). Everything committed
// before the cancellation stays.
type TurnAbortedError struct {
	SessionID string
	Cause     error
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
