package httpapi

import (
	"strconv"

	"github.com/aws/aws-lambda-go/events"

	"net/http"
	"testing"
)

func get(path string, query map[string]string) events.APIGatewayV2HTTPRequest {
	req := request("$default", "GET", path, "")
	req.QueryStringParameters = query
	return req
}

// DESIGN §1: the read routes — the listing, the summary with the pending park, and the
// message and event pages with their cursors — and their refusals.
func TestReadRoutes(t *testing.T) {
	h, qm := newParkFixture(t)
	qm.push(tool("archmax_advance", map[string]any{"to": "signoff", "reason": "ready"}), *text("Sent to sign-off."))
	_, parked := call(t, h, turn("desk", "r1", `{"message":"please file it"}`))
	parkID := parked["pending"].(map[string]any)["parkId"]

	status, body := call(t, h, get("/v1/sessions", nil))
	list, _ := body["sessions"].([]any)
	if status != http.StatusOK || len(list) != 1 || list[0].(map[string]any)["sessionId"] != "r1" {
		t.Fatalf("list: %d %v", status, body)
	}
	status, body = call(t, h, get("/v1/sessions/r1", nil))
	pending, _ := body["pending"].(map[string]any)
	if status != http.StatusOK || body["status"] != "awaiting_decision" || body["state"] != "signoff" || pending["parkId"] != parkID {
		t.Fatalf("summary: %d %v", status, body)
	}
	count := int(body["messageCount"].(float64))

	// page through the transcript two messages at a time
	seen, after := 0, "0"
	for range count {
		status, body = call(t, h, get("/v1/sessions/r1/messages", map[string]string{"after": after, "limit": "2"}))
		msgs, _ := body["messages"].([]any)
		if status != http.StatusOK || len(msgs) > 2 {
			t.Fatalf("messages page: %d %v", status, body)
		}
		if len(msgs) == 0 {
			break
		}
		seen += len(msgs)
		after = formatNext(body["next"])
	}
	if seen != count {
		t.Errorf("paged %d messages, the summary counts %d", seen, count)
	}
	status, body = call(t, h, get("/v1/sessions/r1/events", map[string]string{"after": "0"}))
	if evs, _ := body["events"].([]any); status != http.StatusOK || len(evs) == 0 {
		t.Errorf("events: %d %v", status, body)
	}

	for _, c := range []struct {
		name   string
		req    events.APIGatewayV2HTTPRequest
		status int
		code   string
	}{
		{"unknown session", get("/v1/sessions/nobody", nil), http.StatusNotFound, "SessionNotFoundError"},
		{"messages of an unknown session", get("/v1/sessions/nobody/messages", nil), http.StatusNotFound, "SessionNotFoundError"},
		{"limit out of range", get("/v1/sessions", map[string]string{"limit": "0"}), http.StatusBadRequest, CodeInvalidRequest},
		{"a cursor we never gave", get("/v1/sessions", map[string]string{"cursor": "!!"}), http.StatusBadRequest, CodeInvalidRequest},
		{"a negative after", get("/v1/sessions/r1/messages", map[string]string{"after": "-1"}), http.StatusBadRequest, CodeInvalidRequest},
		{"an unknown status", get("/v1/sessions", map[string]string{"status": "bogus"}), http.StatusBadRequest, CodeInvalidRequest},
		{"includeChildren not a bool", get("/v1/sessions", map[string]string{"includeChildren": "maybe"}), http.StatusBadRequest, CodeInvalidRequest},
	} {
		if status, body := call(t, h, c.req); status != c.status || errCode(body) != c.code {
			t.Errorf("%s: %d %v, want %d %s", c.name, status, body, c.status, c.code)
		}
	}
	// API Gateway's route keys reach the same views
	req := request(RouteSession, "GET", "/v1/sessions/r1", "")
	req.PathParameters = map[string]string{"sessionId": "r1"}
	if status, body := call(t, h, req); status != http.StatusOK || body["sessionId"] != "r1" {
		t.Errorf("route key: %d %v", status, body)
	}
}

func formatNext(v any) string {
	n, _ := v.(float64)
	return strconv.Itoa(int(n))
}
