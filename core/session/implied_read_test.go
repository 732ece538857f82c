package session

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/core/events"
	"github.com/archmax-ai/archmax/core/kernel"
)

// A read_file denial is not passed by copying, moving or probing the file (K17-6): copy_file
// and move_file expose their source's contents at the destination, edit_file tells whether
// old_string occurs — each is held to a read_file of that file by the same caller.

const sentLocked = "LOCKED-SENTINEL-91c4" // in secret/keys.txt and notes/plan.md

// impliedFlow denies read_file (only read_file) on secret/** workflow-wide; the narrow state
// grants read_file on reports/** only, so notes/** is unreadable there too.
const impliedFlow = `
tools:
  forbid_always:
    - { tool: read_file, paths: ["secret/**"] }
states:
  probe:
    type: code
    script: scripts/probe.js
    triggers:
      scripted:
    transitions:
      - to: done
        description: Probed.
  wide:
    triggers:
      manual:
    instructions: Work.
    tools:
      allow: [archmax_eval]
  narrow:
    triggers:
      narrow:
    instructions: Work on the reports.
    tools:
      allow:
        - { tool: read_file, paths: ["reports/**"] }
        - archmax_eval
  done:
    type: code
    script: scripts/done.js
`

// impliedProbes are the calls that would expose a file the caller may not read; the last
// two are controls on a readable file (the copy and the edit must work).
func impliedProbes(locked string) []call {
	return []call{
		{"copy_file", map[string]any{"source": locked, "destination": "scratchpad/stolen.txt"}},
		{"copy_file", map[string]any{"source": "/" + locked, "destination": "scratchpad/stolen2.txt"}},
		{"copy_file", map[string]any{"source": "scratchpad/../" + locked, "destination": "scratchpad/stolen3.txt"}},
		{"move_file", map[string]any{"source": locked, "destination": "scratchpad/moved.txt"}},
		{"edit_file", map[string]any{"file_path": locked, "old_string": "LOCKED", "new_string": "x"}},
		{"edit_file", map[string]any{"path": locked, "old_string": "nothing-like-it", "new_string": "x"}},
		{"copy_file", map[string]any{"source": "reports/q3.md", "destination": "scratchpad/q3.md"}},
		{"edit_file", map[string]any{"file_path": "reports/q3.md", "old_string": "q3", "new_string": "Q3"}},
	}
}

const impliedRefused = 6 // the probes before the controls

func impliedHarness(t *testing.T) *harness {
	var lines []string
	for _, c := range impliedProbes("secret/keys.txt") {
		b, _ := json.Marshal(c.args)
		lines = append(lines, fmt.Sprintf("out.push(await tools.%s(%s).then((r) => 'ok: ' + r, (e) => 'refused: ' + e.message));", c.name, b))
	}
	probe := "export default async ({ tools }) => {\n  const out = [];\n  " + strings.Join(lines, "\n  ") +
		"\n  await tools.archmax_set_variables({ variables: { found: JSON.stringify(out) } });\n  await tools.archmax_advance({ to: 'done', reason: 'probed' });\n};"
	h := newHarness(t, impliedFlow, map[string]string{
		"workflows/wf/scripts/probe.js": probe,
		"workflows/wf/scripts/done.js":  "1",
	})
	for _, id := range []string{"s-agent", "s-narrow", "s-code"} {
		must(t, h.files.Write(context.Background(), id+"/secret/keys.txt", []byte(sentLocked)))
		must(t, h.files.Write(context.Background(), id+"/notes/plan.md", []byte(sentLocked)))
		must(t, h.files.Write(context.Background(), id+"/reports/q3.md", []byte("q3 figures")))
	}
	return h
}

// agentProbes are the probes as the model's own calls, then the same through archmax_eval.
func agentProbes(locked string) []reply {
	cs := impliedProbes(locked)
	var evals []string
	for _, c := range cs {
		b, _ := json.Marshal(c.args)
		evals = append(evals, fmt.Sprintf("out.push(await tools.%s(%s).then((r) => 'ok: ' + r, (e) => 'refused: ' + e.message));", c.name, b))
	}
	cs = append(cs, call{"archmax_eval", map[string]any{"code": "const out = [];\n" + strings.Join(evals, "\n") + "\nJSON.stringify(out)"}})
	return []reply{calls("", cs...), says("Done.")}
}

func TestCopyMoveAndEditCannotReadPastADenial(t *testing.T) {
	h := impliedHarness(t)
	ctx := context.Background()
	before := snapshot(t, h.files)

	// checkOutcome holds one caller's results: the probes refused by tool.implied-read with
	// nothing of the file in any text, the controls run.
	checkResults := func(who string, results []string) {
		t.Helper()
		if len(results) != len(impliedProbes("")) {
			t.Fatalf("%s: %d results for %d probes", who, len(results), len(impliedProbes("")))
		}
		for i, r := range results {
			if strings.Contains(r, sentLocked) {
				t.Errorf("%s probe %d leaks the file: %s", who, i, r)
			}
			refused := strings.Contains(r, "would expose the contents of")
			if i < impliedRefused && !refused {
				t.Errorf("%s probe %d was not refused as an implied read: %s", who, i, r)
			}
			if i >= impliedRefused && refused {
				t.Errorf("%s control %d was refused: %s", who, i, r)
			}
		}
	}
	modelResults := func(out *Outcome, n int) []string {
		var rs []string
		seen := map[string]int{}
		for _, c := range impliedProbes("")[:n] {
			rs = append(rs, toolMessage(t, out, c.name, seen[c.name]).Text)
			seen[c.name]++
		}
		return rs
	}

	// the model and an agent script, workflow-wide denial
	h.script(agentProbes("secret/keys.txt")...)
	out := h.send("s-agent", "work", nil)
	checkResults("the model", modelResults(out, len(impliedProbes(""))))
	checkResults("an agent script", jsonList(t, toolMessage(t, out, "archmax_eval", 0).Text))

	// a state whose read_file is narrowed to reports/**: notes/plan.md is as unreadable
	h.script(agentProbes("notes/plan.md")...)
	o2, err := h.engine().Send(ctx, "s-narrow", SendInput{Message: "work", Trigger: "narrow"})
	if err != nil {
		t.Fatal(err)
	}
	checkResults("the narrowed state's model", modelResults(o2, len(impliedProbes(""))))
	checkResults("the narrowed state's agent script", jsonList(t, toolMessage(t, o2, "archmax_eval", 0).Text))

	// a code state's tools.*
	o3, err := h.engine().Send(ctx, "s-code", SendInput{Message: "probe", Trigger: "scripted"})
	if err != nil {
		t.Fatal(err)
	}
	found, _ := o3.Variables["found"].Value.(string)
	checkResults("a code state", jsonList(t, found))

	// the denied files are where they were, untouched, and no copy of them exists
	after := snapshot(t, h.files)
	for _, id := range []string{"s-agent", "s-narrow", "s-code"} {
		for _, k := range []string{"/secret/keys.txt", "/notes/plan.md"} {
			if after[id+k] != sentLocked {
				t.Errorf("%s%s changed: %q", id, k, after[id+k])
			}
		}
	}
	for k, v := range after {
		if strings.Contains(v, sentLocked) && before[k] != v {
			t.Errorf("%s holds the denied contents after the probes", k)
		}
	}
	// every refusal is a tool-blocked event under the implied-read rule
	blocked := 0
	for _, e := range h.eventsOf(events.ToolBlocked) {
		if e.Str("ruleId") == kernel.RuleImpliedRead {
			blocked++
		}
	}
	if want := 5 * impliedRefused; blocked != want {
		t.Errorf("%d tool-blocked events of %s, want %d", blocked, kernel.RuleImpliedRead, want)
	}
}

// jsonList reads a script's JSON.stringify of its results.
func jsonList(t *testing.T, text string) []string {
	t.Helper()
	var rs []string
	if err := json.Unmarshal([]byte(text), &rs); err != nil {
		t.Fatalf("the script's results are not a JSON list of strings: %v\n%s", err, text)
	}
	return rs
}
