package session

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/core/events"
)

const mockFlow = `
states:
  work:
    triggers:
      manual:
    instructions: Work.
    tools:
      allow: [read_file, archmax_eval]
      forbid: [{ tool: read_file, paths: [scratchpad/secret/**] }]
    transitions:
      - to: check
        description: Done.
  check:
    type: code
    script: scripts/check.js
    tools:
      allow: [read_file]
    transitions:
      - to: done
        description: Stock is known.
  done:
    instructions: Report.
`

func mockHarness(t *testing.T) *harness {
	return newHarness(t, mockFlow, map[string]string{
		"workflows/wf/scripts/check.js": `export default async ({ tools }) => {
  const stock = await tools.read_file({ file_path: "scratchpad/stock.txt" });
  await tools.archmax_set_variables({ variables: { stock } });
  await tools.archmax_advance({ to: "done", reason: "stock read" });
};`,
	})
}

// 03 MK-01, MK-02, MK-04; 04 CD-52: a mock answers the agent's own call, an agent script's
// call and a code state's call after governance allowed them; the first matching mock wins;
// a refused call stays refused; the events look like a real call's.
func TestMocksInterceptEverySeamAfterGovernance(t *testing.T) {
	h := mockHarness(t)
	mocks := []ToolMock{
		{Tool: "read_file", WhenInput: map[string]any{"file_path": "scratchpad/stock.txt"}, Result: "12 in stock"},
		{Tool: "read_file", Result: map[string]any{"any": "file"}},
		{Tool: "archmax_advance", Result: "never"}, // controls are never mocked
	}
	h.script(
		calls("", call{"read_file", map[string]any{"file_path": "scratchpad/notes.md"}},
			call{"read_file", map[string]any{"file_path": "scratchpad/secret/key.txt"}},
			call{"archmax_eval", map[string]any{"code": `await tools.read_file({ file_path: "scratchpad/stock.txt" })`}}),
		calls("", advance("check", "done")), says("Stock: 12."))
	out, err := h.engine().Send(WithToolMocks(context.Background(), mocks, nil), "mk", SendInput{Message: "go"})
	must(t, err)
	if m := toolMessage(t, out, "read_file", 0); m.Text != `{"any":"file"}` || m.Error {
		t.Errorf("the agent's call: %q", m.Text)
	}
	if m := toolMessage(t, out, "read_file", 1); !m.Blocked {
		t.Errorf("a refused call was mocked: %q", m.Text)
	}
	if m := toolMessage(t, out, "archmax_eval", 0); m.Text != "12 in stock" {
		t.Errorf("the script's call: %q", m.Text)
	}
	if out.Kind != KindCompleted || out.Variables["stock"].Value != "12 in stock" {
		t.Errorf("the code state read %v (%s)", out.Variables["stock"].Value, out.Kind)
	}
	results := 0
	for _, e := range h.eventsOf(events.ToolResult) {
		if e.Str("tool") == "read_file" {
			results++
		}
	}
	if results != 3 { // the agent's mocked call, the script's, the code state's (the refused one has none)
		t.Errorf("%d read_file results", results)
	}
}

// 03 MK-03: a control tool is never mocked, whatever the mocks say.
func TestControlsAreNeverMocked(t *testing.T) {
	for _, tool := range neverMocked {
		if m := matchMock(WithToolMocks(context.Background(), []ToolMock{{Tool: tool, Result: "x"}}, nil), tool, map[string]any{}); m != nil {
			t.Errorf("%s was mocked", tool)
		}
	}
}

// A host matcher decides whenInput (the case engine passes its regex-aware partial match).
func TestMockMatcherIsTheHosts(t *testing.T) {
	ctx := WithToolMocks(context.Background(), []ToolMock{{Tool: "grep", WhenInput: map[string]any{"pattern": "x"}, Result: json.RawMessage(`{"b":1,"a":2}`)}},
		func(w, a map[string]any) bool { return strings.HasPrefix(a["pattern"].(string), w["pattern"].(string)) })
	m := matchMock(ctx, "grep", map[string]any{"pattern": "xyz"})
	if m == nil || mockText(m.Result) != `{"b":1,"a":2}` {
		t.Errorf("mock %+v", m)
	}
	if matchMock(ctx, "grep", map[string]any{"pattern": "abc"}) != nil {
		t.Error("a non-matching call was mocked")
	}
}
