package fs

import (
	"bytes"
	"errors"
	"fmt"
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

// The store never follows a symbolic link, out of the tree or inside it (a link inside
// would serve one path's content under another's name, past the governance of paths):
// listings skip links, reads and stats find nothing there, a write through a linked folder
// fails, and a write at the link's own key replaces the link. Both kinds of tree.
func TestFilesNeverFollowSymlinks(t *testing.T) {
	for _, readOnly := range []bool{false, true} {
		t.Run(map[bool]string{false: "store tree", true: "authored tree"}[readOnly], func(t *testing.T) {
			outside := t.TempDir()
			secret := filepath.Join(outside, "secret.txt")
			writeFile(t, secret, "secret")
			dir := t.TempDir()
			var f *Files
			if !readOnly {
				f = openFiles(t, dir) // the format marker first: the planted tree is not migrated
			}
			writeFile(t, filepath.Join(dir, "real", "inside.txt"), "inside")
			for link, target := range map[string]string{
				"file-out":        secret,                         // absolute, out of the tree
				"dir-out":         outside,                        // a folder out of the tree
				"rel-out":         "../" + filepath.Base(outside), // relative, climbing out
				"file-in":         "real/inside.txt",              // relative, inside
				"dir-in":          "real",                         // a folder inside
				"real/loop":       ".",                            // a folder linking to itself
				"real/sibling.md": "inside.txt",                   // beside its target
			} {
				if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
					t.Fatal(err)
				}
			}
			if readOnly {
				var err error
				if f, err = OpenFilesReadOnly(dir); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { f.Close() })
			}
			ctx := t.Context()
			for prefix, want := range map[string][]store.FileInfo{
				"":     {{Name: "real", Dir: true}},
				"real": {{Name: "inside.txt", Size: 6}},
			} {
				entries, err := f.List(ctx, prefix)
				if err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(entries) != fmt.Sprint(want) {
					t.Fatalf("List(%q) = %+v, want %+v (links skipped)", prefix, entries, want)
				}
			}
			if data, err := f.Read(ctx, "real/inside.txt"); err != nil || string(data) != "inside" {
				t.Fatalf("Read of the real file = %q, %v", data, err)
			}
			for _, key := range []string{"file-out", "dir-out/secret.txt", "rel-out/secret.txt", "file-in", "dir-in/inside.txt",
				"real/loop/inside.txt", "real/sibling.md"} {
				if data, err := f.Read(ctx, key); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("Read(%q) = %q, %v; want ErrNotFound", key, data, err)
				}
				if _, err := f.Stat(ctx, key); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("Stat(%q): err = %v, want ErrNotFound", key, err)
				}
			}
			for _, prefix := range []string{"dir-in", "dir-out", "real/loop"} {
				if entries, err := f.List(ctx, prefix); err != nil || len(entries) != 0 {
					t.Errorf("List(%q) = %+v, %v; want nothing", prefix, entries, err)
				}
			}
			if readOnly {
				return
			}
			for _, key := range []string{"dir-out/secret.txt", "rel-out/secret.txt", "dir-out/new.txt", "dir-in/inside.txt", "dir-in/new.txt", "real/loop/x"} {
				if err := f.Write(ctx, key, []byte("overwritten")); !errors.Is(err, ErrSymlink) {
					t.Errorf("Write(%q) through a folder link: err = %v, want ErrSymlink", key, err)
				}
				if err := f.Delete(ctx, key); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("Delete(%q) through a folder link: err = %v, want ErrNotFound", key, err)
				}
			}
			if err := f.Delete(ctx, "file-in"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("Delete of a link: err = %v, want ErrNotFound", err)
			}
			// Writing at the link's own key replaces the link (renames never follow links).
			for _, key := range []string{"file-out", "file-in"} {
				if err := f.Write(ctx, key, []byte("overwritten")); err != nil {
					t.Fatal(err)
				}
			}
			for name, want := range map[string]string{secret: "secret", filepath.Join(dir, "real", "inside.txt"): "inside"} {
				if data, _ := os.ReadFile(name); string(data) != want {
					t.Fatalf("%s changed through a link: %q", name, data)
				}
			}
			for _, name := range []string{filepath.Join(outside, "new.txt"), filepath.Join(dir, "real", "new.txt"), filepath.Join(dir, "real", "x")} {
				if _, err := os.Stat(name); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("a file was created through a link: %s: %v", name, err)
				}
			}
		})
	}
}

func TestFilesIgnoreStaleTempFiles(t *testing.T) {
	dir := t.TempDir()
	f := openFiles(t, dir)
	ctx := t.Context()
	if err := f.Write(ctx, "s1/a.txt", []byte("a")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "s1", tempPrefix+"CRASHED"), "half a fi")
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
