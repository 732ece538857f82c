package expiry

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/store"
	ddbstore "github.com/archmax-ai/archmax/core/store/dynamodb"
	s3store "github.com/archmax-ai/archmax/core/store/s3"
	"github.com/archmax-ai/archmax/local/dynamotest"
	"github.com/archmax-ai/archmax/local/s3test"
)

const bucket = "archmax-expiry"

// streams calls the DynamoDB Streams API of DynamoDB Local (JSON 1.0, SigV4 with the
// tests' static credentials) and returns the answer's JSON.
func streams(t *testing.T, op string, in any) map[string]any {
	t.Helper()
	body, _ := json.Marshal(in)
	req, err := http.NewRequest(http.MethodPost, os.Getenv(dynamotest.EndpointEnv), bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "DynamoDBStreams_20120810."+op)
	sum := sha256.Sum256(body)
	if err := v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: "local", SecretAccessKey: "local"},
		req, hex.EncodeToString(sum[:]), "dynamodb", "us-east-1", time.Now()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
		t.Fatalf("%s: %d %v %v", op, resp.StatusCode, out, err)
	}
	return out
}

// streamRecords reads every record of the table's stream from its start, as the stream
// gives them (the shape Lambda delivers).
func streamRecords(t *testing.T, streamARN string) []json.RawMessage {
	t.Helper()
	desc := streams(t, "DescribeStream", map[string]any{"StreamArn": streamARN})
	var out []json.RawMessage
	for _, sh := range desc["StreamDescription"].(map[string]any)["Shards"].([]any) {
		it := streams(t, "GetShardIterator", map[string]any{"StreamArn": streamARN, "ShardId": sh.(map[string]any)["ShardId"], "ShardIteratorType": "TRIM_HORIZON"})
		iter, _ := it["ShardIterator"].(string)
		for range 5 { // a shard's records come within a few pages
			if iter == "" {
				break
			}
			page := streams(t, "GetRecords", map[string]any{"ShardIterator": iter})
			for _, r := range page["Records"].([]any) {
				b, _ := json.Marshal(r)
				out = append(out, b)
			}
			iter, _ = page["NextShardIterator"].(string)
		}
	}
	return out
}

// RD22-9 on DynamoDB Local (its stream, read through the Streams API) and gofakes3: the
// removal of an expired root head — its body offloaded to a blob — is handed to Handle as
// the stream carries it; a removal not made by the TTL is ignored; with the TTL's identity
// the session's child, items, files and blobs go, the spec snapshots stay.
func TestExpiredHeadRemovalDeletesTheRest(t *testing.T) {
	client, table := dynamotest.NewTable(t)
	ctx := t.Context()
	up, err := client.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: &table,
		StreamSpecification: &ddbtypes.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: ddbtypes.StreamViewTypeOldImage}})
	if err != nil {
		t.Fatal(err)
	}
	streamARN := aws.ToString(up.TableDescription.LatestStreamArn)
	s3c, _ := s3test.NewBucket(t, bucket)
	blobs := s3store.NewBlobs(s3c, bucket, "sessions/")
	files := s3store.NewFiles(s3c, bucket, "sessions/")
	log := ddbstore.New(client, table, blobs)

	commit := func(id string, body map[string]any, expires int64) {
		t.Helper()
		h, err := log.Acquire(ctx, id, "w", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(body)
		if _, err := log.Commit(ctx, id, "w", &store.Commit{ExpectedVersion: h.Version, Head: store.Head{Workflow: "wf", Status: "completed",
			CreatedAt: "2026-01-01T00:00:00.000Z", UpdatedAt: "2026-01-01T00:00:00.000Z", ExpiresAt: expires, Body: b, Messages: 1},
			Messages: []json.RawMessage{json.RawMessage(`{"role":"user","text":"hi"}`)}}); err != nil {
			t.Fatal(err)
		}
		if err := log.Release(ctx, id, "w"); err != nil {
			t.Fatal(err)
		}
	}
	big := strings.Repeat("x", 70<<10) // the root's record goes to a blob
	commit("root", map[string]any{"workflow": "wf", "status": "completed", "dispatchCount": 1, "title": big}, 1_700_000_000)
	commit("root~1", map[string]any{"workflow": "wf", "status": "completed"}, 0)
	for _, k := range []string{"root/scratchpad/a.md", "root~1/scratchpad/b.md", "_specs/0123.json", "rootx/scratchpad/keep.md"} {
		if err := files.Write(ctx, k, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	// what DynamoDB's TTL does: it deletes the head alone
	if _, err := client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &table,
		Key: map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "S#root"}, "sk": &ddbtypes.AttributeValueMemberS{Value: "HEAD"}}}); err != nil {
		t.Fatal(err)
	}
	var removal map[string]any
	for _, raw := range streamRecords(t, streamARN) {
		var r map[string]any
		_ = json.Unmarshal(raw, &r)
		keys, _ := r["dynamodb"].(map[string]any)["Keys"].(map[string]any)
		if r["eventName"] == "REMOVE" && keys["pk"].(map[string]any)["S"] == "S#root" {
			removal = r
		}
	}
	if removal == nil {
		t.Fatal("the stream has no REMOVE of root's head")
	}
	h := New(session.NewSessions(log, files, blobs), log, nil)
	handle := func(r map[string]any) events.DynamoDBEventResponse {
		t.Helper()
		raw, _ := json.Marshal(map[string]any{"Records": []any{r}})
		if !IsStreamEvent(raw) {
			t.Fatalf("not a stream event: %s", raw)
		}
		var ev events.DynamoDBEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			t.Fatal(err)
		}
		out, err := h.Handle(ctx, ev)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	items := func(prefix string) int {
		out, err := client.Scan(ctx, &dynamodb.ScanInput{TableName: &table, ConsistentRead: aws.Bool(true), FilterExpression: aws.String("begins_with(pk, :p)"),
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":p": &ddbtypes.AttributeValueMemberS{Value: prefix}}})
		if err != nil {
			t.Fatal(err)
		}
		return len(out.Items)
	}
	keys := func(prefix string) int {
		out, err := s3c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
		if err != nil {
			t.Fatal(err)
		}
		return len(out.Contents)
	}

	// as DynamoDB Local writes it (a user's delete: no userIdentity): not the TTL's
	if out := handle(removal); len(out.BatchItemFailures) != 0 || items("S#root~1") == 0 {
		t.Fatalf("a removal without the TTL's identity was acted on: %+v", out)
	}
	// the TTL's removal carries its identity (DynamoDB's documented shape)
	removal["userIdentity"] = map[string]any{"type": "Service", "principalId": TTLPrincipal}
	for round := range 2 {
		if out := handle(removal); len(out.BatchItemFailures) != 0 {
			t.Fatalf("round %d: failures %+v", round, out.BatchItemFailures)
		}
	}
	if n := items("S#root~") + items("S#root") - items("S#rootx"); n != 0 {
		t.Errorf("%d items of root and its child are left", n)
	}
	if n := keys("sessions/root/") + keys("sessions/root~"); n != 0 {
		t.Errorf("%d objects of root and its child are left", n)
	}
	if keys("sessions/_specs/") != 1 || keys("sessions/rootx/") != 1 || items("S#rootx") != 0 {
		t.Error("the delete reached beyond the session")
	}
}
