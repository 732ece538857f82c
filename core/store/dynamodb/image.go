package dynamodb

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/archmax-ai/archmax/core/store"
)

// ErrNotAHead: a stream image that is not a committed session head (an item, an
// idempotency record, a lease-only head).
var ErrNotAHead = errors.New("not a committed session head")

// SessionOfKeys returns the session id of a head item's keys (pk S#<id>, sk HEAD): what a
// table stream record names. ok is false for any other item.
func SessionOfKeys(pk, sk string) (string, bool) {
	id, ok := strings.CutPrefix(pk, "S#")
	return id, ok && sk == skHead && id != ""
}

// HeadOfImage decodes a head item as the table's stream carries it (a REMOVE record's old
// image) into the head it was — its body read from the blob store when it was offloaded,
// so call it before the session's blobs are deleted. ErrNotAHead for an image that is not
// a committed head (RD22-9: the retention consumer ignores it).
func (s *Store) HeadOfImage(ctx context.Context, sessionID string, image map[string]types.AttributeValue) (*store.Head, error) {
	if _, committed := image[attrVersion]; !committed {
		return nil, fmt.Errorf("session %s: %w", sessionID, ErrNotAHead)
	}
	h, err := s.decodeHead(ctx, sessionID, image, s.now())
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", sessionID, err)
	}
	h.Lease = nil
	return h, nil
}
