package hostconfig

import (
	"errors"
	"math"
	"strings"

	"github.com/archmax-ai/archmax/core/pricing"
	"github.com/archmax-ai/archmax/core/yamltree"
)

// priceKeys are the keys of one `pricing:` entry.
var priceKeys = []string{"input", "output", "cacheRead", "cacheWrite", "cacheWrite1h"}

// IncludeKey is the `pricing:` key that names a ready-made table (pricing.IncludedNames);
// it is never read as a model id (DECISIONS CO22-8).
const IncludeKey = "include"

// pricingTable reads `pricing:`: a mapping of model ids (an exact id, a part of one, or
// `default`) to rates in USD per 1M tokens, and optionally `include: <name>`, a ready-made
// table (pricing.Included) the section's own entries are merged over (pricing.Merge,
// DECISIONS CO22-9). An entry with neither input nor output prices nothing, so the file
// refuses it; an include naming no ready-made table is host.pricing, naming the available
// ones.
func (p *parser) pricingTable(n *node, field string) pricing.Table {
	if n.Kind != yamltree.Map {
		p.at(CodeType, field, n, "'%s' must be a mapping of model ids (or 'default') to prices { input, output, cacheRead, cacheWrite, cacheWrite1h } in USD per 1M tokens, and optionally 'include: <ready-made table>'", field)
		return nil
	}
	t := pricing.Table{}
	var included pricing.Table
	for i := range n.Entries {
		e := &n.Entries[i]
		f := join(field, e.Key)
		if e.Key == IncludeKey {
			included = p.includedTable(e.Val, f)
			continue
		}
		var pr pricing.Price
		if !p.strict(e.Val, f, priceKeys, func(e *yamltree.Entry, f string) {
			v, ok := p.rate(e.Val, f)
			if !ok {
				return
			}
			switch e.Key {
			case "input":
				pr.Input = &v
			case "output":
				pr.Output = &v
			case "cacheRead":
				pr.CacheRead = &v
			case "cacheWrite":
				pr.CacheWrite = &v
			case "cacheWrite1h":
				pr.CacheWrite1h = &v
			}
		}) {
			continue
		}
		if !pr.Priced() {
			p.at(CodePricing, f, e.Val, "the price of '%s' names neither 'input' nor 'output', so it prices nothing", e.Key)
			continue
		}
		t[e.Key] = pr
	}
	if included != nil {
		return pricing.Merge(included, t)
	}
	return t
}

// includedTable reads `include: <name>`: the ready-made table's prices, nil (with a finding)
// when the value is not a name or names no table.
func (p *parser) includedTable(n *node, field string) pricing.Table {
	names := strings.Join(pricing.IncludedNames(), ", ")
	if n.Kind != yamltree.String || n.Str == "" {
		p.at(CodeType, field, n, "'%s' must name a ready-made pricing table (available: %s)", field, names)
		return nil
	}
	tab, err := pricing.Included(n.Str)
	var unknown *pricing.UnknownTableError
	switch {
	case errors.As(err, &unknown):
		p.hinted(CodePricing, "include one of: "+names, field, n, "'%s' names no ready-made pricing table: %q (available: %s)", field, n.Str, names)
		return nil
	case err != nil:
		p.at(CodePricing, field, n, "%v", err)
		return nil
	}
	return tab.Prices
}

// rate reads a non-negative number.
func (p *parser) rate(n *node, field string) (float64, bool) {
	if n.Kind != yamltree.Number || n.Num < 0 || math.IsInf(n.Num, 0) || math.IsNaN(n.Num) {
		p.at(CodeType, field, n, "'%s' must be a non-negative number (USD per 1M tokens)", field)
		return 0, false
	}
	return n.Num, true
}
