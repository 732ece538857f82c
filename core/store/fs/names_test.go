package fs

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/store"
)

// aliasKeys are key segments that a case-insensitive, normalising or Windows-like file
// system would store as one file, alter, or refuse — each a distinct key of the store.
var aliasKeys = []string{
	"a:b:3", "s1~review:enrich-order:3", // 01 §6.3 accepts both
	"A", "a", "Chat", "chat", "CHAT",
	"x.", "x", "x..", "x ", " x", "x. ",
	"CON", "con", "Con.txt", "nul.txt", "COM1", "lpt9.log", "conin$", "com10",
	"PROGRA~1", "progra~1", "~1",
	"\u00e9", "e\u0301", "\u00c9", // é precomposed, decomposed, and upper case
	"chec\u212apoints", "checkpoints", "Checkpoints", // KELVIN SIGN
	"a*b?c", `a"b<c>d|e`, "tab\there", "nl\nhere", "del\x7f",
	"%41", "!a", "=x", "%tmp-x", "%format", "%names", "%h" + strings.Repeat("0", 64),
	".hidden", "...x", "日本語のファイル名",
	strings.Repeat("Ä", 100),      // 200 bytes, an encoding over 255
	strings.Repeat("y", 255),      // the longest plain name
	strings.Repeat("Y", 200) + "", // 400 encoded bytes
}

// portable is what an encoded name may look like: lower-case ASCII letters, digits, '-',
// '_', '.', and the escapes "!x" and "%hh"; or an over-long segment's "%h" and digest.
var portable = regexp.MustCompile(`^(?:(?:[a-z0-9_-]|\.|![a-z]|%[0-9a-f]{2})+|%h[0-9a-f]{64})$`)

// checkPortable fails for a file name some file system would alter, refuse or alias with
// another of its folder's names (seen: folded names so far).
func checkPortable(t *testing.T, dir, name string, seen map[string]string) {
	t.Helper()
	switch {
	case !portable.MatchString(name):
		t.Errorf("%s: name %q is not portable", dir, name)
	case strings.HasSuffix(name, ".") || strings.HasSuffix(name, " "):
		t.Errorf("%s: name %q ends in a dot or a space (Windows strips them)", dir, name)
	case isDeviceName(name):
		t.Errorf("%s: name %q is a Windows device name", dir, name)
	case len(name) > maxNameBytes:
		t.Errorf("%s: name %q is longer than %d bytes", dir, name, maxNameBytes)
	}
	folded := strings.ToLower(name)
	if other, ok := seen[folded]; ok {
		t.Errorf("%s: %q and %q are one file on a case-insensitive file system", dir, other, name)
	}
	seen[folded] = name
}

// walkNames checks every name under dir (recursively) with checkPortable, except the
// store's own fixed names in skip.
func walkNames(t *testing.T, dir string, skip map[string]bool) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, e := range entries {
		if skip[e.Name()] {
			continue
		}
		checkPortable(t, dir, e.Name(), seen)
		if e.IsDir() {
			walkNames(t, filepath.Join(dir, e.Name()), skip)
		}
	}
}

// Every alias key is its own file, reads back and lists as itself, and no file name on disk
// is one a case-insensitive, normalising or Windows-like file system would alter or alias.
func TestFileNamesArePortable(t *testing.T) {
	dir := t.TempDir()
	f := openFiles(t, dir)
	ctx := t.Context()
	want := map[string]bool{}
	for i, seg := range aliasKeys {
		for _, key := range []string{"s1/" + seg, seg + "/in/" + seg} {
			data := fmt.Appendf(nil, "%d:%s", i, key)
			if err := f.Write(ctx, key, data); err != nil {
				t.Fatalf("Write(%q): %v", key, err)
			}
		}
		want[seg] = true
	}
	for i, seg := range aliasKeys {
		for _, key := range []string{"s1/" + seg, seg + "/in/" + seg} {
			if data, err := f.Read(ctx, key); err != nil || string(data) != fmt.Sprintf("%d:%s", i, key) {
				t.Errorf("Read(%q) = %q, %v", key, data, err)
			}
		}
		if info, err := f.Stat(ctx, seg+"/in"); err != nil || !info.Dir || info.Name != "in" {
			t.Errorf("Stat(%q) = %+v, %v", seg+"/in", info, err)
		}
	}
	entries, err := f.List(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for i, e := range entries {
		got[e.Name] = true
		if e.Dir || e.Size == 0 {
			t.Errorf("List(s1)[%d] = %+v", i, e)
		}
		if i > 0 && entries[i-1].Name >= e.Name {
			t.Errorf("List(s1) is not sorted by name: %q before %q", entries[i-1].Name, e.Name)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("List(s1) names = %v, want %v", got, want)
	}
	walkNames(t, dir, map[string]bool{formatFile: true, namesDir: true})
	// deleting every key empties the tree again (the dictionary and the marker stay)
	for _, seg := range aliasKeys {
		for _, key := range []string{"s1/" + seg, seg + "/in/" + seg} {
			if err := f.Delete(ctx, key); err != nil {
				t.Fatalf("Delete(%q): %v", key, err)
			}
		}
	}
	if entries, err := f.List(ctx, ""); err != nil || len(entries) != 0 {
		t.Fatalf("List after deleting every key = %+v, %v", entries, err)
	}
}

// The encoding is reversible, and only the canonical encoding of a segment is a key.
func TestEncodeDecodeNames(t *testing.T) {
	for _, seg := range aliasKeys {
		name := encodeName(seg)
		if back, ok := decodeName(name); !ok || back != seg {
			t.Errorf("decodeName(encodeName(%q) = %q) = %q, %v", seg, name, back, ok)
		}
	}
	for name, want := range map[string]string{"a%3ab%3a3": "a:b:3", "!chat": "Chat", "x%2e": "x.", "x%20": "x ", "!c!o!n": "CON", "%63on": "con", "%6eul.txt": "nul.txt"} {
		if got := encodeName(want); got != name {
			t.Errorf("encodeName(%q) = %q, want %q", want, got, name)
		}
	}
	for _, name := range []string{"", "A", "x.", "con", "nul.txt", "%61", "%4A", "%4", "!", "!A", "!1", "a b", "%tmp-x", "%format", ".archmax-tmp-ABC"} {
		if seg, ok := decodeName(name); ok {
			t.Errorf("decodeName(%q) = %q: not a canonical encoding", name, seg)
		}
	}
}

// Session ids that differ only in case, or that a file system would alter, own separate
// folders with portable names (a case-insensitive file system would otherwise give "Chat"
// and "chat" one head, lease and log).
func TestSessionFoldersArePortable(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	ids := []string{"Chat", "chat", "CHAT", "a:b:3", "s1~review:enrich-order:3", "x.", "x", "CON", "con", "\u00e9", "e\u0301",
		strings.Repeat("Z", 150)} // 300 encoded bytes: stored under its digest
	for _, id := range ids {
		h := mustAcquire(t, s, id, "o")
		c := step(h, id)
		c.Head.Workflow = id
		mustCommit(t, s, id, "o", c)
	}
	for _, id := range ids {
		h, err := s.Get(t.Context(), id)
		if err != nil || h.SessionID != id || h.Workflow != id || h.Version != 1 {
			t.Errorf("Get(%q) = %+v, %v", id, h, err)
		}
		items, err := s.Messages(t.Context(), id, 0, 10)
		var m struct{ Tag string }
		if err != nil || len(items) != 1 || json.Unmarshal(items[0], &m) != nil || m.Tag != id {
			t.Errorf("Messages(%q) = %s, %v", id, items, err)
		}
	}
	heads, _, err := s.List(t.Context(), store.ListOptions{Limit: 100})
	if err != nil || len(heads) != len(ids) {
		t.Fatalf("List = %d heads, %v; want %d", len(heads), err, len(ids))
	}
	entries, err := os.ReadDir(filepath.Join(dir, sessionsDir))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, e := range entries {
		name := e.Name()
		if legacyDigestName(name) {
			name = name[1:] // "=" + hex: portable as well
		}
		checkPortable(t, sessionsDir, name, seen)
	}
	if _, err := s.Acquire(t.Context(), "chat", "other", time.Minute); err == nil {
		t.Fatal("a second owner took the live lease of 'chat'")
	}
	if _, err := s.Acquire(t.Context(), "Chat", "o", time.Minute); err != nil {
		t.Fatalf("the lease of 'Chat' is its own: %v", err)
	}
	if _, err := s.Delete(t.Context(), "CHAT"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"Chat", "chat"} {
		if _, err := s.Get(t.Context(), id); err != nil {
			t.Errorf("deleting 'CHAT' removed %q: %v", id, err)
		}
	}
	if _, err := s.Get(t.Context(), "CHAT"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get(CHAT) after Delete: %v", err)
	}
}
