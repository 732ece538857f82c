package httpapi

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// The sample API Gateway events of fixtures/events (also for `sam local invoke`) are
// strict payload-2.0 events with consistent route keys, honest content-length, and a route
// this handler serves.
func TestFixtureAPIGatewayEventsAreRouted(t *testing.T) {
	for _, name := range []string{"decide-decision.json", "deliver-delivery.json", "sessions-get.json", "sessions-messages.json", "sessions-artifact.json",
		"turn-start.json", "turn-continue.json"} {
		data, err := os.ReadFile(filepath.Join("../../../fixtures/events", name))
		if err != nil {
			t.Fatal(err)
		}
		var req events.APIGatewayV2HTTPRequest
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			t.Fatalf("%s: not an API Gateway v2 event: %v", name, err)
		}
		if req.Version != "2.0" || req.RequestContext.RouteKey != req.RouteKey || req.RequestContext.HTTP.Path != req.RawPath {
			t.Errorf("%s: inconsistent event", name)
		}
		if n := req.Headers["content-length"]; n != "" && n != strconv.Itoa(len(req.Body)) {
			t.Errorf("%s: content-length %s for a %d-byte body", name, n, len(req.Body))
		}
		_, readable := readRoute(req)
		if _, err := route(req); err != nil && !readable {
			t.Errorf("%s: not routed: %v", name, err)
		}
	}
}
