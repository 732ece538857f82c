package fs

import (
	"context"
	"testing"

	"github.com/archmax-ai/archmax/core/store"
	"github.com/archmax-ai/archmax/core/store/storetest"
)

func TestUsageConformance(t *testing.T) {
	storetest.TestUsage(t, func(t *testing.T) store.UsageCounter { return openStore(t, t.TempDir()) })
}

// Two Stores over one directory (two processes' worth of open file descriptions) add to one
// counter: the flock serialises them, and a reopened store reads the sum.
func TestUsageAcrossStores(t *testing.T) {
	dir := t.TempDir()
	a, b := openStore(t, dir), openStore(t, dir)
	ctx := context.Background()
	done := make(chan error, 2)
	for _, s := range []*Store{a, b} {
		go func() {
			for range 20 {
				if _, err := s.AddUsage(ctx, "desk", "2026-12-02", 1, 10); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	got, err := openStore(t, dir).AddUsage(ctx, "desk", "2026-12-02", 0, 0)
	if err != nil || got != (store.UsageTotals{Tokens: 40, MicroUSD: 400}) {
		t.Fatalf("%+v %v", got, err)
	}
}
