// Package runner assembles the engine for local use: specs from a workspace directory,
// sessions in the fs store under .archmax/ (or, with Options.AWS, in DynamoDB and S3 with
// the caller's credentials), and the model reached through the real Bedrock Converse
// client — either against Amazon Bedrock or against the in-process Converse-protocol fake
// serving a scripted model on a loopback port.
package runner

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/archmax-ai/archmax/core/events"
	"github.com/archmax-ai/archmax/core/host"
	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/model/bedrock"
	"github.com/archmax-ai/archmax/core/model/scripted"
	"github.com/archmax-ai/archmax/core/pricing"
	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/store"
	"github.com/archmax-ai/archmax/core/store/fs"
	"github.com/archmax-ai/archmax/core/store/memory"
	"github.com/archmax-ai/archmax/functions/handlers/tracing"
	"github.com/archmax-ai/archmax/local/conversefake"
)

// DefaultModelID is used when neither the spec, --model nor ARCHMAX_MODEL names one.
const DefaultModelID = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"

// Options configure a local assembly.
type Options struct {
	Workspace   string // the authored tree: workflows/, skills/, AGENTS.md
	StoreDir    string // session state (default <cwd>/.archmax); unused with AWS
	AWS         *AWS   // non-nil: sessions in DynamoDB + S3 instead of StoreDir
	ModelScript string // serve this scripted model through the Converse fake
	// ModelScriptSource, when set, is the scripted model itself (ModelScript then only names
	// it in messages): `archmax test` serves each case's <name>.model.yaml this way.
	ModelScriptSource []byte
	// MemoryStore keeps sessions in memory for the life of the process instead of StoreDir.
	MemoryStore bool
	Bedrock     bool // use Amazon Bedrock with the default AWS credential chain
	// NoModel opens the session store alone, for reading sessions (`archmax sessions`):
	// neither ModelScript nor Bedrock is needed, and Engine/Engines must not be called.
	NoModel bool
	ModelID string // default model id
	Region  string // AWS region for Bedrock and AWS (default from the environment)
	Events  events.Handler
	Clock   func() time.Time
	// Scheduler arranges the wakes of timed parks (`archmax serve`'s in-process loop); nil
	// leaves them to whoever sweeps.
	Scheduler session.Scheduler
}

// Env is an assembled local environment. Close it to stop the fake.
type Env struct {
	opts   Options
	model  model.Client
	fake   *http.Server
	script *scripted.Script
	log    store.Log   // the AWS session log; nil for the fs store
	files  store.Files // the AWS session files; nil for the fs store
	blobs  store.Blobs // the AWS blobs; nil for the fs store
	// memLog and memFiles are the MemoryStore sessions, shared by every engine of the env.
	memLog   *memory.Store
	memFiles *memory.Files
	closers  []interface{ Close() error } // the fs roots this env opened
	host     *host.Env                    // how the host file is applied (hostEnv)
	tracing  *tracing.Provider            // the OTEL_* trace export (tracing.go); nil: off
}

// Open assembles the environment. Exactly one of ModelScript and Bedrock must be set. With
// opts.AWS, a missing or malformed AWS setting is a *SettingError.
func Open(ctx context.Context, opts Options) (*Env, error) {
	if opts.ModelScriptSource != nil && opts.ModelScript == "" {
		opts.ModelScript = "model script"
	}
	if (opts.ModelScript == "") == !opts.Bedrock && !opts.NoModel {
		return nil, errors.New("choose the model: --model-script FILE (offline, scripted) or --bedrock (Amazon Bedrock)")
	}
	env := &Env{}
	if opts.AWS != nil {
		a, err := opts.AWS.resolve()
		if err != nil {
			return nil, err
		}
		if env.log, env.files, env.blobs, err = openAWS(ctx, a, opts.Region); err != nil {
			return nil, err
		}
	}
	if opts.Workspace == "" {
		opts.Workspace = "."
	}
	if opts.StoreDir == "" {
		opts.StoreDir = ".archmax"
	}
	if opts.ModelID == "" {
		opts.ModelID = os.Getenv("ARCHMAX_MODEL")
	}
	if opts.ModelID == "" {
		opts.ModelID = DefaultModelID
	}
	env.opts = opts
	if err := env.openTracing(ctx); err != nil {
		return nil, err
	}
	if opts.NoModel {
		return env, nil
	}
	// model calls stream their text unless ARCHMAX_STREAMING is 0 or false
	streaming, err := bedrock.StreamingFromEnv(os.Getenv)
	if err != nil {
		return nil, err
	}
	if opts.Bedrock {
		region := opts.Region
		if region == "" {
			region = os.Getenv("AWS_REGION")
		}
		c, err := bedrock.New(ctx, bedrock.Config{Region: region, NoStreaming: !streaming})
		if err != nil {
			return nil, err
		}
		env.model = c
		return env, nil
	}
	src := opts.ModelScriptSource
	if src == nil {
		var err error
		if src, err = os.ReadFile(opts.ModelScript); err != nil {
			return nil, fmt.Errorf("read model script: %w", err)
		}
	}
	script, err := scripted.Parse(opts.ModelScript, src)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("start the Converse fake: %w", err)
	}
	env.script = script
	env.fake = &http.Server{Handler: conversefake.New(script), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = env.fake.Serve(ln) }()
	c, err := bedrock.New(ctx, bedrock.Config{
		Region: "us-east-1", Endpoint: "http://" + ln.Addr().String(),
		AccessKeyID: "local", SecretAccessKey: "local", MaxAttempts: 3, MaxBackoff: 50 * time.Millisecond,
		NoStreaming: !streaming,
	})
	if err != nil {
		_ = env.Close()
		return nil, err
	}
	env.model = c
	return env, nil
}

// Unused names the scripted model's entries no call consumed (nil with Bedrock).
func (env *Env) Unused() []string {
	if env.script == nil {
		return nil
	}
	return env.script.Unused()
}

// ModelID is the resolved default model id (--model, ARCHMAX_MODEL, else DefaultModelID).
func (env *Env) ModelID() string { return env.opts.ModelID }

// Model is the environment's model client (the scripted model's fake, or Bedrock).
func (env *Env) Model() model.Client { return env.model }

// Engine returns an engine for one workflow of the workspace, with the workspace's host
// file (archmax.host.yaml at its root) applied: its tools, policy rules and mounts.
func (env *Env) Engine(workflow string) (*session.Engine, error) {
	cfg, err := env.Config()
	if err != nil {
		return nil, err
	}
	if cfg, err = host.Load(context.Background(), cfg, env.hostEnv()); err != nil {
		return nil, err
	}
	cfg.Workflow = workflow
	return session.New(cfg)
}

// Engines returns an engine cache over every workflow of the workspace (`archmax serve`),
// kept in step with the workspace's host file (read again at every engine lookup).
func (env *Env) Engines() (*host.Engines, error) {
	cfg, err := env.Config()
	if err != nil {
		return nil, err
	}
	return host.NewEngines(cfg, env.hostEnv()), nil
}

// Sessions reads the environment's stored sessions (summaries, transcripts, trails).
func (env *Env) Sessions() (*session.Sessions, error) {
	log, files, blobs := env.log, env.files, env.blobs
	if log == nil {
		var err error
		if log, files, err = env.openFS(); err != nil {
			return nil, err
		}
	}
	return session.NewSessions(log, files, blobs), nil
}

// Config is the engine configuration of the environment, without a workflow.
func (env *Env) Config() (session.Config, error) {
	authored, err := fs.OpenFilesReadOnly(env.opts.Workspace)
	if err != nil {
		return session.Config{}, err
	}
	env.closers = append(env.closers, authored)
	log, files := env.log, env.files
	if log == nil {
		if log, files, err = env.openFS(); err != nil {
			return session.Config{}, err
		}
	}
	// the session retention the host file's retention: section replaces (RD22-10): with the
	// section the variable is ignored, a bad value too (RD22-18)
	ttl, err := SessionTTL(os.Getenv, hostFile(context.Background(), authored))
	if err != nil {
		return session.Config{}, err
	}
	return session.Config{
		Authored:   authored,
		Log:        log,
		Files:      files,
		Blobs:      env.blobs,
		Model:      env.model,
		ModelID:    env.opts.ModelID,
		Pricing:    env.pricing(),
		SessionTTL: ttl,
		Events:     env.opts.Events,
		Clock:      env.opts.Clock,
		// local leases are short, so a killed run does not lock a session for long
		LeaseTTL:       30 * time.Second,
		Scheduler:      env.opts.Scheduler,
		TracerProvider: env.tracing.TracerProvider(),
	}, nil
}

// pricing is the ARCHMAX_PRICE_* table (the host file's pricing section replaces it); a
// value it ignores is a warning event.
func (env *Env) pricing() pricing.Table {
	t, warnings := pricing.FromEnv(os.Getenv)
	if env.opts.Events != nil {
		for _, w := range warnings {
			env.opts.Events(events.Event{Type: events.Warning, Level: "warn", TS: time.Now().UnixMilli(),
				Data: map[string]any{"scope": "pricing", "message": w}})
		}
	}
	return t
}

// openFS opens the fs session log and files under StoreDir.
func (env *Env) openFS() (store.Log, store.Files, error) {
	if env.opts.MemoryStore {
		if env.memLog == nil {
			env.memLog, env.memFiles = memory.New(), memory.NewFiles()
		}
		return env.memLog, env.memFiles, nil
	}
	if err := os.MkdirAll(env.opts.StoreDir, 0o755); err != nil {
		return nil, nil, err
	}
	// keep session state out of the user's repository even without a .gitignore entry
	if ign := filepath.Join(env.opts.StoreDir, ".gitignore"); !fileExists(ign) {
		_ = os.WriteFile(ign, []byte("*\n"), 0o644)
	}
	log, err := fs.Open(filepath.Join(env.opts.StoreDir, "log"))
	if err != nil {
		return nil, nil, err
	}
	files, err := fs.OpenFiles(filepath.Join(env.opts.StoreDir, "files"))
	if err != nil {
		_ = log.Close()
		return nil, nil, err
	}
	env.closers = append(env.closers, log, files)
	return log, files, nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// Close stops the Converse fake, if one was started, and closes the stores it opened.
func (env *Env) Close() error {
	var errs []error
	errs = append(errs, env.closeTracing())
	for _, c := range env.closers {
		errs = append(errs, c.Close())
	}
	env.closers = nil
	if env.fake != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		errs = append(errs, env.fake.Shutdown(ctx))
	}
	return errors.Join(errs...)
}
