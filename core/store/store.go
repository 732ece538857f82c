// Package store defines the durable ports of the engine (DESIGN.md §3): the session log
// (a small mutable head plus append-only message, trail and event items, idempotency
// records) behind one writer per session, and file trees (authored specs, session files,
// spec snapshots).
//
// Implementations: store/memory (tests), store/fs (the embedded default, under .archmax/),
// store/dynamodb and store/s3 (AWS). Every implementation passes store/storetest.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Head is the small mutable part of a session: identity, the optimistic-concurrency
// version, the item counters that make log items visible, a few indexed attributes, and the
// engine's own record (Body, opaque to the store).
type Head struct {
	SessionID string `json:"sessionId"`
	// Version is 0 for a session never committed; each Commit stores ExpectedVersion+1.
	Version   int64  `json:"version"`
	Workflow  string `json:"workflow"`
	Status    string `json:"status"`
	CreatedAt string `json:"createdAt"` // ISO-8601 UTC, ms precision
	UpdatedAt string `json:"updatedAt"` // ISO-8601 UTC, ms precision; the listing order
	// ParkDue (ISO-8601 UTC) is when the session next needs the sweep: the resumeAt of an
	// input park with a scheduled wake, or for a running session the instant it counts as
	// stranded (session.StrandedAfter past its last commit); "" otherwise. Only heads with
	// ParkDue set are returned by ListDueParks.
	ParkDue string `json:"parkDue,omitempty"`
	// Owner is the key of the principal that owns the session (identity.Principal.Key: who
	// started it) — not the writer lease's owner. "" for a session with no recorded owner
	// (committed before owners were recorded). It is write-once: a commit may set it on a
	// session that has none, never change or clear it (ErrInvalidCommit). Heads with an
	// Owner are listed by it (ListOptions.Owner) through an index.
	Owner string `json:"owner,omitempty"`
	// ExpiresAt is when the session may be deleted for retention (RD22-8): Unix seconds, the
	// last head write plus the session TTL; 0 = kept until deleted. Only a root session's
	// head carries it (its sub-workflow children go with it). A store keeps it across
	// Acquire and Release; DynamoDB's TTL deletes the head once it has passed (store/dynamodb,
	// its ttl attribute), the other stores only record it.
	ExpiresAt int64 `json:"expiresAt,omitempty"`
	// Counters: how many items of each log are visible (items are numbered 0..n-1).
	Messages int64 `json:"messages"`
	Trail    int64 `json:"trail"`
	Events   int64 `json:"events"`
	// Body is the engine's session record (JSON object).
	Body json.RawMessage `json:"body,omitempty"`
	// Lease is the live writer lease, when one is held (informational on reads).
	Lease *Lease `json:"lease,omitempty"`
}

// Lease is a writer's claim on a session until ExpiresAt.
type Lease struct {
	Owner     string    `json:"owner"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// Live reports whether the lease is unexpired at now.
func (l *Lease) Live(now time.Time) bool { return l != nil && now.Before(l.ExpiresAt) }

// Commit is one atomic step of a writer: new log items (appended after the current
// counters), then the head that makes them visible.
type Commit struct {
	// ExpectedVersion must equal the stored version (0 for a new session).
	ExpectedVersion int64
	// Head is the new head. Its counters must equal the old counters plus the items below;
	// Version is set by the store to ExpectedVersion+1.
	Head     Head
	Messages []json.RawMessage
	Trail    []json.RawMessage
	Events   []json.RawMessage
}

// ListOptions filters and pages List.
type ListOptions struct {
	Workflow string // "" = every workflow
	Status   string // "" = every status
	// Owner, when set, lists only the heads whose Owner it is (an index of its own, not a
	// filter over every session).
	Owner  string
	Limit  int    // 0 = 50
	Cursor string // opaque, from a previous page
}

// Log is the session log port. All methods are safe for concurrent use; two processes
// (or Lambdas) on one session are serialised by the lease and the version condition.
type Log interface {
	// Acquire takes the writer lease for owner for ttl. It fails with ErrLeaseHeld when another
	// owner holds a live lease (the same owner may re-acquire, extending it). It returns the
	// current head, or a zero Head (Version 0, Body nil) for a session never committed.
	Acquire(ctx context.Context, sessionID, owner string, ttl time.Duration) (*Head, error)
	// Release drops owner's lease; releasing a lease not held is a no-op.
	Release(ctx context.Context, sessionID, owner string) error
	// Commit writes c's items then the head, conditional on the stored version being
	// c.ExpectedVersion and owner holding the lease. A failed condition returns ErrConflict
	// and makes nothing visible. On success it returns the stored head (new Version).
	Commit(ctx context.Context, sessionID, owner string, c *Commit) (*Head, error)
	// Get returns the committed head, or ErrNotFound.
	Get(ctx context.Context, sessionID string) (*Head, error)
	// Messages, TrailSteps and Events return the visible items [from, to) of a log (to is
	// clamped to the head's counter; items past the counters are never returned).
	Messages(ctx context.Context, sessionID string, from, to int64) ([]json.RawMessage, error)
	TrailSteps(ctx context.Context, sessionID string, from, to int64) ([]json.RawMessage, error)
	Events(ctx context.Context, sessionID string, from, to int64) ([]json.RawMessage, error)
	// List returns heads newest UpdatedAt first, and a cursor ("" on the last page).
	List(ctx context.Context, opts ListOptions) ([]*Head, string, error)
	// ListDueParks returns up to limit heads whose ParkDue <= now (ISO-8601 UTC), oldest due first.
	ListDueParks(ctx context.Context, now string, limit int) ([]*Head, error)
	// RememberIdempotent stores value under key if absent (for ttl) and returns (nil, false);
	// if the key is already recorded it returns the recorded value and true.
	RememberIdempotent(ctx context.Context, key string, value []byte, ttl time.Duration) ([]byte, bool, error)
	// PutIdempotent records value under key for ttl, replacing any recorded value (the
	// final answer of a request whose key RememberIdempotent claimed).
	PutIdempotent(ctx context.Context, key string, value []byte, ttl time.Duration) error
	// Delete removes a session's head and every item; it reports whether anything existed.
	Delete(ctx context.Context, sessionID string) (bool, error)
}

// FileInfo is one entry of a one-level listing.
type FileInfo struct {
	Name string // the entry's name within the listed folder (no slash)
	Dir  bool
	Size int64 // bytes; 0 for folders
}

// Files is a tree of files addressed by slash-separated keys without a leading slash.
// Folders exist only as key prefixes.
type Files interface {
	// Read returns the bytes at key, or ErrNotFound.
	Read(ctx context.Context, key string) ([]byte, error)
	// Write creates or replaces the file at key.
	Write(ctx context.Context, key string, data []byte) error
	// WriteIfAbsent writes only if nothing is at key; it reports whether it wrote.
	WriteIfAbsent(ctx context.Context, key string, data []byte) (bool, error)
	// Delete removes the file at key (ErrNotFound when absent).
	Delete(ctx context.Context, key string) error
	// List returns the direct children of the folder prefix ("" = root), sorted by name;
	// an empty result (not an error) when the folder does not exist.
	List(ctx context.Context, prefix string) ([]FileInfo, error)
	// Stat returns the entry at key (a file, or a folder when key is a non-empty prefix), or ErrNotFound.
	Stat(ctx context.Context, key string) (*FileInfo, error)
}

// Blobs stores large values (tool results, attachments, big variables) content-addressed
// per session, so a log item never carries more than a reference (DESIGN.md §3: values over
// ~64 KB; S3 key <sessionPrefix><sessionId>/_blobs/<sha256>). Put is idempotent: the same
// bytes give the same ref.
type Blobs interface {
	// Put stores data and returns its ref (the lowercase hex SHA-256 of data).
	Put(ctx context.Context, sessionID string, data []byte) (string, error)
	// Get returns the bytes of ref, or ErrNotFound.
	Get(ctx context.Context, sessionID, ref string) ([]byte, error)
	// DeleteSession removes every blob of a session.
	DeleteSession(ctx context.Context, sessionID string) error
}

// ErrUnsupported is returned by a store that cannot perform an operation (e.g. Delete on a
// read-only store).
var ErrUnsupported = errors.New("operation not supported by this store")

var (
	// ErrNotFound: no such session, item or file.
	ErrNotFound = errors.New("not found")
	// ErrLeaseHeld: another writer holds a live lease on the session.
	ErrLeaseHeld = errors.New("session lease held by another writer")
	// ErrConflict: a commit's version or lease condition failed.
	ErrConflict = errors.New("session changed under this writer")
)
