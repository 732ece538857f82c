package fs

import "path/filepath"

// DiskPath is where the file tree OpenFiles opened at dir keeps key: dir joined with each
// segment's portable name (names.go) — for telling a person where a session's file lies.
func DiskPath(dir, key string) string { return filepath.Join(dir, filepath.FromSlash(diskPath(key))) }
