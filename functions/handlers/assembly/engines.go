package assembly

import (
	"context"
	"time"

	"github.com/archmax-ai/archmax/core/host"
	"github.com/archmax-ai/archmax/core/metrics"
	"github.com/archmax-ai/archmax/core/session"
)

// Engines is the per-workflow engine cache of a warm container, kept in step with the host
// file (host.Engines over session.Engines). Each engine lookup also names the workflow to
// the invocation's metrics (metrics.Recorder.Workflow, MT22-2): what the call that follows
// records counts under that workflow.
type Engines struct{ *host.Engines }

// NewEngines returns a cache whose engines share base (every field but Workflow) with the
// host file of base.Authored applied through env.
func NewEngines(base session.Config, env host.Env) *Engines {
	return &Engines{host.NewEngines(base, env)}
}

// Engine returns the engine of workflow under the current host file (host.Engines.Engine).
func (e *Engines) Engine(ctx context.Context, workflow string) (*session.Engine, error) {
	metrics.From(ctx).Workflow(workflow)
	return e.Engines.Engine(ctx, workflow)
}

// Sweep is host.Engines.Sweep with each woken session's engine looked up through Engine.
func (e *Engines) Sweep(ctx context.Context, now time.Time, limit int, run session.RunFunc) (session.SweepResult, error) {
	if err := e.Refresh(ctx); err != nil {
		return session.SweepResult{}, err
	}
	res, err := session.Sweep(ctx, e.Log(), e.Engine, now, limit, run)
	return e.Engines.SweepOutbox(ctx, limit, res, err)
}
