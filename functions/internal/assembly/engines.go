package assembly

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/store"
)

// Engines keeps one *session.Engine per workflow for the life of a warm container; it
// implements httpapi.Engines. Safe for concurrent use.
type Engines struct {
	base session.Config
	mu   sync.Mutex
	byWf map[string]*session.Engine
}

// NewEngines returns a cache whose engines share base (every field but Workflow).
func NewEngines(base session.Config) *Engines {
	return &Engines{base: base, byWf: map[string]*session.Engine{}}
}

// Engine returns the engine of workflow, creating it on first use. Only a workflow whose
// workflows/<slug>/workflow.yaml exists in the authored tree gets an engine, so request
// paths cannot grow the cache: a name that is not a slug or has no workflow.yaml is a
// *session.UnknownWorkflowError (404). The read also warms the authored tree's ETag cache.
func (e *Engines) Engine(ctx context.Context, workflow string) (*session.Engine, error) {
	if !spec.IsSlug(workflow) {
		return nil, &session.UnknownWorkflowError{Workflow: workflow}
	}
	e.mu.Lock()
	eng, ok := e.byWf[workflow]
	e.mu.Unlock()
	if ok {
		return eng, nil
	}
	file := "workflows/" + workflow + "/workflow.yaml"
	if _, err := e.base.Authored.Read(ctx, file); errors.Is(err, store.ErrNotFound) {
		return nil, &session.UnknownWorkflowError{Workflow: workflow}
	} else if err != nil {
		return nil, fmt.Errorf("read %s: %w", file, err)
	}
	cfg := e.base
	cfg.Workflow = workflow
	eng, err := session.New(cfg)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if first, ok := e.byWf[workflow]; ok { // a concurrent request won the race
		return first, nil
	}
	e.byWf[workflow] = eng
	return eng, nil
}
