package workspace

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/archmax-ai/archmax/core/store"
)

// entry is one child in the merged namespace.
type entry struct {
	path string // canonical workspace path
	dir  bool
	size int64 // bytes; 0 for folders or unknown
}

// join returns the canonical path of child name in folder p.
func join(p, name string) string {
	if p == "" {
		return name
	}
	return p + "/" + name
}

// children lists the direct children of folder p in the merged namespace, ascending by
// path: the entries of the tree serving p, with the entries a mount shadows replaced by
// the mount (a mount root, or the first folder of a nested mount name), without the
// authoring plane, the runtime-internal areas or redacted entries. A path nothing serves,
// a file and a missing folder all have no children.
func (w *Workspace) children(ctx context.Context, p string) ([]entry, error) {
	var out []entry
	r, ok := w.route(p, false)
	if ok && (r.mount == nil || !r.mount.File) {
		infos, err := r.files.List(ctx, r.key)
		if err != nil {
			return nil, err
		}
		for _, fi := range infos {
			c := join(p, fi.Name)
			if m, _ := w.MountOf(c); m != r.mount {
				continue // served by a nested mount: listed below
			}
			if r.mount == nil && p == "" && closedRoot(fi.Name, false) {
				continue
			}
			out = append(out, entry{path: c, dir: fi.Dir, size: fi.Size})
		}
	}
	for i := range w.mounts {
		m := &w.mounts[i]
		rest, ok := strings.CutPrefix(m.Name, p)
		if p != "" && (!ok || !strings.HasPrefix(rest, "/")) {
			continue
		}
		seg, deeper, _ := strings.Cut(strings.TrimPrefix(rest, "/"), "/")
		e := entry{path: join(p, seg), dir: true}
		if m.File && deeper == "" {
			fi, err := m.Files.Stat(ctx, m.key(""))
			if errors.Is(err, store.ErrNotFound) {
				continue // an exact-file mount over a missing file shows nothing
			}
			if err != nil {
				return nil, err
			}
			e = entry{path: e.path, size: fi.Size}
		}
		if !slices.ContainsFunc(out, func(o entry) bool { return o.path == e.path }) {
			out = append(out, e)
		}
	}
	out = slices.DeleteFunc(out, func(e entry) bool { return w.hidden(ctx, e.path, e.dir) })
	slices.SortFunc(out, func(a, b entry) int { return strings.Compare(a.path, b.path) })
	return out, nil
}

// walk visits the files below folder p depth-first (each folder's children ascending),
// descending at most levels folder levels (levels < 0: unlimited; 1: p's own children).
// Folders entering an unsearchable mount are skipped (GOV-58).
func (w *Workspace) walk(ctx context.Context, p string, levels int, visit func(entry)) error {
	es, err := w.children(ctx, p)
	if err != nil {
		return err
	}
	for _, e := range es {
		if !e.dir {
			visit(e)
			continue
		}
		if levels == 1 {
			continue
		}
		if m, ok := w.MountOf(e.path); ok && m.Unsearchable && m.Name == e.path {
			continue
		}
		next := levels
		if next > 0 {
			next--
		}
		if err := w.walk(ctx, e.path, next, visit); err != nil {
			return err
		}
	}
	return nil
}
