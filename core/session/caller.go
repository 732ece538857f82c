package session

import (
	"context"
	"errors"

	"github.com/archmax-ai/archmax/core/identity"
	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/store"
)

// Who calls (Issue 17). The engine records identities; it does not decide what a caller
// may do — the host does, through a Guard the engine runs under the session's lease.

type callerKey struct{}

type guardKey struct{}

// WithCaller returns a context whose calls are made by p: a session a call starts is owned
// by p (its head's Owner, the summary's owner), and the trail step and lifecycle event that
// open the call — a turn's trigger step and its arrival, a decision's human step and
// decided event, a delivery's trigger step and delivered event — carry p as `by`, as does
// the session's turnBy. A zero p records nobody.
func WithCaller(ctx context.Context, p identity.Principal) context.Context {
	return context.WithValue(ctx, callerKey{}, p)
}

// CallerOf returns the principal WithCaller set (ok false when none).
func CallerOf(ctx context.Context) (identity.Principal, bool) {
	p, ok := ctx.Value(callerKey{}).(identity.Principal)
	return p, ok && !p.IsZero()
}

// callerRef is the context's caller as the record stores it (nil when none).
func callerRef(ctx context.Context) *identity.Principal {
	if p, ok := CallerOf(ctx); ok {
		return &p
	}
	return nil
}

// withBy adds the call's caller to an event's data as "by" (nothing when there is none).
func (r *run) withBy(data map[string]any) map[string]any {
	if p, ok := CallerOf(r.ctx); ok {
		data["by"] = p
	}
	return data
}

// SessionAccess is what a Guard (and Sessions.Access) sees of a session: whether it has
// committed, its workflow and status, and its owner's key ("" when none is recorded — a
// session written before owners were, or one that does not exist yet).
type SessionAccess struct {
	SessionID string
	Exists    bool
	Workflow  string
	Status    Status
	Owner     string
}

// Guard decides whether a call may go on, given the session as the call found it under
// the session's lease; an error refuses the call before anything is written.
type Guard func(SessionAccess) error

// WithGuard returns a context under which every public call (Send, Decide, Reply, Deliver,
// Wake, Continue) runs g on the session it leased, after reading it and before applying
// anything: so a host's authorization sees the committed owner and status, and a race
// between two callers (two starts of one new id, a decision after the session moved on)
// cannot slip past a check made before the lease. Sub-workflow children driven by their
// parent are not guarded again.
func WithGuard(ctx context.Context, g Guard) context.Context {
	return context.WithValue(ctx, guardKey{}, g)
}

// guardOf returns the guard of ctx, or nil.
func guardOf(ctx context.Context) Guard {
	g, _ := ctx.Value(guardKey{}).(Guard)
	return g
}

// accessOf is what a guard sees of head (Version 0: never committed).
func accessOf(id string, h *store.Head) SessionAccess {
	if h.Version == 0 {
		return SessionAccess{SessionID: id}
	}
	return SessionAccess{SessionID: id, Exists: true, Workflow: h.Workflow, Status: Status(h.Status), Owner: h.Owner}
}

// Access reads what an authorization check needs of a session from its head alone (one
// read, nothing decoded): Exists false, and no error, for a session that never committed;
// *spec.SessionStoreIdError for an id the store cannot address.
func (s *Sessions) Access(ctx context.Context, sessionID string) (SessionAccess, error) {
	id, err := spec.CheckSessionID(sessionID)
	if err != nil {
		return SessionAccess{}, err
	}
	h, err := s.log.Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return SessionAccess{SessionID: id}, nil
	}
	if err != nil {
		return SessionAccess{}, err
	}
	return accessOf(id, h), nil
}

// TurnApplied reports whether session sessionID has opened turn turnID (WithTurnID): it is
// the session's current turn or one of its remembered request turns. One head read; false,
// and no error, for a session that never committed.
func (s *Sessions) TurnApplied(ctx context.Context, sessionID, turnID string) (bool, error) {
	id, err := spec.CheckSessionID(sessionID)
	if err != nil {
		return false, err
	}
	h, err := s.log.Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return appliedTurn(h.Body, turnID), nil
}
