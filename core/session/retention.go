package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/store"
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

// Keep clears the retention expiry of a root session (RD22-22: `archmax sessions --keep`) —
// for a host that turned retention off, whose sessions idle since keep the expiry DynamoDB's
// TTL acts on — and reports whether the session exists. One head-only commit under the
// writer lease, nothing else changed (its last activity stays); with retention still
// configured the session's next step sets a new expiry. A turn running is
// *SessionNotResumableError, a delete holding it *SessionDeletingError; a sub-workflow
// session has no expiry of its own (*ChildSessionError).
func (s *Sessions) Keep(ctx context.Context, sessionID string) (bool, error) {
	id, err := spec.CheckSessionID(sessionID)
	if err != nil {
		return false, err
	}
	if err := refuseChild(id); err != nil {
		return false, err
	}
	owner := "keep/" + newMessageID()[1:9]
	h, err := s.log.Acquire(ctx, id, owner, DeleteLeaseTTL)
	if errors.Is(err, store.ErrLeaseHeld) {
		return false, leaseHeld(ctx, s.log, id, id)
	}
	if err != nil {
		return false, err
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = s.log.Release(rctx, id, owner)
	}()
	switch {
	case h.Version == 0:
		return false, nil
	case Status(h.Status) == StatusDeleting:
		return false, &SessionDeletingError{SessionID: id}
	case h.ExpiresAt == 0:
		return true, nil
	}
	nh := *h
	nh.ExpiresAt, nh.Lease = 0, nil
	if _, err := s.log.Commit(ctx, id, owner, &store.Commit{ExpectedVersion: h.Version, Head: nh}); err != nil {
		return false, fmt.Errorf("keep %s: %w", id, err)
	}
	return true, nil
}
