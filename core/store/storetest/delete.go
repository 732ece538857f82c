package storetest

import (
	"bytes"
	"errors"
	"testing"

	"github.com/archmax-ai/archmax/core/store"
)

// Stores are the ports a session lives in: its log, the session files tree and (optional)
// its blobs.
type Stores struct {
	Log   store.Log
	Files store.Files
	Blobs store.Blobs // nil: the store keeps no blobs
}

// TestSessionDelete is the conformance test of deleting one session (RD22-1, RD22-3) as
// session.Sessions.Delete does it, port by port: Log.Delete while the deleter holds the
// session's lease (head, messages, trail, events all gone, the head last), store.DeleteTree
// of "<id>/" (every file at any depth, never a sibling whose id starts with the same
// characters, never the shared spec snapshots under _specs/), Blobs.DeleteSession; then
// each again on the deleted session, which succeeds and reports nothing existed.
func TestSessionDelete(t *testing.T, newStores func(t *testing.T) Stores) {
	st := newStores(t)
	ctx := t.Context()
	l, f := st.Log, st.Files

	h := mustAcquire(t, l, "s1", "w", long)
	h = mustCommit(t, l, "s1", "w", next(h, "w", 3, 2, 2))
	if err := l.Release(ctx, "s1", "w"); err != nil {
		t.Fatal(err)
	}
	seed(t, l, "s10", func(*store.Head) {})
	files := map[string]bool{ // key → deleted with s1
		"s1/scratchpad/notes/a.md":     true,
		"s1/artifacts/trajectory.json": true,
		"s1/conversation_history/x":    true,
		"s10/scratchpad/keep.md":       false,
		"_specs/0123abcd.json":         false,
		"s1x":                          false,
	}
	for k := range files {
		if err := f.Write(ctx, k, []byte("data of "+k)); err != nil {
			t.Fatalf("write %s: %v", k, err)
		}
	}
	big := bytes.Repeat([]byte("b"), 70<<10)
	var ref1, ref10 string
	if st.Blobs != nil {
		var err error
		if ref1, err = st.Blobs.Put(ctx, "s1", big); err != nil {
			t.Fatal(err)
		}
		if ref10, err = st.Blobs.Put(ctx, "s10", big); err != nil {
			t.Fatal(err)
		}
	}

	// the deleter holds the lease, as Sessions.Delete does: nobody else writes meanwhile
	mustAcquire(t, l, "s1", "deleter", long)
	for round := range 2 {
		if err := store.DeleteTree(ctx, f, "s1"); err != nil {
			t.Fatalf("round %d: DeleteTree: %v", round, err)
		}
		if st.Blobs != nil {
			if err := st.Blobs.DeleteSession(ctx, "s1"); err != nil {
				t.Fatalf("round %d: DeleteSession: %v", round, err)
			}
		}
		existed, err := l.Delete(ctx, "s1")
		if err != nil || existed != (round == 0) {
			t.Fatalf("round %d: Delete = %v, %v; want %v", round, existed, err, round == 0)
		}
		if _, err := l.Get(ctx, "s1"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("round %d: Get after Delete: %v", round, err)
		}
		for _, r := range readers(l) {
			if items, err := r.read(ctx, "s1", 0, 10); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("round %d: %s after Delete = %d items, %v; want ErrNotFound", round, r.name, len(items), err)
			}
		}
		for k, gone := range files {
			_, err := f.Read(ctx, k)
			if gone && !errors.Is(err, store.ErrNotFound) {
				t.Errorf("round %d: %s survived the delete: %v", round, k, err)
			}
			if !gone && err != nil {
				t.Errorf("round %d: %s was touched: %v", round, k, err)
			}
		}
		if entries, err := f.List(ctx, "s1"); err != nil || len(entries) != 0 {
			t.Errorf("round %d: List(s1) = %v, %v; want empty", round, entries, err)
		}
		if st.Blobs != nil {
			if _, err := st.Blobs.Get(ctx, "s1", ref1); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("round %d: s1's blob survived: %v", round, err)
			}
			if got, err := st.Blobs.Get(ctx, "s10", ref10); err != nil || !bytes.Equal(got, big) {
				t.Errorf("round %d: s10's blob: %d bytes, %v", round, len(got), err)
			}
		}
		if _, err := l.Get(ctx, "s10"); err != nil {
			t.Errorf("round %d: the other session: %v", round, err)
		}
	}
	// the deleter's lease went with the session
	if h := mustAcquire(t, l, "s1", "next", long); h.Version != 0 {
		t.Errorf("re-created s1 = version %d, want a zero head", h.Version)
	}
}
