package host

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/archmax-ai/archmax/core/hostconfig"
	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/store"
)

// Read reads and loads the host file at the root of the authoring tree: nil (and no error)
// when there is none; a *hostconfig.FileError when it does not load.
func Read(ctx context.Context, authored store.Files) (*hostconfig.Config, []byte, error) {
	src, err := authored.Read(ctx, hostconfig.File)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", hostconfig.File, err)
	}
	cfg, err := hostconfig.Load(src)
	return cfg, src, err
}

// Load is Read then Apply: base with what the workspace's host file adds.
func Load(ctx context.Context, base session.Config, env Env) (session.Config, error) {
	cfg, _, err := Read(ctx, base.Authored)
	if err != nil {
		return base, err
	}
	return Apply(ctx, base, cfg, env)
}

// Engines is session.Engines kept in step with the host file of its authored tree: every
// Engine call first reads the file (through the tree, so S3's ETag cache answers an
// unchanged file with a 304) and, when its bytes differ from those the engines were made
// with, loads and applies it and rebases the cache (session.Engines.Rebase). A host file
// that does not load, or whose tools do not build, fails the call (fail closed: no engine
// runs without the host's rules); the next call tries again. It implements the engines
// ports of functions/handlers (httpapi, wakes, continuation) as session.Engines does.
type Engines struct {
	*session.Engines
	// OnLookup, when set, is called with each workflow an engine is looked up for (Engine,
	// and so Sweep's lookups), before the host file is read: the functions name the workflow
	// to the invocation's metrics with it. Set it before the first call.
	OnLookup func(ctx context.Context, workflow string)

	base session.Config // without the host file
	env  Env

	mu      sync.Mutex
	current [32]byte // digest of the file the engines use (zero: none yet applied)
	applied bool
	bad     [32]byte // digest of the last file that did not load …
	badErr  error    // … and why (a parse error does not change until the file does)
	checked [32]byte // digest of the last file held to env.Deployed …
	seen    bool     // … once one was
}

// NewEngines returns engines over base with the host file applied on first use.
func NewEngines(base session.Config, env Env) *Engines {
	return &Engines{Engines: session.NewEngines(base), base: base, env: env}
}

// Engine returns the engine of workflow under the current host file.
func (e *Engines) Engine(ctx context.Context, workflow string) (*session.Engine, error) {
	if e.OnLookup != nil {
		e.OnLookup(ctx, workflow)
	}
	if err := e.Refresh(ctx); err != nil {
		return nil, err
	}
	return e.Engines.Engine(ctx, workflow)
}

// Sweep is session.Engines.Sweep through this cache's Engine.
func (e *Engines) Sweep(ctx context.Context, now time.Time, limit int, run session.RunFunc) (session.SweepResult, error) {
	if err := e.Refresh(ctx); err != nil {
		return session.SweepResult{}, err
	}
	res, err := session.Sweep(ctx, e.Log(), e.Engine, now, limit, run)
	return e.Engines.SweepOutbox(ctx, limit, res, err)
}

// Refresh reads the host file and applies it when it changed.
func (e *Engines) Refresh(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	src, err := e.base.Authored.Read(ctx, hostconfig.File)
	switch {
	case errors.Is(err, store.ErrNotFound):
		src = nil
	case err != nil:
		return fmt.Errorf("read %s: %w", hostconfig.File, err)
	}
	digest := sha256.Sum256(src)
	if src == nil {
		digest = [32]byte{}
	}
	if e.env.Deployed != "" && (!e.seen || digest != e.checked) {
		e.checked, e.seen = digest, true
		if msg := DeployedMismatch(e.env.Deployed, src); msg != "" && e.env.Log != nil {
			e.env.Log.WarnContext(ctx, msg, "deployedSha256", e.env.Deployed, "readSha256", hostconfig.Digest(src))
		}
	}
	if e.applied && digest == e.current {
		return nil
	}
	if e.badErr != nil && digest == e.bad {
		return e.badErr
	}
	var cfg *hostconfig.Config
	if src != nil {
		if cfg, err = hostconfig.Load(src); err != nil {
			e.bad, e.badErr = digest, err
			return err
		}
	}
	next, err := Apply(ctx, e.base, cfg, e.env)
	if err != nil {
		return err // a build can fail for a while (a server down): try again next call
	}
	e.Rebase(next)
	e.current, e.applied, e.badErr = digest, true, nil
	return nil
}

// DeployedMismatch holds the host file a function read (src; nil when there is none) to the
// one its deployment granted (deployed: a hostconfig.Digest, as ARCHMAX_HOST_FILE_SHA256
// gives it): "" when they are the same file (or deployed is ""), else the warning to log.
// A file that differs may name tools, secrets or buckets the functions' roles were not
// granted, or keep ones whose grants are gone: its calls may be refused by IAM.
func DeployedMismatch(deployed string, src []byte) string {
	read := hostconfig.Digest(src)
	switch {
	case deployed == "" || deployed == read:
		return ""
	case src == nil:
		return fmt.Sprintf("the stack was deployed with a %s (sha256 %s), but the spec prefix holds none: its grants are for a file the functions no longer read; "+
			"deploy the workspace with the stack (make deploy WORKSPACE=…)", hostconfig.File, deployed)
	case deployed == hostconfig.NoFile:
		return fmt.Sprintf("the %s read from the spec prefix (sha256 %s) is not the stack's: it was deployed from a workspace without one, so none of the "+
			"functions, secrets, signed endpoints or buckets it names were granted; deploy the workspace with the stack (make deploy WORKSPACE=…)", hostconfig.File, read)
	default:
		return fmt.Sprintf("the %s read from the spec prefix (sha256 %s) differs from the one the stack was deployed with (sha256 %s): the functions' "+
			"permissions were granted for that one, so a call this file adds may be refused by IAM; deploy the workspace with the stack (make deploy WORKSPACE=…)",
			hostconfig.File, read, deployed)
	}
}
