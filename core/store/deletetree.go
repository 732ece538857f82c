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
	_, err := DeleteTreeCount(ctx, files, prefix)
	return err
}

// DeleteTreeCount is DeleteTree reporting how many files it removed.
func DeleteTreeCount(ctx context.Context, files Files, prefix string) (int, error) {
	prefix = strings.TrimSuffix(prefix, "/")
	if err := CheckKey(ctx, prefix); err != nil {
		return 0, err
	}
	if fd, ok := files.(FolderDeleter); ok {
		return fd.DeleteFolder(ctx, prefix)
	}
	entries, err := files.List(ctx, prefix)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range entries {
		key := prefix + "/" + e.Name
		if e.Dir {
			m, err := DeleteTreeCount(ctx, files, key)
			n += m
			if err != nil {
				return n, err
			}
			continue
		}
		switch err := files.Delete(ctx, key); {
		case err == nil:
			n++
		case !errors.Is(err, ErrNotFound):
			return n, err
		}
	}
	return n, nil
}
