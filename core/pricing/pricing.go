// Package pricing prices a model call's tokens: a Table of USD rates per million tokens,
// keyed by model id, read from the host file's `pricing:` section or, without one, from the
// ARCHMAX_PRICE_* environment variables. Cost is never guessed: a model no entry prices
// reports tokens only (Cost's false), never a cost of 0.
package pricing

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// DefaultKey is the entry that prices any model no other key matches.
const DefaultKey = "default"

// Price is one entry's rates in USD per 1,000,000 tokens. A missing CacheRead or CacheWrite
// rate is the Input rate; a missing CacheWrite1h rate (cache writes of a call whose cache
// points ask for a 1-hour TTL) is the CacheWrite rate, so the entry's cacheWrite applies to
// every TTL unless it names a 1-hour one (DECISIONS CO22-10); a missing Input or Output rate
// counts as 0; an entry with neither Input nor Output prices nothing.
type Price struct {
	Input        *float64 `json:"input,omitempty" yaml:"input,omitempty"`
	Output       *float64 `json:"output,omitempty" yaml:"output,omitempty"`
	CacheRead    *float64 `json:"cacheRead,omitempty" yaml:"cacheRead,omitempty"`
	CacheWrite   *float64 `json:"cacheWrite,omitempty" yaml:"cacheWrite,omitempty"`
	CacheWrite1h *float64 `json:"cacheWrite1h,omitempty" yaml:"cacheWrite1h,omitempty"`
}

// Priced reports whether the entry prices anything (it has an input or an output rate).
func (p Price) Priced() bool { return p.Input != nil || p.Output != nil }

// Table maps a model id (or a part of one, or DefaultKey) to its price.
type Table map[string]Price

// Usage is one call's token counts: Input is the inclusive total (it counts the cache reads
// and writes too). CacheTTL is the TTL the call's cache points asked for: "" or "5m" (the
// provider's default, 5 minutes) or "1h", which prices CacheWrite at the CacheWrite1h rate.
type Usage struct {
	Input, Output, CacheRead, CacheWrite int64
	CacheTTL                             string
}

// CacheTTL1h is the Usage.CacheTTL of a call whose cache writes live one hour.
const CacheTTL1h = "1h"

// Resolve is the entry that prices model id: the exact key; else the longest key that is a
// substring of id (ties: the lexically first); else DefaultKey; else none.
func (t Table) Resolve(id string) (Price, bool) {
	if len(t) == 0 {
		return Price{}, false
	}
	if id != "" {
		if p, ok := t[id]; ok {
			return p, true
		}
		best := ""
		for k := range t {
			if k == DefaultKey || k == "" || !strings.Contains(id, k) {
				continue
			}
			if len(k) > len(best) || len(k) == len(best) && k < best {
				best = k
			}
		}
		if best != "" {
			return t[best], true
		}
	}
	p, ok := t[DefaultKey]
	return p, ok
}

// Cost is the USD cost of one call of model id, rounded to 6 decimals; false when no entry
// prices the model. The input rate applies only to input the cache neither served nor wrote
// (clamped at 0 when the breakdown exceeds the total); cache writes are priced at the rate of
// the call's TTL (u.CacheTTL).
func (t Table) Cost(id string, u Usage) (float64, bool) {
	p, ok := t.Resolve(id)
	if !ok || !p.Priced() {
		return 0, false
	}
	rate := func(r *float64, fallback *float64) float64 {
		switch {
		case r != nil:
			return *r
		case fallback != nil:
			return *fallback
		}
		return 0
	}
	fresh := u.Input - u.CacheRead - u.CacheWrite
	if fresh < 0 {
		fresh = 0
	}
	write := rate(p.CacheWrite, p.Input)
	if u.CacheTTL == CacheTTL1h && p.CacheWrite1h != nil {
		write = *p.CacheWrite1h
	}
	c := rate(p.Input, nil)*float64(fresh) + rate(p.CacheRead, p.Input)*float64(u.CacheRead) +
		write*float64(u.CacheWrite) + rate(p.Output, nil)*float64(u.Output)
	return Round(c / 1e6), true
}

// Round rounds a USD amount to 6 decimal places.
func Round(usd float64) float64 { return math.Round(usd*1e6) / 1e6 }

// Add is a + b where either may be absent (nil): present when either is, the missing side
// counting 0, rounded to 6 decimals; summing never invents a cost.
func Add(a, b *float64) *float64 {
	if a == nil && b == nil {
		return nil
	}
	var s float64
	if a != nil {
		s += *a
	}
	if b != nil {
		s += *b
	}
	s = Round(s)
	return &s
}

// Environment variables of the fallback table (its DefaultKey entry).
const (
	EnvInput      = "ARCHMAX_PRICE_INPUT"
	EnvOutput     = "ARCHMAX_PRICE_OUTPUT"
	EnvCacheRead  = "ARCHMAX_PRICE_CACHE_READ"
	EnvCacheWrite = "ARCHMAX_PRICE_CACHE_WRITE"
	// EnvCacheWrite1h is the rate of 1-hour cache writes (default: the cache-write rate).
	EnvCacheWrite1h = "ARCHMAX_PRICE_CACHE_WRITE_1H"
)

// FromEnv is the fallback table the ARCHMAX_PRICE_* variables make: one DefaultKey entry
// (the cache rates defaulting to the input rate, the 1-hour write rate to the write rate),
// nil when they price nothing. A value that is not a non-negative number is ignored, with a
// warning naming it.
func FromEnv(getenv func(string) string) (Table, []string) {
	var p Price
	var warnings []string
	for _, v := range []struct {
		name string
		dst  **float64
	}{{EnvInput, &p.Input}, {EnvOutput, &p.Output}, {EnvCacheRead, &p.CacheRead}, {EnvCacheWrite, &p.CacheWrite}, {EnvCacheWrite1h, &p.CacheWrite1h}} {
		s := strings.TrimSpace(getenv(v.name))
		if s == "" {
			continue
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
			warnings = append(warnings, fmt.Sprintf("%s=%q is not a price in USD per 1M tokens (a non-negative number); ignored", v.name, s))
			continue
		}
		*v.dst = &f
	}
	if !p.Priced() {
		return nil, warnings
	}
	return Table{DefaultKey: p}, warnings
}

// Format renders a cost as the CLI shows it: "$0.0421", 6 decimals below $0.01.
func Format(usd float64) string {
	if usd < 0.01 {
		return "$" + strconv.FormatFloat(usd, 'f', 6, 64)
	}
	return "$" + strconv.FormatFloat(usd, 'f', 4, 64)
}
