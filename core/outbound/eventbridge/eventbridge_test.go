package eventbridge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awseb "github.com/aws/aws-sdk-go-v2/service/eventbridge"

	"github.com/archmax-ai/archmax/core/outbound"
	"github.com/archmax-ai/archmax/core/outbound/eventbridge"
	"github.com/archmax-ai/archmax/local/eventbridgefake"
)

// Client is a real EventBridge client pointed at a fake (static credentials, no probing).
func client(t *testing.T, fake *eventbridgefake.Fake) *awseb.Client {
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	return awseb.NewFromConfig(aws.Config{Region: "eu-west-1", Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""),
		Retryer: func() aws.Retryer { return retry.AddWithMaxAttempts(retry.NewStandard(), 2) }}, func(o *awseb.Options) { o.BaseEndpoint = aws.String(srv.URL) })
}

func notes(n int) []outbound.Notification {
	var ns []outbound.Notification
	for i := range n {
		id := fmt.Sprintf("s1:%d", i+1)
		ns = append(ns, outbound.Notification{DetailType: outbound.SessionEvent, EventID: id, Detail: json.RawMessage(`{"eventId":"` + id + `"}`)})
	}
	return ns
}

// In order, ten entries per request, on the bus with our source; refused entries are sent
// again alone; a bus that stays down is an error.
func TestPublishThroughTheSDK(t *testing.T) {
	fake := eventbridgefake.New()
	sink := eventbridge.New(client(t, fake), "approvals")
	if err := sink.Publish(context.Background(), notes(23)); err != nil {
		t.Fatal(err)
	}
	got := fake.Events()
	if len(got) != 23 || fake.Requests() != 3 {
		t.Fatalf("%d events in %d requests", len(got), fake.Requests())
	}
	for i, e := range got {
		var d map[string]any
		_ = json.Unmarshal(e.Detail, &d)
		if e.EventBusName != "approvals" || e.Source != outbound.Source || e.DetailType != outbound.SessionEvent || d["eventId"] != fmt.Sprintf("s1:%d", i+1) {
			t.Errorf("event %d = %+v", i, e)
		}
	}
	fake.FailEntries(2)
	if err := sink.Publish(context.Background(), notes(3)); err != nil || len(fake.Events()) != 26 {
		t.Fatalf("refused entries not sent again: %v, %d", err, len(fake.Events()))
	}
	fake.Down(true)
	if err := sink.Publish(context.Background(), notes(1)); err == nil || !strings.Contains(err.Error(), "InternalException") {
		t.Errorf("a bus that is down: %v", err)
	}
}
