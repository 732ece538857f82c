package upload

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestExcluded(t *testing.T) {
	for rel, want := range map[string]bool{".env": true, "skills/s/.env.prod": true, "workflows/w/tests/a.test.yaml": true, "workflows/w/tests": true,
		".archmax/x": true, "skills/s/node_modules/a.js": true, "workflows/w/workflow.yaml": false, "skills/tests/SKILL.md": false, "skills/s/env.md": false} {
		if Excluded(rel) != want {
			t.Errorf("Excluded(%q) = %v", rel, !want)
		}
	}
}

// Files keeps the authored tree only: no model scripts, README, .env, tests/ or session store.
func TestFiles(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"workflows/w/workflow.yaml", "workflows/w/scripts/a.js", "workflows/w/tests/c.test.yaml", "workflows/w/tests/c.model.yaml",
		"skills/s/SKILL.md", "skills/s/.env", "AGENTS.md", "archmax.host.yaml", ".platform/p.md", "model-scripts/happy.model.yaml",
		"README.md", ".env", ".archmax/sessions/x"} {
		p := filepath.Join(dir, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("AGENTS.md", filepath.Join(dir, "skills/s/link.md")); err != nil {
		t.Fatal(err)
	}
	got, err := Files(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{".platform/p.md", "AGENTS.md", "archmax.host.yaml", "skills/s/SKILL.md", "workflows/w/scripts/a.js", "workflows/w/workflow.yaml"}
	if !slices.Equal(got, want) {
		t.Errorf("files %q, want %q", got, want)
	}
}
