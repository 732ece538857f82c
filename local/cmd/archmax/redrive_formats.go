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
//     The target is requestContext.functionArn, which must name the queue's function.
//   - events-dlq: an event an EventBridge rule could not hand to its target, the body the
//     event itself ({"version", "id", "detail-type", "source", …, "detail"}) and the message
//     attributes RULE_ARN, TARGET_ARN, ERROR_CODE, ERROR_MESSAGE. The target is TARGET_ARN,
//     which must name the stage's turn, deliver or wake function.
//   - schedules-dlq: a schedule EventBridge Scheduler could not hand to its target, the body
//     the target's input (here the wake {"sessionId", "parkId"}) and message attributes such
//     as ERROR_CODE, ERROR_MESSAGE, EXECUTION_ID, SCHEDULE_ARN, TARGET_ARN. The target is
//     the stage's wake function (TARGET_ARN, when present, must name it).

// redrivePlan is what a message asks for: the payload to invoke on target, or why not
// (reason set: the message is kept).
type redrivePlan struct {
	kind, target, sessionID, cause string
	payload                        []byte
	reason                         string
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
}

// classify reads message m of the queue key.
func (r *redriver) classify(key string, m sqstypes.Message) redrivePlan {
	body := []byte(aws.ToString(m.Body))
	switch {
	case strings.HasSuffix(key, "-failed"):
		return r.classifyRecord(strings.TrimSuffix(key, "-failed"), body)
	case key == "events-dlq":
		return r.classifyEvent(body, m.MessageAttributes)
	case key == "schedules-dlq":
		return r.classifySchedule(body, m.MessageAttributes)
	}
	return redrivePlan{kind: "unknown", reason: "not a queue redrive reads"}
}

func (r *redriver) classifyRecord(fn string, body []byte) redrivePlan {
	var rec destinationRecord
	if err := json.Unmarshal(body, &rec); err != nil || rec.RequestContext == nil || rec.RequestContext.FunctionARN == "" ||
		len(rec.RequestPayload) == 0 || string(rec.RequestPayload) == "null" {
		return redrivePlan{kind: "unknown", reason: "not a Lambda invocation record (requestContext.functionArn, requestPayload)"}
	}
	p := redrivePlan{cause: recordCause(rec)}
	name, ok := lambdaFunctionName(rec.RequestContext.FunctionARN)
	if want := r.functionName(fn); !ok || name != want {
		p.kind = "unknown"
		p.reason = fmt.Sprintf("the record names function %q, not the queue's %s", rec.RequestContext.FunctionARN, want)
		return p
	}
	p.target = rec.RequestContext.FunctionARN
	p.kind, p.sessionID = payloadKind(fn, rec.RequestPayload)
	if p.kind == "unknown" {
		p.reason = "the invocation's payload is none of a start, a delivery, a continuation, a wake or a sweep"
		return p
	}
	p.payload = rec.RequestPayload
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
	}
	return strings.Trim(strings.Join(parts, " — "), " —")
}

func (r *redriver) classifyEvent(body []byte, attrs map[string]sqstypes.MessageAttributeValue) redrivePlan {
	p := redrivePlan{cause: attrCause(attrs)}
	if !isEvent(body) {
		p.kind, p.reason = "unknown", "not an EventBridge event (id, detail-type, source)"
		return p
	}
	arn := attrString(attrs, "TARGET_ARN")
	name, ok := lambdaFunctionName(arn)
	var fn string
	for _, f := range []string{"turn", "deliver", "wake"} {
		if ok && name == r.functionName(f) {
			fn = f
		}
	}
	if fn == "" {
		p.kind = "unknown"
		p.reason = fmt.Sprintf("TARGET_ARN %q is none of the stage's turn, deliver and wake functions", arn)
		return p
	}
	p.kind, p.sessionID = payloadKind(fn, body)
	if p.kind == "unknown" {
		p.reason = "the event is none of a start, a delivery or a sweep"
		return p
	}
	p.target, p.payload = arn, body
	return p
}

func (r *redriver) classifySchedule(body []byte, attrs map[string]sqstypes.MessageAttributeValue) redrivePlan {
	p := redrivePlan{cause: attrCause(attrs)}
	id, ok := wakeInput(body)
	if !ok {
		p.kind, p.reason = "unknown", "not a wake {sessionId, parkId}"
		return p
	}
	p.kind, p.sessionID = "wake", id
	wake := r.functionName("wake")
	if arn := attrString(attrs, "TARGET_ARN"); arn != "" {
		if name, ok := lambdaFunctionName(arn); !ok || name != wake {
			p.reason = fmt.Sprintf("TARGET_ARN %q is not the stage's wake function %s", arn, wake)
			return p
		}
	}
	p.target, p.payload = wake, body
	return p
}

// payloadKind names what payload is for function fn (turn, decide, deliver, wake, stream)
// and the session it names when it names one: a continuation {"archmaxContinue":
// {sessionId, turnId}} (every function), an EventBridge event — on turn a start, on deliver
// a delivery (its detail.sessionId), on wake the sweep's Scheduled Event — or on wake the
// wake {sessionId, parkId}; else "unknown".
func payloadKind(fn string, payload []byte) (kind, sessionID string) {
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
	switch {
	case shape.Continue != nil:
		if shape.Continue.SessionID == "" || shape.Continue.TurnID == "" {
			return "unknown", ""
		}
		return "continuation", shape.Continue.SessionID
	case isEvent(payload):
		switch {
		case fn == "turn":
			return "start", ""
		case fn == "deliver" && shape.Detail.SessionID != "":
			return "delivery", shape.Detail.SessionID
		case fn == "wake" && shape.Source == "aws.events" && shape.DetailType == "Scheduled Event":
			return "sweep", ""
		}
	case fn == "wake":
		if id, ok := wakeInput(payload); ok {
			return "wake", id
		}
	}
	return "unknown", ""
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

// lambdaFunctionName is the function name of a Lambda function ARN
// (arn:<partition>:lambda:<region>:<account>:function:<name>[:<qualifier>]).
func lambdaFunctionName(arn string) (string, bool) {
	parts := strings.Split(arn, ":")
	if len(parts) < 7 || len(parts) > 8 || parts[0] != "arn" || parts[2] != "lambda" || parts[5] != "function" || parts[6] == "" {
		return "", false
	}
	return parts[6], true
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
