package session

import (
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/core/events"
	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/transcript"
)

const graderFlow = `
title: Graded drafts
states:
  draft:
    triggers:
      manual:
    instructions: Draft the answer, then send it to the check.
    transitions:
      - to: check
        description: The draft is written to scratchpad/draft.md.
  check:
    type: grader
    instructions: The draft must name a date. Send it back otherwise.
    on_error: triage
    transitions:
      - to: publish
        description: The draft names a date.
      - to: draft
        description: The draft needs another pass.
  triage:
    instructions: Tell the person the check could not run.
  publish:
    instructions: Publish and stop.
`

func graderSays(text string) reply { return says(text) }

// 03 GR-10…GR-19: entering a grader runs an isolated sub-agent on the grader role; its
// accepted advance moves the run with a grader trail step and the [grader] note; none of its
// messages enter the transcript, none of its text streams, its usage is the session's.
func TestGraderAdvances(t *testing.T) {
	h := newHarness(t, graderFlow, nil)
	h.script(
		calls("Drafting.", call{"archmax_advance", map[string]any{"to": "check", "reason": "draft ready"}}),
		calls("Let me look.", call{"archmax_get_history", map[string]any{}}),
		calls("", call{"archmax_advance", map[string]any{"to": "publish", "reason": "it names 3 March"}}),
		says("Published."),
	)
	out := h.send("g1", "write it", nil)
	if out.Kind != KindCompleted || out.State != "publish" || out.Reply != "Published." {
		t.Fatalf("outcome %s in %s: %q", out.Kind, out.State, out.Reply)
	}
	if got := trailOf(out); got != "trigger:draft agent:check grader:publish" {
		t.Errorf("trail = %s", got)
	}
	if r := out.AuditTrail[2].Reason; r != "it names 3 March" {
		t.Errorf("grader step reason = %q", r)
	}
	var grader []transcript.Message
	for _, m := range out.Messages {
		if m.State == "check" {
			t.Errorf("a grader message entered the transcript: %+v", m)
		}
		if m.Note == transcript.NoteGrader {
			grader = append(grader, m)
		}
	}
	if len(grader) != 1 || grader[0].Text != "[grader] 'check' moved the run to 'publish': it names 3 March. You are now in 'publish'." {
		t.Fatalf("grader notes = %+v", grader)
	}
	// the grader's requests: role grader, the preamble then the criteria, an opening that
	// names the state, where the run came from and why, and its own conversation only
	g1, g2 := h.model.requests[1], h.model.requests[2]
	if g1.Metadata["archmax.role"] != "grader" || g2.Metadata["archmax.role"] != "grader" || h.model.requests[3].Metadata["archmax.role"] != "agent" {
		t.Errorf("roles = %s %s %s", g1.Metadata["archmax.role"], g2.Metadata["archmax.role"], h.model.requests[3].Metadata["archmax.role"])
	}
	sys := g1.System[0].Text
	if !strings.Contains(sys, "grader of the workflow state 'check'") || !strings.HasSuffix(sys, "The draft must name a date. Send it back otherwise.") ||
		!strings.Contains(sys, "`archmax_advance` to 'publish': The draft names a date.") {
		t.Errorf("grader system prompt = %q", sys)
	}
	if len(g1.Messages) != 1 || !strings.Contains(g1.Messages[0].Content[0].Text, "'check' from 'draft'") ||
		!strings.Contains(g1.Messages[0].Content[0].Text, "draft ready") {
		t.Errorf("grader opening = %+v", g1.Messages)
	}
	if len(g2.Messages) != 3 || g2.Messages[2].Content[0].Kind != model.BlockToolResult ||
		!strings.Contains(g2.Messages[2].Content[0].ToolResult.Content, `"messages"`) {
		t.Errorf("second grader call's conversation = %+v", g2.Messages)
	}
	for _, ev := range h.eventsOf(events.AgentText) {
		if ev.Data["state"] == "check" {
			t.Errorf("grader text streamed: %+v", ev)
		}
	}
	graderUsage := 0
	for _, ev := range h.eventsOf(events.ModelUsage) {
		if ev.Data["role"] == "grader" {
			graderUsage++
		}
	}
	if graderUsage != 2 || out.Usage.InputTokens != 200+200+200+100 {
		t.Errorf("grader usage events %d, session input tokens %d", graderUsage, out.Usage.InputTokens)
	}
	called := 0
	for _, ev := range h.eventsOf(events.ToolCalled) {
		if ev.Data["origin"] == "grader" {
			called++
		}
	}
	if called != 2 {
		t.Errorf("grader tool-called events = %d, want 2", called)
	}
}

// GR-20: a grader that answers in text without deciding fails closed through on_error with
// the exact reason; its text never reaches the person.
func TestGraderWithoutDecisionFailsClosed(t *testing.T) {
	h := newHarness(t, graderFlow, nil)
	h.script(
		calls("", call{"archmax_advance", map[string]any{"to": "check", "reason": "ready"}}),
		graderSays("Looks fine to me!"),
		says("The check could not run."),
	)
	out := h.send("g2", "write it", nil)
	if out.State != "triage" || out.Reply != "The check could not run." {
		t.Fatalf("outcome %s in %s: %q", out.Kind, out.State, out.Reply)
	}
	want := "[error] The 'check' state failed: grader state 'check' finished without calling archmax_advance or archmax_raise. Routing to the 'triage' error handler."
	found := false
	for _, m := range out.Messages {
		if m.Text == want {
			found = true
		}
		if strings.Contains(m.Text, "Looks fine") {
			t.Errorf("the grader's text reached the transcript: %+v", m)
		}
	}
	if !found {
		t.Errorf("no error note %q in %+v", want, notes(out))
	}
}

// GR-17: the first accepted decision wins — a second decision in the same step is refused
// and the grader stops after that step; a raise ends the run as failed.
func TestGraderDecisions(t *testing.T) {
	h := newHarness(t, graderFlow, nil)
	h.script(
		calls("", call{"archmax_advance", map[string]any{"to": "check", "reason": "ready"}}),
		calls("", call{"archmax_advance", map[string]any{"to": "draft", "reason": "no date given"}},
			call{"archmax_advance", map[string]any{"to": "publish", "reason": "changed my mind"}}),
		says("I'll add a date."),
	)
	out := h.send("g3", "write it", nil)
	if out.State != "draft" || trailOf(out) != "trigger:draft agent:check grader:draft" {
		t.Fatalf("outcome in %s, trail %s", out.State, trailOf(out))
	}
	if n := len(h.model.requests); n != 3 {
		t.Errorf("model calls = %d: the grader must stop after its deciding step", n)
	}

	r := newHarness(t, graderFlow, nil)
	r.script(
		calls("", call{"archmax_advance", map[string]any{"to": "check", "reason": "ready"}}),
		calls("", call{"archmax_raise", map[string]any{"code": "plagiarism", "reason": "copied text"}}),
	)
	out = r.send("g4", "write it", nil)
	if out.Kind != KindFailed || out.Exit == nil || out.Exit.Code != "plagiarism" {
		t.Fatalf("raise: %s %+v", out.Kind, out.Exit)
	}
}

// GR-16: budget.maxTurns bounds the grader's own model calls; spending them without a
// decision fails the state.
func TestGraderMaxTurns(t *testing.T) {
	flow := strings.Replace(graderFlow, "    on_error: triage\n", "    on_error: triage\n    budget: { maxTurns: 2 }\n", 1)
	h := newHarness(t, flow, nil)
	h.script(
		calls("", call{"archmax_advance", map[string]any{"to": "check", "reason": "ready"}}),
		calls("", call{"archmax_get_history", map[string]any{}}),
		calls("", call{"archmax_get_variables", map[string]any{}}),
		says("Sorry."),
	)
	out := h.send("g5", "write it", nil)
	if out.State != "triage" {
		t.Fatalf("outcome in %s", out.State)
	}
	if m := notes(out); len(m) == 0 || !strings.Contains(m[len(m)-1].Text, "exhausted its turn budget (maxTurns: 2)") {
		t.Errorf("notes = %+v", m)
	}
}

// Issue 7: a grader's advance into a human state hands off with the one reply-only message
// (on the agent role; K5-2: every tool call refused), then parks awaiting the decision.
func TestGraderHandsOffToAHumanState(t *testing.T) {
	flow := strings.Replace(graderFlow, `      - to: publish
        description: The draft names a date.`, `      - to: signoff
        description: The draft names a date; a person signs it off.`, 1) + `  signoff:
    type: human
    transitions:
      - to: publish
        description: Signed off.
        type: approve
`
	h := newHarness(t, flow, nil)
	h.script(
		calls("", call{"archmax_advance", map[string]any{"to": "check", "reason": "ready"}}),
		calls("", call{"archmax_advance", map[string]any{"to": "signoff", "reason": "dated"}}),
		says("A person will sign your draft off."),
	)
	out := h.send("g6", "write it", nil)
	if out.Kind != KindParked || out.ParkedChannel != ChannelDecision || out.State != "signoff" || out.Reply != "A person will sign your draft off." {
		t.Fatalf("outcome %s/%s in %s: %q", out.Kind, out.ParkedChannel, out.State, out.Reply)
	}
	last := h.model.requests[len(h.model.requests)-1]
	if last.Metadata["archmax.role"] != "agent" || last.Metadata["archmax.state"] != "signoff" {
		t.Errorf("handoff call: role %s in %s, want the agent's reply-only call in signoff", last.Metadata["archmax.role"], last.Metadata["archmax.state"])
	}
}

// 01 §7.6, GR-04/GR-13: tools never offered to automated states (write_todos, archmax_eval, …)
// are refused by governance when a grader calls them anyway — tool.not-allowed, never an
// internal error.
func TestGraderCannotCallAgentOnlyTools(t *testing.T) {
	h := newHarness(t, graderFlow, nil)
	h.script(
		calls("", call{"archmax_advance", map[string]any{"to": "check", "reason": "ready"}}),
		calls("", call{"write_todos", map[string]any{"todos": []any{}}}, call{"archmax_eval", map[string]any{"code": "1"}}),
		calls("", call{"archmax_advance", map[string]any{"to": "publish", "reason": "dated"}}),
		says("Published."),
	)
	h.send("g7", "write it", nil)
	blocked := map[string]string{}
	for _, ev := range h.eventsOf(events.ToolBlocked) {
		blocked[ev.Str("tool")] = ev.Str("ruleId")
	}
	if blocked["write_todos"] != "tool.not-allowed" || blocked["archmax_eval"] != "tool.not-allowed" {
		t.Errorf("blocked = %v", blocked)
	}
	conv := h.model.requests[2].Messages
	for _, b := range conv[len(conv)-1].Content {
		if strings.Contains(b.ToolResult.Content, "unknown tool") || b.ToolResult.Status != "error" {
			t.Errorf("grader tool result = %+v", b.ToolResult)
		}
	}
}
