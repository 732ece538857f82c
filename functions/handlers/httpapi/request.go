package httpapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/spec"
)

// MaxBodyBytes caps a request body (after base64 decoding): 1 MiB. Larger bodies are
// refused with 413 PayloadTooLargeError.
const MaxBodyBytes = 1 << 20

// The routes this handler serves (DESIGN.md §1), as API Gateway route keys.
const (
	RouteStart    = "POST /v1/workflows/{workflow}/sessions"
	RouteTurn     = "POST /v1/workflows/{workflow}/sessions/{sessionId}/turns"
	RouteDecision = "POST /v1/sessions/{sessionId}/decision"
	RouteDelivery = "POST /v1/sessions/{sessionId}/deliveries"
	// RouteDeleteSession deletes a session and everything of it (delete.go).
	RouteDeleteSession = "DELETE /v1/sessions/{sessionId}"
)

// action is what a routed request asks for.
type action int

const (
	actStart action = iota
	actTurn
	actDecision
	actDelivery
	actDelete
)

// target is a routed request: a start (no session id yet), a turn on a named session of a
// workflow, or a decision or delivery on a named session (whose workflow the head names).
type target struct {
	act       action
	workflow  string
	sessionID string
}

// route matches a request to a route: by its route key when API Gateway declares one of
// ours (path parameters as API Gateway decoded them), else — a $default or proxy route —
// by method and raw path (HTTP APIs deliver rawPath already decoded).
func route(req events.APIGatewayV2HTTPRequest) (target, error) {
	p := req.PathParameters
	switch req.RouteKey {
	case RouteStart:
		return target{act: actStart, workflow: p["workflow"]}, nil
	case RouteTurn:
		return target{act: actTurn, workflow: p["workflow"], sessionID: p["sessionId"]}, nil
	case RouteDecision:
		return target{act: actDecision, sessionID: p["sessionId"]}, nil
	case RouteDelivery:
		return target{act: actDelivery, sessionID: p["sessionId"]}, nil
	case RouteDeleteSession:
		return target{act: actDelete, sessionID: p["sessionId"]}, nil
	}
	method := req.RequestContext.HTTP.Method
	seg, ok := pathSegments(req.RawPath)
	if !ok {
		return target{}, notRouted(req)
	}
	if method == http.MethodDelete && len(seg) == 3 && seg[0] == "v1" && seg[1] == "sessions" && seg[2] != "" {
		return target{act: actDelete, sessionID: seg[2]}, nil
	}
	if method != "POST" {
		if _, err := route(withMethod(req, "POST")); err == nil {
			return target{}, &requestError{code: CodeMethodNotAllowed, allow: http.MethodPost,
				message: fmt.Sprintf("%s %s is not served here; this route takes POST.", method, req.RawPath)}
		}
		return target{}, notRouted(req)
	}
	if len(seg) >= 4 && seg[0] == "v1" && seg[1] == "workflows" && seg[2] != "" && seg[3] == "sessions" {
		switch {
		case len(seg) == 4:
			return target{act: actStart, workflow: seg[2]}, nil
		case len(seg) == 6 && seg[4] != "" && seg[5] == "turns":
			return target{act: actTurn, workflow: seg[2], sessionID: seg[4]}, nil
		}
	}
	if len(seg) == 4 && seg[0] == "v1" && seg[1] == "sessions" && seg[2] != "" {
		switch seg[3] {
		case "decision":
			return target{act: actDecision, sessionID: seg[2]}, nil
		case "deliveries":
			return target{act: actDelivery, sessionID: seg[2]}, nil
		}
	}
	return target{}, notRouted(req)
}

// notRouted is the refusal of a request no POST route takes: 405 on a read route (it takes
// GET), else 404.
func notRouted(req events.APIGatewayV2HTTPRequest) error {
	method := req.RequestContext.HTTP.Method
	if t, ok := readRoute(withMethod(req, "GET")); ok {
		if t.view == "session" && method != http.MethodDelete { // a session takes DELETE too (delete.go)
			return &requestError{code: CodeMethodNotAllowed, allow: "GET, DELETE",
				message: fmt.Sprintf("%s %s is not served here; this route takes GET and DELETE.", method, req.RawPath)}
		}
		return &requestError{code: CodeMethodNotAllowed, allow: http.MethodGet,
			message: fmt.Sprintf("%s %s is not served here; this route takes GET.", method, req.RawPath)}
	}
	return &requestError{code: CodeNotFound, message: fmt.Sprintf("No route for %s %s.", method, req.RawPath)}
}

// pathSegments splits a raw path ("/v1/sessions/s-1") into its segments; ok is false for a
// path that is not "/" followed by non-empty segments — a trailing slash
// ("/v1/sessions/s-1/") or an empty segment ("/v1//sessions") names no route of ours
// (404), since the $default route delivers the path as the client sent it.
func pathSegments(rawPath string) ([]string, bool) {
	rest, ok := strings.CutPrefix(rawPath, "/")
	if !ok {
		return nil, false
	}
	seg := strings.Split(rest, "/")
	if slices.Contains(seg, "") {
		return nil, false
	}
	return seg, true
}

// withMethod is req as if sent with method, for route matching.
func withMethod(req events.APIGatewayV2HTTPRequest, method string) events.APIGatewayV2HTTPRequest {
	req.RouteKey = ""
	req.RequestContext.HTTP.Method = method
	return req
}

// body returns a request's bytes: base64-decoded when flagged, refused (413) over
// MaxBodyBytes and (400) when empty.
func body(req events.APIGatewayV2HTTPRequest, shape string) ([]byte, error) {
	data := []byte(req.Body)
	if req.IsBase64Encoded {
		var err error
		if data, err = base64.StdEncoding.DecodeString(req.Body); err != nil {
			return nil, invalidRequest("The request body is flagged base64-encoded but is not valid base64.")
		}
	}
	if len(data) > MaxBodyBytes {
		return nil, &requestError{code: CodePayloadTooLarge,
			message: fmt.Sprintf("The request body is %d bytes; the limit is %d.", len(data), MaxBodyBytes)}
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, invalidRequest("The request body is empty: send a JSON object %s.", shape)
	}
	return data, nil
}

// decodeStrict decodes exactly one JSON object of v's shape, unknown fields refused (400).
func decodeStrict(data []byte, v any, what, shape string) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return invalidRequest("The request body is not a valid %s: %s. A %s is %s.", what, describeJSONError(err), what, shape)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return invalidRequest("The request body holds more than one JSON value.")
	}
	return nil
}

// checkVariables refuses (400) variable names outside the grammar (spec 01 §5.1).
func checkVariables(vars map[string]any, origin string) error {
	for _, name := range slices.Sorted(maps.Keys(vars)) {
		if err := spec.CheckVariableName(name, origin); err != nil {
			return err
		}
	}
	return nil
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
	const shape = `{message, trigger?, variables?, files?}`
	data, err := body(req, `{"message": "…"}`)
	if err != nil {
		return session.SendInput{}, err
	}
	var in turnBody
	if err := decodeStrict(data, &in, "turn request", shape); err != nil {
		return session.SendInput{}, err
	}
	trigger, err := decodeTrigger(in.Trigger)
	if err != nil {
		return session.SendInput{}, err
	}
	files, err := decodeFiles(in.Files)
	if err != nil {
		return session.SendInput{}, err
	}
	if err := checkVariables(in.Variables, "seeded"); err != nil {
		return session.SendInput{}, err
	}
	return session.SendInput{Message: in.Message, Trigger: trigger, Variables: in.Variables, Files: files}, nil
}

// decisionBody is the wire shape of a decision: {to, comment?, parkId?} (DESIGN.md §1).
type decisionBody struct {
	To      string `json:"to"`
	Comment string `json:"comment"`
	ParkID  string `json:"parkId"`
}

// decodeDecision reads a decision; a missing 'to' is refused (400) — the engine answers
// an unknown target (422, with the valid ones).
func decodeDecision(req events.APIGatewayV2HTTPRequest) (session.Decision, error) {
	const shape = `{to, comment?, parkId?}`
	data, err := body(req, `{"to": "<transition target>"}`)
	if err != nil {
		return session.Decision{}, err
	}
	var in decisionBody
	if err := decodeStrict(data, &in, "decision", shape); err != nil {
		return session.Decision{}, err
	}
	if strings.TrimSpace(in.To) == "" {
		return session.Decision{}, invalidRequest("A decision names its transition target in 'to'.")
	}
	return session.Decision{To: in.To, Comment: in.Comment, ParkID: in.ParkID}, nil
}

// deliveryBody is the wire shape of a delivery: {trigger, variables?, message?, files?,
// parkId?} (DESIGN.md §1).
type deliveryBody struct {
	Trigger   json.RawMessage            `json:"trigger"`
	Variables map[string]any             `json:"variables"`
	Message   string                     `json:"message"`
	Files     map[string]json.RawMessage `json:"files"`
	ParkID    string                     `json:"parkId"`
}

// decodeDelivery reads a delivery to sessionID (named in refusals). The trigger is an id
// string like a turn's; a missing one, like the variable names and files, is refused by
// session.CheckDelivery (MissingDeliveryTriggerError, 400), which the caller runs before
// the session is read.
func decodeDelivery(req events.APIGatewayV2HTTPRequest, sessionID string) (session.Delivery, error) {
	const shape = `{trigger, variables?, message?, files?, parkId?}`
	data, err := body(req, `{"trigger": "<id>"}`)
	if err != nil {
		return session.Delivery{}, err
	}
	var in deliveryBody
	if err := decodeStrict(data, &in, "delivery", shape); err != nil {
		return session.Delivery{}, err
	}
	trigger, err := decodeTrigger(in.Trigger)
	if err != nil {
		return session.Delivery{}, err
	}
	files, err := decodeFiles(in.Files)
	if err != nil {
		return session.Delivery{}, err
	}
	if err := checkVariables(in.Variables, fmt.Sprintf("delivered to session '%s'", sessionID)); err != nil {
		return session.Delivery{}, err
	}
	return session.Delivery{Trigger: trigger, Variables: in.Variables, Message: in.Message, Files: files, ParkID: in.ParkID}, nil
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

// CheckVariableNames refuses (*spec.InvalidVariableNameError) variable names outside the
// grammar (spec 01 §5.1) of variables seeded by a start.
func CheckVariableNames(vars map[string]any) error { return checkVariables(vars, "seeded") }
