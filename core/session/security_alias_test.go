package session

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/core/kernel"
	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/store"
	"github.com/archmax-ai/archmax/core/store/memory"
)

// The aliasing classes of the security bar: names a store resolves to something other than
// what governance classified. A case-insensitive file system (APFS's and NTFS's defaults)
// serves "Checkpoints/x" from checkpoints/ and "skills/LEDGER-EVIL/x" from the disabled
// bundle; a symbolic link serves one path's content under another (security_symlink_test.go).

// foldFiles is a store.Files that behaves like a case-insensitive, case-preserving file
// system over a memory tree: each key segment resolves to the spelling already stored when
// one equals it ignoring case (Unicode simple folding, as APFS and NTFS compare names), so
// "S1/CHECKPOINTS/x" reads the stored "s1/checkpoints/x". The memory tree is the disk: tests
// write and snapshot it directly, with the spellings they chose.
type foldFiles struct{ disk *memory.Files }

var _ store.Files = foldFiles{}

// resolve returns key with each segment spelled as stored, where a stored entry equals it
// ignoring case; the rest of the key is kept as given.
func (f foldFiles) resolve(ctx context.Context, key string) string {
	trail := strings.HasSuffix(key, "/")
	segs := strings.Split(strings.TrimSuffix(key, "/"), "/")
	dir := ""
	for i, seg := range segs {
		entries, err := f.disk.List(ctx, dir)
		if err != nil {
			break
		}
		for _, e := range entries {
			if strings.EqualFold(e.Name, seg) {
				segs[i] = e.Name
				break
			}
		}
		dir += segs[i] + "/"
	}
	out := strings.Join(segs, "/")
	if trail {
		out += "/"
	}
	return out
}

func (f foldFiles) Read(ctx context.Context, key string) ([]byte, error) {
	return f.disk.Read(ctx, f.resolve(ctx, key))
}

func (f foldFiles) Write(ctx context.Context, key string, data []byte) error {
	return f.disk.Write(ctx, f.resolve(ctx, key), data)
}

func (f foldFiles) WriteIfAbsent(ctx context.Context, key string, data []byte) (bool, error) {
	return f.disk.WriteIfAbsent(ctx, f.resolve(ctx, key), data)
}

func (f foldFiles) Delete(ctx context.Context, key string) error {
	return f.disk.Delete(ctx, f.resolve(ctx, key))
}

func (f foldFiles) List(ctx context.Context, prefix string) ([]store.FileInfo, error) {
	if prefix == "" {
		return f.disk.List(ctx, "")
	}
	return f.disk.List(ctx, f.resolve(ctx, prefix))
}

func (f foldFiles) Stat(ctx context.Context, key string) (*store.FileInfo, error) {
	return f.disk.Stat(ctx, f.resolve(ctx, key))
}

// caseHarness is secHarness with both trees served case-insensitively.
func caseHarness(t *testing.T) *harness {
	t.Helper()
	h, _ := secHarness(t)
	h.cfg.Files, h.cfg.Authored = foldFiles{h.files}, foldFiles{h.authored}
	return h
}

// caseCorpus tries every reserved area, the authoring plane and a disabled skill bundle under
// names that differ from theirs only in case (KELVIN SIGN and LONG S fold onto ASCII
// letters). Governance matches the refusing zones and the skill registry ignoring case, so
// each is refused by the rule that refuses the area's own name; the grants stay exact.
func caseCorpus() []probe {
	gp := kernel.RuleGovernancePlane
	ri := kernel.RuleRuntimeInternal
	rm := kernel.RuleRuntimeManaged
	sk := kernel.RuleSkillNotAllowed
	rd := func(p string) map[string]any { return map[string]any{"file_path": p} }
	wr := func(p string) map[string]any { return map[string]any{"file_path": p, "content": "pwned"} }
	dir := func(p string) map[string]any { return map[string]any{"path": p} }
	cp := func(src, dst string) map[string]any { return map[string]any{"source": src, "destination": dst} }
	return []probe{
		{class: "case", tool: "read_file", args: rd("Checkpoints/secret-cp.json"), agent: ri},
		{class: "case", tool: "read_file", args: rd("CHECKPOINTS/secret-cp.json"), agent: ri},
		{class: "case", tool: "read_file", args: rd("chec\u212apoints/secret-cp.json"), agent: ri},
		{class: "case", tool: "read_file", args: rd("ARTIFACTS/secret.txt"), agent: ri},
		{class: "case", tool: "read_file", args: rd("_SPECS/secret.json"), agent: ri},
		{class: "case", tool: "read_file", args: rd("_\u017fpecs/secret.json"), agent: ri},
		{class: "case", tool: "read_file", args: rd("scratchpad/../Artifacts/secret.txt"), agent: ri},
		{class: "case", tool: "ls", args: dir("Checkpoints"), agent: ri},
		{class: "case", tool: "grep", args: map[string]any{"pattern": "SENTINEL", "path": "Artifacts"}, agent: ri},
		{class: "case", tool: "glob", args: map[string]any{"pattern": "**", "path": "CHECKPOINTS"}, agent: ri},
		{class: "case", tool: "write_file", args: wr("CHECKPOINTS/secret-cp.json"), agent: ri},
		{class: "case", tool: "copy_file", args: cp("_Specs/secret.json", "scratchpad/stolen.json"), agent: ri},
		{class: "case", tool: "write_file", args: wr("Large_Tool_Results/r.txt"), agent: rm},
		{class: "case", tool: "edit_file", args: map[string]any{"file_path": "LARGE_TOOL_RESULTS/r.txt", "old_string": "offloaded", "new_string": "pwned"}, agent: rm},
		{class: "case", tool: "remove_file", args: rd("Large_tool_results/r.txt"), agent: rm},
		{class: "case", tool: "read_file", args: rd("Workflows/wf/secret.txt"), agent: outMissing, code: gp},
		{class: "case", tool: "ls", args: dir("WORKFLOWS/wf"), agent: outMissing, code: gp},
		{class: "case", tool: "read_file", args: rd("skills/LEDGER-EVIL/secret.md"), agent: sk},
		{class: "case", tool: "read_file", args: rd("skills/Ledger-Evil/SKILL.md"), agent: sk},
		{class: "case", tool: "ls", args: dir("skills/LEDGER-EVIL"), agent: sk},
		{class: "case", tool: "grep", args: map[string]any{"pattern": "SENTINEL", "path": "skills/ledger-EVIL"}, agent: sk},
		{class: "case", tool: "glob", args: map[string]any{"pattern": "skills/LEDGER-EVIL/**"}, agent: outMissing},
		// controls: the grants are exact, and the store's own folding serves what they reach
		{class: "case", tool: "read_file", args: rd("skills/LEDGER/SKILL.md"), agent: "ok", shows: "ledger skill body"},
		{class: "case", tool: "read_file", args: rd("Scratchpad/seed.md"), agent: "ok", shows: "seed"},
	}
}

// TestSecurityCaseAliasing: the case class through the engine over case-insensitive trees.
// Before reserved names were compared ignoring case, "Checkpoints/…", "_SPECS/…" and
// "skills/LEDGER-EVIL/…" read the sentinels there and "Large_Tool_Results/…" rewrote the
// offloaded result.
func TestSecurityCaseAliasing(t *testing.T) {
	for _, origin := range []kernel.Origin{kernel.OriginAgent, kernel.OriginCode} {
		t.Run(string(origin), func(t *testing.T) {
			h := caseHarness(t)
			corpus := caseCorpus()
			must(t, h.authored.Write(context.Background(), "workflows/wf/scripts/probe.js", []byte(probeScript(corpus))))
			adversarial, escapes, _ := runCorpus(t, h, h.files, h.authored, corpus, origin)
			t.Logf("%s: %d adversarial case-aliasing calls, %d escapes", origin, adversarial, escapes)
		})
	}
}

// TestSecurityReservedSessionIDsIgnoreCase: a session id naming a session area, the
// authoring plane or a mount root in another case is refused before anything is written —
// on a case-insensitive store session "_SPECS" would own the spec snapshots' folder and its
// model would read them as its own files.
func TestSecurityReservedSessionIDsIgnoreCase(t *testing.T) {
	for _, id := range []string{"_SPECS", "_Specs", "Checkpoints", "SCRATCHPAD", "Workflows", "Skills", ".PLATFORM", "agents.md", "_\u017fpecs", "Artifacts~1"} {
		t.Run(id, func(t *testing.T) {
			h := caseHarness(t)
			before := snapshot(t, h.files)
			h.script(calls("", call{"read_file", map[string]any{"file_path": "secret.json"}}), says("done"))
			out, err := h.engine().Send(context.Background(), id, SendInput{Message: "hello"})
			var idErr *spec.SessionStoreIdError
			if !errors.As(err, &idErr) || !strings.Contains(err.Error(), "is reserved at the workspace root") {
				t.Fatalf("Send(%q) = %+v, %v; want SessionStoreIdError (reserved)", id, out, err)
			}
			if len(h.model.requests) != 0 {
				t.Errorf("the model was called %d times for a refused id", len(h.model.requests))
			}
			if ch := changedKeys(before, snapshot(t, h.files)); len(ch) != 0 {
				t.Errorf("a refused id wrote session files: %v", ch)
			}
			if _, err := h.log.Get(context.Background(), spec.RootSessionIDOf(id)); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("a refused id has a session head: %v", err)
			}
			h.mu.Lock()
			evs, _ := json.Marshal(h.events)
			h.mu.Unlock()
			checkNoLeak(t, "the live events", string(evs))
		})
	}
}
