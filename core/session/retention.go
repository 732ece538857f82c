package session

import (
	"context"
	"log/slog"
	"time"

	"github.com/archmax-ai/archmax/core/spec"
)

// expiresAt is the retention expiry a commit of session id gives its head (RD22-8): the
// engine's clock plus Config.SessionTTL, in Unix seconds (rounded up, so a session is kept
// at least the TTL); 0 without a TTL, and for a sub-workflow child — only the root's head
// carries the expiry, and the deletion it triggers takes the children with it.
//
// A head that is due again later (parkDue: a timed wake's resumeAt, ISO-8601) is kept at
// least the TTL past that instant (RD22-15): the wake is the session's next activity, so a
// session parked with `archmax_wait until:` beyond its retention is never deleted before it
// wakes.
func (e *Engine) expiresAt(id, parkDue string) int64 {
	if e.cfg.SessionTTL <= 0 {
		return 0
	}
	if _, child := spec.ParentSessionIDOf(id); child {
		return 0
	}
	from := e.cfg.Clock()
	if parkDue != "" {
		if due, err := time.Parse(time.RFC3339Nano, parkDue); err == nil && due.After(from) {
			from = due
		}
	}
	t := from.Add(e.cfg.SessionTTL)
	s := t.Unix()
	if t.Nanosecond() > 0 {
		s++
	}
	return s
}

// DeleteExpiredBy is Sessions.DeleteExpiredBy while the engines' retention is configured
// (Config.SessionTTL > 0), else (0, nil) (RD22-16): a host that turned retention off keeps
// the sessions that still carry an expiry from before — the local sweep deletes none of
// them, and the next commit of each clears its expiry.
//
// audit (nil: none) gets the audit line of each delete (Sessions.WithAuditLog).
func (e *Engines) DeleteExpiredBy(ctx context.Context, now time.Time, audit *slog.Logger) (int, error) {
	if e.Base().SessionTTL <= 0 {
		return 0, nil
	}
	return e.Sessions().WithAuditLog(audit).DeleteExpiredBy(ctx, now)
}
