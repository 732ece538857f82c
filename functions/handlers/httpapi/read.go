package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/store"
	"github.com/archmax-ai/archmax/core/transcript"
	"github.com/archmax-ai/archmax/functions/handlers/access"
)

// The read routes (DESIGN.md §1, served by functions/sessions), as API Gateway route keys.
const (
	RouteList     = "GET /v1/sessions"
	RouteSession  = "GET /v1/sessions/{sessionId}"
	RouteMessages = "GET /v1/sessions/{sessionId}/messages"
	RouteEvents   = "GET /v1/sessions/{sessionId}/events"
	// RouteArtifact and RouteFile serve a session's artifacts and its session-zone files
	// (files.go); {path+} is API Gateway's greedy path variable.
	RouteArtifact = "GET /v1/sessions/{sessionId}/artifacts/{name}"
	RouteFile     = "GET /v1/sessions/{sessionId}/files/{path+}"
)

// MaxPageLimit caps the `limit` of a read page.
const MaxPageLimit = 500

// SessionPage is the answer to GET /v1/sessions: summaries newest first, and the cursor of
// the next page (absent on the last one).
type SessionPage struct {
	Sessions   []session.SessionSummary `json:"sessions"`
	NextCursor string                   `json:"nextCursor,omitempty"`
}

// MessagePage is the answer to GET …/messages?after=N: the messages after the cursor N (a
// message count, spec 02 §5.4) and the cursor to pass next.
type MessagePage struct {
	Messages []transcript.Message `json:"messages"`
	Next     int64                `json:"next"`
}

// EventPage is the answer to GET …/events?after=N: stored lifecycle events after N and the
// cursor to pass next.
type EventPage struct {
	Events []json.RawMessage `json:"events"`
	Next   int64             `json:"next"`
}

// readTarget is a routed read: which view, of which session ("" for the listing).
type readTarget struct {
	view      string // "list" | "session" | "messages" | "events" | "artifact" | "file"
	sessionID string
	name      string // an artifact's name, or a file's path as requested
}

// readRoute matches a GET request to a read route, by route key or by raw path; ok is false
// for any other request.
func readRoute(req events.APIGatewayV2HTTPRequest) (readTarget, bool) {
	id := req.PathParameters["sessionId"]
	switch req.RouteKey {
	case RouteList:
		return readTarget{view: "list"}, true
	case RouteSession:
		return readTarget{view: "session", sessionID: id}, true
	case RouteMessages:
		return readTarget{view: "messages", sessionID: id}, true
	case RouteEvents:
		return readTarget{view: "events", sessionID: id}, true
	case RouteArtifact:
		return readTarget{view: "artifact", sessionID: id, name: req.PathParameters["name"]}, true
	case RouteFile:
		return readTarget{view: "file", sessionID: id, name: req.PathParameters["path"]}, true
	}
	if req.RequestContext.HTTP.Method != http.MethodGet {
		return readTarget{}, false
	}
	if id, p, ok := filePath(req.RawPath); ok {
		return readTarget{view: "file", sessionID: id, name: p}, true
	}
	seg, ok := pathSegments(req.RawPath)
	if !ok || len(seg) < 2 || seg[0] != "v1" || seg[1] != "sessions" {
		return readTarget{}, false
	}
	switch {
	case len(seg) == 2:
		return readTarget{view: "list"}, true
	case len(seg) == 3:
		return readTarget{view: "session", sessionID: seg[2]}, true
	case len(seg) == 4 && (seg[3] == "messages" || seg[3] == "events"):
		return readTarget{view: seg[3], sessionID: seg[2]}, true
	case len(seg) == 5 && seg[3] == "artifacts":
		return readTarget{view: "artifact", sessionID: seg[2], name: seg[4]}, true
	}
	return readTarget{}, false
}

// filePath splits a raw path /v1/sessions/{id}/files/{path} into the session id and the
// file's path as sent: the route's prefix is matched exactly, but the file's path may hold
// empty segments (`scratchpad//a.txt`, `scratchpad/a.txt/`), which the route canonicalises
// away as the file tools do (workspace.ServedPath) — the same answer as API Gateway's
// greedy {path+} delivering them. ok is false for any other path, or an empty file path.
func filePath(rawPath string) (sessionID, p string, ok bool) {
	rest, ok := strings.CutPrefix(rawPath, "/v1/sessions/")
	if !ok {
		return "", "", false
	}
	id, p, ok := strings.Cut(rest, "/files/")
	if !ok || id == "" || strings.Contains(id, "/") || p == "" {
		return "", "", false
	}
	return id, p, true
}

// read serves a read route from the session store for caller; it writes nothing. A listing
// holds only what the caller may see, through an index (access.ListOwner: an admin's
// listing is every session's; a decider asking for status=awaiting_decision gets the
// decision queue; anyone else their own sessions); a session the caller may not see is 404,
// as a missing one. Errors: *spec.SessionStoreIdError (400), *session.SessionNotFoundError
// (404), invalid query parameters (400 InvalidRequestError).
func (h *Handler) read(ctx context.Context, req events.APIGatewayV2HTTPRequest, t readTarget, caller access.Caller) (any, error) {
	q := req.QueryStringParameters
	sessions := h.engines.Sessions()
	limit, err := queryInt(q, "limit", 0, 1, MaxPageLimit)
	if err != nil {
		return nil, err
	}
	switch t.view {
	case "list":
		if _, err := store.DecodeCursor(q["cursor"]); err != nil {
			return nil, invalidRequest("'cursor' is not a cursor this API returned.")
		}
		children := false
		if v, ok := q["includeChildren"]; ok {
			if children, err = strconv.ParseBool(v); err != nil {
				return nil, invalidRequest("'includeChildren' must be true or false.")
			}
		}
		switch st := session.Status(q["status"]); st {
		case "", session.StatusRunning, session.StatusCompleted, session.StatusFailed, session.StatusRejected,
			session.StatusAwaitingDecision, session.StatusAwaitingInput, session.StatusDeleting:
		default:
			return nil, invalidRequest("'status' must be one of running, completed, failed, rejected, awaiting_decision, awaiting_input, deleting.")
		}
		status := session.Status(q["status"])
		list, next, err := sessions.List(ctx, session.ListOptions{Workflow: q["workflow"], Status: status,
			Limit: limit, Cursor: q["cursor"], IncludeChildren: children, Owner: access.ListOwner(caller, status)})
		if err != nil {
			return nil, err
		}
		for i := range list {
			list[i].Pending = linkEvidence(list[i].Pending, list[i].SessionID)
		}
		return SessionPage{Sessions: nonNil(list), NextCursor: next}, nil
	case "session":
		sum, err := sessions.Get(ctx, t.sessionID)
		if err != nil {
			return nil, err
		}
		// the summary's owner is the head's (both written at the session's first commit)
		a := session.SessionAccess{SessionID: sum.SessionID, Exists: true, Workflow: sum.Workflow, Status: sum.Status}
		if sum.Owner != nil {
			a.Owner = sum.Owner.Key()
		}
		if err := h.policy.Check(caller, access.Read, a); err != nil {
			return nil, err
		}
		sum.Pending = linkEvidence(sum.Pending, sum.SessionID)
		return sum, nil
	}
	after, err := queryAfter(q)
	if err != nil {
		return nil, err
	}
	a, err := sessions.Access(ctx, t.sessionID)
	if err != nil {
		return nil, err
	}
	if err := h.policy.Check(caller, access.Read, a); err != nil {
		return nil, err
	}
	if t.view == "messages" {
		msgs, next, err := sessions.Messages(ctx, t.sessionID, after, limit)
		if err != nil {
			return nil, err
		}
		return MessagePage{Messages: nonNil(msgs), Next: next}, nil
	}
	evs, next, err := sessions.Events(ctx, t.sessionID, after, limit)
	if err != nil {
		return nil, err
	}
	return EventPage{Events: nonNil(evs), Next: next}, nil
}

// queryAfter reads a page cursor `after`: a count of items already read (absent: 0). A
// count past the end reads as the end.
func queryAfter(q map[string]string) (int64, error) {
	v, ok := q["after"]
	if !ok || v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if errors.Is(err, strconv.ErrRange) && n == math.MaxInt64 {
		return n, nil // more than any log holds: the end
	}
	if err != nil || n < 0 {
		return 0, invalidRequest("'after' must be a non-negative integer: how many items were already read (the previous page's next).")
	}
	return n, nil
}

// queryInt reads an integer query parameter in [min, max]; absent is def.
func queryInt(q map[string]string, name string, def, min, max int) (int, error) {
	v, ok := q[name]
	if !ok || v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < min || n > max {
		return 0, invalidRequest("'%s' must be an integer from %d to %d.", name, min, max)
	}
	return n, nil
}
