package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/archmax-ai/archmax/core/events"
	"github.com/archmax-ai/archmax/core/session"
)

// renderer prints the state flow as it happens, built on the lifecycle events.
type renderer struct {
	mu      sync.Mutex
	w       io.Writer
	json    bool
	pending string // the session header, printed with the first event
}

func newRenderer(w io.Writer, jsonOut bool) *renderer { return &renderer{w: w, json: jsonOut} }

func (r *renderer) printf(format string, a ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pending != "" {
		fmt.Fprint(r.w, r.pending)
		r.pending = ""
	}
	fmt.Fprintf(r.w, format, a...)
}

// header sets the session line, printed once the call has passed its checks (first event).
func (r *renderer) header(sessionID, workflow string) {
	if r.json {
		return
	}
	r.pending = fmt.Sprintf("session %s · workflow %s\n", sessionID, workflow)
}

// event renders one lifecycle event.
func (r *renderer) event(e events.Event) {
	if r.json {
		b, _ := json.Marshal(e)
		r.printf("%s\n", b)
		return
	}
	// a sub-workflow child's events are indented under its dispatch and marked with its
	// number, so concurrent children's lines can be told apart
	pre := strings.Repeat("    ", strings.Count(e.SessionID, "~"))
	if e.DispatchID != "" {
		pre += "~" + e.DispatchID + " "
	}
	p := func(format string, a ...any) { r.printf(pre+format, a...) }
	origin := ""
	if o := e.Str("origin"); o != "" {
		origin = " [" + o + "]"
	}
	switch e.Type {
	case events.StateEnter:
		p("→ %s\n", e.Str("state"))
	case events.Advance:
		if e.Str("from") == events.Origin {
			return
		}
		p("  ⇢ %s → %s: %s\n", e.Str("from"), e.Str("to"), e.Str("reason"))
	case events.StateErrorRouted:
		p("  ✗ %s failed: %s\n  ⇢ on_error → %s\n", e.Str("state"), e.Str("reason"), e.Str("to"))
	case events.ToolCalled:
		detail := ""
		if d := oneLine(e.Str("detail"), 80); d != "" {
			detail = " " + d
		}
		p("  ⚙ %s%s%s\n", e.Str("tool"), origin, detail)
	case events.ToolResult:
		if e.Str("status") == "error" {
			p("    ! %s\n", oneLine(e.Str("output"), 160))
		}
	case events.ToolBlocked:
		p("  ⛔ %s%s refused (%s): %s\n", e.Str("tool"), origin, e.Str("ruleId"), oneLine(e.Str("reason"), 160))
	case events.AgentText:
		p("  💬 %s\n", indent(e.Str("text")))
	case events.CodeOutput:
		p("  │ %s\n", e.Str("line"))
	case events.Raised:
		p("  ✗ raised %s: %s\n", e.Str("code"), e.Str("reason"))
	case events.VariablesSet:
		if names, ok := e.Data["names"].([]string); ok && e.Str("state") != "" {
			p("  ≔ %s\n", strings.Join(names, ", "))
		}
	case events.SubWorkflowStart:
		if child := e.Str("childSessionId"); child != "" {
			p("  ⤵ %s as %s\n", e.Str("workflow"), child)
		}
	case events.SubWorkflowResult:
		switch reason := e.Str("reason"); {
		case e.Data["refused"] == true:
			p("  ⛔ %s refused: %s\n", e.Str("workflow"), oneLine(reason, 160))
		case reason != "":
			p("  ⤴ %s %s: %s\n", e.Str("workflow"), e.Str("status"), oneLine(reason, 160))
		default:
			p("  ⤴ %s %s\n", e.Str("workflow"), e.Str("status"))
		}
	case events.Warning:
		p("  ⚠ %s: %s\n", e.Str("scope"), e.Str("message"))
	}
}

// outcome prints how the call settled.
func (r *renderer) outcome(o *session.Outcome) {
	if r.json {
		b, _ := json.Marshal(map[string]any{"type": "outcome", "sessionId": o.SessionID, "kind": o.Kind, "state": o.State,
			"reply": o.Reply, "rejected": o.Rejected, "exit": o.Exit, "usage": o.Usage, "turn": o.Turn, "pending": o.Pending})
		r.printf("%s\n", b)
		return
	}
	switch o.Kind {
	case session.KindRejected:
		r.printf("✗ rejected in %s: %s\n", o.State, o.Rejected)
	case session.KindFailed:
		r.printf("✗ failed in %s: %s (%s)\n", o.State, o.Exit.Reason, o.Exit.Code)
	default:
		r.printf("✔ %s in %s (turn %d)\n", o.Kind, o.State, o.Turn)
	}
	if o.Reply != "" {
		r.printf("reply: %s\n", o.Reply)
	}
	if p := o.Pending; p != nil {
		switch {
		case p.Decision != nil:
			var choices []string
			for _, t := range p.Decision.Transitions {
				choices = append(choices, t.To)
			}
			where := p.Decision.State
			if d := innermost(p.Delegation); d != nil {
				where = fmt.Sprintf("%s of sub-workflow %s (%s)", p.Decision.State, d.Workflow, d.SessionID)
			}
			r.printf("⏸ awaiting a decision in %s (park %s): archmax decide %s <%s>\n", where, p.ParkID, o.SessionID, strings.Join(choices, "|"))
		case p.Input != nil:
			wake := ""
			if p.Input.ResumeAt != "" {
				wake = ", wakes at " + p.Input.ResumeAt
			}
			where := p.Input.State
			if d := innermost(p.Delegation); d != nil {
				where = fmt.Sprintf("%s of sub-workflow %s (%s)", p.Input.State, d.Workflow, d.SessionID)
			}
			r.printf("⏸ awaiting input in %s (park %s%s): %s — archmax deliver %s <trigger>\n", where, p.ParkID, wake, p.Input.Reason, o.SessionID)
		}
	}
	if o.Usage != nil {
		r.printf("usage: in %d · out %d · cache r %d/w %d\n", o.Usage.InputTokens, o.Usage.OutputTokens, o.Usage.CacheReadTokens, o.Usage.CacheCreationTokens)
	}
}

// innermost is the sub-workflow that holds a delegated park (nil for the session's own).
func innermost(d *session.DelegatedPark) *session.DelegatedPark {
	for d != nil && d.Inner != nil {
		d = d.Inner
	}
	return d
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > max {
		return string(r[:max-1]) + "…"
	}
	return s
}

func indent(s string) string { return strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n     ") }
