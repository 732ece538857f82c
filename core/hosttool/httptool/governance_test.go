package httptool

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/core/hostconfig"
	"github.com/archmax-ai/archmax/core/hosttool"
	"github.com/archmax-ai/archmax/core/hosttool/internal/enginetest"
	"github.com/archmax-ai/archmax/core/spec"
)

const governed = `
states:
  work:
    triggers:
      manual:
    tools:
      forbid:
        - { tool: get_order, args: { id: "ADMIN-*" } }
      allow:
        - get_order
        - { tool: fetch_doc, paths: ["orders/**"] }
    transitions:
      - to: review
        description: hand to a person
      - to: elsewhere
        description: somewhere without the tools
  review:
    type: human
    title: Check the order
    transitions:
      - to: work
        description: back
  elsewhere:
    instructions: nothing granted here
`

// Through the engine: a forbid on a URL argument, a guard on a path argument, a state that
// does not grant the tool and a reply-only turn are refused before any request leaves the
// process — the peer sees only the calls governance admitted. A long answer is offloaded at
// MaxResultChars; the request carries the reliability key <session>/<turn>/<toolUseId>.
func TestGovernedThroughTheEngine(t *testing.T) {
	p := newPeer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/LONG") {
			fmt.Fprintf(w, `{"lines":%q}`, strings.Repeat("a line of the order\n", 200))
			return
		}
		fmt.Fprintf(w, `{"path":%q,"query":%q}`, r.URL.Path, r.URL.RawQuery)
	})
	order := hostconfig.ToolDecl{Kind: hostconfig.KindHTTP, Name: "get_order", Description: "Gets an order.", MaxResultChars: 1000,
		Input: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`),
		HTTP:  &hostconfig.HTTPTool{Method: "GET", URL: "https://" + p.host() + "/v1/orders/{id}"}}
	doc := hostconfig.ToolDecl{Kind: hostconfig.KindHTTP, Name: "fetch_doc", Description: "Fetches a document.",
		Input: json.RawMessage(`{"type":"object","properties":{"file":{"type":"string"}},"required":["file"]}`),
		Paths: []spec.PathArg{{Arg: "file", Access: "read"}},
		HTTP:  &hostconfig.HTTPTool{Method: "GET", URL: "https://" + p.host() + "/v1/docs?path={file}"}}
	h := enginetest.New(t, governed, build(t, hosttool.Deps{HTTP: p.Client()}, order, doc))
	c := func(tool, arg, v string) enginetest.Call {
		return enginetest.Call{Name: tool, Args: map[string]any{arg: v}}
	}
	h.Script(
		enginetest.Calls(c("get_order", "id", "ORD-1"), c("get_order", "id", "ADMIN-1"), c("get_order", "id", "LONG")),
		enginetest.Calls(c("fetch_doc", "file", "orders/a.md"), c("fetch_doc", "file", "orders/../secrets/k.md"), c("fetch_doc", "file", "secrets/k.md")),
		enginetest.Calls(enginetest.Call{Name: "archmax_advance", Args: map[string]any{"to": "review", "reason": "ready"}}),
		enginetest.Says("Handed to a person."),
	)
	out := h.Send("s-1", "where is my order?")
	orders := enginetest.ToolResults(out, "get_order")
	if len(orders) != 3 || orders[0].Blocked || orders[0].Text != `{"path":"/v1/orders/ORD-1","query":""}` {
		t.Fatalf("get_order results: %+v", orders)
	}
	if !orders[1].Blocked || !strings.Contains(orders[1].Text, "BLOCKED") || !strings.Contains(orders[1].Text, "forbidden") {
		t.Errorf("the forbidden URL argument: %+v", orders[1])
	}
	if orders[2].Blocked || orders[2].Error || !strings.Contains(orders[2].Text, "/large_tool_results/") {
		t.Errorf("a long answer is offloaded: %+v", orders[2])
	}
	docs := enginetest.ToolResults(out, "fetch_doc")
	if len(docs) != 3 || docs[0].Blocked || docs[0].Text != `{"path":"/v1/docs","query":"path=orders%2Fa.md"}` {
		t.Fatalf("fetch_doc results: %+v", docs)
	}
	for _, m := range docs[1:] {
		if !m.Blocked || !strings.Contains(m.Text, "BLOCKED: 'fetch_doc' is not allowed in state 'work'") {
			t.Errorf("a path outside the guard: %+v", m)
		}
	}
	reqs := p.requests()
	if len(reqs) != 3 {
		t.Fatalf("the peer saw %d requests, want the 3 admitted: %+v", len(reqs), reqs)
	}
	if key := reqs[0].Header.Get(IdempotencyHeader); !strings.HasPrefix(key, "s-1/"+out.TurnID+"/") || key == "s-1/"+out.TurnID+"/" {
		t.Errorf("Idempotency-Key %q (turn %s)", key, out.TurnID)
	}

	// a reply-only turn: the session is parked at a person
	h.Script(enginetest.Calls(c("get_order", "id", "ORD-2")))
	out = h.Send("s-1", "any news?")
	if rs := enginetest.ToolResults(out, "get_order"); len(rs) == 0 || !rs[len(rs)-1].Blocked || !strings.Contains(rs[len(rs)-1].Text, "cannot run — this run is parked") {
		t.Errorf("a reply-only call: %+v", rs)
	}
	// a state that does not grant the tool
	h.Script(
		enginetest.Calls(enginetest.Call{Name: "archmax_advance", Args: map[string]any{"to": "elsewhere", "reason": "go"}}),
		enginetest.Calls(c("get_order", "id", "ORD-3"), c("fetch_doc", "file", "orders/a.md")),
		enginetest.Says("done"),
	)
	out = h.Send("s-2", "hi")
	for _, tool := range []string{"get_order", "fetch_doc"} {
		if rs := enginetest.ToolResults(out, tool); len(rs) != 1 || !rs[0].Blocked || !strings.Contains(rs[0].Text, "is not allowed in state 'elsewhere'") {
			t.Errorf("an ungranted %s: %+v", tool, rs)
		}
	}
	if n := len(p.requests()); n != 3 {
		t.Errorf("refused calls reached the peer: %d requests, want 3", n)
	}
}
