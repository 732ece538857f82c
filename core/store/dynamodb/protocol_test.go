package dynamodb_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/archmax-ai/archmax/core/store"
	ddbstore "github.com/archmax-ai/archmax/core/store/dynamodb"
	"github.com/archmax-ai/archmax/local/dynamotest"
)

// isHeadUpdate reports whether an UpdateItem is a commit's head update.
func isHeadUpdate(in *dynamodb.UpdateItemInput) bool {
	return strings.Contains(aws.ToString(in.UpdateExpression), "#version = ")
}

// headFault wraps an API and fails the next commit head update with fail (when set),
// without sending it.
type headFault struct {
	ddbstore.API
	fail atomic.Pointer[error]
}

func (h *headFault) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if isHeadUpdate(in) {
		if err := h.fail.Swap(nil); err != nil {
			return nil, *err
		}
	}
	return h.API.UpdateItem(ctx, in, opts...)
}

// rawHead returns the stored head item of a session.
func rawHead(t *testing.T, client ddbstore.API, table, id string) map[string]types.AttributeValue {
	t.Helper()
	out, err := client.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: &table, ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "S#" + id}, "sk": &types.AttributeValueMemberS{Value: "HEAD"}}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

func epochOf(t *testing.T, client ddbstore.API, table, id string) int64 {
	t.Helper()
	n, ok := rawHead(t, client, table, id)["epoch"].(*types.AttributeValueMemberN)
	if !ok {
		t.Fatalf("head of %s has no epoch", id)
	}
	e, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestEpochCountsTakeovers (15-Q1): the epoch is a per-session counter that only a takeover
// (absent, released or expired lease, the owner's own included) increments; renewing a live
// lease keeps it.
func TestEpochCountsTakeovers(t *testing.T) {
	client, table := dynamotest.NewTable(t)
	l := ddbstore.New(client, table, newBlobs())
	ctx := t.Context()
	step := func(what string, do func() error, want int64) {
		t.Helper()
		if err := do(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got := epochOf(t, client, table, "s1"); got != want {
			t.Fatalf("after %s: epoch %d, want %d", what, got, want)
		}
	}
	acquire := func(owner string, ttl time.Duration) func() error {
		return func() error { _, err := l.Acquire(ctx, "s1", owner, ttl); return err }
	}
	step("first acquire", acquire("a", 300*time.Millisecond), 1)
	step("renewal of the live lease", acquire("a", 300*time.Millisecond), 1)
	time.Sleep(500 * time.Millisecond)
	step("re-acquire of a's own expired lease", acquire("a", time.Minute), 2)
	step("release", func() error { return l.Release(ctx, "s1", "a") }, 2)
	step("acquire after release (the lease-only head was kept)", acquire("b", time.Minute), 3)
	if _, err := l.Acquire(ctx, "s1", "a", time.Minute); !errors.Is(err, store.ErrLeaseHeld) {
		t.Fatalf("a while b holds the lease: err = %v, want ErrLeaseHeld", err)
	}
	if got := epochOf(t, client, table, "s1"); got != 3 {
		t.Fatalf("a refused acquire changed the epoch to %d", got)
	}
}

// TestRenewalDuringCommit (15-Q1): the engine renews its lease while a turn runs; a renewal
// between a commit's item write and its head update must not fail that commit, and it
// extends the lease.
func TestRenewalDuringCommit(t *testing.T) {
	client, table := dynamotest.NewTable(t)
	api := &counting{API: client}
	l := ddbstore.New(api, table, newBlobs())
	h, err := l.Acquire(t.Context(), "s1", "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var renewed *store.Head
	api.beforeBatch = func() {
		api.beforeBatch = nil
		if renewed, err = l.Acquire(t.Context(), "s1", "a", 2*time.Minute); err != nil {
			t.Errorf("renewal: %v", err)
		}
	}
	h.Lease = nil
	if _, err := commit(t, l, h, "a", raw(`"m0"`)); err != nil {
		t.Fatalf("commit with a renewal in flight: %v", err)
	}
	if renewed == nil || !renewed.Lease.ExpiresAt.After(time.Now().Add(90*time.Second)) {
		t.Fatalf("renewal = %+v, want the lease extended to about 2 minutes", renewed)
	}
	g, err := l.Get(t.Context(), "s1")
	if err != nil || g.Version != 1 || g.Lease == nil || !g.Lease.ExpiresAt.Equal(renewed.Lease.ExpiresAt) {
		t.Fatalf("head = %+v, %v; want v1 with the renewed lease", g, err)
	}
	if msgs, err := l.Messages(t.Context(), "s1", 0, 1); err != nil || fmt.Sprintf("%s", msgs) != `["m0"]` {
		t.Fatalf("messages = %s, %v", msgs, err)
	}
}

// TestEpochIndependentOfClocks (15-Q1): a writer whose clock runs a day ahead (its
// wall-clock epoch would be a day ahead too) abandons an item at seq 1; the next writer's
// committed item at seq 1 must win over it.
func TestEpochIndependentOfClocks(t *testing.T) {
	client, table := dynamotest.NewTable(t)
	blobs := newBlobs()
	fault := &headFault{API: client}
	la := ddbstore.New(fault, table, blobs)
	lb := ddbstore.New(client, table, blobs)
	ha, err := la.Acquire(t.Context(), "s1", "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	ha.Lease = nil
	if ha, err = commit(t, la, ha, "a", raw(`"a0"`)); err != nil {
		t.Fatal(err)
	}
	ahead := strconv.FormatInt(time.Now().Add(24*time.Hour).UnixNano(), 10)
	if _, err := client.UpdateItem(t.Context(), &dynamodb.UpdateItemInput{TableName: &table,
		Key:                       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "S#s1"}, "sk": &types.AttributeValueMemberS{Value: "HEAD"}},
		UpdateExpression:          aws.String("SET epoch = :e"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":e": &types.AttributeValueMemberN{Value: ahead}},
	}); err != nil {
		t.Fatal(err)
	}
	lost := error(errors.New("connection reset"))
	fault.fail.Store(&lost)
	ha.Lease = nil
	if _, err := commit(t, la, ha, "a", raw(`"a1"`)); err == nil {
		t.Fatal("a's commit succeeded despite the failed head update")
	}
	if err := la.Release(t.Context(), "s1", "a"); err != nil {
		t.Fatal(err)
	}
	hb, err := lb.Acquire(t.Context(), "s1", "b", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	hb.Lease = nil
	if _, err := commit(t, lb, hb, "b", raw(`"b1"`)); err != nil {
		t.Fatal(err)
	}
	if msgs, err := lb.Messages(t.Context(), "s1", 0, 10); err != nil || fmt.Sprintf("%s", msgs) != `["a0" "b1"]` {
		t.Fatalf("messages = %s, %v; want a0 b1 (b's item, not a's abandoned one)", msgs, err)
	}
}

// loseFirstHeadResponse is an HTTP transport that sends the first commit head update to the
// engine and then answers 500 in place of the engine's response, so the SDK retries an
// update that was already applied. It counts GetItem requests.
type loseFirstHeadResponse struct {
	lost     atomic.Bool
	getItems atomic.Int64
}

func (l *loseFirstHeadResponse) RoundTrip(req *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	if strings.HasSuffix(req.Header.Get("X-Amz-Target"), ".GetItem") {
		l.getItems.Add(1)
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil || !strings.HasSuffix(req.Header.Get("X-Amz-Target"), ".UpdateItem") ||
		!bytes.Contains(body, []byte("#version = ")) || !l.lost.CompareAndSwap(false, true) {
		return resp, err
	}
	resp.Body.Close()
	return &http.Response{
		Status: "500 Internal Server Error", StatusCode: http.StatusInternalServerError, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:  http.Header{"Content-Type": {"application/x-amz-json-1.0"}},
		Body:    io.NopCloser(strings.NewReader(`{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"response lost"}`)),
		Request: req,
	}, nil
}

// TestHeadUpdateRetriedAfterLostResponse (15-Q1): the head update was applied but its
// response lost; the SDK's retry fails the condition, and the commit must still succeed
// (once), not report ErrConflict.
func TestHeadUpdateRetriedAfterLostResponse(t *testing.T) {
	_, table := dynamotest.NewTable(t)
	transport := &loseFirstHeadResponse{}
	opts := dynamotest.Client(t).Options()
	opts.HTTPClient = &http.Client{Transport: transport}
	l := ddbstore.New(dynamodb.New(opts), table, newBlobs())
	h, err := l.Acquire(t.Context(), "s1", "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	h.Lease = nil
	got, err := commit(t, l, h, "a", raw(`"m0"`))
	if err != nil {
		t.Fatalf("commit whose head update response was lost: %v", err)
	}
	if !transport.lost.Load() {
		t.Fatal("no head update response was lost")
	}
	if n := transport.getItems.Load(); n != 1 {
		t.Fatalf("the commit made %d GetItem requests, want 1: the retry's failure must carry the old head", n)
	}
	if got.Version != 1 || got.Messages != 1 {
		t.Fatalf("commit returned %+v, want v1 with 1 message", got)
	}
	g, err := l.Get(t.Context(), "s1")
	if err != nil || g.Version != 1 || g.Messages != 1 {
		t.Fatalf("head = %+v, %v; want v1 with 1 message", g, err)
	}
	// A genuine conflict is still one: a stale version after the retried commit.
	if _, err := commit(t, l, h, "a", raw(`"m0"`)); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("stale commit: err = %v, want ErrConflict", err)
	}
}

// seedHead commits one message to a new session with body and parkDue.
func seedHead(t *testing.T, l store.Log, id, updatedAt string, body json.RawMessage, parkDue string) {
	t.Helper()
	h, err := l.Acquire(t.Context(), id, "seed", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	c := &store.Commit{Head: *h, Messages: []json.RawMessage{raw(`"m"`)}}
	c.Head.Lease = nil
	c.Head.Workflow, c.Head.Status, c.Head.UpdatedAt, c.Head.ParkDue = "wf", "parked", updatedAt, parkDue
	c.Head.Body, c.Head.Messages = body, 1
	if _, err := l.Commit(t.Context(), id, "seed", c); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(t.Context(), id, "seed"); err != nil {
		t.Fatal(err)
	}
}

// TestListingSkipsUnreadableHeads (02 §9.4): a head whose body blob is gone (a session
// being deleted, still in the eventually consistent index) or whose item is malformed is
// left out of List and ListDueParks; the listing succeeds.
func TestListingSkipsUnreadableHeads(t *testing.T) {
	client, table := dynamotest.NewTable(t)
	blobs := newBlobs()
	l := ddbstore.New(client, table, blobs)
	const due = "2025-01-01T00:00:00.000Z"
	seedHead(t, l, "ok", "2025-01-02T00:00:00.000Z", raw(`{}`), due)
	seedHead(t, l, "gone", "2025-01-03T00:00:00.000Z", raw(`{"x":"`+strings.Repeat("b", ddbstore.InlineLimit)+`"}`), due)
	seedHead(t, l, "bad", "2025-01-04T00:00:00.000Z", raw(`{}`), due)
	listsOK := func(when string) {
		t.Helper()
		listed, cursor, err := l.List(t.Context(), store.ListOptions{})
		if err != nil || len(listed) != 1 || listed[0].SessionID != "ok" || cursor != "" {
			t.Fatalf("%s: List = %v, %q, %v; want ok alone", when, ids(listed), cursor, err)
		}
		parks, err := l.ListDueParks(t.Context(), "2025-06-01T00:00:00.000Z", 0)
		if err != nil || len(parks) != 1 || parks[0].SessionID != "ok" {
			t.Fatalf("%s: ListDueParks = %v, %v; want ok alone", when, ids(parks), err)
		}
	}
	if err := blobs.DeleteSession(t.Context(), "gone"); err != nil {
		t.Fatal(err)
	}
	if _, err := client.UpdateItem(t.Context(), &dynamodb.UpdateItemInput{TableName: &table,
		Key:                       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "S#bad"}, "sk": &types.AttributeValueMemberS{Value: "HEAD"}},
		UpdateExpression:          aws.String("SET parkKey = :x"), // out of both indexes for now
		ExpressionAttributeValues: map[string]types.AttributeValue{":x": &types.AttributeValueMemberS{Value: "none"}},
	}); err != nil {
		t.Fatal(err)
	}
	_, err := client.UpdateItem(t.Context(), &dynamodb.UpdateItemInput{TableName: &table,
		Key:              map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "S#bad"}, "sk": &types.AttributeValueMemberS{Value: "HEAD"}},
		UpdateExpression: aws.String("REMOVE listKey"),
	})
	if err != nil {
		t.Fatal(err)
	}
	listsOK("body blob missing")
	if _, err := client.UpdateItem(t.Context(), &dynamodb.UpdateItemInput{TableName: &table,
		Key:              map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "S#bad"}, "sk": &types.AttributeValueMemberS{Value: "HEAD"}},
		UpdateExpression: aws.String("SET m = :s, parkKey = :p, listKey = :k"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":s": &types.AttributeValueMemberS{Value: "one"},
			":p": &types.AttributeValueMemberS{Value: "PARKED"}, ":k": &types.AttributeValueMemberS{Value: "S#0"}},
	}); err != nil {
		t.Fatal(err)
	}
	listsOK("malformed head")
}

func ids(hs []*store.Head) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.SessionID
	}
	return out
}
