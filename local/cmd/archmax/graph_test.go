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
	if err := copyWorkspace(dir, ws); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "workflows", "access-request", "workflow.yaml")
	src, _ := os.ReadFile(p)
	src = []byte(strings.Replace(string(src), "  clarify:\n", "  orphan:\n    instructions: Nobody comes here.\n  clarify:\n", 1))
	if err := os.WriteFile(p, src, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "validate", "--workspace", dir, "access-request")
	if code != 0 || !strings.Contains(errs, "warning state.unreachable: state 'orphan' is unreachable") || out != "valid — 0 error(s), 1 warning(s)\n" {
		t.Errorf("exit %d:\n%s%s", code, out, errs)
	}
}

// spec 01 §7.5, R-22: validate walks the delegation graph from reachable states: cycles,
// missing and unusable targets, targets without manual, chains past the limit (errors),
// disabled targets (warning).
func TestValidateDelegationGraph(t *testing.T) {
	dir := t.TempDir()
	wf := func(slug, body string) {
		p := filepath.Join(dir, "workflows", slug)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "workflow.yaml"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	calls := func(targets ...string) string {
		allow := ""
		for _, tg := range targets {
			allow += "archmax_workflow_" + tg + ", "
		}
		return "instructions: Work.\nstates:\n  work:\n    triggers:\n      manual:\n    instructions: Work.\n    tools:\n      allow: [" + strings.TrimSuffix(allow, ", ") + "]\n"
	}
	wf("root", calls("a", "gone", "off", "nomanual", "broken", "loop"))
	wf("a", calls("b"))
	wf("b", calls("c"))
	wf("c", calls("d"))
	wf("d", "instructions: Leaf.\nstates:\n  leaf:\n    triggers:\n      manual:\n    instructions: Leaf.\n")
	wf("off", "disabled: true\ninstructions: Off.\nstates:\n  x:\n    triggers:\n      manual:\n    instructions: X.\n")
	wf("nomanual", "instructions: N.\nstates:\n  x:\n    triggers:\n      nightly:\n    instructions: X.\n")
	wf("broken", "states: [nope]\n")
	wf("loop", calls("root"))
	code, _, out := run(t, "validate", "--workspace", dir, "root")
	for _, want := range []string{
		"error delegation.too-deep: the chain root → a → b → c → d is 4 delegations deep",
		"error delegation.unknown-workflow: 'archmax_workflow_gone' delegates to 'gone', which cannot be loaded",
		"warning delegation.disabled: 'archmax_workflow_off' delegates to 'off'",
		"error delegation.not-delegatable: 'archmax_workflow_nomanual'",
		"error delegation.unknown-workflow: 'archmax_workflow_broken' delegates to 'broken', which cannot be loaded: Cannot load workflow 'broken'",
		"error delegation.cycle: delegating to 'root' would never terminate: it is already in the chain root → loop → root",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("validate lacks %q:\n%s", want, out)
		}
	}
	if code != 1 {
		t.Errorf("exit %d", code)
	}
}
