package fs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/core/store"
	"github.com/archmax-ai/archmax/core/store/storetest"
)

func TestSessionDeleteConformance(t *testing.T) {
	storetest.TestSessionDelete(t, func(t *testing.T) storetest.Stores {
		f, err := OpenFiles(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return storetest.Stores{Log: openStore(t, t.TempDir()), Files: f}
	})
}

func TestHeadExpiryConformance(t *testing.T) {
	storetest.TestHeadExpiry(t, func(t *testing.T) store.Log { return openStore(t, t.TempDir()) })
}

// RD22-13: a session whose id spells one of the tree's own names ("%names", "%format",
// "%tmp-…", "%h<digest>") owns a folder of its own: deleting it leaves the dictionary, the
// format marker and the other sessions' files alone.
func TestDeleteOfASessionNamedLikeTheTreesOwnNames(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	f, err := OpenFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	long := "other/scratchpad/" + strings.Repeat("Y", 200) // an over-long name: in the dictionary
	if err := f.Write(ctx, long, []byte("keep")); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"%names", "%format", "%tmp-x", "%h" + strings.Repeat("0", 64)} {
		if err := f.Write(ctx, id+"/scratchpad/a.md", []byte("x")); err != nil {
			t.Fatal(err)
		}
		if err := store.DeleteTree(ctx, f, id); err != nil {
			t.Fatalf("delete %s: %v", id, err)
		}
		if got, err := f.Read(ctx, long); err != nil || string(got) != "keep" {
			t.Fatalf("after deleting %q the other session's file = %q, %v", id, got, err)
		}
		if entries, err := f.List(ctx, "other/scratchpad"); err != nil || len(entries) != 1 {
			t.Fatalf("after deleting %q the listing = %v, %v (the dictionary names it)", id, entries, err)
		}
		if _, err := os.Stat(filepath.Join(dir, formatFile)); err != nil {
			t.Fatalf("after deleting %q: the format marker: %v", id, err)
		}
	}
}

func TestIdempotencyTiedConformance(t *testing.T) {
	storetest.TestIdempotencyTiedToSession(t, func(t *testing.T) store.Log { return openStore(t, t.TempDir()) })
}
