package hostconfig

import (
	"math"

	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/yamltree"
)

// Budgets is the `budgets:` section (BU22-1): limits on what model calls spend, in tokens
// (input + output, as the provider reports them) and in USD (the costs the pricing section
// gives), per turn, per session lifetime (a sub-workflow child's usage rolled in) and per
// workflow per UTC day:
//
//	budgets:
//	  session:                      # every workflow's sessions
//	    turn:     { tokens: 200000, usd: 2 }
//	    lifetime: { usd: 20 }
//	  workflows:                    # per workflow slug: overrides, unit by unit, and daily
//	    access-request:
//	      daily:    { usd: 50 }
//	      lifetime: { tokens: 1000000 }
//
// A workflow's entry replaces the session default's limit of each kind and unit it names
// and keeps the others (BU22-2). `daily` is a workflow's only: one counter of every session
// of the workflow in the UTC day. A limit is positive; a missing one is no limit.
type Budgets struct {
	// Session holds the defaults of every workflow (Daily is always zero here).
	Session BudgetLimits
	// Workflows are the per-workflow entries, keyed by workflow slug.
	Workflows map[string]BudgetLimits
	// Line and Column locate the section in the file (for findings).
	Line, Column int
}

// BudgetLimits are the limits of one scope: a turn's, a session's lifetime, a workflow's
// UTC day.
type BudgetLimits struct {
	Turn, Lifetime, Daily BudgetLimit
	// Line and Column locate the entry's key in the file (for findings).
	Line, Column int
}

// BudgetLimit is one limit in its two units; zero in a unit is no limit in it.
type BudgetLimit struct {
	Tokens int64   // input + output tokens
	USD    float64 // USD, from the pricing table
}

// Zero reports whether the limit limits nothing.
func (l BudgetLimit) Zero() bool { return l.Tokens == 0 && l.USD == 0 }

// over is l with every unit o sets taken from o.
func (l BudgetLimit) over(o BudgetLimit) BudgetLimit {
	if o.Tokens > 0 {
		l.Tokens = o.Tokens
	}
	if o.USD > 0 {
		l.USD = o.USD
	}
	return l
}

// For is workflow's limits: the session defaults with the workflow's entry over them, unit
// by unit (BU22-2). A nil Budgets limits nothing.
func (b *Budgets) For(workflow string) BudgetLimits {
	if b == nil {
		return BudgetLimits{}
	}
	out := b.Session
	if w, ok := b.Workflows[workflow]; ok {
		out.Turn = out.Turn.over(w.Turn)
		out.Lifetime = out.Lifetime.over(w.Lifetime)
		out.Daily = out.Daily.over(w.Daily)
		out.Line, out.Column = w.Line, w.Column
	}
	return out
}

// USD reports whether any of the limits is in USD.
func (l BudgetLimits) USD() bool { return l.Turn.USD > 0 || l.Lifetime.USD > 0 || l.Daily.USD > 0 }

// MaxBudgetTokens is the largest token limit (2^53 − 1): the file's numbers are read as
// float64, exact up to it. MinBudgetUSD is the smallest USD limit: costs are summed in
// micro-USD (BU22-4), so a limit below one micro-dollar could not be told from zero.
const (
	MaxBudgetTokens = 1<<53 - 1
	MinBudgetUSD    = 1e-6
)

// Keys of the section.
var (
	budgetsKeys         = []string{"session", "workflows"}
	budgetSessionKeys   = []string{"turn", "lifetime"}
	budgetWorkflowKeys  = []string{"turn", "lifetime", "daily"}
	budgetLimitKeys     = []string{"tokens", "usd"}
	budgetsShapeMessage = "'%s' must be a mapping { session?: { turn?, lifetime? }, workflows?: { <workflow slug>: { turn?, lifetime?, daily? } } }"
)

// budgets reads `budgets:`.
func (p *parser) budgets(n *node, field string) *Budgets {
	b := &Budgets{Line: n.Line, Column: n.Col}
	if n.Kind != yamltree.Map {
		p.at(CodeType, field, n, budgetsShapeMessage, field)
		return b
	}
	p.strict(n, field, budgetsKeys, func(e *yamltree.Entry, f string) {
		switch e.Key {
		case "session":
			b.Session = p.budgetLimits(e.Val, f, budgetSessionKeys)
			b.Session.Line, b.Session.Column = e.Line, e.Col // the key: where a finding points
		case "workflows":
			if e.Val.Kind != yamltree.Map {
				p.at(CodeType, f, e.Val, "'%s' must be a mapping of workflow slugs to limits { turn?, lifetime?, daily? }", f)
				return
			}
			b.Workflows = map[string]BudgetLimits{}
			for i := range e.Val.Entries {
				w := &e.Val.Entries[i]
				wf := join(f, w.Key)
				if !spec.IsSlug(w.Key) {
					p.add(CodeBudget, wf, w.Line, w.Col, "'%s' is not a workflow slug (lowercase letters, digits and '-')", w.Key)
					continue
				}
				l := p.budgetLimits(w.Val, wf, budgetWorkflowKeys)
				l.Line, l.Column = w.Line, w.Col
				b.Workflows[w.Key] = l
			}
		}
	})
	return b
}

// budgetLimits reads one scope's limits, of the kinds known.
func (p *parser) budgetLimits(n *node, field string, known []string) BudgetLimits {
	out := BudgetLimits{Line: n.Line, Column: n.Col}
	p.strict(n, field, known, func(e *yamltree.Entry, f string) {
		l := p.budgetLimit(e.Val, f)
		switch e.Key {
		case "turn":
			out.Turn = l
		case "lifetime":
			out.Lifetime = l
		case "daily":
			out.Daily = l
		}
	})
	return out
}

// budgetLimit reads { tokens?, usd? }: a positive whole number of tokens, a positive USD
// amount; an empty limit is refused (it would limit nothing).
func (p *parser) budgetLimit(n *node, field string) BudgetLimit {
	var l BudgetLimit
	if !p.strict(n, field, budgetLimitKeys, func(e *yamltree.Entry, f string) {
		v := e.Val
		ok := v.Kind == yamltree.Number && v.Num > 0 && !math.IsInf(v.Num, 0) && !math.IsNaN(v.Num)
		switch e.Key {
		case "tokens":
			if !ok || v.Num != math.Trunc(v.Num) {
				p.at(CodeType, f, v, "'%s' must be a positive whole number of tokens", f)
				return
			}
			if v.Num > MaxBudgetTokens { // read as a float64: past 2^53 a count is not exact (BU22-16)
				p.at(CodeType, f, v, "'%s' is %s tokens, more than the largest count a budget holds exactly (%d): give a smaller number, or leave the limit out to set none", f, v.Str, int64(MaxBudgetTokens))
				return
			}
			l.Tokens = int64(v.Num)
		case "usd":
			if !ok {
				p.at(CodeType, f, v, "'%s' must be a positive amount in USD", f)
				return
			}
			if v.Num < MinBudgetUSD { // costs are counted in micro-USD: a smaller limit is reached at once
				p.at(CodeBudget, f, v, "'%s' is $%s, less than the smallest amount a budget counts ($0.000001, one micro-dollar)", f, v.Str)
				return
			}
			l.USD = v.Num
		}
	}) {
		return l
	}
	if l.Zero() && len(n.Entries) == 0 {
		p.at(CodeBudget, field, n, "'%s' names neither 'tokens' nor 'usd', so it limits nothing", field)
	}
	return l
}
