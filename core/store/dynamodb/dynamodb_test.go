package dynamodb_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/archmax-ai/archmax/core/store"
	ddbstore "github.com/archmax-ai/archmax/core/store/dynamodb"
	"github.com/archmax-ai/archmax/core/store/storetest"
	"github.com/archmax-ai/archmax/local/dynamotest"
)

// memBlobs is an in-memory store.Blobs.
type memBlobs struct {
	mu    sync.Mutex
	blobs map[string][]byte // "<session>/<ref>"
}

func newBlobs() *memBlobs { return &memBlobs{blobs: map[string][]byte{}} }

func (m *memBlobs) Put(_ context.Context, sessionID string, data []byte) (string, error) {
	sum := sha256.Sum256(data)
	ref := hex.EncodeToString(sum[:])
	m.mu.Lock()
	defer m.mu.Unlock()
	m.blobs[sessionID+"/"+ref] = bytes.Clone(data)
	return ref, nil
}

func (m *memBlobs) Get(_ context.Context, sessionID, ref string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.blobs[sessionID+"/"+ref]
	if !ok {
		return nil, store.ErrNotFound
	}
	return bytes.Clone(b), nil
}

func (m *memBlobs) DeleteSession(_ context.Context, sessionID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.blobs {
		if strings.HasPrefix(k, sessionID+"/") {
			delete(m.blobs, k)
		}
	}
	return nil
}

func (m *memBlobs) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.blobs)
}

// counting wraps an API, counting write requests, summing the bytes of the items put by
// BatchWriteItem, and running beforeBatch (when set) before each BatchWriteItem.
type counting struct {
	ddbstore.API
	writes, batchBytes atomic.Int64
	beforeBatch        func()
}

func (c *counting) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	if c.beforeBatch != nil {
		c.beforeBatch()
	}
	c.writes.Add(1)
	for _, reqs := range in.RequestItems {
		for _, r := range reqs {
			if r.PutRequest != nil {
				c.batchBytes.Add(int64(ddbstore.ItemBytes(r.PutRequest.Item)))
			}
		}
	}
	return c.API.BatchWriteItem(ctx, in, opts...)
}

func (c *counting) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.writes.Add(1)
	return c.API.UpdateItem(ctx, in, opts...)
}

func (c *counting) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c.writes.Add(1)
	return c.API.PutItem(ctx, in, opts...)
}

func (c *counting) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	c.writes.Add(1)
	return c.API.DeleteItem(ctx, in, opts...)
}

func TestLog(t *testing.T) {
	storetest.TestLog(t, func(t *testing.T) store.Log {
		client, table := dynamotest.NewTable(t)
		return ddbstore.New(client, table, newBlobs())
	})
}

func BenchmarkCommit(b *testing.B) {
	client, table := dynamotest.NewTable(b)
	api := &counting{API: client}
	storetest.BenchCommit(b, ddbstore.New(api, table, newBlobs()))
	b.ReportMetric(float64(api.writes.Load())/float64(b.N), "writes/op")
	b.ReportMetric(float64(api.batchBytes.Load())/float64(b.N), "item-bytes/op")
	// The head a commit rewrites (DynamoDB bills the larger of its old and new size).
	out, err := client.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: &table, Key: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "S#bench-1"}, "sk": &types.AttributeValueMemberS{Value: "HEAD"}}})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(ddbstore.ItemBytes(out.Item)), "head-bytes")
}

func raw(s string) json.RawMessage { return json.RawMessage(s) }

// commit appends messages to h's session as owner and returns the new head.
func commit(t *testing.T, l store.Log, h *store.Head, owner string, msgs ...json.RawMessage) (*store.Head, error) {
	t.Helper()
	c := &store.Commit{ExpectedVersion: h.Version, Head: *h, Messages: msgs}
	c.Head.Lease = nil
	c.Head.Workflow, c.Head.Status = "wf", "running"
	c.Head.UpdatedAt = "2025-01-01T00:00:00.000Z"
	c.Head.Body = raw(`{"owner":"` + owner + `"}`)
	c.Head.Messages += int64(len(msgs))
	return l.Commit(t.Context(), h.SessionID, owner, c)
}

// TestCommitWriteRequests (DESIGN §3): a commit of 1 message, 1 trail step and 3 events is
// exactly two write requests, BatchWriteItem and UpdateItem.
func TestCommitWriteRequests(t *testing.T) {
	client, table := dynamotest.NewTable(t)
	api := &counting{API: client}
	l := ddbstore.New(api, table, newBlobs())
	h, err := l.Acquire(t.Context(), "s1", "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for v := range 3 {
		c := &store.Commit{ExpectedVersion: h.Version, Head: *h,
			Messages: []json.RawMessage{raw(`{"m":1}`)},
			Trail:    []json.RawMessage{raw(`{"t":1}`)},
			Events:   []json.RawMessage{raw(`{"e":1}`), raw(`{"e":2}`), raw(`{"e":3}`)}}
		c.Head.Messages++
		c.Head.Trail++
		c.Head.Events += 3
		c.Head.Body = raw(`{}`)
		before := api.writes.Load()
		if h, err = l.Commit(t.Context(), "s1", "a", c); err != nil {
			t.Fatal(err)
		}
		if n := api.writes.Load() - before; n != 2 {
			t.Fatalf("commit %d: %d write requests, want 2", v+1, n)
		}
	}
}

// TestLargeValuesOffloaded (DESIGN §3): values over 64 KiB go to blobs and round-trip
// byte-identical; no stored item reaches DynamoDB's 400 KB limit.
func TestLargeValuesOffloaded(t *testing.T) {
	client, table := dynamotest.NewTable(t)
	blobs := newBlobs()
	l := ddbstore.New(client, table, blobs)
	big := func(n int, c byte) json.RawMessage {
		return raw(`{"x":"` + strings.Repeat(string(c), n-8) + `"}`)
	}
	msg := big(1500<<10, 'm')              // 1.5 MB
	body := big(300<<10, 'b')              // 300 KB
	step := big(ddbstore.InlineLimit, 't') // exactly the limit: stays inline
	ev := big(ddbstore.InlineLimit+1, 'e') // one byte over: offloaded
	nonUTF8 := raw("\"\xff\"")             // not a valid DynamoDB string: offloaded

	h, err := l.Acquire(t.Context(), "big", "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	c := &store.Commit{Head: *h, Messages: []json.RawMessage{msg, nonUTF8}, Trail: []json.RawMessage{step}, Events: []json.RawMessage{ev}}
	c.Head.Messages, c.Head.Trail, c.Head.Events = 2, 1, 1
	c.Head.Body = body
	if _, err := l.Commit(t.Context(), "big", "a", c); err != nil {
		t.Fatal(err)
	}
	if n := blobs.count(); n != 4 {
		t.Fatalf("%d blobs stored, want 4 (message, non-UTF-8 message, event, body)", n)
	}

	msgs, err := l.Messages(t.Context(), "big", 0, 2)
	if err != nil || len(msgs) != 2 || !bytes.Equal(msgs[0], msg) || !bytes.Equal(msgs[1], nonUTF8) {
		t.Fatalf("messages did not round-trip (err %v)", err)
	}
	trail, err := l.TrailSteps(t.Context(), "big", 0, 1)
	if err != nil || len(trail) != 1 || !bytes.Equal(trail[0], step) {
		t.Fatalf("trail step did not round-trip (err %v)", err)
	}
	events, err := l.Events(t.Context(), "big", 0, 1)
	if err != nil || len(events) != 1 || !bytes.Equal(events[0], ev) {
		t.Fatalf("event did not round-trip (err %v)", err)
	}
	g, err := l.Get(t.Context(), "big")
	if err != nil || !bytes.Equal(g.Body, body) {
		t.Fatalf("body did not round-trip (err %v)", err)
	}
	listed, _, err := l.List(t.Context(), store.ListOptions{})
	if err != nil || len(listed) != 1 || !bytes.Equal(listed[0].Body, body) {
		t.Fatalf("listed body did not round-trip (err %v)", err)
	}

	out, err := client.Scan(t.Context(), &dynamodb.ScanInput{TableName: &table})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Items) != 5 {
		t.Fatalf("scan found %d items, want 5 (head + 4 log items)", len(out.Items))
	}
	for _, it := range out.Items {
		if n := ddbstore.ItemBytes(it); n > ddbstore.InlineLimit+200 {
			t.Errorf("item %v is %d bytes, want at most the inline limit plus keys", it["sk"], n)
		}
	}
}

// TestItemBytesMatchesEngineLimit checks ItemBytes against DynamoDB Local's exact limit:
// an item of MaxItemBytes is accepted, one byte more is refused.
func TestItemBytesMatchesEngineLimit(t *testing.T) {
	client, table := dynamotest.NewTable(t)
	item := func(size int) map[string]types.AttributeValue {
		it := map[string]types.AttributeValue{
			"pk":  &types.AttributeValueMemberS{Value: "limit"},
			"sk":  &types.AttributeValueMemberS{Value: "x"},
			"n":   &types.AttributeValueMemberN{Value: "-12345.67800"},
			"l":   &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberBOOL{Value: true}}},
			"pad": &types.AttributeValueMemberB{},
		}
		it["pad"] = &types.AttributeValueMemberB{Value: make([]byte, size-ddbstore.ItemBytes(it))}
		if got := ddbstore.ItemBytes(it); got != size {
			t.Fatalf("ItemBytes = %d, want %d", got, size)
		}
		return it
	}
	if _, err := client.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: &table, Item: item(ddbstore.MaxItemBytes)}); err != nil {
		t.Fatalf("item of exactly %d bytes refused: %v", ddbstore.MaxItemBytes, err)
	}
	_, err := client.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: &table, Item: item(ddbstore.MaxItemBytes + 1)})
	if err == nil || !strings.Contains(err.Error(), "Item size has exceeded the maximum allowed size") {
		t.Fatalf("item of %d bytes: err = %v, want the size limit error", ddbstore.MaxItemBytes+1, err)
	}
}

func TestItemBytes(t *testing.T) {
	for _, tc := range []struct {
		name string
		item map[string]types.AttributeValue
		want int
	}{
		{"string", map[string]types.AttributeValue{"ab": &types.AttributeValueMemberS{Value: "héllo"}}, 2 + 6},
		{"binary", map[string]types.AttributeValue{"b": &types.AttributeValueMemberB{Value: []byte{0, 1, 2}}}, 1 + 3},
		{"number", map[string]types.AttributeValue{"n": &types.AttributeValueMemberN{Value: "123"}}, 1 + 3},
		{"number zeros trimmed, negative", map[string]types.AttributeValue{"n": &types.AttributeValueMemberN{Value: "-1000.00"}}, 1 + 3},
		{"number pairs aligned on the point", map[string]types.AttributeValue{"n": &types.AttributeValueMemberN{Value: "123.4"}}, 1 + 4},
		{"negative fraction", map[string]types.AttributeValue{"n": &types.AttributeValueMemberN{Value: "-12345.67800"}}, 1 + 7},
		{"small fraction", map[string]types.AttributeValue{"n": &types.AttributeValueMemberN{Value: "0.001"}}, 1 + 2},
		{"exponent", map[string]types.AttributeValue{"n": &types.AttributeValueMemberN{Value: "1.5e-3"}}, 1 + 2},
		{"zero", map[string]types.AttributeValue{"n": &types.AttributeValueMemberN{Value: "0"}}, 1 + 1},
		{"bool and null", map[string]types.AttributeValue{"t": &types.AttributeValueMemberBOOL{}, "u": &types.AttributeValueMemberNULL{Value: true}}, 2 + 2},
		{"list", map[string]types.AttributeValue{"l": &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberS{Value: "xy"}}}}, 1 + 3 + 1 + 2},
		{"map", map[string]types.AttributeValue{"m": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"k": &types.AttributeValueMemberS{Value: "v"}}}}, 1 + 3 + 1 + 1 + 1},
		{"sets", map[string]types.AttributeValue{"s": &types.AttributeValueMemberSS{Value: []string{"a", "bc"}}, "n": &types.AttributeValueMemberNS{Value: []string{"1", "22"}}}, 1 + 3 + 1 + 2 + 2},
	} {
		if got := ddbstore.ItemBytes(tc.item); got != tc.want {
			t.Errorf("%s: ItemBytes = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestLeaseExpiredMidCommit (15-Q1): writer a's lease expires after it read the head and
// before it wrote its items; b takes over and commits. a's late items must neither
// become visible nor replace b's, and a's head update fails with ErrConflict.
func TestLeaseExpiredMidCommit(t *testing.T) {
	client, table := dynamotest.NewTable(t)
	blobs := newBlobs()
	apiA := &counting{API: client}
	la := ddbstore.New(apiA, table, blobs) // two Stores: two Lambdas
	lb := ddbstore.New(client, table, blobs)
	const ttl = time.Second // long enough for the first commit on a loaded machine

	ha, err := la.Acquire(t.Context(), "s1", "a", ttl)
	if err != nil {
		t.Fatal(err)
	}
	if ha, err = commit(t, la, ha, "a", raw(`"a0"`)); err != nil {
		t.Fatal(err)
	}
	apiA.beforeBatch = func() {
		apiA.beforeBatch = nil
		time.Sleep(ttl + 200*time.Millisecond)
		hb, err := lb.Acquire(t.Context(), "s1", "b", time.Minute)
		if err != nil {
			t.Errorf("b's takeover: %v", err)
			return
		}
		if _, err := commit(t, lb, hb, "b", raw(`"b1"`), raw(`"b2"`)); err != nil {
			t.Errorf("b's commit: %v", err)
		}
	}
	if _, err := commit(t, la, ha, "a", raw(`"a1"`), raw(`"a2"`), raw(`"a3"`)); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a's late commit: err = %v, want ErrConflict", err)
	}
	g, err := lb.Get(t.Context(), "s1")
	if err != nil || g.Version != 2 || g.Messages != 3 || string(g.Body) != `{"owner":"b"}` {
		t.Fatalf("head = %+v, %v; want b's v2 with 3 messages", g, err)
	}
	msgs, err := lb.Messages(t.Context(), "s1", 0, 10)
	if err != nil || fmt.Sprintf("%s", msgs) != `["a0" "b1" "b2"]` {
		t.Fatalf("messages = %s, %v; want a0 b1 b2", msgs, err)
	}
	// b keeps writing past a's abandoned item a3.
	g.Lease = nil
	if _, err := commit(t, lb, g, "b", raw(`"b3"`)); err != nil {
		t.Fatal(err)
	}
	msgs, err = lb.Messages(t.Context(), "s1", 0, 10)
	if err != nil || fmt.Sprintf("%s", msgs) != `["a0" "b1" "b2" "b3"]` {
		t.Fatalf("messages = %s, %v; want a0 b1 b2 b3", msgs, err)
	}
}

// TestConcurrentProcesses (15-Q1): writers in separate Stores (separate processes or
// Lambdas), each with its own owner, lose no update and never both commit a version.
func TestConcurrentProcesses(t *testing.T) {
	client, table := dynamotest.NewTable(t)
	blobs := newBlobs()
	const writers, each = 4, 5
	var wg sync.WaitGroup
	for w := range writers {
		l := ddbstore.New(client, table, blobs)
		owner := fmt.Sprintf("w%d", w)
		wg.Go(func() {
			for done := 0; done < each; {
				h, err := l.Acquire(t.Context(), "s1", owner, time.Minute)
				if errors.Is(err, store.ErrLeaseHeld) {
					time.Sleep(2 * time.Millisecond)
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				h.Lease = nil
				if _, err := commit(t, l, h, owner, raw(fmt.Sprintf("%q", owner))); err != nil {
					t.Errorf("%s: %v", owner, err)
					return
				}
				if err := l.Release(t.Context(), "s1", owner); err != nil {
					t.Error(err)
					return
				}
				done++
			}
		})
	}
	wg.Wait()
	l := ddbstore.New(client, table, blobs)
	h, err := l.Get(t.Context(), "s1")
	if err != nil || h.Version != writers*each || h.Messages != writers*each {
		t.Fatalf("head = %+v, %v; want v%d", h, err, writers*each)
	}
	msgs, err := l.Messages(t.Context(), "s1", 0, h.Messages)
	if err != nil {
		t.Fatal(err)
	}
	per := map[string]int{}
	for _, m := range msgs {
		per[string(m)]++
	}
	for w := range writers {
		if n := per[fmt.Sprintf(`"w%d"`, w)]; n != each {
			t.Fatalf("writer w%d has %d messages, want %d (%v)", w, n, each, per)
		}
	}
}

// TestEventTTL: event items carry ttl = commit time + EventTTL (Unix seconds); other
// items carry none.
func TestEventTTL(t *testing.T) {
	client, table := dynamotest.NewTable(t)
	l := ddbstore.New(client, table, newBlobs())
	l.EventTTL = time.Hour
	h, err := l.Acquire(t.Context(), "s1", "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	c := &store.Commit{Head: *h, Messages: []json.RawMessage{raw(`1`)}, Events: []json.RawMessage{raw(`2`)}}
	c.Head.Messages, c.Head.Events = 1, 1
	start := time.Now()
	if _, err := l.Commit(t.Context(), "s1", "a", c); err != nil {
		t.Fatal(err)
	}
	out, err := client.Scan(t.Context(), &dynamodb.ScanInput{TableName: &table})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range out.Items {
		sk := it["sk"].(*types.AttributeValueMemberS).Value
		ttl, has := it["ttl"].(*types.AttributeValueMemberN)
		switch {
		case strings.HasPrefix(sk, "E#"):
			want := start.Add(time.Hour).Unix()
			if !has || (ttl.Value != fmt.Sprint(want) && ttl.Value != fmt.Sprint(want+1)) {
				t.Errorf("event ttl = %v, want %d", it["ttl"], want)
			}
		case has:
			t.Errorf("item %s has a ttl", sk)
		}
	}
}

// TestCreateTableEnablesTTL checks the table CreateTable makes: TTL on "ttl".
func TestCreateTableEnablesTTL(t *testing.T) {
	client, table := dynamotest.NewTable(t)
	out, err := client.DescribeTimeToLive(t.Context(), &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	d := out.TimeToLiveDescription
	if d == nil || aws.ToString(d.AttributeName) != "ttl" || d.TimeToLiveStatus != types.TimeToLiveStatusEnabled {
		t.Fatalf("TTL = %+v, want enabled on ttl", d)
	}
}

// Issue 18: a Store made without Blobs — New(client, table, nil) — refuses what needs one
// with ErrNoBlobs instead of panicking: writing a value over the inline limit, reading an
// item another Store offloaded, and it deletes a session (it can hold no blobs of its own).
func TestNoBlobsIsAnErrorNotAPanic(t *testing.T) {
	client, table := dynamotest.NewTable(t)
	ctx := t.Context()
	bare := ddbstore.New(client, table, nil)
	big := raw(`{"x":"` + strings.Repeat("b", ddbstore.InlineLimit) + `"}`)

	h, err := bare.Acquire(ctx, "nb-1", "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	c := &store.Commit{Head: *h, Messages: []json.RawMessage{big}}
	c.Head.Messages, c.Head.Body = 1, raw(`{}`)
	if _, err := bare.Commit(ctx, "nb-1", "a", c); !errors.Is(err, ddbstore.ErrNoBlobs) {
		t.Errorf("a commit of an offloaded item = %v, want ErrNoBlobs", err)
	}
	if err := bare.PutIdempotent(ctx, "nb-key", big, time.Hour); !errors.Is(err, ddbstore.ErrNoBlobs) {
		t.Errorf("a big idempotency record = %v, want ErrNoBlobs", err)
	}

	// an item and a body offloaded by a Store with blobs, read by one without
	full := ddbstore.New(client, table, newBlobs())
	h, err = full.Acquire(ctx, "nb-2", "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	c = &store.Commit{Head: *h, Messages: []json.RawMessage{big}}
	c.Head.Messages, c.Head.Body = 1, big
	if _, err := full.Commit(ctx, "nb-2", "a", c); err != nil {
		t.Fatal(err)
	}
	if err := full.PutIdempotent(ctx, "nb-key", big, time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := bare.Get(ctx, "nb-2"); !errors.Is(err, ddbstore.ErrNoBlobs) {
		t.Errorf("Get of a blob-backed head = %v, want ErrNoBlobs", err)
	}
	if _, err := bare.Messages(ctx, "nb-2", 0, 1); err == nil {
		t.Errorf("Messages of a blob-backed item: no error")
	}
	if _, _, err := bare.RememberIdempotent(ctx, "nb-key", nil, time.Hour); !errors.Is(err, ddbstore.ErrNoBlobs) {
		t.Errorf("a blob-backed idempotency record = %v, want ErrNoBlobs", err)
	}
	if _, err := bare.Delete(ctx, "nb-2"); err != nil {
		t.Errorf("Delete without blobs: %v", err)
	}
}
