package dynamodb_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
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
