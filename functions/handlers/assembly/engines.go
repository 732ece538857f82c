package assembly

import "github.com/archmax-ai/archmax/core/session"

// Engines is the per-workflow engine cache of a warm container (session.Engines).
type Engines = session.Engines

// NewEngines returns a cache whose engines share base (every field but Workflow).
func NewEngines(base session.Config) *Engines { return session.NewEngines(base) }
