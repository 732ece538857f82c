// Package transcript holds the stored shapes of a session's transcript and audit trail and
// the pure readers over them (spec 02 §5.4, §6). A runtime note is one stored message of
// role "runtime" with its note kind (DESIGN.md §6), not the reference's LangChain pair.
package transcript

import "github.com/archmax-ai/archmax/core/identity"

// Role of a stored message.
const (
	RoleUser      = "user"      // a person's message (or a child's opening note, Note = "opening")
	RoleAssistant = "assistant" // the model's message: text and tool calls
	RoleTool      = "tool"      // one tool result, answering one ToolCall
	RoleRuntime   = "runtime"   // a runtime note (Note holds its kind)
)

// NoteKind is a runtime note kind (spec 02 §5.2).
type NoteKind string

const (
	NoteDecision    NoteKind = "decision"
	NoteEvent       NoteKind = "event"
	NoteError       NoteKind = "error"
	NoteAfter       NoteKind = "after" // read-only: 1.0 never writes it
	NoteSubWorkflow NoteKind = "sub-workflow"
	NoteOpening     NoteKind = "opening"
	NoteCode        NoteKind = "code"
	NoteGrader      NoteKind = "grader"
	// NoteCutOff tells the model its tool call was cut off at the output token limit and
	// not run (ours; docs/DECISIONS.md R18-4).
	NoteCutOff NoteKind = "cut-off"
)

// ToolCall is one call an assistant message made. Args is the parsed JSON object.
type ToolCall struct {
	ID   string         `json:"id"`
	Name string         `json:"name"`
	Args map[string]any `json:"args"`
}

// Message is one stored transcript message.
type Message struct {
	ID    string `json:"id"`
	Role  string `json:"role"`
	Text  string `json:"text,omitempty"`
	State string `json:"state,omitempty"` // the state the message was produced in
	// Assistant messages.
	ToolCalls []ToolCall `json:"toolCalls,omitempty"`
	// Tool messages.
	ToolCallID string `json:"toolCallId,omitempty"`
	Tool       string `json:"tool,omitempty"`
	Error      bool   `json:"error,omitempty"`             // the result has error status
	Blocked    bool   `json:"governanceBlocked,omitempty"` // refused by governance (GOV-60)
	// Runtime notes (and the opening note, which has role "user").
	Note NoteKind `json:"note,omitempty"`
	TS   int64    `json:"ts"` // epoch ms
}

// TrailKind is the kind of an audit-trail step (spec 02 §6.1).
type TrailKind string

const (
	TrailTrigger     TrailKind = "trigger"
	TrailAgent       TrailKind = "agent"
	TrailHuman       TrailKind = "human"
	TrailGrader      TrailKind = "grader"
	TrailCode        TrailKind = "code"
	TrailSubWorkflow TrailKind = "sub-workflow"
	TrailReset       TrailKind = "reset"
	TrailOnError     TrailKind = "on_error"
)

// TrailStep is one committed step of the audit trail. TS is epoch milliseconds.
type TrailStep struct {
	To       string    `json:"to"`
	Kind     TrailKind `json:"kind"`
	Reason   string    `json:"reason,omitempty"`
	Workflow string    `json:"workflow,omitempty"`
	Status   string    `json:"status,omitempty"`
	TS       int64     `json:"ts"`
	// By is who made the call this step opens — the trigger step of a turn or delivery, the
	// human step of a decision (Issue 17); nil on the steps the loop takes itself and on
	// trails written before callers were recorded. Audit data: never shown to the model or
	// to scripts (History leaves it out).
	By *identity.Principal `json:"by,omitempty"`
}
