package httpapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/spec"
)

// MaxBodyBytes caps a request body (after base64 decoding): 1 MiB. Larger bodies are
// refused with 413 PayloadTooLargeError.
const MaxBodyBytes = 1 << 20

// The two routes this handler serves (DESIGN.md §1), as API Gateway route keys.
const (
	RouteStart = "POST /v1/workflows/{workflow}/sessions"
	RouteTurn  = "POST /v1/workflows/{workflow}/sessions/{sessionId}/turns"
)

// target is a routed request: a start (no session id yet) or a turn on a named session.
type target struct {
	workflow  string
	sessionID string
	start     bool
}

// route matches a request to a route: by its route key when API Gateway declares one of
// ours (path parameters as API Gateway decoded them), else — a $default or proxy route —
// by method and raw path (HTTP APIs deliver rawPath already decoded).
func route(req events.APIGatewayV2HTTPRequest) (target, error) {
	switch req.RouteKey {
	case RouteStart:
		return target{workflow: req.PathParameters["workflow"], start: true}, nil
	case RouteTurn:
		return target{workflow: req.PathParameters["workflow"], sessionID: req.PathParameters["sessionId"]}, nil
	}
	method := req.RequestContext.HTTP.Method
	seg := strings.Split(strings.Trim(req.RawPath, "/"), "/")
	if method == "POST" && len(seg) >= 4 && seg[0] == "v1" && seg[1] == "workflows" && seg[2] != "" && seg[3] == "sessions" {
		switch {
		case len(seg) == 4:
			return target{workflow: seg[2], start: true}, nil
		case len(seg) == 6 && seg[4] != "" && seg[5] == "turns":
			return target{workflow: seg[2], sessionID: seg[4]}, nil
		}
	}
	return target{}, &requestError{code: CodeNotFound, message: fmt.Sprintf("No route for %s %s.", method, req.RawPath)}
}

// turnBody is the wire shape of a turn: {message, trigger?, variables?, files?}.
type turnBody struct {
	Message   string                     `json:"message"`
	Trigger   json.RawMessage            `json:"trigger"`
	Variables map[string]any             `json:"variables"`
	Files     map[string]json.RawMessage `json:"files"`
}

// decodeTurn reads a request body into a SendInput. It refuses (400) a body that is not
// base64 when flagged so, not one JSON object of the turn shape (unknown fields included),
// a trigger that is not a bare id string (spec 02 §1.2: trigger args are refused, pointing
// to variables), malformed files, and variable names outside the grammar
// (spec 01 §5.1); and (413) a body over MaxBodyBytes. A blank message is left to the
// caller, which knows the session id the refusal names.
func decodeTurn(req events.APIGatewayV2HTTPRequest) (session.SendInput, error) {
	data := []byte(req.Body)
	if req.IsBase64Encoded {
		var err error
		if data, err = base64.StdEncoding.DecodeString(req.Body); err != nil {
			return session.SendInput{}, invalidRequest("The request body is flagged base64-encoded but is not valid base64.")
		}
	}
	if len(data) > MaxBodyBytes {
		return session.SendInput{}, &requestError{code: CodePayloadTooLarge,
			message: fmt.Sprintf("The request body is %d bytes; the limit is %d.", len(data), MaxBodyBytes)}
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return session.SendInput{}, invalidRequest(`The request body is empty: send a JSON object {"message": "…"}.`)
	}
	var body turnBody
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		return session.SendInput{}, invalidRequest("The request body is not a valid turn request: %s. A turn is {message, trigger?, variables?, files?}.", describeJSONError(err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return session.SendInput{}, invalidRequest("The request body holds more than one JSON value.")
	}
	trigger, err := decodeTrigger(body.Trigger)
	if err != nil {
		return session.SendInput{}, err
	}
	files, err := decodeFiles(body.Files)
	if err != nil {
		return session.SendInput{}, err
	}
	for _, name := range slices.Sorted(maps.Keys(body.Variables)) {
		if err := spec.CheckVariableName(name, "seeded"); err != nil {
			return session.SendInput{}, err
		}
	}
	return session.SendInput{Message: body.Message, Trigger: trigger, Variables: body.Variables, Files: files}, nil
}

// turnFile is the wire shape of one turn file: {name, contentBase64} (DESIGN.md §1).
type turnFile struct {
	Name          string `json:"name"`
	ContentBase64 string `json:"contentBase64"`
}

// decodeFiles reads files {var: {name, contentBase64}}; the engine validates names and
// variables before anything is written (InvalidTurnFileError).
func decodeFiles(raw map[string]json.RawMessage) (map[string]session.TurnFile, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	out := make(map[string]session.TurnFile, len(raw))
	for _, v := range slices.Sorted(maps.Keys(raw)) {
		var f turnFile
		dec := json.NewDecoder(bytes.NewReader(raw[v]))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&f); err != nil {
			return nil, &session.InvalidTurnFileError{Variable: v, Cause: "a file is {name, contentBase64}"}
		}
		data, err := base64.StdEncoding.DecodeString(f.ContentBase64)
		if err != nil {
			return nil, &session.InvalidTurnFileError{Variable: v, Cause: "contentBase64 is not valid base64"}
		}
		out[v] = session.TurnFile{Name: f.Name, Content: data}
	}
	return out, nil
}

// decodeTrigger accepts an absent/null trigger or a trigger id string.
func decodeTrigger(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var id string
	if err := json.Unmarshal(raw, &id); err == nil {
		return id, nil
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) == nil {
		if _, ok := obj["args"]; ok {
			return "", &requestError{code: CodeInvalidTriggerInput,
				message: "A trigger carries only an id, not 'args': send the trigger's inputs in 'variables'."}
		}
	}
	return "", &requestError{code: CodeInvalidTriggerInput,
		message: `'trigger' must be a trigger id string (e.g. "manual"); send its inputs in 'variables'.`}
}

// describeJSONError words a decoding error for the caller without Go type names.
func describeJSONError(err error) string {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Sprintf("malformed JSON at byte %d", syntax.Offset)
	case errors.As(err, &typ) && typ.Field != "":
		return fmt.Sprintf("'%s' must not be a JSON %s", typ.Field, typ.Value)
	case errors.As(err, &typ):
		return fmt.Sprintf("the body must be a JSON object, not a JSON %s", typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the JSON ends early"
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return "unknown field " + strings.TrimPrefix(err.Error(), "json: unknown field ")
	default:
		return "malformed JSON"
	}
}
