package fs

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path"
	"strings"
	"syscall"

	"github.com/archmax-ai/archmax/core/store"
)

var (
	// ErrInvalidKey is returned (wrapped, with the key) for a key that is empty, absolute,
	// has an empty, "." or ".." segment, or contains a NUL byte.
	ErrInvalidKey = store.ErrInvalidKey
	// ErrReadOnly is returned (wrapped, with the key) by the writes and deletes of a tree
	// opened with OpenFilesReadOnly.
	ErrReadOnly = errors.New("read-only file tree")
)

// tempPrefix names the temp files a write publishes by rename or link; listings skip them.
const tempPrefix = ".archmax-tmp-"

// Files is a store.Files over a directory: key "a/b/c" is the file <dir>/a/b/c. Keys are
// validated (ErrInvalidKey) and resolved through an os.Root, so no key or symbolic link
// reaches outside the directory. Writes are atomic (temp file, fsync, rename); deleting a
// folder's last file removes the emptied folders, since folders exist only as key
// prefixes. Safe for concurrent use.
type Files struct {
	root     *os.Root
	readOnly bool
}

var _ store.Files = (*Files)(nil)

// OpenFiles opens (creating it if needed) the file tree at dir. Close releases it.
func OpenFiles(dir string) (*Files, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("open file tree: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("open file tree: %w", err)
	}
	return &Files{root: root}, nil
}

// OpenFilesReadOnly opens the existing file tree at dir for reading: Write, WriteIfAbsent
// and Delete fail with ErrReadOnly.
func OpenFilesReadOnly(dir string) (*Files, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("open file tree: %w", err)
	}
	return &Files{root: root, readOnly: true}, nil
}

// Close releases the tree's directory handle.
func (f *Files) Close() error { return f.root.Close() }

// Read implements store.Files: the bytes at key, or store.ErrNotFound (also for a folder).
func (f *Files) Read(ctx context.Context, key string) ([]byte, error) {
	if err := store.CheckKey(ctx, key); err != nil {
		return nil, err
	}
	data, err := f.root.ReadFile(key)
	if notFound(err) || errors.Is(err, syscall.EISDIR) {
		return nil, fmt.Errorf("read %s: %w", key, store.ErrNotFound)
	}
	return data, err
}

// Write implements store.Files: it atomically creates or replaces the file at key.
func (f *Files) Write(ctx context.Context, key string, data []byte) error {
	if err := f.writable(ctx, key); err != nil {
		return err
	}
	return f.publish(key, data, func(tmp string) error { return f.root.Rename(tmp, key) })
}

// WriteIfAbsent implements store.Files: it publishes data at key only if nothing is there
// (by hard-linking a complete temp file, so a reader never sees a partial file).
func (f *Files) WriteIfAbsent(ctx context.Context, key string, data []byte) (bool, error) {
	if err := f.writable(ctx, key); err != nil {
		return false, err
	}
	wrote := true
	err := f.publish(key, data, func(tmp string) error {
		err := f.root.Link(tmp, key)
		if errors.Is(err, iofs.ErrExist) {
			wrote = false
			return nil
		}
		return err
	})
	return wrote && err == nil, err
}

// publish writes data to a fresh temp file beside key, lets put move it to key, removes
// what is left of the temp file and makes the directory entry durable.
func (f *Files) publish(key string, data []byte, put func(tmp string) error) error {
	dir := path.Dir(key)
	for attempt := 0; ; attempt++ {
		if err := f.root.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("write %s: %w", key, err)
		}
		tmp := path.Join(dir, tempPrefix+rand.Text())
		err := writeSynced(f.root, tmp, data, os.O_EXCL)
		if errors.Is(err, iofs.ErrNotExist) && attempt < 3 {
			continue // a Delete removed the emptied folder in between
		}
		if err != nil {
			return fmt.Errorf("write %s: %w", key, err)
		}
		err = put(tmp)
		f.root.Remove(tmp) // gone after a rename; after a link, only the extra name
		if err != nil {
			return fmt.Errorf("write %s: %w", key, err)
		}
		return syncDir(f.root, dir)
	}
}

// Delete implements store.Files: it removes the file at key (store.ErrNotFound when there
// is none, or a folder) and then every folder the removal left empty.
func (f *Files) Delete(ctx context.Context, key string) error {
	if err := f.writable(ctx, key); err != nil {
		return err
	}
	info, err := f.root.Lstat(key)
	if notFound(err) || err == nil && info.IsDir() {
		return fmt.Errorf("delete %s: %w", key, store.ErrNotFound)
	}
	if err == nil {
		err = f.root.Remove(key)
	}
	if err != nil {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	for dir := path.Dir(key); dir != "."; dir = path.Dir(dir) {
		if f.root.Remove(dir) != nil {
			break // not empty (or already gone): its ancestors are not empty either
		}
	}
	return nil
}

// List implements store.Files: the files and folders directly in the folder prefix ("" =
// root; a trailing slash is allowed), sorted by name, with file sizes in bytes. Symbolic
// links inside the tree appear as what they point to; others are skipped, as are
// entries that are neither regular files nor directories.
func (f *Files) List(ctx context.Context, prefix string) ([]store.FileInfo, error) {
	dir := strings.TrimSuffix(prefix, "/")
	if dir == "" {
		dir = "."
	} else if err := store.CheckKey(ctx, dir); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	entries, err := iofs.ReadDir(f.root.FS(), dir)
	if notFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", prefix, err)
	}
	out := make([]store.FileInfo, 0, len(entries))
	for _, e := range entries { // sorted by name
		if strings.HasPrefix(e.Name(), tempPrefix) {
			continue
		}
		info, err := f.root.Stat(path.Join(dir, e.Name()))
		switch {
		case err != nil:
			continue // a broken link, or one leading out of the tree
		case info.IsDir():
			out = append(out, store.FileInfo{Name: e.Name(), Dir: true})
		case info.Mode().IsRegular():
			out = append(out, store.FileInfo{Name: e.Name(), Size: info.Size()})
		}
	}
	return out, nil
}

// Stat implements store.Files: the file at key, else the folder key (a trailing slash
// asks for a folder only), else store.ErrNotFound.
func (f *Files) Stat(ctx context.Context, key string) (*store.FileInfo, error) {
	name, wantDir := strings.CutSuffix(key, "/")
	if err := store.CheckKey(ctx, name); err != nil {
		return nil, err
	}
	info, err := f.root.Stat(name)
	switch {
	case notFound(err):
	case err != nil:
		return nil, fmt.Errorf("stat %s: %w", key, err)
	case info.IsDir():
		return &store.FileInfo{Name: path.Base(name), Dir: true}, nil
	case info.Mode().IsRegular() && !wantDir:
		return &store.FileInfo{Name: path.Base(name), Size: info.Size()}, nil
	}
	return nil, fmt.Errorf("stat %s: %w", key, store.ErrNotFound)
}

func (f *Files) writable(ctx context.Context, key string) error {
	if err := store.CheckKey(ctx, key); err != nil {
		return err
	}
	if f.readOnly {
		return fmt.Errorf("write %s: %w", key, ErrReadOnly)
	}
	return nil
}

// notFound reports whether err means nothing is at the path (including a path that runs
// through a file, as "a.txt/b").
func notFound(err error) bool {
	return errors.Is(err, iofs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}
