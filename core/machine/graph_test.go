package machine

import (
	"encoding/json"
	"testing"

	"github.com/archmax-ai/archmax/core/spec"
)

const graphWF = `
states:
  screen:
    type: code
    script: scripts/screen.js
    on_error: clarify
    triggers:
      manual:
      nightly-check:
    transitions:
      - to: review
        description: Known | standard.
      - to: clarify
        description: Unknown.
  review:
    type: human
    instructions: Decide.
    transitions:
      - to: done
        description: Approve.
  clarify:
    instructions: Ask.
  done:
    instructions: Close.
`

func loadSpec(t *testing.T, src string) *spec.MachineSpec {
	t.Helper()
	sp, err := spec.Load("wf", "workflow.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// spec 01 §3.7: nodes, start edges per trigger, transitions then on_error per state, entry,
// finals; the Mermaid text.
func TestGraphOf(t *testing.T) {
	sp := loadSpec(t, graphWF)
	g := GraphOf(sp)
	b, _ := json.Marshal(g)
	want := `{"nodes":["__start__","screen","review","clarify","done"],"edges":[` +
		`{"source":"__start__","target":"screen","conditional":true,"label":"manual"},` +
		`{"source":"__start__","target":"screen","conditional":true,"label":"nightly-check"},` +
		`{"source":"screen","target":"review","conditional":false,"label":"Known | standard."},` +
		`{"source":"screen","target":"clarify","conditional":false,"label":"Unknown."},` +
		`{"source":"screen","target":"clarify","conditional":true,"label":"on_error"},` +
		`{"source":"review","target":"done","conditional":false,"label":"Approve."}],` +
		`"entry":"screen","finals":["clarify","done"]}`
	if string(b) != want {
		t.Errorf("graph.json\n got %s\nwant %s", b, want)
	}
	wantMmd := "graph TD;\n  screen[screen];\n  review{{review}};\n  clarify[clarify];\n  done[done];\n" +
		"  __start__ -.->|\"manual\"| screen;\n  __start__ -.->|\"nightly-check\"| screen;\n  screen -->|\"Known / standard.\"| review;\n" +
		"  screen -->|\"Unknown.\"| clarify;\n  screen -.->|\"on_error\"| clarify;\n  review -->|\"Approve.\"| done;\n"
	if got := g.Mermaid(sp); got != wantMmd {
		t.Errorf("mermaid\n got %q\nwant %q", got, wantMmd)
	}
	if mermaidID("a-b.c") != "a_b_c" {
		t.Error(mermaidID("a-b.c"))
	}
	// labels Mermaid would misread unquoted, and node ids that are Mermaid keywords
	odd := loadSpec(t, `
states:
  end:
    triggers:
      manual:
    instructions: A.
    transitions:
      - to: graph
        description: 'Amount > $50 (see "policy") [x] {y}'
  graph:
    instructions: B.
`)
	wantOdd := "graph TD;\n  s_end[end];\n  s_graph[graph];\n  __start__ -.->|\"manual\"| s_end;\n" +
		"  s_end -->|\"Amount > $50 (see #quot;policy#quot;) [x] {y}\"| s_graph;\n"
	if got := GraphOf(odd).Mermaid(odd); got != wantOdd {
		t.Errorf("mermaid\n got %q\nwant %q", got, wantOdd)
	}
}
