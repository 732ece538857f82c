package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/archmax-ai/archmax/core/host"
	"github.com/archmax-ai/archmax/core/hostconfig"
	"github.com/archmax-ai/archmax/core/kernel"
	"github.com/archmax-ai/archmax/core/store"
	"github.com/archmax-ai/archmax/core/store/fs"
	"github.com/archmax-ai/archmax/functions/handlers/hostenv"
	"github.com/archmax-ai/archmax/local/standin"
)

// hostEnv is how local runs apply the workspace's host file: the build's tool kinds over
// the standard AWS credential chain (loaded only when the file declares tools; --region
// or the environment's region) — a tool with a `local:` stand-in built against its
// in-process stand-in instead (local/standin, closed with the env) — and each mount served
// from its dir.
func (env *Env) hostEnv() host.Env {
	if env.host != nil {
		return *env.host
	}
	peers := standin.New()
	env.closers = append(env.closers, peers)
	env.host = &host.Env{Kinds: peers.Kinds(hostenv.Kinds()), Deps: hostenv.Local(env.opts.Region).Deps(), Mount: env.dirMount}
	return *env.host
}

// authoredRoots are the workspace's own entries no mount directory may be, lie in or hold.
var authoredRoots = []string{kernel.AuthoringPrefix, kernel.SkillsMount, kernel.PlatformMount, kernel.AgentsFile, hostconfig.File}

// dirMount opens a mount's dir (relative to the workspace root, or absolute): read-only as an
// authored tree (names as they are), writable as a store tree (names portably encoded). A
// mount with no dir, a dir that is the workspace (or holds it), lies in its authored entries
// or in the session store, is refused: no mount may serve the authoring plane or the
// sessions.
func (env *Env) dirMount(_ context.Context, m hostconfig.MountDecl) (store.Files, string, error) {
	if m.Dir == "" {
		return nil, "", fmt.Errorf("it has no dir: local runs serve mounts from a directory (dir: path/to/folder)")
	}
	ws, err := filepath.Abs(env.opts.Workspace)
	if err != nil {
		return nil, "", err
	}
	dir := m.Dir
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(ws, dir)
	}
	dir = filepath.Clean(dir)
	within := func(p, root string) bool {
		rel, err := filepath.Rel(root, p)
		return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
	}
	if within(ws, dir) {
		return nil, "", fmt.Errorf("dir %s holds the workspace, whose workflows/ and %s no mount may serve", m.Dir, hostconfig.File)
	}
	if rel, err := filepath.Rel(ws, dir); err == nil && within(dir, ws) {
		first, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
		if slices.ContainsFunc(authoredRoots, func(r string) bool { return strings.EqualFold(r, first) }) {
			return nil, "", fmt.Errorf("dir %s lies in the workspace's %s, which the runtime serves itself (or no one)", m.Dir, first)
		}
	}
	if store, err := filepath.Abs(env.opts.StoreDir); err == nil && (within(dir, store) || within(store, dir)) {
		return nil, "", fmt.Errorf("dir %s overlaps the session store %s", m.Dir, env.opts.StoreDir)
	}
	fi, err := os.Stat(dir)
	switch {
	case err != nil:
		return nil, "", fmt.Errorf("dir %s: %w", m.Dir, err)
	case m.File && fi.IsDir():
		return nil, "", fmt.Errorf("dir %s is a folder; a file mount names one file", m.Dir)
	case !m.File && !fi.IsDir():
		return nil, "", fmt.Errorf("dir %s is a file: say 'file: true' to mount one file", m.Dir)
	case m.File && !m.ReadOnly:
		return nil, "", fmt.Errorf("a local file mount is read-only (readOnly: false is for folders)")
	}
	if m.File {
		files, err := fs.OpenFilesReadOnly(filepath.Dir(dir))
		if err != nil {
			return nil, "", err
		}
		env.closers = append(env.closers, files)
		return files, filepath.Base(dir), nil
	}
	var files *fs.Files
	if m.ReadOnly {
		files, err = fs.OpenFilesReadOnly(dir)
	} else {
		files, err = fs.OpenFiles(dir)
	}
	if err != nil {
		return nil, "", err
	}
	env.closers = append(env.closers, files)
	return files, "", nil
}
