package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// The three message formats of a stage's dead letter queues (DECISIONS RV22-2):
//
//   - <fn>-failed: Lambda's record of an asynchronous invocation that failed (the on-failure
//     destination), the body
//     {"version": "1.0", "timestamp", "requestContext": {"requestId", "functionArn",
//     "condition": "RetriesExhausted"|"EventAgeExceeded"|…, "approximateInvokeCount"},
//     "requestPayload": <the event>, "responseContext": {"statusCode", "executedVersion",
//     "functionError"}, "responsePayload": {"errorType", "errorMessage", …}}.
//     The target is requestContext.functionArn, which must be the queue's function of the
//     stage (its partition, region and account; unqualified or $LATEST).
//   - wake-failed also holds the retention consumer's failures (the DynamoDB stream's event
//     source mapping on the wake function; DECISIONS RV22-13): Lambda's record of a stream
//     batch it gave up on, the body {"version", "timestamp", "requestContext": {…, as above},
//     "responseContext": {…}, "DDBStreamBatchInfo": {"shardId", "startSequenceNumber",
//     "endSequenceNumber", "approximateArrivalOfFirstRecord", "approximateArrivalOfLastRecord",
//     "batchSize", "streamArn"}} and no requestPayload: the records are not in it. Kind
//     retention-batch, never re-submitted: reported, and deleted with --discard-retention.
//   - events-dlq: an event an EventBridge rule could not hand to its target, the body the
//     event itself ({"version", "id", "detail-type", "source", …, "detail"}) and the message
//     attributes RULE_ARN, TARGET_ARN, ERROR_CODE, ERROR_MESSAGE. The target is TARGET_ARN,
//     which must be the stage's turn, deliver or wake function, as above.
//   - schedules-dlq: a schedule EventBridge Scheduler could not hand to its target, the body
//     the target's input (here the wake {"sessionId", "parkId"}) and message attributes such
//     as ERROR_CODE, ERROR_MESSAGE, EXECUTION_ID, SCHEDULE_ARN, TARGET_ARN. The target is
//     the stage's wake function (TARGET_ARN, when present, must be it, as above).

// redrivePlan is what a message asks for: the payload to invoke on the stage's function fn
// (turn, decide, deliver, wake, stream), which named must be when the message names an ARN;
// or why not (reason set: the message is kept).
type redrivePlan struct {
	kind, sessionID, cause string
	fn                     string
	named                  string // the function ARN the message names ("" for a schedule without TARGET_ARN)
	payload                []byte
	reason                 string
	batch                  *streamBatch // a retention-batch: the stream records Lambda gave up on (no payload)
}

// streamBatch is a stream failure record's DDBStreamBatchInfo: which records of the stream
// the batch held.
type streamBatch struct {
	ShardID                         string `json:"shardId"`
	StartSequenceNumber             string `json:"startSequenceNumber"`
	EndSequenceNumber               string `json:"endSequenceNumber"`
	ApproximateArrivalOfFirstRecord string `json:"approximateArrivalOfFirstRecord,omitempty"`
	ApproximateArrivalOfLastRecord  string `json:"approximateArrivalOfLastRecord,omitempty"`
	BatchSize                       int    `json:"batchSize"`
	StreamARN                       string `json:"streamArn"`
}

// destinationRecord is Lambda's invocation record (the on-failure destination's body).
type destinationRecord struct {
	Version        string `json:"version"`
	Timestamp      string `json:"timestamp"`
	RequestContext *struct {
		RequestID              string `json:"requestId"`
		FunctionARN            string `json:"functionArn"`
		Condition              string `json:"condition"`
		ApproximateInvokeCount int    `json:"approximateInvokeCount"`
	} `json:"requestContext"`
	RequestPayload  json.RawMessage `json:"requestPayload"`
	ResponsePayload json.RawMessage `json:"responsePayload"`
	ResponseContext *struct {
		FunctionError string `json:"functionError"`
	} `json:"responseContext"`
	// DDBStreamBatchInfo is set in a stream batch's failure record (which has no requestPayload).
	DDBStreamBatchInfo *streamBatch `json:"DDBStreamBatchInfo"`
}

// classify reads message m of the queue key. It looks at the message alone: whether the ARN
// it names is the stage's own function (its partition, region and account) is checked when
// the function is resolved (redriver.handle).
func (r *redriver) classify(key string, m sqstypes.Message) redrivePlan {
	body := []byte(aws.ToString(m.Body))
	switch {
	case strings.HasSuffix(key, "-failed"):
		return r.classifyRecord(key, strings.TrimSuffix(key, "-failed"), body)
	case key == "events-dlq":
		return r.classifyEvent(key, body, m.MessageAttributes)
	case key == "schedules-dlq":
		return r.classifySchedule(body, m.MessageAttributes)
	}
	return redrivePlan{kind: "unknown", reason: "not a queue redrive reads"}
}

func (r *redriver) classifyRecord(key, fn string, body []byte) redrivePlan {
	var rec destinationRecord
	if err := json.Unmarshal(body, &rec); err == nil && rec.DDBStreamBatchInfo != nil && rec.RequestContext != nil &&
		(len(rec.RequestPayload) == 0 || string(rec.RequestPayload) == "null") {
		return r.classifyStreamBatch(key, fn, rec)
	}
	if err := json.Unmarshal(body, &rec); err != nil || rec.RequestContext == nil || rec.RequestContext.FunctionARN == "" ||
		len(rec.RequestPayload) == 0 || string(rec.RequestPayload) == "null" {
		return redrivePlan{kind: "unknown", reason: "not a Lambda invocation record (requestContext.functionArn, requestPayload)"}
	}
	p := redrivePlan{cause: recordCause(rec)}
	arn, ok := parseLambdaARN(rec.RequestContext.FunctionARN)
	if want := r.functionName(fn); !ok || arn.name != want {
		p.kind = "unknown"
		p.reason = fmt.Sprintf("the record names function %q, not the queue's %s", rec.RequestContext.FunctionARN, want)
		return p
	}
	p.fn, p.named = fn, rec.RequestContext.FunctionARN
	p.kind, p.sessionID = payloadKind(key, fn, rec.RequestPayload)
	if p.kind == "unknown" {
		p.reason = "the invocation's payload is none of " + kindsOf(key, fn)
		return p
	}
	p.payload = rec.RequestPayload
	return p
}

// classifyStreamBatch reads a stream batch's failure record: a retention-batch on the stage's
// wake function, in wake-failed only (the retention consumer is the one stream mapping).
func (r *redriver) classifyStreamBatch(key, fn string, rec destinationRecord) redrivePlan {
	p := redrivePlan{cause: recordCause(rec)}
	b := rec.DDBStreamBatchInfo
	if key != "wake-failed" {
		p.kind, p.reason = "unknown", "a DynamoDB stream batch's failure record, which only wake-failed carries (the retention consumer's)"
		return p
	}
	if b.ShardID == "" || b.StartSequenceNumber == "" || b.EndSequenceNumber == "" || b.StreamARN == "" {
		p.kind, p.reason = "unknown", "a stream batch's failure record without its shardId, startSequenceNumber, endSequenceNumber and streamArn"
		return p
	}
	arn, ok := parseLambdaARN(rec.RequestContext.FunctionARN)
	if want := r.functionName(fn); !ok || arn.name != want {
		p.kind = "unknown"
		p.reason = fmt.Sprintf("the record names function %q, not the queue's %s", rec.RequestContext.FunctionARN, want)
		return p
	}
	p.kind, p.fn, p.named, p.batch = "retention-batch", fn, rec.RequestContext.FunctionARN, b
	return p
}

// recordCause is a record's failure: its condition and the function's error.
func recordCause(rec destinationRecord) string {
	var resp struct {
		ErrorType    string `json:"errorType"`
		ErrorMessage string `json:"errorMessage"`
	}
	_ = json.Unmarshal(rec.ResponsePayload, &resp)
	parts := []string{rec.RequestContext.Condition}
	if resp.ErrorType != "" || resp.ErrorMessage != "" {
		parts = append(parts, strings.TrimPrefix(resp.ErrorType+": "+resp.ErrorMessage, ": "))
	} else if rec.ResponseContext != nil && rec.ResponseContext.FunctionError != "" {
		parts = append(parts, "function error "+rec.ResponseContext.FunctionError)
	}
	return strings.Trim(strings.Join(parts, " — "), " —")
}

func (r *redriver) classifyEvent(key string, body []byte, attrs map[string]sqstypes.MessageAttributeValue) redrivePlan {
	p := redrivePlan{cause: attrCause(attrs)}
	if !isEvent(body) {
		p.kind, p.reason = "unknown", "not an EventBridge event (id, detail-type, source)"
		return p
	}
	named := attrString(attrs, "TARGET_ARN")
	arn, ok := parseLambdaARN(named)
	var fn string
	for _, f := range []string{"turn", "deliver", "wake"} {
		if ok && arn.name == r.functionName(f) {
			fn = f
		}
	}
	if fn == "" {
		p.kind = "unknown"
		p.reason = fmt.Sprintf("TARGET_ARN %q is none of the stage's turn, deliver and wake functions", named)
		return p
	}
	p.kind, p.sessionID = payloadKind(key, fn, body)
	if p.kind == "unknown" {
		p.reason = "the event is none of " + kindsOf(key, fn)
		return p
	}
	p.fn, p.named, p.payload = fn, named, body
	return p
}

func (r *redriver) classifySchedule(body []byte, attrs map[string]sqstypes.MessageAttributeValue) redrivePlan {
	p := redrivePlan{cause: attrCause(attrs)}
	id, ok := wakeInput(body)
	if !ok {
		p.kind, p.reason = "unknown", "not a wake {sessionId, parkId}"
		return p
	}
	wake := r.functionName("wake")
	named := attrString(attrs, "TARGET_ARN")
	if named != "" {
		if arn, ok := parseLambdaARN(named); !ok || arn.name != wake {
			p.kind, p.reason = "unknown", fmt.Sprintf("TARGET_ARN %q is not the stage's wake function %s", named, wake)
			return p
		}
	}
	p.kind, p.sessionID = "wake", id
	p.fn, p.named, p.payload = "wake", named, body
	return p
}

// payloadKind names what payload is, read from queue key for function fn (turn, decide,
// deliver, wake, stream), and the session it names when it names one — only the kinds that
// queue can carry for that function (kindsOf):
//   - a continuation {"archmaxContinue": {sessionId, turnId}}: in an on-failure queue of
//     any function (the function invokes itself with it), never in events-dlq (EventBridge
//     does not carry one);
//   - a start: an EventBridge event on turn, but not the aws.events "Scheduled Event" (the
//     sweep rule's, which targets wake only);
//   - a delivery: an EventBridge event with detail.sessionId on deliver, not a Scheduled Event;
//   - a sweep: the aws.events Scheduled Event on wake;
//   - a wake {sessionId, parkId} on wake, in wake-failed (schedules-dlq reads its own).
//
// Anything else is "unknown".
func payloadKind(key, fn string, payload []byte) (kind, sessionID string) {
	var shape struct {
		Continue *struct {
			SessionID string `json:"sessionId"`
			TurnID    string `json:"turnId"`
		} `json:"archmaxContinue"`
		DetailType string `json:"detail-type"`
		Source     string `json:"source"`
		Detail     struct {
			SessionID string `json:"sessionId"`
		} `json:"detail"`
	}
	if json.Unmarshal(payload, &shape) != nil {
		return "unknown", ""
	}
	fromBus := key == "events-dlq"
	sweep := shape.Source == "aws.events" && shape.DetailType == "Scheduled Event"
	switch {
	case shape.Continue != nil:
		if fromBus || shape.Continue.SessionID == "" || shape.Continue.TurnID == "" {
			return "unknown", ""
		}
		return "continuation", shape.Continue.SessionID
	case isEvent(payload):
		switch {
		case fn == "turn" && !sweep:
			return "start", ""
		case fn == "deliver" && !sweep && shape.Detail.SessionID != "":
			return "delivery", shape.Detail.SessionID
		case fn == "wake" && sweep:
			return "sweep", ""
		}
	case fn == "wake" && !fromBus:
		if id, ok := wakeInput(payload); ok {
			return "wake", id
		}
	}
	return "unknown", ""
}

// kindsOf lists, for a kept message's reason, the payload kinds queue key carries for fn.
func kindsOf(key, fn string) string {
	var kinds []string
	switch fn {
	case "turn":
		kinds = append(kinds, "a start")
	case "deliver":
		kinds = append(kinds, "a delivery")
	case "wake":
		if key != "events-dlq" {
			kinds = append(kinds, "a wake")
		}
		kinds = append(kinds, "a sweep")
	}
	if key != "events-dlq" {
		kinds = append(kinds, "a continuation")
	}
	switch len(kinds) {
	case 1:
		return kinds[0]
	case 2:
		return kinds[0] + " or " + kinds[1]
	}
	return strings.Join(kinds[:len(kinds)-1], ", ") + " or " + kinds[len(kinds)-1]
}

// isEvent reports whether b is an EventBridge event: an object with a string id,
// detail-type and source.
func isEvent(b []byte) bool {
	var ev struct {
		ID         string `json:"id"`
		DetailType string `json:"detail-type"`
		Source     string `json:"source"`
	}
	return json.Unmarshal(b, &ev) == nil && ev.ID != "" && ev.DetailType != "" && ev.Source != ""
}

// wakeInput reads a wake {"sessionId", "parkId"} (both set, nothing else) and returns its
// session id.
func wakeInput(b []byte) (string, bool) {
	var w struct {
		SessionID string `json:"sessionId"`
		ParkID    string `json:"parkId"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if dec.Decode(&w) != nil || w.SessionID == "" || w.ParkID == "" || dec.More() {
		return "", false
	}
	return w.SessionID, true
}

// lambdaARN is a Lambda function ARN's parts:
// arn:<partition>:lambda:<region>:<account>:function:<name>[:<qualifier>].
type lambdaARN struct{ partition, region, account, name, qualifier string }

// parseLambdaARN reads a full Lambda function ARN (a bare name or a partial ARN is not one).
func parseLambdaARN(s string) (lambdaARN, bool) {
	parts := strings.Split(s, ":")
	if len(parts) < 7 || len(parts) > 8 || parts[0] != "arn" || parts[1] == "" || parts[2] != "lambda" || parts[3] == "" || parts[4] == "" ||
		parts[5] != "function" || parts[6] == "" {
		return lambdaARN{}, false
	}
	a := lambdaARN{partition: parts[1], region: parts[3], account: parts[4], name: parts[6]}
	if len(parts) == 8 {
		a.qualifier = parts[7]
	}
	return a, true
}

// sameFunction reports whether named is the unqualified (or $LATEST) function own: the
// same partition, region, account and name. A version or an alias is another function
// configuration, whose code redrive cannot vouch for.
func sameFunction(named, own lambdaARN) bool {
	return named.partition == own.partition && named.region == own.region && named.account == own.account && named.name == own.name &&
		(named.qualifier == "" || named.qualifier == "$LATEST")
}

func attrString(attrs map[string]sqstypes.MessageAttributeValue, name string) string {
	if a, ok := attrs[name]; ok {
		return aws.ToString(a.StringValue)
	}
	return ""
}

// attrCause is an EventBridge or Scheduler dead letter's ERROR_CODE and ERROR_MESSAGE.
func attrCause(attrs map[string]sqstypes.MessageAttributeValue) string {
	code, msg := attrString(attrs, "ERROR_CODE"), attrString(attrs, "ERROR_MESSAGE")
	return strings.Trim(code+": "+msg, ": ")
}
