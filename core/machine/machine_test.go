package machine

import (
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/core/spec"
)

const wf = `
tools:
  allow_always: [archmax_eval, write_todos, lookup]
  forbid_always: [grep]
states:
  agent:
    triggers:
      manual:
    tools:
      allow: [ { tool: read_file, paths: ["docs/**"] }, task ]
      forbid: [write_file]
    transitions:
      - to: check
        description: go
  check:
    type: code
    script: scripts/check.js
    transitions:
      - to: end
        description: ok
  end:
    tools:
      forbid: ["*"]
`

func compile(t *testing.T) *Machine {
	t.Helper()
	sp, err := spec.Load("wf", "workflow.yaml", []byte(wf))
	if err != nil {
		t.Fatal(err)
	}
	impl := map[string]bool{"ls": true, "read_file": true, "write_file": true, "grep": true, "write_todos": true,
		"archmax_eval": true, "lookup": true, "task": true, "archmax_advance": true, "archmax_raise": true,
		"archmax_reset": true, "archmax_get_variables": true, "archmax_set_variables": true, "archmax_get_history": true}
	return New(sp, func(s string) bool { return impl[s] })
}

// 01 §3.3.9, §7.3, §7.6, §7.7; GOV-13.
func TestSurfaces(t *testing.T) {
	m := compile(t)
	cases := map[string]string{
		// essential tools (narrowed read_file stays disclosed), grants, agent controls; never task;
		// bare forbids withhold write_file and grep
		"agent": "ls,read_file,write_todos,archmax_eval,lookup,archmax_advance,archmax_raise,archmax_reset,archmax_get_variables,archmax_set_variables",
		// automated: no write_todos/eval/reset even from allow_always; history control added
		"check": "ls,read_file,write_file,lookup,archmax_advance,archmax_raise,archmax_get_variables,archmax_set_variables,archmax_get_history",
		// a bare "*" withholds everything, the controls included
		"end": "",
	}
	for state, want := range cases {
		if got := strings.Join(m.Surface(state), ","); got != want {
			t.Errorf("%s surface:\n got %s\nwant %s", state, got, want)
		}
	}
	if m.Surface("nope") != nil {
		t.Error("unknown state has no surface")
	}
	if !m.Offers("agent", "lookup") || m.Offers("agent", "task") {
		t.Error("Offers disagrees with Surface")
	}
}
