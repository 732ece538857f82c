// Package lambdatool is the `lambda` kind of host tool (docs/authoring/host-tools.md): one call is one
// synchronous (RequestResponse) invocation of a Lambda function — by name or ARN, with an
// optional qualifier — with the payload
//
//	{"tool": …, "input": {…}, "session": …, "state": …, "callId": …, "idempotencyKey": …}
//
// and the function answers {"text": "…"} (the tool result) or {"error": "…"} (an error
// result the model reads). Whatever else happens — a function error (unhandled exception,
// timeout, out of memory), an answer that is not one of those two objects, an answer or a
// payload over Lambda's 6 MB, an Invoke the service refuses — is an error result with a
// clear message, never a crash of the turn. A text over the declaration's MaxResultChars is
// offloaded to large_tool_results/ like any large tool result.
//
// The arguments' schema check and the call's timeout are the shared wrapper's
// (hosttool.Build); governance ran before the handler is called.
package lambdatool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/archmax-ai/archmax/core/hostconfig"
	"github.com/archmax-ai/archmax/core/hosttool"
	"github.com/archmax-ai/archmax/core/session"
)

// Lambda's limits of a synchronous invocation, in bytes: the payload sent and the answer
// read. A payload over MaxPayloadBytes is refused before anything is sent.
const (
	MaxPayloadBytes = 6 * 1024 * 1024
	MaxAnswerBytes  = 6 * 1024 * 1024
)

// quoteLimit bounds the part of a function's error or of a malformed answer an error
// result quotes, in characters.
const quoteLimit = 1000

// Payload is what the function receives.
type Payload struct {
	Tool           string         `json:"tool"`           // the tool's name as the model calls it
	Input          map[string]any `json:"input"`          // the call's arguments (schema-checked)
	Session        string         `json:"session"`        // the session id
	State          string         `json:"state"`          // the state the call was made in
	CallID         string         `json:"callId"`         // the tool-use id of the call
	IdempotencyKey string         `json:"idempotencyKey"` // <session>/<turn>/<callId>: the same on every attempt
}

// Answer is what the function answers: exactly one of Text and Error.
type Answer struct {
	Text  *string `json:"text,omitempty"`
	Error *string `json:"error,omitempty"`
}

// New is the hosttool.Builder of the lambda kind: one tool invoking decl.Lambda.Function
// through deps.Lambda.
func New(_ context.Context, decl hostconfig.ToolDecl, deps hosttool.Deps) ([]session.HostTool, error) {
	if decl.Lambda == nil || strings.TrimSpace(decl.Lambda.Function) == "" {
		return nil, errors.New("a lambda tool needs lambda.function (a function name or ARN)")
	}
	if deps.Lambda == nil {
		return nil, errors.New("a lambda tool needs the host's Lambda client (Deps.Lambda), and this host has none")
	}
	t := &tool{name: decl.Name, fn: decl.Lambda.Function, qualifier: decl.Lambda.Qualifier,
		invoker: deps.Lambda, maxChars: decl.MaxResultChars}
	schema := decl.Input
	if len(schema) == 0 {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	return []session.HostTool{{Name: decl.Name, Description: decl.Description, InputSchema: schema,
		Paths: decl.Paths, Handler: t.call}}, nil
}

type tool struct {
	name, fn, qualifier string
	invoker             hosttool.LambdaInvoker
	maxChars            int
}

func (t *tool) call(ctx context.Context, c session.HostCall) (string, error) {
	input := c.Args
	if input == nil {
		input = map[string]any{}
	}
	payload, err := json.Marshal(Payload{Tool: t.name, Input: input, Session: c.SessionID, State: c.State,
		CallID: c.CallID, IdempotencyKey: c.IdempotencyKey})
	if err != nil {
		return "", fmt.Errorf("Error: the arguments of '%s' cannot be sent as JSON (%v); nothing was sent.", t.name, err)
	}
	if len(payload) > MaxPayloadBytes {
		return "", fmt.Errorf("Error: the arguments of '%s' are %d bytes, over Lambda's %d-byte payload limit; nothing was sent. Send less and call it again.",
			t.name, len(payload), MaxPayloadBytes)
	}
	out, fnErr, err := t.invoker.Invoke(ctx, t.fn, t.qualifier, payload)
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err() // the wrapper answers a timeout; a cancelled turn stops
		}
		return "", fmt.Errorf("Error: could not invoke the function behind '%s': %s", t.name, quote(err.Error()))
	}
	if len(out) > MaxAnswerBytes {
		return "", fmt.Errorf("Error: the function behind '%s' answered %d bytes, over the %d-byte limit; its answer is not shown.", t.name, len(out), MaxAnswerBytes)
	}
	if fnErr == "" {
		if _, _, ok := runtimeError(out); ok && !hasMember(out, "text") && !hasMember(out, "error") {
			fnErr = "Unhandled" // a runtime's error answer without Lambda's header (the emulator sends none)
		}
	}
	if fnErr != "" {
		return "", functionError(t.name, fnErr, out)
	}
	text, isErr, problem := parseAnswer(out)
	switch {
	case problem != "":
		return "", fmt.Errorf("Error: the function behind '%s' answered %s, not {\"text\": \"…\"} or {\"error\": \"…\"}; it may have acted, but its answer cannot be used.", t.name, problem)
	case isErr:
		return "", errors.New(clipNote(text, limitOf(t.maxChars)))
	}
	return hosttool.FitResult(ctx, c, text, t.maxChars), nil
}

// parseAnswer reads a function's answer: its text and whether it is an error, or what is
// wrong with it.
func parseAnswer(out []byte) (text string, isErr bool, problem string) {
	trimmed := bytes.TrimSpace(out)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return "", false, describe(out)
	}
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	if err := dec.Decode(&obj); err != nil || dec.More() {
		return "", false, describe(out)
	}
	rawText, hasText := obj["text"]
	rawErr, hasErr := obj["error"]
	var s string
	switch {
	case hasText && hasErr:
		return "", false, "an object with both \"text\" and \"error\""
	case hasText:
		if json.Unmarshal(rawText, &s) != nil || bytes.Equal(bytes.TrimSpace(rawText), []byte("null")) {
			return "", false, "a \"text\" that is not a string"
		}
		return s, false, ""
	case hasErr:
		if json.Unmarshal(rawErr, &s) != nil || bytes.Equal(bytes.TrimSpace(rawErr), []byte("null")) {
			return "", false, "an \"error\" that is not a string"
		}
		if strings.TrimSpace(s) == "" {
			s = "Error: the tool failed without saying why."
		}
		return s, true, ""
	}
	return "", false, "an object with neither \"text\" nor \"error\""
}

// describe names an answer that is not a JSON object, quoting its start.
func describe(out []byte) string {
	if len(bytes.TrimSpace(out)) == 0 {
		return "nothing"
	}
	if json.Valid(out) {
		return "JSON that is not an object (" + quote(string(out)) + ")"
	}
	return "something that is not JSON (" + quote(string(out)) + ")"
}

// functionError is an invocation the function failed: an unhandled error, a timeout, a
// crash, an answer over Lambda's limit — Lambda reports it as FunctionError with the
// runtime's {"errorMessage", "errorType"}.
func functionError(tool, fnErr string, out []byte) error {
	detail := "no detail"
	if msg, typ, ok := runtimeError(out); ok {
		detail = strings.TrimPrefix(typ+": "+msg, ": ")
	} else if len(bytes.TrimSpace(out)) > 0 {
		detail = string(out)
	}
	return fmt.Errorf("Error: the function behind '%s' failed (%s): %s. It may have acted before failing.", tool, fnErr, quote(detail))
}

// runtimeError reads a Lambda runtime's error answer {"errorMessage": …, "errorType": …}.
func runtimeError(out []byte) (msg, typ string, ok bool) {
	var e struct {
		ErrorMessage *string `json:"errorMessage"`
		ErrorType    string  `json:"errorType"`
	}
	if json.Unmarshal(out, &e) != nil || e.ErrorMessage == nil {
		return "", "", false
	}
	return *e.ErrorMessage, e.ErrorType, true
}

// hasMember reports whether out is a JSON object with the member name.
func hasMember(out []byte, name string) bool {
	var obj map[string]json.RawMessage
	if json.Unmarshal(out, &obj) != nil {
		return false
	}
	_, ok := obj[name]
	return ok
}

// quote is s bounded to quoteLimit characters, on one line.
func quote(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return clipNote(s, quoteLimit)
}

// clipNote is s cut to max characters with an ellipsis when longer.
func clipNote(s string, max int) string {
	if hosttool.Units(s) <= max {
		return s
	}
	return hosttool.Clip(s, max) + "…"
}

func limitOf(maxChars int) int {
	if maxChars <= 0 {
		return hostconfig.DefaultMaxResultChars
	}
	return maxChars
}

// InvokeAPI is the part of the AWS SDK's *lambda.Client that SDKInvoker uses.
type InvokeAPI interface {
	Invoke(ctx context.Context, in *lambda.InvokeInput, optFns ...func(*lambda.Options)) (*lambda.InvokeOutput, error)
}

// SDKInvoker is hosttool.LambdaInvoker over the AWS SDK: a RequestResponse Invoke of the
// function (and qualifier, when given), answering the function's payload and its
// FunctionError ("" when it succeeded). The client's retryer applies (throttling and
// service errors are retried; each attempt carries the same idempotencyKey).
func SDKInvoker(client InvokeAPI) hosttool.LambdaInvoker { return sdkInvoker{client} }

type sdkInvoker struct{ c InvokeAPI }

func (s sdkInvoker) Invoke(ctx context.Context, functionName, qualifier string, payload []byte) ([]byte, string, error) {
	in := &lambda.InvokeInput{FunctionName: aws.String(functionName), Payload: payload,
		InvocationType: types.InvocationTypeRequestResponse}
	if qualifier != "" {
		in.Qualifier = aws.String(qualifier)
	}
	out, err := s.c.Invoke(ctx, in)
	if err != nil {
		return nil, "", err
	}
	return out.Payload, aws.ToString(out.FunctionError), nil
}
