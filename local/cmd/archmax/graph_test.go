package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// spec 01 §3.7: `archmax graph` prints graph.json, --mermaid the flowchart, --out writes both.
func TestGraphCommand(t *testing.T) {
	code, out, errs := run(t, "graph", "--workspace", ws, "access-request")
	var g struct {
		Nodes  []string `json:"nodes"`
		Entry  string   `json:"entry"`
		Finals []string `json:"finals"`
		Edges  []struct {
			Source, Target, Label string
			Conditional           bool
		} `json:"edges"`
	}
	if err := json.Unmarshal([]byte(out), &g); err != nil || code != 0 {
		t.Fatalf("exit %d %v: %s %s", code, err, out, errs)
	}
	if g.Entry != "screen" || g.Nodes[0] != "__start__" || strings.Join(g.Finals, ",") != "approve,decline,clarify" || !g.Edges[0].Conditional {
		t.Errorf("graph %+v", g)
	}
	dir := t.TempDir()
	if code, _, _ := run(t, "graph", "--workspace", ws, "--out", dir, "access-request"); code != 0 {
		t.Fatal(code)
	}
	mmd, err := os.ReadFile(filepath.Join(dir, "graph.mmd"))
	if err != nil || !strings.HasPrefix(string(mmd), "graph TD;\n") || !strings.HasSuffix(string(mmd), ";\n\n") {
		t.Errorf("graph.mmd %q %v", mmd, err)
	}
	if code, _, _ := run(t, "graph", "--workspace", ws, "nope"); code != 1 {
		t.Errorf("an unknown workflow exits %d", code)
	}
}

// issue 10: validate's graph analysis reports an unreachable state as a warning (exit 0).
func TestValidateReportsUnreachableStates(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(ws)); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "workflows", "access-request", "workflow.yaml")
	src, _ := os.ReadFile(p)
	src = []byte(strings.Replace(string(src), "  clarify:\n", "  orphan:\n    instructions: Nobody comes here.\n  clarify:\n", 1))
	if err := os.WriteFile(p, src, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ := run(t, "validate", "--workspace", dir, "access-request")
	if code != 0 || !strings.Contains(out, "warning state.unreachable: state 'orphan' is unreachable") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}
