package hostconfig

import (
	"math"

	"github.com/archmax-ai/archmax/core/pricing"
	"github.com/archmax-ai/archmax/core/yamltree"
)

// priceKeys are the keys of one `pricing:` entry.
var priceKeys = []string{"input", "output", "cacheRead", "cacheWrite"}

// pricingTable reads `pricing:`: a mapping of model ids (an exact id, a part of one, or
// `default`) to rates in USD per 1M tokens. An entry with neither input nor output prices
// nothing, so the file refuses it.
func (p *parser) pricingTable(n *node, field string) pricing.Table {
	if n.Kind != yamltree.Map {
		p.at(CodeType, field, n, "'%s' must be a mapping of model ids (or 'default') to prices { input, output, cacheRead, cacheWrite } in USD per 1M tokens", field)
		return nil
	}
	t := pricing.Table{}
	for i := range n.Entries {
		e := &n.Entries[i]
		f := join(field, e.Key)
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
	return t
}

// rate reads a non-negative number.
func (p *parser) rate(n *node, field string) (float64, bool) {
	if n.Kind != yamltree.Number || n.Num < 0 || math.IsInf(n.Num, 0) || math.IsNaN(n.Num) {
		p.at(CodeType, field, n, "'%s' must be a non-negative number (USD per 1M tokens)", field)
		return 0, false
	}
	return n.Num, true
}
