package dynamodb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
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

// List implements store.Log (02 §9.4): committed heads, newest UpdatedAt first and ties by
// session id ascending (store.PageHeads' order), filtered by opts and paged with an opaque
// cursor ("" on the last page). It queries the partitions of one index (listPlan: byUpdated,
// an owner's partitions of byOwner, or the decision queue of byParkDue) in parallel, then
// page by page as the merge needs more, and merges them; the filters the index does not
// answer are a FilterExpression over its rows. A head whose body blob is missing (a session
// being deleted, still in the eventually consistent index) or whose item is malformed is
// left out of the page.
func (s *Store) List(ctx context.Context, opts store.ListOptions) ([]*store.Head, string, error) {
	limit := opts.Limit
	if limit <= 0 {
		limit = store.DefaultLimit
	}
	after, err := store.DecodeCursor(opts.Cursor)
	if err != nil {
		return nil, "", err
	}
	plan := listPlan(opts)
	n := len(plan.keys)
	// Enough per shard for limit+1 heads spread evenly, plus one; a shard used up is re-queried.
	pageSize := (limit+n)/n + 1
	shards := make([]*shardQuery, n)
	var (
		wg   sync.WaitGroup
		errs = make([]error, n)
	)
	for i := range shards {
		shards[i] = s.shardQuery(plan, plan.keys[i], opts, after, pageSize)
		wg.Go(func() { _, _, errs[i] = shards[i].peek(ctx) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, "", fmt.Errorf("list: %w", err)
	}

	// One head past the page tells whether another page exists.
	now := s.now()
	var heads []*store.Head
	for len(heads) <= limit {
		// The shards are in listSort order, newest first but ties by id descending: take every
		// head of the newest UpdatedAt from all shards, then order that group by id.
		group, err := nextGroup(ctx, shards)
		if err != nil {
			return nil, "", fmt.Errorf("list: %w", err)
		}
		if len(group) == 0 {
			break
		}
		slices.SortFunc(group, func(a, b listRow) int { return strings.Compare(a.sessionID, b.sessionID) })
		for _, r := range group {
			h, err := s.listedHead(ctx, r.sessionID, r.item, now)
			if err != nil {
				return nil, "", fmt.Errorf("list: %w", err)
			}
			if h != nil {
				heads = append(heads, h)
			}
		}
	}
	page, next := store.TakePage(heads, limit)
	return page, next, nil
}

// indexPlan is the index a listing reads: its name, the hash key attribute and the values
// of its partitions to merge, the range key attribute (whose values are listSort's
// "<updatedAt>#<sessionId>"), and whether the plan already selects the status filter.
type indexPlan struct {
	index, hashAttr, rangeAttr string
	keys                       []string
	statusInKey                bool
}

// listPlan picks the index of a listing: an owner's partitions of byOwner; the decision
// queue (byParkDue's DECISION partition) for the status awaiting_decision alone; else the
// ListShards partitions of byUpdated.
func listPlan(opts store.ListOptions) indexPlan {
	switch {
	case opts.Owner != "":
		keys := make([]string, ListShards)
		for i := range keys {
			keys[i] = ownerShardKey(i, opts.Owner)
		}
		return indexPlan{index: indexByOwner, hashAttr: attrOwnerKey, rangeAttr: attrListSort, keys: keys}
	case opts.Status == StatusAwaitingDecision:
		return indexPlan{index: indexByParkDue, hashAttr: attrParkKey, rangeAttr: attrParkDue, keys: []string{decisionValue}, statusInKey: true}
	}
	keys := make([]string, ListShards)
	for i := range keys {
		keys[i] = listShardKey(i)
	}
	return indexPlan{index: indexByUpdated, hashAttr: attrListKey, rangeAttr: attrListSort, keys: keys}
}

// listRow is a head item from a listing index with its ordering fields.
type listRow struct {
	updatedAt, sessionID string
	item                 map[string]types.AttributeValue
}

// shardQuery reads one partition of a listing index newest first, a page at a time.
type shardQuery struct {
	client API
	in     *dynamodb.QueryInput
	after  *store.Cursor // rows at or before it are dropped
	rows   []listRow     // fetched, not yet taken
	done   bool          // no page left
}

// shardQuery prepares the query of the partition key of plan: descending range key, from
// just above the cursor (every head of the cursor's UpdatedAt is read; peek drops those at
// or before it).
func (s *Store) shardQuery(plan indexPlan, key string, opts store.ListOptions, after *store.Cursor, pageSize int) *shardQuery {
	x := newExpr()
	keyCond := x.n(plan.hashAttr) + " = " + x.v("key", str(key))
	if after != nil {
		// '$' follows '#': the bound is above every listSort "<cursor updatedAt>#<id>".
		keyCond += " AND " + x.n(plan.rangeAttr) + " < " + x.v("before", str(after.UpdatedAt+"$"))
	}
	var filters []string
	if opts.Workflow != "" {
		filters = append(filters, x.n(attrWorkflow)+" = "+x.v("workflow", str(opts.Workflow)))
	}
	if opts.Status != "" && !plan.statusInKey {
		filters = append(filters, x.n(attrStatus)+" = "+x.v("status", str(opts.Status)))
	}
	in := &dynamodb.QueryInput{
		TableName:                 &s.table,
		IndexName:                 aws.String(plan.index),
		KeyConditionExpression:    &keyCond,
		ExpressionAttributeNames:  x.names,
		ExpressionAttributeValues: x.values,
		ScanIndexForward:          aws.Bool(false),
		Limit:                     aws.Int32(int32(pageSize)),
	}
	if len(filters) > 0 {
		in.FilterExpression = aws.String(strings.Join(filters, " AND "))
	}
	return &shardQuery{client: s.client, in: in, after: after}
}

// peek returns the shard's next row without taking it, querying pages until one is
// buffered; false when the shard has no row left.
func (q *shardQuery) peek(ctx context.Context) (listRow, bool, error) {
	for len(q.rows) == 0 && !q.done {
		out, err := q.client.Query(ctx, q.in)
		if err != nil {
			return listRow{}, false, err
		}
		for _, item := range out.Items {
			r := listRow{sessionID: sessionIDOf(item), item: item}
			if u, ok := item[attrUpdatedAt].(*types.AttributeValueMemberS); ok {
				r.updatedAt = u.Value
			}
			if q.after == nil || r.updatedAt < q.after.UpdatedAt ||
				(r.updatedAt == q.after.UpdatedAt && r.sessionID > q.after.SessionID) {
				q.rows = append(q.rows, r)
			}
		}
		q.in.ExclusiveStartKey = out.LastEvaluatedKey
		q.done = len(out.LastEvaluatedKey) == 0
	}
	if len(q.rows) == 0 {
		return listRow{}, false, nil
	}
	return q.rows[0], true, nil
}

// nextGroup takes from every shard the rows of the newest UpdatedAt any shard has next;
// nil when all shards are used up.
func nextGroup(ctx context.Context, shards []*shardQuery) ([]listRow, error) {
	newest, found := "", false
	for _, q := range shards {
		r, ok, err := q.peek(ctx)
		if err != nil {
			return nil, err
		}
		if ok && (!found || r.updatedAt > newest) {
			newest, found = r.updatedAt, true
		}
	}
	if !found {
		return nil, nil
	}
	var group []listRow
	for _, q := range shards {
		for {
			r, ok, err := q.peek(ctx)
			if err != nil {
				return nil, err
			}
			if !ok || r.updatedAt != newest {
				break
			}
			group = append(group, r)
			q.rows = q.rows[1:]
		}
	}
	return group, nil
}

// listedHead decodes a head item of an index for List or ListDueParks: nil (skipped) when
// its body blob is gone or the item is malformed, so one such head never fails a page.
func (s *Store) listedHead(ctx context.Context, sessionID string, item map[string]types.AttributeValue, now time.Time) (*store.Head, error) {
	h, err := s.decodeHead(ctx, sessionID, item, now)
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, errMalformedHead) {
		return nil, nil
	}
	return h, err
}

// ListDueParks implements store.Log: up to limit heads (limit <= 0 means 50) from the
// sparse byParkDue GSI with parkDue <= now, oldest due first (ties by session id within
// the page). A head whose body blob is missing or whose item is malformed is left out.
func (s *Store) ListDueParks(ctx context.Context, now string, limit int) ([]*store.Head, error) {
	if limit <= 0 {
		limit = store.DefaultLimit
	}
	x := newExpr()
	keyCond := fmt.Sprintf("%s = %s AND %s <= %s", x.n(attrParkKey), x.v("parked", str(parkedValue)),
		x.n(attrParkDue), x.v("now", str(now)))
	t := s.now()
	var heads []*store.Head
	err := s.query(ctx, &dynamodb.QueryInput{
		TableName:                 &s.table,
		IndexName:                 aws.String(indexByParkDue),
		KeyConditionExpression:    &keyCond,
		ExpressionAttributeNames:  x.names,
		ExpressionAttributeValues: x.values,
		Limit:                     aws.Int32(int32(limit)),
	}, func(item map[string]types.AttributeValue) error {
		h, err := s.listedHead(ctx, sessionIDOf(item), item, t)
		if err != nil || h == nil {
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
