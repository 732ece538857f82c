package memory

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/archmax-ai/archmax/core/store"
)

// defaultLimit is the page size of List and ListDueParks when the caller gives none.
const defaultLimit = 50

// cursor is the position after the last head of a page in the listing order.
type cursor struct {
	UpdatedAt string `json:"u"`
	SessionID string `json:"s"`
}

func matches(h *store.Head, opts store.ListOptions) bool {
	return (opts.Workflow == "" || h.Workflow == opts.Workflow) && (opts.Status == "" || h.Status == opts.Status)
}

// newestFirst orders heads by UpdatedAt descending, then session id ascending.
func newestFirst(a, b *store.Head) int {
	return cmp.Or(cmp.Compare(b.UpdatedAt, a.UpdatedAt), cmp.Compare(a.SessionID, b.SessionID))
}

// page sorts the filtered heads and returns the page after opts.Cursor with the cursor of
// the next page ("" when this page is the last).
func page(heads []*store.Head, opts store.ListOptions) ([]*store.Head, string, error) {
	slices.SortFunc(heads, newestFirst)
	if opts.Cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(opts.Cursor)
		var after cursor
		if err == nil {
			err = json.Unmarshal(raw, &after)
		}
		if err != nil {
			return nil, "", fmt.Errorf("list: invalid cursor %q", opts.Cursor)
		}
		pos := &store.Head{UpdatedAt: after.UpdatedAt, SessionID: after.SessionID}
		i, found := slices.BinarySearchFunc(heads, pos, newestFirst)
		if found {
			i++
		}
		heads = heads[i:]
	}
	limit := opts.Limit
	if limit <= 0 {
		limit = defaultLimit
	}
	if len(heads) <= limit {
		return heads, "", nil
	}
	last := heads[limit-1]
	raw, err := json.Marshal(cursor{UpdatedAt: last.UpdatedAt, SessionID: last.SessionID})
	if err != nil {
		return nil, "", err
	}
	return heads[:limit], base64.RawURLEncoding.EncodeToString(raw), nil
}

// dueFirst sorts heads by ParkDue ascending (then session id) and keeps the first limit
// (limit <= 0 means defaultLimit).
func dueFirst(heads []*store.Head, limit int) []*store.Head {
	slices.SortFunc(heads, func(a, b *store.Head) int {
		return cmp.Or(cmp.Compare(a.ParkDue, b.ParkDue), cmp.Compare(a.SessionID, b.SessionID))
	})
	if limit <= 0 {
		limit = defaultLimit
	}
	return heads[:min(limit, len(heads))]
}
