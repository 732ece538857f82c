package fs

import (
	"errors"
	"fmt"
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

// RD22-21: a session's files go in one rename into the tree's trash — none is readable after,
// the count is right, a sibling is untouched — and a removal cut short (a trash left over) is
// swept when the tree is opened again.
func TestDeleteFolderMovesTheTreeAtOnce(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	f, err := OpenFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for i := range 120 {
		keys = append(keys, fmt.Sprintf("s1/scratchpad/d%d/f%d.md", i%7, i))
	}
	for _, k := range append(keys, "s10/scratchpad/keep.md") {
		if err := f.Write(ctx, k, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	n, err := store.DeleteTreeCount(ctx, f, "s1")
	if err != nil || n != len(keys) {
		t.Fatalf("DeleteTreeCount = %d, %v; want %d", n, err, len(keys))
	}
	for _, k := range keys {
		if _, err := f.Read(ctx, k); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("%s after the delete: %v", k, err)
		}
	}
	if _, err := f.Read(ctx, "s10/scratchpad/keep.md"); err != nil {
		t.Errorf("the sibling: %v", err)
	}
	if root, err := f.List(ctx, ""); err != nil || len(root) != 1 || root[0].Name != "s10" {
		t.Errorf("root listing = %v, %v", root, err)
	}
	if left, _ := os.ReadDir(filepath.Join(dir, trashName)); len(left) != 0 {
		t.Errorf("trash left: %v", left)
	}
	f.Close()
	// a removal cut short after the move: the next open sweeps it
	if err := os.MkdirAll(filepath.Join(dir, trashName, "cut", "scratchpad"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, trashName, "cut", "scratchpad", "a.md"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if f, err = OpenFiles(dir); err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if left, _ := os.ReadDir(filepath.Join(dir, trashName)); len(left) != 0 {
		t.Errorf("the trash after reopening: %v", left)
	}
}

// RD22-21: a session id over the name limit leaves no name record (%names/<digest>) behind
// its delete; another session's long file name keeps its own.
func TestDeleteRemovesTheLongSessionIDsNameRecord(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	f, err := OpenFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	id := strings.Repeat("L", 300)
	other := "other/scratchpad/" + strings.Repeat("Y", 200)
	for _, k := range []string{id + "/scratchpad/a.md", id + "/scratchpad/" + id + ".md", other} {
		if err := f.Write(ctx, k, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	records := func() []string {
		entries, _ := os.ReadDir(filepath.Join(dir, namesDir))
		var names []string
		for _, e := range entries {
			b, _ := os.ReadFile(filepath.Join(dir, namesDir, e.Name()))
			names = append(names, string(b))
		}
		return names
	}
	if len(records()) != 3 {
		t.Fatalf("name records before = %d", len(records()))
	}
	if err := store.DeleteTree(ctx, f, id); err != nil {
		t.Fatal(err)
	}
	for _, r := range records() {
		if strings.Contains(r, id) {
			t.Errorf("a name record of the deleted session survived: %.40s…", r)
		}
	}
	if entries, err := f.List(ctx, "other/scratchpad"); err != nil || len(entries) != 1 {
		t.Errorf("the other session's long name: %v, %v", entries, err)
	}
}
