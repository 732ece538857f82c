package e2e

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/archmax-ai/archmax/functions/handlers/assembly"
	"github.com/archmax-ai/archmax/functions/handlers/httpapi"
)

// deleteReq is API Gateway's DELETE /v1/sessions/{id}.
func deleteReq(id string) events.APIGatewayV2HTTPRequest {
	req := request(httpapi.RouteDeleteSession, "/v1/sessions/"+id, map[string]string{"sessionId": id}, "")
	req.RequestContext.HTTP.Method = http.MethodDelete
	return req
}

// deleteCall sends a DELETE to an HTTP Lambda and returns its status and, for a refusal,
// its error code; a 204 must have no body.
func deleteCall(t *testing.T, h *httpapi.Handler, id string) (int, string) {
	resp, err := h.Handle(context.Background(), deleteReq(id))
	if err != nil {
		t.Errorf("Handle returned a Go error: %v", err)
	}
	if resp.StatusCode == http.StatusNoContent {
		if resp.Body != "" {
			t.Errorf("204 with a body: %q", resp.Body)
		}
		return resp.StatusCode, ""
	}
	return resp.StatusCode, decodeAnswer(t, resp).code()
}

// tableItems counts the table's items of a session and of its children (pk S#<id>…), read
// from the table itself.
func (s *stack) tableItems(t *testing.T, id string) int {
	t.Helper()
	n := 0
	pages := dynamodb.NewScanPaginator(s.ddb, &dynamodb.ScanInput{TableName: &s.table, ConsistentRead: aws.Bool(true),
		FilterExpression:          aws.String("begins_with(pk, :p)"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":p": &ddbtypes.AttributeValueMemberS{Value: "S#" + id}}})
	for pages.HasMorePages() {
		page, err := pages.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		n += len(page.Items)
	}
	return n
}

// bucketKeys lists the bucket's keys under prefix, read from the bucket itself.
func (s *stack) bucketKeys(t *testing.T, prefix string) []string {
	t.Helper()
	c := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(s.env[assembly.EnvS3Endpoint]), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
	var keys []string
	pages := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			keys = append(keys, *o.Key)
		}
	}
	return keys
}

// RD22-1, RD22-5 on DynamoDB Local and gofakes3 through the real SDK: a session with a
// sub-workflow child and files is refused while its turn runs (409), then deleted by the
// decide Lambda — every item of it and of its child gone from the table, every object under
// their prefixes gone from the bucket, the shared spec snapshots kept — and a second DELETE
// is 204 again.
func TestDeleteSessionWithChildrenAndFiles(t *testing.T) {
	s := newDelegationStack(t, "badge-approval.model.yaml")
	l := s.boot(t)
	a := call(t, l.turn, startReq("badge-desk", jsonText(t, map[string]string{"message": samMessage})))
	if a.status != http.StatusOK || a.body["kind"] != "parked" || a.body["delegation"] == nil {
		t.Fatalf("start: %d %v", a.status, a.body)
	}
	id, _ := a.body["sessionId"].(string)
	child := id + "~1"
	if n := s.tableItems(t, child); n == 0 {
		t.Fatalf("the child %s has no items", child)
	}
	if keys := s.bucketKeys(t, "sessions/"+child+"/"); len(keys) == 0 {
		t.Fatalf("the child has no files")
	}
	specs := s.bucketKeys(t, "sessions/_specs/")
	if len(specs) == 0 {
		t.Fatal("no spec snapshots were stored")
	}

	// a DELETE while the decision's turn runs (the model is answering) is refused
	deleter := s.boot(t).decide
	var (
		once         sync.Once
		during, code = 0, ""
	)
	s.onModelCall(func() { once.Do(func() { during, code = deleteCall(t, deleter, id) }) })
	if d := call(t, l.decide, decisionReq(id, `{"to":"badge-granted","comment":"ok"}`)); d.status != http.StatusOK {
		t.Fatalf("decide: %d %v", d.status, d.body)
	}
	s.onModelCall(nil)
	if during != http.StatusConflict || code != "SessionNotResumableError" {
		t.Fatalf("DELETE during a running turn = %d %s, want 409 SessionNotResumableError", during, code)
	}
	if n := s.tableItems(t, id); n == 0 {
		t.Fatal("the refused DELETE deleted")
	}

	for round := range 2 {
		if status, code := deleteCall(t, deleter, id); status != http.StatusNoContent {
			t.Fatalf("DELETE (round %d) = %d %s", round, status, code)
		}
	}
	if n := s.tableItems(t, id); n != 0 {
		t.Errorf("%d items of the session and its child are left in the table", n)
	}
	if keys := s.bucketKeys(t, "sessions/"+id); len(keys) != 0 {
		t.Errorf("objects left in the bucket: %v", keys)
	}
	if after := s.bucketKeys(t, "sessions/_specs/"); strings.Join(after, ",") != strings.Join(specs, ",") {
		t.Errorf("spec snapshots %v → %v", specs, after)
	}
	if g := s.readLambda(t)(sessionGet(id)); g.status != http.StatusNotFound {
		t.Errorf("GET after DELETE: %d %v", g.status, g.body)
	}
}

// RD22-1: deleting a session parked on a timed wait deletes its schedule.
func TestDeleteCancelsTheTimedWake(t *testing.T) {
	s := newStack(t, "timer.model.yaml")
	l := s.boot(t)
	id, _, _ := parkWaiting(t, l, "Remind me in a second.")
	if n := len(s.sched.Schedules()); n != 1 {
		t.Fatalf("schedules = %d, want one", n)
	}
	if status, code := deleteCall(t, l.decide, id); status != http.StatusNoContent {
		t.Fatalf("DELETE = %d %s", status, code)
	}
	if sc := s.sched.Schedules(); len(sc) != 0 {
		t.Errorf("schedules left: %+v", sc)
	}
	if n := s.tableItems(t, id); n != 0 {
		t.Errorf("%d items left", n)
	}
}
