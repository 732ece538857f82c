package session

import (
	"github.com/archmax-ai/archmax/core/identity"
	"github.com/archmax-ai/archmax/core/outbound"
	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/transcript"
	"github.com/archmax-ai/archmax/core/workspace"
)

// Status is a session status (spec 02 §2.1).
type Status string

const (
	StatusRunning          Status = "running"
	StatusCompleted        Status = "completed"
	StatusFailed           Status = "failed"
	StatusRejected         Status = "rejected"
	StatusAwaitingDecision Status = "awaiting_decision"
	StatusAwaitingInput    Status = "awaiting_input"
)

// IsFinished reports whether status is completed, failed or rejected (spec 02 §2.2).
func IsFinished(s Status) bool {
	return s == StatusCompleted || s == StatusFailed || s == StatusRejected
}

// OutcomeKind is how a call settled (spec 02 §1.6).
type OutcomeKind string

const (
	KindCompleted OutcomeKind = "completed"
	KindParked    OutcomeKind = "parked"
	KindFailed    OutcomeKind = "failed"
	KindRejected  OutcomeKind = "rejected"
	// KindRunning: the call stopped at its step deadline (WithStepDeadline) after a commit;
	// the session is interrupted and Continue carries the turn on (DESIGN.md §4).
	KindRunning OutcomeKind = "running"
)

// Disposition is how a call was classified (spec 02 §1.1).
type Disposition string

const (
	DispositionTurn    Disposition = "turn"
	DispositionDecide  Disposition = "decide"
	DispositionReply   Disposition = "reply"
	DispositionDeliver Disposition = "deliver"
)

// Exit is the agent's own ending (spec 02 §2.3): {success:true} or {success:false, code, reason}.
type Exit struct {
	Success bool   `json:"success"`
	Code    string `json:"code,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// Usage is the session's running token and cost total (spec 02 §11.2). CostUSD is present
// only when a price applied (USD).
type Usage struct {
	InputTokens         int64    `json:"inputTokens"`
	OutputTokens        int64    `json:"outputTokens"`
	CacheReadTokens     int64    `json:"cacheReadTokens"`
	CacheCreationTokens int64    `json:"cacheCreationTokens"`
	CostUSD             *float64 `json:"costUsd,omitempty"`
}

// Empty reports whether nothing was spent (HasUsage is false).
func (u *Usage) Empty() bool {
	return u == nil || u.InputTokens == 0 && u.OutputTokens == 0 && u.CacheReadTokens == 0 && u.CacheCreationTokens == 0 && u.CostUSD == nil
}

// record is the engine's session record stored as the head Body (spec 02 §9.3 logical
// fields; the transcript and trail live in the log items).
type record struct {
	Workflow string `json:"workflow"`
	// Owner is the principal that started the session (WithCaller at its first call; a
	// sub-workflow child has its root's); nil for a session started without one or written
	// before owners were recorded. The head's Owner is its key.
	Owner          *identity.Principal           `json:"owner,omitempty"`
	Status         Status                        `json:"status"`
	State          string                        `json:"state"`
	OpeningState   string                        `json:"openingState,omitempty"`
	CurrentTrigger string                        `json:"currentTrigger,omitempty"`
	Variables      map[string]spec.VariableEntry `json:"variables"`
	Exit           *Exit                         `json:"exit,omitempty"`
	Rejected       string                        `json:"rejected,omitempty"`
	Usage          *Usage                        `json:"usage,omitempty"`
	SpecHash       string                        `json:"specHash,omitempty"`
	Calls          int                           `json:"calls"`
	StateTurns     *stateTurns                   `json:"stateTurns,omitempty"`
	EventSeq       int64                         `json:"eventSeq"`
	Todos          []workspace.Todo              `json:"todos,omitempty"`         // the plan (write_todos, BR-48)
	Park           *Park                         `json:"park,omitempty"`          // the live suspension
	DecisionCount  int                           `json:"decisionCount,omitempty"` // last decision-park seq used
	ParkCounts     map[string]int                `json:"parkCounts,omitempty"`    // maxParks counters, cleared per turn
	// QuotaWaits counts the quota parks in a row (R18-5): each doubles the wait; a model call
	// that answers clears it.
	QuotaWaits      int      `json:"quotaWaits,omitempty"`
	PendingEvidence []string `json:"pendingEvidence,omitempty"` // an advance's evidence for the next human park
	// DeliveryIDs are the ids of the last MaxDeliveryIDs accepted deliveries that carried
	// one (EventBridge event ids, Idempotency-Key headers): a repeat is refused unapplied.
	DeliveryIDs []string `json:"deliveryIds,omitempty"`
	// RequestTurns are the ids of the last MaxRequestTurns turns opened under a request's
	// own turn id (WithTurnID: an Idempotency-Key, an event id): a repeat of one is answered
	// from the session, never opened again.
	RequestTurns []string `json:"requestTurns,omitempty"`
	// CurrentTurn is the latest call that changed the session: its turn id, how it was
	// classified and the loop steps it has taken, kept so Continue can carry it on.
	CurrentTurn *turnMark `json:"currentTurn,omitempty"`
	// LastError is the failure that stopped the current turn's last attempt, while the
	// session stays running (interrupted); cleared by the next commit.
	LastError *TurnError `json:"lastError,omitempty"`
	// LastTurn is how the latest settled call ended — written by every commit of a status
	// other than running — so the session summary answers a client polling after a 202
	// without reading the transcript.
	LastTurn *TurnOutcome `json:"lastTurn,omitempty"`
	// DispatchCount is the last child number used: a child's id is <session>~<n> (02 §8.2).
	DispatchCount int `json:"dispatchCount,omitempty"`
	// Dispatches are the children of this session still owing it a result: an agent's
	// delegation calls whose tool result is pending, or a delegated park's child resumed by
	// a decision or delivery. Committed before a child starts, so a continuation or a crash
	// recovery carries them on (DESIGN.md §4).
	Dispatches []*dispatchMark `json:"dispatches,omitempty"`
	// Delegations queue the parked children of agent delegations in the order their parks
	// arrived; the head is presented as Park (02 §3.7).
	Delegations []*queuedDelegation `json:"delegations,omitempty"`
	// Scope is set on a child session: its place in the delegation chain (02 §8.2).
	Scope *childScope `json:"scope,omitempty"`
	// DelegationFailures are the agent's failed delegation calls not yet recovered by a later
	// success (02 §8.4 item 5); Batches numbers the delegation batches that recorded them.
	DelegationFailures []*delegationFailure `json:"delegationFailures,omitempty"`
	// StepFailure is a failure of the step in progress (a terminal governance block)
	// carried across a yield while its delegation calls are still owed.
	StepFailure string `json:"stepFailure,omitempty"`
	// Outbox are the notifications the last commits owe the outbound sink (outbox.go),
	// stored by the commit that owes them and cleared once they are published.
	Outbox []outbound.Notification `json:"outbox,omitempty"`
	// Trace is the W3C traceparent of the turn span of the last call (tracing on only): a
	// continuation without one of its own continues that trace (trace.go, TR22-4).
	Trace string `json:"trace,omitempty"`
}

// TurnError is why a turn's last attempt stopped without settling (a model or store
// failure): the session stays running — interrupted — and a retry, a continuation or the
// next message carries it on. Shown on the session summary as lastError.
type TurnError struct {
	TurnID    string `json:"turnId"`
	Code      string `json:"code"` // the error name, e.g. "ModelCallError"
	Message   string `json:"message"`
	Retryable bool   `json:"retryable"` // the same call may succeed later (throttling, timeouts)
	At        string `json:"at"`        // ISO-8601 UTC
	// Attempts counts the turn's attempts that failed in a row, without a commit that made
	// progress in between (1 for the first; 0 in records written before it was counted).
	Attempts int `json:"attempts,omitempty"`
}

// TurnOutcome is how a settled call ended: the outcome summary's own fields (turnId, kind,
// disposition, status, state, reply, exit, rejected, turn) with the same values a
// synchronous answer carries, kept on the session so its summary shows them (lastTurn).
type TurnOutcome struct {
	TurnID      string      `json:"turnId,omitempty"`
	Kind        OutcomeKind `json:"kind"`
	Disposition Disposition `json:"disposition"`
	Status      Status      `json:"status"`
	State       string      `json:"state"`
	Reply       string      `json:"reply"`
	// ReplyTruncated: Reply holds the first MaxLastTurnReply bytes only (the whole reply is
	// the transcript's last agent message): the head stays far below an item's size limit.
	ReplyTruncated bool   `json:"replyTruncated,omitempty"`
	Exit           *Exit  `json:"exit,omitempty"`
	Rejected       string `json:"rejected,omitempty"`
	Turn           int    `json:"turn"`
}

// MaxLastTurnReply bounds, in bytes, the reply a session's lastTurn keeps in its head.
const MaxLastTurnReply = 16 << 10

type stateTurns struct {
	State string `json:"state"`
	Count int    `json:"count"`
}

// Outcome is the settled result of a call (spec 02 §1.6). The HTTP layer answers with the
// summary fields only; in-process callers also get the transcript and trail.
type Outcome struct {
	SessionID   string                        `json:"sessionId"`
	TurnID      string                        `json:"turnId"` // the call's turn id; a continuation keeps it
	Kind        OutcomeKind                   `json:"kind"`
	Disposition Disposition                   `json:"disposition"`
	Status      Status                        `json:"status"`
	State       string                        `json:"state"`
	Reply       string                        `json:"reply"`
	Rejected    string                        `json:"rejected,omitempty"`
	Exit        *Exit                         `json:"exit,omitempty"`
	Variables   map[string]spec.VariableEntry `json:"variables"`
	Usage       *Usage                        `json:"usage,omitempty"`
	Messages    []transcript.Message          `json:"messages"`
	AuditTrail  []transcript.TrailStep        `json:"auditTrail"`
	Turn        int                           `json:"turn"` // the session's call number (1-based)
	// Pending is the park record when Kind is parked; ParkedChannel names its channel.
	Pending       *Park       `json:"pending,omitempty"`
	ParkedChannel ParkChannel `json:"parkedChannel,omitempty"`
	// Reparked: a decide, deliver or reply call that ended parked again.
	Reparked bool `json:"reparked,omitempty"`
	// Delegation is set when the session is parked on a child's decision (02 §3.7): the
	// decision is the child's, answered through this session.
	Delegation *DelegatedPark `json:"delegation,omitempty"`
}

// SendInput is one call on a session (spec 02 §1.2).
type SendInput struct {
	Message   string         // the person's message for this call
	Variables map[string]any // host seeds; stored locked (title unlocked)
	Trigger   string         // "" => manual
	// Files are placed under scratchpad/attachments/ before the turn and each variable is
	// seeded, locked, with the placed path (spec 02 §1.8, 01 §4.11).
	Files map[string]TurnFile
}

// TurnFile is one file handed to a turn: a plain file name and its exact bytes.
type TurnFile struct {
	Name    string
	Content []byte
}
