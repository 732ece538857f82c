package runner

import (
	"context"
	"path/filepath"

	"github.com/archmax-ai/archmax/core/host"
	"github.com/archmax-ai/archmax/core/hostconfig"
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

// dirMount opens a mount's dir (relative to the workspace root, or absolute; every link
// followed): read-only as an authored tree (names as they are), writable as a store tree
// (names portably encoded). What hostconfig.LocalMountProblem refuses — no dir, a dir that is
// or holds the workspace, lies in or holds its workflows/, skills/, .platform/, AGENTS.md,
// host file, .env or default store, overlaps the session store, is missing or of the wrong
// kind — is refused with its *hostconfig.Problem (located and hinted by host.Apply, as
// `archmax validate` reports it): no mount may serve the authoring plane or the sessions.
// The resolved path is what is opened.
func (env *Env) dirMount(_ context.Context, m hostconfig.MountDecl) (store.Files, string, error) {
	local, p := hostconfig.LocalMountProblem(m, hostconfig.LocalRoots{Workspace: env.opts.Workspace, Store: env.opts.StoreDir})
	if p != nil {
		return nil, "", p
	}
	dir := local.Path
	if m.File {
		files, err := fs.OpenFilesReadOnly(filepath.Dir(dir))
		if err != nil {
			return nil, "", err
		}
		env.closers = append(env.closers, files)
		return files, filepath.Base(dir), nil
	}
	var files *fs.Files
	var err error
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
