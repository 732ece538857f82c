package memory

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/store"
	"github.com/archmax-ai/archmax/core/store/storetest"
)

func TestLogConformance(t *testing.T) {
	storetest.TestLog(t, func(*testing.T) store.Log { return New() })
}

func TestFilesConformance(t *testing.T) {
	storetest.TestFiles(t, func(*testing.T) store.Files { return NewFiles() })
}

// fakeClock is a settable Clock for lease and idempotency expiry without sleeping.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// 15-Q1: the lease expires exactly at ExpiresAt on the store's clock.
func TestLeaseExpiryFollowsClock(t *testing.T) {
	clock := &fakeClock{now: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	s := New()
	s.Clock = clock.Now
	ctx := t.Context()
	h, err := s.Acquire(ctx, "s1", "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if want := clock.Now().Add(time.Minute); !h.Lease.ExpiresAt.Equal(want) {
		t.Fatalf("ExpiresAt = %v, want %v", h.Lease.ExpiresAt, want)
	}
	clock.Advance(time.Minute - time.Nanosecond)
	if _, err := s.Acquire(ctx, "s1", "b", time.Minute); !errors.Is(err, store.ErrLeaseHeld) {
		t.Fatalf("just before expiry: err = %v, want ErrLeaseHeld", err)
	}
	clock.Advance(time.Nanosecond)
	if _, err := s.Acquire(ctx, "s1", "b", time.Minute); err != nil {
		t.Fatalf("at expiry: %v", err)
	}
}

func TestIdempotencyRecordExpires(t *testing.T) {
	clock := &fakeClock{now: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	s := New()
	s.Clock = clock.Now
	ctx := t.Context()
	if _, found, err := s.RememberIdempotent(ctx, "k", []byte("one"), time.Hour); err != nil || found {
		t.Fatalf("first = %v, %v", found, err)
	}
	clock.Advance(time.Hour)
	if _, found, err := s.RememberIdempotent(ctx, "k", []byte("two"), time.Hour); err != nil || found {
		t.Fatalf("after ttl = %v, %v; want a fresh record", found, err)
	}
	if v, found, err := s.RememberIdempotent(ctx, "k", nil, time.Hour); err != nil || !found || string(v) != "two" {
		t.Fatalf("recorded = %q, %v, %v; want two", v, found, err)
	}
}

func TestAcquireRejectsBadArguments(t *testing.T) {
	s := New()
	for _, tc := range []struct {
		id, owner string
		ttl       time.Duration
	}{{"", "a", time.Minute}, {"s1", "", time.Minute}, {"s1", "a", 0}} {
		if _, err := s.Acquire(t.Context(), tc.id, tc.owner, tc.ttl); err == nil {
			t.Errorf("Acquire(%q, %q, %v) succeeded", tc.id, tc.owner, tc.ttl)
		}
	}
}

func TestCommitRejectsInvalidBody(t *testing.T) {
	s := New()
	h, err := s.Acquire(t.Context(), "s1", "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	c := &store.Commit{Head: *h}
	c.Head.Body = []byte(`{"unterminated":`)
	if _, err := s.Commit(t.Context(), "s1", "a", c); err == nil || errors.Is(err, store.ErrConflict) {
		t.Fatalf("err = %v, want a validation error", err)
	}
}

func BenchmarkCommit(b *testing.B) { storetest.BenchCommit(b, New()) }
