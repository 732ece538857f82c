package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/events"
	"github.com/archmax-ai/archmax/core/hostconfig"
	"github.com/archmax-ai/archmax/core/pricing"
	"github.com/archmax-ai/archmax/core/store"
)

// budgetParkFlow parks at a human state: the advance is one step (220 tokens), the handoff
// one reply-only call (110).
const budgetParkFlow = `
states:
  work:
    triggers:
      manual:
    instructions: Work.
    transitions:
      - to: approve
        description: Ready for a person.
  approve:
    type: human
    transitions:
      - to: done
        description: Approved.
  done:
    instructions: Say done.
`

// headOf is session id's stored head (its version and counters: what a refusal leaves alone).
func (h *harness) headOf(id string) *store.Head {
	h.t.Helper()
	head, err := h.log.Get(context.Background(), id)
	must(h.t, err)
	return head
}

// assertRefused checks a call was refused on a spent budget with the refusal's own text,
// and wrote nothing.
func assertRefused(t *testing.T, h *harness, id string, before *store.Head, calls int, err error, kind BudgetKind, field string) {
	t.Helper()
	var be *BudgetExceededError
	if !errors.As(err, &be) || be.Kind != kind || be.Field != field || !be.Refused {
		t.Fatalf("want a refusal on %s (%s), got %v", kind, field, err)
	}
	if msg := be.Error(); !strings.Contains(msg, "this call is refused: nothing ran") || strings.Contains(msg, "stops before its next step") {
		t.Errorf("the refusal's text: %q", msg)
	}
	after := h.headOf(id)
	if after.Version != before.Version || after.Messages != before.Messages || after.Events != before.Events {
		t.Errorf("a refused call wrote: version %d → %d, messages %d → %d", before.Version, after.Version, before.Messages, after.Messages)
	}
	if n := len(h.model.requests); n != calls {
		t.Errorf("%d model calls, want %d (none for the refused call)", n, calls)
	}
}

// A reply, a message or a decision to a session parked at a human state is refused before
// anything is written once its lifetime budget is spent, as a new turn is; the park stays,
// and a decision taken after the budget is raised is applied.
func TestBudgetSpentRefusesEveryCallOnAPark(t *testing.T) {
	h := newHarness(t, budgetParkFlow, nil)
	h.cfg.Clock = (&budgetClock{now: time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)}).Now
	h.cfg.Pricing = tenPerM()
	h.cfg.Budgets = &hostconfig.Budgets{Workflows: map[string]hostconfig.BudgetLimits{"wf": {Lifetime: hostconfig.BudgetLimit{Tokens: 300}}}}
	h.script(calls("", advance("approve", "ready")), says("Over to you."))
	out := h.send("ba2", "badge please", nil)
	if out.Kind != KindParked || out.Usage.InputTokens+out.Usage.OutputTokens != 330 {
		t.Fatalf("outcome %s %+v", out.Kind, out.Usage)
	}
	before := h.headOf("ba2")
	eng := h.engine()
	_, err := eng.Reply(context.Background(), "ba2", "any update?")
	assertRefused(t, h, "ba2", before, 2, err, BudgetLifetime, "budgets.workflows.wf.lifetime.tokens")
	_, err = eng.Send(context.Background(), "ba2", SendInput{Message: "any update?"})
	assertRefused(t, h, "ba2", before, 2, err, BudgetLifetime, "budgets.workflows.wf.lifetime.tokens")
	_, err = eng.Decide(context.Background(), "ba2", Decision{To: "done"})
	assertRefused(t, h, "ba2", before, 2, err, BudgetLifetime, "budgets.workflows.wf.lifetime.tokens")
	// a wrong target is still the decision's own refusal
	if _, err := eng.Decide(context.Background(), "ba2", Decision{To: "nowhere"}); !errors.As(err, new(*InvalidDecisionTargetError)) {
		t.Errorf("a wrong target: %v", err)
	}
	if s := h.summary("ba2"); s.Status != StatusAwaitingDecision || s.Pending == nil {
		t.Fatalf("the park is gone: %s", s.Status)
	}
	// the daily budget refuses the same way
	h.cfg.Budgets = &hostconfig.Budgets{Workflows: map[string]hostconfig.BudgetLimits{"wf": {Daily: hostconfig.BudgetLimit{Tokens: 1}}}}
	must(t, func() error {
		_, err := h.log.AddUsage(context.Background(), "wf", store.UsageDay(h.cfg.Clock()), 5, 0)
		return err
	}())
	_, err = h.engine().Reply(context.Background(), "ba2", "any update?")
	assertRefused(t, h, "ba2", before, 2, err, BudgetDaily, "budgets.workflows.wf.daily.tokens")
	// raised: the decision is applied
	h.cfg.Budgets = &hostconfig.Budgets{Workflows: map[string]hostconfig.BudgetLimits{"wf": {Lifetime: hostconfig.BudgetLimit{Tokens: 10000}}}}
	h.script(says("Done."))
	if out, err := h.engine().Decide(context.Background(), "ba2", Decision{To: "done"}); err != nil || out.Kind != KindCompleted {
		t.Fatalf("after the raise: %v %+v", err, out)
	}
}

// A decision on a delegated park is refused before anything is written when the parent's
// lifetime budget is spent, or the child's own: the parent's park and the child's stay, and
// the decision is applied to the child once the budget is raised (never lost).
func TestBudgetSpentRefusesADecisionOnADelegatedPark(t *testing.T) {
	for _, c := range []struct {
		name  string
		b     map[string]hostconfig.BudgetLimits
		field string
	}{
		// parent 220 + child 330 (rolled in when it parks) + the closing message 110 = 660
		{"parent", map[string]hostconfig.BudgetLimits{"wf": {Lifetime: hostconfig.BudgetLimit{Tokens: 600}}}, "budgets.workflows.wf.lifetime.tokens"},
		// the child's 330 reaches its own
		{"child", map[string]hostconfig.BudgetLimits{"review-item": {Lifetime: hostconfig.BudgetLimit{Tokens: 300}}}, "budgets.workflows.review-item.lifetime.tokens"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := delegateHarness(t)
			h.cfg.Budgets = &hostconfig.Budgets{Workflows: c.b}
			h.script(calls("", delegateCall("review-item", map[string]any{"item": "A"})), says("It is with a reviewer."))
			h.child("p~1", calls("", advance("approve", "ready")), says("Handed to a reviewer."))
			out := h.send("p", "review A", nil)
			if out.Kind != KindParked || out.Delegation == nil {
				t.Fatalf("outcome %s %q", out.Kind, out.Rejected)
			}
			before, childBefore := h.headOf("p"), h.headOf("p~1")
			_, err := h.engine().Decide(context.Background(), "p", Decision{To: "accepted", ParkID: out.Pending.ParkID})
			assertRefused(t, h, "p", before, 4, err, BudgetLifetime, c.field)
			if after := h.headOf("p~1"); after.Version != childBefore.Version {
				t.Errorf("the child was written: version %d → %d", childBefore.Version, after.Version)
			}
			if s, cs := h.summary("p"), h.summary("p~1"); s.Status != StatusAwaitingDecision || cs.Status != StatusAwaitingDecision {
				t.Fatalf("parent %s, child %s", s.Status, cs.Status)
			}
			h.cfg.Budgets = nil
			h.child("p~1", says("Accepted."))
			h.script(says("The reviewer accepted it."))
			out2, err := h.engine().Decide(context.Background(), "p", Decision{To: "accepted", ParkID: out.Pending.ParkID})
			if err != nil || out2.Kind != KindCompleted {
				t.Fatalf("after the raise: %v %+v", err, out2)
			}
			if cs := h.summary("p~1"); cs.Status != StatusCompleted || cs.WorkflowState != "accepted" {
				t.Errorf("the child did not get the decision: %s in %s", cs.Status, cs.WorkflowState)
			}
		})
	}
}

// A sub-workflow child's steps are held to its parent's lifetime budget as it runs: the
// parent's usage (220) plus the child's not yet rolled in reaches 1,000 tokens at the child's
// fourth step (1,100), the child stops there with the parent's budget as its reason, and the
// parent stops on the same budget before its next model call.
func TestBudgetChildStopsOnTheParentsLifetime(t *testing.T) {
	h := delegateHarness(t)
	h.cfg.Pricing = tenPerM()
	h.cfg.Budgets = &hostconfig.Budgets{Workflows: map[string]hostconfig.BudgetLimits{"wf": {Lifetime: hostconfig.BudgetLimit{Tokens: 1000}}}}
	h.script(calls("", delegateCall("check-item", map[string]any{"item": "AB-12", "qty": 2})))
	for n := range 10 {
		h.child("s1~1", step(n))
	}
	out := h.send("s1", "check it", nil)
	assertBudgetStop(t, h, out, BudgetLifetime, BudgetTokens, BudgetSession, 1000, 1100)
	c := h.summary("s1~1")
	if c.Status != StatusRejected || !strings.Contains(c.Rejected, "session 's1' reached its lifetime budget") ||
		!strings.Contains(c.Rejected, "its sub-workflow session 's1~1' stops before its next step") ||
		!strings.Contains(c.Rejected, "budgets.workflows.wf.lifetime.tokens") || !strings.Contains(c.Rejected, "(used 1100 tokens)") {
		t.Errorf("child %s %q", c.Status, c.Rejected)
	}
	if le := c.LastError; le == nil || le.Code != BudgetExceededCode {
		t.Errorf("child lastError %+v", c.LastError)
	}
	if n := len(h.model.requests); n != 5 {
		t.Errorf("%d model calls, want 5 (parent 1, child 4)", n)
	}
}

// The same in USD and for the parent's turn, and through two levels: a grandchild's steps
// count against the root's budget with the child's usage not yet rolled in.
func TestBudgetGrandchildStopsOnTheRootsTurnUSD(t *testing.T) {
	h := delegateHarness(t)
	h.cfg.Pricing = tenPerM()
	// check-item delegates to review-item in this variant
	must(t, h.authored.Write(context.Background(), "workflows/check-item/workflow.yaml", []byte(strings.Replace(checkItemFlow,
		"allow: [write_file, remove_file]", "allow: [write_file, remove_file, archmax_workflow_review-item]", 1))))
	h.cfg.Budgets = &hostconfig.Budgets{Session: hostconfig.BudgetLimits{Turn: hostconfig.BudgetLimit{USD: 0.01}}}
	h.script(calls("", delegateCall("check-item", map[string]any{"item": "AB-12", "qty": 2})))
	h.child("g~1", calls("", delegateCall("review-item", map[string]any{"item": "AB-12"})))
	for n := range 10 {
		h.child("g~1~1", step(n))
	}
	// root $0.0022 + child $0.0022 + grandchild 3 × $0.0022 = $0.011 ≥ $0.01
	out := h.send("g", "check it", nil)
	if out.Kind != KindRejected || !strings.Contains(out.Rejected, "budgets.session.turn.usd") {
		t.Fatalf("root %s %q", out.Kind, out.Rejected)
	}
	if gc := h.summary("g~1~1"); gc.Status != StatusRejected || !strings.Contains(gc.Rejected, "session 'g' reached its budget per turn") {
		t.Errorf("grandchild %s %q", gc.Status, gc.Rejected)
	}
	if n := len(h.model.requests); n != 5 {
		t.Errorf("%d model calls, want 5 (root 1, child 1, grandchild 3)", n)
	}
	if u := h.summary("g").Usage; u == nil || *u.CostUSD != 0.011 {
		t.Errorf("root usage %+v", u)
	}
}

// budgetGraderFlow's grader looks at the history on every call and never decides.
const budgetGraderFlow = `
states:
  draft:
    triggers:
      manual:
    instructions: Draft.
    transitions:
      - to: check
        description: Drafted.
  check:
    type: grader
    instructions: Check it.
    budget: { maxTurns: 20 }
    transitions:
      - to: done
        description: Fine.
  done:
    instructions: Say done.
`

// A grader's calls are held to the budget between them: the agent's advance (220) and two
// grader calls (660) reach 600 tokens, so the third grader call is never made; the grader's
// calls are the session's usage, recorded, and nothing of the grader's verdict is.
func TestBudgetStopsAGraderBetweenItsCalls(t *testing.T) {
	h := newHarness(t, budgetGraderFlow, nil)
	h.cfg.Budgets = &hostconfig.Budgets{Session: hostconfig.BudgetLimits{Turn: hostconfig.BudgetLimit{Tokens: 600}}}
	look := calls("", call{"archmax_get_history", map[string]any{}})
	h.script(calls("", advance("check", "drafted")))
	h.script(look, look) // a third grader call would find no reply
	out := h.send("g1", "go", nil)
	if out.Kind != KindRejected || !strings.Contains(out.Rejected, "budgets.session.turn.tokens") || !strings.Contains(out.Rejected, "(used 660 tokens)") {
		t.Fatalf("outcome %s %q", out.Kind, out.Rejected)
	}
	if n := len(h.model.requests); n != 3 {
		t.Errorf("%d model calls, want 3 (agent 1, grader 2)", n)
	}
	sum := h.summary("g1")
	if sum.Usage == nil || sum.Usage.InputTokens+sum.Usage.OutputTokens != 660 || sum.WorkflowState != "check" {
		t.Errorf("stored usage %+v in %s", sum.Usage, sum.WorkflowState)
	}
	usage := 0
	for _, e := range h.eventsOf(events.ModelUsage) {
		if e.Str("role") == "grader" {
			usage++
		}
	}
	if usage != 2 {
		t.Errorf("%d grader model-usage events, want 2", usage)
	}
}

// A human state's model (its handoff and replies) and a sub-workflow's models under the
// parent's lifetime or turn USD budget must be priced: the call is refused before anything
// is written, naming the model; a daily USD budget, which counts the workflow's own calls
// only, does not need the sub-workflow's.
func TestBudgetUSDUnpricedHumanAndSubWorkflowModels(t *testing.T) {
	t.Run("human", func(t *testing.T) {
		h := newHarness(t, strings.Replace(budgetParkFlow, "    type: human\n", "    type: human\n    model: handoff-model\n", 1), nil)
		h.cfg.Pricing = tenPerM()
		h.cfg.Budgets = &hostconfig.Budgets{Session: hostconfig.BudgetLimits{Lifetime: hostconfig.BudgetLimit{USD: 1}}}
		_, err := h.engine().Send(context.Background(), "s1", SendInput{Message: "go"})
		if pe := (*BudgetPricingError)(nil); !errors.As(err, &pe) || !strings.Contains(err.Error(), "'handoff-model'") {
			t.Fatalf("unpriced human model: %v", err)
		}
	})
	t.Run("sub-workflow", func(t *testing.T) {
		h := delegateHarness(t)
		must(t, h.authored.Write(context.Background(), "workflows/check-item/workflow.yaml", []byte("settings:\n  model: child-model\n"+checkItemFlow)))
		h.cfg.Pricing = tenPerM()
		for _, b := range []hostconfig.BudgetLimits{{Lifetime: hostconfig.BudgetLimit{USD: 1}}, {Turn: hostconfig.BudgetLimit{USD: 1}}} {
			h.cfg.Budgets = &hostconfig.Budgets{Workflows: map[string]hostconfig.BudgetLimits{"wf": b}}
			_, err := h.engine().Send(context.Background(), "s1", SendInput{Message: "go"})
			if pe := (*BudgetPricingError)(nil); !errors.As(err, &pe) || !strings.Contains(err.Error(), "'child-model'") {
				t.Fatalf("%+v: unpriced sub-workflow model: %v", b, err)
			}
			if _, err := h.log.Get(context.Background(), "s1"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("the refused call wrote the session: %v", err)
			}
		}
		h.cfg.Budgets = &hostconfig.Budgets{Workflows: map[string]hostconfig.BudgetLimits{"wf": {Daily: hostconfig.BudgetLimit{USD: 1}}}}
		h.cfg.Pricing = pricing.Table{"test-model": tenPerM()["test-model"]}
		h.script(says("Fine."))
		if out := h.send("s1", "go", nil); out.Kind != KindCompleted {
			t.Errorf("a daily USD budget: %s %q", out.Kind, out.Rejected)
		}
	})
}

// brokenCounter is a usage counter that cannot be read.
type brokenCounter struct{}

func (brokenCounter) AddUsage(context.Context, string, string, int64, int64) (store.UsageTotals, error) {
	return store.UsageTotals{}, fmt.Errorf("usage counter usage/wf/2026-12-02.json is damaged: delete it")
}

// A daily counter that cannot be read is reported once per call, with the store's words on
// what to do, and the call runs (a brake, not a gate: BU22-14).
func TestBudgetBrokenCounterWarnsOncePerCall(t *testing.T) {
	h, _ := budgetHarness(t, &hostconfig.Budgets{Workflows: map[string]hostconfig.BudgetLimits{"wf": {Daily: hostconfig.BudgetLimit{Tokens: 100}}}})
	h.cfg.Usage = brokenCounter{}
	h.script(step(1), step(2), step(3), says("Done."))
	if out := h.send("s1", "go", nil); out.Kind != KindCompleted {
		t.Fatalf("outcome %s %q", out.Kind, out.Rejected)
	}
	var warned []string
	for _, e := range h.eventsOf(events.Warning) {
		if e.Str("scope") == "budget" {
			warned = append(warned, e.Str("message"))
		}
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "runs without its daily budget") || !strings.Contains(warned[0], "delete it") {
		t.Errorf("budget warnings %q", warned)
	}
}

// An input park: a delivery is refused as a decision is (the park stays), a due wake — the
// timer, with no caller to tell — is not refused: its loop's check stops the session
// rejected before its first step, so no model call is made for it and nothing is retried.
func TestBudgetSpentDeliveryRefusedWakeStops(t *testing.T) {
	h := newHarness(t, strings.Replace(waitFlow, "    budget: { maxParks: 1 }\n", "", 1), nil)
	clk := &budgetClock{now: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}
	h.cfg.Clock = clk.Now
	h.cfg.Budgets = &hostconfig.Budgets{Session: hostconfig.BudgetLimits{Lifetime: hostconfig.BudgetLimit{Tokens: 300}}}
	h.script(calls("", call{"archmax_wait", map[string]any{"reason": "a timer", "until": "30m"}}), says("Back in 30 minutes.")) // 330
	out := h.send("w1", "remind me", nil)
	if out.Kind != KindParked || out.ParkedChannel != ChannelInput {
		t.Fatalf("outcome %s %s %q", out.Kind, out.ParkedChannel, out.Rejected)
	}
	before := h.headOf("w1")
	_, err := h.engine().Deliver(context.Background(), "w1", Delivery{Trigger: "manual", Message: "here it is"})
	assertRefused(t, h, "w1", before, 2, err, BudgetLifetime, "budgets.session.lifetime.tokens")
	_, err = h.engine().Send(context.Background(), "w1", SendInput{Message: "here it is"})
	assertRefused(t, h, "w1", before, 2, err, BudgetLifetime, "budgets.session.lifetime.tokens")
	clk.Set(clk.Now().Add(31 * time.Minute))
	woke, skipped, err := h.engine().Wake(context.Background(), "w1", out.Pending.ParkID)
	if err != nil || skipped != nil {
		t.Fatalf("wake: %v %+v", err, skipped)
	}
	assertBudgetStopNoStep(t, h, woke)
	if n := len(h.model.requests); n != 2 {
		t.Errorf("%d model calls, want 2 (none for the wake)", n)
	}
}

// assertBudgetStopNoStep checks a call that stopped on its budget before its first step.
func assertBudgetStopNoStep(t *testing.T, h *harness, out *Outcome) {
	t.Helper()
	if out.Kind != KindRejected || !strings.HasPrefix(out.Rejected, "Budget exceeded: ") || !strings.Contains(out.Rejected, "stops before its next step") {
		t.Fatalf("outcome %s %q", out.Kind, out.Rejected)
	}
	if le := h.summary(out.SessionID).LastError; le == nil || le.Code != BudgetExceededCode {
		t.Errorf("lastError %+v", le)
	}
}

// A wake of a delegated input park on a parent whose budget is spent: the parent stops
// rejected before its first step, and the child it would have resumed is settled rejected
// with it (abandoned), not left waiting under a stopped parent (BU22-12).
func TestBudgetStopSettlesTheChildItWaitsFor(t *testing.T) {
	const parent = `
states:
  intake:
    triggers:
      manual:
    instructions: Hand it on.
    tools:
      allow: [archmax_workflow_waiter]
    transitions:
      - to: done
        description: Done.
  done:
    instructions: Say done.
`
	const waiter = `
states:
  watch:
    triggers:
      manual:
    instructions: Wait for the courier.
    transitions:
      - to: done
        description: Arrived.
  done:
    instructions: Say done.
`
	h := newHarness(t, parent, map[string]string{"workflows/waiter/workflow.yaml": waiter})
	h.model.bySession = map[string][]reply{}
	clk := &budgetClock{now: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}
	h.cfg.Clock = clk.Now
	// parent 220 + child 330 + the parent's closing message 110 = 660
	h.cfg.Budgets = &hostconfig.Budgets{Workflows: map[string]hostconfig.BudgetLimits{"wf": {Lifetime: hostconfig.BudgetLimit{Tokens: 600}}}}
	h.script(calls("", delegateCall("waiter", map[string]any{})), says("The courier is on the way."))
	h.child("w~1", calls("", call{"archmax_wait", map[string]any{"reason": "the courier", "until": "30m"}}), says("Waiting."))
	out := h.send("w", "send it", nil)
	if out.Kind != KindParked || out.ParkedChannel != ChannelInput || out.Pending.Delegation == nil {
		t.Fatalf("outcome %s %s %q", out.Kind, out.ParkedChannel, out.Rejected)
	}
	clk.Set(clk.Now().Add(31 * time.Minute))
	woke, skipped, err := h.engine().Wake(context.Background(), "w", out.Pending.ParkID)
	if err != nil || skipped != nil {
		t.Fatalf("wake: %v %+v", err, skipped)
	}
	assertBudgetStopNoStep(t, h, woke)
	if c := h.summary("w~1"); c.Status != StatusRejected || !strings.HasPrefix(c.Rejected, "Abandoned by its caller") {
		t.Errorf("child %s %q", c.Status, c.Rejected)
	}
	if n := len(h.model.requests); n != 4 {
		t.Errorf("%d model calls, want 4 (none after the wake)", n)
	}
}
