package hostconfig

import (
	"slices"
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/core/pricing"
	"github.com/archmax-ai/archmax/core/spec"
)

func TestBudgetsParseAndMergeUnitByUnit(t *testing.T) {
	cfg, err := Load([]byte(`budgets:
  session:
    turn: { tokens: 200000, usd: 2 }
    lifetime: { usd: 20 }
  workflows:
    access-desk:
      turn: { usd: 0.5 }
      daily: { usd: 50, tokens: 5000000 }
      lifetime: { tokens: 1000000 }
`))
	if err != nil {
		t.Fatal(err)
	}
	b := cfg.Budgets
	if b == nil || b.Line != 2 {
		t.Fatalf("budgets: %+v", b)
	}
	got := b.For("access-desk")
	want := BudgetLimits{Turn: BudgetLimit{Tokens: 200000, USD: 0.5}, Lifetime: BudgetLimit{Tokens: 1000000, USD: 20},
		Daily: BudgetLimit{Tokens: 5000000, USD: 50}}
	got.Line, got.Column = 0, 0
	if got != want {
		t.Errorf("access-desk: %+v, want %+v", got, want)
	}
	other := b.For("other")
	other.Line, other.Column = 0, 0
	if other != (BudgetLimits{Turn: BudgetLimit{Tokens: 200000, USD: 2}, Lifetime: BudgetLimit{USD: 20}}) {
		t.Errorf("other: %+v", other)
	}
	var none *Budgets
	if l := none.For("x"); l.USD() || !l.Turn.Zero() || !l.Daily.Zero() {
		t.Errorf("nil budgets limit: %+v", l)
	}
}

func TestBudgetsRefusals(t *testing.T) {
	for _, c := range []struct{ src, code, field string }{
		{"budgets: 3", CodeType, "budgets"},
		{"budgets: { session: { daily: { usd: 1 } } }", CodeUnknownKey, "budgets.session.daily"},
		{"budgets: { session: { turn: {} } }", CodeBudget, "budgets.session.turn"},
		{"budgets: { session: { turn: { tokens: 0 } } }", CodeType, "budgets.session.turn.tokens"},
		{"budgets: { session: { turn: { tokens: 1.5 } } }", CodeType, "budgets.session.turn.tokens"},
		{"budgets: { session: { turn: { tokens: -1 } } }", CodeType, "budgets.session.turn.tokens"},
		{"budgets: { session: { turn: { usd: -1 } } }", CodeType, "budgets.session.turn.usd"},
		{"budgets: { session: { turn: { usd: '2' } } }", CodeType, "budgets.session.turn.usd"},
		{"budgets: { session: { turn: { dollars: 2 } } }", CodeUnknownKey, "budgets.session.turn.dollars"},
		{"budgets: { workflows: { Access_Desk: { daily: { usd: 1 } } } }", CodeBudget, "budgets.workflows.Access_Desk"},
		{"budgets: { workflows: [] }", CodeType, "budgets.workflows"},
		{"budgets: { workflows: { a: { weekly: { usd: 1 } } } }", CodeUnknownKey, "budgets.workflows.a.weekly"},
		// past float64's exact integers, and below the counters' micro-USD (BU22-16)
		{"budgets: { session: { turn: { tokens: 9007199254740993 } } }", CodeType, "budgets.session.turn.tokens"},
		{"budgets: { session: { turn: { tokens: 1e300 } } }", CodeType, "budgets.session.turn.tokens"},
		{"budgets: { session: { lifetime: { usd: 1e-12 } } }", CodeBudget, "budgets.session.lifetime.usd"},
		{"budgets: { workflows: { a: { daily: { usd: 0.0000009 } } } }", CodeBudget, "budgets.workflows.a.daily.usd"},
	} {
		diags := parseErrs(c.src)
		if !slices.ContainsFunc(diags, func(d spec.Diagnostic) bool { return d.Code == c.code && d.Field == c.field }) {
			t.Errorf("%s: want %s at %s, got %+v", c.src, c.code, c.field, diags)
		}
	}
}

// The largest exact count and one micro-dollar are accepted.
func TestBudgetsBounds(t *testing.T) {
	c, diags := Parse([]byte("budgets: { session: { turn: { tokens: 9007199254740991, usd: 0.000001 } } }"))
	if len(diags) > 0 {
		t.Fatalf("%+v", diags)
	}
	if l := c.Budgets.Session.Turn; l.Tokens != MaxBudgetTokens || l.USD != MinBudgetUSD {
		t.Errorf("%+v", l)
	}
	for _, src := range []string{"budgets: { session: { turn: { tokens: 9007199254740993 } } }", "budgets: { session: { turn: { usd: 1e-12 } } }"} {
		for _, d := range parseErrs(src) {
			if !strings.Contains(d.Message, "9007199254740993") && !strings.Contains(d.Message, "1e-12") {
				t.Errorf("%s: the message does not quote the value: %s", src, d.Message)
			}
		}
	}
}

func TestUnpricedBudgetProblem(t *testing.T) {
	in := 3.0
	table := pricing.Table{"claude-sonnet": {Input: &in}}
	b := &Budgets{Session: BudgetLimits{Turn: BudgetLimit{Tokens: 10}},
		Workflows: map[string]BudgetLimits{"desk": {Daily: BudgetLimit{USD: 5}}}}
	// tokens only: never a problem, priced or not
	if p := UnpricedBudgetProblem(b, "other", []string{"mystery-model"}, nil); p != nil {
		t.Errorf("a token limit on an unpriced model: %v", p)
	}
	// USD and every model priced
	if p := UnpricedBudgetProblem(b, "desk", []string{"anthropic.claude-sonnet-4-5"}, table); p != nil {
		t.Errorf("priced: %v", p)
	}
	p := UnpricedBudgetProblem(b, "desk", []string{"anthropic.claude-sonnet-4-5", "amazon.nova-pro", "amazon.nova-pro"}, table)
	if p == nil || p.Code != CodeBudget || p.Field != "budgets.workflows.desk" || !strings.Contains(p.Message, "'amazon.nova-pro'") ||
		strings.Count(p.Message, "nova") != 1 || p.Hint == "" || strings.Contains(p.Message, "claude") {
		t.Fatalf("unpriced: %+v", p)
	}
	// a USD default reaches every workflow: its field is the session's
	b.Session.Lifetime.USD = 1
	if p := UnpricedBudgetProblem(b, "other", []string{""}, nil); p == nil || p.Field != "budgets.session" || !strings.Contains(p.Message, "no model configured") {
		t.Fatalf("default: %+v", p)
	}
}
