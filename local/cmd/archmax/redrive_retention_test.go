package main

import (
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/local/lambdafake"
)

// streamBatchRecord is Lambda's failure record of a DynamoDB stream batch the event source
// mapping gave up on, on the function ARN arn: no requestPayload, the batch's stream position.
func streamBatchRecord(arn string) string {
	return `{"requestContext":{"requestId":"r-9","functionArn":"` + arn + `","condition":"RetryAttemptsExhausted","approximateInvokeCount":11},` +
		`"responseContext":{"statusCode":200,"executedVersion":"$LATEST","functionError":"Unhandled"},"version":"1.0",` +
		`"timestamp":"2026-11-30T10:06:00.000Z","DDBStreamBatchInfo":{"shardId":"shardId-00000001700000000000-abcd1234",` +
		`"startSequenceNumber":"100000000000000000001","endSequenceNumber":"100000000000000000007",` +
		`"approximateArrivalOfFirstRecord":"2026-11-30T10:00:00Z","approximateArrivalOfLastRecord":"2026-11-30T10:00:01Z",` +
		`"batchSize":2,"streamArn":"arn:aws:dynamodb:us-east-1:123456789012:table/archmax-dev/stream/2026-11-01T00:00:00.000"}}`
}

// A retention stream batch in wake-failed is recognised, reported with its stream position
// and kept (nothing is re-submitted); one naming another function, or in another queue, is
// unknown; --dry-run --discard-retention deletes nothing; --discard-retention deletes the
// batches only, and a run left with nothing but them exits 0.
func TestRedriveRetentionBatch(t *testing.T) {
	rig := newRedriveRig(t)
	wake := lambdafake.FunctionARN("archmax-dev-wake")
	rig.send(t, "wake-failed", streamBatchRecord(wake), nil)
	rig.send(t, "wake-failed", streamBatchRecord(lambdafake.FunctionARN("archmax-prod-wake")), nil) // another stage's
	rig.send(t, "turn-failed", streamBatchRecord(lambdafake.FunctionARN("archmax-dev-turn")), nil)  // not the retention queue
	rig.send(t, "wake-failed", streamBatchRecord(strings.Replace(wake, "123456789012", "999999999999", 1)), nil)

	code, out, errs := rig.redrive(t, "--json")
	if code != exitFail {
		t.Errorf("exit %d with a retention batch kept, want 1\n%s", code, errs)
	}
	recs, sum := decodeRecords(t, out)
	if sum.Kept != 4 || sum.Redriven != 0 || sum.Discarded != 0 || len(recs) != 4 {
		t.Fatalf("summary = %+v\n%s", sum, out)
	}
	var batches, unknown int
	for _, r := range recs {
		switch r.Kind {
		case "retention-batch":
			batches++
			if r.Queue != "archmax-dev-wake-failed" || r.Action != actKept || r.Target != wake || r.Batch == nil ||
				r.Batch.ShardID != "shardId-00000001700000000000-abcd1234" || r.Batch.EndSequenceNumber != "100000000000000000007" ||
				!strings.Contains(r.Reason, "sequence numbers 100000000000000000001 to 100000000000000000007") ||
				!strings.Contains(r.Reason, "stream arn:aws:dynamodb:us-east-1:123456789012:table/archmax-dev/stream/") ||
				!strings.Contains(r.Reason, "archmax sessions --aws --delete ID") || !strings.Contains(r.Reason, "--discard-retention") ||
				r.Cause != "RetryAttemptsExhausted — function error Unhandled" {
				t.Errorf("retention batch: %+v", r)
			}
		case "unknown":
			unknown++
			if r.Action != actKept || r.Reason == "" || r.Batch != nil {
				t.Errorf("foreign batch: %+v", r)
			}
		default:
			t.Errorf("record %+v", r)
		}
	}
	if batches != 1 || unknown != 3 {
		t.Errorf("%d retention batches, %d unknown\n%s", batches, unknown, out)
	}
	if inv := rig.lambda.Invocations(); len(inv) != 0 {
		t.Errorf("a retention batch was re-submitted: %v", inv)
	}

	// a dry run of the discard deletes nothing
	code, text, _ := rig.redrive(t, "--queue", "wake-failed", "--dry-run", "--discard-retention")
	if code != exitFail || !strings.Contains(text, ": retention-batch → "+wake+": would discard — stream batch of 2 records") ||
		!strings.HasSuffix(text, "dry run: 0 would be re-submitted, 2 kept, 1 would be discarded\n") {
		t.Errorf("dry run: exit %d\n%s", code, text)
	}
	if m := rig.queues.Messages("archmax-dev-wake-failed"); len(m) != 3 {
		t.Errorf("a dry run left %d of 3", len(m))
	}

	// the discard deletes the stage's batches, never the foreign ones
	code, text, _ = rig.redrive(t, "--queue", "wake-failed", "--discard-retention")
	if code != exitFail || !strings.Contains(text, ": retention-batch → "+wake+": discarded — stream batch of 2 records") ||
		!strings.HasSuffix(text, "0 redriven, 2 kept, 0 failed, 1 discarded\n") {
		t.Errorf("discard: exit %d\n%s", code, text)
	}
	if m := rig.queues.Messages("archmax-dev-wake-failed"); len(m) != 2 {
		t.Errorf("the discard left %d of 3, want the 2 foreign ones", len(m))
	}

	// only handled messages: exit 0
	rig2 := newRedriveRig(t)
	rig2.send(t, "wake-failed", streamBatchRecord(wake+":$LATEST"), nil)
	rig2.send(t, "schedules-dlq", wakeBody, scheduleAttrs)
	code, out, errs = rig2.redrive(t, "--discard-retention", "--json")
	_, sum = decodeRecords(t, out)
	if code != exitOK || sum.Discarded != 1 || sum.Redriven != 1 || sum.Kept != 0 {
		t.Errorf("only handled: exit %d %+v\n%s%s", code, sum, out, errs)
	}
	for _, q := range []string{"wake-failed", "schedules-dlq"} {
		if m := rig2.queues.Messages("archmax-dev-" + q); len(m) != 0 {
			t.Errorf("%s left %d", q, len(m))
		}
	}
	if inv := rig2.invoked(t)["archmax-dev-wake"]; len(inv) != 1 || !jsonEqual(t, inv[0], wakeBody) {
		t.Errorf("wake was handed %v", inv)
	}
}
