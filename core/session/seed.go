package session

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/archmax-ai/archmax/core/kernel"
	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/store"
)

// SeedFile is one file placed in a session's workspace before a turn (spec 04 CD-40).
type SeedFile struct {
	Path    string // workspace-relative: a root-level file or scratchpad/…
	Content []byte
}

// SeedPathError: a seed path outside the session's run zone (spec 04 CD-42); nothing was
// written. Zone names the area: "invalid", "authored", "authoring", "run-internal",
// "offload".
type SeedPathError struct{ Path, Zone string }

func (e *SeedPathError) Error() string {
	return fmt.Sprintf("cannot seed '%s': it is in the %s zone — only root-level files and scratchpad/… of the session can be seeded", e.Path, e.Zone)
}

// Name returns the error name.
func (e *SeedPathError) Name() string { return "SeedPathError" }

// Seed writes files into session id's workspace, overwriting existing ones (spec 04 CD-40,
// the session handle's seed operation): every path is checked before any is written —
// root-level files and scratchpad/… only; never empty, absolute, `..`, backslashed, an
// authored mount (skills/, .platform/, AGENTS.md, a host mount), the authoring plane
// (workflows/), or a runtime-internal or offload area. Errors: *spec.SessionStoreIdError,
// *ChildSessionError, *SeedPathError, store errors.
func (e *Engine) Seed(ctx context.Context, sessionID string, files []SeedFile) error {
	id, err := spec.CheckSessionID(sessionID)
	if err != nil {
		return err
	}
	if err := refuseChild(id); err != nil {
		return err
	}
	mounts := []string{kernel.AuthoringPrefix}
	for _, m := range e.workspaceMounts() {
		mounts = append(mounts, strings.TrimSuffix(m.Name, "/"))
	}
	for _, f := range files {
		if zone := seedZone(f.Path, mounts); zone != "" {
			return &SeedPathError{Path: f.Path, Zone: zone}
		}
	}
	for _, f := range files {
		if err := e.cfg.Files.Write(ctx, id+"/"+f.Path, f.Content); err != nil {
			return fmt.Errorf("seed '%s' of session %s: %w", f.Path, id, err)
		}
	}
	return nil
}

// seedZone is the zone that refuses a seed path, "" when it may be seeded.
func seedZone(p string, mounts []string) string {
	switch {
	case store.CheckKey(context.Background(), p) != nil || strings.Contains(p, "\\"): // also a leading "/" (an empty segment)
		return "invalid"
	}
	first, _, nested := strings.Cut(p, "/")
	switch {
	case kernel.IsAuthoringPlane(first):
		return "authoring"
	case kernel.IsInternalArea(first):
		return "run-internal"
	case kernel.IsOffloadArea(first):
		return "offload"
	case slices.Contains(mounts, first) || slices.Contains(mounts, p):
		return "authored"
	case nested && first != kernel.ScratchpadDir:
		return "invalid" // only scratchpad/ holds folders of the run zone
	}
	return ""
}

type promptClockKey struct{}

// WithPromptClock returns a context under which every model call of a call — reply-only
// handoffs and sub-workflow children included — is told that t is the present (spec 04
// CD-61, CD-62); it outranks Config.PromptClock. Only the prompt is pinned: recorded
// timestamps, parks' resumeAt and scripts keep the real clock.
func WithPromptClock(ctx context.Context, t time.Time) context.Context {
	return context.WithValue(ctx, promptClockKey{}, t)
}
