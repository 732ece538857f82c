package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/archmax-ai/archmax/core/store"
)

// TestUsage is the conformance suite of store.UsageCounter (BU22-4): totals per (workflow,
// day), independent keys, zero adds read, refused arguments, and N concurrent adders whose
// additions are all counted exactly once and each of whom sees a total including its own.
func TestUsage(t *testing.T, newCounter func(t *testing.T) store.UsageCounter) {
	ctx := context.Background()
	t.Run("Totals", func(t *testing.T) {
		c := newCounter(t)
		if got, err := c.AddUsage(ctx, "desk", "2026-12-02", 0, 0); err != nil || got != (store.UsageTotals{}) {
			t.Fatalf("an unknown counter reads zero: %+v %v", got, err)
		}
		add := func(wf, day string, tok, usd int64, want store.UsageTotals) {
			t.Helper()
			got, err := c.AddUsage(ctx, wf, day, tok, usd)
			if err != nil || got != want {
				t.Fatalf("AddUsage(%s, %s, %d, %d) = %+v %v, want %+v", wf, day, tok, usd, got, err, want)
			}
		}
		add("desk", "2026-12-02", 100, 2500, store.UsageTotals{Tokens: 100, MicroUSD: 2500})
		add("desk", "2026-12-02", 50, 0, store.UsageTotals{Tokens: 150, MicroUSD: 2500})
		add("desk", "2026-12-02", 0, 1, store.UsageTotals{Tokens: 150, MicroUSD: 2501})
		// another day and another workflow are other counters; a slug that is a prefix of
		// another's, or a day after it, shares nothing
		add("desk", "2026-12-03", 7, 7, store.UsageTotals{Tokens: 7, MicroUSD: 7})
		add("desk-2", "2026-12-02", 1, 1, store.UsageTotals{Tokens: 1, MicroUSD: 1})
		add("des", "2026-12-02", 1, 1, store.UsageTotals{Tokens: 1, MicroUSD: 1})
		add("desk", "2026-12-02", 0, 0, store.UsageTotals{Tokens: 150, MicroUSD: 2501})
		// large sums stay exact (beyond float64's 2^53 would need care; micro-USD of $1M is 1e12)
		add("big", "2026-12-02", 1<<40, 1_000_000_000_000, store.UsageTotals{Tokens: 1 << 40, MicroUSD: 1_000_000_000_000})
		add("big", "2026-12-02", 1, 1, store.UsageTotals{Tokens: 1<<40 + 1, MicroUSD: 1_000_000_000_001})
	})
	t.Run("Refusals", func(t *testing.T) {
		c := newCounter(t)
		for _, a := range []struct {
			wf, day  string
			tok, usd int64
		}{{"", "2026-12-02", 1, 1}, {"desk", "", 1, 1}, {"desk", "2026-13-02", 1, 1}, {"desk", "2026-12-2", 1, 1},
			{"desk", "2026-12-02T00:00:00Z", 1, 1}, {"desk", "2026-12-02", -1, 0}, {"desk", "2026-12-02", 0, -1}} {
			_, err := c.AddUsage(ctx, a.wf, a.day, a.tok, a.usd)
			var ke *store.UsageKeyError
			if !errors.As(err, &ke) {
				t.Errorf("AddUsage(%q, %q, %d, %d): %v, want *store.UsageKeyError", a.wf, a.day, a.tok, a.usd, err)
			}
		}
		if got, err := c.AddUsage(ctx, "desk", "2026-12-02", 0, 0); err != nil || got != (store.UsageTotals{}) {
			t.Errorf("a refused addition changed the counter: %+v %v", got, err)
		}
	})
	t.Run("ConcurrentAdders", func(t *testing.T) {
		c := newCounter(t)
		const adders, each = 16, 5
		var wg sync.WaitGroup
		seen := make(chan store.UsageTotals, adders*each)
		errs := make(chan error, adders*each)
		start := make(chan struct{})
		for g := range adders {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for range each {
					tot, err := c.AddUsage(ctx, "rush", "2026-12-02", int64(g+1), 3)
					if err != nil {
						errs <- err
						return
					}
					seen <- tot
				}
			}()
		}
		close(start)
		wg.Wait()
		close(seen)
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		wantTokens := int64(each * adders * (adders + 1) / 2)
		totals := map[int64]bool{}
		var maxTok int64
		for tot := range seen {
			if totals[tot.MicroUSD] {
				t.Errorf("two additions saw the same total %+v: one was not atomic", tot)
			}
			totals[tot.MicroUSD] = true
			maxTok = max(maxTok, tot.Tokens)
		}
		// each addition's micro-USD total is a distinct multiple of 3 up to the exact sum
		if len(totals) != adders*each || !totals[3*adders*each] {
			t.Errorf("totals seen: %d distinct, want %d ending at %d", len(totals), adders*each, 3*adders*each)
		}
		got, err := c.AddUsage(ctx, "rush", "2026-12-02", 0, 0)
		if err != nil || got != (store.UsageTotals{Tokens: wantTokens, MicroUSD: 3 * adders * each}) || maxTok != wantTokens {
			t.Errorf("after %d concurrent additions: %+v %v (max seen %d), want tokens %d micro-USD %d", adders*each, got, err, maxTok, wantTokens, 3*adders*each)
		}
	})
}
