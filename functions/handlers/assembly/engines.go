package assembly

import (
	"context"

	"github.com/archmax-ai/archmax/core/host"
	"github.com/archmax-ai/archmax/core/metrics"
	"github.com/archmax-ai/archmax/core/session"
)

// NewEngines returns the per-workflow engine cache of a warm container, kept in step with the
// host file of base.Authored applied through env (host.Engines over session.Engines; every
// engine shares base but its Workflow). Each engine lookup — a request's, a wake's, the
// sweep's — also names the workflow to the invocation's metrics (metrics.Recorder.Workflow,
// MT22-2): what the call that follows records counts under that workflow.
func NewEngines(base session.Config, env host.Env) *host.Engines {
	e := host.NewEngines(base, env)
	e.OnLookup = func(ctx context.Context, workflow string) { metrics.From(ctx).Workflow(workflow) }
	return e
}
