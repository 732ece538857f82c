// Package events is the lifecycle event stream (spec 02 §12): the envelope, the catalog
// names, default levels, and a thread-safe emitter that stamps seq and ts.
package events

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"
)

// Event types emitted so far (spec 02 §12.2).
const (
	StateEnter       = "state-enter"
	StateLeave       = "state-leave"
	Advance          = "advance"
	StateErrorRouted = "state-error-routed"
	WorkflowReset    = "workflow-reset"
	Raised           = "raised"
	VariablesSet     = "variables-set"
	TitleSet         = "title-set"
	ToolCalled       = "tool-called"
	ToolResult       = "tool-result"
	ToolBlocked      = "tool-blocked"
	AgentText        = "agent-text"
	AgentTextDelta   = "agent-text-delta"
	CodeOutput       = "code-output"
	ModelUsage       = "model-usage"
	Warning          = "warning"
	Parked           = "parked"
	Decided          = "decided"
	ParkMessage      = "park-message"
	Delivered        = "delivered"
	// SubWorkflowStart and SubWorkflowResult bracket one delegation (spec 02 §8.4).
	SubWorkflowStart  = "sub-workflow-start"
	SubWorkflowResult = "sub-workflow-result"
)

// Origin is SESSION_ORIGIN, the `from` of a turn's opening advance.
const Origin = "__start__"

// Event is one lifecycle event: the envelope plus the type's payload fields, flattened into
// one JSON object on the wire. TS is epoch milliseconds; Seq is strictly increasing per
// Emitter; SessionSeq is the per-session durable counter this bundle adds (spec 02 §15 Q6).
type Event struct {
	Type       string
	TS         int64
	Seq        uint64
	SessionSeq int64
	SessionID  string
	DispatchID string // subWorkflowDispatchId
	Level      string // "info" | "warn" | "error"
	Data       map[string]any
}

// MarshalJSON flattens the payload next to the envelope.
func (e Event) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, len(e.Data)+7)
	for k, v := range e.Data {
		m[k] = v
	}
	m["type"], m["ts"], m["level"] = e.Type, e.TS, e.Level
	if e.Seq > 0 {
		m["seq"] = e.Seq
	}
	if e.SessionSeq > 0 {
		m["sessionSeq"] = e.SessionSeq
	}
	if e.SessionID != "" {
		m["sessionId"] = e.SessionID
	}
	if e.DispatchID != "" {
		m["subWorkflowDispatchId"] = e.DispatchID
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads the flattened form back.
func (e *Event) UnmarshalJSON(b []byte) error {
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	str := func(k string) string { s, _ := m[k].(string); delete(m, k); return s }
	num := func(k string) float64 { f, _ := m[k].(float64); delete(m, k); return f }
	e.Type, e.Level, e.SessionID, e.DispatchID = str("type"), str("level"), str("sessionId"), str("subWorkflowDispatchId")
	e.TS, e.Seq, e.SessionSeq = int64(num("ts")), uint64(num("seq")), int64(num("sessionSeq"))
	e.Data = m
	return nil
}

// Str returns a string payload field ("" when absent).
func (e Event) Str(k string) string { s, _ := e.Data[k].(string); return s }

// DefaultLevel is the level of an event type with its payload (spec 02 §12.1): warn for
// warning, tool-blocked and raised, and for error-status tool-result / sub-workflow-result.
func DefaultLevel(typ string, data map[string]any) string {
	switch typ {
	case Warning, ToolBlocked, Raised:
		return "warn"
	case ToolResult, SubWorkflowResult:
		if data["status"] == "error" {
			return "warn"
		}
	}
	return "info"
}

// Handler receives events synchronously on the emitting goroutine.
type Handler func(Event)

// Emitter stamps seq and ts and fans events out to a handler. Safe for concurrent use.
type Emitter struct {
	mu      sync.Mutex
	seq     uint64
	handler Handler
	now     func() time.Time
}

// NewEmitter returns an emitter delivering to h (nil discards); now defaults to time.Now.
func NewEmitter(h Handler, now func() time.Time) *Emitter {
	if now == nil {
		now = time.Now
	}
	return &Emitter{handler: h, now: now}
}

// Stamp fills Seq, TS and Level and delivers the event; it returns the stamped event.
// Delivery happens under the emitter's lock, so a handler sees seq strictly increasing
// even when several sessions (a session and its sub-workflow children) emit at once; a
// handler must not emit itself.
func (em *Emitter) Stamp(e Event) Event {
	em.mu.Lock()
	defer em.mu.Unlock()
	em.seq++
	e.Seq = em.seq
	if e.TS == 0 {
		e.TS = em.now().UnixMilli()
	}
	if e.Level == "" {
		e.Level = DefaultLevel(e.Type, e.Data)
	}
	if em.handler != nil {
		em.handler(e)
	}
	return e
}

// Log writes lifecycle events to a structured log (the functions' CloudWatch log): one
// record per event at the event's level — each level switched on or off —, its message the
// event type, with the session, turn, state, sessionSeq and the payload as the store keeps
// it. The zero value logs nothing; Logger nil is slog.Default().
type Log struct {
	Logger            *slog.Logger
	Info, Warn, Error bool
}

// Enabled reports whether events of level are written.
func (l *Log) Enabled(level string) bool {
	if l == nil {
		return false
	}
	switch level {
	case "warn":
		return l.Warn
	case "error":
		return l.Error
	default:
		return l.Info
	}
}

// Write logs ev (with the call's turn id and the session's state) when its level is on.
func (l *Log) Write(ctx context.Context, ev Event, turnID, state string) {
	if !l.Enabled(ev.Level) {
		return
	}
	logger := l.Logger
	if logger == nil {
		logger = slog.Default()
	}
	level := slog.LevelInfo
	switch ev.Level {
	case "warn":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	}
	attrs := []slog.Attr{slog.String("event", ev.Type), slog.String("sessionId", ev.SessionID), slog.Int64("sessionSeq", ev.SessionSeq)}
	if turnID != "" {
		attrs = append(attrs, slog.String("turnId", turnID))
	}
	if state != "" {
		attrs = append(attrs, slog.String("state", state))
	}
	if ev.DispatchID != "" {
		attrs = append(attrs, slog.String("subWorkflowDispatchId", ev.DispatchID))
	}
	if len(ev.Data) > 0 {
		attrs = append(attrs, slog.Any("data", ev.Data))
	}
	logger.LogAttrs(ctx, level, ev.Type, attrs...)
}
