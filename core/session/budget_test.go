package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/events"
	"github.com/archmax-ai/archmax/core/hostconfig"
	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/pricing"
	"github.com/archmax-ai/archmax/core/store"
	"github.com/archmax-ai/archmax/core/transcript"
)

// budgetFlow stays in its agent state while the model records variables: every answer is
// one step of 220 tokens (calls: 200 in, 20 out) or 110 (says: 100 in, 10 out).
const budgetFlow = `
states:
  work:
    triggers:
      manual:
    instructions: Work.
    transitions:
      - to: done
        description: Finished.
  done:
    instructions: Say done.
`

// tenPerM prices test-model at $10 per 1M tokens in and out: a step of 220 tokens costs
// $0.0022, one of 110 $0.0011.
func tenPerM() pricing.Table {
	r := 10.0
	return pricing.Table{"test-model": {Input: &r, Output: &r}}
}

// budgetClock is a settable clock (the daily counter's day; no wall clock in assertions).
type budgetClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *budgetClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *budgetClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

func budgetHarness(t *testing.T, b *hostconfig.Budgets) (*harness, *budgetClock) {
	t.Helper()
	h := newHarness(t, budgetFlow, nil)
	clk := &budgetClock{now: time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)}
	h.cfg.Clock, h.cfg.Pricing, h.cfg.Budgets = clk.Now, tenPerM(), b
	return h, clk
}

func step(n int) reply { return calls("", setVars(map[string]any{"n": n})) }

// assertBudgetStop checks a call stopped on a budget: rejected with the error's text, the
// stored lastError and summary, the warning event, and the committed transcript ending with
// the crossing step's tool result (nothing after it).
func assertBudgetStop(t *testing.T, h *harness, out *Outcome, kind BudgetKind, unit BudgetUnit, scope BudgetScope, limit, used float64) {
	t.Helper()
	if out.Kind != KindRejected || out.Status != StatusRejected || !strings.HasPrefix(out.Rejected, "Budget exceeded: ") ||
		!strings.Contains(out.Rejected, "archmax.host.yaml") {
		t.Fatalf("outcome %s %q", out.Kind, out.Rejected)
	}
	sum := h.summary(out.SessionID)
	if sum.Status != StatusRejected || sum.Rejected != out.Rejected {
		t.Errorf("summary %s %q", sum.Status, sum.Rejected)
	}
	if le := sum.LastError; le == nil || le.Code != "budget_exceeded" || le.Message != out.Rejected || le.Retryable {
		t.Errorf("lastError %+v", sum.LastError)
	}
	var warn *events.Event
	for _, e := range h.eventsOf(events.Warning) {
		if e.SessionID == out.SessionID && e.Str("scope") == "budget" && e.Str("code") == BudgetExceededCode {
			warn = &e
		}
	}
	if warn == nil {
		t.Fatal("no budget warning event")
	}
	if warn.Str("kind") != string(kind) || warn.Str("unit") != string(unit) || warn.Str("budgetScope") != string(scope) ||
		warn.Data["limit"] != limit || fmt.Sprint(warn.Data["used"]) != fmt.Sprint(used) {
		t.Errorf("warning %+v, want %s %s %s limit %v used %v", warn.Data, kind, unit, scope, limit, used)
	}
	if warn.Level != "warn" {
		t.Errorf("the budget event is not at warning level: %s", warn.Level)
	}
	// committed: the stored transcript is the outcome's, ending on the crossing step's result
	stored := h.transcriptOf(out.SessionID)
	if len(stored) != len(out.Messages) {
		t.Errorf("%d messages stored, %d in the outcome", len(stored), len(out.Messages))
	}
	if last := stored[len(stored)-1]; last.Role != transcript.RoleTool {
		t.Errorf("the transcript does not end on the crossing step's tool result: %+v", last)
	}
	if su, ou := sum.Usage, out.Usage; su == nil || ou == nil || *su.CostUSD != *ou.CostUSD || su.InputTokens != ou.InputTokens {
		t.Errorf("stored usage %+v, outcome usage %+v", su, ou)
	}
}

func TestBudgetTurnTokens(t *testing.T) {
	h, _ := budgetHarness(t, &hostconfig.Budgets{Session: hostconfig.BudgetLimits{Turn: hostconfig.BudgetLimit{Tokens: 500}}})
	// 220, 440 (under), 660 (reached): the third step is kept, no fourth model call
	h.script(step(1), step(2), step(3))
	out := h.send("s1", "go", nil)
	assertBudgetStop(t, h, out, BudgetTurn, BudgetTokens, BudgetSession, 500, 660)
	if n := len(h.model.requests); n != 3 {
		t.Errorf("%d model calls, want 3", n)
	}
	if fmt.Sprint(out.Variables["n"].Value) != "3" || out.Usage.InputTokens+out.Usage.OutputTokens != 660 {
		t.Errorf("the crossing step is not committed: n=%v usage %+v", out.Variables["n"].Value, out.Usage)
	}
	if !strings.Contains(out.Rejected, "budgets.session.turn.tokens") || !strings.Contains(out.Rejected, "of 500 tokens (used 660 tokens)") {
		t.Errorf("reason %q", out.Rejected)
	}
	// a turn's budget is its own: the next message's turn starts from zero
	h.script(step(4), says("Done for now."))
	if out := h.send("s1", "again", nil); out.Kind != KindCompleted {
		t.Errorf("next turn: %s %q", out.Kind, out.Rejected)
	}
	if le := h.summary("s1").LastError; le != nil {
		t.Errorf("a turn that completed keeps the budget's lastError: %+v", le)
	}
}

func TestBudgetTurnUSD(t *testing.T) {
	h, _ := budgetHarness(t, &hostconfig.Budgets{Session: hostconfig.BudgetLimits{Turn: hostconfig.BudgetLimit{USD: 0.005, Tokens: 1e6}}})
	h.script(step(1), step(2), step(3)) // $0.0022, $0.0044, $0.0066
	out := h.send("s1", "go", nil)
	assertBudgetStop(t, h, out, BudgetTurn, BudgetUSD, BudgetSession, 0.005, 0.0066)
	if !strings.Contains(out.Rejected, "of $0.005 (used $0.0066)") {
		t.Errorf("reason %q", out.Rejected)
	}
}

func TestBudgetLifetimeTokensAcrossTurns(t *testing.T) {
	h, _ := budgetHarness(t, &hostconfig.Budgets{Workflows: map[string]hostconfig.BudgetLimits{"wf": {Lifetime: hostconfig.BudgetLimit{Tokens: 500}}}})
	h.script(step(1), says("First done.")) // 330
	if out := h.send("s1", "one", nil); out.Kind != KindCompleted {
		t.Fatalf("first turn %s %q", out.Kind, out.Rejected)
	}
	h.script(step(2)) // 550: reached within the second turn
	out := h.send("s1", "two", nil)
	assertBudgetStop(t, h, out, BudgetLifetime, BudgetTokens, BudgetSession, 500, 550)
	if !strings.Contains(out.Rejected, "budgets.workflows.wf.lifetime.tokens") {
		t.Errorf("the reason names the wrong key: %q", out.Rejected)
	}
	// a new turn is refused before anything is written
	before, _ := h.log.Get(context.Background(), "s1")
	_, err := h.engine().Send(context.Background(), "s1", SendInput{Message: "three"})
	var be *BudgetExceededError
	if !errors.As(err, &be) || be.Kind != BudgetLifetime || be.Unit != BudgetTokens || be.Scope != BudgetSession || be.Used != 550 || be.Limit != 500 || be.Code() != "budget_exceeded" {
		t.Fatalf("a turn over the lifetime budget: %v", err)
	}
	after, _ := h.log.Get(context.Background(), "s1")
	if after.Version != before.Version || after.Messages != before.Messages {
		t.Errorf("a refused turn wrote: version %d → %d, messages %d → %d", before.Version, after.Version, before.Messages, after.Messages)
	}
}

// The lifetime budget counts a sub-workflow child's cost as the child runs (BU22-10): the
// parent's own first call is under the limit, the child's first step takes the two over it,
// so the child stops there on its parent's budget and the parent stops before its next
// model call; the child's cost is rolled in.
func TestBudgetLifetimeUSDIncludesTheChild(t *testing.T) {
	h := delegateHarness(t)
	h.cfg.Pricing = tenPerM()
	h.cfg.Budgets = &hostconfig.Budgets{Workflows: map[string]hostconfig.BudgetLimits{"wf": {Lifetime: hostconfig.BudgetLimit{USD: 0.004}}}}
	h.script(calls("", delegateCall("check-item", map[string]any{"item": "AB-12", "qty": 2})))    // own $0.0022
	h.child("s1~1", calls("", setVars(map[string]any{"verdict": "in stock"})), says("In stock.")) // $0.0022, then never
	out := h.send("s1", "check it", nil)
	assertBudgetStop(t, h, out, BudgetLifetime, BudgetUSD, BudgetSession, 0.004, 0.0044)
	if c := h.summary("s1~1"); c.Status != StatusRejected || c.Usage == nil || *c.Usage.CostUSD != 0.0022 ||
		!strings.Contains(c.Rejected, "session 's1' reached its lifetime budget") {
		t.Errorf("child %s %+v %q", c.Status, c.Usage, c.Rejected)
	}
	if n := len(h.model.requests); n != 2 {
		t.Errorf("%d model calls, want 2 (parent 1, child 1)", n)
	}
}

func TestBudgetDailyTokensAcrossSessions(t *testing.T) {
	h, clk := budgetHarness(t, &hostconfig.Budgets{Workflows: map[string]hostconfig.BudgetLimits{"wf": {Daily: hostconfig.BudgetLimit{Tokens: 500}}}})
	h.script(step(1), says("Done.")) // 330 in the day's counter
	if out := h.send("a", "one", nil); out.Kind != KindCompleted {
		t.Fatalf("a: %s %q", out.Kind, out.Rejected)
	}
	h.script(step(1)) // 550: session b's first step reaches the workflow's budget
	out := h.send("b", "two", nil)
	assertBudgetStop(t, h, out, BudgetDaily, BudgetTokens, BudgetWorkflow, 500, 550)
	if !strings.Contains(out.Rejected, "2026-12-02") || !strings.Contains(out.Rejected, "budgets.workflows.wf.daily.tokens") {
		t.Errorf("reason %q", out.Rejected)
	}
	// a third session is refused before it exists
	_, err := h.engine().Send(context.Background(), "c", SendInput{Message: "three"})
	var be *BudgetExceededError
	if !errors.As(err, &be) || be.Kind != BudgetDaily || be.Scope != BudgetWorkflow || be.Day != "2026-12-02" {
		t.Fatalf("a new session over the daily budget: %v", err)
	}
	if _, err := h.log.Get(context.Background(), "c"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the refused session exists: %v", err)
	}
	// the next UTC day has a counter of its own
	clk.Set(time.Date(2026, 12, 3, 0, 0, 1, 0, time.UTC))
	h.script(says("New day."))
	if out := h.send("c", "three", nil); out.Kind != KindCompleted {
		t.Errorf("next day: %s %q", out.Kind, out.Rejected)
	}
	for day, want := range map[string]int64{"2026-12-02": 550, "2026-12-03": 110} {
		if tot, _ := h.log.AddUsage(context.Background(), "wf", day, 0, 0); tot.Tokens != want {
			t.Errorf("%s: counter %+v, want %d tokens", day, tot, want)
		}
	}
}

func TestBudgetDailyUSDAcrossTwoSessions(t *testing.T) {
	h, _ := budgetHarness(t, &hostconfig.Budgets{Workflows: map[string]hostconfig.BudgetLimits{"wf": {Daily: hostconfig.BudgetLimit{USD: 0.005}}}})
	h.script(step(1), says("Done.")) // $0.0033
	if out := h.send("a", "one", nil); out.Kind != KindCompleted {
		t.Fatalf("a: %s %q", out.Kind, out.Rejected)
	}
	h.script(step(1)) // $0.0055
	out := h.send("b", "two", nil)
	assertBudgetStop(t, h, out, BudgetDaily, BudgetUSD, BudgetWorkflow, 0.005, 0.0055)
	if tot, _ := h.log.AddUsage(context.Background(), "wf", "2026-12-02", 0, 0); tot.MicroUSD != 5500 {
		t.Errorf("counter %+v", tot)
	}
}

// A USD budget on a workflow whose model no pricing entry prices is refused before anything
// is written; the same budget in tokens runs.
func TestBudgetUSDOnUnpricedModelIsRefused(t *testing.T) {
	h, _ := budgetHarness(t, &hostconfig.Budgets{Session: hostconfig.BudgetLimits{Lifetime: hostconfig.BudgetLimit{USD: 1}}})
	h.cfg.Pricing = pricing.Table{"other-model": tenPerM()["test-model"]}
	_, err := h.engine().Send(context.Background(), "s1", SendInput{Message: "go"})
	var pe *BudgetPricingError
	var p *hostconfig.Problem
	if !errors.As(err, &pe) || !errors.As(err, &p) || p.Code != hostconfig.CodeBudget || p.Field != "budgets.session" || !strings.Contains(err.Error(), "'test-model'") {
		t.Fatalf("unpriced: %v", err)
	}
	if _, err := h.log.Get(context.Background(), "s1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the refused call wrote the session: %v", err)
	}
	h.cfg.Budgets = &hostconfig.Budgets{Session: hostconfig.BudgetLimits{Lifetime: hostconfig.BudgetLimit{Tokens: 1000}}}
	h.script(says("Fine."))
	if out := h.send("s1", "go", nil); out.Kind != KindCompleted {
		t.Errorf("a token budget on an unpriced model: %s %q", out.Kind, out.Rejected)
	}
}

// hiddenCounter is a log that does not count usage.
type hiddenCounter struct{ store.Log }

func TestBudgetDailyNeedsACounter(t *testing.T) {
	h, _ := budgetHarness(t, &hostconfig.Budgets{Workflows: map[string]hostconfig.BudgetLimits{"wf": {Daily: hostconfig.BudgetLimit{Tokens: 5}}}})
	h.cfg.Log = hiddenCounter{h.log}
	if _, err := New(h.cfg); !errors.Is(err, errNoUsageCounter) {
		t.Fatalf("New: %v", err)
	}
	h.cfg.Usage = h.log
	if _, err := New(h.cfg); err != nil {
		t.Fatal(err)
	}
}

// Hostile: many sessions of one workflow run at once, their first steps in flight together
// (each reads the counter before any adds to it). The guarantee (BU22-7): each session
// checks the counter's total its own last addition returned before each step, so once the
// total reaches the limit every session runs at most one more step — the workflow's day
// ends under limit + sessions × one step, and every session stops on the daily budget.
func TestBudgetDailyConcurrentSessionsOverspendAtMostOneStepEach(t *testing.T) {
	const sessions, limit, stepTokens = 8, 2000, 220
	h, _ := budgetHarness(t, &hostconfig.Budgets{Workflows: map[string]hostconfig.BudgetLimits{"wf": {Daily: hostconfig.BudgetLimit{Tokens: limit}}}})
	h.model.bySession = map[string][]reply{}
	var gate sync.WaitGroup
	gate.Add(sessions)
	first := map[string]bool{}
	var fmu sync.Mutex
	h.model.hook = func(req *model.Request) {
		fmu.Lock()
		sid := req.Metadata["archmax.session"]
		isFirst := !first[sid]
		first[sid] = true
		fmu.Unlock()
		if isFirst { // every session's first model call waits for all the others'
			gate.Done()
			gate.Wait()
		}
	}
	for i := range sessions {
		for n := range 40 {
			h.child(fmt.Sprintf("s%d", i), step(n))
		}
	}
	eng := h.engine()
	outs := make([]*Outcome, sessions)
	errs := make([]error, sessions)
	var wg sync.WaitGroup
	for i := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = eng.Send(context.Background(), fmt.Sprintf("s%d", i), SendInput{Message: "go"})
		}()
	}
	wg.Wait()
	var steps int64
	for i, out := range outs {
		if errs[i] != nil {
			t.Fatalf("s%d: %v", i, errs[i])
		}
		if out.Kind != KindRejected || !strings.Contains(out.Rejected, "daily budget") {
			t.Errorf("s%d: %s %q", i, out.Kind, out.Rejected)
		}
		steps += (out.Usage.InputTokens + out.Usage.OutputTokens) / stepTokens
	}
	tot, err := h.log.AddUsage(context.Background(), "wf", "2026-12-02", 0, 0)
	must(t, err)
	if tot.Tokens != steps*stepTokens {
		t.Errorf("counter %d tokens, the sessions spent %d", tot.Tokens, steps*stepTokens)
	}
	if tot.Tokens < limit || tot.Tokens >= limit+sessions*stepTokens {
		t.Errorf("the day's total %d tokens: want at least the limit %d and under limit + %d sessions × %d", tot.Tokens, limit, sessions, stepTokens)
	}
	// and every further start is refused
	if _, err := eng.Send(context.Background(), "late", SendInput{Message: "go"}); !errors.As(err, new(*BudgetExceededError)) {
		t.Errorf("late start: %v", err)
	}
}

// A turn's budget spans its continuations: each invocation past its step deadline takes one
// step and hands the turn on, and the turn still stops once its steps together reach the
// limit (the base is the record's, not the invocation's).
func TestBudgetTurnSpansContinuations(t *testing.T) {
	h, clk := budgetHarness(t, &hostconfig.Budgets{Session: hostconfig.BudgetLimits{Turn: hostconfig.BudgetLimit{Tokens: 500}}})
	h.script(step(1), step(2), step(3))
	eng := h.engine()
	past := func() context.Context { return WithStepDeadline(context.Background(), clk.Now().Add(-time.Second)) }
	out, err := eng.Send(past(), "s1", SendInput{Message: "go"})
	must(t, err)
	for i := 0; out.Kind == KindRunning; i++ {
		if i > 10 {
			t.Fatal("the turn never settled")
		}
		var skipped *ContinueSkipped
		out, skipped, err = eng.Continue(past(), "s1", out.TurnID)
		must(t, err)
		if skipped != nil {
			t.Fatalf("skipped: %s", skipped.Reason)
		}
	}
	assertBudgetStop(t, h, out, BudgetTurn, BudgetTokens, BudgetSession, 500, 660)
	if n := len(h.model.requests); n != 3 {
		t.Errorf("%d model calls, want 3", n)
	}
}
