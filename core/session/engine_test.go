package session

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/clock"
	"github.com/archmax-ai/archmax/core/events"
	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/transcript"
)

const twoAgents = `
title: Two agents
instructions: Be brief.
states:
  intake:
    triggers:
      manual:
    instructions: Find out what is needed, then advance.
    requires: [topic]
    transitions:
      - to: answer
        description: The topic is known.
  answer:
    instructions: Answer and stop.
`

// 02 §1.5 agent row: advance moves the loop, an answer without a tool call ends the turn.
func TestAgentAdvanceThenEndTurn(t *testing.T) {
	h := newHarness(t, twoAgents, nil)
	h.script(
		calls("Noted.", call{"archmax_set_variables", map[string]any{"variables": map[string]any{"topic": "badges"}}}, advance("answer", "topic recorded")),
		says("Here is your answer."),
	)
	out := h.send("s1", "I need help with badges", nil)
	if out.Kind != KindCompleted || out.State != "answer" || out.Reply != "Here is your answer." {
		t.Fatalf("outcome = %s in %s reply %q", out.Kind, out.State, out.Reply)
	}
	if got := trailOf(out); got != "trigger:intake agent:answer" {
		t.Errorf("trail = %s", got)
	}
	if out.AuditTrail[1].Reason != "topic recorded" {
		t.Errorf("agent step reason = %q", out.AuditTrail[1].Reason)
	}
	if m := toolMessage(t, out, "archmax_advance", 0); m.Text != "Advanced to state 'answer'. You may now use the tools allowed in this state." || m.Error {
		t.Errorf("advance reply = %q (error %v)", m.Text, m.Error)
	}
	if v := out.Variables["topic"]; v.Value != "badges" || v.Locked {
		t.Errorf("topic = %+v, want unlocked badges", v)
	}
	if v := out.Variables["trigger"]; v.Value != "manual" || !v.Locked {
		t.Errorf("trigger variable = %+v", v)
	}
	// the second model call ran in the target state with its own prompt
	req := h.model.requests[1]
	if req.Metadata["archmax.state"] != "answer" || req.Metadata["archmax.turn"] != "1" || req.Metadata["archmax.role"] != "agent" {
		t.Errorf("metadata = %v", req.Metadata)
	}
	if sys := perCallOf(req); !strings.Contains(sys, "Answer and stop.") || !strings.Contains(sys, "This state is terminal") {
		t.Errorf("per-call prompt = %q", sys)
	}
	if out.Usage == nil || out.Usage.InputTokens != 300 || out.Usage.CacheReadTokens != 50 {
		t.Errorf("usage = %+v", out.Usage)
	}
	if n := len(h.eventsOf(events.ModelUsage)); n != 2 {
		t.Errorf("model-usage events = %d", n)
	}
}

// CS-35 / V-41: the requires gate and the edge check refuse an advance; the agent retries in place.
func TestAdvanceRefusalsAreRecoverable(t *testing.T) {
	h := newHarness(t, twoAgents, nil)
	h.script(
		calls("", advance("answer", "go")),
		calls("", advance("nowhere", "go")),
		calls("", call{"archmax_set_variables", map[string]any{"variables": map[string]any{"topic": "x"}}}),
		calls("", advance("answer", "go")),
		says("done"),
	)
	out := h.send("s1", "hi", nil)
	if out.Kind != KindCompleted || out.State != "answer" {
		t.Fatalf("outcome %s in %s", out.Kind, out.State)
	}
	if m := toolMessage(t, out, "archmax_advance", 0); m.Text != "archmax_advance rejected: cannot leave 'intake' yet: 'topic' is not set. Record it with archmax_set_variables, then advance." || !m.Error {
		t.Errorf("requires refusal = %q", m.Text)
	}
	// requires is checked before the edge (CS-35 order), so the unknown target is still a requires refusal
	if m := toolMessage(t, out, "archmax_advance", 1); !strings.HasPrefix(m.Text, "archmax_advance rejected: cannot leave 'intake' yet") {
		t.Errorf("second refusal = %q", m.Text)
	}
	if got := trailOf(out); got != "trigger:intake agent:answer" {
		t.Errorf("refused advances must add no trail step: %s", got)
	}
}

func TestAdvanceToUndeclaredTargetNamesValidTargets(t *testing.T) {
	h := newHarness(t, strings.Replace(twoAgents, "    requires: [topic]\n", "", 1), nil)
	h.script(calls("", advance("nowhere", "go")), says("ok"))
	out := h.send("s1", "hi", nil)
	if m := toolMessage(t, out, "archmax_advance", 0); m.Text != "archmax_advance rejected: cannot advance from 'intake' to 'nowhere'. Valid target slugs: answer." {
		t.Errorf("edge refusal = %q", m.Text)
	}
	if out.State != "intake" || out.Kind != KindCompleted {
		t.Errorf("outcome %s in %s", out.Kind, out.State)
	}
}

// 02 §2.3, 01 §7.2: archmax_raise ends the session failed with the exit; no on_error.
func TestRaiseEndsFailed(t *testing.T) {
	h := newHarness(t, twoAgents, nil)
	h.script(calls("", call{"archmax_raise", map[string]any{"code": "no_access", "reason": "The person has no badge."}}))
	out := h.send("s1", "hi", nil)
	if out.Kind != KindFailed || out.Status != StatusFailed || out.Exit == nil || out.Exit.Code != "no_access" || out.Exit.Success {
		t.Fatalf("outcome = %+v exit %+v", out.Kind, out.Exit)
	}
	if n := len(h.eventsOf(events.Raised)); n != 1 {
		t.Errorf("raised events = %d", n)
	}
}

func TestRaiseMustStandAlone(t *testing.T) {
	h := newHarness(t, twoAgents, nil)
	h.script(
		calls("", call{"archmax_get_variables", map[string]any{}}, call{"archmax_raise", map[string]any{"code": "x", "reason": "y"}}),
		says("ok"),
	)
	out := h.send("s1", "hi", nil)
	if out.Kind != KindCompleted {
		t.Fatalf("a raise beside another call must be refused, got %s", out.Kind)
	}
	if m := toolMessage(t, out, "archmax_raise", 0); m.Text != raiseNotAlone || !m.Error {
		t.Errorf("raise reply = %q", m.Text)
	}
}

// 02 §1.7: a finished session is continued in the state it ended in; the call counter grows.
func TestFinishedSessionContinuesInItsState(t *testing.T) {
	h := newHarness(t, strings.Replace(twoAgents, "    requires: [topic]\n", "", 1), nil)
	h.script(calls("", advance("answer", "go")), says("first"))
	h.send("s1", "hi", nil)
	h.script(says("second"))
	out := h.send("s1", "again", nil)
	if out.State != "answer" || out.Reply != "second" || out.Turn != 2 {
		t.Fatalf("second turn: state %s reply %q turn %d", out.State, out.Reply, out.Turn)
	}
	if got := trailOf(out); got != "trigger:intake agent:answer trigger:answer" {
		t.Errorf("trail = %s", got)
	}
	if h.model.requests[2].Metadata["archmax.turn"] != "2" {
		t.Errorf("turn metadata = %s", h.model.requests[2].Metadata["archmax.turn"])
	}
	// the whole transcript is sent, alternating and paired
	if n := len(h.model.requests[2].Messages); n != 5 {
		t.Errorf("third request has %d messages", n)
	}
}

// 02 §1.7: archmax_reset returns to the recorded entry state with a reset trail step.
func TestResetReturnsToEntryState(t *testing.T) {
	h := newHarness(t, strings.Replace(twoAgents, "    requires: [topic]\n", "", 1), nil)
	h.script(
		calls("", advance("answer", "go")),
		calls("", call{"archmax_reset", map[string]any{"reason": "start over"}}),
		says("back at intake"),
	)
	out := h.send("s1", "hi", nil)
	if out.State != "intake" {
		t.Fatalf("state = %s", out.State)
	}
	if got := trailOf(out); got != "trigger:intake agent:answer reset:intake" {
		t.Errorf("trail = %s", got)
	}
	if m := toolMessage(t, out, "archmax_reset", 0); m.Error {
		t.Errorf("reset refused: %s", m.Text)
	}
	if resets := h.eventsOf(events.WorkflowReset); len(resets) != 2 || resets[1].Str("entry") != "intake" {
		t.Errorf("workflow-reset events = %+v (the first turn's and the reset's)", resets)
	}
}

func TestResetNeedsAReason(t *testing.T) {
	h := newHarness(t, twoAgents, nil)
	h.script(calls("", call{"archmax_reset", map[string]any{}}), says("ok"))
	out := h.send("s1", "hi", nil)
	if m := toolMessage(t, out, "archmax_reset", 0); m.Text != resetRejectedNoReason {
		t.Errorf("reset reply = %q", m.Text)
	}
}

// 01 §5.4: host seeds are locked; title is not; the agent cannot rewrite a locked variable.
func TestLocksAndTitle(t *testing.T) {
	h := newHarness(t, twoAgents, nil)
	h.script(
		calls("",
			call{"archmax_set_variables", map[string]any{"variables": map[string]any{"topic": "y", "area": "z"}}},
			call{"archmax_set_variables", map[string]any{"variables": map[string]any{"title": "Badge for Dana"}}},
			call{"archmax_set_variables", map[string]any{"variables": map[string]any{"title": "x"}, "lock": true}},
		),
		says("ok"),
	)
	out := h.send("s1", "hi", map[string]any{"topic": "seeded", "title": "Opening label"})
	if v := out.Variables["topic"]; v.Value != "seeded" || !v.Locked {
		t.Errorf("seeded topic = %+v", v)
	}
	if _, ok := out.Variables["area"]; ok {
		t.Error("a refused set_variables call must write nothing (atomic)")
	}
	m := toolMessage(t, out, "archmax_set_variables", 0)
	if !m.Error || !strings.Contains(m.Text, "'topic' is locked") || !strings.HasSuffix(m.Text, "Nothing was written.") {
		t.Errorf("locked refusal = %q", m.Text)
	}
	if v := out.Variables["title"]; v.Value != "Badge for Dana" || v.Locked {
		t.Errorf("title = %+v", v)
	}
	if m := toolMessage(t, out, "archmax_set_variables", 2); !m.Error || !strings.Contains(m.Text, "'title' is never locked") {
		t.Errorf("title lock refusal = %q", m.Text)
	}
	if n := len(h.eventsOf(events.TitleSet)); n != 2 {
		t.Errorf("title-set events = %d, want the seed and the agent's change", n)
	}
}

func TestGetVariables(t *testing.T) {
	h := newHarness(t, twoAgents, nil)
	h.script(calls("",
		call{"archmax_get_variables", map[string]any{"name": "order", "path": "items.-1.sku"}},
		call{"archmax_get_variables", map[string]any{"name": "missing"}},
	), says("ok"))
	out := h.send("s1", "hi", map[string]any{"order": map[string]any{"items": []any{map[string]any{"sku": "A"}, map[string]any{"sku": "B"}}}})
	if m := toolMessage(t, out, "archmax_get_variables", 0); m.Text != "{\n  \"value\": \"B\"\n}" {
		t.Errorf("path read = %q", m.Text)
	}
	if m := toolMessage(t, out, "archmax_get_variables", 1); m.Text != "Variable 'missing' is not set. Set: order, trigger." || !m.Error {
		t.Errorf("missing read = %q", m.Text)
	}
}

// 01 §4.7 / V-39: a trigger's requires is checked against the opening variables only.
func TestTriggerRequiresRefusesStart(t *testing.T) {
	wf := `
states:
  start:
    triggers:
      manual:
        requires: [order_id, { name: due, type: date }]
`
	h := newHarness(t, wf, nil)
	out := h.send("s1", "hi", map[string]any{"due": "2026-02-30"})
	if out.Kind != KindRejected {
		t.Fatalf("kind = %s", out.Kind)
	}
	want := "Refusing to start: trigger 'manual' requires 'order_id', which this firing does not supply. It also declares typed inputs this firing does not satisfy:"
	if !strings.HasPrefix(out.Rejected, want) {
		t.Errorf("rejected = %q", out.Rejected)
	}
	if len(out.AuditTrail) != 0 || len(h.model.requests) != 0 {
		t.Errorf("a refused start enters no state: trail %v, model calls %d", out.AuditTrail, len(h.model.requests))
	}
	if len(h.eventsOf(events.StateEnter)) != 0 || len(h.eventsOf(events.Warning)) != 1 {
		t.Error("refused start: no state-enter, one warning")
	}
	// the record is persisted
	got, err := h.log.Get(context.Background(), "s1")
	if err != nil || got.Status != "rejected" {
		t.Fatalf("stored head = %+v, %v", got, err)
	}
}

// 02 §2.4: a terminal state finishing with a declared return unset is rejected.
func TestReturnsCheck(t *testing.T) {
	wf := `
states:
  only:
    triggers:
      manual:
        returns: [verdict]
`
	h := newHarness(t, wf, nil)
	h.script(says("done"))
	out := h.send("s1", "hi", nil)
	if out.Kind != KindRejected || out.Rejected != "Completed in state 'only' without setting 'verdict', which trigger 'manual' declares in its 'returns'. Set it with 'archmax_set_variables' before finishing." {
		t.Fatalf("outcome %s: %q", out.Kind, out.Rejected)
	}
	h.script(calls("", call{"archmax_set_variables", map[string]any{"variables": map[string]any{"verdict": "ok"}}}), says("done"))
	out = h.send("s1", "again", nil)
	if out.Kind != KindCompleted {
		t.Fatalf("with the return set: %s %q", out.Kind, out.Rejected)
	}
}

// GOV-31, 02 §7.1: a refused call returns the refusal to the model and the turn goes on.
func TestRefusedToolCallTurnContinues(t *testing.T) {
	wf := `
states:
  work:
    triggers:
      manual:
    tools:
      forbid: [write_file]
`
	h := newHarness(t, wf, nil)
	h.script(
		calls("", call{"write_file", map[string]any{"file_path": "scratchpad/a.md", "content": "x"}}),
		says("I could not write that."),
	)
	out := h.send("s1", "write it", nil)
	m := toolMessage(t, out, "write_file", 0)
	if !m.Blocked || !m.Error || !strings.HasPrefix(m.Text, "[workflow] BLOCKED: 'write_file' on 'scratchpad/a.md' is forbidden by state 'work' (states.work.tools.forbid).") {
		t.Errorf("refusal = %+v", m)
	}
	if out.Kind != KindCompleted {
		t.Errorf("kind = %s", out.Kind)
	}
	blocked := h.eventsOf(events.ToolBlocked)
	if len(blocked) != 1 || blocked[0].Str("ruleId") != "tool.forbidden-here" {
		t.Errorf("tool-blocked events = %+v", blocked)
	}
	if len(h.eventsOf(events.ToolCalled)) != 0 {
		t.Error("a refused call emits no tool-called")
	}
	// the refused tool is not even offered
	for _, ts := range h.model.requests[0].Tools {
		if ts.Name == "write_file" {
			t.Error("a bare forbid withholds the tool from the surface")
		}
	}
}

// 01 §3.3.11, GOV-41: skills are closed by default; the authoring plane finds nothing.
func TestSkillsAndAuthoringPlane(t *testing.T) {
	wf := `
states:
  work:
    triggers:
      manual:
    skills:
      allow: [open-skill]
`
	files := map[string]string{
		"skills/open-skill/SKILL.md":   "---\nname: open-skill\n---\nopen",
		"skills/closed-skill/SKILL.md": "---\nname: closed-skill\n---\nsecret",
	}
	h := newHarness(t, wf, files)
	h.script(
		calls("",
			call{"read_file", map[string]any{"file_path": "skills/open-skill/SKILL.md"}},
			call{"read_file", map[string]any{"file_path": "skills/closed-skill/SKILL.md"}},
			call{"read_file", map[string]any{"file_path": "workflows/wf/workflow.yaml"}},
			call{"ls", map[string]any{"path": "skills"}},
		),
		says("ok"),
	)
	out := h.send("s1", "read", nil)
	if m := toolMessage(t, out, "read_file", 0); m.Error || !strings.Contains(m.Text, "open") {
		t.Errorf("enabled skill read = %q", m.Text)
	}
	if m := toolMessage(t, out, "read_file", 1); !m.Blocked || !strings.Contains(m.Text, "belongs to the skill 'closed-skill', which is not enabled in state 'work'. Skills enabled here: open-skill.") {
		t.Errorf("closed skill read = %q", m.Text)
	}
	if m := toolMessage(t, out, "read_file", 2); m.Blocked || strings.Contains(m.Text, "states:") {
		t.Errorf("the authoring plane must find nothing for the agent: %q", m.Text)
	}
	if m := toolMessage(t, out, "ls", 0); strings.Contains(m.Text, "closed-skill") || !strings.Contains(m.Text, "open-skill") {
		t.Errorf("listing must hide disabled bundles: %q", m.Text)
	}
}

func TestUnknownToolIsNotAGovernanceBlock(t *testing.T) {
	h := newHarness(t, twoAgents, nil)
	h.script(calls("", call{"fetch_url", map[string]any{}}), says("ok"))
	out := h.send("s1", "hi", nil)
	if m := toolMessage(t, out, "fetch_url", 0); m.Text != notATool("fetch_url") || m.Blocked {
		t.Errorf("unknown tool = %+v", m)
	}
	if len(h.eventsOf(events.ToolBlocked)) != 0 {
		t.Error("GOV-12: an unknown name is not a governance block")
	}
	if w := h.eventsOf(events.Warning); len(w) != 1 || w[0].Str("scope") != "tool-call" {
		t.Errorf("warnings = %+v", w)
	}
}

func TestUnresolvedArgumentReference(t *testing.T) {
	h := newHarness(t, twoAgents, nil)
	h.script(calls("", call{"read_file", map[string]any{"file_path": "scratchpad/${{missing}}.md"}}), says("ok"))
	out := h.send("s1", "hi", nil)
	if m := toolMessage(t, out, "read_file", 0); !strings.HasPrefix(m.Text, "Call refused before it ran: the argument reference ${{missing}} could not be resolved") {
		t.Errorf("reply = %q", m.Text)
	}
}

func TestMaxTurnsBudgetRoutesOnError(t *testing.T) {
	wf := `
states:
  work:
    triggers:
      manual:
    budget: { maxTurns: 1 }
    on_error: help
    transitions:
      - to: help
        description: never
  help:
    instructions: Explain.
`
	h := newHarness(t, wf, nil)
	h.script(calls("", call{"archmax_get_variables", map[string]any{}}), says("sorry"))
	out := h.send("s1", "hi", nil)
	if out.State != "help" || out.Kind != KindCompleted {
		t.Fatalf("outcome %s in %s", out.Kind, out.State)
	}
	ns := notes(out)
	if len(ns) != 1 || ns[0].Note != transcript.NoteError || ns[0].Text != "[error] The 'work' state failed: state 'work' exhausted its turn budget (maxTurns: 1). Routing to the 'help' error handler." {
		t.Errorf("notes = %+v", ns)
	}
	if got := trailOf(out); got != "trigger:work on_error:help" {
		t.Errorf("trail = %s", got)
	}
}

func TestSendErrors(t *testing.T) {
	h := newHarness(t, twoAgents, nil)
	e := h.engine()
	ctx := context.Background()
	var empty *EmptyMessageError
	if _, err := e.Send(ctx, "s1", SendInput{Message: "  "}); !errors.As(err, &empty) {
		t.Errorf("blank message: %v", err)
	}
	var bad *spec.SessionStoreIdError
	if _, err := e.Send(ctx, "a/b", SendInput{Message: "x"}); !errors.As(err, &bad) {
		t.Errorf("id with '/': %v", err)
	}
	var name *spec.InvalidVariableNameError
	if _, err := e.Send(ctx, "s1", SendInput{Message: "x", Variables: map[string]any{"Bad": 1}}); !errors.As(err, &name) {
		t.Errorf("bad variable name: %v", err)
	}
	var trig *spec.UnknownTriggerError
	if _, err := e.Send(ctx, "s1", SendInput{Message: "x", Trigger: "email"}); !errors.As(err, &trig) {
		t.Errorf("unknown trigger on a new session: %v", err)
	}
	// a live lease held by another writer
	if _, err := h.log.Acquire(ctx, "busy", "someone-else", DefaultLeaseTTL); err != nil {
		t.Fatal(err)
	}
	var busy *SessionNotResumableError
	if _, err := e.Send(ctx, "busy", SendInput{Message: "x"}); !errors.As(err, &busy) {
		t.Errorf("leased session: %v", err)
	}
	// nothing was written for the refused calls
	if _, err := h.log.Get(ctx, "s1"); err == nil {
		t.Error("refused calls must write nothing")
	}
}

func TestStepLimit(t *testing.T) {
	h := newHarness(t, strings.Replace(twoAgents, "    requires: [topic]\n", "", 1), nil)
	h.cfg.StepLimit = 3
	look := calls("", call{"archmax_get_variables", map[string]any{}})
	h.script(look, look, look) // three model calls fit; the fourth step is over the limit
	out := h.send("s1", "hi", nil)
	if out.Kind != KindRejected || out.Rejected != "step limit exceeded" {
		t.Fatalf("outcome %s %q", out.Kind, out.Rejected)
	}
}

func TestDisabledWorkflowRefusesNewTurns(t *testing.T) {
	h := newHarness(t, "disabled: true\n"+twoAgents, nil)
	out := h.send("s1", "hi", nil)
	if out.Kind != KindRejected || out.Rejected != "Refusing to start: workflow 'wf' is disabled." {
		t.Fatalf("outcome %s %q", out.Kind, out.Rejected)
	}
}

func TestSpecSnapshotWrittenOncePerHash(t *testing.T) {
	h := newHarness(t, strings.Replace(twoAgents, "    requires: [topic]\n", "", 1), nil)
	h.script(says("a"))
	out := h.send("s1", "hi", nil)
	h.script(says("b"))
	h.send("s2", "hi", nil)
	list, err := h.files.List(context.Background(), "_specs")
	if err != nil || len(list) != 1 || !strings.HasSuffix(list[0].Name, ".json") {
		t.Fatalf("snapshots = %+v, %v", list, err)
	}
	_ = out
}

// DESIGN §3: a long turn keeps its lease by renewing it at commits; a writer that lost
// its lease to another writer cannot commit (SessionNotResumableError, never an overwrite).
func TestLeaseRenewalAndLoss(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	tick := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }

	h := newHarness(t, strings.Replace(twoAgents, "    requires: [topic]\n", "", 1), nil)
	h.log.Clock = clock
	h.cfg.Clock, h.cfg.LeaseTTL = clock, 3*time.Second
	slow := func(r reply) reply {
		return func(req *model.Request) (*model.Response, error) { tick(2 * time.Second); return r(req) }
	}
	look := calls("", call{"archmax_get_variables", map[string]any{}})
	h.script(slow(look), slow(look), slow(look), slow(says("done")))
	out := h.send("s1", "hi", nil) // 8 s of model time under a 3 s lease
	if out.Kind != KindCompleted {
		t.Fatalf("kind = %s", out.Kind)
	}

	// another writer takes over once the lease expired mid-turn: the first writer's commit fails
	h.script(func(req *model.Request) (*model.Response, error) {
		tick(10 * time.Second)
		if _, err := h.log.Acquire(context.Background(), "s1", "intruder", time.Minute); err != nil {
			t.Errorf("intruder could not take the expired lease: %v", err)
		}
		return says("late")(req)
	})
	_, err := h.engine().Send(context.Background(), "s1", SendInput{Message: "again"})
	var nr *SessionNotResumableError
	if !errors.As(err, &nr) {
		t.Fatalf("err = %v, want SessionNotResumableError", err)
	}
}

// A model call longer than the lease keeps the session: the lease is renewed in the
// background, so another writer is refused and is told when the lease expires. The store
// and the engine read a fake clock: the call lasts 1.2 s of it (past the 900 ms lease as
// first taken) once a renewal has been seen, however long the machine takes to renew.
func TestLeaseKeptDuringLongModelCall(t *testing.T) {
	h := newHarness(t, strings.Replace(twoAgents, "    requires: [topic]\n", "", 1), nil)
	h.cfg.LeaseTTL = 900 * time.Millisecond
	clk := clock.NewFake(time.Now())
	h.log.Clock, h.cfg.Clock = clk.Now, clk.Now
	var intruderErr error
	h.script(func(req *model.Request) (*model.Response, error) {
		head, err := h.log.Get(context.Background(), "s1")
		if err != nil || head.Lease == nil {
			t.Fatalf("the lease during the call: %+v %v", head, err)
		}
		taken := head.Lease.ExpiresAt
		clk.Advance(600 * time.Millisecond) // two thirds of the lease: still live
		for guard := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
			if head, err := h.log.Get(context.Background(), "s1"); err == nil && head.Lease != nil && head.Lease.ExpiresAt.After(taken) {
				break // renewed from the fake now
			}
			if time.Now().After(guard) {
				t.Fatal("the lease was not renewed during the call") // a hang guard, not a timing
			}
		}
		clk.Advance(600 * time.Millisecond) // past the lease as first taken
		_, intruderErr = h.engine().Send(context.Background(), "s1", SendInput{Message: "me too"})
		return says("slow answer")(req)
	})
	out := h.send("s1", "hi", nil)
	if out.Kind != KindCompleted {
		t.Fatalf("kind %s", out.Kind)
	}
	var busy *SessionNotResumableError
	if !errors.As(intruderErr, &busy) {
		t.Fatalf("second writer: %v", intruderErr)
	}
	if !strings.Contains(busy.Error(), "The current writer's lease expires at ") {
		t.Errorf("message = %q", busy.Error())
	}
}

// DESIGN §6: a max_tokens stop with a half-written tool call is never run nor stored; with
// no text the state fails (here: rejected, no on_error).
func TestTruncatedToolCallIsNeverRun(t *testing.T) {
	cut := func(text string, c call) reply {
		return func(req *model.Request) (*model.Response, error) {
			r, _ := calls(text, c)(req)
			r.StopReason = model.StopMaxTokens
			return r, nil
		}
	}
	// R18-4: answers cut off mid-call maxCutOffs times in a row fail the state; none ran,
	// and no empty answer was stored
	h := newHarness(t, twoAgents, nil)
	set := call{"archmax_set_variables", map[string]any{"variables": map[string]any{"topic": "x"}}}
	h.script(cut("", set), cut("", set), cut("", set))
	out := h.send("s1", "hi", nil)
	if out.Kind != KindRejected || out.Rejected != cutOffFailure("intake") {
		t.Fatalf("outcome %s %q", out.Kind, out.Rejected)
	}
	if _, set := out.Variables["topic"]; set {
		t.Error("the truncated call ran")
	}
	for _, m := range out.Messages {
		if m.Role == transcript.RoleAssistant {
			t.Errorf("an empty truncated answer was stored: %+v", m)
		}
	}
	// R18-4: with text before the cut, the text is kept, the model is told its call was cut
	// off and goes on — the state does not complete on the preamble
	h2 := newHarness(t, twoAgents, nil)
	h2.script(cut("Let me set that", call{"archmax_get_variables", map[string]any{}}), says("Done: topic noted."))
	out = h2.send("s1", "hi", nil)
	if out.Kind != KindCompleted || out.Reply != "Done: topic noted." || len(h2.eventsOf(events.Warning)) != 1 {
		t.Fatalf("outcome %s %q", out.Kind, out.Reply)
	}
	ns := notes(out)
	if len(ns) != 1 || ns[0].Note != transcript.NoteCutOff || ns[0].Text != noteCutOff("archmax_get_variables") {
		t.Errorf("notes = %+v", ns)
	}
	if got := h2.model.requests[1].Messages; lastText(got[len(got)-1]) != noteCutOff("archmax_get_variables") {
		t.Errorf("the second request does not end with the note: %+v", got[len(got)-1])
	}
}

// DESIGN §6: the engine never checkpoints a history Bedrock would refuse: a tool call with an
// invalid name is dropped (and with nothing else in the answer, the state fails).
func TestMalformedToolCallIsNotCheckpointed(t *testing.T) {
	h := newHarness(t, twoAgents, nil)
	h.script(calls("Checking.", call{"read.file", map[string]any{}}))
	out := h.send("s1", "hi", nil)
	if out.Kind != KindCompleted || out.Reply != "Checking." || len(h.eventsOf(events.Warning)) != 1 {
		t.Fatalf("kind %s reply %q", out.Kind, out.Reply)
	}
	for _, m := range out.Messages {
		if len(m.ToolCalls) > 0 {
			t.Errorf("malformed call stored: %+v", m.ToolCalls)
		}
	}
	h.script(says("next"))
	if out := h.send("s1", "again", nil); out.Reply != "next" { // the next request is valid (queueModel checks)
		t.Errorf("second turn reply %q", out.Reply)
	}
}
