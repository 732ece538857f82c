package storetest

import (
	"testing"

	"github.com/archmax-ai/archmax/core/store"
)

// TestHeadExpiry is the conformance test of a head's retention expiry (RD22-8): a commit
// stores Head.ExpiresAt and every read returns it; a takeover by another writer, a renewal
// and a release without a commit keep it (a call refused before it committed is no
// activity and must not make the session permanent); the next commit replaces it, and a
// commit of 0 clears it.
func TestHeadExpiry(t *testing.T, newLog func(t *testing.T) store.Log) {
	l := newLog(t)
	ctx := t.Context()
	expect := func(step string, want int64) {
		t.Helper()
		h, err := l.Get(ctx, "s1")
		if err != nil || h.ExpiresAt != want {
			t.Fatalf("%s: Get = %+v, %v; want ExpiresAt %d", step, h, err, want)
		}
		list, _, err := l.List(ctx, store.ListOptions{})
		if err != nil || len(list) != 1 || list[0].ExpiresAt != want {
			t.Fatalf("%s: List = %v, %v; want ExpiresAt %d", step, list, err, want)
		}
	}
	h := mustAcquire(t, l, "s1", "a", long)
	c := next(h, "a", 1, 0, 0)
	c.Head.ExpiresAt = 1_900_000_000
	h = mustCommit(t, l, "s1", "a", c)
	if h.ExpiresAt != 1_900_000_000 {
		t.Fatalf("Commit returned ExpiresAt %d", h.ExpiresAt)
	}
	expect("after the commit", 1_900_000_000)
	if err := l.Release(ctx, "s1", "a"); err != nil {
		t.Fatal(err)
	}
	expect("after the release", 1_900_000_000)

	// another writer takes the session and lets it go without committing
	if got := mustAcquire(t, l, "s1", "b", long); got.ExpiresAt != 1_900_000_000 {
		t.Fatalf("Acquire returned ExpiresAt %d", got.ExpiresAt)
	}
	mustAcquire(t, l, "s1", "b", long) // a renewal
	if err := l.Release(ctx, "s1", "b"); err != nil {
		t.Fatal(err)
	}
	expect("after a takeover and a release without a commit", 1_900_000_000)

	h = mustAcquire(t, l, "s1", "c", long)
	c = next(h, "c", 1, 0, 0)
	c.Head.ExpiresAt = 1_900_086_400
	h = mustCommit(t, l, "s1", "c", c)
	expect("after the next commit", 1_900_086_400)
	c = next(h, "c", 0, 0, 0)
	c.Head.ExpiresAt = 0
	mustCommit(t, l, "s1", "c", c)
	expect("after a commit without one", 0)
}
