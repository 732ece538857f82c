package dynamodb_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/archmax-ai/archmax/core/store"
	ddbstore "github.com/archmax-ai/archmax/core/store/dynamodb"
	"github.com/archmax-ai/archmax/core/store/storetest"
	"github.com/archmax-ai/archmax/local/dynamotest"
)

func TestUsageConformance(t *testing.T) {
	storetest.TestUsage(t, func(t *testing.T) store.UsageCounter {
		client, table := dynamotest.NewTable(t)
		return ddbstore.New(client, table, newBlobs())
	})
}

// One addition is one UpdateItem on the counter's own key, with a TTL a few days past its
// day; sessions' listings never meet the counter.
func TestUsageOneWriteWithTTL(t *testing.T) {
	client, table := dynamotest.NewTable(t)
	api := &counting{API: client}
	s := ddbstore.New(api, table, newBlobs())
	ctx := context.Background()
	if _, err := s.AddUsage(ctx, "desk", "2026-12-02", 10, 20); err != nil {
		t.Fatal(err)
	}
	if n := api.writes.Load(); n != 1 {
		t.Errorf("%d write requests, want 1", n)
	}
	out, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: &table, ConsistentRead: new(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "U#desk#2026-12-02"}, "sk": &types.AttributeValueMemberS{Value: "U"}}})
	if err != nil || out.Item == nil {
		t.Fatalf("the counter item: %v %v", out, err)
	}
	ttl, _ := strconv.ParseInt(out.Item["ttl"].(*types.AttributeValueMemberN).Value, 10, 64)
	want := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC).Add(store.UsageTTL).Unix()
	if ttl != want {
		t.Errorf("ttl %d, want %d (the day's end + %v)", ttl, want, store.UsageTTL)
	}
	heads, _, err := s.List(ctx, store.ListOptions{})
	if err != nil || len(heads) != 0 {
		t.Errorf("List sees the counter: %v %v", heads, err)
	}
}
