package hostconfig

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/archmax-ai/archmax/core/spec"
)

// The local checks of a mount's dir: what local runs (local/runner: archmax run, test,
// serve) refuse a mount's directory for, and `archmax validate` reports — one source, as
// checks.go is for the tool kinds. The dir is resolved (made absolute against the workspace
// root, every symbolic link evaluated) before it is compared, with the workspace root, its
// own entries and the session store resolved alike: a link never carries a mount into what
// no mount may serve, and what is checked is what is opened.

// CodeMountDir is a mount's dir this machine cannot serve: none given (an s3-only mount), or
// one that does not exist or cannot be read. `archmax validate` reports it as an error, or
// as a warning when the mount has an s3 location the deployed functions serve.
const CodeMountDir = "host.mount-dir"

// DefaultStoreDir is the session store local runs keep in the workspace root when --store
// names none.
const DefaultStoreDir = ".archmax"

// DotenvFile is the environment file the CLI loads from the workspace root (secrets).
const DotenvFile = ".env"

// WorkspaceEntries are the workspace root's entries no mount dir may be, lie in or hold:
// the authoring plane (workflows/), the default mounts the runtime serves itself (skills/,
// .platform/, AGENTS.md), the host file, the CLI's .env and the default session store.
var WorkspaceEntries = append(append([]string{spec.AuthoringPrefix}, spec.DefaultMountRoots...), File, DotenvFile, DefaultStoreDir)

// LocalRoots are what a local mount's dir is resolved against and kept out of.
type LocalRoots struct {
	Workspace string // the workspace root (relative to the working directory, or absolute)
	Store     string // the run's session store dir beside the default .archmax/ ("": none)
}

// LocalDir is a mount's dir as local runs serve it.
type LocalDir struct {
	Path string      // absolute, every link evaluated: what is opened
	Info os.FileInfo // its Stat
}

// LocalMountProblem resolves m's dir and says why local runs refuse it (nil when they serve
// it), first problem only: no dir (CodeMountDir, Field ""); a dir that is the workspace or
// holds it, lies in or holds one of its WorkspaceEntries, or overlaps the session store
// (CodeMount, "dir"); a dir that does not exist or cannot be read (CodeMountDir, "dir"); a
// folder under 'file: true' ("file"), a file without it ("dir"), a writable file mount
// ("readOnly"). Paths are compared ignoring case (a case-insensitive file system serves
// ./Workflows as ./workflows).
func LocalMountProblem(m MountDecl, roots LocalRoots) (LocalDir, *Problem) {
	if m.Dir == "" {
		return LocalDir{}, &Problem{CodeMountDir, "", "it has no dir: local runs (archmax run, test, serve) serve mounts from a directory", hintMountNoDir}
	}
	wsAbs, err := filepath.Abs(roots.Workspace)
	if err != nil {
		return LocalDir{}, &Problem{CodeMountDir, "dir", fmt.Sprintf("the workspace root %s: %v", roots.Workspace, err), hintMountDirMissing}
	}
	ws, err := resolve(wsAbs)
	if err != nil {
		return LocalDir{}, &Problem{CodeMountDir, "dir", fmt.Sprintf("the workspace root %s cannot be resolved: %v", roots.Workspace, err), hintMountDirMissing}
	}
	raw := m.Dir
	if !filepath.IsAbs(raw) {
		raw = filepath.Join(wsAbs, raw)
	}
	dir, err := resolve(filepath.Clean(raw))
	if err != nil {
		return LocalDir{}, &Problem{CodeMountDir, "dir", fmt.Sprintf("dir %s cannot be resolved: %v", m.Dir, err), hintMountDirMissing}
	}
	named := m.Dir
	if filepath.Clean(raw) != dir {
		named = fmt.Sprintf("%s (%s, its links followed)", m.Dir, dir)
	}
	if within(ws, dir) {
		return LocalDir{}, &Problem{CodeMount, "dir", fmt.Sprintf("dir %s holds the workspace, whose workflows/, %s and session store no mount may serve", named, File), hintMountDirPlace}
	}
	for _, e := range WorkspaceEntries {
		entry, err := resolve(filepath.Join(ws, e))
		if err != nil {
			entry = filepath.Join(ws, e)
		}
		for _, at := range []string{filepath.Join(ws, e), entry} {
			how := ""
			switch {
			case within(dir, at) && within(at, dir):
				how = "is"
			case within(dir, at):
				how = "lies in"
			case within(at, dir):
				how = "holds"
			default:
				continue
			}
			return LocalDir{}, &Problem{CodeMount, "dir", fmt.Sprintf("dir %s %s the workspace's %s, which %s", named, how, entryName(e), entryWhy(e)), hintMountDirPlace}
		}
	}
	if roots.Store != "" {
		if abs, err := filepath.Abs(roots.Store); err == nil {
			store, err := resolve(abs)
			if err != nil {
				store = abs
			}
			if within(dir, store) || within(store, dir) {
				return LocalDir{}, &Problem{CodeMount, "dir", fmt.Sprintf("dir %s overlaps the session store %s, which holds every session's files", named, roots.Store), hintMountDirPlace}
			}
		}
	}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return LocalDir{}, &Problem{CodeMountDir, "dir", fmt.Sprintf("dir %s does not exist", named), hintMountDirMissing}
	case err != nil:
		return LocalDir{}, &Problem{CodeMountDir, "dir", fmt.Sprintf("dir %s cannot be read: %v", named, err), hintMountDirMissing}
	case m.File && fi.IsDir():
		return LocalDir{}, &Problem{CodeMount, "file", fmt.Sprintf("dir %s is a folder; a file mount names one file", named), hintMountFileFolder}
	case !m.File && !fi.IsDir():
		return LocalDir{}, &Problem{CodeMount, "dir", fmt.Sprintf("dir %s is a file: say 'file: true' to mount one file", named), hintMountFolderFile}
	case m.File && !m.ReadOnly:
		return LocalDir{}, &Problem{CodeMount, "readOnly", "a local file mount is read-only (readOnly: false is for folders)", hintMountFileWritable}
	}
	if real, err := filepath.EvalSymlinks(dir); err != nil || real != dir {
		return LocalDir{}, &Problem{CodeMountDir, "dir", fmt.Sprintf("dir %s cannot be resolved", named), hintMountDirMissing}
	}
	return LocalDir{Path: dir, Info: fi}, nil
}

// LocalMountDiagnostics are the local checks of every mount of cfg (LocalMountProblem), each
// located at the field it names, for `archmax validate`: errors, except a CodeMountDir
// finding of a mount that also has an s3 location, which is a warning (the deployed
// functions serve it; only local runs on this machine refuse it). Mounts with findings of
// their own in parsed (Parse's) are skipped.
func LocalMountDiagnostics(cfg *Config, parsed []spec.Diagnostic, roots LocalRoots) []spec.Diagnostic {
	if cfg == nil {
		return nil
	}
	var out []spec.Diagnostic
	for i, m := range cfg.Mounts {
		field := idx("mounts", i)
		if m.Name == "" || hasFinding(parsed, field) {
			continue
		}
		_, p := LocalMountProblem(m, roots)
		if p == nil {
			continue
		}
		sev := "error"
		if p.Code == CodeMountDir && m.S3 != "" {
			sev = "warning"
		}
		line, col := m.At(p.Field)
		if p.Field != "" {
			field = join(field, p.Field)
		}
		out = append(out, spec.Diagnostic{Severity: sev, Code: p.Code, Field: field, File: File, Line: line, Column: col,
			Message: fmt.Sprintf("mount '%s': %s", m.Name, p.Message), Hint: p.Hint})
	}
	return out
}

func hasFinding(diags []spec.Diagnostic, field string) bool {
	for _, d := range diags {
		if d.Field == field || strings.HasPrefix(d.Field, field+".") {
			return true
		}
	}
	return false
}

// entryName is a workspace entry as the messages name it: a folder with its '/'.
func entryName(e string) string {
	switch e {
	case File, DotenvFile, "AGENTS.md":
		return e
	}
	return e + "/"
}

func entryWhy(e string) string {
	switch e {
	case spec.AuthoringPrefix:
		return "is the authoring plane no agent may read"
	case File:
		return "is the deployment's, reachable by no agent"
	case DotenvFile:
		return "holds the CLI's environment (secrets)"
	case DefaultStoreDir:
		return "is the session store (every session's files)"
	}
	return "the runtime serves itself"
}

// resolve makes the absolute path p real: every symbolic link evaluated; for a path that
// is not there, its longest existing parent's (what would be created is below it) — a
// dangling link resolved to where its target would be.
func resolve(p string) (string, error) { return resolveDepth(p, 0) }

func resolveDepth(p string, depth int) (string, error) {
	if depth > 64 {
		return "", fmt.Errorf("%s: too many links", p)
	}
	r, err := filepath.EvalSymlinks(p)
	if err == nil {
		return r, nil
	}
	parent := filepath.Dir(p)
	if fi, lerr := os.Lstat(p); lerr == nil {
		if fi.Mode()&fs.ModeSymlink == 0 {
			return "", err // it is there, but a link on the way does not resolve (a denied read)
		}
		target, rerr := os.Readlink(p)
		if rerr != nil {
			return "", rerr
		}
		if !filepath.IsAbs(target) {
			if parent, err = resolveDepth(parent, depth+1); err != nil {
				return "", err
			}
			target = filepath.Join(parent, target)
		}
		return resolveDepth(filepath.Clean(target), depth+1) // a dangling (or looping) link
	}
	if parent == p {
		return p, nil
	}
	r, err = resolveDepth(parent, depth+1)
	if err != nil {
		return "", err
	}
	return filepath.Join(r, filepath.Base(p)), nil
}

// within reports whether p is root or lies below it, ignoring case.
func within(p, root string) bool {
	rel, err := filepath.Rel(strings.ToLower(root), strings.ToLower(p))
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
