package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/store"
)

// StatusDeleting is the status of a session whose deletion has begun (RD22-2): Delete
// commits it on the session and on each of its sub-workflow children before removing
// anything, so a deletion stopped part-way leaves a session no call runs on
// (*SessionDeletingError) and that a repeated Delete finishes. It lists like any status
// (GET /v1/sessions?status=deleting finds them) and never returns to another status.
const StatusDeleting Status = "deleting"

// DeleteLeaseTTL is how long Delete holds the writer lease of each session it deletes: the
// time a deletion stopped part-way (a crashed process) keeps a repeat out with
// *SessionDeletingError (its LeaseExpiresAt) before the repeat can finish it.
const DeleteLeaseTTL = time.Minute

// SessionDeletingError: the session is being deleted (a deletion began and has not
// finished); no call runs on it. HTTP 409. Repeating the delete finishes it — once
// LeaseExpiresAt has passed when another delete holds the session (RD22-17).
type SessionDeletingError struct {
	SessionID string
	// LeaseExpiresAt (ISO-8601) is when the deletion holding the session lets go of it: a
	// concurrent delete, or one that stopped part-way; "" when no delete holds it.
	LeaseExpiresAt string
}

func (e *SessionDeletingError) Error() string {
	return sessionDeletingMessage(e.SessionID, e.LeaseExpiresAt)
}

// Delete's lease owners: "delete/…" (Delete) and "expire/…" (DeleteExpired).
const (
	deleteOwnerPrefix = "delete/"
	expireOwnerPrefix = "expire/"
)

// leaseHeld is the refusal of a call that found id's lease held by another writer, naming
// report (id, or the root whose delete found it): *SessionDeletingError when a deletion holds
// it or the session is marked deleting, else *SessionNotResumableError (a turn runs) — each
// with the lease's expiry (RD22-17).
func leaseHeld(ctx context.Context, log store.Log, id, report string) error {
	h, err := log.Get(ctx, id)
	var expires string
	if err == nil && h.Lease != nil {
		expires = spec.FormatInstant(h.Lease.ExpiresAt)
	}
	if err == nil && (Status(h.Status) == StatusDeleting || h.Lease != nil &&
		(strings.HasPrefix(h.Lease.Owner, deleteOwnerPrefix) || strings.HasPrefix(h.Lease.Owner, expireOwnerPrefix))) {
		return &SessionDeletingError{SessionID: report, LeaseExpiresAt: expires}
	}
	return &SessionNotResumableError{SessionID: report, Status: string(StatusRunning), LeaseExpiresAt: expires}
}

// Name returns the error name.
func (e *SessionDeletingError) Name() string { return "SessionDeletingError" }

// WithScheduler makes Delete cancel the schedules of the timed parks it deletes (nil: none
// are cancelled — a host without timed wakes). It returns s.
func (s *Sessions) WithScheduler(sch Scheduler) *Sessions {
	s.sched = sch
	return s
}

// deleteMark is what Delete reads of a session's record: its children and its timed park.
type deleteMark struct {
	Status        Status `json:"status"`
	DispatchCount int    `json:"dispatchCount"`
	Park          *Park  `json:"park"`
}

// claimed is one session Delete holds the lease of: its id, its head (Version 0 for one
// that never committed) and what its record says.
type claimed struct {
	id    string
	head  *store.Head
	mark  deleteMark
	files int // session files the delete removed
}

// Delete removes a session completely (RD22-1…RD22-4) and reports whether it existed:
// its sub-workflow children (<id>~<n>, recursively), the schedules of their and its timed
// parks, its session files and blobs (<id>/… in the session files tree), its outbox
// marker (_outbox/<id>) and its log (messages, trail, events, and the Idempotency-Key records
// tied to it: store.IdempotencyTier), the head last. The shared spec snapshots (_specs/) are
// never touched.
//
// Order: every session of the tree is leased first — a live lease on any of them refuses the
// delete and changes nothing: *SessionNotResumableError when a turn runs (HTTP 409: retry once
// the turn settles), *SessionDeletingError when another delete holds it (a concurrent one, or
// one stopped part-way: repeat after its LeaseExpiresAt); then each head is marked StatusDeleting (root first); then
// the sessions are removed deepest child first, each as schedule, files, blobs, items, head.
// A deletion stopped anywhere is finished by a repeated Delete.
//
// A session that does not exist (never ran, or already deleted) is (false, nil). Errors:
// *spec.SessionStoreIdError (a bad id), *ChildSessionError (a sub-workflow child is
// deleted with its root session), *SessionStoreCapabilityError (a store that cannot
// delete), store errors.
func (s *Sessions) Delete(ctx context.Context, sessionID string) (bool, error) {
	id, err := spec.CheckSessionID(sessionID)
	if err != nil {
		return false, err
	}
	if err := refuseChild(id); err != nil {
		return false, err
	}
	return s.deleteTree(ctx, id)
}

// deleteTree is Delete of id without the child refusal.
func (s *Sessions) deleteTree(ctx context.Context, id string) (bool, error) {
	owner := deleteOwnerPrefix + newMessageID()[1:9]
	var tree []*claimed
	release := func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		for _, c := range tree {
			_ = s.log.Release(rctx, c.id, owner)
		}
	}
	if err := s.claim(ctx, id, id, owner, &tree); err != nil {
		release()
		return false, err
	}
	if tree[0].head.Version == 0 { // never committed, or deleted already: nothing to delete
		release()
		return false, nil
	}
	if err := s.removeTree(ctx, tree, owner); err != nil {
		release()
		return false, err
	}
	return true, nil
}

// removeTree marks every committed session of a claimed tree deleting (parent first), then
// removes them deepest child first, and writes the audit line.
func (s *Sessions) removeTree(ctx context.Context, tree []*claimed, owner string) error {
	for _, c := range tree {
		if err := s.markDeleting(ctx, c, owner); err != nil {
			return err
		}
	}
	for i := len(tree) - 1; i >= 0; i-- {
		if err := s.remove(ctx, tree[i]); err != nil {
			return err
		}
	}
	if s.audit != nil {
		files := 0
		for _, c := range tree {
			files += c.files
		}
		principal, by := "", "delete" // the CLI's: the machine's own user
		if p, ok := CallerOf(ctx); ok {
			principal, by = p.Key(), "request"
		}
		if strings.HasPrefix(owner, expireOwnerPrefix) || ctx.Value(retentionDelete{}) != nil {
			principal, by = "", "retention"
		}
		s.audit.InfoContext(ctx, "session deleted", "sessionId", tree[0].id, "principal", principal, "by", by,
			"children", len(tree)-1, "files", files)
	}
	return nil
}

// retentionDelete marks the context of DeleteExpiredBy's deletes.
type retentionDelete struct{}

// WithAuditLog makes every completed delete (Delete, DeleteExpired, DeleteExpiredBy) write one
// INFO line "session deleted" to l (RD22-20): the session id, the principal whose call it was
// (CallerOf the context; "" for retention), how it came ("request", "delete", "retention"),
// and the counts of sub-workflow sessions and files removed — no contents. It returns s.
func (s *Sessions) WithAuditLog(l *slog.Logger) *Sessions {
	s.audit = l
	return s
}

// DeleteExpired finishes the deletion of a root session whose head the store's retention
// removed (RD22-9: DynamoDB's TTL, read from the table's stream): record is the removed
// head's body (the stream record's old image), which names the children and the timed
// park. Its children are deleted as Delete deletes them (leased, marked, deepest first),
// then its schedule, files, blobs and log items; the shared spec snapshots are kept.
//
// It reports whether it deleted: (false, nil) when the id is in use again — a session was
// started under it after the expiry (its head committed, or a writer holds it) — so nothing
// of the new session is touched. A child whose turn runs is *SessionNotResumableError (the
// caller retries later). Safe to repeat: a deletion stopped part-way is finished by the
// next call with the same record.
func (s *Sessions) DeleteExpired(ctx context.Context, sessionID string, record json.RawMessage) (bool, error) {
	id, err := spec.CheckSessionID(sessionID)
	if err != nil {
		return false, err
	}
	if err := refuseChild(id); err != nil {
		return false, err
	}
	owner := expireOwnerPrefix + newMessageID()[1:9]
	h, err := s.log.Acquire(ctx, id, owner, DeleteLeaseTTL)
	if errors.Is(err, store.ErrLeaseHeld) {
		return false, nil // a new session's writer holds the id
	}
	if err != nil {
		return false, err
	}
	tree := []*claimed{{id: id, head: h}}
	release := func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		for _, c := range tree {
			_ = s.log.Release(rctx, c.id, owner)
		}
	}
	if h.Version > 0 { // started again after it expired: the new session is not ours
		release()
		return false, nil
	}
	if len(record) > 0 {
		if err := json.Unmarshal(record, &tree[0].mark); err != nil {
			release()
			return false, fmt.Errorf("delete expired %s: read record: %w", id, err)
		}
	}
	for n := 1; n <= tree[0].mark.DispatchCount; n++ {
		if err := s.claim(ctx, id, spec.ChildSessionID(id, n), owner, &tree); err != nil {
			release()
			return false, err
		}
	}
	if err := s.removeTree(ctx, tree, owner); err != nil {
		release()
		return false, err
	}
	return true, nil
}

// claim leases id and, through their records' dispatch counts, its descendants, appending
// each to tree parent first. A lease held by a writer is *SessionNotResumableError on root,
// one held by another delete *SessionDeletingError (leaseHeld).
func (s *Sessions) claim(ctx context.Context, root, id, owner string, tree *[]*claimed) error {
	h, err := s.log.Acquire(ctx, id, owner, DeleteLeaseTTL)
	if errors.Is(err, store.ErrLeaseHeld) {
		return leaseHeld(ctx, s.log, id, root)
	}
	if err != nil {
		return err
	}
	c := &claimed{id: id, head: h}
	if len(h.Body) > 0 {
		if err := json.Unmarshal(h.Body, &c.mark); err != nil {
			return fmt.Errorf("delete %s: read record: %w", id, err)
		}
	}
	*tree = append(*tree, c)
	for n := 1; n <= c.mark.DispatchCount; n++ {
		if err := s.claim(ctx, root, spec.ChildSessionID(id, n), owner, tree); err != nil {
			return err
		}
	}
	return nil
}

// markDeleting commits StatusDeleting on a committed session's head and record, clearing
// its due time so the sweep leaves it alone.
func (s *Sessions) markDeleting(ctx context.Context, c *claimed, owner string) error {
	if c.head.Version == 0 || Status(c.head.Status) == StatusDeleting {
		return nil
	}
	body := c.head.Body
	if len(body) > 0 {
		var rec map[string]json.RawMessage
		if err := json.Unmarshal(body, &rec); err != nil {
			return fmt.Errorf("delete %s: read record: %w", c.id, err)
		}
		rec["status"] = json.RawMessage(`"` + string(StatusDeleting) + `"`)
		var err error
		if body, err = json.Marshal(rec); err != nil {
			return err
		}
	}
	nh := *c.head
	nh.Status, nh.ParkDue, nh.Body, nh.Lease = string(StatusDeleting), "", body, nil
	stored, err := s.log.Commit(ctx, c.id, owner, &store.Commit{ExpectedVersion: c.head.Version, Head: nh})
	if err != nil {
		return fmt.Errorf("delete %s: mark: %w", c.id, err)
	}
	c.head = stored
	return nil
}

// remove deletes one claimed session: its timed park's schedule, its files, blobs and
// outbox marker, then its log (items, the head last).
func (s *Sessions) remove(ctx context.Context, c *claimed) error {
	if p := c.mark.Park; s.sched != nil && p != nil && p.Input != nil && p.Input.ResumeAt != "" {
		if err := s.sched.Cancel(ctx, c.id, p.ParkID); err != nil {
			return fmt.Errorf("delete %s: cancel the wake of park %s: %w", c.id, p.ParkID, err)
		}
	}
	if s.files != nil {
		n, err := deleteTree(ctx, s.files, c.id)
		c.files += n
		if err != nil {
			return err
		}
		if err := s.files.Delete(ctx, OutboxPrefix+c.id); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	if s.blobs != nil {
		if err := s.blobs.DeleteSession(ctx, c.id); err != nil {
			return err
		}
	}
	if _, err := s.log.Delete(ctx, c.id); errors.Is(err, store.ErrUnsupported) {
		return &SessionStoreCapabilityError{Operation: "delete sessions"}
	} else if err != nil {
		return err
	}
	return nil
}

// DeleteExpiredBy deletes, as Delete does, every root session whose head's expiry
// (store.Head.ExpiresAt) is at or before now — a store that enforces no expiry of its own
// (the fs store under `archmax serve`, RD22-12) — and returns how many it deleted. It reads
// the whole listing, so it is for local stores only: on DynamoDB the table's TTL and stream
// do this. A session with a turn running is left for the next call; other failures are
// joined into the error after every session was tried.
func (s *Sessions) DeleteExpiredBy(ctx context.Context, now time.Time) (int, error) {
	var due []string
	cursor := ""
	for {
		heads, next, err := s.log.List(ctx, store.ListOptions{Limit: 500, Cursor: cursor})
		if err != nil {
			return 0, err
		}
		for _, h := range heads {
			if h.ExpiresAt > 0 && h.ExpiresAt <= now.Unix() && refuseChild(h.SessionID) == nil {
				due = append(due, h.SessionID)
			}
		}
		if next == "" {
			break
		}
		cursor = next
	}
	n := 0
	var errs []error
	rctx := context.WithValue(ctx, retentionDelete{}, true) // the audit line's "retention"
	for _, id := range due {
		deleted, err := s.Delete(rctx, id)
		var busy *SessionNotResumableError
		var deleting *SessionDeletingError
		switch {
		case errors.As(err, &busy): // a turn runs on it: it is not idle after all
		case errors.As(err, &deleting): // another delete holds it: it finishes, or the next sweep does
		case err != nil:
			errs = append(errs, fmt.Errorf("delete expired %s: %w", id, err))
		case deleted:
			n++
		}
	}
	return n, errors.Join(errs...)
}
