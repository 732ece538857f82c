package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/local/skill"
)

// The acceptance test of `archmax init`: the workspace it writes validates and its case passes,
// with the reference CLI's --root spelling, with no model account and no network.
func TestInitWritesAWorkspaceThatValidatesAndPasses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "w")
	code, out, errs := run(t, "init", dir)
	if code != exitOK {
		t.Fatalf("init: exit %d, stderr %s", code, errs)
	}
	for _, f := range []string{"AGENTS.md", ".gitignore", "README.md",
		"workflows/leave-request/workflow.yaml", "workflows/leave-request/scripts/intake.js",
		"workflows/leave-request/tests/manager-approves.test.yaml", "workflows/leave-request/tests/manager-approves.model.yaml",
		skill.InstallDir + "/SKILL.md", skill.InstallDir + "/schema/workflow.schema.json", skill.InstallDir + "/schema/case.schema.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("init wrote no %s: %v", f, err)
		}
	}
	if !strings.Contains(out, "workflows/leave-request/workflow.yaml") {
		t.Errorf("init's stdout does not list what it wrote:\n%s", out)
	}
	// the editor headers resolve to the schemas the skill brought along
	for _, f := range []string{"workflows/leave-request/workflow.yaml", "workflows/leave-request/tests/manager-approves.test.yaml"} {
		src, _ := os.ReadFile(filepath.Join(dir, f))
		first, _, _ := strings.Cut(string(src), "\n")
		ref, ok := strings.CutPrefix(first, "# yaml-language-server: $schema=")
		if !ok {
			t.Errorf("%s has no schema header: %q", f, first)
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, filepath.Dir(f), ref)); err != nil {
			t.Errorf("%s: schema header %q does not resolve: %v", f, ref, err)
		}
	}
	code, out, errs = run(t, "validate", "--root", dir)
	if code != exitOK || !strings.HasPrefix(out, "valid — 0 error(s), 0 warning(s)") {
		t.Fatalf("validate --root: exit %d, stdout %q, stderr %s", code, out, errs)
	}
	code, out, errs = run(t, "test", "--root", dir)
	if code != exitOK || !strings.HasPrefix(out, "1 passed, 0 failed, 0 skipped") {
		t.Fatalf("test --root: exit %d, stdout %q, stderr %s", code, out, errs)
	}
	code, out, errs = run(t, "test", "--workspace", dir, "--strict")
	if code != exitOK {
		t.Fatalf("test --strict: exit %d, stdout %q, stderr %s", code, out, errs)
	}
}

func TestInitRefusesToReplaceAFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "AGENTS.md"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := run(t, "init", dir)
	if code != exitFail || !strings.Contains(errs, "AGENTS.md") || !strings.Contains(errs, "nothing was written") {
		t.Fatalf("exit %d, stderr %s", code, errs)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "AGENTS.md")); string(b) != "mine\n" {
		t.Errorf("AGENTS.md was replaced: %q", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "workflows")); !os.IsNotExist(err) {
		t.Errorf("init wrote part of the workspace: %v", err)
	}
	if code, _, _ := run(t, "init", "a", "b"); code != exitUsage {
		t.Errorf("init a b: exit %d, want %d", code, exitUsage)
	}
}

func TestSkillPrintsTheSkill(t *testing.T) {
	code, out, errs := run(t, "skill")
	if code != exitOK || !strings.HasPrefix(out, "---\nname: archmax-harness\n") {
		t.Fatalf("skill: exit %d, stdout %.200q, stderr %s", code, out, errs)
	}
	code, out, _ = run(t, "skill", "--list")
	if code != exitOK || !strings.Contains(out, "references/workflow-yaml.md") || !strings.Contains(out, "schema/workflow.schema.json") {
		t.Fatalf("skill --list: exit %d, stdout %s", code, out)
	}
	code, out, _ = run(t, "skill", "references/cases.md")
	if code != exitOK || !strings.Contains(out, "calledTool") {
		t.Fatalf("skill references/cases.md: exit %d, stdout %.200q", code, out)
	}
	if code, _, errs := run(t, "skill", "../go.mod"); code != exitFail || !strings.Contains(errs, "not a file of the skill") {
		t.Errorf("skill ../go.mod: exit %d, stderr %s", code, errs)
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	code, out, errs = run(t, "skill", "--path")
	if code != exitOK {
		t.Fatalf("skill --path: exit %d, stderr %s", code, errs)
	}
	dir := strings.TrimSpace(out)
	if filepath.Base(dir) != skill.Name {
		t.Errorf("skill --path printed %q", dir)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "SKILL.md")); err != nil || !strings.HasPrefix(string(b), "---\nname: archmax-harness\n") {
		t.Errorf("skill --path: SKILL.md not written: %v", err)
	}
}
