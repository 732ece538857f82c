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
// on), per session lifetime (a sub-workflow child's usage included, as the roll-up adds it)
// and per workflow per UTC day (one store.UsageCounter item of every session of the
// workflow). A limit is reached when the usage is at or over it. The step that reaches it
// is committed — its tokens were spent — and the call then stops at the next step
// boundary, before any further model call or move: the session settles rejected (as the
// step limit settles it, BU22-5) with a *BudgetExceededError's text as its reason and as
// its lastError (code BudgetExceededCode), after a warning event (scope "budget"). A new
// turn on a session or workflow whose lifetime or daily budget is already spent is
// refused before anything is written (Send's *BudgetExceededError).

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

// ModelIDs are the model ids a workflow's calls are configured with: each agent state's
// (its own, else the workflow's settings.model, else modelID) and each grader's (its own,
// else graderModelID, else the agent's resolution) — the ids a USD budget needs priced.
// In declaration order, each once.
func ModelIDs(sp *spec.MachineSpec, modelID, graderModelID string) []string {
	var out []string
	for _, st := range sp.States {
		var id string
		switch {
		case st.Type != "agent" && st.Type != "grader":
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
func (e *Engine) checkBudgetPricing(sp *spec.MachineSpec) error {
	if !e.limits().USD() {
		return nil
	}
	if p := hostconfig.UnpricedBudgetProblem(e.cfg.Budgets, e.cfg.Workflow, ModelIDs(sp, e.cfg.ModelID, e.cfg.GraderModelID), e.cfg.Pricing); p != nil {
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
		r.warn("budget", budgetCountFailed(err))
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
// workflow's day. withTurn false leaves the turn out (a turn not opened yet).
func (r *run) overBudget(withTurn bool) (*BudgetExceededError, error) {
	lim := r.e.limits()
	if lim.Turn.Zero() && lim.Lifetime.Zero() && lim.Daily.Zero() {
		return nil, nil
	}
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
		if e := r.exceeded(BudgetDaily, BudgetWorkflow, lim.Daily, tot.Tokens, tot.USD()); e != nil {
			e.Day = day
			return e, nil
		}
	}
	return nil, nil
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

// exceeded is the error of a limit reached (used at or over it) in either unit, tokens first.
func (r *run) exceeded(kind BudgetKind, scope BudgetScope, l hostconfig.BudgetLimit, tokens int64, usd float64) *BudgetExceededError {
	e := &BudgetExceededError{SessionID: r.id, Workflow: r.e.cfg.Workflow, Kind: kind, Scope: scope}
	switch {
	case l.Tokens > 0 && tokens >= l.Tokens:
		e.Unit, e.Limit, e.Used = BudgetTokens, float64(l.Tokens), float64(tokens)
	case l.USD > 0 && store.MicroUSD(usd) >= store.MicroUSD(l.USD):
		e.Unit, e.Limit, e.Used = BudgetUSD, l.USD, float64(store.MicroUSD(usd))/1e6
	default:
		return nil
	}
	e.Field = budgetField(r.e.cfg.Budgets, r.e.cfg.Workflow, kind, e.Unit)
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

// budgetStop is the state loop's check before each step: nil while no limit is reached,
// else the settlement that stops the call (rejected, the reason the error's text), with
// the warning event and lastError recorded for the commit that settles it. A counter that
// cannot be read stops nothing: the failure is a warning and the step runs (a budget is a
// brake, not a gate the store's outage should close).
func (r *run) budgetStop() *settlement {
	be, err := r.overBudget(true)
	if err != nil {
		r.warn("budget", budgetCountFailed(err))
		return nil
	}
	if be == nil {
		return nil
	}
	r.emit(events.Warning, map[string]any{"scope": "budget", "code": BudgetExceededCode, "message": be.Error(),
		"kind": string(be.Kind), "unit": string(be.Unit), "limit": be.Limit, "used": be.Used, "budgetScope": string(be.Scope)})
	r.rec.LastError = &TurnError{TurnID: r.turnID(), Code: BudgetExceededCode, Message: be.Error(), Retryable: false, At: r.e.now(), Attempts: 1}
	r.failing = true // the settling commit keeps the lastError
	return &settlement{status: StatusRejected, reason: be.Error()}
}

// refuseOverBudget refuses a new turn on a session whose lifetime budget, or whose
// workflow's daily budget, is already spent: nothing is written (Send).
func (r *run) refuseOverBudget() error {
	be, err := r.overBudget(false)
	if err != nil || be == nil {
		return nil // an unreadable counter refuses nothing (budgetStop warns at the first step)
	}
	return be
}

// usdAmount renders a USD amount to the micro-dollar, without trailing zeros ("$2", "$0.0284").
func usdAmount(v float64) string {
	return "$" + strconv.FormatFloat(float64(store.MicroUSD(v))/1e6, 'f', -1, 64)
}
