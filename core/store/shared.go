package store

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
)

// Shared by every adapter, so they agree on validation, listing order and cursors.

var (
	// ErrInvalidCommit: a commit whose counters do not match its items, or whose body is not JSON.
	ErrInvalidCommit = errors.New("invalid commit")
	// ErrInvalidKey: a file key that is not a clean relative slash path.
	ErrInvalidKey = errors.New("invalid file key")
)

// Validate checks c against the stored head old (every adapter calls it before writing): each counter must grow by exactly
// the number of items committed to its log, Body must be JSON when present, and an Owner
// old has must be c's too (write-once: a session's owner never changes).
func (c *Commit) Validate(old *Head) error {
	if old.Owner != "" && c.Head.Owner != old.Owner {
		return fmt.Errorf("%w: the session's owner is %q; a commit cannot change it to %q", ErrInvalidCommit, old.Owner, c.Head.Owner)
	}
	for _, k := range []struct {
		log            string
		old, new, adds int64
	}{
		{"messages", old.Messages, c.Head.Messages, int64(len(c.Messages))},
		{"trail", old.Trail, c.Head.Trail, int64(len(c.Trail))},
		{"events", old.Events, c.Head.Events, int64(len(c.Events))},
	} {
		if k.new != k.old+k.adds {
			return fmt.Errorf("%w: %s counter %d does not equal %d stored plus %d new items", ErrInvalidCommit, k.log, k.new, k.old, k.adds)
		}
	}
	if len(c.Head.Body) > 0 && !json.Valid(c.Head.Body) {
		return fmt.Errorf("%w: head body is not valid JSON", ErrInvalidCommit)
	}
	return nil
}

// CheckKey refuses file keys that are not clean relative slash paths (ErrInvalidKey):
// empty, containing NUL, or with an empty, "." or ".." segment; then it reports ctx's error.
func CheckKey(ctx context.Context, key string) error {
	if key == "" || strings.IndexByte(key, 0) >= 0 {
		return fmt.Errorf("%w %q", ErrInvalidKey, key)
	}
	for seg := range strings.SplitSeq(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("%w %q: empty, \".\" or \"..\" segment", ErrInvalidKey, key)
		}
	}
	return ctx.Err()
}

// DefaultLimit is the page size of List and ListDueParks when the caller gives none.
const DefaultLimit = 50

// Cursor is the position after the last head of a List page in the listing order; on the
// wire it is opaque (base64url JSON).
type Cursor struct {
	UpdatedAt string `json:"u"`
	SessionID string `json:"s"`
}

// DecodeCursor reads a List cursor; "" is the first page (nil). Only a cursor Encode could
// have written is accepted: base64url of exactly {"u":<RFC 3339 instant>,"s":<session id>}
// in Encode's own bytes, the id non-empty without '/' or control characters. Anything else
// — another JSON value, unknown, missing or empty fields, a reordered or re-spaced
// encoding — is an error, so a cursor the API never issued is refused, not read as a
// position.
func DecodeCursor(s string) (*Cursor, error) {
	if s == "" {
		return nil, nil
	}
	invalid := fmt.Errorf("list: invalid cursor %q", s)
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, invalid
	}
	var c Cursor // issued bytes only: the round trip refuses unknown fields, trailing data, re-spacing
	if json.Unmarshal(raw, &c) != nil || c.Encode() != s {
		return nil, invalid
	}
	if _, err := time.Parse(time.RFC3339Nano, c.UpdatedAt); err != nil {
		return nil, invalid
	}
	if c.SessionID == "" || strings.ContainsFunc(c.SessionID, func(r rune) bool {
		return r == '/' || unicode.IsControl(r)
	}) {
		return nil, invalid
	}
	return &c, nil
}

// Encode renders the cursor for the wire.
func (c Cursor) Encode() string {
	raw, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(raw)
}

// TakePage keeps the first limit heads (already in listing order and after the cursor) and
// returns the cursor of the next page ("" when these are the last).
func TakePage(heads []*Head, limit int) ([]*Head, string) {
	if limit <= 0 {
		limit = DefaultLimit
	}
	if len(heads) <= limit {
		return heads, ""
	}
	last := heads[limit-1]
	return heads[:limit], Cursor{UpdatedAt: last.UpdatedAt, SessionID: last.SessionID}.Encode()
}

// Matches reports whether h passes opts' workflow, status and owner filters.
func Matches(h *Head, opts ListOptions) bool {
	return (opts.Workflow == "" || h.Workflow == opts.Workflow) && (opts.Status == "" || h.Status == opts.Status) &&
		(opts.Owner == "" || h.Owner == opts.Owner)
}

// newestFirst orders heads by UpdatedAt descending, then session id ascending.
func newestFirst(a, b *Head) int {
	return cmp.Or(cmp.Compare(b.UpdatedAt, a.UpdatedAt), cmp.Compare(a.SessionID, b.SessionID))
}

// PageHeads sorts the filtered heads and returns the page after opts.Cursor with the cursor of
// the next page ("" when this page is the last).
func PageHeads(heads []*Head, opts ListOptions) ([]*Head, string, error) {
	slices.SortFunc(heads, newestFirst)
	after, err := DecodeCursor(opts.Cursor)
	if err != nil {
		return nil, "", err
	}
	if after != nil {
		pos := &Head{UpdatedAt: after.UpdatedAt, SessionID: after.SessionID}
		i, found := slices.BinarySearchFunc(heads, pos, newestFirst)
		if found {
			i++
		}
		heads = heads[i:]
	}
	page, next := TakePage(heads, opts.Limit)
	return page, next, nil
}

// DueFirst sorts heads by ParkDue ascending (then session id) and keeps the first limit
// (limit <= 0 means DefaultLimit).
func DueFirst(heads []*Head, limit int) []*Head {
	slices.SortFunc(heads, func(a, b *Head) int {
		return cmp.Or(cmp.Compare(a.ParkDue, b.ParkDue), cmp.Compare(a.SessionID, b.SessionID))
	})
	if limit <= 0 {
		limit = DefaultLimit
	}
	return heads[:min(limit, len(heads))]
}
