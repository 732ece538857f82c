package storetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/core/store"
)

// aliasNames are names a case-insensitive, normalising or Windows-like file system would
// store as one file, alter or refuse, and that the spec accepts: each must be its own key
// (or session) in every store. 01 §6.3 accepts "a:b:3" in a session id; a model may name a
// file "x." or "CON".
var aliasNames = []string{
	"a:b:3", "s1~review:enrich-order:3",
	"A", "a",
	"x.", "x", "x ",
	"CON", "con", "nul.txt",
	"\u00e9", "e\u0301",
}

// testAliasKeys: keys that differ only in case, in a trailing dot or space, in Unicode
// normalisation, or that name a Windows device, are distinct files — at the root (where a
// session's folder is) and below a folder — and list as themselves.
func testAliasKeys(t *testing.T, f store.Files) {
	ctx := t.Context()
	for i, name := range aliasNames {
		mustWrite(t, f, name+"/scratchpad/f", fmt.Appendf(nil, "root %d", i))
		mustWrite(t, f, "s1/scratchpad/"+name, fmt.Appendf(nil, "file %d", i))
	}
	for i, name := range aliasNames {
		assertRead(t, f, name+"/scratchpad/f", fmt.Appendf(nil, "root %d", i))
		assertRead(t, f, "s1/scratchpad/"+name, fmt.Appendf(nil, "file %d", i))
		if info, err := f.Stat(ctx, "s1/scratchpad/"+name); err != nil || info.Name != name || info.Dir {
			t.Errorf("Stat(%q) = %+v, %v", "s1/scratchpad/"+name, info, err)
		}
	}
	entries, err := f.List(ctx, "s1/scratchpad")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name)
	}
	want := slices.Sorted(slices.Values(aliasNames))
	if !slices.Equal(got, want) {
		t.Fatalf("List(s1/scratchpad) = %q, want %q", got, want)
	}
	root, err := f.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	got = got[:0]
	for _, e := range root {
		if e.Name != "s1" {
			got = append(got, e.Name)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("List(root) = %q, want %q", got, want)
	}
	// deleting one leaves its aliases
	if err := f.Delete(ctx, "s1/scratchpad/A"); err != nil {
		t.Fatal(err)
	}
	assertRead(t, f, "s1/scratchpad/a", []byte(fmt.Sprintf("file %d", slices.Index(aliasNames, "a"))))
	if err := f.Delete(ctx, "x /scratchpad/f"); err != nil {
		t.Fatal(err)
	}
	assertRead(t, f, "x/scratchpad/f", []byte(fmt.Sprintf("root %d", slices.Index(aliasNames, "x"))))
}

// testAliasIDs: session ids that differ only in case, in a trailing dot, in normalisation,
// or that hold ':' (the legacy child form) are distinct sessions: each its own head, lease,
// log and listing row.
func testAliasIDs(t *testing.T, newLog func(t *testing.T) store.Log) {
	l := newLog(t)
	ctx := t.Context()
	var ids []string
	for _, n := range aliasNames {
		if !strings.ContainsAny(n, " ") { // a trailing space is no session id the engine accepts
			ids = append(ids, n)
		}
	}
	for _, id := range ids {
		h := mustAcquire(t, l, id, "o", long)
		c := next(h, id, 1, 1, 1)
		if _, err := l.Commit(ctx, id, "o", c); err != nil {
			t.Fatalf("Commit(%q): %v", id, err)
		}
	}
	for _, id := range ids {
		h, err := l.Get(ctx, id)
		if err != nil || h.SessionID != id || h.Version != 1 || string(h.Body) != fmt.Sprintf(`{"tag":%q}`, id) {
			t.Errorf("Get(%q) = %+v, %v", id, h, err)
			continue
		}
		items, err := l.Messages(ctx, id, 0, 10)
		if err != nil || len(items) != 1 || string(items[0]) != string(item(id+"/m", 0)) {
			t.Errorf("Messages(%q) = %s, %v", id, items, err)
		}
	}
	heads, _, err := l.List(ctx, store.ListOptions{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, h := range heads {
		listed = append(listed, h.SessionID)
	}
	slices.Sort(listed)
	if want := slices.Sorted(slices.Values(ids)); !slices.Equal(listed, want) {
		t.Fatalf("List = %q, want %q", listed, want)
	}
	// a live lease binds its own session only
	if _, err := l.Acquire(ctx, "A", "other", long); err == nil {
		t.Fatal("a second owner took A's live lease")
	}
	if err := l.Release(ctx, "a", "o"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(ctx, "a", "other", long); err != nil {
		t.Fatalf("a's released lease: %v", err)
	}
	if _, err := l.Delete(ctx, "CON"); err != nil {
		t.Fatal(err)
	}
	if h, err := l.Get(ctx, "con"); err != nil || h.SessionID != "con" {
		t.Fatalf("deleting CON touched con: %+v, %v", h, err)
	}
}
