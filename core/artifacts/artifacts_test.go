package artifacts

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/transcript"
)

const desk = `states:
  draft:
    triggers:
      manual:
    instructions: Draft it.
    transitions:
      - to: review
        description: Ready for <review> & sign-off.
  review:
    type: human
    instructions: Decide.
    transitions:
      - to: done
        description: Approved.
  done:
    instructions: Say so.
`

func source(t *testing.T) *Source {
	t.Helper()
	sp, err := spec.Load("desk", "workflows/desk/workflow.yaml", []byte(desk))
	if err != nil {
		t.Fatal(err)
	}
	return &Source{SessionID: "s-1", Workflow: "desk", Spec: sp, SpecHash: sp.Hash(), Checkpoint: true, Version: "v1.2.3",
		Messages: []transcript.Message{
			{Role: transcript.RoleUser, Text: "File it.", State: "draft"},
			{Role: transcript.RoleAssistant, State: "draft", ToolCalls: []transcript.ToolCall{{ID: "c1", Name: "write_file", Args: map[string]any{"path": "scratchpad/a.md"}}, {ID: "c2", Name: "archmax_advance"}}},
			{Role: transcript.RoleTool, State: "draft", ToolCallID: "c1", Tool: "write_file", Text: "wrote"},
			{Role: transcript.RoleAssistant, State: "review", Text: "Handed over."},
			{Role: transcript.RoleRuntime, Note: transcript.NoteDecision, Text: "[decision] done"},
			{Role: transcript.RoleAssistant, State: "done", Text: "Done."},
		},
		Trail: []transcript.TrailStep{{To: "draft", Kind: transcript.TrailTrigger}, {To: "review", Kind: transcript.TrailAgent}, {To: "done", Kind: transcript.TrailHuman}},
	}
}

func decode(t *testing.T, data []byte) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("%s: %v", data, err)
	}
	return v
}

// Spec 02 §10: every file, its shape, and the same bytes for the same source.
func TestRenderEveryArtifact(t *testing.T) {
	src := source(t)
	files := Render(src)
	if len(files) != len(Names) {
		t.Fatalf("rendered %d files, want %d", len(files), len(Names))
	}
	for i, f := range files {
		if f.Name != Names[i] || !strings.HasSuffix(string(f.Data), "\n") {
			t.Errorf("file %d = %s (want %s, ending in a newline)", i, f.Name, Names[i])
		}
		if again, _ := One(src, f.Name); string(again) != string(f.Data) {
			t.Errorf("%s renders differently twice", f.Name)
		}
	}
	g := decode(t, files[0].Data)
	if g["entry"] != "draft" || len(g["nodes"].([]any)) != 4 || !strings.HasPrefix(g["mermaid"].(string), "graph TD;\n") {
		t.Errorf("graph.json = %s", files[0].Data)
	}
	if !strings.Contains(string(files[0].Data), "Ready for <review> & sign-off.") {
		t.Errorf("graph.json escapes HTML characters: %s", files[0].Data)
	}
	if mmd := string(files[1].Data); mmd != g["mermaid"].(string)+"\n" {
		t.Errorf("graph.mmd = %q, want the Mermaid text plus a newline", mmd)
	}
	tr := decode(t, files[2].Data)
	segs := tr["segments"].([]any)
	if tr["sessionId"] != "s-1" || tr["prompt"] != "File it." || tr["finalAnswer"] != "Done." || len(segs) != 3 {
		t.Fatalf("trajectory.json = %s", files[2].Data)
	}
	first := segs[0].(map[string]any)
	items := first["items"].([]any)
	if first["state"] != "draft" || first["enteredState"] != nil || first["exitedState"] != "review" || len(items) != 3 {
		t.Fatalf("first segment = %v", first)
	}
	if c := items[1].(map[string]any); c["kind"] != "tool_call" || c["name"] != "write_file" || c["result"] != "wrote" {
		t.Errorf("answered call = %v", c)
	}
	if c, ok := items[2].(map[string]any); !ok || c["kind"] != "tool_call" || c["result"] != nil || c["args"] == nil {
		t.Errorf("unanswered call = %v (want result null, args {})", c)
	}
	if !strings.Contains(string(files[2].Data), `"result": null`) {
		t.Errorf("an unanswered call has no null result: %s", files[2].Data)
	}
	second := segs[1].(map[string]any)
	if second["enteredState"] != "draft" || second["exitedState"] != "done" || len(second["items"].([]any)) != 2 {
		t.Errorf("second segment = %v (the runtime note stays in it)", second)
	}
	if note := second["items"].([]any)[1].(map[string]any); note["role"] != "runtime" || note["content"] != "[decision] done" {
		t.Errorf("runtime note = %v", note)
	}
	trail := decode(t, files[3].Data)
	if trail["sessionId"] != "s-1" || trail["workflow"] != "desk" || len(trail["steps"].([]any)) != 3 {
		t.Errorf("trail.json = %s", files[3].Data)
	}
	if v := decode(t, files[4].Data); v["variables"] == nil || len(v["variables"].(map[string]any)) != 0 {
		t.Errorf("variables.json without variables = %s, want variables: {}", files[4].Data)
	}
	m := decode(t, files[5].Data)
	if m["runtimeContract"] != "archmax-harness@1" || m["packageVersion"] != "v1.2.3" || m["specHash"] != src.SpecHash || m["usage"] != nil {
		t.Errorf("metadata.json = %s", files[5].Data)
	}
}

// Absent vs empty: variables with values and locks verbatim; usage only when spent; no
// checkpoint, no trail.json or variables.json; no snapshot, no graph.
func TestAbsentAndEmpty(t *testing.T) {
	src := source(t)
	src.Variables = map[string]spec.VariableEntry{"ticket": {Value: map[string]any{"id": 7.0, "tags": []any{"a"}}, Locked: true}, "note": {Value: "x"}}
	src.Usage = &Usage{InputTokens: 12, OutputTokens: 3}
	v := decode(t, mustOne(t, src, Variables))["variables"].(map[string]any)
	if tk := v["ticket"].(map[string]any); tk["locked"] != true || tk["value"].(map[string]any)["id"] != 7.0 {
		t.Errorf("ticket = %v", tk)
	}
	if n := v["note"].(map[string]any); n["locked"] != false || n["value"] != "x" {
		t.Errorf("note = %v", n)
	}
	if u := decode(t, mustOne(t, src, Metadata))["usage"].(map[string]any); u["inputTokens"] != 12.0 || u["costUsd"] != nil {
		t.Errorf("usage = %v (no cost: nothing is priced)", u)
	}
	src.Usage = &Usage{}
	if m := decode(t, mustOne(t, src, Metadata)); m["usage"] != nil {
		t.Errorf("zero usage is written: %v", m)
	}
	src.Checkpoint, src.Spec = false, nil
	var names []string
	for _, f := range Render(src) {
		names = append(names, f.Name)
	}
	if strings.Join(names, ",") != "trajectory.json,metadata.json" {
		t.Errorf("without checkpoint and snapshot: %v", names)
	}
	if m := decode(t, mustOne(t, src, Metadata)); m["runtimeContract"] != nil || m["specHash"] != src.SpecHash {
		t.Errorf("metadata without a snapshot = %v", m)
	}
	if _, ok := One(src, "checkpoint.json"); ok || IsName("../graph.json") {
		t.Error("a name that is not an artifact's renders")
	}
	src.Version = ""
	if m := decode(t, mustOne(t, src, Metadata)); m["packageVersion"] != BuildVersion() || BuildVersion() == "" {
		t.Errorf("packageVersion = %v, want the build's %q", m["packageVersion"], BuildVersion())
	}
}

func mustOne(t *testing.T, src *Source, name string) []byte {
	t.Helper()
	data, ok := One(src, name)
	if !ok {
		t.Fatalf("%s not rendered", name)
	}
	return data
}
