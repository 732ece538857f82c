package dynamodb

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/archmax-ai/archmax/core/store"
)

// logKind is one of the three append-only logs of a session.
type logKind struct {
	prefix  string // sort-key prefix
	counter func(h *store.Head) int64
	items   func(c *store.Commit) []json.RawMessage
}

var (
	messagesLog = logKind{"M", func(h *store.Head) int64 { return h.Messages }, func(c *store.Commit) []json.RawMessage { return c.Messages }}
	trailLog    = logKind{"T", func(h *store.Head) int64 { return h.Trail }, func(c *store.Commit) []json.RawMessage { return c.Trail }}
	eventsLog   = logKind{"E", func(h *store.Head) int64 { return h.Events }, func(c *store.Commit) []json.RawMessage { return c.Events }}
	logs        = []logKind{messagesLog, trailLog, eventsLog}
)

// itemSK is the sort key of item seq of a log written under lease epoch.
func itemSK(prefix string, seq, epoch int64) string {
	return fmt.Sprintf("%s#%0*d#%0*d", prefix, seqDigits, seq, epochDigits, epoch)
}

// Messages implements store.Log: visible transcript items [from, to), clamped to the counter.
func (s *Store) Messages(ctx context.Context, sessionID string, from, to int64) ([]json.RawMessage, error) {
	return s.items(ctx, sessionID, messagesLog, from, to)
}

// TrailSteps implements store.Log: visible trail items [from, to), clamped to the counter.
func (s *Store) TrailSteps(ctx context.Context, sessionID string, from, to int64) ([]json.RawMessage, error) {
	return s.items(ctx, sessionID, trailLog, from, to)
}

// Events implements store.Log: visible event items [from, to), clamped to the counter
// (events past their TTL are missing from the result).
func (s *Store) Events(ctx context.Context, sessionID string, from, to int64) ([]json.RawMessage, error) {
	return s.items(ctx, sessionID, eventsLog, from, to)
}

// items reads the head's counter (consistent GetItem), then queries the keys of seq
// [from, to) and keeps, for each seq, the item of the highest epoch (the last in key order).
func (s *Store) items(ctx context.Context, sessionID string, l logKind, from, to int64) ([]json.RawMessage, error) {
	w, err := s.writerState(ctx, sessionID)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", sessionID, err)
	}
	if w == nil || w.version == 0 {
		return nil, fmt.Errorf("session %s: %w", sessionID, store.ErrNotFound)
	}
	from, to = max(from, 0), min(to, l.counter(&w.old))
	if from >= to {
		return nil, nil
	}
	x := newExpr()
	keyCond := fmt.Sprintf("%s = %s AND %s BETWEEN %s AND %s", x.n(attrPK), x.v("pk", str(sessionPK(sessionID))),
		x.n(attrSK), x.v("lo", str(itemSK(l.prefix, from, 0))), x.v("hi", str(itemSK(l.prefix, to-1, 1<<63-1))))
	out := make([]json.RawMessage, 0, to-from)
	last := int64(-1)
	err = s.query(ctx, &dynamodb.QueryInput{
		TableName:                 &s.table,
		KeyConditionExpression:    &keyCond,
		ExpressionAttributeNames:  x.names,
		ExpressionAttributeValues: x.values,
		ConsistentRead:            aws.Bool(true),
	}, func(item map[string]types.AttributeValue) error {
		sk, _ := item[attrSK].(*types.AttributeValueMemberS)
		if sk == nil || len(sk.Value) < len(l.prefix)+1+seqDigits {
			return fmt.Errorf("malformed item key %v", item[attrSK])
		}
		seq, err := strconv.ParseInt(sk.Value[len(l.prefix)+1:len(l.prefix)+1+seqDigits], 10, 64)
		if err != nil {
			return fmt.Errorf("malformed item key %q", sk.Value)
		}
		v, err := s.itemValue(ctx, sessionID, item)
		if err != nil {
			return err
		}
		if seq == last { // a later epoch shadows an abandoned write of the same seq
			out[len(out)-1] = v
		} else {
			out = append(out, v)
		}
		last = seq
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", sessionID, err)
	}
	return out, nil
}

// itemValue returns a log item's JSON, inline or from its blob.
func (s *Store) itemValue(ctx context.Context, sessionID string, item map[string]types.AttributeValue) (json.RawMessage, error) {
	if v, ok := item[attrValue].(*types.AttributeValueMemberS); ok {
		return json.RawMessage(v.Value), nil
	}
	ref, ok := item[attrBlob].(*types.AttributeValueMemberS)
	if !ok {
		return nil, fmt.Errorf("item %v has neither %s nor %s", item[attrSK], attrValue, attrBlob)
	}
	b, err := s.blobs.Get(ctx, sessionID, ref.Value)
	if err != nil {
		return nil, fmt.Errorf("item blob %s: %w", ref.Value, err)
	}
	return b, nil
}

// listCursor is the position after the last head of a List page.
type listCursor struct {
	UpdatedAt string `json:"u"`
	SessionID string `json:"s"`
}

// List implements store.Log: committed heads from the byUpdated GSI, newest UpdatedAt
// first (ties by session id, descending), filtered by opts with a FilterExpression and
// paged with an opaque cursor ("" on the last page).
func (s *Store) List(ctx context.Context, opts store.ListOptions) ([]*store.Head, string, error) {
	limit := opts.Limit
	if limit <= 0 {
		limit = store.DefaultLimit
	}
	x := newExpr()
	keyCond := x.n(attrListKey) + " = " + x.v("listKey", str(listValue))
	if opts.Cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(opts.Cursor)
		var after listCursor
		if err == nil {
			err = json.Unmarshal(raw, &after)
		}
		if err != nil {
			return nil, "", fmt.Errorf("list: invalid cursor %q", opts.Cursor)
		}
		keyCond += " AND " + x.n(attrListSort) + " < " + x.v("after", str(listSort(after.UpdatedAt, after.SessionID)))
	}
	var filters []string
	if opts.Workflow != "" {
		filters = append(filters, x.n(attrWorkflow)+" = "+x.v("workflow", str(opts.Workflow)))
	}
	if opts.Status != "" {
		filters = append(filters, x.n(attrStatus)+" = "+x.v("status", str(opts.Status)))
	}
	in := &dynamodb.QueryInput{
		TableName:                 &s.table,
		IndexName:                 aws.String(indexByUpdated),
		KeyConditionExpression:    &keyCond,
		ExpressionAttributeNames:  x.names,
		ExpressionAttributeValues: x.values,
		ScanIndexForward:          aws.Bool(false),
		Limit:                     aws.Int32(int32(limit + 1)),
	}
	if len(filters) > 0 {
		in.FilterExpression = aws.String(strings.Join(filters, " AND "))
	}
	// One head past the page tells whether another page exists.
	now := time.Now()
	var heads []*store.Head
	err := s.query(ctx, in, func(item map[string]types.AttributeValue) error {
		h, err := s.decodeHead(ctx, sessionIDOf(item), item, now)
		if err != nil {
			return err
		}
		heads = append(heads, h)
		if len(heads) > limit {
			return errStop
		}
		return nil
	})
	if err != nil {
		return nil, "", fmt.Errorf("list: %w", err)
	}
	if len(heads) <= limit {
		return heads, "", nil
	}
	last := heads[limit-1]
	raw, err := json.Marshal(listCursor{UpdatedAt: last.UpdatedAt, SessionID: last.SessionID})
	if err != nil {
		return nil, "", err
	}
	return heads[:limit], base64.RawURLEncoding.EncodeToString(raw), nil
}

// ListDueParks implements store.Log: up to limit heads (limit <= 0 means 50) from the
// sparse byParkDue GSI with parkDue <= now, oldest due first (ties by session id within
// the page).
func (s *Store) ListDueParks(ctx context.Context, now string, limit int) ([]*store.Head, error) {
	if limit <= 0 {
		limit = store.DefaultLimit
	}
	x := newExpr()
	keyCond := fmt.Sprintf("%s = %s AND %s <= %s", x.n(attrParkKey), x.v("parked", str(parkedValue)),
		x.n(attrParkDue), x.v("now", str(now)))
	t := time.Now()
	var heads []*store.Head
	err := s.query(ctx, &dynamodb.QueryInput{
		TableName:                 &s.table,
		IndexName:                 aws.String(indexByParkDue),
		KeyConditionExpression:    &keyCond,
		ExpressionAttributeNames:  x.names,
		ExpressionAttributeValues: x.values,
		Limit:                     aws.Int32(int32(limit)),
	}, func(item map[string]types.AttributeValue) error {
		h, err := s.decodeHead(ctx, sessionIDOf(item), item, t)
		if err != nil {
			return err
		}
		heads = append(heads, h)
		if len(heads) == limit {
			return errStop
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("due parks: %w", err)
	}
	return store.DueFirst(heads, limit), nil
}

// sessionIDOf returns the session id of a head item (its pk without the "S#" prefix).
func sessionIDOf(item map[string]types.AttributeValue) string {
	pk, _ := item[attrPK].(*types.AttributeValueMemberS)
	if pk == nil {
		return ""
	}
	return strings.TrimPrefix(pk.Value, "S#")
}
