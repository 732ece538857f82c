package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/archmax-ai/archmax/functions/handlers/assembly"
	"github.com/archmax-ai/archmax/functions/handlers/httpapi"
)

func TestNewHandlerRefusesMissingConfiguration(t *testing.T) {
	_, _, err := newHandler(context.Background(), func(string) string { return "" }, nil)
	var cerr *assembly.ConfigError
	if !errors.As(err, &cerr) || len(cerr.Missing) != 3 {
		t.Fatalf("err = %v, want a ConfigError naming the three required variables", err)
	}
}

// The sample events are real-shaped payload-2.0 events for our routes (they also serve
// `sam local invoke`): strict decoding, consistent route keys, and honest content-length.
func TestFixtureEventsAreAPIGatewayV2Events(t *testing.T) {
	names, err := filepath.Glob(filepath.Join(eventsDir, "turn-*.json"))
	if err != nil || len(names) != 4 {
		t.Fatalf("fixture events = %v, %v", names, err)
	}
	for _, name := range names {
		req := event(t, filepath.Base(name), nil)
		if req.Version != "2.0" || req.RequestContext.RouteKey != req.RouteKey || req.RequestContext.HTTP.Method != "POST" ||
			req.RequestContext.HTTP.Path != req.RawPath || req.RequestContext.RequestID == "" {
			t.Errorf("%s: inconsistent event %+v", name, req)
		}
		if req.RouteKey != httpapi.RouteStart && req.RouteKey != httpapi.RouteTurn {
			t.Errorf("%s: route key %q is not one of ours", name, req.RouteKey)
		}
		if n, err := strconv.Atoi(req.Headers["content-length"]); err != nil || n != len(req.Body) {
			t.Errorf("%s: content-length %q for a %d-byte body", name, req.Headers["content-length"], len(req.Body))
		}
	}
	if _, err := os.Stat(filepath.Join("testdata", "specs", "workflows", "badge-renewal", "workflow.yaml")); err != nil {
		t.Errorf("turn-signature.json targets badge-renewal, uploaded from testdata: %v", err)
	}
}
