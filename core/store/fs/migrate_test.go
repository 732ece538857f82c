package fs

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/store"
)

// legacyTree writes a session-files tree of the unencoded layout under dir: keys as file
// names, a crashed write's temp file and a symbolic link.
func legacyTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{
		"s1/trigger.json":                `{"id":"manual"}`,
		"s1/scratchpad/Report.md":        "report",
		"s1/scratchpad/notes/a b.txt":    "spaced",
		"Chat/scratchpad/x.md":           "chat's",
		"a:b:3/scratchpad/x.md":          "legacy child",
		"_specs/0123.json":               `{"spec":true}`,
		"s1/large_tool_results/tu_AbC-1": "offloaded",
		"s1/%41":                         "a literal percent name",
		"s1/ü":                           "umlaut",
	}
	for k, v := range files {
		writeFile(t, filepath.Join(dir, filepath.FromSlash(k)), v)
	}
	writeFile(t, filepath.Join(dir, "s1", legacyTempPrefix+"CRASHED"), "half")
	if err := os.Symlink("trigger.json", filepath.Join(dir, "s1", "link")); err != nil {
		t.Fatal(err)
	}
	return files
}

// A tree of the unencoded layout is migrated when opened: every key reads and lists as
// before, the names on disk are encoded, the temp file and the link are gone, and nothing
// is left beside the tree.
func TestMigrateLegacyFiles(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "files")
	want := legacyTree(t, dir)
	f := openFiles(t, dir)
	ctx := t.Context()
	for k, v := range want {
		if data, err := f.Read(ctx, k); err != nil || string(data) != v {
			t.Errorf("Read(%q) after migration = %q, %v", k, data, err)
		}
	}
	entries, err := f.List(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name)
	}
	if !slices.Equal(names, []string{"%41", "large_tool_results", "scratchpad", "trigger.json", "ü"}) {
		t.Errorf("List(s1) = %v", names)
	}
	walkNames(t, dir, map[string]bool{formatFile: true, namesDir: true})
	if _, err := os.Stat(filepath.Join(dir, "!chat", "scratchpad", "x.md")); err != nil {
		t.Errorf("encoded layout: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(parent, "files.v*")); len(left) != 0 {
		t.Errorf("left beside the tree: %v", left)
	}
	f.Close()
	// a second open finds the marker and changes nothing
	g := openFiles(t, dir)
	if data, err := g.Read(ctx, "Chat/scratchpad/x.md"); err != nil || string(data) != "chat's" {
		t.Fatalf("Read after reopening = %q, %v", data, err)
	}
}

// A migration cut short between its two renames (the old tree moved away, the staged one
// not yet in place) is completed by the next open; an incomplete staged tree is discarded
// and the migration runs again.
func TestMigrateFilesResumes(t *testing.T) {
	t.Run("after the first rename", func(t *testing.T) {
		parent := t.TempDir()
		dir := filepath.Join(parent, "files")
		legacyTree(t, dir)
		staged := filepath.Join(parent, "files.v2-X")
		if err := stageEncoded(dir, staged); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(dir, filepath.Join(parent, "files.v1-X")); err != nil {
			t.Fatal(err)
		}
		f := openFiles(t, dir)
		if data, err := f.Read(t.Context(), "s1/scratchpad/Report.md"); err != nil || string(data) != "report" {
			t.Fatalf("Read = %q, %v", data, err)
		}
		if left, _ := filepath.Glob(filepath.Join(parent, "files.v*")); len(left) != 0 {
			t.Errorf("left beside the tree: %v", left)
		}
	})
	t.Run("an incomplete staged tree", func(t *testing.T) {
		parent := t.TempDir()
		dir := filepath.Join(parent, "files")
		legacyTree(t, dir)
		writeFile(t, filepath.Join(parent, "files.v2-Y", "half"), "no marker")
		f := openFiles(t, dir)
		if data, err := f.Read(t.Context(), "Chat/scratchpad/x.md"); err != nil || string(data) != "chat's" {
			t.Fatalf("Read = %q, %v", data, err)
		}
		if left, _ := filepath.Glob(filepath.Join(parent, "files.v*")); len(left) != 0 {
			t.Errorf("left beside the tree: %v", left)
		}
	})
}

// A session log of the unencoded layout (session folders named by their ids) is migrated
// when opened, and a migration stopped between its phases resumes.
func TestMigrateLegacyLog(t *testing.T) {
	ids := []string{"Chat", "chat", "a:b:3", "s1~1", "x."}
	legacyLog := func(t *testing.T) string {
		dir := t.TempDir()
		s := openStore(t, dir)
		for _, id := range ids {
			mustCommit(t, s, id, "o", step(mustAcquire(t, s, id, "o"), id))
			if err := s.Release(t.Context(), id, "o"); err != nil {
				t.Fatal(err)
			}
		}
		s.Close()
		// back to the old layout: folders named by the ids, no format file
		for _, id := range ids {
			if enc := sessionDirName(id); enc != id {
				if err := os.Rename(filepath.Join(dir, sessionsDir, enc), filepath.Join(dir, sessionsDir, id)); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := os.Remove(filepath.Join(dir, logFormatFile)); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	check := func(t *testing.T, dir string) {
		s := openStore(t, dir)
		for _, id := range ids {
			h, err := s.Get(t.Context(), id)
			if err != nil || h.SessionID != id || h.Version != 1 {
				t.Errorf("Get(%q) after migration = %+v, %v", id, h, err)
			}
		}
		heads, _, err := s.List(t.Context(), store.ListOptions{})
		if err != nil || len(heads) != len(ids) {
			t.Errorf("List = %d heads, %v", len(heads), err)
		}
		for _, e := range []string{logStaging} {
			if _, err := os.Stat(filepath.Join(dir, e)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s left after the migration: %v", e, err)
			}
		}
		if _, err := s.Acquire(t.Context(), "Chat", "p", time.Minute); err != nil {
			t.Errorf("Acquire after migration: %v", err)
		}
	}
	t.Run("whole", func(t *testing.T) { check(t, legacyLog(t)) })
	t.Run("stopped in phase 1", func(t *testing.T) {
		dir := legacyLog(t)
		// "Chat" already moved into the staging folder under its new name
		if err := os.MkdirAll(filepath.Join(dir, logStaging), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(dir, sessionsDir, "Chat"), filepath.Join(dir, logStaging, "!chat")); err != nil {
			t.Fatal(err)
		}
		check(t, dir)
	})
	t.Run("stopped in phase 2", func(t *testing.T) {
		dir := legacyLog(t)
		if err := os.MkdirAll(filepath.Join(dir, logStaging), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"Chat", "a:b:3", "s1~1"} {
			if err := os.Rename(filepath.Join(dir, sessionsDir, id), filepath.Join(dir, logStaging, sessionDirName(id))); err != nil {
				t.Fatal(err)
			}
		}
		writeFile(t, filepath.Join(dir, logStaging, logPhase2), "phase 2\n")
		// "x." moved back already; the others still staged
		if err := os.Rename(filepath.Join(dir, sessionsDir, "x."), filepath.Join(dir, sessionsDir, sessionDirName("x."))); err != nil {
			t.Fatal(err)
		}
		check(t, dir)
	})
}
