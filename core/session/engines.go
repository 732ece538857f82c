package session

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/archmax-ai/archmax/core/events"
	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/store"
)

// Engines keeps one *Engine per workflow of one authored tree, sharing every other setting
// (a warm Lambda container's engines; `archmax serve`'s). It implements the Engines ports of
// functions/handlers/httpapi and wakes. Safe for concurrent use.
type Engines struct {
	base Config
	mu   sync.Mutex
	byWf map[string]*Engine
	gen  int // Rebase count: an engine made from an older base is not cached
	// emitter is shared by every engine, so seq increases across all their events (02 §12.1:
	// one handler sees a session and its sub-workflow children).
	emitter *events.Emitter
}

// NewEngines returns a cache whose engines share base (every field but Workflow).
func NewEngines(base Config) *Engines {
	return &Engines{base: base, byWf: map[string]*Engine{}, emitter: events.NewEmitter(base.Events, base.Clock)}
}

// Engine returns the engine of workflow, creating it on first use. Only a workflow whose
// workflows/<slug>/workflow.yaml exists in the authored tree gets an engine, so request
// paths cannot grow the cache: a name that is not a slug or has no workflow.yaml is a
// *UnknownWorkflowError (404). The read also warms the authored tree's ETag cache.
func (e *Engines) Engine(ctx context.Context, workflow string) (*Engine, error) {
	if !spec.IsSlug(workflow) {
		return nil, &UnknownWorkflowError{Workflow: workflow}
	}
	e.mu.Lock()
	eng, ok := e.byWf[workflow]
	e.mu.Unlock()
	if ok {
		return eng, nil
	}
	cfg, gen := e.snapshot()
	file := "workflows/" + workflow + "/workflow.yaml"
	if _, err := cfg.Authored.Read(ctx, file); errors.Is(err, store.ErrNotFound) {
		return nil, &UnknownWorkflowError{Workflow: workflow}
	} else if err != nil {
		return nil, fmt.Errorf("read %s: %w", file, err)
	}
	cfg.Workflow = workflow
	eng, err := New(cfg)
	if err != nil {
		return nil, err
	}
	eng.siblings, eng.emitter = e, e.emitter
	e.mu.Lock()
	defer e.mu.Unlock()
	if first, ok := e.byWf[workflow]; ok { // a concurrent request won the race
		return first, nil
	}
	if e.gen != gen { // rebased meanwhile: hand it out, keep the new settings' cache
		return eng, nil
	}
	e.byWf[workflow] = eng
	return eng, nil
}

// Base is the settings engines are made with (every field but Workflow).
func (e *Engines) Base() Config {
	b, _ := e.snapshot()
	return b
}

func (e *Engines) snapshot() (Config, int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.base, e.gen
}

// Rebase makes every engine from now on with base (every field but Workflow) and forgets
// the engines made so far — a warm container whose host file changed (core/host). Engines
// already handed out finish their calls with the settings they were made with. The event
// emitter stays, so an observer's seq keeps increasing.
func (e *Engines) Rebase(base Config) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.gen++
	e.base, e.byWf = base, map[string]*Engine{}
}

// SessionWorkflow returns the workflow a committed session belongs to, read from its head
// (one consistent read). Errors: *SessionNotFoundError when the session never
// committed; store errors wrapped.
func (e *Engines) SessionWorkflow(ctx context.Context, sessionID string) (string, error) {
	h, err := e.Base().Log.Get(ctx, sessionID)
	if errors.Is(err, store.ErrNotFound) {
		return "", &SessionNotFoundError{SessionID: sessionID}
	}
	if err != nil {
		return "", fmt.Errorf("read session %s: %w", sessionID, err)
	}
	return h.Workflow, nil
}

// Sweep wakes the sessions whose timed parks are overdue at now, up to limit of them
// (session.Sweep over the shared log; run wraps each wake call, nil = direct).
func (e *Engines) Sweep(ctx context.Context, now time.Time, limit int, run RunFunc) (SweepResult, error) {
	res, err := Sweep(ctx, e.Base().Log, e.Engine, now, limit, run)
	return e.SweepOutbox(ctx, limit, res, err)
}

// SweepOutbox adds to a sweep's result what SweepOutbox publishes for sessions that owe
// notifications, when the engines publish any (Config.Outbound).
func (e *Engines) SweepOutbox(ctx context.Context, limit int, res SweepResult, err error) (SweepResult, error) {
	b := e.Base()
	if b.Outbound == nil || b.Files == nil {
		return res, err
	}
	n, oerr := SweepOutbox(ctx, b.Files, e.Engine, limit)
	res.Published = n
	return res, errors.Join(err, oerr)
}

// Log is the session log the engines share.
func (e *Engines) Log() store.Log { return e.Base().Log }

// Sessions reads and deletes the stored sessions of every workflow (the session API); its
// Delete cancels timed parks through the engines' Scheduler.
func (e *Engines) Sessions() *Sessions {
	b := e.Base()
	return NewSessions(b.Log, b.Files, b.Blobs).WithScheduler(b.Scheduler)
}

// SessionEngines is what EngineOf needs of an engine cache (*Engines implements it).
type SessionEngines interface {
	Engine(ctx context.Context, workflow string) (*Engine, error)
	SessionWorkflow(ctx context.Context, sessionID string) (string, error)
}

// EngineOf returns the engine of the workflow a committed session belongs to (its head
// names it) and the session's checked store id. Errors: *spec.SessionStoreIdError,
// *SessionNotFoundError, *UnknownWorkflowError, store errors.
func EngineOf(ctx context.Context, e SessionEngines, sessionID string) (*Engine, string, error) {
	id, err := spec.CheckSessionID(sessionID)
	if err != nil {
		return nil, "", err
	}
	wf, err := e.SessionWorkflow(ctx, id)
	if err != nil {
		return nil, id, err
	}
	eng, err := e.Engine(ctx, wf)
	return eng, id, err
}
