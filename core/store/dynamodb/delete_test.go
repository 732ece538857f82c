package dynamodb_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/archmax-ai/archmax/core/store"
	ddbstore "github.com/archmax-ai/archmax/core/store/dynamodb"
	s3store "github.com/archmax-ai/archmax/core/store/s3"
	"github.com/archmax-ai/archmax/core/store/storetest"
	"github.com/archmax-ai/archmax/local/dynamotest"
	"github.com/archmax-ai/archmax/local/s3test"
)

// RD22-1, RD22-3 on DynamoDB Local and gofakes3 through the real SDK clients.
func TestSessionDeleteConformance(t *testing.T) {
	storetest.TestSessionDelete(t, func(t *testing.T) storetest.Stores {
		client, table := dynamotest.NewTable(t)
		s3c, _ := s3test.NewBucket(t, "archmax-delete")
		blobs := s3store.NewBlobs(s3c, "archmax-delete", "sessions/")
		return storetest.Stores{Log: ddbstore.New(client, table, blobs), Files: s3store.NewFiles(s3c, "archmax-delete", "sessions/"), Blobs: blobs}
	})
}

// failHeadDelete is the table's client with the head's DeleteItem failing: a delete
// stopped after the items, before the head.
type failHeadDelete struct {
	ddbstore.API
	fail bool
}

func (f *failHeadDelete) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	if f.fail {
		return nil, errors.New("connection reset")
	}
	return f.API.DeleteItem(ctx, in, opts...)
}

// RD22-3: the head is deleted last, so a Delete stopped before it leaves the session
// found (its head) and a repeated Delete removes every item — read from the table itself.
func TestDeleteHeadLast(t *testing.T) {
	client, table := dynamotest.NewTable(t)
	api := &failHeadDelete{API: client, fail: true}
	l := ddbstore.New(api, table, newBlobs())
	ctx := t.Context()
	h, err := l.Acquire(ctx, "s1", "w", 60e9)
	if err != nil {
		t.Fatal(err)
	}
	c := &store.Commit{ExpectedVersion: h.Version, Head: store.Head{Workflow: "wf", Status: "completed",
		CreatedAt: "2026-01-01T00:00:00.000Z", UpdatedAt: "2026-01-01T00:00:00.000Z", Messages: 30, Trail: 2, Events: 1, Body: []byte(`{}`)}}
	for range 30 {
		c.Messages = append(c.Messages, []byte(`{"role":"user","text":"x"}`))
	}
	c.Trail = append(c.Trail, []byte(`{"to":"a"}`), []byte(`{"to":"b"}`))
	c.Events = append(c.Events, []byte(`{"event":"e"}`))
	if _, err := l.Commit(ctx, "s1", "w", c); err != nil {
		t.Fatal(err)
	}
	items := func() (n int, head bool) {
		out, err := client.Query(ctx, &dynamodb.QueryInput{TableName: &table, ConsistentRead: aws.Bool(true),
			KeyConditionExpression:    aws.String("pk = :pk"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: "S#s1"}}})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range out.Items {
			if it["sk"].(*types.AttributeValueMemberS).Value == "HEAD" {
				head = true
			}
		}
		return len(out.Items), head
	}
	if n, head := items(); n != 34 || !head {
		t.Fatalf("before: %d items, head %v; want 34 with the head", n, head)
	}
	if _, err := l.Delete(ctx, "s1"); err == nil {
		t.Fatal("Delete with the head's DeleteItem failing succeeded")
	}
	if n, head := items(); n != 1 || !head {
		t.Fatalf("after the stopped delete: %d items, head %v; want the head alone", n, head)
	}
	if _, err := l.Get(ctx, "s1"); err != nil {
		t.Fatalf("the stopped delete's session is not found: %v", err)
	}
	api.fail = false
	if existed, err := l.Delete(ctx, "s1"); err != nil || !existed {
		t.Fatalf("repeated Delete = %v, %v", existed, err)
	}
	if n, _ := items(); n != 0 {
		t.Fatalf("after the repeated delete: %d items", n)
	}
}

// RD22-8 on DynamoDB Local: the head's expiry is its ttl attribute (the table's TTL), kept
// across a takeover and a release without a commit, read from the table itself.
func TestHeadExpiryConformance(t *testing.T) {
	var client *dynamodb.Client
	var table string
	storetest.TestHeadExpiry(t, func(t *testing.T) store.Log {
		client, table = dynamotest.NewTable(t)
		return ddbstore.New(client, table, newBlobs())
	})
	out, err := client.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: &table, ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "S#s1"}, "sk": &types.AttributeValueMemberS{Value: "HEAD"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, has := out.Item["ttl"]; has {
		t.Errorf("a head committed without an expiry keeps ttl %v", out.Item["ttl"])
	}
}

// RD22-8: a takeover and a release without a commit leave the committed head's ttl at its
// expiry; a held lease-only head is never expired, a released one after LeaseOnlyTTL.
func TestHeadTTLAttribute(t *testing.T) {
	client, table := dynamotest.NewTable(t)
	l := ddbstore.New(client, table, newBlobs())
	ctx := t.Context()
	ttlOf := func(id string) string {
		t.Helper()
		out, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: &table, ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "S#" + id}, "sk": &types.AttributeValueMemberS{Value: "HEAD"}}})
		if err != nil {
			t.Fatal(err)
		}
		if n, ok := out.Item["ttl"].(*types.AttributeValueMemberN); ok {
			return n.Value
		}
		return ""
	}
	h, err := l.Acquire(ctx, "s1", "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if got := ttlOf("s1"); got != strconv.FormatInt(ddbstore.NeverExpires, 10) {
		t.Errorf("a held lease-only head: ttl %q", got)
	}
	c := &store.Commit{ExpectedVersion: h.Version, Head: store.Head{Workflow: "wf", Status: "completed", ExpiresAt: 1_900_000_000,
		CreatedAt: "2026-01-01T00:00:00.000Z", UpdatedAt: "2026-01-01T00:00:00.000Z", Body: []byte(`{}`)}}
	if _, err := l.Commit(ctx, "s1", "a", c); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx, "s1", "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(ctx, "s1", "b", time.Minute); err != nil {
		t.Fatal(err)
	}
	if got := ttlOf("s1"); got != "1900000000" {
		t.Errorf("a committed head taken over: ttl %q, want its expiry", got)
	}
	if err := l.Release(ctx, "s1", "b"); err != nil {
		t.Fatal(err)
	}
	if got := ttlOf("s1"); got != "1900000000" {
		t.Errorf("released without a commit: ttl %q, want its expiry", got)
	}
	if _, err := l.Acquire(ctx, "s2", "a", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx, "s2", "a"); err != nil {
		t.Fatal(err)
	}
	if got := ttlOf("s2"); got == "" || got == strconv.FormatInt(ddbstore.NeverExpires, 10) {
		t.Errorf("a released lease-only head: ttl %q, want its LeaseOnlyTTL expiry", got)
	}
}

// RD22-14 on DynamoDB Local: a session's tied idempotency records (K#<key> in its partition)
// go with its Delete.
func TestIdempotencyTiedConformance(t *testing.T) {
	storetest.TestIdempotencyTiedToSession(t, func(t *testing.T) store.Log {
		client, table := dynamotest.NewTable(t)
		return ddbstore.New(client, table, newBlobs())
	})
}
