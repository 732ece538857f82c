package mcptool

import (
	"context"
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/core/hostconfig"
	"github.com/archmax-ai/archmax/core/hosttool"
	"github.com/archmax-ai/archmax/core/hosttool/internal/enginetest"
)

const governedFlow = `
states:
  work:
    triggers:
      manual:
    instructions: Look the order up.
    tools:
      allow: [crm_get_order]
    transitions:
      - to: plain
        description: The order is known.
  plain:
    instructions: Nothing is granted here.
    transitions:
      - to: review
        description: Ready for a person.
  review:
    type: human
    title: Sign-off
    instructions: Approve or send back.
    transitions:
      - to: work
        description: Look again.
        type: refine
`

// Governance runs before an MCP tool's handler, through the real engine: the granted call
// reaches the server with its idempotency key <session>/<turn>/<toolUseId> (a result over
// maxResultChars is offloaded); a call in a state that does not grant the tool, and calls
// in reply-only turns (a park's handoff, a reply to the parked session), are refused by the
// kernel and the server sees none of them.
func TestKernelRefusalsNeverReachTheServer(t *testing.T) {
	f := newFake(t, nil)
	d := f.decl("crm_", expose("get_order")...)
	long := d
	long.MaxResultChars = 20
	tools, err := hosttool.Build(context.Background(), &hostconfig.Config{Tools: []hostconfig.ToolDecl{long}}, kinds, hosttool.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	h := enginetest.New(t, governedFlow, tools)
	get := func(id string) enginetest.Call {
		return enginetest.Call{Name: "crm_get_order", Args: map[string]any{"id": id}}
	}
	advance := func(to string) enginetest.Call {
		return enginetest.Call{Name: "archmax_advance", Args: map[string]any{"to": to, "reason": "go on"}}
	}
	h.Script(
		enginetest.Calls(get("ORD-1")),
		enginetest.Calls(advance("plain")),
		enginetest.Calls(get("ORD-2")), // not granted in plain
		enginetest.Calls(advance("review")),
		enginetest.Calls(get("ORD-3")), // the reply-only handoff
	)
	out := h.Send("s1", "Where is ORD-1?")
	if out.State != "review" || out.Pending == nil {
		t.Fatalf("outcome %s in %s", out.Kind, out.State)
	}
	turn1 := out.TurnID
	results := enginetest.ToolResults(out, "crm_get_order")
	if len(results) != 3 {
		t.Fatalf("crm_get_order results = %+v", results)
	}
	if r := results[0]; r.Error || r.Blocked || !strings.Contains(r.Text, "/large_tool_results/") {
		t.Errorf("the granted call (offloaded past maxResultChars) = %+v", r)
	}
	if r := results[1]; !r.Blocked || !strings.Contains(r.Text, "is not allowed in state 'plain'") {
		t.Errorf("the ungranted call = %+v", r)
	}
	if r := results[2]; !r.Blocked || !strings.Contains(r.Text, "cannot run — this run is parked") {
		t.Errorf("the handoff's call = %+v", r)
	}
	offered := func(i int) (string, bool) {
		for _, ts := range h.Model.Requests[i].Tools {
			if ts.Name == "crm_get_order" {
				return ts.Description + " " + string(ts.InputSchema), true
			}
		}
		return "", false
	}
	if spec, ok := offered(0); !ok || !strings.HasPrefix(spec, "Look an order up by its id. ") || !strings.Contains(spec, "ORD-") {
		t.Errorf("work offers crm_get_order as %q (%v)", spec, ok)
	}
	if _, ok := offered(2); ok {
		t.Error("plain offers crm_get_order")
	}

	// a reply to the parked session is reply-only too
	h.Script(enginetest.Calls(get("ORD-4")))
	out = h.Send("s1", "Any news?")
	if rs := enginetest.ToolResults(out, "crm_get_order"); len(rs) != 4 || !rs[3].Blocked || !strings.Contains(rs[3].Text, "cannot run — this run is parked") {
		t.Errorf("the reply's call = %+v", rs)
	}

	calls := f.toolCalls()
	if len(calls) != 1 || calls[0].Args["id"] != "ORD-1" {
		t.Fatalf("the server saw %+v, want only the granted call", calls)
	}
	if key := calls[0].Meta[MetaIdempotencyKey]; key != "s1/"+turn1+"/"+results[0].ToolCallID {
		t.Errorf("idempotency key = %q, want s1/%s/%s", key, turn1, results[0].ToolCallID)
	}
}
