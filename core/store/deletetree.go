package store

import (
	"context"
	"errors"
	"strings"
)

// FolderDeleter is a Files that removes a whole folder in one pass (the S3 store:
// ListObjectsV2 + DeleteObjects), returning how many files it removed.
type FolderDeleter interface {
	DeleteFolder(ctx context.Context, folder string) (int, error)
}

// DeleteTree removes every file under the folder prefix ("<prefix>/…", at any depth; a
// missing folder is no error) through the Files port — with one DeleteFolder when files is a
// FolderDeleter, else a List and a Delete per file. Nothing outside the folder is touched:
// "s1" never reaches "s10/…". A file that vanishes meanwhile is no error; a store that
// cannot delete answers ErrUnsupported.
func DeleteTree(ctx context.Context, files Files, prefix string) error {
	prefix = strings.TrimSuffix(prefix, "/")
	if err := CheckKey(ctx, prefix); err != nil {
		return err
	}
	if fd, ok := files.(FolderDeleter); ok {
		_, err := fd.DeleteFolder(ctx, prefix)
		return err
	}
	entries, err := files.List(ctx, prefix)
	if err != nil {
		return err
	}
	for _, e := range entries {
		key := prefix + "/" + e.Name
		if e.Dir {
			if err := DeleteTree(ctx, files, key); err != nil {
				return err
			}
			continue
		}
		if err := files.Delete(ctx, key); err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
	}
	return nil
}
