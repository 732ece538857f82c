package fs

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/archmax-ai/archmax/core/store"
)

func openFiles(t *testing.T, dir string) *Files {
	t.Helper()
	f, err := OpenFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestFilesNeverFollowSymlinksOut(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	writeFile(t, secret, "secret")
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "real", "inside.txt"), "inside")
	for link, target := range map[string]string{
		"file-out": secret,                         // absolute, out of the tree
		"dir-out":  outside,                        // a folder out of the tree
		"rel-out":  "../" + filepath.Base(outside), // relative, climbing out
		"file-in":  "real/inside.txt",              // relative, inside: allowed
	} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	f := openFiles(t, dir)
	ctx := t.Context()

	entries, err := f.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	want := []store.FileInfo{{Name: "file-in", Size: 6}, {Name: "real", Dir: true}}
	if len(entries) != len(want) || entries[0] != want[0] || entries[1] != want[1] {
		t.Fatalf("List = %+v, want %+v (outward links skipped)", entries, want)
	}
	if data, err := f.Read(ctx, "file-in"); err != nil || string(data) != "inside" {
		t.Fatalf("Read of an inside link = %q, %v", data, err)
	}
	for _, key := range []string{"file-out", "dir-out/secret.txt", "rel-out/secret.txt"} {
		if data, err := f.Read(ctx, key); err == nil {
			t.Errorf("Read(%q) escaped the tree: %q", key, data)
		}
		if _, err := f.Stat(ctx, key); err == nil {
			t.Errorf("Stat(%q) escaped the tree", key)
		}
	}
	for _, key := range []string{"dir-out/secret.txt", "rel-out/secret.txt", "dir-out/new.txt"} {
		if err := f.Write(ctx, key, []byte("overwritten")); err == nil {
			t.Errorf("Write(%q) through an outward folder link succeeded", key)
		}
	}
	// Writing at the link's own key replaces the link (renames never follow links).
	if err := f.Write(ctx, "file-out", []byte("overwritten")); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(secret); string(data) != "secret" {
		t.Fatalf("outside file changed: %q", data)
	}
	if _, err := os.Stat(filepath.Join(outside, "new.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a file was created outside the tree: %v", err)
	}
}

func TestFilesIgnoreStaleTempFiles(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "s1", tempPrefix+"CRASHED"), "half a fi")
	f := openFiles(t, dir)
	ctx := t.Context()
	if err := f.Write(ctx, "s1/a.txt", []byte("a")); err != nil {
		t.Fatal(err)
	}
	entries, err := f.List(ctx, "s1")
	if err != nil || len(entries) != 1 || entries[0].Name != "a.txt" {
		t.Fatalf("List = %+v, %v; want only a.txt", entries, err)
	}
	if data, err := f.Read(ctx, "s1/a.txt"); err != nil || string(data) != "a" {
		t.Fatalf("Read = %q, %v", data, err)
	}
}

func TestFilesReadOnly(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "workflows", "w", "WORKFLOW.md"), "# w")
	f, err := OpenFilesReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx := t.Context()
	if err := f.Write(ctx, "workflows/w/WORKFLOW.md", []byte("changed")); !errors.Is(err, ErrReadOnly) {
		t.Errorf("Write: err = %v, want ErrReadOnly", err)
	}
	if _, err := f.WriteIfAbsent(ctx, "new.txt", []byte("x")); !errors.Is(err, ErrReadOnly) {
		t.Errorf("WriteIfAbsent: err = %v, want ErrReadOnly", err)
	}
	if err := f.Delete(ctx, "workflows/w/WORKFLOW.md"); !errors.Is(err, ErrReadOnly) {
		t.Errorf("Delete: err = %v, want ErrReadOnly", err)
	}
	if data, err := f.Read(ctx, "workflows/w/WORKFLOW.md"); err != nil || !bytes.Equal(data, []byte("# w")) {
		t.Fatalf("Read = %q, %v", data, err)
	}
	if info, err := f.Stat(ctx, "workflows/w"); err != nil || !info.Dir {
		t.Fatalf("Stat = %+v, %v", info, err)
	}
	if entries, err := f.List(ctx, "workflows/w"); err != nil || len(entries) != 1 {
		t.Fatalf("List = %+v, %v", entries, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "new.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("read-only tree was written")
	}
	if _, err := OpenFilesReadOnly(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("OpenFilesReadOnly of a missing directory succeeded")
	}
}
