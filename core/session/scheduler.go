package session

import (
	"context"
	"time"
)

// Scheduler arranges the wake of a park with a resumeAt (DESIGN.md §5, spec 02 §4.4): in
// AWS an EventBridge Scheduler one-time schedule `at(resumeAt)` targeting functions/wake
// with {sessionId, parkId}; locally an in-process timer loop. Schedule is idempotent per
// (sessionId, parkId); Cancel of an unknown schedule is not an error. A wake is a Deliver of
// the timer trigger to that park only, so a late, early or duplicate fire is harmless.
type Scheduler interface {
	Schedule(ctx context.Context, sessionID, parkID string, at time.Time) error
	Cancel(ctx context.Context, sessionID, parkID string) error
}
