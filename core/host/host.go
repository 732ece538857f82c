// Package host applies a workspace's host file (core/hostconfig, archmax.host.yaml) to the
// engine's configuration: its tools become session.Config.Tools (hosttool.Build with the
// kinds the assembly passes), its policy rules session.Config.PolicyRules (kernel rules
// after the assembly's own), its mounts session.Config.Mounts (each served by the backend
// the assembly opens: an S3 prefix on AWS, a directory locally), its pricing section
// session.Config.Pricing (replacing the assembly's ARCHMAX_PRICE_* table), its budgets
// session.Config.Budgets. Engines keeps a warm
// container's engines in step with the file: it is read from the authored tree at every
// engine lookup (a conditional GET on S3's ETag cache, like the specs) and applied again
// when its bytes change. The two assemblies are local/runner and functions/handlers/assembly.
package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"strings"

	"github.com/archmax-ai/archmax/core/events"
	"github.com/archmax-ai/archmax/core/hostconfig"
	"github.com/archmax-ai/archmax/core/hosttool"
	"github.com/archmax-ai/archmax/core/outbound"
	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/store"
	"github.com/archmax-ai/archmax/core/workspace"
)

// Env is what the assembly gives Apply.
type Env struct {
	// Kinds maps a tool kind to its builder (lambdatool.New, httptool.New, mcptool.New);
	// a declaration of a kind not in the map fails the build, naming it.
	Kinds map[string]hosttool.Builder
	// Deps returns the kinds' dependencies; called only when the file declares tools, so a
	// host without tools never loads AWS configuration. nil: no dependencies.
	Deps func(ctx context.Context) (hosttool.Deps, error)
	// Mount opens the backend of one mount: the tree and the key in it the mount's root maps
	// to ("" for the tree's root, or the one file of a file mount). nil: mounts are refused.
	Mount func(ctx context.Context, m hostconfig.MountDecl) (files store.Files, key string, err error)
	// Deployed is the hostconfig.Digest of the host file the deployment's permissions were
	// granted for (ARCHMAX_HOST_FILE_SHA256: the stack's, from the workspace it uploaded;
	// hostconfig.NoFile when that workspace had none); "" skips the check. Engines compares
	// every file it reads with it and logs one warning on Log for each that differs.
	Deployed string
	Log      *slog.Logger // nil: no warning is logged
	// EventLog is the log every lifecycle event is written to (the function's own), at the
	// levels the file's events.log leaves on; nil: none (local runs).
	EventLog *slog.Logger
	// Sink opens the outbound sink of the file's events.eventBridge (on AWS an EventBridge
	// client for the bus); nil: nothing is published (local runs).
	Sink func(ctx context.Context, s hostconfig.EventBridgeSink) (outbound.Sink, error)
}

// MountError is a mount the assembly cannot serve. A refusal of a shared check
// (*hostconfig.Problem, e.g. hostconfig.LocalMountProblem's) is located at its field, with
// its hint: what `archmax validate` reports for the same file.
type MountError struct {
	Mount        string
	Line, Column int
	Reason       string
	Field        string              // mounts.N[.key], with Problem
	Problem      *hostconfig.Problem // the shared check's refusal, or nil
}

func (e *MountError) Error() string {
	if e.Problem != nil {
		return fmt.Sprintf("%s:%d:%d: mount '%s': %s [%s] (hint: %s)", hostconfig.File, e.Line, e.Column, e.Mount, e.Problem.Message, e.Field, e.Problem.Hint)
	}
	return fmt.Sprintf("%s:%d: mount '%s': %s", hostconfig.File, e.Line, e.Mount, e.Reason)
}

func (e *MountError) Unwrap() error {
	if e.Problem != nil {
		return e.Problem
	}
	return nil
}

// Apply returns base with what cfg adds: its tools after base.Tools, its rules after
// base.PolicyRules, its mounts after base.Mounts. A nil cfg adds nothing. Errors name the
// declaration (the host file's line); session.New still checks the result (reserved names,
// mount collisions) when an engine is made.
func Apply(ctx context.Context, base session.Config, cfg *hostconfig.Config, env Env) (session.Config, error) {
	if env.EventLog != nil { // every level unless the file's events.log switches one off
		lv := cfg.EventsOf().Log
		base.EventLog = &events.Log{Logger: env.EventLog, Info: lv.Info, Warn: lv.Warn, Error: lv.Error}
	}
	if cfg == nil {
		return base, nil
	}
	if cfg.Pricing != nil { // the file's pricing section wins over the ARCHMAX_PRICE_* table
		base.Pricing = cfg.Pricing
	}
	base.Budgets = cfg.Budgets // the engine enforces them (session/budget.go; the log counts the days)
	if cfg.Retention != nil {  // the file's retention section wins over ARCHMAX_SESSION_TTL (RD22-10)
		base.SessionTTL = cfg.Retention.Sessions
	}
	if cfg.Prompt != nil { // prompt.cache wins over settings.prompt_cache and ARCHMAX_PROMPT_CACHE (PC23-10)
		base.PromptCache = cfg.Prompt.Cache
	}
	if len(cfg.Tools) > 0 {
		var deps hosttool.Deps
		if env.Deps != nil {
			var err error
			if deps, err = env.Deps(ctx); err != nil {
				return base, fmt.Errorf("%s: the host tools' dependencies: %w", hostconfig.File, err)
			}
		}
		tools, err := hosttool.Build(ctx, cfg, env.Kinds, deps)
		if err != nil {
			return base, err
		}
		base.Tools = append(append([]session.HostTool(nil), base.Tools...), tools...)
	}
	ev := cfg.EventsOf()
	if eb := ev.EventBridge; eb != nil && env.Sink != nil {
		sink, err := env.Sink(ctx, *eb)
		if err != nil {
			return base, fmt.Errorf("%s:%d: events.eventBridge: %w", hostconfig.File, eb.Line, err)
		}
		base.Outbound = &outbound.Config{Sink: sink, Types: eb.Types, MaxDetailBytes: eb.MaxDetailBytes, Logger: env.Log}
	}
	if rules := cfg.Rules(); len(rules) > 0 {
		base.PolicyRules = append(append(base.PolicyRules[:0:0], base.PolicyRules...), rules...)
	}
	for i, m := range cfg.Mounts {
		if env.Mount == nil {
			return base, &MountError{Mount: m.Name, Line: m.Line, Column: m.Column, Reason: "this host serves no mounts"}
		}
		files, key, err := env.Mount(ctx, m)
		if err != nil {
			var me *MountError
			if errors.As(err, &me) {
				return base, err
			}
			var p *hostconfig.Problem
			if errors.As(err, &p) {
				field := fmt.Sprintf("mounts.%d", i)
				if p.Field != "" {
					field += "." + p.Field
				}
				line, col := m.At(p.Field)
				return base, &MountError{Mount: m.Name, Line: line, Column: col, Reason: p.Message, Field: field, Problem: p}
			}
			return base, &MountError{Mount: m.Name, Line: m.Line, Column: m.Column, Reason: err.Error()}
		}
		base.Mounts = append(base.Mounts[:len(base.Mounts):len(base.Mounts)], workspace.Mount{Name: m.Name, File: m.File,
			Files: Subtree(files, m.Name, key), ReadOnly: m.ReadOnly, Governed: m.Governed, Unsearchable: m.Unsearchable})
	}
	return base, nil
}

// Subtree serves the keys of a mount named name from key of files: the workspace asks a
// mount's tree for "<name>" (its root, or its one file) and "<name>/<rest>", which Subtree
// reads as key and key/<rest> ("" key: the tree's root). A key outside the mount is not found.
func Subtree(files store.Files, name, key string) store.Files {
	return &subtree{inner: files, name: name, key: key}
}

type subtree struct {
	inner     store.Files
	name, key string
}

var _ store.Files = (*subtree)(nil)

// at maps a mount key to the inner key; ok is false outside the mount.
func (s *subtree) at(k string) (string, bool) {
	if k == s.name {
		return s.key, true
	}
	rest, ok := strings.CutPrefix(k, s.name+"/")
	if !ok {
		return "", false
	}
	if s.key == "" {
		return rest, true
	}
	return path.Join(s.key, rest), true
}

func (s *subtree) Read(ctx context.Context, k string) ([]byte, error) {
	in, ok := s.at(k)
	if !ok || in == "" {
		return nil, store.ErrNotFound
	}
	return s.inner.Read(ctx, in)
}

func (s *subtree) Write(ctx context.Context, k string, data []byte) error {
	in, ok := s.at(k)
	if !ok || in == "" {
		return store.ErrNotFound
	}
	return s.inner.Write(ctx, in, data)
}

func (s *subtree) WriteIfAbsent(ctx context.Context, k string, data []byte) (bool, error) {
	in, ok := s.at(k)
	if !ok || in == "" {
		return false, store.ErrNotFound
	}
	return s.inner.WriteIfAbsent(ctx, in, data)
}

func (s *subtree) Delete(ctx context.Context, k string) error {
	in, ok := s.at(k)
	if !ok || in == "" {
		return store.ErrNotFound
	}
	return s.inner.Delete(ctx, in)
}

func (s *subtree) List(ctx context.Context, prefix string) ([]store.FileInfo, error) {
	in, ok := s.at(prefix)
	if !ok {
		return nil, nil
	}
	return s.inner.List(ctx, in)
}

func (s *subtree) Stat(ctx context.Context, k string) (*store.FileInfo, error) {
	in, ok := s.at(k)
	if !ok {
		return nil, store.ErrNotFound
	}
	if in == "" { // the mount's root folder
		return &store.FileInfo{Name: path.Base(s.name), Dir: true}, nil
	}
	return s.inner.Stat(ctx, in)
}
