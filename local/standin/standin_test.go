package standin

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/core/hostconfig"
	"github.com/archmax-ai/archmax/core/hosttool"
	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/functions/handlers/hostenv"
)

// A host file whose every tool is stood in: two lambda tools on one function, an http tool
// with path, query and body arguments and a secret it must not read, and an MCP server
// signed for AgentCore that must not be reached.
const file = `tools:
  - name: get_order
    description: Looks an order up.
    input: { type: object, properties: { id: { type: string } }, required: [id] }
    lambda: { function: orders, qualifier: live }
    local:
      answers:
        - { whenInput: { id: ORD-1 }, result: { id: ORD-1, status: shipped } }
        - { whenInput: { id: ORD-9 }, error: "Error: ORD-9 belongs to another customer." }
  - name: cancel_order
    description: Cancels an order.
    input: { type: object, properties: { id: { type: string } }, required: [id] }
    lambda: { function: "arn:aws:lambda:eu-west-1:210987654321:function:orders" }
    local:
      answers: [{ result: cancelled }]
  - name: track
    description: Where a parcel is.
    input:
      type: object
      properties: { carrier: { type: string }, id: { type: string }, days: { type: integer }, note: { type: string } }
      required: [carrier, id]
    http:
      method: POST
      url: https://tracking.example.com/v1/{carrier}/parcels/{id}?days={days}&lang=en
      auth: { header: Authorization, prefix: "Bearer ", secret: tracking/token }
    local:
      answers:
        - { whenInput: { carrier: dhl, id: "a b", days: 3, note: hi }, result: { at: Leeds depot } }
        - { whenInput: { carrier: dhl }, error: unknown parcel }
  - mcp:
      url: https://tickets-gw.gateway.bedrock-agentcore.eu-west-1.amazonaws.com/mcp
      auth: { sigv4: { service: bedrock-agentcore } }
      prefix: tickets_
      expose:
        - name: create_ticket
          as: open
          local:
            description: Opens a support ticket.
            input: { type: object, properties: { subject: { type: string } }, required: [subject] }
            answers:
              - { whenInput: { subject: late parcel }, result: TCK-1042 }
              - { error: Only parcel tickets here. }
`

func build(t *testing.T) (map[string]session.HostTool, *Peers) {
	t.Helper()
	cfg, err := hostconfig.Load([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	peers := New()
	t.Cleanup(func() { _ = peers.Close() })
	refused := errors.New("a stand-in reads no secret and signs nothing")
	deps := hosttool.Deps{
		Secret: func(context.Context, *hostconfig.Auth) (string, error) { return "", refused },
		Sign:   func(context.Context, *http.Request, []byte, string, string) error { return refused },
	} // and no Lambda invoker: the stand-in brings its own
	tools, err := hosttool.Build(context.Background(), cfg, peers.Kinds(hostenv.Kinds()), deps)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]session.HostTool{}
	for _, tool := range tools {
		out[tool.Name] = tool
	}
	return out, peers
}

func call(t *testing.T, tools map[string]session.HostTool, name string, args map[string]any) (string, error) {
	t.Helper()
	tool, ok := tools[name]
	if !ok {
		t.Fatalf("no tool %s", name)
	}
	return tool.Handler(context.Background(), session.HostCall{SessionID: "s1", State: "work", CallID: "c1", Args: args, IdempotencyKey: "s1/t1/c1"})
}

// Every kind's own code reaches its stand-in over its own protocol, without auth, and reads
// the canned answers as it would the real tool's.
func TestStandInsAnswerThroughTheKinds(t *testing.T) {
	tools, _ := build(t)
	for _, c := range []struct {
		tool string
		args map[string]any
		want string // "Error…" / a part of an error
		err  bool
	}{
		{"get_order", map[string]any{"id": "ORD-1"}, `{"id":"ORD-1","status":"shipped"}`, false},
		{"get_order", map[string]any{"id": "ORD-9"}, "Error: ORD-9 belongs to another customer.", true},
		{"get_order", map[string]any{"id": "ORD-5"}, `has no answer for the arguments {"id":"ORD-5"}`, true},
		{"cancel_order", map[string]any{"id": "ORD-1"}, "cancelled", false}, // the same function, its own answers
		// the URL template filled and encoded by the http kind, read back into arguments
		{"track", map[string]any{"carrier": "dhl", "id": "a b", "days": 3, "note": "hi"}, `{"at":"Leeds depot"}`, false},
		{"track", map[string]any{"carrier": "dhl", "id": "x"}, "answered HTTP 422 Unprocessable Entity: unknown parcel", true},
		{"track", map[string]any{"carrier": "dhl", "id": "a/b"}, "Nothing was sent.", true}, // the kind's own refusal, before the stand-in
		{"track", map[string]any{"carrier": "ups", "id": "1"}, `has no answer for the arguments {"carrier":"ups","id":"1"}`, true},
		{"tickets_open", map[string]any{"subject": "late parcel"}, "TCK-1042", false},
		{"tickets_open", map[string]any{"subject": "refund"}, "Only parcel tickets here.", true},
	} {
		got, err := call(t, tools, c.tool, c.args)
		if c.err != (err != nil) {
			t.Errorf("%s %v: %q, error %v", c.tool, c.args, got, err)
			continue
		}
		if err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, c.want) {
			t.Errorf("%s %v: %q, want %q", c.tool, c.args, got, c.want)
		}
	}
}

// Path, query and body arguments come back as the call gave them: a path value with a
// space and a '%', a number from the query, the body's string.
func TestHTTPStandInReadsTheArgumentsBack(t *testing.T) {
	cfg, err := hostconfig.Load([]byte(`tools:
  - name: track
    description: Where a parcel is.
    input:
      type: object
      properties: { id: { type: string }, days: { type: integer }, late: { type: boolean }, note: { type: string } }
      required: [id]
    http: { method: POST, url: "https://tracking.example.com/v1/parcels/{id}?days={days}&late={late}" }
    local:
      answers:
        - { whenInput: { id: "a b%41", days: 3, late: true, note: "x?y" }, result: matched }
`))
	if err != nil {
		t.Fatal(err)
	}
	peers := New()
	defer peers.Close()
	tools, err := hosttool.Build(context.Background(), cfg, peers.Kinds(hostenv.Kinds()), hosttool.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := tools[0].Handler(context.Background(), session.HostCall{SessionID: "s", CallID: "c", IdempotencyKey: "s/t/c",
		Args: map[string]any{"id": "a b%41", "days": 3, "late": true, "note": "x?y"}})
	if err != nil || got != "matched" {
		t.Errorf("%q %v", got, err)
	}
}

// The stand-in MCP server lists what the file says: the kind builds the tool with the
// stand-in's description and schema (the model reads these).
func TestMCPStandInListsTheDeclaredTools(t *testing.T) {
	tools, _ := build(t)
	open := tools["tickets_open"]
	if open.Description != "Opens a support ticket." || !strings.Contains(string(open.InputSchema), `"subject"`) {
		t.Errorf("listed: %q %s", open.Description, open.InputSchema)
	}
	// arguments the listed schema refuses never leave the process
	if _, err := call(t, tools, "tickets_open", map[string]any{}); err == nil || !strings.Contains(err.Error(), "do not match its input schema") {
		t.Errorf("no subject: %v", err)
	}
}

// Close stops the stand-ins: a call after it cannot reach one.
func TestCloseStopsTheStandIns(t *testing.T) {
	tools, peers := build(t)
	if _, err := call(t, tools, "tickets_open", map[string]any{"subject": "late parcel"}); err != nil {
		t.Fatal(err)
	}
	if err := peers.Close(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"get_order", "track"} {
		if got, err := call(t, tools, name, map[string]any{"id": "ORD-1", "carrier": "dhl"}); err == nil {
			t.Errorf("%s after Close: %q", name, got)
		}
	}
	if _, err := hosttool.Build(context.Background(), mustLoad(t, file), peers.Kinds(hostenv.Kinds()), hosttool.Deps{}); err == nil ||
		!strings.Contains(err.Error(), "its local stand-in") {
		t.Errorf("a build after Close: %v", err)
	}
}

func mustLoad(t *testing.T, src string) *hostconfig.Config {
	t.Helper()
	cfg, err := hostconfig.Load([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
