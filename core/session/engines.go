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
	file := "workflows/" + workflow + "/workflow.yaml"
	if _, err := e.base.Authored.Read(ctx, file); errors.Is(err, store.ErrNotFound) {
		return nil, &UnknownWorkflowError{Workflow: workflow}
	} else if err != nil {
		return nil, fmt.Errorf("read %s: %w", file, err)
	}
	cfg := e.base
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
	e.byWf[workflow] = eng
	return eng, nil
}

// SessionWorkflow returns the workflow a committed session belongs to, read from its head
// (one consistent read). Errors: *SessionNotFoundError when the session never
// committed; store errors wrapped.
func (e *Engines) SessionWorkflow(ctx context.Context, sessionID string) (string, error) {
	h, err := e.base.Log.Get(ctx, sessionID)
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
	return Sweep(ctx, e.base.Log, e.Engine, now, limit, run)
}

// Log is the session log the engines share.
func (e *Engines) Log() store.Log { return e.base.Log }

// Sessions reads the stored sessions of every workflow (the read API).
func (e *Engines) Sessions() *Sessions { return NewSessions(e.base.Log, e.base.Files, e.base.Blobs) }

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
