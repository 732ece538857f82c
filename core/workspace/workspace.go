// Package workspace is the agent's file workspace (spec 01 §1.8, 02 §9.1), the
// model-facing built-in file tools over it (spec 03 §5.5: BR-20, BR-40…BR-49), the runtime
// file tools copy_file, move_file and remove_file (BR-22), the placement of turn files
// (02 §1.8: PlaceAttachment) and the offloading of oversized tool results (Offload).
//
// The workspace is one merged namespace of canonical, slash-separated paths without a
// leading slash ("" is the root):
//   - the session's own folder at the root: path p is store key "<sessionId>/p" in the
//     session-files tree (GOV-56); the session id never appears in anything a tool returns;
//   - authored mounts served from other trees (DefaultMounts: skills/, .platform/ and the
//     exact-file mount AGENTS.md, all read-only).
//
// The authoring plane (workflows/**) has no route: reads find nothing and listings never
// show it (GOV-21). The runtime-internal session areas (checkpoints/, artifacts/, _specs/,
// and the S3 store's _blobs/) are never listed and not reachable through the tools
// (GOV-24, BR-49). Governance is not decided here: the engine asks the kernel before
// calling a tool.
package workspace

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/store"
)

// Mount serves part of the workspace from another file tree (spec 01 §1.1, 03 GOV-49).
type Mount struct {
	// Name is the mount key without leading or trailing slashes: "skills", ".platform",
	// "AGENTS.md", "catalogs/eu".
	Name string
	// File marks an exact-file mount (AGENTS.md): only the path Name itself is served.
	File bool
	// Files is the backing tree.
	Files store.Files
	// Prefix is the key in Files the mount's root maps to. "" means Name itself: a directory
	// mount serves path Name+"/rest" from key Name+"/rest", a file mount serves key Name.
	Prefix string
	// ReadOnly refuses writes through the mount (GOV-23; the kernel refuses them first).
	ReadOnly bool
	// Governed marks a host mount declared `governed: true` (GOV-45): the kernel enables it
	// per state and listings are redacted through Hide (GOV-48). The workspace itself serves
	// a governed mount like any other.
	Governed bool
	// Unsearchable excludes the mount from glob and grep rooted above it (GOV-58); a search
	// addressed at the mount or inside it still reaches it. Ignored for a file mount.
	Unsearchable bool
}

// DefaultMounts returns the authored mounts of spec 01 §1.1 over the authored tree:
// skills/ and .platform/ (directory mounts) and AGENTS.md (exact-file mount), read-only,
// each at the same relative key (skills/x/SKILL.md → authored key skills/x/SKILL.md).
func DefaultMounts(authored store.Files) []Mount {
	return []Mount{
		{Name: "skills", Files: authored, ReadOnly: true},
		{Name: ".platform", Files: authored, ReadOnly: true},
		{Name: "AGENTS.md", File: true, Files: authored, ReadOnly: true},
	}
}

// authoringPrefix is the authoring plane: no route serves it (spec 01 §1.8, GOV-21).
const authoringPrefix = "workflows"

// internalAreas are the session's runtime-internal root folders (02 §9.1, GOV-24) plus the
// S3 store's large-value area (BR-49): never listed, unreachable through the tools.
var internalAreas = []string{"checkpoints", "artifacts", "_specs", "_blobs"}

// closedRoot reports whether a root entry of the session's folder is one the tools never
// route to nor list: the authoring plane or (unless internal) a runtime-internal area —
// matched ignoring case (spec.ReservedName), as the kernel's zones are, so "Checkpoints/x"
// never reaches what a case-insensitive store would alias with checkpoints/.
//
// The host file's name (spec.HostFile) is closed the same way: the host configuration is
// authoring material, and nothing in a session's folder may take its name.
func closedRoot(first string, internal bool) bool {
	return spec.ReservedName(first, authoringPrefix, spec.HostFile) || (!internal && spec.ReservedName(first, internalAreas...))
}

var (
	// ErrNoRoute is returned by WriteFile for a path nothing serves (the authoring plane,
	// a path below an exact-file mount, the workspace root).
	ErrNoRoute = errors.New("workspace: no route serves this path")
	// ErrReadOnly is returned by WriteFile for a path under a read-only mount.
	ErrReadOnly = errors.New("workspace: path is served by a read-only mount")
)

// PathEscapeError reports a path that climbs above the workspace root (GOV-30, GOV-56;
// spec 01 §1.8 "refused before any backend is consulted").
type PathEscapeError struct {
	Path string // the path as given
}

// Name is the reference's error name.
func (e *PathEscapeError) Name() string { return "WorkspacePathEscapeError" }

func (e *PathEscapeError) Error() string {
	return pathEscape(e.Path)
}

// Canonicalize returns the canonical workspace path of p (GOV-30, GOV-56): backslashes
// read as '/', leading '/' stripped, '.' and empty segments dropped, '..' applied.
// "" is the root. A path climbing above the root returns *PathEscapeError. It agrees
// with the kernel's canonicalisation, so governance and routing see the same path.
func Canonicalize(p string) (string, error) {
	s := strings.ReplaceAll(p, "\\", "/")
	if !needsCleaning(s) {
		return s, nil
	}
	var out []string
	for seg := range strings.SplitSeq(s, "/") {
		switch seg {
		case "", ".":
		case "..":
			if len(out) == 0 {
				return "", &PathEscapeError{Path: p}
			}
			out = out[:len(out)-1]
		default:
			out = append(out, seg)
		}
	}
	return strings.Join(out, "/"), nil
}

// needsCleaning reports whether p has a leading or trailing slash, an empty, "." or ".."
// segment — the fast path for paths already canonical.
func needsCleaning(p string) bool {
	if p == "" {
		return false
	}
	if p[0] == '/' || p[len(p)-1] == '/' || strings.Contains(p, "//") {
		return true
	}
	for seg := range strings.SplitSeq(p, "/") {
		if seg == "." || seg == ".." {
			return true
		}
	}
	return false
}

// Workspace is one session's view of its files and the mounts (spec 01 §1.8). Its tools
// are safe for concurrent use; Hide must be called before the workspace is shared.
type Workspace struct {
	session   store.Files
	sessionID string
	mounts    []Mount
	hide      func(path string, dir bool) bool
}

// New returns the workspace of session sessionID: its own files at keys
// "<sessionID>/<path>" in sessionFiles, plus mounts (GOV-49: a path belongs to the
// longest matching mount). Mount names are expected to be valid and collision-free
// (the assembly checks GOV-59).
func New(sessionFiles store.Files, sessionID string, mounts []Mount) *Workspace {
	return &Workspace{session: sessionFiles, sessionID: sessionID, mounts: slices.Clone(mounts)}
}

// Hide installs listing redaction (GOV-41, GOV-48, BR-31): entries for which
// hide(path, dir) is true are dropped from ls, glob and grep results. path is canonical
// ("skills/x", "skills/x/SKILL.md"); a hidden folder is not descended into.
func (w *Workspace) Hide(hide func(path string, dir bool) bool) { w.hide = hide }

// hidden reports whether a listing made with ctx leaves path out: the workspace's own
// redaction (Hide), then the call's (WithHide) for what the listing would reveal of it.
func (w *Workspace) hidden(ctx context.Context, path string, dir bool) bool {
	if w.hide != nil && w.hide(path, dir) {
		return true
	}
	h, ok := ctx.Value(hideKey{}).(HideFunc)
	if !ok {
		return false
	}
	reveal := RevealName
	if !dir && ctx.Value(contentKey{}) != nil {
		reveal = RevealContent
	}
	return h(path, dir, reveal)
}

// Reveal is what a listing would hand the caller of an entry: its name (ls, glob, and every
// folder a search walks) or its content (grep's files).
type Reveal int

const (
	RevealName Reveal = iota
	RevealContent
)

// HideFunc reports whether a listing must leave out the entry at canonical path (dir: a
// folder, which is then not descended into) for what it would reveal of it.
type HideFunc func(path string, dir bool, reveal Reveal) bool

type hideKey struct{}
type contentKey struct{}

// WithHide returns ctx carrying a call's listing redaction: ls, glob and grep made with it
// drop every entry hide refuses (03 GOV-35, GOV-41, GOV-48 — the session asks its kernel
// whether an ls, for a name, or a read_file, for content, of that exact path would be
// allowed).
func WithHide(ctx context.Context, hide HideFunc) context.Context {
	return context.WithValue(ctx, hideKey{}, hide)
}

// MountOf returns the mount serving the canonical path: the longest directory mount whose
// name equals or prefixes it at a '/' boundary, or the exact-file mount named by it.
func (w *Workspace) MountOf(canonical string) (*Mount, bool) {
	var best *Mount
	for i := range w.mounts {
		m := &w.mounts[i]
		if m.File {
			if canonical == m.Name {
				return m, true
			}
			continue
		}
		if underOrAt(canonical, m.Name) && (best == nil || len(m.Name) > len(best.Name)) {
			best = m
		}
	}
	return best, best != nil
}

// underOrAt reports whether p equals dir or lies below it.
func underOrAt(p, dir string) bool {
	return p == dir || (len(p) > len(dir) && p[len(dir)] == '/' && strings.HasPrefix(p, dir))
}

// key returns the key in m.Files of the mount-relative rest ("" for the mount's root or
// its file, else "/"-prefixed).
func (m *Mount) key(rest string) string {
	base := strings.TrimSuffix(m.Prefix, "/")
	if base == "" {
		base = m.Name
	}
	return base + rest
}

// route is where a canonical path lives: a key in a file tree, and the mount serving it
// (nil for the session's own folder).
type route struct {
	files store.Files
	key   string
	mount *Mount
}

// route resolves a canonical path. ok is false when nothing serves it: the authoring plane,
// a path below an exact-file mount, and — unless internal — the runtime-internal areas.
func (w *Workspace) route(p string, internal bool) (r route, ok bool) {
	if m, ok := w.MountOf(p); ok {
		return route{files: m.Files, key: m.key(p[len(m.Name):]), mount: m}, true
	}
	first, _, _ := strings.Cut(p, "/")
	if closedRoot(first, internal) {
		return route{}, false
	}
	for i := range w.mounts {
		if w.mounts[i].File && strings.HasPrefix(p, w.mounts[i].Name+"/") {
			return route{}, false
		}
	}
	if p == "" {
		return route{files: w.session, key: w.sessionID}, true
	}
	return route{files: w.session, key: w.sessionID + "/" + p}, true
}

// ReadFile returns the bytes at a workspace path for the engine (not governed here; the
// runtime-internal session areas are reachable). The path is canonicalised first
// (*PathEscapeError). A path nothing serves, a folder or a missing file wraps
// store.ErrNotFound.
func (w *Workspace) ReadFile(ctx context.Context, canonical string) ([]byte, error) {
	p, err := Canonicalize(canonical)
	if err != nil {
		return nil, err
	}
	r, ok := w.route(p, true)
	if !ok || p == "" {
		return nil, fmt.Errorf("workspace: read %q: %w", p, store.ErrNotFound)
	}
	data, err := r.files.Read(ctx, r.key)
	if err != nil {
		return nil, fmt.Errorf("workspace: read %q: %w", p, err)
	}
	return data, nil
}

// WriteFile creates or replaces the file at a workspace path for the engine (not governed
// here; folders are implicit). Errors: *PathEscapeError, ErrNoRoute, ErrReadOnly, or the
// store's error wrapped.
func (w *Workspace) WriteFile(ctx context.Context, canonical string, data []byte) error {
	p, err := Canonicalize(canonical)
	if err != nil {
		return err
	}
	r, ok := w.route(p, true)
	switch {
	case !ok || p == "":
		return fmt.Errorf("workspace: write %q: %w", p, ErrNoRoute)
	case r.mount != nil && r.mount.ReadOnly:
		return fmt.Errorf("workspace: write %q: %w", p, ErrReadOnly)
	}
	if err := r.files.Write(ctx, r.key, data); err != nil {
		return fmt.Errorf("workspace: write %q: %w", p, err)
	}
	return nil
}
