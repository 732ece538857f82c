package dynamodb_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/archmax-ai/archmax/core/store"
	ddbstore "github.com/archmax-ai/archmax/core/store/dynamodb"
	"github.com/archmax-ai/archmax/local/dynamotest"
)

// TestListShardsMergeInPageHeadsOrder (02 §9.4): heads are spread over the ListShards
// partitions of the byUpdated index, and List merges them in exactly store.PageHeads'
// order (newest UpdatedAt first, ties by session id ascending), page after page, with and
// without a filter.
func TestListShardsMergeInPageHeadsOrder(t *testing.T) {
	client, table := dynamotest.NewTable(t)
	l := ddbstore.New(client, table, newBlobs())
	var all []*store.Head
	for i := range 40 {
		h := &store.Head{SessionID: fmt.Sprintf("s%02d", i), Workflow: "wf",
			UpdatedAt: fmt.Sprintf("2025-01-01T00:00:0%d.000Z", i%3)} // many ties
		seedHead(t, l, h.SessionID, h.UpdatedAt, raw(`{}`), "")
		if i%2 == 1 { // seedHead commits workflow "wf": move every other session to "b"
			h.Workflow = "b"
			g, err := l.Acquire(t.Context(), h.SessionID, "w", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			c := &store.Commit{ExpectedVersion: g.Version, Head: *g}
			c.Head.Workflow = "b"
			if _, err := l.Commit(t.Context(), h.SessionID, "w", c); err != nil {
				t.Fatal(err)
			}
		}
		all = append(all, h)
	}

	out, err := client.Scan(t.Context(), &dynamodb.ScanInput{TableName: &table})
	if err != nil {
		t.Fatal(err)
	}
	shards := map[string]bool{}
	for _, it := range out.Items {
		if k, ok := it["listKey"].(*types.AttributeValueMemberS); ok {
			n, err := strconv.Atoi(strings.TrimPrefix(k.Value, "S#"))
			if !strings.HasPrefix(k.Value, "S#") || err != nil || n < 0 || n >= ddbstore.ListShards {
				t.Fatalf("listKey %q, want S#<0..%d>", k.Value, ddbstore.ListShards-1)
			}
			shards[k.Value] = true
		}
	}
	if len(shards) < 2 {
		t.Fatalf("40 sessions use %d listing partitions, want them spread", len(shards))
	}

	for _, workflow := range []string{"", "b"} {
		var matching []*store.Head
		for _, h := range all {
			if store.Matches(h, store.ListOptions{Workflow: workflow}) {
				matching = append(matching, h)
			}
		}
		sorted, _, err := store.PageHeads(matching, store.ListOptions{Limit: len(all)})
		if err != nil {
			t.Fatal(err)
		}
		want := ids(sorted)
		for _, limit := range []int{1, 3, 7, 50} {
			opts := store.ListOptions{Workflow: workflow, Limit: limit}
			var got []string
			for pages := 0; ; pages++ {
				if pages > len(all) {
					t.Fatalf("limit %d: the cursor never ends", limit)
				}
				page, cursor, err := l.List(t.Context(), opts)
				if err != nil {
					t.Fatal(err)
				}
				if len(page) > limit || (cursor != "" && len(page) != limit) {
					t.Fatalf("limit %d: page of %d with cursor %q", limit, len(page), cursor)
				}
				got = append(got, ids(page)...)
				if cursor == "" {
					break
				}
				opts.Cursor = cursor
			}
			if !slices.Equal(got, want) {
				t.Fatalf("workflow %q limit %d: pages %v\nwant %v", workflow, limit, got, want)
			}
		}
	}
}

// queries wraps an API, keeping every Query's index, key condition and filter.
type queries struct {
	ddbstore.API
	mu  sync.Mutex
	got []*dynamodb.QueryInput
}

func (q *queries) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	q.mu.Lock()
	c := *in
	q.got = append(q.got, &c)
	q.mu.Unlock()
	return q.API.Query(ctx, in, opts...)
}

func (q *queries) take() []*dynamodb.QueryInput {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.got
	q.got = nil
	return out
}

// TestListingByOwnerAndDecisionQueueUseIndexes (Issue 17): an owner's listing queries
// only that owner's partitions of byOwner, and the decision queue the DECISION partition of
// byParkDue — never a filter over every session; a session's owner is on its head item
// (with the sharded ownerKey), and a decision park's queue entry is not a due time.
func TestListingByOwnerAndDecisionQueueUseIndexes(t *testing.T) {
	client, table := dynamotest.NewTable(t)
	q := &queries{API: client}
	l := ddbstore.New(q, table, newBlobs())
	const dana = "jwt:https://issuer.example/#dana"
	for i, r := range []struct{ id, owner, status string }{
		{"a1", dana, "awaiting_decision"}, {"a2", dana, "completed"}, {"b1", "iam:arn:aws:iam::1:role/r", "awaiting_decision"},
	} {
		h, err := l.Acquire(t.Context(), r.id, "w", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		c := &store.Commit{Head: *h}
		c.Head.Lease, c.Head.Workflow, c.Head.Status, c.Head.Owner, c.Head.Body = nil, "wf", r.status, r.owner, raw(`{}`)
		c.Head.UpdatedAt = fmt.Sprintf("2025-01-01T00:00:0%d.000Z", i)
		if _, err := l.Commit(t.Context(), r.id, "w", c); err != nil {
			t.Fatal(err)
		}
	}
	item, err := client.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: &table,
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "S#a1"}, "sk": &types.AttributeValueMemberS{Value: "HEAD"}}})
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := item.Item["owner"].(*types.AttributeValueMemberS); o == nil || o.Value != dana {
		t.Fatalf("head item owner = %v", item.Item["owner"])
	}
	if k, _ := item.Item["ownerKey"].(*types.AttributeValueMemberS); k == nil || !strings.HasSuffix(k.Value, "#"+dana) {
		t.Fatalf("head item ownerKey = %v, want <shard>#<owner>", item.Item["ownerKey"])
	}
	if pk, _ := item.Item["parkKey"].(*types.AttributeValueMemberS); pk == nil || pk.Value != "DECISION" {
		t.Fatalf("a decision park's parkKey = %v, want DECISION", item.Item["parkKey"])
	}
	if h, err := l.Get(t.Context(), "a1"); err != nil || h.ParkDue != "" || h.Owner != dana {
		t.Fatalf("Get = %+v, %v; want the owner and no ParkDue", h, err)
	}
	q.take()

	got, _, err := l.List(t.Context(), store.ListOptions{Owner: dana})
	if err != nil || len(got) != 2 || got[0].SessionID != "a2" || got[1].SessionID != "a1" {
		t.Fatalf("List(owner) = %v, %v", got, err)
	}
	ins := q.take()
	if len(ins) != ddbstore.ListShards {
		t.Fatalf("owner listing: %d queries, want one per shard (%d)", len(ins), ddbstore.ListShards)
	}
	for _, in := range ins {
		key, _ := in.ExpressionAttributeValues[":key"].(*types.AttributeValueMemberS)
		if in.IndexName == nil || *in.IndexName != "byOwner" || key == nil || !strings.HasSuffix(key.Value, "#"+dana) || in.FilterExpression != nil {
			t.Fatalf("owner listing query: index %v key %v filter %v", in.IndexName, key, in.FilterExpression)
		}
	}

	got, _, err = l.List(t.Context(), store.ListOptions{Status: "awaiting_decision"})
	if err != nil || len(got) != 2 || got[0].SessionID != "b1" || got[1].SessionID != "a1" {
		t.Fatalf("List(awaiting_decision) = %v, %v", got, err)
	}
	ins = q.take()
	if len(ins) != 1 || *ins[0].IndexName != "byParkDue" || ins[0].FilterExpression != nil {
		t.Fatalf("decision queue: %d queries (%+v), want one on byParkDue's DECISION partition, no filter", len(ins), ins)
	}
	if key, _ := ins[0].ExpressionAttributeValues[":key"].(*types.AttributeValueMemberS); key == nil || key.Value != "DECISION" {
		t.Fatalf("decision queue key %v", ins[0].ExpressionAttributeValues)
	}
	// the sweep never sees a decision park
	if due, err := l.ListDueParks(t.Context(), "9999-01-01T00:00:00.000Z", 10); err != nil || len(due) != 0 {
		t.Fatalf("due parks = %v, %v", due, err)
	}
}
