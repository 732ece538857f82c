package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/archmax-ai/archmax/core/events"
	"github.com/archmax-ai/archmax/core/identity"
	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/store"
	"github.com/archmax-ai/archmax/core/transcript"
	"github.com/archmax-ai/archmax/core/workspace"
)

// SessionSummary is one stored session as hosts and the session API read it (spec 02 §9.7).
type SessionSummary struct {
	SessionID      string `json:"sessionId"`
	Workflow       string `json:"workflow"`
	Status         Status `json:"status"`
	Classification string `json:"classification"` // "open" | "finished"
	Interrupted    bool   `json:"interrupted,omitempty"`
	// Owner is who started the session (Issue 17; a sub-workflow child: its root's starter);
	// absent for a session started without a caller or written before owners were recorded.
	Owner *identity.Principal `json:"owner,omitempty"`
	// TurnID is the latest call's turn id (the one an accepted request answered with).
	TurnID string `json:"turnId,omitempty"`
	// TurnBy is who made that call (a start, a message, a decision, a delivery; the wake
	// function's system principal for a timer), when it was recorded.
	TurnBy *identity.Principal `json:"turnBy,omitempty"`
	// LastError says why the running turn's last attempt stopped (with Interrupted): it
	// failed, and a retry or the next message continues it. On a session a budget rejected
	// it is the stop's code budget_exceeded and its message (BudgetExceededCode).
	LastError *TurnError `json:"lastError,omitempty"`
	// LastTurn is how the latest settled call ended, with the outcome summary's field names
	// and values (kind, status, state, reply, …): after a 202 the call has settled when
	// LastTurn.TurnID is the TurnID the 202 named. Absent until a call settles, and while the
	// call that settled still holds the session (a park committed before its closing message).
	LastTurn      *TurnOutcome `json:"lastTurn,omitempty"`
	WorkflowState string       `json:"workflowState,omitempty"` // the position
	State         string       `json:"state,omitempty"`         // parked sessions: the parked state
	Title         string       `json:"title,omitempty"`
	// Pending is the live park of a parked session: its parkId, channel and the pending
	// decision (transitions, evidence) or input (reason, resumeAt) — DESIGN.md §5.
	Pending *Park `json:"pending,omitempty"`
	// WaitReason and ResumeAt mirror an input park's reason and resumeAt (spec 02 §4.2).
	WaitReason string                        `json:"waitReason,omitempty"`
	ResumeAt   string                        `json:"resumeAt,omitempty"`
	Exit       *Exit                         `json:"exit,omitempty"`
	Rejected   string                        `json:"rejected,omitempty"`
	Variables  map[string]spec.VariableEntry `json:"variables,omitempty"`
	Usage      *Usage                        `json:"usage,omitempty"`
	SpecHash   string                        `json:"specHash,omitempty"`
	ParentID   string                        `json:"parentSessionId,omitempty"`
	// Delegation is set while the session is parked on a sub-workflow child's decision (02
	// §3.7, §9.7): the decision is the child's, sent to this session.
	Delegation   *DelegatedPark `json:"delegation,omitempty"`
	MessageCount int64          `json:"messageCount"`
	Turn         int            `json:"turn"`
	CreatedAt    string         `json:"createdAt"`
	UpdatedAt    string         `json:"updatedAt"`
}

// SessionNotFoundError: no committed session has this id (HTTP 404).
type SessionNotFoundError struct{ SessionID string }

func (e *SessionNotFoundError) Error() string {
	return fmt.Sprintf("Session '%s' has not run yet.", e.SessionID)
}

// Name returns the error name.
func (e *SessionNotFoundError) Name() string { return "SessionNotFoundError" }

// SessionStoreCapabilityError: the store cannot perform the operation (spec 02 §9.6).
type SessionStoreCapabilityError struct{ Operation string }

func (e *SessionStoreCapabilityError) Error() string {
	return fmt.Sprintf("The session store cannot %s.", e.Operation)
}

// Name returns the spec error name.
func (e *SessionStoreCapabilityError) Name() string { return "SessionStoreCapabilityError" }

// Sessions reads and deletes stored sessions (spec 02 §9.6). Safe for concurrent use.
type Sessions struct {
	log   store.Log
	files store.Files
	blobs store.Blobs  // optional
	sched Scheduler    // optional: Delete cancels timed parks' schedules (WithScheduler)
	audit *slog.Logger // optional: one line per completed delete (WithAuditLog)
	clock func() time.Time
}

// NewSessions returns the session handles over a log and the session files tree (blobs may
// be nil when the log keeps no blobs).
func NewSessions(log store.Log, files store.Files, blobs store.Blobs) *Sessions {
	return &Sessions{log: log, files: files, blobs: blobs, clock: time.Now}
}

// ListOptions filter and page List.
type ListOptions struct {
	Workflow        string
	Status          Status
	Limit           int    // default 50
	Cursor          string // from the previous page
	IncludeChildren bool   // child sessions (<parent>~<n>) are left out unless true
	// Owner, when set, lists only the sessions this principal key owns (store.ListOptions.Owner:
	// an index, not a filter over every session).
	Owner string
}

// head reads a committed session's head: the checked id and the head; *SessionNotFoundError
// when it never committed, *spec.SessionStoreIdError for an id the store cannot address.
func (s *Sessions) head(ctx context.Context, sessionID string) (string, *store.Head, error) {
	id, err := spec.CheckSessionID(sessionID)
	if err != nil {
		return "", nil, err
	}
	h, err := s.log.Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return "", nil, &SessionNotFoundError{SessionID: id}
	}
	if err != nil {
		return "", nil, err
	}
	return id, h, nil
}

// Get returns a session's summary; *SessionNotFoundError when it never committed;
// *spec.SessionStoreIdError for an id the store cannot address.
func (s *Sessions) Get(ctx context.Context, sessionID string) (*SessionSummary, error) {
	_, h, err := s.head(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	return s.summarize(ctx, h), nil
}

// List returns summaries newest first and the next page's cursor ("" on the last page).
func (s *Sessions) List(ctx context.Context, opts ListOptions) ([]SessionSummary, string, error) {
	limit := opts.Limit
	if limit <= 0 {
		limit = store.DefaultLimit
	}
	heads, next, err := s.log.List(ctx, store.ListOptions{Workflow: opts.Workflow, Status: string(opts.Status), Owner: opts.Owner,
		Limit: limit, Cursor: opts.Cursor})
	if err != nil {
		return nil, "", err
	}
	out := make([]SessionSummary, 0, len(heads))
	for _, h := range heads {
		if !opts.IncludeChildren {
			if _, child := spec.ParentSessionIDOf(h.SessionID); child {
				continue // a page may hold fewer than Limit; the cursor still covers every session
			}
		}
		out = append(out, *s.summarize(ctx, h))
	}
	return out, next, nil
}

// ListDueParks returns up to limit (store.DefaultLimit when ≤ 0) summaries of sessions
// parked awaiting input whose resumeAt is at or before now, oldest due first (spec 02 §4.4;
// the sparse due-park index).
func (s *Sessions) ListDueParks(ctx context.Context, now time.Time, limit int) ([]SessionSummary, error) {
	if limit <= 0 {
		limit = store.DefaultLimit
	}
	heads, err := s.log.ListDueParks(ctx, spec.FormatInstant(now), limit)
	if err != nil {
		return nil, err
	}
	out := make([]SessionSummary, 0, len(heads))
	for _, h := range heads {
		out = append(out, *s.summarize(ctx, h))
	}
	return out, nil
}

// summarize projects a head onto a summary; a malformed body reads as absent fields.
func (s *Sessions) summarize(ctx context.Context, h *store.Head) *SessionSummary {
	sum := &SessionSummary{SessionID: h.SessionID, Workflow: h.Workflow, Status: Status(h.Status),
		MessageCount: h.Messages, CreatedAt: h.CreatedAt, UpdatedAt: h.UpdatedAt}
	if rec, err := decodeRecord(ctx, h.Body, s.blobs, h.SessionID, nil); err == nil {
		sum.WorkflowState, sum.SpecHash, sum.Turn = rec.State, rec.SpecHash, rec.Calls
		sum.Exit, sum.Rejected = rec.Exit, rec.Rejected
		sum.Owner = rec.Owner
		if rec.CurrentTurn != nil {
			sum.TurnID, sum.TurnBy = rec.CurrentTurn.ID, rec.CurrentTurn.By
		}
		if sum.Status == StatusRunning || rec.LastError != nil && rec.LastError.Code == BudgetExceededCode {
			sum.LastError = rec.LastError // a budget's stop is shown on the session it rejected too (BU22-5)
		}
		// a call that committed a park keeps its lease for the park's closing message: until it
		// lets go (or dies, and the lease lapses) its lastTurn is not final, so none is shown
		if lt := rec.LastTurn; lt != nil && !(rec.CurrentTurn != nil && lt.TurnID == rec.CurrentTurn.ID && h.Lease.Live(s.clock())) {
			sum.LastTurn = lt
		}
		if rec.Park != nil && (sum.Status == StatusAwaitingDecision || sum.Status == StatusAwaitingInput) {
			sum.Pending, sum.State = rec.Park, rec.Park.State()
			if rec.Park.Delegation != nil && rec.Park.Channel == ChannelDecision {
				sum.Delegation = rec.Park.Delegation
			}
			if in := rec.Park.Input; in != nil {
				sum.WaitReason, sum.ResumeAt = in.Reason, in.ResumeAt
			}
		}
		if !rec.Usage.Empty() {
			sum.Usage = rec.Usage
		}
		if len(rec.Variables) > 0 {
			sum.Variables = rec.Variables
			if t, ok := rec.Variables[spec.TitleVariable].Value.(string); ok {
				sum.Title = t
			}
		}
	}
	sum.Classification = "open"
	if IsFinished(sum.Status) {
		sum.Classification = "finished"
	}
	if sum.Status == StatusRunning && !h.Lease.Live(s.clock()) {
		sum.Interrupted = true
	}
	if p, ok := spec.ParentSessionIDOf(h.SessionID); ok {
		sum.ParentID = p
	}
	return sum
}

// MessageCount is how many messages the session's latest checkpoint holds (0 when it never
// ran) — the cursor of spec 02 §5.4.
func (s *Sessions) MessageCount(ctx context.Context, sessionID string) (int64, error) {
	return messageCount(ctx, s.log, sessionID)
}

// messageCount reads a session's message count from its head alone; 0 for no session.
func messageCount(ctx context.Context, log store.Log, sessionID string) (int64, error) {
	h, err := log.Get(ctx, sessionID)
	if errors.Is(err, store.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return h.Messages, nil
}

// Messages returns up to limit (default 100) messages after the cursor (a message count)
// and the cursor after them.
func (s *Sessions) Messages(ctx context.Context, sessionID string, after int64, limit int) ([]transcript.Message, int64, error) {
	raws, next, err := s.page(ctx, sessionID, after, limit, s.log.Messages, func(h *store.Head) int64 { return h.Messages })
	if err != nil {
		return nil, 0, err
	}
	out := make([]transcript.Message, 0, len(raws))
	for _, raw := range raws {
		var m transcript.Message
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, 0, fmt.Errorf("decode message of %s: %w", sessionID, err)
		}
		out = append(out, m)
	}
	return out, next, nil
}

// Events returns up to limit (default 100) stored events after the cursor, as their JSON
// (spec 02 §12.1 envelope; stored previews are shortened, see storedPreviewCap).
func (s *Sessions) Events(ctx context.Context, sessionID string, after int64, limit int) ([]json.RawMessage, int64, error) {
	raws, next, err := s.page(ctx, sessionID, after, limit, s.log.Events, func(h *store.Head) int64 { return h.Events })
	if err != nil {
		return nil, 0, err
	}
	for i, raw := range raws {
		var ev events.Event
		if json.Unmarshal(raw, &ev) != nil {
			continue
		}
		ev.SessionID = sessionID
		if b, err := ev.MarshalJSON(); err == nil {
			raws[i] = b
		}
	}
	return raws, next, nil
}

// Trail returns the whole audit trail.
func (s *Sessions) Trail(ctx context.Context, sessionID string) ([]transcript.TrailStep, error) {
	raws, _, err := s.page(ctx, sessionID, 0, 1<<30, s.log.TrailSteps, func(h *store.Head) int64 { return h.Trail })
	if err != nil {
		return nil, err
	}
	out := make([]transcript.TrailStep, 0, len(raws))
	for _, raw := range raws {
		var st transcript.TrailStep
		if err := json.Unmarshal(raw, &st); err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

// File reads one of a session's own files by the path its tools name it (e.g. a park's
// evidence, "scratchpad/refund.json"); an error wrapping store.ErrNotFound when it is absent
// or no session file serves the path (authored mounts are not read here),
// *workspace.PathEscapeError for a path that leaves the workspace.
func (s *Sessions) File(ctx context.Context, sessionID, path string) ([]byte, error) {
	id, err := spec.CheckSessionID(sessionID)
	if err != nil {
		return nil, err
	}
	return workspace.New(s.files, id, nil).ReadFile(ctx, path)
}

type itemReader func(ctx context.Context, sessionID string, from, to int64) ([]json.RawMessage, error)

// page reads items (after, after+limit] and returns the cursor after them: the end of the
// requested range clamped to the log's counter, so items that expired (event TTL) never
// make pages overlap.
func (s *Sessions) page(ctx context.Context, sessionID string, after int64, limit int, read itemReader, counter func(*store.Head) int64) ([]json.RawMessage, int64, error) {
	id, err := spec.CheckSessionID(sessionID)
	if err != nil {
		return nil, 0, err
	}
	if limit <= 0 {
		limit = 100
	}
	if after < 0 {
		after = 0
	}
	h, err := s.log.Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, 0, &SessionNotFoundError{SessionID: id}
	}
	if err != nil {
		return nil, 0, err
	}
	// a cursor past the end reads as the end, so the next page starts where items will be
	after = min(after, counter(h))
	end := min(after+int64(limit), counter(h))
	raws, err := read(ctx, id, after, end)
	if errors.Is(err, store.ErrNotFound) {
		return nil, 0, &SessionNotFoundError{SessionID: id}
	}
	if err != nil {
		return nil, 0, err
	}
	return raws, end, nil
}

// deleteTree removes every file under prefix/ (store.DeleteTree); a store that cannot
// delete is *SessionStoreCapabilityError.
func deleteTree(ctx context.Context, files store.Files, prefix string) (int, error) {
	n, err := store.DeleteTreeCount(ctx, files, prefix)
	if errors.Is(err, store.ErrUnsupported) {
		return n, &SessionStoreCapabilityError{Operation: "delete session files"}
	}
	return n, err
}
