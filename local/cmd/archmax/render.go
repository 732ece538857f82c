package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/archmax-ai/archmax/core/events"
	"github.com/archmax-ai/archmax/core/pricing"
	"github.com/archmax-ai/archmax/core/session"
)

// renderer prints a call as it happens, built on the lifecycle events, in the reference CLI's
// streams: the narration (header, state flow, outcome line, park report, usage, --verbose
// lines) on flow (stderr), the result — what the session said — on out (stdout). With json,
// every event and the outcome are JSON lines on out and nothing is narrated.
type renderer struct {
	mu      sync.Mutex
	out     io.Writer
	flow    io.Writer
	json    bool
	verbose bool
	pending string // the session header, printed with the first event
	// workflow is the session's, from the header; reader, when set, reads what a park
	// report shows beyond the park record (decider.go).
	workflow string
	reader   *parkReader
	// color paints the narration; prog is the live line of a long step (tty.go).
	color bool
	prog  *progress
	// streaming prints the agent's text as it arrives; live is the message it prints
	// (livetext.go).
	streaming bool
	live      *liveText
}

func newRenderer(out, flow io.Writer, jsonOut, verbose bool) *renderer {
	return &renderer{out: out, flow: flow, json: jsonOut, verbose: verbose}
}

// say prints narration (stderr), after the pending header. Model- and script-written text
// reaches it, so control characters are escaped (clean).
func (r *renderer) say(format string, a ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.clearProgress()
	r.flushHeader()
	text := clean(fmt.Sprintf(format, a...))
	if r.color {
		text = paint(text)
	}
	fmt.Fprint(r.flow, text)
}

// result prints a line of the command's result (stdout).
func (r *renderer) result(text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.clearProgress()
	r.flushHeader()
	fmt.Fprintln(r.out, text)
}

func (r *renderer) flushHeader() {
	if r.pending != "" {
		fmt.Fprint(r.flow, r.pending)
		r.pending = ""
	}
}

// header sets the session line, printed once the call has passed its checks (first event).
func (r *renderer) header(sessionID, workflow string) {
	if r.json {
		return
	}
	r.mu.Lock()
	r.workflow = workflow
	r.pending = fmt.Sprintf("session %s · workflow %s\n", sessionID, workflow)
	r.mu.Unlock()
}

// event renders one lifecycle event.
func (r *renderer) event(e events.Event) {
	if r.json {
		b, _ := json.Marshal(e)
		r.mu.Lock()
		fmt.Fprintf(r.out, "%s\n", b)
		r.mu.Unlock()
		return
	}
	r.mu.Lock()
	r.stepped(e.Str("state"))
	printed := r.streamText(e)
	r.mu.Unlock()
	if printed {
		return
	}
	if r.verbose {
		b, _ := json.Marshal(e)
		r.say("· %s\n", b)
	}
	// a sub-workflow child's events are indented under its dispatch and marked with its
	// number, so concurrent children's lines can be told apart
	pre := strings.Repeat("    ", strings.Count(e.SessionID, "~"))
	if e.DispatchID != "" {
		pre += "~" + e.DispatchID + " "
	}
	p := func(format string, a ...any) { r.say(pre+format, a...) }
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

// The calls whose outcome the renderer reports; they differ in what stdout says when the
// session said nothing.
const (
	verbRun     = "run"
	verbDecided = "decided"
	verbDeliver = "delivered"
	verbReply   = "replied"
)

// outcome reports how the call settled — the outcome line, a park and how to answer it, and
// the usage on stderr; what the session said on stdout — and returns the exit code (1 for a
// failed or rejected session, else 0).
func (r *renderer) outcome(o *session.Outcome, verb string) int {
	if verb == verbRun { // a run that answered a park is reported as that resume (the reference's printOutcome)
		switch o.Disposition {
		case session.DispositionDeliver:
			verb = verbDeliver
		case session.DispositionReply:
			verb = verbReply
		}
	}
	r.stop()
	code := exitOK
	if o.Kind == session.KindFailed || o.Kind == session.KindRejected {
		code = exitFail
	}
	if r.json {
		b, _ := json.Marshal(map[string]any{"type": "outcome", "sessionId": o.SessionID, "kind": o.Kind, "state": o.State,
			"reply": o.Reply, "rejected": o.Rejected, "exit": o.Exit, "usage": o.Usage, "turn": o.Turn, "pending": o.Pending})
		r.mu.Lock()
		fmt.Fprintf(r.out, "%s\n", b)
		r.mu.Unlock()
		return code
	}
	switch o.Kind {
	case session.KindRejected:
		r.say("✗ rejected in %s: %s\n", o.State, o.Rejected)
	case session.KindFailed:
		r.say("✗ failed in %s: %s (%s)\n", o.State, o.Exit.Reason, o.Exit.Code)
	case session.KindParked:
		if verb == verbReply {
			r.say("✔ replied in %s (turn %d)\n", o.State, o.Turn)
		} else {
			r.say("✔ parked in %s (turn %d)\n", o.State, o.Turn)
		}
	default:
		r.say("✔ %s in %s (turn %d)\n", o.Kind, o.State, o.Turn)
	}
	r.park(o, verb)
	if o.Usage != nil {
		r.say("usage: %s\n", usageText(o.Usage))
	}
	switch reply := strings.TrimRight(o.Reply, "\n"); {
	case o.Kind == session.KindParked && (verb == verbDecided || verb == verbDeliver):
		r.result(reparked(o)) // the reference: where it parked again, never the message
	case reply != "":
		r.result(reply)
	case code == exitFail:
		// nothing said: the reason is on stderr
	case verb == verbReply:
		r.result("(the session had nothing to say)")
	case verb == verbRun:
		r.result("(no textual answer)")
	default:
		r.result(fmt.Sprintf("Session %s resumed (state=%s).", o.SessionID, o.State))
	}
	return code
}

// reparked is stdout's line for a resumed session that parked again with nothing to say.
func reparked(o *session.Outcome) string {
	if p := o.Pending; p != nil && p.Input != nil {
		return fmt.Sprintf("Session %s parked again in the '%s' state.", o.SessionID, o.State)
	}
	return fmt.Sprintf("Session %s parked at the '%s' human state.", o.SessionID, o.State)
}

// park reports a live park on stderr: where, its id, and the command that answers it.
func (r *renderer) park(o *session.Outcome, verb string) {
	p := o.Pending
	if p == nil {
		return
	}
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
		if verb == verbReply {
			r.say("Session %s is still parked at the '%s' human state — a decision is pending.\n", o.SessionID, p.Decision.State)
		}
		r.say("⏸ awaiting a decision in %s (park %s): archmax decide %s --to <%s>\n", where, p.ParkID, o.SessionID, strings.Join(choices, "|"))
		if r.reader == nil && len(p.Decision.Evidence) > 0 {
			r.say("  evidence: %s\n", strings.Join(p.Decision.Evidence, ", "))
		}
		if detail := r.decisionDetail(context.Background(), o); detail != "" {
			r.say("%s", detail)
		}
		r.say("  answer without deciding: archmax reply %s <message…>\n", o.SessionID)
	case p.Input != nil:
		wake := ""
		if p.Input.ResumeAt != "" {
			wake = ", wakes at " + p.Input.ResumeAt
		}
		where := p.Input.State
		if d := innermost(p.Delegation); d != nil {
			where = fmt.Sprintf("%s of sub-workflow %s (%s)", p.Input.State, d.Workflow, d.SessionID)
		}
		r.say("⏸ awaiting input in %s (park %s%s): %s — archmax deliver %s --trigger <id> [--variables JSON]\n", where, p.ParkID, wake, p.Input.Reason, o.SessionID)
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

// clean makes text safe to print on a terminal: every control character but LF and TAB
// (ESC sequences included), the C1 controls, the bidirectional overrides and isolates, and
// invalid UTF-8 are written as \u escapes, so text a model or script wrote cannot move the
// cursor, recolour or hide what the terminal shows. Stdout's reply is printed as is.
func clean(s string) string {
	if !needsCleaning(s) {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			b.WriteString(`\uFFFD`)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func needsCleaning(s string) bool {
	if !utf8.ValidString(s) {
		return true
	}
	for _, r := range s {
		if unsafeRune(r) {
			return true
		}
	}
	return false
}

func unsafeRune(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// printable reports whether file bytes can be shown as text: UTF-8 without NUL.
func printable(data []byte) bool { return utf8.Valid(data) && !bytes.ContainsRune(data, 0) }

// usageText is a session's usage as the footer and `sessions` show it: the tokens, then the
// cost when a price applied ("in 120 · out 40 · cache r 80/w 20 · $0.000412"; 6 decimals
// below $0.01, else 4); an unpriced session shows tokens only.
func usageText(u *session.Usage) string {
	s := fmt.Sprintf("in %d · out %d · cache r %d/w %d", u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheCreationTokens)
	if u.CostUSD != nil {
		s += " · " + pricing.Format(*u.CostUSD)
	}
	return s
}
