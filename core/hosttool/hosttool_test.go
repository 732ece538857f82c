package hosttool

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/hostconfig"
	"github.com/archmax-ai/archmax/core/session"
)

// Every kind's tool has its arguments checked against its schema before its handler runs,
// and its timeout applied.
func TestBuildWrapsEveryTool(t *testing.T) {
	ran := 0
	kind := func(_ context.Context, d hostconfig.ToolDecl, _ Deps) ([]session.HostTool, error) {
		return []session.HostTool{{Name: d.Name, Description: d.Description, InputSchema: d.Input,
			Handler: func(ctx context.Context, c session.HostCall) (string, error) {
				ran++
				if c.Args["wait"] == true {
					<-ctx.Done()
					return "", ctx.Err()
				}
				return "ok", nil
			}}}, nil
	}
	cfg := &hostconfig.Config{Tools: []hostconfig.ToolDecl{{Kind: "test", Name: "get_order", Description: "Gets an order.",
		Input:   json.RawMessage(`{"type":"object","properties":{"id":{"type":"string","pattern":"^ORD-[0-9]+$"},"wait":{"type":"boolean"}},"required":["id"],"additionalProperties":false}`),
		Timeout: 10 * time.Millisecond}}}
	tools, err := Build(context.Background(), cfg, map[string]Builder{"test": kind}, Deps{})
	if err != nil || len(tools) != 1 {
		t.Fatalf("Build: %v %v", tools, err)
	}
	h := tools[0].Handler
	if text, err := h(context.Background(), session.HostCall{Args: map[string]any{"id": "ORD-7"}}); err != nil || text != "ok" || ran != 1 {
		t.Errorf("a valid call: %q %v (ran %d)", text, err, ran)
	}
	for _, bad := range []map[string]any{{}, {"id": 7}, {"id": "x/../y"}, {"id": "ORD-1", "extra": 1}} {
		_, err := h(context.Background(), session.HostCall{Args: bad})
		var ae *ArgumentsError
		if !errors.As(err, &ae) || !strings.HasPrefix(err.Error(), "Error: the arguments of 'get_order' do not match its input schema (") {
			t.Errorf("args %v: %v", bad, err)
		}
	}
	if ran != 1 {
		t.Errorf("a call with bad arguments reached the tool (%d runs)", ran)
	}
	_, err = h(context.Background(), session.HostCall{Args: map[string]any{"id": "ORD-1", "wait": true}})
	var te *TimeoutError
	if !errors.As(err, &te) || te.After != 10*time.Millisecond {
		t.Errorf("a slow call: %v", err)
	}
	if _, err := Build(context.Background(), &hostconfig.Config{Tools: []hostconfig.ToolDecl{{Kind: "nope", Name: "x", Line: 3}}}, nil, Deps{}); err == nil ||
		!strings.Contains(err.Error(), "archmax.host.yaml:3: tool 'x': kind \"nope\"") {
		t.Errorf("an unknown kind: %v", err)
	}
}
