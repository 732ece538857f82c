package storetest

import (
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/store"
)

// TestIdempotencyTiedToSession is the conformance test of store.IdempotencyTier (RD22-14):
// the records tied to a session go with its Log.Delete — the next RememberIdempotent of the
// key claims it afresh — while a record tied to another session, or to none, stays; a key
// tied twice is one record.
func TestIdempotencyTiedToSession(t *testing.T, newLog func(t *testing.T) store.Log) {
	l := newLog(t)
	tier, ok := l.(store.IdempotencyTier)
	if !ok {
		t.Fatalf("%T is no store.IdempotencyTier", l)
	}
	ctx := t.Context()
	seed(t, l, "s1", func(*store.Head) {})
	seed(t, l, "s10", func(*store.Head) {})
	for _, r := range []struct{ key, session string }{
		{"http a", "s1"}, {"http b", "s1"}, {"http other", "s10"}, {"http free", ""},
	} {
		if _, found, err := l.RememberIdempotent(ctx, r.key, []byte("answer of "+r.key), time.Hour); err != nil || found {
			t.Fatalf("remember %s: %v, %v", r.key, found, err)
		}
		if r.session != "" {
			for range 2 {
				if err := tier.TieIdempotent(ctx, r.session, r.key, time.Hour); err != nil {
					t.Fatalf("tie %s to %s: %v", r.key, r.session, err)
				}
			}
		}
	}
	// the final answer replaces the claim: still tied (the tie names the key, not a value)
	if err := l.PutIdempotent(ctx, "http a", []byte("final answer"), time.Hour); err != nil {
		t.Fatal(err)
	}
	mustAcquire(t, l, "s1", "deleter", long)
	if existed, err := l.Delete(ctx, "s1"); err != nil || !existed {
		t.Fatalf("Delete = %v, %v", existed, err)
	}
	for key, gone := range map[string]bool{"http a": true, "http b": true, "http other": false, "http free": false} {
		old, found, err := l.RememberIdempotent(ctx, key, []byte("a new request"), time.Hour)
		switch {
		case err != nil:
			t.Fatalf("remember %s after the delete: %v", key, err)
		case gone && found:
			t.Errorf("%s: the deleted session's record survived: %q", key, old)
		case !gone && !found:
			t.Errorf("%s: a record not tied to the deleted session was removed", key)
		}
	}
	// deleting again, and deleting a session nothing is tied to, is harmless
	if _, err := l.Delete(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Delete(ctx, "never"); err != nil {
		t.Fatal(err)
	}
}
