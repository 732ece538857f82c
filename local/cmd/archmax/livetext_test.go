package main

import (
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/events"
)

func delta(id, text string) events.Event {
	return events.Event{Type: events.AgentTextDelta, Data: map[string]any{"state": "desk", "text": text, "messageId": id}}
}

func agentText(id, text string, partial bool) events.Event {
	data := map[string]any{"state": "desk", "text": text, "messageId": id}
	if partial {
		data["partial"] = true
	}
	return events.Event{Type: events.AgentText, Data: data}
}

// On a terminal each piece of the agent's text is printed as it arrives, on the message's
// "💬" line, which its agent-text only ends; leading and trailing blanks are not printed,
// line breaks are indented, control characters escaped.
func TestAgentTextPrintedAsItArrives(t *testing.T) {
	var out, flow syncBuffer
	r := newRenderer(&out, &flow, false, false)
	r.streaming = true
	r.event(delta("m1", "\n  Looking"))
	if got := flow.take(); got != "  💬 Looking" {
		t.Fatalf("first piece: %q", got)
	}
	r.event(delta("m1", " at it \n"))
	if got := flow.take(); got != " at it" {
		t.Errorf("second piece: %q", got)
	}
	r.event(delta("m1", "now\x1b[2J.\n\n"))
	if got := flow.take(); got != " \n     now\\u001B[2J." { // as the whole message prints it
		t.Errorf("third piece: %q", got)
	}
	r.event(events.Event{Type: events.ModelUsage, Data: map[string]any{"state": "desk", "inputTokens": 10}}) // prints nothing
	r.event(agentText("m1", "Looking at it \nnow\x1b[2J.", false))
	if got := flow.take(); got != "\n" {
		t.Errorf("the agent-text ends the line: %q", got)
	}
	// another event ends an open line; a partial agent-text ends it with a mark
	r.event(delta("m2", "Half"))
	r.event(events.Event{Type: events.Warning, Data: map[string]any{"scope": "model", "message": "slow"}})
	r.event(delta("m2", " more"))
	r.event(agentText("m2", "Half more", true))
	if got := flow.take(); got != "  💬 Half\n  ⚠ model: slow\n  💬 more …\n" {
		t.Errorf("interrupted and partial: %q", got)
	}
	if got := out.take(); got != "" {
		t.Errorf("stdout: %q", got)
	}
}

// Off a terminal (and for a sub-workflow child's text) the deltas print nothing: the
// message is printed whole, once.
func TestAgentTextWholeOffATerminal(t *testing.T) {
	var out, flow syncBuffer
	r := newRenderer(&out, &flow, false, false)
	r.event(delta("m1", "Looking"))
	r.event(agentText("m1", "Looking.", false))
	if got := flow.take(); got != "  💬 Looking.\n" {
		t.Errorf("whole: %q", got)
	}
	r.streaming = true
	child := delta("m2", "Child")
	child.SessionID, child.DispatchID = "s1~1", "1"
	r.event(child)
	text := agentText("m2", "Child text.", false)
	text.SessionID, text.DispatchID = "s1~1", "1"
	r.event(text)
	if got := flow.take(); got != "    ~1   💬 Child text.\n" {
		t.Errorf("child: %q", got)
	}
}

// No progress line is drawn over text that is arriving.
func TestNoProgressLineOverStreamingText(t *testing.T) {
	fake := onATerminal(t)
	var out, flow syncBuffer
	r := newRenderer(&out, &flow, false, false)
	r.streaming = true
	r.startProgress()
	r.event(delta("m1", "Thinking"))
	fake.Advance(3 * time.Second)
	r.event(agentText("m1", "Thinking", false))
	if got := flow.take(); got != "  💬 Thinking\n" {
		t.Errorf("%q", got)
	}
	r.stop()
}
