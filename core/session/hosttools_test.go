package session

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/core/spec"
)

func lookupTool(calls *[]HostCall) HostTool {
	return HostTool{
		Name:        "lookup_customer",
		Description: "Look a customer up by id.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`),
		Handler: func(ctx context.Context, c HostCall) (string, error) {
			*calls = append(*calls, c)
			if c.Args["id"] == "boom" {
				return "", errors.New("customer service unavailable")
			}
			return `{"name":"Dana"}`, nil
		},
	}
}

// Issue 4 host tools: registered with a schema, granted by tools.allow, run with the
// session's workspace; a failing handler answers an error result and the turn goes on.
func TestHostToolGrantedRunsAndFails(t *testing.T) {
	wf := `
states:
  work:
    triggers:
      manual:
    tools:
      allow: [lookup_customer]
    transitions:
      - to: other
        description: go
  other:
    instructions: no grants here
`
	var got []HostCall
	h := newHarness(t, wf, nil)
	h.cfg.Tools = []HostTool{lookupTool(&got)}
	h.script(
		calls("", call{"lookup_customer", map[string]any{"id": "c-1"}}, call{"lookup_customer", map[string]any{"id": "boom"}}),
		calls("", advance("other", "done")),
		calls("", call{"lookup_customer", map[string]any{"id": "c-2"}}),
		says("ok"),
	)
	out := h.send("s1", "hi", nil)
	if len(got) != 2 || got[0].SessionID != "s1" || got[0].State != "work" || got[0].Workspace == nil || got[0].CallID == "" {
		t.Fatalf("handler calls = %+v", got)
	}
	if m := toolMessage(t, out, "lookup_customer", 0); m.Text != `{"name":"Dana"}` || m.Error {
		t.Errorf("result = %+v", m)
	}
	if m := toolMessage(t, out, "lookup_customer", 1); m.Text != "customer service unavailable" || !m.Error || m.Blocked {
		t.Errorf("failing handler = %+v", m)
	}
	if m := toolMessage(t, out, "lookup_customer", 2); !m.Blocked || !strings.Contains(m.Text, "is not allowed in state 'other'") {
		t.Errorf("ungranted call = %+v", m)
	}
	offered := func(i int) bool {
		for _, ts := range h.model.requests[i].Tools {
			if ts.Name == "lookup_customer" {
				return ts.Description == "Look a customer up by id."
			}
		}
		return false
	}
	if !offered(0) || offered(2) {
		t.Error("a host tool is offered exactly where it is granted")
	}
}

// 01 §7.4 / V-36: reserved names and bad path declarations fail assembly.
func TestHostToolRegistrationErrors(t *testing.T) {
	h := newHarness(t, twoAgents, nil)
	var calls []HostCall
	base := lookupTool(&calls)
	cases := []struct {
		name  string
		tool  func() HostTool
		check func(error) bool
	}{
		{"archmax prefix", func() HostTool { t := base; t.Name = "archmax_lookup"; return t }, func(err error) bool { var e *ReservedToolNameError; return errors.As(err, &e) }},
		{"runtime file tool", func() HostTool { t := base; t.Name = "copy_file"; return t }, func(err error) bool { var e *ReservedToolNameError; return errors.As(err, &e) }},
		{"built-in", func() HostTool { t := base; t.Name = "read_file"; return t }, func(err error) bool { var e *ReservedToolNameError; return errors.As(err, &e) }},
		{"bad access", func() HostTool { t := base; t.Paths = []spec.PathArg{{Arg: "file", Access: "delete"}}; return t }, func(err error) bool { var e *ToolPathsError; return errors.As(err, &e) }},
		{"bad schema", func() HostTool { t := base; t.InputSchema = json.RawMessage(`{"type":"string"}`); return t }, func(err error) bool { return err != nil }},
		{"bad name", func() HostTool { t := base; t.Name = "look up"; return t }, func(err error) bool { return err != nil }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := h.cfg
			cfg.Tools = []HostTool{c.tool()}
			if _, err := New(cfg); !c.check(err) {
				t.Errorf("New: %v", err)
			}
		})
	}
}

// Issue 4: an oversized host tool result is offloaded to large_tool_results/ and the model
// reads a pointer; the whole result reads back from the session's files.
func TestLargeHostToolResultIsOffloaded(t *testing.T) {
	wf := `
states:
  work:
    triggers:
      manual:
    tools:
      allow: [dump]
`
	h := newHarness(t, wf, nil)
	big := strings.Repeat("0123456789abcdef", 100_000) // 1.6 MB
	h.cfg.Tools = []HostTool{{Name: "dump", Description: "Dump everything.", InputSchema: json.RawMessage(`{"type":"object"}`),
		Handler: func(context.Context, HostCall) (string, error) { return big, nil }}}
	h.script(calls("", call{"dump", map[string]any{}}), says("ok"))
	out := h.send("s1", "hi", nil)
	m := toolMessage(t, out, "dump", 0)
	if !strings.Contains(m.Text, "/large_tool_results/") || len(m.Text) > 1000 {
		t.Fatalf("pointer = %q", m.Text)
	}
	entries, err := h.files.List(context.Background(), "s1/large_tool_results")
	if err != nil || len(entries) != 1 {
		t.Fatalf("offloaded files = %+v, %v", entries, err)
	}
	got, err := h.files.Read(context.Background(), "s1/large_tool_results/"+entries[0].Name)
	if err != nil || string(got) != big {
		t.Errorf("offloaded result differs (%d bytes, %v)", len(got), err)
	}
}

// BR-48: write_todos replaces the plan kept in the session record; two calls in one answer
// run neither.
func TestWriteTodos(t *testing.T) {
	h := newHarness(t, twoAgents, nil)
	todo := func(items ...any) call { return call{"write_todos", map[string]any{"todos": items}} }
	h.script(
		calls("", todo(map[string]any{"content": "Plan", "status": "in_progress", "extra": 1})),
		calls("", todo(), todo()),
		calls("", todo(map[string]any{"content": "x", "status": "done"})),
		says("ok"),
	)
	out := h.send("s1", "hi", nil)
	if m := toolMessage(t, out, "write_todos", 0); m.Text != `Updated todo list to [{"content":"Plan","status":"in_progress"}]` || m.Error {
		t.Errorf("first = %+v", m)
	}
	for i := 1; i <= 2; i++ {
		if m := toolMessage(t, out, "write_todos", i); !m.Error || !strings.Contains(m.Text, "never be called multiple times in parallel") {
			t.Errorf("parallel call %d = %+v", i, m)
		}
	}
	if m := toolMessage(t, out, "write_todos", 3); !m.Error || !strings.Contains(m.Text, "Received tool input did not match expected schema") || !strings.Contains(m.Text, "→ at todos.0.status") {
		t.Errorf("bad status = %q", m.Text)
	}
	head, _ := h.log.Get(context.Background(), "s1")
	if !strings.Contains(string(head.Body), `"todos":[{"content":"Plan","status":"in_progress"}]`) {
		t.Errorf("plan not in the record: %s", head.Body)
	}
}

// 02 §1.8, 01 §4.11: turn files are placed under scratchpad/attachments/ (never
// overwriting: -1, -2 …) and their variables seeded, locked, with the placed path — the
// value a `file`-typed requires expects. A bad file writes nothing.
func TestTurnFiles(t *testing.T) {
	wf := `
states:
  intake:
    triggers:
      manual:
        requires: [{ name: invoice, type: file }]
`
	h := newHarness(t, wf, nil)
	e := h.engine()
	ctx := context.Background()
	var bad *InvalidTurnFileError
	if _, err := e.Send(ctx, "s1", SendInput{Message: "x", Files: map[string]TurnFile{"invoice": {Name: "../x.pdf", Content: []byte("x")}}}); !errors.As(err, &bad) {
		t.Fatalf("bad name: %v", err)
	}
	if _, err := h.log.Get(ctx, "s1"); err == nil {
		t.Fatal("a refused turn file wrote the session")
	}
	pdf := []byte("%PDF-1.7\x00\x01binary")
	h.script(says("got it"))
	out, err := e.Send(ctx, "s1", SendInput{Message: "here", Files: map[string]TurnFile{"invoice": {Name: "invoice.pdf", Content: pdf}}})
	if err != nil || out.Kind != KindCompleted {
		t.Fatalf("send: %v %+v", err, out)
	}
	if v := out.Variables["invoice"]; v.Value != "scratchpad/attachments/invoice.pdf" || !v.Locked {
		t.Errorf("invoice = %+v", v)
	}
	h.script(says("again"))
	out, err = e.Send(ctx, "s1", SendInput{Message: "another", Files: map[string]TurnFile{"invoice": {Name: "invoice.pdf", Content: []byte("v2")}}})
	if err != nil || out.Variables["invoice"].Value != "scratchpad/attachments/invoice-1.pdf" {
		t.Fatalf("second placement: %v %+v", err, out.Variables["invoice"])
	}
	if got, _ := h.files.Read(ctx, "s1/scratchpad/attachments/invoice.pdf"); string(got) != string(pdf) {
		t.Error("the first file was not kept byte-exact")
	}
}
