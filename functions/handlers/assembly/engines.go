package assembly

import (
	"github.com/archmax-ai/archmax/core/host"
	"github.com/archmax-ai/archmax/core/session"
)

// Engines is the per-workflow engine cache of a warm container, kept in step with the host
// file (host.Engines over session.Engines).
type Engines = host.Engines

// NewEngines returns a cache whose engines share base (every field but Workflow) with the
// host file of base.Authored applied through env.
func NewEngines(base session.Config, env host.Env) *Engines { return host.NewEngines(base, env) }
