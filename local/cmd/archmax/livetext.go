package main

import (
	"fmt"
	"strings"

	"github.com/archmax-ai/archmax/core/events"
)

// On a terminal the agent's text is printed as it arrives: the model's answer streams
// (agent-text-delta events), and each piece is written to the narration's "💬" line at once;
// the message's agent-text then only ends the line. A partial agent-text (the call failed
// after some text) ends it with a "…". Elsewhere — a file, a pipe, --json, --verbose — the
// text is printed whole, once, when the message is complete; a sub-workflow child's text
// always is (children run side by side, their lines would mix).

// liveText is the agent message being printed as it streams.
type liveText struct {
	id      string // its messageId
	started bool   // the "💬" line is open (a non-blank piece arrived)
	ended   bool   // another line came between: the line is closed, the message printed
	held    string // trailing blanks, written only when more text follows
}

// streamText prints e when it belongs to the live message — a root session's delta, or the
// agent-text that ends it — and reports whether it did; any other event that prints first
// ends an open line. Called with r.mu held, after stepped.
func (r *renderer) streamText(e events.Event) bool {
	if !r.streaming {
		return false
	}
	root := e.DispatchID == "" && !strings.Contains(e.SessionID, "~")
	id := e.Str("messageId")
	switch {
	case e.Type == events.AgentTextDelta && root:
		if r.live != nil && (r.live.id != id || r.live.ended) {
			r.endLive("")
			r.live = nil
		}
		if r.live == nil {
			r.live = &liveText{id: id}
		}
		r.liveWrite(e.Str("text"))
		if r.prog != nil {
			r.prog.state = "" // no progress line over the text: it is the progress
		}
		return true
	case e.Type == events.AgentText && root && r.live != nil && r.live.id == id:
		printed := r.live.started
		mark := ""
		if e.Data["partial"] == true {
			mark = " …"
		}
		r.endLive(mark)
		r.live = nil
		return printed // a message whose pieces were all blank is printed as usual
	case e.Type == events.ModelUsage:
		// the call's usage comes before its message's agent-text, and prints nothing
	case r.live != nil && e.Type != events.AgentTextDelta:
		r.endLive("")
	}
	return false
}

// liveWrite writes one piece of the live message: cleaned, its line breaks indented as the
// whole message's are, leading blanks of the message and trailing ones held back.
func (r *renderer) liveWrite(text string) {
	l := r.live
	if !l.started {
		text = strings.TrimLeft(text, " \t\r\n")
		if text == "" {
			return
		}
		r.clearProgress()
		r.flushHeader()
		fmt.Fprint(r.flow, "  💬 ")
		l.started = true
	}
	text = l.held + text
	body := strings.TrimRight(text, " \t\r\n")
	l.held = text[len(body):]
	fmt.Fprint(r.flow, strings.ReplaceAll(clean(body), "\n", "\n     "))
}

// endLive ends the live message's line (with mark), if one is open. The message stays
// live, so its agent-text does not print it again.
func (r *renderer) endLive(mark string) {
	if l := r.live; l != nil && l.started && !l.ended {
		fmt.Fprint(r.flow, mark+"\n")
		l.ended = true
	}
}
