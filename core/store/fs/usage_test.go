package fs

import (
	"context"
	"os"
	"path/filepath"
	"strings"
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

// A counter file that is not the store's JSON is reported with where it is and what to do,
// and nothing is added to it (the file is left for a person to repair).
func TestUsageDamagedCounterSaysHowToRepair(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	ctx := context.Background()
	if _, err := s.AddUsage(ctx, "desk", "2026-12-02", 5, 50); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "usage", "desk", "2026-12-02.json")
	if err := os.WriteFile(file, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := s.AddUsage(ctx, "desk", "2026-12-02", 1, 10)
	if err == nil || !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), "delete it") || !strings.Contains(err.Error(), `"microUsd"`) {
		t.Fatalf("damaged counter: %v", err)
	}
	if b, _ := os.ReadFile(file); string(b) != "{not json" {
		t.Errorf("the damaged file was replaced: %q", b)
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if got, err := s.AddUsage(ctx, "desk", "2026-12-02", 1, 10); err != nil || got != (store.UsageTotals{Tokens: 1, MicroUSD: 10}) {
		t.Errorf("after the delete: %+v %v", got, err)
	}
}
