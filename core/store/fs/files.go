package fs

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path"
	"slices"
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
	// ErrSymlink is returned (wrapped, with the key) by a write whose key runs through a
	// symbolic link: the store never follows one. It wraps syscall.ELOOP, the error of
	// opening a link with O_NOFOLLOW.
	ErrSymlink = fmt.Errorf("the path runs through a symbolic link, which the store never follows: %w", syscall.ELOOP)
)

// tempPrefix names the temp files a write publishes by rename or link. It is no encoded
// name ('t' is not a hex digit), so listings never show one.
const tempPrefix = "%tmp-"

// legacyTempPrefix named the temp files of the unencoded layout (removed by the migration).
const legacyTempPrefix = ".archmax-tmp-"

// Files is a store.Files over a directory. Keys are validated (ErrInvalidKey) and resolved
// through an os.Root, so no key reaches outside the directory, and the store never follows a
// symbolic link, even one pointing inside the tree: reads, listings and stats skip it (as if
// nothing were there), and a write through one fails with ErrSymlink — a link would give a
// path the governance classified one way the content of another. Writes are atomic (temp
// file, fsync, rename); deleting a folder's last file removes the emptied folders, since
// folders exist only as key prefixes. Safe for concurrent use.
//
// A tree opened with OpenFiles is the store's own: every key segment is stored under its
// portable encoding (names.go), so distinct keys are distinct files on every file system
// (case-insensitive and Windows-like ones included), and the tree carries a format marker.
// A tree opened with OpenFilesReadOnly is an authored tree (workflows/, skills/, …): its
// names are the author's own, and every segment of a key must be present under exactly that
// name, so a case-insensitive or normalising file system does not serve "AGENTS.md" from
// "agents.md" or "skills/LEDGER-EVIL" from "skills/ledger-evil".
type Files struct {
	root     *os.Root
	readOnly bool
}

var _ store.Files = (*Files)(nil)

// OpenFiles opens (creating it if needed) the store's file tree at dir. A tree written by
// an earlier archmax, with unencoded names, is migrated once (migrate.go). Close releases it.
func OpenFiles(dir string) (*Files, error) {
	if err := prepareFiles(dir); err != nil {
		return nil, fmt.Errorf("open file tree: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("open file tree: %w", err)
	}
	f := &Files{root: root}
	f.sweepTrash() // folders whose removal was cut short (DeleteFolder)
	return f, nil
}

// OpenFilesReadOnly opens the existing authored tree at dir for reading: Write,
// WriteIfAbsent and Delete fail with ErrReadOnly.
func OpenFilesReadOnly(dir string) (*Files, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("open file tree: %w", err)
	}
	return &Files{root: root, readOnly: true}, nil
}

// Close releases the tree's directory handle.
func (f *Files) Close() error { return f.root.Close() }

// errSkipped marks a key that runs through a symbolic link, or whose segments a read-only
// tree does not hold under exactly their names: reads report it as not found.
var errSkipped = errors.New("not an entry of the tree")

// locate returns the relative path of key in the directory. Every existing folder on the way
// must be a real folder (a symbolic link is errSkipped); in a read-only tree every segment
// must also be one of its folder's entries by exact name (else errSkipped). last reports the
// Lstat of the key itself (nil when nothing is there).
func (f *Files) locate(key string) (disk string, last iofs.FileInfo, err error) {
	segs := strings.Split(key, "/")
	names := make([]string, len(segs))
	for i, seg := range segs {
		if f.readOnly {
			names[i] = seg
		} else {
			names[i], _ = fileName(seg)
		}
	}
	for i := range segs {
		p := path.Join(names[:i+1]...)
		if f.readOnly {
			ok, err := f.hasEntry(path.Join(names[:i]...), names[i])
			if err != nil || !ok {
				return "", nil, errors.Join(errSkipped, err)
			}
		}
		info, err := f.root.Lstat(p)
		switch {
		case notFound(err):
			return path.Join(names...), nil, nil
		case err != nil:
			return "", nil, err
		case info.Mode()&iofs.ModeSymlink != 0:
			return "", nil, errSkipped
		case i == len(segs)-1:
			return p, info, nil
		case !info.IsDir():
			return path.Join(names...), nil, nil // a path through a file: nothing there
		}
	}
	panic("unreachable")
}

// hasEntry reports whether the folder dir ("" = the root) has an entry named exactly name.
func (f *Files) hasEntry(dir, name string) (bool, error) {
	if dir == "" {
		dir = "."
	}
	d, err := f.root.Open(dir)
	if notFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return false, err
	}
	return slices.Contains(names, name), nil
}

// Read implements store.Files: the bytes at key, or store.ErrNotFound (also for a folder,
// and for a key through a symbolic link).
func (f *Files) Read(ctx context.Context, key string) ([]byte, error) {
	if err := store.CheckKey(ctx, key); err != nil {
		return nil, err
	}
	disk, info, err := f.locate(key)
	switch {
	case errors.Is(err, errSkipped), err == nil && (info == nil || !info.Mode().IsRegular()):
		return nil, fmt.Errorf("read %s: %w", key, store.ErrNotFound)
	case err != nil:
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	data, err := f.root.ReadFile(disk)
	if notFound(err) || errors.Is(err, syscall.EISDIR) {
		return nil, fmt.Errorf("read %s: %w", key, store.ErrNotFound)
	}
	return data, err
}

// Write implements store.Files: it atomically creates or replaces the file at key (a
// symbolic link at key itself is replaced, never followed).
func (f *Files) Write(ctx context.Context, key string, data []byte) error {
	disk, err := f.writable(ctx, key)
	if err != nil {
		return err
	}
	return f.publish(key, disk, data, func(tmp string) error { return f.root.Rename(tmp, disk) })
}

// WriteIfAbsent implements store.Files: it publishes data at key only if nothing is there
// (by hard-linking a complete temp file, so a reader never sees a partial file).
func (f *Files) WriteIfAbsent(ctx context.Context, key string, data []byte) (bool, error) {
	disk, err := f.writable(ctx, key)
	if err != nil {
		return false, err
	}
	wrote := true
	err = f.publish(key, disk, data, func(tmp string) error {
		err := f.root.Link(tmp, disk)
		if errors.Is(err, iofs.ErrExist) {
			wrote = false
			return nil
		}
		return err
	})
	return wrote && err == nil, err
}

// publish writes data to a fresh temp file beside disk (key's path), lets put move it
// there, removes what is left of the temp file and makes the directory entry durable.
// The dictionary entries of key's over-long segments are written first.
func (f *Files) publish(key, disk string, data []byte, put func(tmp string) error) error {
	if err := f.remember(key); err != nil {
		return fmt.Errorf("write %s: %w", key, err)
	}
	dir := path.Dir(disk)
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

// remember writes the dictionary entry of each of key's over-long segments (names.go).
func (f *Files) remember(key string) error {
	for seg := range strings.SplitSeq(key, "/") {
		if _, digest := fileName(seg); digest != "" {
			if err := f.root.MkdirAll(namesDir, 0o755); err != nil {
				return err
			}
			name := path.Join(namesDir, digest)
			if _, err := f.root.Lstat(name); err == nil {
				continue
			}
			if err := replaceAtomic(f.root, name, path.Join(namesDir, tempPrefix+rand.Text()), []byte(seg)); err != nil {
				return err
			}
		}
	}
	return nil
}

// Delete implements store.Files: it removes the file at key (store.ErrNotFound when there
// is none, or a folder, or a symbolic link) and then every folder the removal left empty.
func (f *Files) Delete(ctx context.Context, key string) error {
	disk, err := f.writable(ctx, key)
	if errors.Is(err, ErrSymlink) {
		return fmt.Errorf("delete %s: %w", key, store.ErrNotFound)
	}
	if err != nil {
		return err
	}
	info, err := f.root.Lstat(disk)
	if notFound(err) || err == nil && !info.Mode().IsRegular() {
		return fmt.Errorf("delete %s: %w", key, store.ErrNotFound)
	}
	if err == nil {
		err = f.root.Remove(disk)
	}
	if err != nil {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	for dir := path.Dir(disk); dir != "."; dir = path.Dir(dir) {
		if f.root.Remove(dir) != nil {
			break // not empty (or already gone): its ancestors are not empty either
		}
	}
	return nil
}

// List implements store.Files: the files and folders directly in the folder prefix ("" =
// root; a trailing slash is allowed), sorted by name, with file sizes in bytes. Symbolic
// links are skipped, as are entries that are neither regular files nor directories and, in
// the store's own tree, names that are no key's encoding (temp files, the dictionary).
func (f *Files) List(ctx context.Context, prefix string) ([]store.FileInfo, error) {
	dir := strings.TrimSuffix(prefix, "/")
	if dir == "" {
		dir = "."
	} else {
		if err := store.CheckKey(ctx, dir); err != nil {
			return nil, err
		}
		disk, info, err := f.locate(dir)
		switch {
		case errors.Is(err, errSkipped), err == nil && (info == nil || !info.IsDir()):
			return nil, nil
		case err != nil:
			return nil, fmt.Errorf("list %s: %w", prefix, err)
		}
		dir = disk
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
	for _, e := range entries {
		if e.Type()&iofs.ModeSymlink != 0 || !e.IsDir() && !e.Type().IsRegular() {
			continue
		}
		name := e.Name()
		if !f.readOnly {
			var ok bool
			if name, ok = f.keyName(name); !ok {
				continue
			}
		}
		if e.IsDir() {
			out = append(out, store.FileInfo{Name: name, Dir: true})
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // gone meanwhile
		}
		out = append(out, store.FileInfo{Name: name, Size: info.Size()})
	}
	slices.SortFunc(out, func(a, b store.FileInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// keyName is the key segment an entry of the store's own tree is named for: the segment its
// name encodes, or the dictionary's entry for an over-long one; ok is false for any other name.
func (f *Files) keyName(name string) (string, bool) {
	if digest, ok := hashedDigest(name); ok {
		seg, err := f.root.ReadFile(path.Join(namesDir, digest))
		if err != nil {
			return "", false
		}
		return string(seg), true
	}
	return decodeName(name)
}

// Stat implements store.Files: the file at key, else the folder key (a trailing slash
// asks for a folder only), else store.ErrNotFound.
func (f *Files) Stat(ctx context.Context, key string) (*store.FileInfo, error) {
	name, wantDir := strings.CutSuffix(key, "/")
	if err := store.CheckKey(ctx, name); err != nil {
		return nil, err
	}
	_, info, err := f.locate(name)
	switch {
	case errors.Is(err, errSkipped), err == nil && info == nil:
	case err != nil:
		return nil, fmt.Errorf("stat %s: %w", key, err)
	case info.IsDir():
		return &store.FileInfo{Name: path.Base(name), Dir: true}, nil
	case info.Mode().IsRegular() && !wantDir:
		return &store.FileInfo{Name: path.Base(name), Size: info.Size()}, nil
	}
	return nil, fmt.Errorf("stat %s: %w", key, store.ErrNotFound)
}

// writable checks a key for a write or a delete and returns its path in the directory:
// ErrInvalidKey, ErrReadOnly, or ErrSymlink when a folder on the way is a symbolic link.
func (f *Files) writable(ctx context.Context, key string) (string, error) {
	if err := store.CheckKey(ctx, key); err != nil {
		return "", err
	}
	if f.readOnly {
		return "", fmt.Errorf("write %s: %w", key, ErrReadOnly)
	}
	disk, _, err := f.locate(key)
	if errors.Is(err, errSkipped) {
		// a link at the key itself is replaced by a write (renames never follow links)
		if parent := path.Dir(key); parent == "." || f.throughLink(parent) == nil {
			return diskPath(key), nil
		}
		return "", fmt.Errorf("write %s: %w", key, ErrSymlink)
	}
	if err != nil {
		return "", fmt.Errorf("write %s: %w", key, err)
	}
	return disk, nil
}

// throughLink is nil when no existing folder of the key prefix dir is a symbolic link.
func (f *Files) throughLink(dir string) error {
	_, _, err := f.locate(dir)
	return err
}

// diskPath is key's path in the store's own tree.
func diskPath(key string) string {
	var names []string
	for seg := range strings.SplitSeq(key, "/") {
		name, _ := fileName(seg)
		names = append(names, name)
	}
	return path.Join(names...)
}

// notFound reports whether err means nothing is at the path (including a path that runs
// through a file, as "a.txt/b").
func notFound(err error) bool {
	return errors.Is(err, iofs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}
