package session

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/core/kernel"
	"github.com/archmax-ai/archmax/core/store"
	fsstore "github.com/archmax-ai/archmax/core/store/fs"
)

// fsSecHarness is secHarness on the embedded default's real stores: the authored tree is a
// directory opened with fsstore.OpenFilesReadOnly and the session files one opened with
// fsstore.OpenFiles, both holding the same sentinels; the session log stays in memory. It
// returns the harness, the two stores, the two directories and the host file's path.
func fsSecHarness(t *testing.T, corpus []probe) (h *harness, authored, files store.Files, wsDir, filesDir, hostFile string) {
	t.Helper()
	hostFile = filepath.Join(t.TempDir(), "host-secret.txt")
	must(t, os.WriteFile(hostFile, []byte(sentHost), 0o600))
	wsDir, filesDir = t.TempDir(), filepath.Join(t.TempDir(), "files")
	for k, v := range map[string]string{
		"workflows/wf/workflow.yaml":    secWorkflow,
		"workflows/wf/scripts/done.js":  `console.log("done");`,
		"workflows/wf/scripts/probe.js": probeScript(corpus),
		"workflows/wf/secret.txt":       sentAuthoring,
		"workflows/wf/scripts/x.js":     "// " + sentScript,
		"skills/ledger/SKILL.md":        "---\nname: ledger\n---\nledger skill body",
		"skills/ledger-evil/SKILL.md":   "---\nname: ledger-evil\n---\n" + sentLedgerEvil,
		"skills/ledger-evil/secret.md":  sentLedgerEvil,
		".platform/policy.md":           "platform policy",
	} {
		p := filepath.Join(wsDir, filepath.FromSlash(k))
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(v), 0o644))
	}
	ro, err := fsstore.OpenFilesReadOnly(wsDir)
	must(t, err)
	t.Cleanup(func() { ro.Close() })
	rw, err := fsstore.OpenFiles(filesDir)
	must(t, err)
	t.Cleanup(func() { rw.Close() })
	ctx := context.Background()
	for k, v := range map[string]string{
		"other/scratchpad/secret.txt":   sentOther,
		"_specs/secret.json":            sentSpecs,
		"s1/checkpoints/secret-cp.json": sentCheckpoint,
		"s1/scratchpad/seed.md":         "seed",
		"s1/large_tool_results/r.txt":   "offloaded result",
		"s1/reports/ledger/ok.md":       "ledger report",
	} {
		must(t, rw.Write(ctx, k, []byte(v)))
	}
	h = newHarness(t, secWorkflow, nil)
	h.cfg.Authored, h.cfg.Files = ro, rw
	return h, ro, rw, wsDir, filesDir, hostFile
}

// symlinks plants the links of the symlink class: in the authored tree, an enabled bundle's
// file and folder linking to a disabled bundle and to the authoring plane, the AGENTS.md and
// .platform mounts linking into the plane, and a link to a host file; in the session tree,
// links from the scratchpad to another session's file, to the internal areas and to the
// spec snapshots, and a folder link under the guard-granted reports/ledger/ to another
// session's scratchpad.
func symlinks(t *testing.T, wsDir, filesDir, hostFile string) {
	t.Helper()
	for link, target := range map[string]string{
		filepath.Join(wsDir, "skills/ledger/evil.md"):      "../ledger-evil/secret.md",
		filepath.Join(wsDir, "skills/ledger/plane"):        "../../workflows/wf",
		filepath.Join(wsDir, "skills/ledger/host.txt"):     hostFile,
		filepath.Join(wsDir, "AGENTS.md"):                  "workflows/wf/secret.txt",
		filepath.Join(wsDir, ".platform/wf.yaml"):          "../workflows/wf/workflow.yaml",
		filepath.Join(filesDir, "s1/scratchpad/other.txt"): "../../other/scratchpad/secret.txt",
		filepath.Join(filesDir, "s1/scratchpad/cp"):        "../checkpoints",
		filepath.Join(filesDir, "s1/scratchpad/specs"):     "../../_specs",
		filepath.Join(filesDir, "s1/reports/ledger/evil"):  "../../../other/scratchpad",
	} {
		must(t, os.Symlink(target, link))
	}
}

// symlinkCorpus tries each planted link through every kind of tool call. The store never
// follows a link, so reads and edits find nothing there, listings and searches skip the
// links, and writes through a linked folder fail; the real files stay reachable.
func symlinkCorpus() []probe {
	rd := func(p string) map[string]any { return map[string]any{"file_path": p} }
	wr := func(p string) map[string]any { return map[string]any{"file_path": p, "content": "pwned"} }
	cp := func(src, dst string) map[string]any { return map[string]any{"source": src, "destination": dst} }
	grep := func(p string) map[string]any { return map[string]any{"pattern": "SENTINEL", "path": p} }
	return []probe{
		{class: "symlink", tool: "read_file", args: rd("skills/ledger/evil.md"), agent: outMissing},
		{class: "symlink", tool: "read_file", args: rd("skills/ledger/plane/secret.txt"), agent: outMissing},
		{class: "symlink", tool: "read_file", args: rd("skills/ledger/plane/workflow.yaml"), agent: outMissing},
		{class: "symlink", tool: "read_file", args: rd("skills/ledger/host.txt"), agent: outMissing},
		{class: "symlink", tool: "read_file", args: rd("AGENTS.md"), agent: outMissing},
		{class: "symlink", tool: "read_file", args: rd(".platform/wf.yaml"), agent: outMissing},
		{class: "symlink", tool: "grep", args: grep("skills/ledger"), agent: outMissing},
		{class: "symlink", tool: "grep", args: grep(".platform"), agent: outMissing},
		{class: "symlink", tool: "ls", args: map[string]any{"path": "skills/ledger/plane"}, agent: outMissing},
		{class: "symlink", tool: "copy_file", args: cp("skills/ledger/evil.md", "scratchpad/stolen.md"), agent: outMissing},
		{class: "symlink", tool: "read_file", args: rd("scratchpad/other.txt"), agent: outMissing},
		{class: "symlink", tool: "read_file", args: rd("scratchpad/cp/secret-cp.json"), agent: outMissing},
		{class: "symlink", tool: "read_file", args: rd("scratchpad/specs/secret.json"), agent: outMissing},
		{class: "symlink", tool: "grep", args: grep("scratchpad"), agent: outMissing},
		{class: "symlink", tool: "grep", args: map[string]any{"pattern": "SENTINEL"}, agent: outMissing},
		{class: "symlink", tool: "ls", args: map[string]any{"path": "scratchpad/cp"}, agent: outMissing},
		{class: "symlink", tool: "glob", args: map[string]any{"pattern": "**/*.json", "path": "scratchpad"}, agent: outMissing},
		{class: "symlink", tool: "copy_file", args: cp("scratchpad/other.txt", "scratchpad/stolen.txt"), agent: outMissing},
		{class: "symlink", tool: "move_file", args: cp("scratchpad/cp/secret-cp.json", "scratchpad/cp.json"), agent: outMissing},
		{class: "symlink", tool: "remove_file", args: rd("scratchpad/other.txt"), agent: outMissing},
		{class: "symlink", tool: "write_file", args: wr("scratchpad/cp/x.json"), agent: outInvalid},
		{class: "symlink", tool: "write_file", args: wr("scratchpad/specs/x.json"), agent: outInvalid},
		{class: "symlink", tool: "copy_file", args: cp("scratchpad/seed.md", "scratchpad/cp/seed.json"), agent: outInvalid},
		{class: "symlink", tool: "write_file", args: wr("reports/ledger/evil/pwn.txt"), agent: outInvalid},
		{class: "symlink", tool: "edit_file", args: map[string]any{"file_path": "reports/ledger/evil/secret.txt", "old_string": "SENTINEL", "new_string": "pwned"}, agent: outMissing},
		// controls: the real files beside the links
		{class: "symlink", tool: "read_file", args: rd("skills/ledger/SKILL.md"), agent: "ok", shows: "ledger skill body"},
		{class: "symlink", tool: "glob", args: map[string]any{"pattern": "**", "path": "skills/ledger"}, agent: "ok", shows: "/skills/ledger/SKILL.md"},
		{class: "symlink", tool: "ls", args: map[string]any{"path": "scratchpad"}, agent: "ok", shows: "/scratchpad/seed.md"},
		{class: "symlink", tool: "read_file", args: rd(".platform/policy.md"), agent: "ok", shows: "platform policy"},
	}
}

// TestSecuritySymlinkAliasing: the symlink class through the engine on the fs stores. Before
// the store stopped following links inside its tree, "skills/ledger/evil.md" read the
// disabled bundle, "AGENTS.md" and "skills/ledger/plane/…" the authoring plane,
// "scratchpad/other.txt" another session's file and "scratchpad/cp/…" the checkpoints, and
// writes through "reports/ledger/evil/" landed in another session.
func TestSecuritySymlinkAliasing(t *testing.T) {
	for _, origin := range []kernel.Origin{kernel.OriginAgent, kernel.OriginCode} {
		t.Run(string(origin), func(t *testing.T) {
			corpus := symlinkCorpus()
			h, authored, files, wsDir, filesDir, hostFile := fsSecHarness(t, corpus)
			symlinks(t, wsDir, filesDir, hostFile)
			adversarial, escapes, _ := runCorpus(t, h, files, authored, corpus, origin)
			for _, p := range []string{filepath.Join(filesDir, "other/scratchpad/pwn.txt"), filepath.Join(filesDir, "s1/checkpoints/x.json"), filepath.Join(filesDir, "_specs/x.json")} {
				if _, err := os.Lstat(p); err == nil {
					t.Errorf("a write through a link created %s", p)
				}
			}
			if b, _ := os.ReadFile(filepath.Join(filesDir, "other/scratchpad/secret.txt")); string(b) != sentOther {
				t.Errorf("another session's file changed through a link: %q", b)
			}
			if _, err := os.Lstat(filepath.Join(filesDir, "s1/scratchpad/other.txt")); err != nil {
				t.Errorf("remove_file removed the link it may not see: %v", err)
			}
			t.Logf("%s: %d adversarial symlink calls, %d escapes", origin, adversarial, escapes)
		})
	}
}

// TestSessionIDsDifferingInCaseOnTheFSStore: sessions "Ledger" and "ledger" are two sessions
// on the embedded default, each with its own files, and their folders stay apart on a
// case-insensitive file system too: no two names in a folder of the store are equal
// ignoring case, and none is one Windows would alter ("x." loses its dot there).
func TestSessionIDsDifferingInCaseOnTheFSStore(t *testing.T) {
	dir := t.TempDir()
	files, err := fsstore.OpenFiles(filepath.Join(dir, "files"))
	must(t, err)
	defer files.Close()
	log, err := fsstore.Open(filepath.Join(dir, "log"))
	must(t, err)
	defer log.Close()
	const wf = `
states:
  work:
    triggers:
      manual:
    instructions: Keep notes.
`
	h := newHarness(t, wf, nil)
	h.cfg.Files, h.cfg.Log = files, log
	ids := []string{"Ledger", "ledger", "LEDGER", "x.", "x", "a:b:3"}
	for _, id := range ids {
		h.script(calls("", call{"write_file", map[string]any{"file_path": "scratchpad/Notes.md", "content": "notes of " + id}}), says("noted"))
		h.send(id, "note", nil)
	}
	for _, id := range ids {
		h.script(calls("", call{"read_file", map[string]any{"file_path": "scratchpad/Notes.md"}}), says("read"))
		out := h.send(id, "read", nil)
		if got := toolMessage(t, out, "read_file", 0).Text; !strings.Contains(got, "notes of "+id+"\n") && !strings.HasSuffix(got, "notes of "+id) {
			t.Errorf("session %q reads %q", id, got)
		}
	}
	portable := regexp.MustCompile(`^[a-z0-9._%!=-]+$`)
	var walk func(string)
	walk = func(d string) {
		entries, err := os.ReadDir(d)
		must(t, err)
		folded := map[string]string{}
		for _, e := range entries {
			n := e.Name()
			if strings.HasPrefix(n, ".") && (n == ".lock" || strings.HasSuffix(n, ".tmp")) {
				continue // the log's own lock and temp names
			}
			if !portable.MatchString(n) || strings.HasSuffix(n, ".") {
				t.Errorf("%s: %q is a name a file system may alter", d, n)
			}
			if other, ok := folded[strings.ToLower(n)]; ok {
				t.Errorf("%s: %q and %q are one entry on a case-insensitive file system", d, other, n)
			}
			folded[strings.ToLower(n)] = n
			if e.IsDir() {
				walk(filepath.Join(d, n))
			}
		}
	}
	walk(filepath.Join(dir, "files"))
	walk(filepath.Join(dir, "log", "sessions"))
	raw, _ := json.Marshal(ids)
	t.Logf("sessions %s kept apart", raw)
}
