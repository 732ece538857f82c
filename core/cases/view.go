package cases

import (
	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/transcript"
)

// View is what one action step produced, read by every assertion until the next action
// (spec 04 §6.2, ST-10). The runner builds it from the engine's outcome, the transcript
// cursor taken before the action, and the events the action emitted.
type View struct {
	// Outcome is the action's settled outcome.
	Outcome Outcome
	// TurnMessages are the transcript messages this action appended (the turn, ST-11);
	// SessionMessages the whole transcript after it.
	TurnMessages    []transcript.Message
	SessionMessages []transcript.Message
	// Trail is the whole audit trail after the action (all turns).
	Trail []transcript.TrailStep
	// Variables are the session's variables after the action, with their lock state.
	Variables map[string]spec.VariableEntry
	// BlockedCallIDs are the ids of the agent's calls governance refused during the action
	// (from tool-blocked events and the transcript's governance marker, ST-10).
	BlockedCallIDs []string
	// Trigger is the session's current trigger after the action.
	Trigger string
}

// Outcome is an action's outcome as assertions read it (ST-10).
type Outcome struct {
	Kind        string // "completed" | "parked" | "failed" | "rejected"
	Disposition string // "turn" | "reply" | "deliver" | "decide"
	State       string // the session's position (for a park: the parked state)
	// Channel is the park's channel ("decision" | "input") when Kind is parked.
	Channel string
	Reply   string // the last agent text of the session
	// Exit is the agent's own ending: Success, or the raise's Code and Reason.
	Exit     *Exit
	Rejected string // the rejection reason when Kind is rejected
}

// Exit is a session's exit record (spec 02 §2.3).
type Exit struct {
	Success      bool
	Code, Reason string
}
