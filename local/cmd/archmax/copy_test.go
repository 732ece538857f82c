package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// copyWorkspace copies the authored files of the workspace at from into to, leaving out what
// running it creates (the local stores under .archmax/ and a .env), so a test sees the
// fixture as checked in even after someone has run the README's commands in it.
func copyWorkspace(to, from string) error {
	return filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, p)
		if err != nil {
			return err
		}
		if d.Name() == ".archmax" || (rel == ".env" && !d.IsDir()) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		target := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
}

// A workspace someone has run (its .archmax stores, a .env) copies as checked in.
func TestCopyWorkspaceLeavesOutRunState(t *testing.T) {
	from, to := t.TempDir(), t.TempDir()
	for p, body := range map[string]string{
		"workflows/wf/workflow.yaml":       "states: {}\n",
		".archmax/sessions/s-1/head.json":  "{}",
		"workflows/wf/.archmax/stray.json": "{}",
		".env":                             "ARCHMAX_MODEL=x\n",
		"workflows/wf/tests/a.test.yaml":   "title: a\n",
	} {
		if err := os.MkdirAll(filepath.Join(from, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(from, p), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := copyWorkspace(to, from); err != nil {
		t.Fatal(err)
	}
	var got []string
	_ = filepath.WalkDir(to, func(p string, d fs.DirEntry, _ error) error {
		if !d.IsDir() {
			rel, _ := filepath.Rel(to, p)
			got = append(got, filepath.ToSlash(rel))
		}
		return nil
	})
	if len(got) != 2 || got[0] != "workflows/wf/tests/a.test.yaml" || got[1] != "workflows/wf/workflow.yaml" {
		t.Errorf("copied %v", got)
	}
}
