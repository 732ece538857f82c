package pricing

import (
	"strings"
	"testing"
)

func f(v float64) *float64 { return &v }

func TestResolve(t *testing.T) {
	tab := Table{
		"claude-sonnet":                     {Input: f(3), Output: f(15)},
		"claude-sonnet-4-5":                 {Input: f(2), Output: f(10)},
		"anthropic.claude-sonnet-4-5-exact": {Input: f(1)},
		DefaultKey:                          {Input: f(9)},
	}
	for id, want := range map[string]float64{
		"anthropic.claude-sonnet-4-5-exact":            1, // the exact key
		"us.anthropic.claude-sonnet-4-5-20250929-v1:0": 2, // the longest key inside the id
		"anthropic/claude-sonnet-4.6":                  3,
		"amazon.nova-pro":                              9, // default
		"":                                             9, // no id: default
	} {
		p, ok := tab.Resolve(id)
		if !ok || *p.Input != want {
			t.Errorf("%q: %+v %v, want input %v", id, p, ok, want)
		}
	}
	if _, ok := (Table{"claude": {Input: f(1)}}).Resolve("nova"); ok {
		t.Error("an id no key matches, without default, is priced")
	}
	if _, ok := Table(nil).Resolve("x"); ok {
		t.Error("a nil table prices")
	}
}

func TestCost(t *testing.T) {
	full := Table{DefaultKey: {Input: f(3), Output: f(15), CacheRead: f(0.3), CacheWrite: f(3.75)}}
	for _, c := range []struct {
		name string
		tab  Table
		u    Usage
		want float64
		ok   bool
	}{
		{"input on non-cached input only", full, Usage{Input: 1800, Output: 100, CacheWrite: 800}, 0.0075, true},
		{"cache reads", full, Usage{Input: 1300, Output: 40, CacheRead: 800}, 0.00234, true},
		{"a breakdown past the total clamps at 0", full, Usage{Input: 100, CacheRead: 1000}, 0.0003, true},
		{"missing cache rates are the input rate", Table{"m": {Input: f(2)}}, Usage{Input: 1000, CacheRead: 500, CacheWrite: 250}, 0.002, true},
		{"5-minute writes at cacheWrite", Table{"m": {Input: f(3), CacheWrite: f(3.75), CacheWrite1h: f(6)}}, Usage{Input: 1000, CacheWrite: 1000, CacheTTL: "5m"}, 0.00375, true},
		{"default TTL writes at cacheWrite", Table{"m": {Input: f(3), CacheWrite: f(3.75), CacheWrite1h: f(6)}}, Usage{Input: 1000, CacheWrite: 1000}, 0.00375, true},
		{"1-hour writes at cacheWrite1h", Table{"m": {Input: f(3), CacheWrite: f(3.75), CacheWrite1h: f(6)}}, Usage{Input: 1000, CacheWrite: 1000, CacheTTL: CacheTTL1h}, 0.006, true},
		{"1-hour writes without cacheWrite1h at cacheWrite", Table{"m": {Input: f(3), CacheWrite: f(3.75)}}, Usage{Input: 1000, CacheWrite: 1000, CacheTTL: CacheTTL1h}, 0.00375, true},
		{"1-hour writes without either write rate at input", Table{"m": {Input: f(3)}}, Usage{Input: 1000, CacheWrite: 1000, CacheTTL: CacheTTL1h}, 0.003, true},
		{"missing output counts 0", Table{"m": {Input: f(2)}}, Usage{Input: 1000, Output: 1000}, 0.002, true},
		{"missing input counts 0", Table{"m": {Output: f(4)}}, Usage{Input: 1000, Output: 1000}, 0.004, true},
		{"rounded to 6 decimals", Table{"m": {Input: f(1)}}, Usage{Input: 1}, 0.000001, true},
		{"rounded down", Table{"m": {Input: f(0.1)}}, Usage{Input: 1}, 0, true},
		{"an entry without input or output prices nothing", Table{"m": {CacheRead: f(1)}}, Usage{Input: 10}, 0, false},
		{"no entry", Table{"other": {Input: f(1)}}, Usage{Input: 10}, 0, false},
	} {
		got, ok := c.tab.Cost("m", c.u)
		if ok != c.ok || got != c.want {
			t.Errorf("%s: %v %v, want %v %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

func TestAdd(t *testing.T) {
	if Add(nil, nil) != nil {
		t.Error("summing two absent costs invents one")
	}
	if got := Add(nil, f(0.1)); got == nil || *got != 0.1 {
		t.Errorf("absent + 0.1 = %v", got)
	}
	if got := Add(f(0.1), f(0.2)); *got != 0.3 {
		t.Errorf("0.1 + 0.2 = %v, want 0.3 (rounded)", *got)
	}
}

func TestFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	if tab, w := FromEnv(env(nil)); tab != nil || w != nil {
		t.Errorf("no variables: %v %v", tab, w)
	}
	tab, w := FromEnv(env(map[string]string{EnvInput: "3", EnvOutput: " 15 ", EnvCacheWrite: "3.75"}))
	if len(w) != 0 {
		t.Errorf("warnings %v", w)
	}
	if c, ok := tab.Cost("any-model", Usage{Input: 2000, Output: 100, CacheRead: 1000}); !ok || c != 0.0075 {
		t.Errorf("the default entry priced %v %v, want 0.0075 (the cache read at the input rate)", c, ok)
	}
	tab, w = FromEnv(env(map[string]string{EnvInput: "3", EnvCacheWrite: "3.75", EnvCacheWrite1h: "6"}))
	if c, ok := tab.Cost("any-model", Usage{Input: 1000, CacheWrite: 1000, CacheTTL: CacheTTL1h}); len(w) != 0 || !ok || c != 0.006 {
		t.Errorf("a 1-hour write under %s priced %v %v %v, want 0.006", EnvCacheWrite1h, c, ok, w)
	}
	tab, w = FromEnv(env(map[string]string{EnvInput: "three", EnvOutput: "-1", EnvCacheRead: "0.3"}))
	if tab != nil || len(w) != 2 || !strings.Contains(w[0], EnvInput) || !strings.Contains(w[1], EnvOutput) {
		t.Errorf("unparseable values: %v %v", tab, w)
	}
}

func TestFormat(t *testing.T) {
	for usd, want := range map[float64]string{0.0284: "$0.0284", 0.015795: "$0.0158", 0.002445: "$0.002445", 0: "$0.000000", 12.5: "$12.5000"} {
		if got := Format(usd); got != want {
			t.Errorf("Format(%v) = %q, want %q", usd, got, want)
		}
	}
}
