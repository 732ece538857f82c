// Package fs implements the store ports on the local file system: the embedded default,
// kept under the git-ignored .archmax/ directory of the user's project (DESIGN.md §3).
// Store is a store.Log, Files a store.Files. Unix only (advisory locks use flock(2)).
//
// # Session log layout
//
// Under the directory given to Open:
//
//	sessions/<sessionId>/.lock          flock(2) target serialising Acquire, Commit, Release and Delete
//	sessions/<sessionId>/lease.json     the writer lease {"owner", "expiresAt"}; absent when released
//	sessions/<sessionId>/head.json      the committed head (store.Head without the lease; the
//	                                    engine's Body verbatim under "body")
//	sessions/<sessionId>/m/<seq>.json   transcript message <seq> (10 digits, from 0000000000)
//	sessions/<sessionId>/t/<seq>.json   trail step <seq>
//	sessions/<sessionId>/e/<seq>.json   event <seq>
//	sessions/<sessionId>/i/<sha256(key)> an idempotency record tied to the session (TieIdempotent):
//	                                    Delete removes idempotency/<sha256(key)>.json too
//	idempotency/.lock                   flock(2) target serialising RememberIdempotent
//	idempotency/<sha256(key)>.json      {"key", "value" (base64), "expiresAt"}
//	trash/<random>/                     a deleted session while its files are removed (swept by Open)
//
// # Concurrency and crash safety (02 §9.3, 15-Q1–Q3)
//
// Two processes on one session behave like two Lambdas on the DynamoDB table. Each
// Acquire, Commit, Release and Delete holds the session's flock for its critical section;
// the lease itself is data (lease.json with its expiry), so a killed process holds nothing
// once its lease expires. Commit checks the lease and the head's version, writes and
// fsyncs the new item files past the current counters, then replaces head.json atomically
// (temp file, fsync, rename, directory fsync): the rename is the commit point. Item files
// past the head's counters — left by a writer that died or lost its lease — are never read
// and are overwritten by the next writer; a stale temp file is ignored and overwritten.
//
// The bytes written per commit are the new items plus head.json, whose size depends on the
// engine's Body but not on the length of the logs: a commit never rewrites earlier items.
//
// Reads take no lock: head.json is only ever replaced whole, and items below its counters
// never change. List and ListDueParks scan every head, which suits a local store.
//
// Session ids are validated by the engine (02 §9.2); Open's store still refuses ids that
// are empty, ".", "..", contain a slash, a backslash or NUL, and resolves every path
// through an os.Root, so nothing escapes the directory. A session's folder is named by
// the id's portable encoding (names.go: "Chat" → "!chat", "a:b:3" → "a%3ab%3a3"), so ids
// that differ only in case, or that a file system would alter, never share one; the root's
// format file marks that layout (a log of the earlier, unencoded layout is migrated by Open,
// migrate.go).
package fs

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path"
	"strings"
	"time"

	"github.com/archmax-ai/archmax/core/store"
)

// Store is a store.Log over a directory (see the package doc for the layout). It is safe
// for concurrent use by goroutines and by processes sharing the directory.
type Store struct {
	root *os.Root
	// Clock returns the current time for lease and idempotency expiry; nil means time.Now.
	// Set it before first use (tests on an injected clock).
	Clock func() time.Time
}

func (s *Store) now() time.Time {
	if s.Clock != nil {
		return s.Clock()
	}
	return time.Now()
}

var _ store.Log = (*Store)(nil)

const (
	sessionsDir    = "sessions"
	idempotencyDir = "idempotency"
	trashDir       = "trash"
	headFile       = "head.json"
	leaseFile      = "lease.json"
	seqDigits      = 10
)

// Open opens (creating it if needed) the session log under dir. Close releases it.
func Open(dir string) (*Store, error) {
	for _, d := range []string{sessionsDir, idempotencyDir, trashDir} {
		if err := os.MkdirAll(path.Join(dir, d), 0o755); err != nil {
			return nil, fmt.Errorf("open session store: %w", err)
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("open session store: %w", err)
	}
	if err := migrateLog(root); err != nil {
		root.Close()
		return nil, fmt.Errorf("open session store: %w", err)
	}
	// Sweep deleted sessions whose removal was cut short (best effort, see removeSession).
	if entries, err := iofs.ReadDir(root.FS(), trashDir); err == nil {
		for _, e := range entries {
			root.RemoveAll(path.Join(trashDir, e.Name()))
		}
	}
	return &Store{root: root}, nil
}

// Close releases the store's directory handle.
func (s *Store) Close() error { return s.root.Close() }

// Acquire implements store.Log (15-Q1): it takes or extends owner's lease for ttl, or
// fails with store.ErrLeaseHeld while another owner's lease is live.
func (s *Store) Acquire(ctx context.Context, sessionID, owner string, ttl time.Duration) (*store.Head, error) {
	switch {
	case owner == "":
		return nil, fmt.Errorf("acquire %s: empty owner", sessionID)
	case ttl <= 0:
		return nil, fmt.Errorf("acquire %s: non-positive lease ttl %v", sessionID, ttl)
	}
	dir, err := sessionDir(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	unlock, err := lock(s.root, dir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	now := s.now()
	lease, err := s.readLease(dir)
	if err != nil {
		return nil, err
	}
	if lease.Live(now) && lease.Owner != owner {
		return nil, fmt.Errorf("acquire %s: %w", sessionID, store.ErrLeaseHeld)
	}
	lease = &store.Lease{Owner: owner, ExpiresAt: now.Add(ttl)}
	data, err := json.Marshal(lease)
	if err != nil {
		return nil, err
	}
	if err := replaceFile(s.root, path.Join(dir, leaseFile), data); err != nil {
		return nil, fmt.Errorf("acquire %s: %w", sessionID, err)
	}
	h, err := s.readHead(dir)
	if errors.Is(err, store.ErrNotFound) {
		h, err = &store.Head{SessionID: sessionID}, nil
	}
	if err != nil {
		return nil, err
	}
	h.Lease = lease
	return h, nil
}

// Release implements store.Log: it drops owner's lease; anything else is a no-op.
func (s *Store) Release(ctx context.Context, sessionID, owner string) error {
	dir, err := sessionDir(ctx, sessionID)
	if err != nil {
		return err
	}
	if _, err := s.root.Stat(dir); errors.Is(err, iofs.ErrNotExist) {
		return nil // never acquired: do not create the directory just to find no lease
	}
	unlock, err := lock(s.root, dir)
	if err != nil {
		return err
	}
	defer unlock()
	lease, err := s.readLease(dir)
	if err != nil || lease == nil || lease.Owner != owner {
		return err
	}
	// A session never committed leaves nothing behind (its lock waiters start over).
	if _, err := s.root.Stat(path.Join(dir, headFile)); errors.Is(err, iofs.ErrNotExist) {
		err = s.removeSession(dir)
	} else {
		err = s.root.Remove(path.Join(dir, leaseFile))
	}
	if err != nil {
		return fmt.Errorf("release %s: %w", sessionID, err)
	}
	return nil
}

// Commit implements store.Log (02 §9.3, 15-Q1/Q2): conditional on owner's live lease and
// c.ExpectedVersion (else store.ErrConflict), it writes c's items after the stored
// counters, then atomically replaces the head with Version ExpectedVersion+1. Counters
// that do not equal the old counters plus the items, or a Body that is not JSON, are
// rejected with a plain error before anything is written.
func (s *Store) Commit(ctx context.Context, sessionID, owner string, c *store.Commit) (*store.Head, error) {
	dir, err := sessionDir(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	unlock, err := lock(s.root, dir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	lease, err := s.readLease(dir)
	if err != nil {
		return nil, err
	}
	if !lease.Live(s.now()) || lease.Owner != owner {
		return nil, fmt.Errorf("commit %s: %w (lease not held by %s)", sessionID, store.ErrConflict, owner)
	}
	old, err := s.readHead(dir)
	if errors.Is(err, store.ErrNotFound) {
		old, err = &store.Head{}, nil
	}
	if err != nil {
		return nil, err
	}
	if old.Version != c.ExpectedVersion {
		return nil, fmt.Errorf("commit %s: %w (version %d, expected %d)", sessionID, store.ErrConflict, old.Version, c.ExpectedVersion)
	}
	if err := c.Validate(old); err != nil {
		return nil, fmt.Errorf("commit %s: %w", sessionID, err)
	}
	for _, lg := range []struct {
		sub   string
		first int64
		items []json.RawMessage
	}{{"m", old.Messages, c.Messages}, {"t", old.Trail, c.Trail}, {"e", old.Events, c.Events}} {
		if err := s.writeItems(path.Join(dir, lg.sub), lg.first, lg.items); err != nil {
			return nil, fmt.Errorf("commit %s: %w", sessionID, err)
		}
	}
	h := c.Head
	h.SessionID = sessionID
	h.Version = c.ExpectedVersion + 1
	h.Lease = nil
	data, err := encodeHead(&h)
	if err != nil {
		return nil, fmt.Errorf("commit %s: %w", sessionID, err)
	}
	if err := replaceFile(s.root, path.Join(dir, headFile), data); err != nil {
		return nil, fmt.Errorf("commit %s: %w", sessionID, err)
	}
	h.Body = append(json.RawMessage(nil), h.Body...)
	h.Lease = lease
	return &h, nil
}

// writeItems writes items as <dir>/<first+i>.json, each fsynced, overwriting leftovers of
// an abandoned commit, then fsyncs dir so the new names survive a crash.
func (s *Store) writeItems(dir string, first int64, items []json.RawMessage) error {
	if len(items) == 0 {
		return nil
	}
	if err := s.root.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i, it := range items {
		if err := writeSynced(s.root, itemPath(dir, first+int64(i)), it, os.O_TRUNC); err != nil {
			return err
		}
	}
	return syncDir(s.root, dir)
}

// Get implements store.Log: the committed head with its live lease, or store.ErrNotFound.
func (s *Store) Get(ctx context.Context, sessionID string) (*store.Head, error) {
	dir, err := sessionDir(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	return s.view(dir, s.now())
}

// Messages implements store.Log: visible transcript items [from, to), clamped to the counter.
func (s *Store) Messages(ctx context.Context, sessionID string, from, to int64) ([]json.RawMessage, error) {
	return s.items(ctx, sessionID, "m", from, to, func(h *store.Head) int64 { return h.Messages })
}

// TrailSteps implements store.Log: visible trail items [from, to), clamped to the counter.
func (s *Store) TrailSteps(ctx context.Context, sessionID string, from, to int64) ([]json.RawMessage, error) {
	return s.items(ctx, sessionID, "t", from, to, func(h *store.Head) int64 { return h.Trail })
}

// Events implements store.Log: visible event items [from, to), clamped to the counter.
func (s *Store) Events(ctx context.Context, sessionID string, from, to int64) ([]json.RawMessage, error) {
	return s.items(ctx, sessionID, "e", from, to, func(h *store.Head) int64 { return h.Events })
}

func (s *Store) items(ctx context.Context, sessionID, sub string, from, to int64, count func(*store.Head) int64) ([]json.RawMessage, error) {
	dir, err := sessionDir(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	h, err := s.readHead(dir)
	if err != nil {
		return nil, err
	}
	from, to = max(from, 0), min(to, count(h))
	if from >= to {
		return nil, nil
	}
	out := make([]json.RawMessage, 0, to-from)
	for seq := from; seq < to; seq++ {
		data, err := s.root.ReadFile(itemPath(path.Join(dir, sub), seq))
		if errors.Is(err, iofs.ErrNotExist) { // below the counter: deleted since the head was read
			return nil, fmt.Errorf("session %s: item %s/%d: %w", sessionID, sub, seq, store.ErrNotFound)
		}
		if err != nil {
			return nil, fmt.Errorf("session %s: %w", sessionID, err)
		}
		out = append(out, data)
	}
	return out, nil
}

// List implements store.Log: committed heads, newest UpdatedAt first (ties by session id),
// filtered by opts and paged with an opaque cursor.
func (s *Store) List(ctx context.Context, opts store.ListOptions) ([]*store.Head, string, error) {
	heads, err := s.scan(ctx, func(h *store.Head) bool { return store.Matches(h, opts) })
	if err != nil {
		return nil, "", err
	}
	return store.PageHeads(heads, opts)
}

// ListDueParks implements store.Log: up to limit heads (limit <= 0 means 50) whose ParkDue
// is set and <= now, oldest due first (ties by session id).
func (s *Store) ListDueParks(ctx context.Context, now string, limit int) ([]*store.Head, error) {
	heads, err := s.scan(ctx, func(h *store.Head) bool { return h.ParkDue != "" && h.ParkDue <= now })
	if err != nil {
		return nil, err
	}
	return store.DueFirst(heads, limit), nil
}

// scan returns every committed head accepted by keep. Directories without a readable head (a lease
// taken but never committed, or a session being deleted) are skipped.
func (s *Store) scan(ctx context.Context, keep func(*store.Head) bool) ([]*store.Head, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	entries, err := iofs.ReadDir(s.root.FS(), sessionsDir)
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	now := s.now()
	var heads []*store.Head
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		h, err := s.view(path.Join(sessionsDir, e.Name()), now)
		if err != nil {
			// gone meanwhile, or unreadable: one bad head must not hide every other session
			// from listings and sweeps (Get still reports it), as in the DynamoDB adapter
			continue
		}
		if keep(h) {
			heads = append(heads, h)
		}
	}
	return heads, nil
}

// idempotencyRecord is the content of idempotency/<sha256(key)>.json.
type idempotencyRecord struct {
	Key       string    `json:"key"`
	Value     []byte    `json:"value"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// RememberIdempotent implements store.Log: the first unexpired value under key wins.
// Records are kept as files named by the SHA-256 of the key; an expired record is replaced
// by the next RememberIdempotent of its key.
func (s *Store) RememberIdempotent(ctx context.Context, key string, value []byte, ttl time.Duration) ([]byte, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	unlock, err := lock(s.root, idempotencyDir)
	if err != nil {
		return nil, false, err
	}
	defer unlock()
	sum := sha256.Sum256([]byte(key))
	name := path.Join(idempotencyDir, hex.EncodeToString(sum[:])+".json")
	now := s.now()
	data, err := s.root.ReadFile(name)
	switch {
	case err == nil:
		var r idempotencyRecord
		if err := json.Unmarshal(data, &r); err != nil {
			return nil, false, fmt.Errorf("idempotency record %s: %w", name, err)
		}
		if now.Before(r.ExpiresAt) {
			return r.Value, true, nil
		}
	case !errors.Is(err, iofs.ErrNotExist):
		return nil, false, err
	}
	data, err = json.Marshal(idempotencyRecord{Key: key, Value: value, ExpiresAt: now.Add(ttl)})
	if err != nil {
		return nil, false, err
	}
	if err := replaceFile(s.root, name, data); err != nil {
		return nil, false, fmt.Errorf("remember %q: %w", key, err)
	}
	return nil, false, nil
}

// PutIdempotent implements store.Log: it replaces the record of key under the same lock.
func (s *Store) PutIdempotent(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	unlock, err := lock(s.root, idempotencyDir)
	if err != nil {
		return err
	}
	defer unlock()
	sum := sha256.Sum256([]byte(key))
	name := path.Join(idempotencyDir, hex.EncodeToString(sum[:])+".json")
	data, err := json.Marshal(idempotencyRecord{Key: key, Value: value, ExpiresAt: s.now().Add(ttl)})
	if err != nil {
		return err
	}
	if err := replaceFile(s.root, name, data); err != nil {
		return fmt.Errorf("put idempotency record %q: %w", key, err)
	}
	return nil
}

// Delete implements store.Log: it removes the idempotency records tied to the session
// (TieIdempotent), then the session's directory (head, items and lease), and reports whether
// a committed head existed.
func (s *Store) Delete(ctx context.Context, sessionID string) (bool, error) {
	dir, err := sessionDir(ctx, sessionID)
	if err != nil {
		return false, err
	}
	if _, err := s.root.Stat(dir); errors.Is(err, iofs.ErrNotExist) {
		return false, nil
	}
	unlock, err := lock(s.root, dir)
	if err != nil {
		return false, err
	}
	defer unlock()
	_, err = s.root.Stat(path.Join(dir, headFile))
	existed := err == nil
	if err := s.untie(dir); err != nil {
		return false, fmt.Errorf("delete %s: idempotency records: %w", sessionID, err)
	}
	if err := s.removeSession(dir); err != nil {
		return false, fmt.Errorf("delete %s: %w", sessionID, err)
	}
	return existed, nil
}

var _ store.IdempotencyTier = (*Store)(nil)

// tiedDir is the folder of a session's tied idempotency records: one empty file per record,
// named as the record's file is (without ".json").
const tiedDir = "i"

// TieIdempotent implements store.IdempotencyTier: under the session's lock it records key's
// record in the session's folder, which Delete reads. A session without a committed head is
// skipped (no folder is made for it).
func (s *Store) TieIdempotent(ctx context.Context, sessionID, key string, _ time.Duration) error {
	dir, err := sessionDir(ctx, sessionID)
	if err != nil {
		return err
	}
	if _, err := s.root.Stat(path.Join(dir, headFile)); errors.Is(err, iofs.ErrNotExist) {
		return nil
	}
	unlock, err := lock(s.root, dir)
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := s.root.Stat(path.Join(dir, headFile)); errors.Is(err, iofs.ErrNotExist) {
		return nil // deleted meanwhile
	}
	sum := sha256.Sum256([]byte(key))
	tied := path.Join(dir, tiedDir)
	if err := s.root.MkdirAll(tied, 0o755); err != nil {
		return fmt.Errorf("tie %s: %w", sessionID, err)
	}
	if err := writeSynced(s.root, path.Join(tied, hex.EncodeToString(sum[:])), nil, os.O_TRUNC); err != nil {
		return fmt.Errorf("tie %s: %w", sessionID, err)
	}
	return syncDir(s.root, tied)
}

// untie removes the idempotency records tied to the locked session directory dir.
func (s *Store) untie(dir string) error {
	entries, err := iofs.ReadDir(s.root.FS(), path.Join(dir, tiedDir))
	if errors.Is(err, iofs.ErrNotExist) || len(entries) == 0 {
		return nil
	}
	if err != nil {
		return err
	}
	unlock, err := lock(s.root, idempotencyDir)
	if err != nil {
		return err
	}
	defer unlock()
	for _, e := range entries {
		name := e.Name()
		if len(name) != 2*sha256.Size || strings.Trim(name, "0123456789abcdef") != "" {
			continue
		}
		if err := s.root.Remove(path.Join(idempotencyDir, name+".json")); err != nil && !errors.Is(err, iofs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// removeSession removes a locked session directory. Renaming it into trash/ is the
// deletion: the session's path is free at once, and writers waiting on the old lock file
// (or arriving now) start over on a fresh directory. Clearing the trash is best effort: a
// writer that resolved the old directory just before the rename may still create its lock
// file there, and Open sweeps whatever is left.
func (s *Store) removeSession(dir string) error {
	trash := path.Join(trashDir, rand.Text())
	if err := s.root.Rename(dir, trash); err != nil {
		return err
	}
	s.root.RemoveAll(trash)
	return nil
}

// view reads the committed head of dir and attaches the lease when it is live at now.
func (s *Store) view(dir string, now time.Time) (*store.Head, error) {
	h, err := s.readHead(dir)
	if err != nil {
		return nil, err
	}
	lease, err := s.readLease(dir)
	if err != nil {
		return nil, err
	}
	if lease.Live(now) {
		h.Lease = lease
	}
	return h, nil
}

// readHead decodes dir's head.json; store.ErrNotFound when the session has none.
func (s *Store) readHead(dir string) (*store.Head, error) {
	data, err := s.root.ReadFile(path.Join(dir, headFile))
	if errors.Is(err, iofs.ErrNotExist) {
		return nil, fmt.Errorf("session %s: %w", path.Base(dir), store.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	var h store.Head
	if err := json.Unmarshal(data, &h); err != nil {
		return nil, fmt.Errorf("session %s: corrupt %s: %w", path.Base(dir), headFile, err)
	}
	h.Lease = nil
	return &h, nil
}

// readLease decodes dir's lease.json; nil when there is none.
func (s *Store) readLease(dir string) (*store.Lease, error) {
	data, err := s.root.ReadFile(path.Join(dir, leaseFile))
	if errors.Is(err, iofs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var l store.Lease
	if err := json.Unmarshal(data, &l); err != nil {
		return nil, fmt.Errorf("session %s: corrupt %s: %w", path.Base(dir), leaseFile, err)
	}
	return &l, nil
}

// encodeHead renders h as head.json: the head's fields, then h.Body spliced in verbatim
// (encoding/json would re-encode it, and the store must return it byte for byte).
func encodeHead(h *store.Head) ([]byte, error) {
	meta := *h
	meta.Body, meta.Lease = nil, nil
	data, err := json.Marshal(&meta)
	if err != nil || len(h.Body) == 0 {
		return data, err
	}
	data = append(data[:len(data)-1], `,"body":`...)
	data = append(data, h.Body...)
	return append(data, '}'), nil
}

// maxDirName bounds a session's directory name below the 255-byte file-name limit of
// common file systems; longer ids (up to the spec's 512 bytes) use a digest instead.
const maxDirName = 200

// sessionDir returns the directory of sessionID relative to the root, refusing ids that
// are not a single path segment: sessionDirName — the id's encoding, or "=<sha256 of the
// id>" when that is longer than maxDirName bytes (head.json keeps the id itself).
func sessionDir(ctx context.Context, sessionID string) (string, error) {
	if sessionID == "" || sessionID == "." || sessionID == ".." || strings.ContainsAny(sessionID, "/\\\x00") {
		return "", fmt.Errorf("invalid session id %q", sessionID)
	}
	return path.Join(sessionsDir, sessionDirName(sessionID)), ctx.Err()
}

func itemPath(dir string, seq int64) string {
	return path.Join(dir, fmt.Sprintf("%0*d.json", seqDigits, seq))
}
