package spec

import (
	"strings"
	"testing"
)

func mustLoad(t *testing.T, src string) *MachineSpec {
	t.Helper()
	sp, err := Load("wf", "workflow.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// spec 01 P-17 and issue 10: unreachable states and states with no path to a terminal.
func TestGraphDiagnostics(t *testing.T) {
	if clean := graphLint(mustLoad(t, lintBase), "workflow.yaml"); len(clean) != 0 {
		t.Errorf("a sound graph: %+v", clean)
	}
	loop := `
states:
  a:
    triggers:
      manual:
    instructions: A.
    transitions:
      - to: b
        description: Go on.
      - to: done
        description: Finish.
  b:
    instructions: B.
    transitions:
      - to: c
        description: Next.
  c:
    instructions: C.
    transitions:
      - to: b
        description: Back.
  done:
    instructions: Done.
  orphan:
    instructions: Nobody comes here.
`
	var got []string
	for _, d := range graphLint(mustLoad(t, loop), "workflow.yaml") {
		got = append(got, d.Code+":"+strings.TrimPrefix(d.Field, "states.")+":"+d.Severity)
		if d.Line == 0 {
			t.Errorf("%s has no line", d.Code)
		}
	}
	if strings.Join(got, " ") != "state.no-terminal-path:b:warning state.no-terminal-path:c:warning state.unreachable:orphan:warning" {
		t.Errorf("diagnostics %v", got)
	}
}
