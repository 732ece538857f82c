package session

import (
	"context"
	"errors"
	"slices"
	"strconv"

	"github.com/archmax-ai/archmax/core/events"
	"github.com/archmax-ai/archmax/core/hostconfig"
	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/store"
)

// Budgets (the host file's `budgets:`, DECISIONS BU22-1…): limits on what a session's
// model calls spend, in tokens (input + output) and USD (Config.Pricing's costs), per turn
// (one call: Send, a decision, a delivery, a wake — a continuation carries its call's turn
// on), per session lifetime (a sub-workflow child's usage included: rolled in when it
// settles or parks, and checked by the child at each of its steps, BU22-10) and per workflow per UTC day (one store.UsageCounter item of every session of the
// workflow). A limit is reached when the usage is at or over it. The step that reaches it
// is committed — its tokens were spent — and the call then stops at the next step
// boundary, before any further model call or move: the session settles rejected (as the
// step limit settles it, BU22-5) with a *BudgetExceededError's text as its reason and as
// its lastError (code BudgetExceededCode), after a warning event (scope "budget"). A new
// turn on a session or workflow whose lifetime or daily budget is already spent is
// refused before anything is written (Send's *BudgetExceededError), and so is a reply,
// decision or delivery a caller sends to a parked session (BU22-11).

// BudgetExceededCode is the stable code of a stop on a budget: the lastError code, the
// warning event's code and the HTTP error code (metrics key on it).
const BudgetExceededCode = "budget_exceeded"

// BudgetKind is which limit was reached.
type BudgetKind string

// Budget kinds.
const (
	BudgetTurn     BudgetKind = "turn"
	BudgetLifetime BudgetKind = "lifetime"
	BudgetDaily    BudgetKind = "daily"
)

// BudgetUnit is a limit's unit.
type BudgetUnit string

// Budget units.
const (
	BudgetTokens BudgetUnit = "tokens" // input + output tokens
	BudgetUSD    BudgetUnit = "usd"
)

// BudgetScope is what a limit counts: one session (turn, lifetime) or every session of a
// workflow (daily).
type BudgetScope string

// Budget scopes.
const (
	BudgetSession  BudgetScope = "session"
	BudgetWorkflow BudgetScope = "workflow"
)

// BudgetExceededError: a budget of the host file's `budgets:` is spent (HTTP 429, code
// BudgetExceededCode). Limit and Used are in Unit (tokens, or USD); Day is the UTC day of a
// daily limit ("2006-01-02"). Field is the host file's key that sets the limit
// (budgets.session.turn.usd, budgets.workflows.<slug>.daily.tokens, …): raising it lets
// the session go on.
type BudgetExceededError struct {
	SessionID, Workflow string
	Kind                BudgetKind
	Unit                BudgetUnit
	Scope               BudgetScope
	Limit, Used         float64
	Day                 string
	Field               string
	// Via is the sub-workflow child session that reached its ancestor SessionID's limit
	// and stops on it ("" when the session is the one that stops).
	Via string
	// Refused: the call was refused before anything ran (the budget was spent already).
	Refused bool
}

func (e *BudgetExceededError) Error() string { return budgetExceededMessage(e) }

// Name returns the error's code, BudgetExceededCode.
func (e *BudgetExceededError) Name() string { return BudgetExceededCode }

// Code returns BudgetExceededCode.
func (e *BudgetExceededError) Code() string { return BudgetExceededCode }

// BudgetPricingError: the workflow has a USD budget but a model it calls is priced by no
// entry of the pricing table (hostconfig.UnpricedBudgetProblem, the check `archmax
// validate` reports): its cost could not be counted, so the engine runs none of its calls.
// A deployment's configuration error: HTTP 500.
type BudgetPricingError struct {
	Workflow string
	Problem  *hostconfig.Problem
}

func (e *BudgetPricingError) Error() string {
	return hostconfig.File + ": " + e.Problem.Message + " [" + e.Problem.Field + "] (hint: " + e.Problem.Hint + ")"
}

// Name returns the error name.
func (e *BudgetPricingError) Name() string { return "BudgetPricingError" }

func (e *BudgetPricingError) Unwrap() error { return e.Problem }

// ModelIDs are the model ids a workflow's calls are configured with: each agent and human
// state's (its own, else the workflow's settings.model, else modelID — a human state calls
// the model for its handoff and its replies on the park) and each grader's (its own, else
// graderModelID, else the agent's resolution) — the ids a USD budget needs priced. In
// declaration order, each once.
func ModelIDs(sp *spec.MachineSpec, modelID, graderModelID string) []string {
	var out []string
	for _, st := range sp.States {
		var id string
		switch {
		case st.Type != "agent" && st.Type != "grader" && st.Type != "human":
			continue
		case st.Model != "":
			id = st.Model
		case st.Type == "grader" && graderModelID != "":
			id = graderModelID
		case sp.Settings.Model != "":
			id = sp.Settings.Model
		default:
			id = modelID
		}
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// DelegatedWorkflows are the workflow slugs sp grants a delegation tool of
// (archmax_workflow_<slug>, workflow-wide or in a state), in declaration order, each once.
func DelegatedWorkflows(sp *spec.MachineSpec) []string {
	var out []string
	add := func(es []spec.ToolEntry) {
		for _, e := range es {
			if slug, ok := spec.WorkflowSlugFromToolName(e.Tool); ok && slug != "" && !slices.Contains(out, slug) {
				out = append(out, slug)
			}
		}
	}
	add(sp.Tools.Allow)
	for _, st := range sp.States {
		add(st.Tools.Allow)
	}
	return out
}

// BudgetModelIDs are the ids workflow's USD budgets need priced (BU22-15): its own
// ModelIDs and, when its turn or lifetime budget is in USD (which count its sub-workflows'
// calls), those of every workflow it may delegate to, transitively (load returns a
// workflow's spec, nil when it does not load: its own check reports it). A daily budget
// counts the workflow's own calls only.
func BudgetModelIDs(b *hostconfig.Budgets, workflow string, sp *spec.MachineSpec, load func(slug string) *spec.MachineSpec, modelID, graderModelID string) []string {
	out := ModelIDs(sp, modelID, graderModelID)
	lim := b.For(workflow)
	if lim.Turn.USD == 0 && lim.Lifetime.USD == 0 {
		return out
	}
	seen := map[string]bool{workflow: true}
	queue := DelegatedWorkflows(sp)
	for len(queue) > 0 {
		slug := queue[0]
		queue = queue[1:]
		if seen[slug] {
			continue
		}
		seen[slug] = true
		csp := load(slug)
		if csp == nil {
			continue
		}
		for _, id := range ModelIDs(csp, modelID, graderModelID) {
			if !slices.Contains(out, id) {
				out = append(out, id)
			}
		}
		queue = append(queue, DelegatedWorkflows(csp)...)
	}
	return out
}

// limits are the engine's workflow's budgets.
func (e *Engine) limits() hostconfig.BudgetLimits { return e.cfg.Budgets.For(e.cfg.Workflow) }

// usageCounter is Config.Usage, else the log when it counts usage itself.
func (e *Engine) usageCounter() store.UsageCounter { return counterOf(e.cfg) }

func counterOf(cfg Config) store.UsageCounter {
	if cfg.Usage != nil {
		return cfg.Usage
	}
	c, _ := cfg.Log.(store.UsageCounter)
	return c
}

// errNoUsageCounter: a daily budget with nothing to count it in.
var errNoUsageCounter = errors.New("session: Config.Budgets sets a daily budget, but neither Config.Usage nor Config.Log is a store.UsageCounter")

// checkBudgets is New's check of the budgets: a daily limit needs a counter.
func checkBudgets(cfg Config) error {
	if cfg.Budgets == nil || counterOf(cfg) != nil {
		return nil
	}
	if !cfg.Budgets.For(cfg.Workflow).Daily.Zero() {
		return errNoUsageCounter
	}
	return nil
}

// checkBudgetPricing refuses a call on a workflow whose USD budget its pricing cannot count
// (*BudgetPricingError), before anything is read or written.
func (e *Engine) checkBudgetPricing(ctx context.Context, sp *spec.MachineSpec) error {
	if !e.limits().USD() {
		return nil
	}
	load := func(slug string) *spec.MachineSpec {
		sib, err := e.sibling(ctx, slug)
		if err != nil {
			return nil
		}
		csp, err := sib.loadSpec(ctx)
		if err != nil {
			return nil
		}
		return csp
	}
	ids := BudgetModelIDs(e.cfg.Budgets, e.cfg.Workflow, sp, load, e.cfg.ModelID, e.cfg.GraderModelID)
	if p := hostconfig.UnpricedBudgetProblem(e.cfg.Budgets, e.cfg.Workflow, ids, e.cfg.Pricing); p != nil {
		return &BudgetPricingError{Workflow: e.cfg.Workflow, Problem: p}
	}
	return nil
}

// budgetState is a call's budget bookkeeping: its own model usage not yet added to the
// daily counter, and the counter's totals as its last addition (or read) returned them.
type budgetState struct {
	ownTokens, ownMicroUSD int64 // spent by this session's own calls, not yet counted
	day                    string
	daily                  store.UsageTotals
	dailyRead              bool // daily holds day's totals
	warned                 bool // the counter's failure was reported in this call
}

// spend notes one model call's usage for the daily counter (recordUsage): the session's own
// calls only — a child's calls count in its own workflow's counter, not again through the
// roll-up.
func (r *run) spend(tokens int64, costUSD *float64) {
	if r.e.limits().Daily.Zero() {
		return
	}
	r.budget.ownTokens += tokens
	if costUSD != nil {
		r.budget.ownMicroUSD += store.MicroUSD(*costUSD)
	}
}

// countCommitted adds what the session's own calls spent since the last addition to the
// workflow's daily counter, once the commit that stores it landed (commit). A failed
// addition is kept for the next commit and reported as a warning; what a call never gets
// to add (its process died between the commit and the addition) is not counted (BU22-6).
func (r *run) countCommitted(ctx context.Context) {
	if r.budget.ownTokens == 0 && r.budget.ownMicroUSD == 0 {
		return
	}
	c := r.e.usageCounter()
	if c == nil {
		return
	}
	day := store.UsageDay(r.e.cfg.Clock())
	tot, err := c.AddUsage(ctx, r.e.cfg.Workflow, day, r.budget.ownTokens, r.budget.ownMicroUSD)
	if err != nil {
		r.countFailed(err)
		return
	}
	r.budget.ownTokens, r.budget.ownMicroUSD = 0, 0
	r.budget.day, r.budget.daily, r.budget.dailyRead = day, tot, true
}

// dailyTotals are the workflow's totals of today: the last addition's, else one read (an
// addition of zero).
func (r *run) dailyTotals() (store.UsageTotals, string, error) {
	day := store.UsageDay(r.e.cfg.Clock())
	if r.budget.dailyRead && r.budget.day == day {
		return r.budget.daily, day, nil
	}
	c := r.e.usageCounter()
	if c == nil {
		return store.UsageTotals{}, day, errNoUsageCounter
	}
	tot, err := c.AddUsage(context.WithoutCancel(r.ctx), r.e.cfg.Workflow, day, 0, 0)
	if err != nil {
		return store.UsageTotals{}, day, err
	}
	r.budget.day, r.budget.daily, r.budget.dailyRead = day, tot, true
	return tot, day, nil
}

// overBudget is the first limit the session has reached, nil when none: lifetime, then
// the turn's (from its base, the usage when the turn took its first step), then the
// workflow's day (its counter's total plus what this call spent and has not added yet),
// then — a sub-workflow child's — each ancestor's lifetime and turn with the child's usage
// not yet rolled into it (BU22-10). withTurn false leaves the turn and the ancestors out
// (a refusal before a call opens its turn).
func (r *run) overBudget(withTurn bool) (*BudgetExceededError, error) {
	lim := r.e.limits()
	life := usageOf(r.rec.Usage)
	if e := r.exceeded(BudgetLifetime, BudgetSession, lim.Lifetime, life.tokens, life.usd); e != nil {
		return e, nil
	}
	if withTurn && !lim.Turn.Zero() {
		ct := r.rec.CurrentTurn
		if ct != nil && ct.BudgetBase == nil {
			base := Usage{}
			if r.rec.Usage != nil {
				base = *r.rec.Usage
			}
			ct.BudgetBase = &base
		}
		if ct != nil {
			b := usageOf(ct.BudgetBase)
			if e := r.exceeded(BudgetTurn, BudgetSession, lim.Turn, life.tokens-b.tokens, life.usd-b.usd); e != nil {
				return e, nil
			}
		}
	}
	if !lim.Daily.Zero() {
		tot, day, err := r.dailyTotals()
		if err != nil {
			return nil, err
		}
		used := tot.Tokens + r.budget.ownTokens
		usd := float64(tot.MicroUSD+r.budget.ownMicroUSD) / 1e6
		if e := r.exceeded(BudgetDaily, BudgetWorkflow, lim.Daily, used, usd); e != nil {
			e.Day = day
			return e, nil
		}
	}
	if withTurn {
		for _, f := range budgetFramesOf(r.ctx) {
			if e := r.ancestorExceeded(f, life); e != nil {
				return e, nil
			}
		}
	}
	return nil, nil
}

// budgetFrame is an ancestor's budgets as a sub-workflow child checks them at its step
// boundaries (BU22-10): the ancestor's usage less what the child has already added to it
// (base: the ancestor's usage is base + the child's usage), and its turn's base when its
// turn has a budget. Taken when the child is driven, under the ancestor's run.
type budgetFrame struct {
	id, workflow string
	budgets      *hostconfig.Budgets
	base         spent
	turnBase     spent
	turn         bool // turnBase is set
}

type budgetFramesKey struct{}

// budgetFramesOf are the frames of every session above the child ctx drives, root first.
func budgetFramesOf(ctx context.Context) []budgetFrame {
	f, _ := ctx.Value(budgetFramesKey{}).([]budgetFrame)
	return f
}

// childFrames are the frames a child of this session checks, its dispatch m: this
// session's (its usage less the child's part already rolled in) after its own ancestors'
// (their bases moved on by the same amount).
func (r *run) childFrames(m *dispatchMark) []budgetFrame {
	own, rolled := usageOf(r.rec.Usage), usageOf(m.Rolled)
	delta := spent{tokens: own.tokens - rolled.tokens, usd: own.usd - rolled.usd}
	var out []budgetFrame
	for _, f := range budgetFramesOf(r.ctx) {
		f.base.tokens += delta.tokens
		f.base.usd += delta.usd
		out = append(out, f)
	}
	f := budgetFrame{id: r.id, workflow: r.e.cfg.Workflow, budgets: r.e.cfg.Budgets, base: delta}
	if ct := r.rec.CurrentTurn; ct != nil && ct.BudgetBase != nil {
		f.turnBase, f.turn = usageOf(ct.BudgetBase), true
	}
	return append(out, f)
}

// withBudgetFrames is ctx carrying frames to the child it drives.
func withBudgetFrames(ctx context.Context, frames []budgetFrame) context.Context {
	if len(frames) == 0 {
		return ctx
	}
	return context.WithValue(ctx, budgetFramesKey{}, frames)
}

// ancestorExceeded is the error of an ancestor's lifetime or turn limit that its usage with
// this child's (life) reaches, nil when none.
func (r *run) ancestorExceeded(f budgetFrame, life spent) *BudgetExceededError {
	lim := f.budgets.For(f.workflow)
	used := spent{tokens: f.base.tokens + life.tokens, usd: f.base.usd + life.usd}
	e := exceededOf(f.id, f.workflow, f.budgets, BudgetLifetime, BudgetSession, lim.Lifetime, used.tokens, used.usd)
	if e == nil && f.turn {
		e = exceededOf(f.id, f.workflow, f.budgets, BudgetTurn, BudgetSession, lim.Turn, used.tokens-f.turnBase.tokens, used.usd-f.turnBase.usd)
	}
	if e != nil {
		e.Via = r.id
	}
	return e
}

type spent struct {
	tokens int64
	usd    float64
}

func usageOf(u *Usage) spent {
	if u == nil {
		return spent{}
	}
	s := spent{tokens: u.InputTokens + u.OutputTokens}
	if u.CostUSD != nil {
		s.usd = *u.CostUSD
	}
	return s
}

// exceeded is the error of a limit of this session reached (used at or over it) in either
// unit, tokens first.
func (r *run) exceeded(kind BudgetKind, scope BudgetScope, l hostconfig.BudgetLimit, tokens int64, usd float64) *BudgetExceededError {
	return exceededOf(r.id, r.e.cfg.Workflow, r.e.cfg.Budgets, kind, scope, l, tokens, usd)
}

// exceededOf is the error of session id's (of workflow) limit l reached, nil when not.
func exceededOf(id, workflow string, b *hostconfig.Budgets, kind BudgetKind, scope BudgetScope, l hostconfig.BudgetLimit, tokens int64, usd float64) *BudgetExceededError {
	e := &BudgetExceededError{SessionID: id, Workflow: workflow, Kind: kind, Scope: scope}
	switch {
	case l.Tokens > 0 && tokens >= l.Tokens:
		e.Unit, e.Limit, e.Used = BudgetTokens, float64(l.Tokens), float64(tokens)
	case l.USD > 0 && store.MicroUSD(usd) >= store.MicroUSD(l.USD):
		e.Unit, e.Limit, e.Used = BudgetUSD, l.USD, float64(store.MicroUSD(usd))/1e6
	default:
		return nil
	}
	e.Field = budgetField(b, workflow, kind, e.Unit)
	return e
}

// budgetField is the host file's key that sets a workflow's limit of kind in unit.
func budgetField(b *hostconfig.Budgets, workflow string, kind BudgetKind, unit BudgetUnit) string {
	own := "budgets.workflows." + workflow + "." + string(kind) + "." + string(unit)
	if kind == BudgetDaily || b == nil {
		return own
	}
	if w, ok := b.Workflows[workflow]; ok {
		var l hostconfig.BudgetLimit
		if kind == BudgetTurn {
			l = w.Turn
		} else {
			l = w.Lifetime
		}
		if unit == BudgetTokens && l.Tokens > 0 || unit == BudgetUSD && l.USD > 0 {
			return own
		}
	}
	return "budgets.session." + string(kind) + "." + string(unit)
}

// budgetStop is the state loop's check before each step (and a grader's before each of its
// model calls after the first): nil while no limit is reached, else the settlement that
// stops the call (rejected, the reason the error's text), with the warning event and
// lastError recorded for the commit that settles it. A counter that cannot be read stops
// nothing: the failure is a warning, once per call, and the step runs (a budget is a brake,
// not a gate the store's outage or a damaged counter should close; BU22-6, BU22-14).
func (r *run) budgetStop() *settlement {
	be, err := r.overBudget(true)
	if err != nil {
		r.countFailed(err)
		return nil
	}
	if be == nil {
		return nil
	}
	r.emit(events.Warning, map[string]any{"scope": "budget", "code": BudgetExceededCode, "message": be.Error(),
		"kind": string(be.Kind), "unit": string(be.Unit), "limit": be.Limit, "used": be.Used, "budgetScope": string(be.Scope)})
	r.rec.LastError = &TurnError{TurnID: r.turnID(), Code: BudgetExceededCode, Message: be.Error(), Retryable: false, At: r.e.now(), Attempts: 1}
	r.failing = true // the settling commit keeps the lastError
	// children still owed (a dispatch not driven, a routed resume, a queued park) are
	// settled with it, so none is left waiting on a session that stopped (BU22-12)
	r.closeOpenCalls()
	return &settlement{status: StatusRejected, reason: be.Error()}
}

// countFailed reports a daily counter that could not be read or added to: once per call
// (the store's error says what is wrong with it and, a damaged fs counter, how to repair it).
func (r *run) countFailed(err error) {
	if !r.budget.warned {
		r.budget.warned = true
		r.warn("budget", budgetCountFailed(err))
	}
}

// refuseOverBudget refuses a new turn on a session whose lifetime budget, or whose
// workflow's daily budget, is already spent: nothing is written (Send).
func (r *run) refuseOverBudget() error {
	be, err := r.overBudget(false)
	if err != nil || be == nil {
		return nil // an unreadable counter refuses nothing (budgetStop warns at the first step)
	}
	be.Refused = true
	return be
}

// refuseSpent is the same check of a call a caller addressed to a parked session (a reply,
// a decision, a delivery: r.addressed), before anything is written, and — a delegated park
// — of every sub-workflow session the call would resume (BU22-11). A wake and a
// continuation are not refused: their loop's check stops the session before its first
// step.
func (r *run) refuseSpent(dp *DelegatedPark) error {
	if !r.addressed {
		return nil
	}
	if err := r.refuseOverBudget(); err != nil {
		return err
	}
	for ; dp != nil; dp = dp.Inner {
		sib, err := r.e.sibling(r.ctx, dp.Workflow)
		if err != nil {
			return nil // the routing reports it
		}
		lim := sib.limits()
		if lim.Lifetime.Zero() && lim.Daily.Zero() {
			continue
		}
		head, err := r.e.cfg.Log.Get(r.ctx, dp.SessionID)
		if err != nil {
			continue
		}
		rec, err := decodeRecord(r.ctx, head.Body, r.e.cfg.Blobs, dp.SessionID, nil)
		if err != nil {
			continue
		}
		child := &run{e: sib, ctx: r.ctx, id: dp.SessionID, rec: rec, addressed: true}
		if err := child.refuseOverBudget(); err != nil {
			return err
		}
	}
	return nil
}

// usdAmount renders a USD amount to the micro-dollar, without trailing zeros ("$2", "$0.0284").
func usdAmount(v float64) string {
	return "$" + strconv.FormatFloat(float64(store.MicroUSD(v))/1e6, 'f', -1, 64)
}
