package memory

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/archmax-ai/archmax/core/store"
)

// ErrInvalidKey is returned (wrapped, with the key) for a key that is empty, absolute,
// has an empty, "." or ".." segment, or contains a NUL byte.
var ErrInvalidKey = store.ErrInvalidKey

// Files is an in-memory store.Files. The zero value is not usable; call NewFiles.
type Files struct {
	mu    sync.Mutex
	files map[string][]byte
}

var _ store.Files = (*Files)(nil)

// NewFiles returns an empty file tree.
func NewFiles() *Files { return &Files{files: map[string][]byte{}} }

// Read implements store.Files: a copy of the bytes at key, or store.ErrNotFound.
func (f *Files) Read(ctx context.Context, key string) ([]byte, error) {
	if err := store.CheckKey(ctx, key); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	data, ok := f.files[key]
	if !ok {
		return nil, fmt.Errorf("read %s: %w", key, store.ErrNotFound)
	}
	return append([]byte{}, data...), nil
}

// Write implements store.Files: it stores a copy of data at key.
func (f *Files) Write(ctx context.Context, key string, data []byte) error {
	if err := store.CheckKey(ctx, key); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.files[key] = append([]byte{}, data...)
	return nil
}

// WriteIfAbsent implements store.Files: it stores a copy of data only if key is free.
func (f *Files) WriteIfAbsent(ctx context.Context, key string, data []byte) (bool, error) {
	if err := store.CheckKey(ctx, key); err != nil {
		return false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.files[key]; ok {
		return false, nil
	}
	f.files[key] = append([]byte{}, data...)
	return true, nil
}

// Delete implements store.Files: it removes the file at key, or returns store.ErrNotFound.
func (f *Files) Delete(ctx context.Context, key string) error {
	if err := store.CheckKey(ctx, key); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.files[key]; !ok {
		return fmt.Errorf("delete %s: %w", key, store.ErrNotFound)
	}
	delete(f.files, key)
	return nil
}

// List implements store.Files: the direct children of the folder prefix ("" = root; a
// trailing slash is allowed), sorted by name.
func (f *Files) List(ctx context.Context, prefix string) ([]store.FileInfo, error) {
	dir, err := folder(ctx, prefix)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	seen := map[string]bool{}
	var out []store.FileInfo
	for key, data := range f.files {
		rest, ok := strings.CutPrefix(key, dir)
		if !ok {
			continue
		}
		name, _, isDir := strings.Cut(rest, "/")
		if seen[name] {
			continue
		}
		seen[name] = true
		info := store.FileInfo{Name: name, Dir: isDir}
		if !isDir {
			info.Size = int64(len(data))
		}
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b store.FileInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Stat implements store.Files: the file at key, else the folder key (a trailing slash
// asks for a folder only), else store.ErrNotFound.
func (f *Files) Stat(ctx context.Context, key string) (*store.FileInfo, error) {
	name, wantDir := strings.CutSuffix(key, "/")
	if err := store.CheckKey(ctx, name); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	base := name[strings.LastIndexByte(name, '/')+1:]
	if data, ok := f.files[name]; ok && !wantDir {
		return &store.FileInfo{Name: base, Size: int64(len(data))}, nil
	}
	for k := range f.files {
		if strings.HasPrefix(k, name+"/") {
			return &store.FileInfo{Name: base, Dir: true}, nil
		}
	}
	return nil, fmt.Errorf("stat %s: %w", key, store.ErrNotFound)
}

// folder validates a List prefix and returns it with exactly one trailing slash ("" for
// the root).
func folder(ctx context.Context, prefix string) (string, error) {
	prefix = strings.TrimSuffix(prefix, "/")
	if prefix == "" {
		return "", ctx.Err()
	}
	if err := store.CheckKey(ctx, prefix); err != nil {
		return "", err
	}
	return prefix + "/", nil
}
