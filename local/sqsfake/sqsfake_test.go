package sqsfake

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/archmax-ai/archmax/core/clock"
)

// client is a real SQS client on a fake over HTTP, with a fake clock.
func client(t *testing.T, opts ...Option) (*sqs.Client, *Fake, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC))
	f := New(append([]Option{WithClock(clk.Now), WithMaxWait(0)}, opts...)...)
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	c := sqs.New(sqs.Options{
		Region:       Region,
		BaseEndpoint: aws.String(srv.URL),
		Credentials:  aws.AnonymousCredentials{},
	})
	return c, f, clk
}

func queueURL(t *testing.T, c *sqs.Client, name string) string {
	t.Helper()
	out, err := c.GetQueueUrl(context.Background(), &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	return *out.QueueUrl
}

func receive(t *testing.T, c *sqs.Client, url string, in *sqs.ReceiveMessageInput) []types.Message {
	t.Helper()
	if in == nil {
		in = &sqs.ReceiveMessageInput{}
	}
	in.QueueUrl = aws.String(url)
	out, err := c.ReceiveMessage(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return out.Messages
}

// The operations through the real client: the SDK checks the body MD5s the fake answers,
// message attributes come back as sent (filtered by MessageAttributeNames), and the system
// attributes count receives.
func TestSendReceiveDeleteThroughTheSDK(t *testing.T) {
	c, f, _ := client(t)
	ctx := context.Background()
	f.CreateQueue("archmax-dev-events-dlq")
	url := queueURL(t, c, "archmax-dev-events-dlq")
	if !strings.HasSuffix(url, "/"+Account+"/archmax-dev-events-dlq") {
		t.Fatalf("QueueUrl = %s", url)
	}
	sent, err := c.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl:    aws.String(url),
		MessageBody: aws.String(`{"id":"e-1","detail-type":"Order Placed"}`),
		MessageAttributes: map[string]types.MessageAttributeValue{
			"RULE_ARN":   {DataType: aws.String("String"), StringValue: aws.String("arn:aws:events:us-east-1:123456789012:rule/r")},
			"ERROR_CODE": {DataType: aws.String("String"), StringValue: aws.String("ResourceNotFoundException")},
			"BLOB":       {DataType: aws.String("Binary"), BinaryValue: []byte{0, 1, 2}},
		},
	})
	if err != nil || sent.MD5OfMessageAttributes == nil || len(*sent.MD5OfMessageAttributes) != 32 {
		t.Fatalf("send: %v %+v", err, sent)
	}

	got := receive(t, c, url, &sqs.ReceiveMessageInput{MaxNumberOfMessages: 10, MessageAttributeNames: []string{"All"},
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}})
	if len(got) != 1 {
		t.Fatalf("received %d", len(got))
	}
	m := got[0]
	if *m.MessageId != *sent.MessageId || *m.Body != `{"id":"e-1","detail-type":"Order Placed"}` || m.Attributes["ApproximateReceiveCount"] != "1" ||
		m.Attributes["SentTimestamp"] != "1796032800000" || *m.MessageAttributes["ERROR_CODE"].StringValue != "ResourceNotFoundException" ||
		string(m.MessageAttributes["BLOB"].BinaryValue) != "\x00\x01\x02" || *m.MD5OfMessageAttributes != *sent.MD5OfMessageAttributes {
		t.Errorf("message = %+v", m)
	}
	if _, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	if left := f.Messages("archmax-dev-events-dlq"); len(left) != 0 {
		t.Errorf("after delete: %+v", left)
	}
	// a delete repeated with the same handle succeeds, as SQS's does
	if _, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
		t.Errorf("second delete: %v", err)
	}

	// only the attributes asked for, and their MD5 over those
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("x"),
		MessageAttributes: map[string]types.MessageAttributeValue{
			"ERROR_CODE": {DataType: aws.String("String"), StringValue: aws.String("E")},
			"RULE_ARN":   {DataType: aws.String("String"), StringValue: aws.String("R")},
		}}); err != nil {
		t.Fatal(err)
	}
	got = receive(t, c, url, &sqs.ReceiveMessageInput{MessageAttributeNames: []string{"ERROR_.*"}})
	if len(got) != 1 || len(got[0].MessageAttributes) != 1 || got[0].MessageAttributes["ERROR_CODE"].StringValue == nil || len(got[0].Attributes) != 0 {
		t.Errorf("filtered: %+v", got)
	}
	if one := attributesMD5(map[string]Attribute{"ERROR_CODE": {DataType: "String", StringValue: "E"}}); got[0].MD5OfMessageAttributes == nil || *got[0].MD5OfMessageAttributes != one {
		t.Errorf("MD5OfMessageAttributes = %v, want %s (over the returned attributes)", got[0].MD5OfMessageAttributes, one)
	}
}

// Visibility: a received message is hidden for the timeout (the queue's, or the receive's),
// comes back after it with a new receipt handle, and only the latest handle deletes it;
// ChangeMessageVisibility 0 returns it at once.
func TestVisibilityTimeout(t *testing.T) {
	c, f, clk := client(t)
	ctx := context.Background()
	f.CreateQueue("q")
	url := queueURL(t, c, "q")
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("m")}); err != nil {
		t.Fatal(err)
	}
	first := receive(t, c, url, nil)
	if len(first) != 1 {
		t.Fatalf("first receive: %d", len(first))
	}
	if again := receive(t, c, url, nil); len(again) != 0 {
		t.Fatalf("an in-flight message was received again: %+v", again)
	}
	clk.Advance(DefaultVisibilityTimeout*time.Second - time.Millisecond)
	if again := receive(t, c, url, nil); len(again) != 0 {
		t.Fatalf("received before its timeout ended")
	}
	clk.Advance(time.Millisecond)
	second := receive(t, c, url, &sqs.ReceiveMessageInput{VisibilityTimeout: 5, AttributeNames: []types.QueueAttributeName{"ApproximateReceiveCount"}})
	if len(second) != 1 || *second[0].ReceiptHandle == *first[0].ReceiptHandle || second[0].Attributes["ApproximateReceiveCount"] != "2" {
		t.Fatalf("after the timeout: %+v", second)
	}
	// the stale handle deletes nothing
	if _, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: first[0].ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	if n := len(f.Messages("q")); n != 1 {
		t.Fatalf("a stale receipt handle deleted the message (%d left)", n)
	}
	clk.Advance(5 * time.Second) // the receive's own timeout
	third := receive(t, c, url, nil)
	if len(third) != 1 {
		t.Fatalf("after the receive's timeout: %d", len(third))
	}
	if _, err := c.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: third[0].ReceiptHandle, VisibilityTimeout: 0}); err != nil {
		t.Fatal(err)
	}
	fourth := receive(t, c, url, nil)
	if len(fourth) != 1 {
		t.Fatalf("after ChangeMessageVisibility 0: %d", len(fourth))
	}
	// a message not in flight cannot have its visibility changed
	if _, err := c.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: third[0].ReceiptHandle, VisibilityTimeout: 10}); !errors.As(err, new(*types.MessageNotInflight)) {
		t.Errorf("stale ChangeMessageVisibility: %v", err)
	}
	if _, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: fourth[0].ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	if n := len(f.Messages("q")); n != 0 {
		t.Errorf("the latest handle did not delete (%d left)", n)
	}
}

// Errors decode as the SDK's modelled types, with SQS's query-compatible codes.
func TestErrors(t *testing.T) {
	c, f, _ := client(t)
	ctx := context.Background()
	_, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("archmax-dev-turn-failed")})
	var nq *types.QueueDoesNotExist
	if !errors.As(err, &nq) || nq.ErrorCode() != "AWS.SimpleQueueService.NonExistentQueue" {
		t.Errorf("missing queue: %v", err)
	}
	f.CreateQueue("q")
	url := queueURL(t, c, "q")
	if _, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String("forged")}); !errors.As(err, new(*types.ReceiptHandleIsInvalid)) {
		t.Errorf("forged handle: %v", err)
	}
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("bad \x01 char")}); !errors.As(err, new(*types.InvalidMessageContents)) {
		t.Errorf("invalid body: %v", err)
	}
	var api smithy.APIError
	if _, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 11}); !errors.As(err, &api) || api.ErrorCode() != "InvalidParameterValue" {
		t.Errorf("11 messages: %v", err)
	}
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(strings.Repeat("x", MaxMessageSize+1))}); !errors.As(err, &api) || api.ErrorCode() != "InvalidParameterValue" {
		t.Errorf("too large: %v", err)
	}
	if _, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(strings.Replace(url, Account, "999999999999", 1))}); !errors.As(err, &nq) {
		t.Errorf("another account's queue: %v", err)
	}
	// not the JSON protocol
	resp, err := http.Post(strings.TrimSuffix(url, "/"+Account+"/q"), "application/x-www-form-urlencoded", strings.NewReader("Action=ListQueues"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.HasPrefix(resp.Header.Get("X-Amzn-Query-Error"), "UnsupportedProtocol") {
		t.Errorf("query protocol: %d %v", resp.StatusCode, resp.Header)
	}
}

// A long poll returns as soon as a message is sent (no clock involved: the send wakes it).
func TestLongPollWakesOnSend(t *testing.T) {
	c, f, _ := client(t, WithMaxWait(time.Minute))
	f.CreateQueue("q")
	url := queueURL(t, c, "q")
	done := make(chan []types.Message)
	go func() {
		out, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 20})
		if err != nil {
			t.Error(err)
		}
		done <- out.Messages
	}()
	if _, err := c.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("late")}); err != nil {
		t.Fatal(err)
	}
	if got := <-done; len(got) != 1 || *got[0].Body != "late" {
		t.Errorf("long poll: %+v", got)
	}
}
