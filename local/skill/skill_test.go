package skill

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The skill's references/ and schema/ are the authoring guide and the editor schemas, copied:
// a copy that drifts from its source (or a page added on one side only) fails here. `go
// generate ./local/skill` refreshes them.
func TestSkillCopiesTheGuideAndTheSchemas(t *testing.T) {
	for dir, src := range map[string]string{"references": "../../docs/authoring/*.md", "schema": "../../docs/schema/*.json"} {
		want, err := filepath.Glob(src)
		if err != nil || len(want) == 0 {
			t.Fatalf("%s: %v", src, err)
		}
		var names []string
		for _, w := range want {
			names = append(names, filepath.Base(w))
			orig, err := os.ReadFile(w)
			if err != nil {
				t.Fatal(err)
			}
			got, err := fs.ReadFile(Skill(), dir+"/"+filepath.Base(w))
			if err != nil || !bytes.Equal(got, orig) {
				t.Errorf("%s/%s differs from %s (run 'go generate ./local/skill'): %v", dir, filepath.Base(w), w, err)
			}
		}
		entries, err := fs.ReadDir(Skill(), dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !slices.Contains(names, e.Name()) {
				t.Errorf("%s/%s has no source in %s (run 'go generate ./local/skill')", dir, e.Name(), filepath.Dir(src))
			}
		}
	}
}

func TestSkillFrontmatterNamesTheSkill(t *testing.T) {
	b, err := fs.ReadFile(Skill(), "SKILL.md")
	if err != nil {
		t.Fatal(err)
	}
	head, _, ok := strings.Cut(strings.TrimPrefix(string(b), "---\n"), "\n---\n")
	if !strings.HasPrefix(string(b), "---\n") || !ok {
		t.Fatal("SKILL.md has no frontmatter")
	}
	if !strings.Contains(head, "\nname: "+Name+"\n") && !strings.HasPrefix(head, "name: "+Name+"\n") {
		t.Errorf("SKILL.md's frontmatter does not name %s:\n%s", Name, head)
	}
	if !strings.Contains(head, "\ndescription: ") {
		t.Errorf("SKILL.md's frontmatter has no description:\n%s", head)
	}
}

func TestInitRefusesAndWritesNothing(t *testing.T) {
	dir := t.TempDir()
	if _, err := Init(dir); err != nil {
		t.Fatal(err)
	}
	files, _ := InitFiles()
	for _, f := range files {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s not written: %v", f, err)
		}
	}
	_, err := Init(dir)
	if ce, ok := err.(*ConflictError); !ok || len(ce.Paths) != len(files) {
		t.Fatalf("a second Init: %v", err)
	}
}
