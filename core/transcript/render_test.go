package transcript

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/core/identity"
	"github.com/archmax-ai/archmax/core/model"
)

func kinds(m model.Message) string {
	s := string(m.Role) + ":"
	for i, b := range m.Content {
		if i > 0 {
			s += ","
		}
		s += string(b.Kind)
	}
	return s
}

// DESIGN §6: notes become user text; tool results come first in a merged user message;
// roles alternate; every toolUse is answered in the next message; blank text is dropped.
func TestToModelMergesAndOrders(t *testing.T) {
	msgs := []Message{
		{Role: RoleUser, Text: "hello"},
		{Role: RoleAssistant, Text: "  ", ToolCalls: []ToolCall{{ID: "a", Name: "ls"}, {ID: "b", Name: "read_file", Args: map[string]any{"file_path": "x"}}}},
		{Role: RoleTool, ToolCallID: "a", Tool: "ls", Text: ""},
		{Role: RoleRuntime, Note: NoteCode, Text: "[code] 's' moved the run to 't': r. You are now in 't'."},
		{Role: RoleTool, ToolCallID: "b", Tool: "read_file", Text: "refused", Blocked: true},
		{Role: RoleAssistant, Text: "done"},
		{Role: RoleUser, Text: "again"},
	}
	out := ToModel(msgs)
	want := []string{"user:text", "assistant:toolUse,toolUse", "user:toolResult,toolResult,text", "assistant:text", "user:text"}
	if len(out) != len(want) {
		t.Fatalf("got %d messages", len(out))
	}
	for i := range want {
		if got := kinds(out[i]); got != want[i] {
			t.Errorf("message %d = %s, want %s", i, got, want[i])
		}
	}
	r := out[2].Content
	if r[0].ToolResult.Content != "(no output)" || r[0].ToolResult.Status != "success" {
		t.Errorf("empty result = %+v", r[0].ToolResult)
	}
	if r[1].ToolResult.Status != "error" || r[1].ToolResult.ToolUseID != "b" {
		t.Errorf("blocked result = %+v", r[1].ToolResult)
	}
	if string(out[1].Content[1].ToolUse.Input) != `{"file_path":"x"}` || string(out[1].Content[0].ToolUse.Input) != `{}` {
		t.Errorf("tool inputs = %s / %s", out[1].Content[1].ToolUse.Input, out[1].Content[0].ToolUse.Input)
	}
	if err := model.ValidateRequest(&model.Request{ModelID: "m", Messages: out, Tools: []model.ToolSpec{
		{Name: "ls", InputSchema: json.RawMessage(`{"type":"object"}`)},
		{Name: "read_file", InputSchema: json.RawMessage(`{"type":"object"}`)},
	}}); err != nil {
		t.Errorf("rendered conversation is not a valid Converse history: %v", err)
	}
}

// 03 HI-03/HI-04: the history view.
func TestHistory(t *testing.T) {
	raw, err := History([]Message{
		{Role: RoleUser, Text: "hi"},
		{Role: RoleAssistant, Text: "", ToolCalls: []ToolCall{{ID: "c1", Name: "ls", Args: nil}}},
		{Role: RoleTool, ToolCallID: "c1", Tool: "ls", Text: "No files found in /"},
		{Role: RoleRuntime, Note: NoteError, Text: "[error] x"},
	}, []TrailStep{{To: "a", Kind: TrailTrigger, Reason: "manual", TS: 5}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"messages":[{"role":"user","text":"hi"},{"role":"assistant","text":"","toolCalls":[{"id":"c1","name":"ls","args":{}}]},{"role":"tool","text":"No files found in /","tool":"ls","id":"c1"},{"role":"runtime","text":"[error] x","note":"error"}],"trail":[{"to":"a","kind":"trigger","reason":"manual","ts":5}]}`
	if string(raw) != want {
		t.Errorf("history =\n%s\nwant\n%s", raw, want)
	}
	if empty, _ := History(nil, nil); string(empty) != `{"messages":[],"trail":[]}` {
		t.Errorf("empty history = %s", empty)
	}
}

func TestLastAgentText(t *testing.T) {
	msgs := []Message{{Role: RoleAssistant, Text: " first "}, {Role: RoleAssistant, Text: "  "}, {Role: RoleRuntime, Text: "[code] x"}}
	if got := LastAgentText(msgs); got != "first" {
		t.Errorf("LastAgentText = %q", got)
	}
	if LastAgentText(nil) != "" {
		t.Error("empty transcript says nothing")
	}
}

// Issue 17: who made a call is on the stored trail step, never in the history a script or
// a grader reads.
func TestHistoryLeavesCallersOut(t *testing.T) {
	by := &identity.Principal{Kind: identity.JWT, ID: "dana", Issuer: "https://issuer.example/"}
	trail := []TrailStep{{To: "a", Kind: TrailTrigger, Reason: "manual", TS: 1, By: by}, {To: "b", Kind: TrailAgent, TS: 2}}
	got, err := History(nil, trail)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(got), "dana") || strings.Contains(string(got), `"by"`) {
		t.Fatalf("History = %s, want no caller", got)
	}
	if trail[0].By != by {
		t.Fatal("History changed the caller's trail")
	}
	stored, _ := json.Marshal(trail[0])
	if !strings.Contains(string(stored), `"by":{"kind":"jwt","id":"dana","issuer":"https://issuer.example/"}`) {
		t.Fatalf("stored step = %s, want its caller", stored)
	}
}
