package session

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/events"
	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/store"
	"github.com/archmax-ai/archmax/core/transcript"
)

// delegateFlow is a parent that may delegate to several siblings (spec 02 §8).
const delegateFlow = `
title: Orders desk
tools:
  forbid_always: [remove_file]
states:
  intake:
    triggers:
      manual:
    instructions: Check the order.
    tools:
      allow: [archmax_workflow_check-item, archmax_workflow_review-item, archmax_workflow_broken,
        archmax_workflow_off, archmax_workflow_no-entry, archmax_workflow_missing, archmax_workflow_wf, archmax_eval]
    transitions:
      - to: done
        description: Checked.
  done:
    instructions: Say goodbye.
`

const checkItemFlow = `
title: Item check
states:
  check:
    triggers:
      manual:
        description: Check one item against the catalogue
        requires:
          - { name: item, type: string, description: The item's catalogue code }
          - { name: qty, type: integer }
        returns: [{ name: verdict, type: string }, { name: notes }]
    instructions: Check the item and record the verdict.
    tools:
      allow: [write_file, remove_file]
`

const reviewItemFlow = `
title: Item review
states:
  prepare:
    triggers:
      manual:
        requires: [item]
    instructions: Prepare the review.
    transitions:
      - to: approve
        description: Ready for a person.
  approve:
    type: human
    transitions:
      - to: accepted
        description: Accept the item.
      - to: prepare
        description: Send it back.
  accepted:
    instructions: Say the item is accepted.
`

func delegateHarness(t *testing.T) *harness {
	t.Helper()
	h := newHarness(t, delegateFlow, map[string]string{
		"workflows/check-item/workflow.yaml":  checkItemFlow,
		"workflows/review-item/workflow.yaml": reviewItemFlow,
		"workflows/broken/workflow.yaml":      "states: [not, a, mapping]\n",
		"workflows/off/workflow.yaml":         "disabled: true\nstates:\n  a:\n    triggers:\n      manual:\n    instructions: x\n",
		"workflows/no-entry/workflow.yaml":    "states:\n  a:\n    triggers:\n      nightly:\n    instructions: x\n",
	})
	h.model.bySession = map[string][]reply{}
	return h
}

func (h *harness) child(id string, replies ...reply) {
	h.model.mu.Lock()
	defer h.model.mu.Unlock()
	h.model.bySession[id] = append(h.model.bySession[id], replies...)
}

func setVars(vars map[string]any) call {
	return call{"archmax_set_variables", map[string]any{"variables": vars}}
}

func delegateCall(slug string, args map[string]any) call {
	return call{"archmax_workflow_" + slug, args}
}

func (h *harness) summary(id string) *SessionSummary {
	h.t.Helper()
	s, err := NewSessions(h.log, h.files, nil).Get(context.Background(), id)
	must(h.t, err)
	return s
}

func (h *harness) transcriptOf(id string) []transcript.Message {
	h.t.Helper()
	msgs, _, err := NewSessions(h.log, h.files, nil).Messages(context.Background(), id, 0, 1000)
	must(h.t, err)
	return msgs
}

// 02 §8.1–§8.4, §8.6, §8.7: the model delegates one item; the child starts with its opening
// note and locked inputs, its returns arrive on the tool result, the parent records a
// sub-workflow trail step and the start/result events, and the child's usage rolls up.
func TestDelegationReturnsArriveOnTheToolResult(t *testing.T) {
	h := delegateHarness(t)
	h.script(calls("", delegateCall("check-item", map[string]any{"item": "${{code}}", "qty": 2})), says("The item checks out."))
	h.child("s1~1", calls("", setVars(map[string]any{"verdict": "in stock"})), says("In stock, two available."))
	out := h.send("s1", "check it", map[string]any{"code": "AB-12"})
	if out.Kind != KindCompleted {
		t.Fatalf("kind %s (%s)", out.Kind, out.Rejected)
	}
	res := toolMessage(t, out, "archmax_workflow_check-item", 0)
	var got struct {
		Message string         `json:"message"`
		Returns map[string]any `json:"returns"`
	}
	must(t, json.Unmarshal([]byte(res.Text), &got))
	if res.Error || got.Message != "In stock, two available." || got.Returns["verdict"] != "in stock" ||
		got.Returns["note"] != "Not all return variables were set by the sub-workflow: 'notes' was not set." {
		t.Errorf("tool result = %s (error %v)", res.Text, res.Error)
	}
	if !strings.HasPrefix(res.Text, `{"message":`) {
		t.Errorf("message is not first: %s", res.Text)
	}
	if trailOf(out) != "trigger:intake sub-workflow:intake" || out.AuditTrail[1].Workflow != "check-item" || out.AuditTrail[1].Status != "ok" {
		t.Errorf("trail %s %+v", trailOf(out), out.AuditTrail)
	}
	// the child: its own session, locked inputs (the reference resolved with its type), the opening note
	child := h.summary("s1~1")
	if child.Status != StatusCompleted || child.Workflow != "check-item" || child.ParentID != "s1" {
		t.Errorf("child summary %+v", child)
	}
	if v := child.Variables["item"]; v.Value != "AB-12" || !v.Locked {
		t.Errorf("item = %+v", v)
	}
	if v := child.Variables["qty"]; v.Value != float64(2) || !v.Locked {
		t.Errorf("qty = %+v", v)
	}
	if _, leaked := child.Variables["code"]; leaked {
		t.Error("a parent variable crossed into the child")
	}
	msgs := h.transcriptOf("s1~1")
	want := "Begin. Your instructions are already in context. You were started with these inputs:\n- item: \"AB-12\"\n- qty: 2"
	if msgs[0].Note != transcript.NoteOpening || msgs[0].Text != want {
		t.Errorf("opening = %q (%s)", msgs[0].Text, msgs[0].Note)
	}
	// the child's prompt does not ask it to name the run
	for _, req := range h.model.requests {
		if req.Metadata["archmax.session"] == "s1/1" && strings.Contains(req.System[0].Text, "Name the run") {
			t.Error("the child was asked to name the run")
		}
	}
	// events
	starts, results := h.eventsOf(events.SubWorkflowStart), h.eventsOf(events.SubWorkflowResult)
	if len(starts) != 1 || len(results) != 1 {
		t.Fatalf("%d starts, %d results", len(starts), len(results))
	}
	s, r := starts[0], results[0]
	if s.SessionID != "s1" || s.Str("dispatchId") != "1" || s.Str("childSessionId") != "s1~1" || s.Str("toolCallId") == "" || s.Data["depth"] != 1 {
		t.Errorf("start %+v", s)
	}
	if r.Str("status") != "ok" || r.Str("toolCallId") != s.Str("toolCallId") || strings.Join(anyStrings(r.Data["returns"]), ",") != "note,verdict" {
		t.Errorf("result %+v", r)
	}
	childEvents := 0
	for _, e := range h.events {
		if e.SessionID == "s1~1" {
			childEvents++
			if e.DispatchID != "1" {
				t.Errorf("child event %s without its dispatch id", e.Type)
			}
		}
	}
	if childEvents == 0 {
		t.Error("no child events reached the handler")
	}
	// usage: the parent's own two calls plus the child's two
	if out.Usage == nil || out.Usage.InputTokens != 200+100+200+100 {
		t.Errorf("usage %+v", out.Usage)
	}
	if cu := h.summary("s1~1").Usage; cu == nil || cu.InputTokens != 300 {
		t.Errorf("child usage %+v", cu)
	}
	// listing: roots only unless asked
	list, _, err := NewSessions(h.log, h.files, nil).List(context.Background(), ListOptions{})
	must(t, err)
	if len(list) != 1 || list[0].SessionID != "s1" {
		t.Errorf("list = %+v", list)
	}
}

func anyStrings(v any) []string {
	switch x := v.(type) {
	case []string:
		return x
	case []any:
		var out []string
		for _, s := range x {
			out = append(out, s.(string))
		}
		return out
	}
	return nil
}

// 02 §8.1 and 01 §7.5: every dispatch check refuses as a blocked call, with a start/result
// pair of status error and durationMs 0, before any child exists.
func TestDelegationRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, slug string
		args       map[string]any
		want       string
	}{
		{"missing-param", "check-item", map[string]any{"item": "A"},
			"Refusing to run sub-workflow 'check-item': it requires 'qty', which this call does not supply. Call it again with that argument."},
		{"invalid-param", "check-item", map[string]any{"item": "A", "qty": "2"},
			"Refusing to run sub-workflow 'check-item': 'qty' must be an integer (a number with no fractional part), but a string (\"2\") arrived. Call it again with a value of the declared type."},
		{"argument name", "check-item", map[string]any{"item": "A", "qty": 1, "Bad": 1},
			"Refusing to run sub-workflow 'check-item': 'Bad' is not a variable name (lowercase letters, digits and underscores, starting with a letter). Call it again with a value of the declared type."},
		{"unresolved-param", "check-item", map[string]any{"item": "${{nope}}", "qty": 1},
			"Cannot run sub-workflow 'check-item': its param 'item' references variable 'nope' is not set."},
		{"disabled", "off", nil,
			"Refusing to run sub-workflow 'off': it is disabled ('disabled: true' in its workflow.yaml), so it starts no run. Remove that flag to re-enable it."},
		{"unknown-workflow", "missing", nil, "Cannot run sub-workflow 'missing': no 'workflows/missing/workflow.yaml' found."},
		{"broken spec", "broken", nil, "Cannot run sub-workflow 'broken': "},
		{"not-delegatable", "no-entry", nil,
			"Cannot run sub-workflow 'no-entry': it declares no 'manual' trigger entry, so it has no state to start in. Add 'manual:' under 'triggers:' of the state a session should start in."},
		{"cycle", "wf", nil,
			"Refusing to run sub-workflow 'wf': it is already running in this chain (wf → wf), so the run would not terminate."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := delegateHarness(t)
			h.script(calls("", delegateCall(tc.slug, tc.args)), says("Could not."))
			out := h.send("r1", "go", nil)
			m := toolMessage(t, out, "archmax_workflow_"+tc.slug, 0)
			if !m.Error || !m.Blocked || !strings.HasPrefix(m.Text, tc.want) {
				t.Errorf("answer = %q (error %v, blocked %v), want %q", m.Text, m.Error, m.Blocked, tc.want)
			}
			if out.Kind != KindCompleted || strings.Contains(trailOf(out), "sub-workflow") {
				t.Errorf("kind %s, trail %s", out.Kind, trailOf(out))
			}
			rs := h.eventsOf(events.SubWorkflowResult)
			if len(h.eventsOf(events.SubWorkflowStart)) != 1 || len(rs) != 1 || rs[0].Str("status") != "error" ||
				rs[0].Data["durationMs"] != int64(0) || rs[0].Str("reason") != m.Text {
				t.Errorf("events %+v", rs)
			}
			if _, err := h.log.Get(context.Background(), "r1~1"); err == nil {
				t.Error("a refused dispatch created a child")
			}
		})
	}
}

// chainFlow delegates to `next` when it is not empty.
func chainFlow(next string) string {
	allow := ""
	if next != "" {
		allow = "\n    tools:\n      allow: [archmax_workflow_" + next + "]"
	}
	return "states:\n  work:\n    triggers:\n      manual:\n    instructions: Work." + allow + "\n"
}

// 02 §8.3: depth counts delegations; the fourth one deep is refused, naming the chain; the
// refusal is the innermost child's to handle and everything above completes.
func TestDelegationDepthFourIsRefused(t *testing.T) {
	h := newHarness(t, chainFlow("l1"), map[string]string{
		"workflows/l1/workflow.yaml": chainFlow("l2"),
		"workflows/l2/workflow.yaml": chainFlow("l3"),
		"workflows/l3/workflow.yaml": chainFlow("l4"),
		"workflows/l4/workflow.yaml": chainFlow(""),
	})
	h.model.bySession = map[string][]reply{}
	h.script(calls("", delegateCall("l1", nil)), says("root done"))
	h.child("d~1", calls("", delegateCall("l2", nil)), says("l1 done"))
	h.child("d~1~1", calls("", delegateCall("l3", nil)), says("l2 done"))
	h.child("d~1~1~1", calls("", delegateCall("l4", nil)), says("l3 done"))
	out := h.send("d", "go", nil)
	if out.Kind != KindCompleted {
		t.Fatalf("kind %s", out.Kind)
	}
	msgs := h.transcriptOf("d~1~1~1")
	var refusal string
	for _, m := range msgs {
		if m.Tool == "archmax_workflow_l4" {
			refusal = m.Text
		}
	}
	want := "Refusing to run sub-workflow 'l4': it would be 4 delegations deep, past the dispatcher's limit of 3. Chain so far: wf → l1 → l2 → l3 → l4."
	if refusal != want {
		t.Errorf("refusal = %q", refusal)
	}
	if s := h.summary("d~1~1~1"); s.Status != StatusCompleted {
		t.Errorf("depth-3 child %s", s.Status)
	}
	for _, e := range h.eventsOf(events.SubWorkflowStart) {
		if e.Str("workflow") == "l3" && (e.Data["depth"] != 3 || strings.Join(anyStrings(e.Data["chain"]), ",") != "wf,l1,l2") {
			t.Errorf("l3 start %+v", e.Data)
		}
	}
}

// 02 §8.3 (cycle): a target already running above the caller is refused, naming the chain.
func TestDelegationCycleIsRefused(t *testing.T) {
	h := newHarness(t, chainFlow("l1"), map[string]string{"workflows/l1/workflow.yaml": chainFlow("wf")})
	h.model.bySession = map[string][]reply{}
	h.script(calls("", delegateCall("l1", nil)), says("root done"))
	h.child("c~1", calls("", delegateCall("wf", nil)), says("l1 done"))
	h.send("c", "go", nil)
	for _, m := range h.transcriptOf("c~1") {
		if m.Tool == "archmax_workflow_wf" {
			if want := "Refusing to run sub-workflow 'wf': it is already running in this chain (wf → l1 → wf), so the run would not terminate."; m.Text != want || !m.Blocked {
				t.Errorf("cycle refusal = %q", m.Text)
			}
			return
		}
	}
	t.Error("no answer to the cyclic call")
}

// 02 §8.4: the child's failures reach the caller as tool errors naming the child's state.
func TestDelegationChildFailures(t *testing.T) {
	h := delegateHarness(t)
	// relay requires the value it returns, typed on the way out only
	must(t, h.authored.Write(context.Background(), "workflows/relay/workflow.yaml", []byte(
		"states:\n  pass:\n    triggers:\n      manual:\n        requires: [verdict]\n        returns: [{ name: verdict, type: string }]\n    instructions: Pass it on.\n")))
	must(t, h.authored.Write(context.Background(), "workflows/wf/workflow.yaml", []byte(strings.Replace(delegateFlow, "archmax_workflow_wf,", "archmax_workflow_wf, archmax_workflow_relay,", 1))))
	h.script(calls("", delegateCall("check-item", map[string]any{"item": "A", "qty": 1}), delegateCall("relay", map[string]any{"verdict": 7}),
		delegateCall("check-item", map[string]any{"item": "C", "qty": 1, "verdict": "faked"})),
		says("One failed."))
	h.child("f~1", calls("", call{"archmax_raise", map[string]any{"code": "not_found", "reason": "no such item"}}))
	// the required argument is seeded as given (locked): here it mistypes the declared return
	h.child("f~2", says("done"))
	out := h.send("f", "go", nil)
	a, b := toolMessage(t, out, "archmax_workflow_check-item", 0), toolMessage(t, out, "archmax_workflow_relay", 0)
	if c := toolMessage(t, out, "archmax_workflow_check-item", 1); c.Text != "Refusing to run sub-workflow 'check-item': 'verdict' is a return of 'check-item': the sub-workflow sets it, a caller cannot supply it. Call it again with a value of the declared type." || !c.Blocked {
		t.Errorf("a caller supplying a return: %q", c.Text)
	}
	if a.Text != "Sub-workflow 'check-item' failed: its agent raised 'not_found' in state 'check': no such item" || !a.Error || a.Blocked {
		t.Errorf("raised = %q", a.Text)
	}
	if !strings.HasPrefix(b.Text, "Sub-workflow 'relay' settled in state 'pass' with returns its 'manual' trigger types otherwise: 'verdict' must be a string") {
		t.Errorf("invalid-return = %q", b.Text)
	}
	if got := trailOf(out); got != "trigger:intake sub-workflow:intake sub-workflow:intake" || out.AuditTrail[1].Status != "error" || out.AuditTrail[2].Status != "error" {
		t.Errorf("trail %s %+v", got, out.AuditTrail)
	}
}

// 02 §3.7: a child parks at a human state; the parent parks on the decision channel with
// Outcome.Delegation; a decision on the parent resumes the child, whose result reaches the
// parent as a [sub-workflow] note; both complete.
func TestDelegatedParkDecisionCompletesBoth(t *testing.T) {
	h := delegateHarness(t)
	h.script(calls("", delegateCall("review-item", map[string]any{"item": "A"})), says("It is with a reviewer."))
	h.child("p~1", calls("", advance("approve", "ready")), says("Handed to a reviewer."))
	out := h.send("p", "review A", nil)
	if out.Kind != KindParked || out.ParkedChannel != ChannelDecision || out.Delegation == nil {
		t.Fatalf("outcome %s %s %+v", out.Kind, out.ParkedChannel, out.Delegation)
	}
	dp := out.Delegation
	if dp.Workflow != "review-item" || dp.SessionID != "p~1" || dp.Identity != 1 || dp.DispatchID != "1" || dp.State != "intake" || dp.ToolCallID == "" {
		t.Errorf("delegation %+v", dp)
	}
	if out.Pending.Decision.State != "approve" || out.Pending.Decision.Seq != 1 || len(out.Pending.Decision.Transitions) != 2 || out.State != "intake" {
		t.Errorf("pending %+v, state %s", out.Pending.Decision, out.State)
	}
	if m := toolMessage(t, out, "archmax_workflow_review-item", 0); !m.Error || !strings.Contains(m.Text, "stopped for a person") {
		t.Errorf("call answer %q", m.Text)
	}
	if out.Reply != "It is with a reviewer." {
		t.Errorf("closing message %q", out.Reply)
	}
	sum := h.summary("p")
	if sum.Status != StatusAwaitingDecision || sum.Pending == nil || sum.Pending.Delegation == nil {
		t.Errorf("summary %+v", sum)
	}
	// a wrong target is refused with the child's choices, nothing written
	if _, err := h.engine().Decide(context.Background(), "p", Decision{To: "nowhere"}); err == nil {
		t.Fatal("a wrong target was accepted")
	} else if bad := (*InvalidDecisionTargetError)(nil); !errors.As(err, &bad) || strings.Join(bad.ValidTargets, ",") != "accepted,prepare" {
		t.Errorf("err %v", err)
	}
	// the child cannot be addressed directly
	if _, err := h.engine().Decide(context.Background(), "p~1", Decision{To: "accepted"}); !isChildErr(err) {
		t.Errorf("a decision on the child id: %v", err)
	}
	h.child("p~1", says("Accepted."))
	h.script(says("The reviewer accepted it."))
	out2, err := h.engine().Decide(context.Background(), "p", Decision{To: "accepted", Comment: "fine", ParkID: out.Pending.ParkID})
	must(t, err)
	if out2.Kind != KindCompleted || out2.Reply != "The reviewer accepted it." {
		t.Fatalf("after the decision: %s %q", out2.Kind, out2.Reply)
	}
	ns := notes(out2)
	if last := ns[len(ns)-1]; last.Note != transcript.NoteSubWorkflow || last.Text != "[sub-workflow: review-item] Accepted." {
		t.Errorf("note %+v", last)
	}
	if got := trailOf(out2); !strings.HasSuffix(got, "trigger:intake sub-workflow:intake") {
		t.Errorf("parent trail %s", got)
	}
	child := h.summary("p~1")
	if child.Status != StatusCompleted {
		t.Errorf("child %s", child.Status)
	}
	var decided []events.Event
	for _, e := range h.eventsOf(events.Decided) {
		decided = append(decided, e)
	}
	if len(decided) != 2 || decided[0].SessionID != "p~1" && decided[1].SessionID != "p~1" {
		t.Errorf("decided events %+v", decided)
	}
}

func isChildErr(err error) bool {
	var c *ChildSessionError
	return errors.As(err, &c)
}

// 02 §3.7: a child that parks again after the decision is re-presented at once (Reparked).
func TestDelegatedParkRepresentedWhenTheChildParksAgain(t *testing.T) {
	h := delegateHarness(t)
	h.script(calls("", delegateCall("review-item", map[string]any{"item": "A"})), says("With a reviewer."))
	h.child("q~1", calls("", advance("approve", "ready")), says("Handed over."))
	out := h.send("q", "go", nil)
	h.child("q~1", calls("", advance("approve", "fixed")), says("Back with the reviewer."))
	out2, err := h.engine().Decide(context.Background(), "q", Decision{To: "prepare", ParkID: out.Pending.ParkID})
	must(t, err)
	if out2.Kind != KindParked || !out2.Reparked || out2.Delegation == nil || out2.Pending.Decision.Seq != 2 || out2.Pending.ParkID == out.Pending.ParkID {
		t.Fatalf("re-presented: %s reparked=%v %+v", out2.Kind, out2.Reparked, out2.Pending)
	}
}

// 03 AS-40…AS-44: an archmax_eval script fans out over five items; the children run
// concurrently up to the bound of 4; each call settles on its own (one raises); a child that
// parks fails its call with the exact AS-44 text.
func TestScriptFanOutIsConcurrentAndBounded(t *testing.T) {
	h := delegateHarness(t)
	var inflight, peak atomic.Int32
	var full atomic.Bool
	h.model.hook = func(req *model.Request) {
		if !strings.Contains(req.Metadata["archmax.session"], "/") {
			return
		}
		gather(&inflight, &peak, &full, 4)
	}
	script := `const items = ["A", "B", "C", "D", "E"];
const settled = await Promise.allSettled(items.map((item) => tools["archmax_workflow_check-item"]({ item, qty: 1 })));
const parked = await tools.archmaxWorkflowReviewItem({ item: "F" }).then(() => "ran", (e) => String(e.message || e));
JSON.stringify({ s: settled.map((r) => r.status === "fulfilled" ? JSON.parse(r.value).returns.verdict : "failed:" + r.reason), parked });`
	h.script(calls("", call{"archmax_eval", map[string]any{"code": script}}), says("Checked five."))
	for i := 1; i <= 5; i++ {
		id := "fan~" + string(rune('0'+i))
		if i == 3 {
			h.child(id, calls("", call{"archmax_raise", map[string]any{"code": "gone", "reason": "discontinued"}}))
			continue
		}
		h.child(id, calls("", setVars(map[string]any{"verdict": "ok", "notes": ""})), says("fine"))
	}
	h.child("fan~6", calls("", advance("approve", "ready")), says("Handed over."))
	out := h.send("fan", "check all", nil)
	if out.Kind != KindCompleted {
		t.Fatalf("kind %s %s", out.Kind, out.Rejected)
	}
	res := toolMessage(t, out, "archmax_eval", 0).Text
	var got struct {
		S      []string `json:"s"`
		Parked string   `json:"parked"`
	}
	if err := json.Unmarshal([]byte(res), &got); err != nil {
		t.Fatalf("script result %q: %v", res, err)
	}
	ok, failed := 0, 0
	for _, s := range got.S {
		switch {
		case s == "ok":
			ok++
		case strings.Contains(s, "its agent raised 'gone'"):
			failed++
		}
	}
	if ok != 4 || failed != 1 {
		t.Errorf("settled = %v", got.S)
	}
	if want := "Sub-workflow 'review-item' stopped for a person, and a script cannot wait for one: the sandbox has no way to resume. Call it from the state's agent, or move the decision to a human node in the calling workflow."; !strings.Contains(got.Parked, want) {
		t.Errorf("parked = %q", got.Parked)
	}
	if p := peak.Load(); p != 4 {
		t.Errorf("peak in-flight children = %d, want 4 (concurrent, bounded)", p)
	}
	// nothing could ever resume it: it is settled, not left waiting (D8-18)
	if s := h.summary("fan~6"); s.Status != StatusRejected || s.Rejected != childCannotWait {
		t.Errorf("the script's parked child is %s %q", s.Status, s.Rejected)
	}
	if n := strings.Count(trailOf(out), "sub-workflow:intake"); n != 5 {
		t.Errorf("trail %s: %d sub-workflow steps, want 5 (the parked one adds none)", trailOf(out), n)
	}
	for _, e := range h.eventsOf(events.SubWorkflowStart) {
		if !strings.HasPrefix(e.Str("toolCallId"), "ptc:") {
			t.Errorf("script dispatch toolCallId %q", e.Str("toolCallId"))
		}
	}
}

// 02 §8.3, DESIGN.md §4: a child stopped by the step deadline leaves parent and child
// interrupted; Continue on the parent carries the child on from its own checkpoint and
// answers the call; nothing committed is written twice.
func TestDelegationContinuesAcrossInvocations(t *testing.T) {
	h := delegateHarness(t)
	var now atomic.Int64
	now.Store(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC).UnixMilli())
	h.cfg.Clock = func() time.Time { return time.UnixMilli(now.Load()) }
	h.model.hook = func(*model.Request) { now.Add(int64(time.Minute / time.Millisecond)) }
	h.script(calls("", delegateCall("check-item", map[string]any{"item": "A", "qty": 1})))
	h.child("k~1", calls("", setVars(map[string]any{"verdict": "ok"})), says("fine"))
	deadline := time.UnixMilli(now.Load()).Add(30 * time.Second)
	ctx := WithStepDeadline(context.Background(), deadline)
	out, err := h.engine().Send(ctx, "k", SendInput{Message: "go"})
	must(t, err)
	if out.Kind != KindRunning {
		t.Fatalf("first invocation: %s", out.Kind)
	}
	if s := h.summary("k~1"); s.Status != StatusRunning || !s.Interrupted {
		t.Errorf("child after the cut: %s interrupted=%v", s.Status, s.Interrupted)
	}
	h.model.mu.Lock()
	h.model.replies = append(h.model.replies, says("All checked."))
	h.model.mu.Unlock()
	out2, skipped, err := h.engine().Continue(context.Background(), "k", out.TurnID)
	must(t, err)
	if skipped != nil || out2.Kind != KindCompleted || out2.Reply != "All checked." {
		t.Fatalf("continued: %+v %v", skipped, out2)
	}
	answers := 0
	for _, m := range out2.Messages {
		if m.Tool == "archmax_workflow_check-item" && m.Role == transcript.RoleTool {
			answers++
		}
	}
	if answers != 1 {
		t.Errorf("%d answers to the delegation call", answers)
	}
	msgs := h.transcriptOf("k~1")
	if len(msgs) != 4 { // opening, set_variables call, its result, closing text
		t.Errorf("child transcript has %d messages", len(msgs))
	}
	if len(h.eventsOf(events.SubWorkflowStart)) != 1 || len(h.eventsOf(events.SubWorkflowResult)) != 1 {
		t.Error("the dispatch was started or settled more than once")
	}
}

// 03 GOV-36: an ancestor's forbid_always binds the child, and the refusal names it.
func TestDelegationInheritsForbidAlways(t *testing.T) {
	h := delegateHarness(t)
	h.script(calls("", delegateCall("check-item", map[string]any{"item": "A", "qty": 1})), says("done"))
	h.child("g~1", calls("", call{"remove_file", map[string]any{"file_path": "scratchpad/x.md"}}),
		calls("", setVars(map[string]any{"verdict": "ok", "notes": "n"})), says("fine"))
	h.send("g", "go", nil)
	for _, m := range h.transcriptOf("g~1") {
		if m.Tool == "remove_file" {
			if !m.Blocked || !strings.Contains(m.Text, "'wf'") {
				t.Errorf("inherited denial answer %q", m.Text)
			}
			return
		}
	}
	t.Error("remove_file was not answered")
}

// 04 / 03 MK-02: a mocked delegation records its dispatch like a real one but runs no child.
func TestMockedDelegation(t *testing.T) {
	h := delegateHarness(t)
	h.script(calls("", delegateCall("check-item", map[string]any{"item": "A", "qty": 1}), delegateCall("off", nil)), says("done"))
	ctx := WithToolMocks(context.Background(), []ToolMock{
		{Tool: "archmax_workflow_check-item", WhenInput: map[string]any{"item": "A"}, Result: map[string]any{"message": "mocked", "returns": map[string]any{"verdict": "ok", "notes": "n"}}},
		{Tool: "archmax_workflow_off", Result: "never"},
	}, nil)
	out, err := h.engine().Send(ctx, "m", SendInput{Message: "go"})
	must(t, err)
	if m := toolMessage(t, out, "archmax_workflow_check-item", 0); m.Text != `{"message":"mocked","returns":{"notes":"n","verdict":"ok"}}` {
		t.Errorf("mocked answer %q", m.Text)
	}
	if m := toolMessage(t, out, "archmax_workflow_off", 0); !strings.Contains(m.Text, "disabled") {
		t.Errorf("a mock answered a disabled target: %q", m.Text)
	}
	if trailOf(out) != "trigger:intake sub-workflow:intake" {
		t.Errorf("trail %s", trailOf(out))
	}
	if _, err := h.log.Get(context.Background(), "m~1"); err == nil {
		t.Error("a mocked dispatch ran a child")
	}
}

// 02 §3.7: a new turn abandons a pending delegated park.
func TestNewTurnAbandonsDelegatedPark(t *testing.T) {
	h := delegateHarness(t)
	h.script(calls("", delegateCall("review-item", map[string]any{"item": "A"})), says("With a reviewer."))
	h.child("n~1", calls("", advance("approve", "ready")), says("Handed over."))
	h.send("n", "go", nil)
	// a reply on the parent is answered by the parent itself
	h.script(says("It is still with the reviewer."))
	out, err := h.engine().Send(context.Background(), "n", SendInput{Message: "any news?"})
	must(t, err)
	if out.Disposition != DispositionReply || out.Kind != KindParked || out.Delegation == nil {
		t.Fatalf("reply: %s %s", out.Disposition, out.Kind)
	}
}

// 02 §8.1: the delegation tool offered to the model: its description led by the target's
// manual trigger description, its schema the trigger's requires.
func TestDelegationToolSpec(t *testing.T) {
	h := delegateHarness(t)
	h.script(says("ok"))
	h.send("ts", "hi", nil)
	var spec *model.ToolSpec
	for i, ts := range h.model.requests[0].Tools {
		if ts.Name == "archmax_workflow_check-item" {
			spec = &h.model.requests[0].Tools[i]
		}
	}
	if spec == nil {
		t.Fatal("the delegation tool is not offered")
	}
	if !strings.HasPrefix(spec.Description, "Check one item against the catalogue. Run the 'check-item' workflow (Item check) to completion") ||
		!strings.Contains(spec.Description, "It requires 'item' and 'qty'") || !strings.Contains(spec.Description, "'verdict' and 'notes' under 'returns'") {
		t.Errorf("description %q", spec.Description)
	}
	var schema struct {
		Properties map[string]map[string]any `json:"properties"`
		Required   []string                  `json:"required"`
	}
	must(t, json.Unmarshal(spec.InputSchema, &schema))
	if schema.Properties["qty"]["type"] != "integer" || schema.Properties["item"]["description"] != "The item's catalogue code. Seeded as a locked run variable." ||
		strings.Join(schema.Required, ",") != "item,qty" {
		t.Errorf("schema %s", spec.InputSchema)
	}
}

var _ = sync.Mutex{}

// 03 AS-45: a code state fans out over its own grant and records the results before it
// advances; no model call is made in the parent.
func TestCodeStateFansOut(t *testing.T) {
	flow := `
states:
  sort:
    type: code
    script: scripts/sort.js
    triggers:
      manual:
    tools:
      allow: [archmax_workflow_check-item]
    transitions:
      - to: done
        description: Sorted.
  done:
    instructions: Report.
`
	h := newHarness(t, flow, map[string]string{
		"workflows/check-item/workflow.yaml": checkItemFlow,
		"workflows/wf/scripts/sort.js": `export default async ({ tools }) => {
  const out = await Promise.all(["A", "B", "C"].map((item) => tools.archmaxWorkflowCheckItem({ item, qty: 1 })));
  await tools.archmax_set_variables({ variables: { verdicts: out.map((t) => JSON.parse(t).returns.verdict) } });
  await tools.archmax_advance({ to: "done", reason: "three checked" });
};`,
	})
	h.model.bySession = map[string][]reply{}
	for _, id := range []string{"cs~1", "cs~2", "cs~3"} {
		h.child(id, calls("", setVars(map[string]any{"verdict": "ok " + id, "notes": "-"})), says("fine"))
	}
	h.script(says("All three are fine."))
	out := h.send("cs", "sort", nil)
	if out.Kind != KindCompleted || trailOf(out) != "trigger:sort sub-workflow:sort sub-workflow:sort sub-workflow:sort code:done" {
		t.Fatalf("%s, trail %s", out.Kind, trailOf(out))
	}
	// Promise.all starts the calls in order, but they are numbered as they reach the host
	got := anyStrings(out.Variables["verdicts"].Value)
	slices.Sort(got)
	if v := strings.Join(got, ","); v != "ok cs~1,ok cs~2,ok cs~3" {
		t.Errorf("verdicts %s", v)
	}
}

// 02 §8.3: an agent's parallel delegation calls run concurrently, at most 4 at once; every
// call is answered in call order.
func TestAgentParallelDelegationsAreBounded(t *testing.T) {
	h := delegateHarness(t)
	var inflight, peak atomic.Int32
	var full atomic.Bool
	h.model.hook = func(req *model.Request) {
		if !strings.Contains(req.Metadata["archmax.session"], "/") {
			return
		}
		gather(&inflight, &peak, &full, 4)
	}
	var cs []call
	for i := 1; i <= 6; i++ {
		cs = append(cs, delegateCall("check-item", map[string]any{"item": string(rune('A' + i - 1)), "qty": i}))
		h.child("par~"+string(rune('0'+i)), says("item "+string(rune('A'+i-1))))
	}
	h.script(calls("", cs...), says("Six checked."))
	out := h.send("par", "go", nil)
	if out.Kind != KindCompleted {
		t.Fatalf("%s", out.Kind)
	}
	if p := peak.Load(); p != 4 {
		t.Errorf("peak %d, want 4", p)
	}
	for i := 0; i < 6; i++ {
		m := toolMessage(t, out, "archmax_workflow_check-item", i)
		if !strings.Contains(m.Text, `"message":"item `+string(rune('A'+i))+`"`) {
			t.Errorf("answer %d = %s", i, m.Text)
		}
	}
}

const waitChildFlow = `
states:
  wait:
    triggers:
      manual:
    instructions: Wait for the stock report.
`

// 02 §3.7: a child's archmax_wait parks the parent on the input channel; the parent holds
// the wake (the child schedules none); a delivery on the parent is routed to the child.
func TestDelegatedInputParkRoutesTheDelivery(t *testing.T) {
	h := newHarness(t, chainFlow("stock"), map[string]string{"workflows/stock/workflow.yaml": waitChildFlow})
	h.model.bySession = map[string][]reply{}
	sched := &recordingScheduler{}
	h.cfg.Scheduler = sched
	h.script(calls("", delegateCall("stock", nil)), says("Waiting on the stock report."))
	h.child("w~1", calls("", call{"archmax_wait", map[string]any{"reason": "the stock report", "until": "1h"}}), says("Waiting."))
	out := h.send("w", "go", nil)
	if out.Kind != KindParked || out.ParkedChannel != ChannelInput || out.Pending.Delegation == nil || out.Pending.Input.ResumeAt == "" {
		t.Fatalf("%s %s %+v", out.Kind, out.ParkedChannel, out.Pending)
	}
	if out.Delegation != nil {
		t.Error("Outcome.Delegation is for the decision channel only")
	}
	if got := sched.ids(); got != "w" {
		t.Errorf("scheduled wakes for %q, want the parent only", got)
	}
	head, err := h.log.Get(context.Background(), "w")
	must(t, err)
	if head.ParkDue != out.Pending.Input.ResumeAt {
		t.Errorf("parent parkDue %q", head.ParkDue)
	}
	if ch, _ := h.log.Get(context.Background(), "w~1"); ch.ParkDue != "" {
		t.Errorf("child parkDue %q", ch.ParkDue)
	}
	h.child("w~1", says("The report says 12 in stock."))
	h.script(says("Twelve in stock."))
	out2, err := h.engine().Deliver(context.Background(), "w", Delivery{Trigger: "stock-report", Variables: map[string]any{"count": 12}, Message: "here"})
	must(t, err)
	said := false
	for _, m := range out2.Messages {
		said = said || (m.Role == transcript.RoleUser && m.Text == "here")
	}
	if !said {
		t.Error("the person's message is not in the parent's transcript")
	}
	if out2.Kind != KindCompleted || h.summary("w~1").Variables["count"].Value != float64(12) {
		t.Fatalf("%s, child vars %+v", out2.Kind, h.summary("w~1").Variables)
	}
	if ns := notes(out2); ns[len(ns)-1].Text != "[sub-workflow: stock] The report says 12 in stock." {
		t.Errorf("note %q", ns[len(ns)-1].Text)
	}
}

type recordingScheduler struct {
	mu  sync.Mutex
	got []string
}

func (s *recordingScheduler) Schedule(_ context.Context, id, _ string, _ time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, id)
	return nil
}

func (s *recordingScheduler) Cancel(context.Context, string, string) error { return nil }

func (s *recordingScheduler) ids() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.got, ",")
}

// 02 §3.7, DESIGN.md §4: a decision routed to a child whose resumed step is cut by the step
// deadline leaves the parent interrupted; Continue carries the child on and both complete.
func TestDelegatedDecisionContinuesAcrossInvocations(t *testing.T) {
	h := delegateHarness(t)
	var now atomic.Int64
	now.Store(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC).UnixMilli())
	h.cfg.Clock = func() time.Time { return time.UnixMilli(now.Load()) }
	h.script(calls("", delegateCall("review-item", map[string]any{"item": "A"})), says("With a reviewer."))
	h.child("dc~1", calls("", advance("approve", "ready")), says("Handed over."))
	out := h.send("dc", "go", nil)
	h.model.hook = func(*model.Request) { now.Add(int64(time.Minute / time.Millisecond)) }
	h.child("dc~1", calls("", setVars(map[string]any{"approved": true})), says("Accepted."))
	ctx := WithStepDeadline(context.Background(), time.UnixMilli(now.Load()).Add(30*time.Second))
	mid, err := h.engine().Decide(ctx, "dc", Decision{To: "accepted", ParkID: out.Pending.ParkID})
	must(t, err)
	if mid.Kind != KindRunning {
		t.Fatalf("first invocation %s", mid.Kind)
	}
	h.script(says("Done: accepted."))
	end, skipped, err := h.engine().Continue(context.Background(), "dc", mid.TurnID)
	must(t, err)
	if skipped != nil || end.Kind != KindCompleted || end.Reply != "Done: accepted." {
		t.Fatalf("continued %+v %+v", skipped, end)
	}
	if s := h.summary("dc~1"); s.Status != StatusCompleted || s.Variables["approved"].Value != true {
		t.Errorf("child %s %+v", s.Status, s.Variables)
	}
	humans := 0
	for _, m := range h.transcriptOf("dc~1") {
		if m.Note == transcript.NoteDecision {
			humans++
		}
	}
	if humans != 1 {
		t.Errorf("the decision was applied %d times", humans)
	}
}

// 02 §8.1 [P] and §8.4: a file argument is copied into the child's attachments; a file
// return is copied back into the parent's scratchpad under a fresh name.
func TestDelegationCopiesFiles(t *testing.T) {
	child := `
states:
  edit:
    triggers:
      manual:
        requires: [{ name: doc, type: file }]
        returns: [{ name: out, type: file }]
    instructions: Edit the document.
    tools:
      allow: [read_file, write_file]
`
	h := newHarness(t, chainFlow("editor"), map[string]string{"workflows/editor/workflow.yaml": child})
	h.model.bySession = map[string][]reply{}
	must(t, h.files.Write(context.Background(), "fc/scratchpad/draft.md", []byte("draft text")))
	h.script(calls("", delegateCall("editor", map[string]any{"doc": "scratchpad/draft.md"})), says("Edited."))
	h.child("fc~1",
		calls("", call{"write_file", map[string]any{"file_path": "scratchpad/draft.md", "content": "edited text"}}),
		calls("", setVars(map[string]any{"out": "scratchpad/draft.md"})), says("done"))
	out := h.send("fc", "edit", nil)
	if v := h.summary("fc~1").Variables["doc"].Value; v != "scratchpad/attachments/draft.md" {
		t.Errorf("child doc = %v", v)
	}
	b, err := h.files.Read(context.Background(), "fc~1/scratchpad/attachments/draft.md")
	if err != nil || string(b) != "draft text" {
		t.Errorf("child copy %q %v", b, err)
	}
	var res struct{ Returns map[string]string }
	must(t, json.Unmarshal([]byte(toolMessage(t, out, "archmax_workflow_editor", 0).Text), &res))
	if res.Returns["out"] != "scratchpad/attachments/draft.md" {
		t.Errorf("returned path %q", res.Returns["out"])
	}
	b, err = h.files.Read(context.Background(), "fc/"+res.Returns["out"])
	if err != nil || string(b) != "edited text" {
		t.Errorf("parent copy %q %v", b, err)
	}
}

// 02 §8.2: a child number already taken (a child a crashed call started before it could
// record it) is skipped, never reused.
func TestDelegationSkipsATakenChildID(t *testing.T) {
	h := delegateHarness(t)
	ctx := context.Background()
	_, err := h.log.Acquire(ctx, "sk~1", "crashed", time.Minute)
	must(t, err)
	_, err = h.log.Commit(ctx, "sk~1", "crashed", &store.Commit{Head: store.Head{SessionID: "sk~1", Workflow: "check-item", Status: "running",
		Body: json.RawMessage(`{"workflow":"check-item","status":"running","variables":{}}`)}})
	must(t, err)
	h.script(calls("", delegateCall("check-item", map[string]any{"item": "A", "qty": 1})), says("ok"))
	h.child("sk~2", says("fine"))
	out := h.send("sk", "go", nil)
	if len(h.eventsOf(events.SubWorkflowStart)) != 1 || h.eventsOf(events.SubWorkflowStart)[0].Str("childSessionId") != "sk~2" {
		t.Errorf("start %+v", h.eventsOf(events.SubWorkflowStart))
	}
	if m := toolMessage(t, out, "archmax_workflow_check-item", 0); !strings.Contains(m.Text, `"message":"fine"`) {
		t.Errorf("answer %q", m.Text)
	}
}

// 02 §8.4 item 5: a failed delegation call stays the calling state's failure until a later
// success of the same workflow recovers it; a state that ends its turn with one outstanding
// routes through on_error naming the call's arguments.
func TestDelegationFailuresStayUntilRecovered(t *testing.T) {
	flow := strings.Replace(delegateFlow, "    instructions: Check the order.\n", "    instructions: Check the order.\n    on_error: done\n", 1)
	t.Run("recovered by a corrected retry", func(t *testing.T) {
		h := delegateHarness(t)
		must(t, h.authored.Write(context.Background(), "workflows/wf/workflow.yaml", []byte(flow)))
		h.script(calls("", delegateCall("check-item", map[string]any{"item": "A", "qty": 1})),
			calls("", delegateCall("check-item", map[string]any{"item": "A", "qty": 2})), says("Checked on the second try."))
		h.child("rr~1", calls("", call{"archmax_raise", map[string]any{"code": "busy", "reason": "catalogue busy"}}))
		h.child("rr~2", says("ok"))
		out := h.send("rr", "go", nil)
		if out.Kind != KindCompleted || out.State != "intake" {
			t.Errorf("%s in %s: %s", out.Kind, out.State, trailOf(out))
		}
	})
	t.Run("outstanding at the end of the turn", func(t *testing.T) {
		h := delegateHarness(t)
		must(t, h.authored.Write(context.Background(), "workflows/wf/workflow.yaml", []byte(flow)))
		h.script(calls("", delegateCall("check-item", map[string]any{"item": "A", "qty": 1})), says("It failed."), says("Sorry."))
		h.child("ro~1", calls("", call{"archmax_raise", map[string]any{"code": "busy", "reason": "catalogue busy"}}))
		out := h.send("ro", "go", nil)
		if !strings.HasSuffix(trailOf(out), "on_error:done") {
			t.Fatalf("trail %s", trailOf(out))
		}
		want := `Sub-workflow 'check-item' failed: its agent raised 'busy' in state 'check': catalogue busy (called with {"item":"A","qty":1})`
		if got := out.AuditTrail[len(out.AuditTrail)-1].Reason; got != want {
			t.Errorf("reason %q", got)
		}
	})
}

// gather is a model hook that observes concurrency deterministically: each child call
// counts itself in flight and waits until bound calls are in flight together (or, a hang
// guard, a minute passes),
// so the peak shows the bound however slowly the machine schedules them; once the bound was
// reached, later calls pass straight through.
func gather(inflight, peak *atomic.Int32, full *atomic.Bool, bound int32) {
	n := inflight.Add(1)
	for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
	}
	if n >= bound {
		full.Store(true)
	}
	for deadline := time.Now().Add(time.Minute); !full.Load() && time.Now().Before(deadline); {
		time.Sleep(2 * time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // a call past the bound would be in flight now
	inflight.Add(-1)
}
