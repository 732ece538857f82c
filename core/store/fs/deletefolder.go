package fs

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	iofs "io/fs"
	"path"
	"strings"

	"github.com/archmax-ai/archmax/core/store"
)

// trashName is the folder at the tree's root that DeleteFolder moves a folder into before
// removing it (RD22-21). It is no encoded name ('t' is not a hex digit), so listings never
// show it; OpenFiles removes whatever a removal cut short left there.
const trashName = "%trash"

var _ store.FolderDeleter = (*Files)(nil)

// DeleteFolder implements store.FolderDeleter (store.DeleteTree's fast path, RD22-21): it
// renames the folder into the tree's trash in one step — from then on nothing of it is
// readable or listed, however the removal ends — then counts and removes it, the folders the
// move left empty, and the dictionary entries (names.go) of the over-long names in it that
// contain the folder's own name: a long session id, and any name built from it, does not
// outlive the session. Other long names stay (content-addressed, another key may share one).
// A missing folder, a file or a symbolic link at its key is (0, nil): nothing is under it.
func (f *Files) DeleteFolder(ctx context.Context, folder string) (int, error) {
	folder = strings.TrimSuffix(folder, "/")
	disk, err := f.writable(ctx, folder)
	if errors.Is(err, ErrSymlink) {
		return 0, nil // a link on the way: the tree holds nothing there
	}
	if err != nil {
		return 0, err
	}
	info, err := f.root.Lstat(disk)
	if notFound(err) || err == nil && !info.IsDir() {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("delete %s/: %w", folder, err)
	}
	if err := f.root.MkdirAll(trashName, 0o755); err != nil {
		return 0, fmt.Errorf("delete %s/: %w", folder, err)
	}
	trash := path.Join(trashName, rand.Text())
	if err := f.root.Rename(disk, trash); err != nil {
		return 0, fmt.Errorf("delete %s/: %w", folder, err)
	}
	for dir := path.Dir(disk); dir != "."; dir = path.Dir(dir) {
		if f.root.Remove(dir) != nil {
			break // not empty: its ancestors are not either
		}
	}
	own := path.Base(folder)
	digests := map[string]bool{}
	if _, d := fileName(own); d != "" {
		digests[d] = true
	}
	n := 0
	_ = iofs.WalkDir(f.root.FS(), trash, func(p string, e iofs.DirEntry, err error) error {
		if err != nil {
			return nil // counted as far as it can be
		}
		if d, ok := hashedDigest(e.Name()); ok {
			if seg, err := f.root.ReadFile(path.Join(namesDir, d)); err == nil && strings.Contains(string(seg), own) {
				digests[d] = true
			}
		}
		if e.Type().IsRegular() && !strings.HasPrefix(e.Name(), tempPrefix) {
			n++
		}
		return nil
	})
	if err := f.root.RemoveAll(trash); err != nil {
		return n, fmt.Errorf("delete %s/: %w", folder, err)
	}
	for d := range digests {
		if err := f.root.Remove(path.Join(namesDir, d)); err != nil && !notFound(err) {
			return n, fmt.Errorf("delete %s/: its name record: %w", folder, err)
		}
	}
	return n, nil
}

// sweepTrash removes what DeleteFolder left in the trash (a removal cut short).
func (f *Files) sweepTrash() {
	if entries, err := iofs.ReadDir(f.root.FS(), trashName); err == nil {
		for _, e := range entries {
			f.root.RemoveAll(path.Join(trashName, e.Name()))
		}
	}
}
