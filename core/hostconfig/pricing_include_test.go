package hostconfig

import (
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/core/pricing"
)

// `pricing: { include: <name> }` applies a ready-made table; the section's own entries are
// merged over it; a name that is no table is refused, naming those there are (CO22-8, CO22-9).
func TestPricingInclude(t *testing.T) {
	cfg, diags := Parse([]byte("pricing:\n  include: bedrock-2026-12\n"))
	if len(diags) != 0 {
		t.Fatalf("include: %v", diags)
	}
	if p, ok := cfg.Pricing.Resolve("us.anthropic.claude-sonnet-4-5-20250929-v1:0"); !ok || *p.Input != 3.3 || *p.Output != 16.5 {
		t.Errorf("the included table prices Sonnet 4.5 on a us. profile at %+v %v, want 3.3/16.5", p, ok)
	}
	if p, ok := cfg.Pricing.Resolve("us.anthropic.claude-sonnet-4-5-20250929-v1:0"); !ok || p.CacheWrite1h == nil || *p.CacheWrite1h != 6.6 {
		t.Errorf("the included table's 1-hour write rate for Sonnet 4.5 on a us. profile: %+v %v, want 6.6", p, ok)
	}
	if _, ok := cfg.Pricing[IncludeKey]; ok {
		t.Error("'include' was read as a model id")
	}
	if _, ok := cfg.Pricing.Resolve("meta.llama3-3-70b-instruct-v1:0"); ok {
		t.Error("a model the table leaves out is priced")
	}

	cfg, diags = Parse([]byte("pricing:\n  claude-sonnet-4-5: { input: 2, output: 10 }\n  include: bedrock-2026-12\n  amazon.nova-lite-v1: { input: 0.05, output: 0.2 }\n"))
	if len(diags) != 0 {
		t.Fatalf("include with overrides: %v", diags)
	}
	for id, want := range map[string]float64{
		"global.anthropic.claude-sonnet-4-5-20250929-v1:0": 2,    // the own key, shorter than the table's, wins
		"amazon.nova-lite-v1:0":                            0.05, // the same key: the own entry
		"amazon.nova-pro-v1:0":                             0.8,  // not overridden: the table's
	} {
		if p, ok := cfg.Pricing.Resolve(id); !ok || *p.Input != want {
			t.Errorf("%s: %+v %v, want input %v", id, p, ok, want)
		}
	}

	for _, c := range []struct{ src, code, contains string }{
		{"pricing: { include: bedrock-2020-01 }\n", CodePricing, "names no ready-made pricing table: \"bedrock-2020-01\" (available: " + strings.Join(pricing.IncludedNames(), ", ") + ")"},
		{"pricing: { include: [bedrock-2026-12] }\n", CodeType, "must name a ready-made pricing table (available: bedrock-2026-12"},
		{"pricing: { include: { input: 1 } }\n", CodeType, "must name a ready-made pricing table"},
	} {
		_, diags := Parse([]byte(c.src))
		if len(diags) != 1 || diags[0].Code != c.code || diags[0].Field != "pricing.include" || diags[0].Line != 1 || !strings.Contains(diags[0].Message, c.contains) {
			t.Errorf("%q: %+v, want one %s at pricing.include containing %q", c.src, diags, c.code, c.contains)
		}
	}
}
