package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/archmax-ai/archmax/core/store"
)

// TestFiles runs the store.Files contract against fresh, empty trees from newFiles (each
// subtest calls it).
func TestFiles(t *testing.T, newFiles func(t *testing.T) store.Files) {
	t.Run("ReadWrite", func(t *testing.T) { testReadWrite(t, newFiles(t)) })
	t.Run("WriteIfAbsent", func(t *testing.T) { testWriteIfAbsent(t, newFiles(t)) })
	t.Run("Delete", func(t *testing.T) { testFileDelete(t, newFiles(t)) })
	t.Run("ListStat", func(t *testing.T) { testListStat(t, newFiles(t)) })
	t.Run("InvalidKeys", func(t *testing.T) { testInvalidKeys(t, newFiles(t)) })
	t.Run("AliasKeys", func(t *testing.T) { testAliasKeys(t, newFiles(t)) })
}

func mustWrite(t *testing.T, f store.Files, key string, data []byte) {
	t.Helper()
	if err := f.Write(t.Context(), key, data); err != nil {
		t.Fatalf("Write(%q): %v", key, err)
	}
}

func assertRead(t *testing.T, f store.Files, key string, want []byte) {
	t.Helper()
	got, err := f.Read(t.Context(), key)
	if err != nil {
		t.Fatalf("Read(%q): %v", key, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Read(%q) = %d bytes %q, want %d bytes %q", key, len(got), trunc(got), len(want), trunc(want))
	}
}

func trunc(b []byte) []byte { return b[:min(len(b), 40)] }

func testReadWrite(t *testing.T, f store.Files) {
	if _, err := f.Read(t.Context(), "missing.txt"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Read missing: err = %v, want ErrNotFound", err)
	}
	if _, err := f.Read(t.Context(), "no/such/dir/file"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Read in a missing folder: err = %v, want ErrNotFound", err)
	}
	binary := make([]byte, 3*256)
	for i := range binary {
		binary[i] = byte(i)
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	for key, data := range map[string][]byte{
		"a.bin":                       binary,
		"empty":                       {},
		"s1/scratchpad/notes/x.md":    []byte("# notes\r\n\ttabs and CRLF\n"),
		"s1/scratchpad/notes/big.txt": big,
		"_specs/0123abcd.json":        []byte(`{"spec":true}`),
		"name with spaces & ünïcode":  []byte("ok"),
	} {
		mustWrite(t, f, key, data)
		assertRead(t, f, key, data)
	}
	got, err := f.Read(t.Context(), "empty")
	if err != nil || len(got) != 0 {
		t.Fatalf("empty file = %q, %v", got, err)
	}

	// Overwrite, longer then shorter: no stale tail survives.
	mustWrite(t, f, "s1/v.txt", []byte("first version"))
	mustWrite(t, f, "s1/v.txt", []byte("second, a longer version"))
	assertRead(t, f, "s1/v.txt", []byte("second, a longer version"))
	mustWrite(t, f, "s1/v.txt", []byte("3rd"))
	assertRead(t, f, "s1/v.txt", []byte("3rd"))

	// Neither the written nor the returned slice aliases the stored bytes.
	buf := []byte("original")
	mustWrite(t, f, "alias", buf)
	buf[0] = 'X'
	got, _ = f.Read(t.Context(), "alias")
	got[1] = 'Y'
	assertRead(t, f, "alias", []byte("original"))
}

func testWriteIfAbsent(t *testing.T, f store.Files) {
	ctx := t.Context()
	wrote, err := f.WriteIfAbsent(ctx, "_specs/h.json", []byte("one"))
	if err != nil || !wrote {
		t.Fatalf("first WriteIfAbsent = %v, %v; want true", wrote, err)
	}
	wrote, err = f.WriteIfAbsent(ctx, "_specs/h.json", []byte("two"))
	if err != nil || wrote {
		t.Fatalf("second WriteIfAbsent = %v, %v; want false", wrote, err)
	}
	assertRead(t, f, "_specs/h.json", []byte("one"))

	const n = 8
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		wins []int
	)
	for i := range n {
		wg.Go(func() {
			wrote, err := f.WriteIfAbsent(ctx, "race/x", fmt.Appendf(nil, "writer %d", i))
			if err != nil {
				t.Error(err)
			}
			if wrote {
				mu.Lock()
				wins = append(wins, i)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(wins) != 1 {
		t.Fatalf("concurrent WriteIfAbsent: winners %v, want exactly one", wins)
	}
	assertRead(t, f, "race/x", fmt.Appendf(nil, "writer %d", wins[0]))
	if entries, err := f.List(ctx, "race"); err != nil || len(entries) != 1 {
		t.Fatalf("List(race) = %+v, %v; want the one file and no leftovers", entries, err)
	}
}

func testFileDelete(t *testing.T, f store.Files) {
	ctx := t.Context()
	mustWrite(t, f, "d/keep", []byte("k"))
	mustWrite(t, f, "d/gone", []byte("g"))
	mustWrite(t, f, "d/sub/only", []byte("o"))
	if err := f.Delete(ctx, "d/gone"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Read(ctx, "d/gone"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Read after Delete: err = %v, want ErrNotFound", err)
	}
	if err := f.Delete(ctx, "d/gone"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Delete missing: err = %v, want ErrNotFound", err)
	}
	if err := f.Delete(ctx, "d/sub"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Delete of a folder: err = %v, want ErrNotFound", err)
	}
	assertRead(t, f, "d/keep", []byte("k"))
	// Folders exist only as key prefixes: deleting the last file removes the folder.
	if err := f.Delete(ctx, "d/sub/only"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Stat(ctx, "d/sub"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Stat of an emptied folder: err = %v, want ErrNotFound", err)
	}
	entries, err := f.List(ctx, "d")
	if err != nil || len(entries) != 1 || entries[0].Name != "keep" {
		t.Fatalf("List(d) = %+v, %v; want only keep", entries, err)
	}
	// A deleted key can be written again.
	mustWrite(t, f, "d/sub/only", []byte("again"))
	assertRead(t, f, "d/sub/only", []byte("again"))
}

func testListStat(t *testing.T, f store.Files) {
	ctx := t.Context()
	for key, size := range map[string]int{
		"root.txt":              3,
		"s1/trigger.json":       10,
		"s1/scratchpad/a.txt":   1,
		"s1/scratchpad/b/c.txt": 4,
		"s1/scratchpad/b/d/e":   5,
		"s1/artifacts/g.json":   2,
		"s2/x":                  0,
	} {
		mustWrite(t, f, key, bytes.Repeat([]byte("z"), size))
	}
	for _, tc := range []struct {
		prefix string
		want   []store.FileInfo
	}{
		{"", []store.FileInfo{{Name: "root.txt", Size: 3}, {Name: "s1", Dir: true}, {Name: "s2", Dir: true}}},
		{"s1", []store.FileInfo{{Name: "artifacts", Dir: true}, {Name: "scratchpad", Dir: true}, {Name: "trigger.json", Size: 10}}},
		{"s1/", []store.FileInfo{{Name: "artifacts", Dir: true}, {Name: "scratchpad", Dir: true}, {Name: "trigger.json", Size: 10}}},
		{"s1/scratchpad", []store.FileInfo{{Name: "a.txt", Size: 1}, {Name: "b", Dir: true}}},
		{"s1/scratchpad/b", []store.FileInfo{{Name: "c.txt", Size: 4}, {Name: "d", Dir: true}}},
		{"s2", []store.FileInfo{{Name: "x", Size: 0}}},
		{"missing", nil},
		{"s1/missing/deeper", nil},
		{"s1/scr", nil}, // a name prefix is not a folder
	} {
		got, err := f.List(ctx, tc.prefix)
		if err != nil {
			t.Fatalf("List(%q): %v", tc.prefix, err)
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Fatalf("List(%q) = %+v, want %+v", tc.prefix, got, tc.want)
		}
	}
	for _, tc := range []struct {
		key  string
		want *store.FileInfo
	}{
		{"root.txt", &store.FileInfo{Name: "root.txt", Size: 3}},
		{"s1/scratchpad/b/d/e", &store.FileInfo{Name: "e", Size: 5}},
		{"s2/x", &store.FileInfo{Name: "x"}},
		{"s1", &store.FileInfo{Name: "s1", Dir: true}},
		{"s1/scratchpad/b", &store.FileInfo{Name: "b", Dir: true}},
		{"s1/scratchpad/b/", &store.FileInfo{Name: "b", Dir: true}},
		{"missing", nil},
		{"s1/scratch", nil},
		{"s1/trigger.json/x", nil},
	} {
		got, err := f.Stat(ctx, tc.key)
		if tc.want == nil {
			if !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("Stat(%q) = %+v, %v; want ErrNotFound", tc.key, got, err)
			}
			continue
		}
		if err != nil || *got != *tc.want {
			t.Fatalf("Stat(%q) = %+v, %v; want %+v", tc.key, got, err, tc.want)
		}
	}
}

func testInvalidKeys(t *testing.T, f store.Files) {
	ctx := t.Context()
	mustWrite(t, f, "inside", []byte("x"))
	for _, key := range []string{"", "/abs", "/", "..", "../escape", "a/../../escape", "a/../inside", "./inside", "a//b", "a/.", "trail/", "nul\x00byte"} {
		if err := f.Write(ctx, key, []byte("x")); err == nil {
			t.Errorf("Write(%q) succeeded", key)
		}
		if _, err := f.WriteIfAbsent(ctx, key, []byte("x")); err == nil {
			t.Errorf("WriteIfAbsent(%q) succeeded", key)
		}
		if _, err := f.Read(ctx, key); err == nil || errors.Is(err, store.ErrNotFound) {
			t.Errorf("Read(%q): err = %v, want an invalid-key error", key, err)
		}
		if err := f.Delete(ctx, key); err == nil || errors.Is(err, store.ErrNotFound) {
			t.Errorf("Delete(%q): err = %v, want an invalid-key error", key, err)
		}
	}
	for _, prefix := range []string{"/abs", "..", "a/../..", "a//b"} {
		if _, err := f.List(ctx, prefix); err == nil {
			t.Errorf("List(%q) succeeded", prefix)
		}
	}
	entries, err := f.List(ctx, "")
	if err != nil || len(entries) != 1 || entries[0].Name != "inside" {
		t.Fatalf("List after refused writes = %+v, %v; want only inside", entries, err)
	}
}
