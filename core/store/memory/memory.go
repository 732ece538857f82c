// Package memory implements the store ports in process memory (DESIGN.md §3): Store is a
// store.Log and Files a store.Files. Nothing survives the process; they back the engine's
// tests and any embedding that needs no durability. Both copy every byte slice in and out,
// so callers never alias stored data.
package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/archmax-ai/archmax/core/store"
)

// Store is an in-memory store.Log. The zero value is not usable; call New.
type Store struct {
	// Clock returns the current time for lease and idempotency expiry; nil means time.Now.
	// Set it before first use.
	Clock func() time.Time

	mu       sync.Mutex
	sessions map[string]*session
	remember map[string]remembered
	tied     map[string]map[string]bool      // TieIdempotent: session id → the keys tied to it
	usage    map[[2]string]store.UsageTotals // AddUsage's counters by (workflow, day)
}

// session is one session's state; head is nil until the first commit. Items are appended
// only by a successful commit, together with the head that counts them.
type session struct {
	head                   *store.Head
	lease                  *store.Lease
	messages, trail, event []json.RawMessage
}

type remembered struct {
	value     []byte
	expiresAt time.Time
}

var _ store.Log = (*Store)(nil)

// New returns an empty Store.
func New() *Store {
	return &Store{sessions: map[string]*session{}, remember: map[string]remembered{}, tied: map[string]map[string]bool{}}
}

func (s *Store) now() time.Time {
	if s.Clock != nil {
		return s.Clock()
	}
	return time.Now()
}

// Acquire implements store.Log (15-Q1): it takes or extends owner's lease for ttl, or
// fails with store.ErrLeaseHeld while another owner's lease is live.
func (s *Store) Acquire(ctx context.Context, sessionID, owner string, ttl time.Duration) (*store.Head, error) {
	if err := checkAcquire(ctx, sessionID, owner, ttl); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	ss := s.sessions[sessionID]
	if ss == nil {
		ss = &session{}
		s.sessions[sessionID] = ss
	}
	if ss.lease.Live(now) && ss.lease.Owner != owner {
		return nil, store.ErrLeaseHeld
	}
	ss.lease = &store.Lease{Owner: owner, ExpiresAt: now.Add(ttl)}
	if ss.head == nil {
		return &store.Head{SessionID: sessionID, Lease: copyLease(ss.lease)}, nil
	}
	return s.view(ss, now), nil
}

// Release implements store.Log: it drops owner's lease; anything else is a no-op.
func (s *Store) Release(ctx context.Context, sessionID, owner string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss := s.sessions[sessionID]; ss != nil && ss.lease != nil && ss.lease.Owner == owner {
		ss.lease = nil
		if ss.head == nil {
			delete(s.sessions, sessionID)
		}
	}
	return nil
}

// Commit implements store.Log (02 §9.3, 15-Q1/Q2): conditional on owner's live lease and
// c.ExpectedVersion (else store.ErrConflict), it appends c's items and stores c.Head with
// Version ExpectedVersion+1. Counters that do not equal the old counters plus the items,
// or a Body that is not JSON, are rejected with a plain error.
func (s *Store) Commit(ctx context.Context, sessionID, owner string, c *store.Commit) (*store.Head, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	ss := s.sessions[sessionID]
	if ss == nil || !ss.lease.Live(now) || ss.lease.Owner != owner {
		return nil, fmt.Errorf("commit %s: %w (lease not held by %s)", sessionID, store.ErrConflict, owner)
	}
	old := &store.Head{}
	if ss.head != nil {
		old = ss.head
	}
	if old.Version != c.ExpectedVersion {
		return nil, fmt.Errorf("commit %s: %w (version %d, expected %d)", sessionID, store.ErrConflict, old.Version, c.ExpectedVersion)
	}
	if err := c.Validate(old); err != nil {
		return nil, fmt.Errorf("commit %s: %w", sessionID, err)
	}
	ss.messages = append(ss.messages[:old.Messages], copyItems(c.Messages)...)
	ss.trail = append(ss.trail[:old.Trail], copyItems(c.Trail)...)
	ss.event = append(ss.event[:old.Events], copyItems(c.Events)...)
	h := copyHead(&c.Head)
	h.SessionID = sessionID
	h.Version = c.ExpectedVersion + 1
	h.Lease = nil
	ss.head = h
	return s.view(ss, now), nil
}

// Get implements store.Log: the committed head with its live lease, or store.ErrNotFound.
func (s *Store) Get(ctx context.Context, sessionID string) (*store.Head, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.sessions[sessionID]
	if ss == nil || ss.head == nil {
		return nil, fmt.Errorf("session %s: %w", sessionID, store.ErrNotFound)
	}
	return s.view(ss, s.now()), nil
}

// Messages implements store.Log: visible transcript items [from, to), clamped to the counter.
func (s *Store) Messages(ctx context.Context, sessionID string, from, to int64) ([]json.RawMessage, error) {
	return s.items(ctx, sessionID, from, to, func(ss *session) ([]json.RawMessage, int64) { return ss.messages, ss.head.Messages })
}

// TrailSteps implements store.Log: visible trail items [from, to), clamped to the counter.
func (s *Store) TrailSteps(ctx context.Context, sessionID string, from, to int64) ([]json.RawMessage, error) {
	return s.items(ctx, sessionID, from, to, func(ss *session) ([]json.RawMessage, int64) { return ss.trail, ss.head.Trail })
}

// Events implements store.Log: visible event items [from, to), clamped to the counter.
func (s *Store) Events(ctx context.Context, sessionID string, from, to int64) ([]json.RawMessage, error) {
	return s.items(ctx, sessionID, from, to, func(ss *session) ([]json.RawMessage, int64) { return ss.event, ss.head.Events })
}

func (s *Store) items(ctx context.Context, sessionID string, from, to int64, pick func(*session) ([]json.RawMessage, int64)) ([]json.RawMessage, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.sessions[sessionID]
	if ss == nil || ss.head == nil {
		return nil, fmt.Errorf("session %s: %w", sessionID, store.ErrNotFound)
	}
	all, n := pick(ss)
	from, to = max(from, 0), min(to, n)
	if from >= to {
		return nil, nil
	}
	return copyItems(all[from:to]), nil
}

// List implements store.Log: committed heads, newest UpdatedAt first (ties by session id),
// filtered by opts and paged with an opaque cursor.
func (s *Store) List(ctx context.Context, opts store.ListOptions) ([]*store.Head, string, error) {
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	var heads []*store.Head
	for _, ss := range s.sessions {
		if ss.head != nil && store.Matches(ss.head, opts) {
			heads = append(heads, s.view(ss, now))
		}
	}
	return store.PageHeads(heads, opts)
}

// ListDueParks implements store.Log: up to limit heads (limit <= 0 means 50) whose ParkDue
// is set and <= now, oldest due first (ties by session id).
func (s *Store) ListDueParks(ctx context.Context, now string, limit int) ([]*store.Head, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.now()
	var heads []*store.Head
	for _, ss := range s.sessions {
		if ss.head != nil && ss.head.ParkDue != "" && ss.head.ParkDue <= now {
			heads = append(heads, s.view(ss, t))
		}
	}
	return store.DueFirst(heads, limit), nil
}

// RememberIdempotent implements store.Log: the first unexpired value under key wins.
func (s *Store) RememberIdempotent(ctx context.Context, key string, value []byte, ttl time.Duration) ([]byte, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if r, ok := s.remember[key]; ok && now.Before(r.expiresAt) {
		return clone(r.value), true, nil
	}
	s.remember[key] = remembered{value: clone(value), expiresAt: now.Add(ttl)}
	return nil, false, nil
}

// PutIdempotent implements store.Log.
func (s *Store) PutIdempotent(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.remember[key] = remembered{value: clone(value), expiresAt: s.now().Add(ttl)}
	return nil
}

// Delete implements store.Log: it drops the session (head, items and lease) and the
// idempotency records tied to it (TieIdempotent), and reports whether a committed head existed.
func (s *Store) Delete(ctx context.Context, sessionID string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.sessions[sessionID]
	delete(s.sessions, sessionID)
	for key := range s.tied[sessionID] {
		delete(s.remember, key)
	}
	delete(s.tied, sessionID)
	return ss != nil && ss.head != nil, nil
}

var _ store.IdempotencyTier = (*Store)(nil)

// TieIdempotent implements store.IdempotencyTier: Delete of sessionID drops key's record. A
// session without a committed head is skipped.
func (s *Store) TieIdempotent(ctx context.Context, sessionID, key string, _ time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss := s.sessions[sessionID]; ss == nil || ss.head == nil {
		return nil
	}
	if s.tied[sessionID] == nil {
		s.tied[sessionID] = map[string]bool{}
	}
	s.tied[sessionID][key] = true
	return nil
}

// view returns a copy of ss's committed head carrying the lease when it is live at now.
func (s *Store) view(ss *session, now time.Time) *store.Head {
	h := copyHead(ss.head)
	if ss.lease.Live(now) {
		h.Lease = copyLease(ss.lease)
	}
	return h
}

func checkAcquire(ctx context.Context, sessionID, owner string, ttl time.Duration) error {
	switch {
	case sessionID == "":
		return fmt.Errorf("acquire: empty session id")
	case owner == "":
		return fmt.Errorf("acquire %s: empty owner", sessionID)
	case ttl <= 0:
		return fmt.Errorf("acquire %s: non-positive lease ttl %v", sessionID, ttl)
	}
	return ctx.Err()
}

func copyHead(h *store.Head) *store.Head {
	c := *h
	c.Body = clone(h.Body)
	c.Lease = copyLease(h.Lease)
	return &c
}

func copyLease(l *store.Lease) *store.Lease {
	if l == nil {
		return nil
	}
	c := *l
	return &c
}

func copyItems(items []json.RawMessage) []json.RawMessage {
	out := make([]json.RawMessage, len(items))
	for i, it := range items {
		out[i] = clone(it)
	}
	return out
}

// clone copies b, keeping nil as nil and empty as empty.
func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append(make([]byte, 0, len(b)), b...)
}
