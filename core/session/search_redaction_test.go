package session

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/core/events"
)

// Search past a denial (GOV-35, GOV-41, GOV-48; K17-5): what ls, glob and grep return —
// names and contents — must be what an ls (for a name) or a read_file (for content) of that
// exact path would be allowed, for the model's own calls and for every script's tools.*.

const (
	sentSecret  = "KEY-SENTINEL-5ec2"   // in secrets/key.txt: denied across the board
	sentNotes   = "NOTES-SENTINEL-77b1" // in notes/plan.md: outside the narrowed read_file grant
	sentHidden  = "SKILL-SENTINEL-0ad3" // in a skill no state enables
	secretsName = "key.txt"
)

// redactFlow denies secrets/** to every tool workflow-wide; the narrow state grants read_file
// on reports/** only (so notes/** is unreadable there, while the scratchpad stays open).
const redactFlow = `
tools:
  forbid_always:
    - { tool: "*", paths: ["secrets/**"] }
skills:
  allow_always: [open]
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
    instructions: Search.
    tools:
      allow: [archmax_eval]
  narrow:
    triggers:
      narrow:
    instructions: Search the reports.
    tools:
      allow:
        - { tool: read_file, paths: ["reports/**"] }
        - archmax_eval
  done:
    type: code
    script: scripts/done.js
`

// searches is every listing the probes try: from the root, from a path that climbs back to
// it, with a name glob, and each output mode.
var searches = []map[string]any{
	{"tool": "grep", "args": map[string]any{"pattern": "SENTINEL"}},
	{"tool": "grep", "args": map[string]any{"pattern": "SENTINEL", "path": "/"}},
	{"tool": "grep", "args": map[string]any{"pattern": "SENTINEL", "path": "scratchpad/.."}},
	{"tool": "grep", "args": map[string]any{"pattern": "SENTINEL", "glob": "*.txt"}},
	{"tool": "grep", "args": map[string]any{"pattern": "SENTINEL", "output_mode": "files_with_matches"}},
	{"tool": "grep", "args": map[string]any{"pattern": "SENTINEL", "output_mode": "count"}},
	{"tool": "grep", "args": map[string]any{"pattern": "SENTINEL", "path": "notes"}},
	{"tool": "grep", "args": map[string]any{"pattern": "SENTINEL", "path": "notes/plan.md"}},
	{"tool": "glob", "args": map[string]any{"pattern": "**"}},
	{"tool": "glob", "args": map[string]any{"pattern": "**/*.txt"}},
	{"tool": "glob", "args": map[string]any{"pattern": "*", "path": "scratchpad/.."}},
	{"tool": "ls", "args": map[string]any{}},
	{"tool": "ls", "args": map[string]any{"path": "/"}},
	{"tool": "ls", "args": map[string]any{"path": "notes"}},
}

func redactHarness(t *testing.T) *harness {
	var calls []string
	for _, s := range searches {
		b, _ := json.Marshal(s["args"])
		calls = append(calls, fmt.Sprintf("out.push(await tools.%s(%s).catch((e) => 'refused: ' + e.message));", s["tool"], b))
	}
	probe := "export default async ({ tools }) => {\n  const out = [];\n  " + strings.Join(calls, "\n  ") +
		"\n  await tools.archmax_set_variables({ variables: { found: out.join('\\n') } });\n  await tools.archmax_advance({ to: 'done', reason: 'probed' });\n};"
	h := newHarness(t, redactFlow, map[string]string{
		"workflows/wf/scripts/probe.js":  probe,
		"workflows/wf/scripts/done.js":   "1",
		"skills/open/SKILL.md":           "---\nname: open\n---\nOpen skill.",
		"skills/open/assets/ok.txt":      "fine SENTINEL-in-an-enabled-skill",
		"skills/closed/SKILL.md":         "---\nname: closed\n---\n" + sentHidden,
		"skills/closed/assets/hidden.md": sentHidden,
	})
	ctx := context.Background()
	for _, id := range []string{"s-agent", "s-narrow", "s-code"} {
		must(t, h.files.Write(ctx, id+"/secrets/"+secretsName, []byte(sentSecret)))
		must(t, h.files.Write(ctx, id+"/notes/plan.md", []byte(sentNotes)))
		must(t, h.files.Write(ctx, id+"/reports/q3.md", []byte("q3 SENTINEL-in-reports")))
		must(t, h.files.Write(ctx, id+"/scratchpad/work.md", []byte("draft SENTINEL-in-scratchpad")))
	}
	return h
}

// modelSearches are the same listings as the model's own calls, then the same through
// archmax_eval's tools.* (an agent script).
func modelSearches() []reply {
	var cs []call
	var evals []string
	for _, s := range searches {
		cs = append(cs, call{s["tool"].(string), s["args"].(map[string]any)})
		b, _ := json.Marshal(s["args"])
		evals = append(evals, fmt.Sprintf("out.push(await tools.%s(%s).catch((e) => 'refused: ' + e.message));", s["tool"], b))
	}
	cs = append(cs, call{"archmax_eval", map[string]any{"code": "const out = [];\n" + strings.Join(evals, "\n") + "\nout.join('\\n')"}})
	return []reply{calls("", cs...), says("Done.")}
}

// leaks reports every sentinel or secret name in text.
func leaks(text string, narrow bool) []string {
	var out []string
	for _, s := range []string{sentSecret, secretsName, "/secrets", sentHidden, "/skills/closed"} {
		if strings.Contains(text, s) {
			out = append(out, s)
		}
	}
	if narrow {
		for _, s := range []string{sentNotes, "plan.md"} {
			if strings.Contains(text, s) {
				out = append(out, s)
			}
		}
	}
	return out
}

func TestSearchCannotReachPastADenial(t *testing.T) {
	h := redactHarness(t)

	check := func(name, text string, narrow bool, wantVisible ...string) {
		t.Helper()
		if l := leaks(text, narrow); len(l) > 0 {
			t.Errorf("%s leaks %v:\n%s", name, l, text)
		}
		for _, w := range wantVisible {
			if !strings.Contains(text, w) {
				t.Errorf("%s lost what it may see (%q):\n%s", name, w, text)
			}
		}
	}

	// the model and an agent script in a state with the workflow-wide denial only
	h.script(modelSearches()...)
	out := h.send("s-agent", "search", nil)
	var all strings.Builder
	for i := range searches {
		all.WriteString(toolMessage(t, out, searches[i]["tool"].(string), countBefore(i)).Text + "\n")
	}
	check("the model's searches", all.String(), false, "SENTINEL-in-reports", "SENTINEL-in-scratchpad", sentNotes, "SENTINEL-in-an-enabled-skill", "/notes/plan.md")
	check("an agent script's searches", toolMessage(t, out, "archmax_eval", 0).Text, false, "SENTINEL-in-reports", sentNotes)

	// a state that narrows read_file: grep cannot read past the narrowed grant, the
	// scratchpad stays open
	h.script(modelSearches()...)
	eng := h.engine()
	o2, err := eng.Send(context.Background(), "s-narrow", SendInput{Message: "search", Trigger: "narrow"})
	if err != nil {
		t.Fatal(err)
	}
	var grepped strings.Builder
	for i, s := range searches {
		if s["tool"] == "grep" {
			grepped.WriteString(toolMessage(t, o2, "grep", countBefore(i)).Text + "\n")
		}
	}
	check("the narrowed state's greps", grepped.String(), true, "SENTINEL-in-reports", "SENTINEL-in-scratchpad")
	check("the narrowed state's agent script", evalGreps(toolMessage(t, o2, "archmax_eval", 0).Text), true, "SENTINEL-in-reports")

	// a code state's tools.*
	o3, err := h.engine().Send(context.Background(), "s-code", SendInput{Message: "probe", Trigger: "scripted"})
	if err != nil {
		t.Fatal(err)
	}
	found, _ := o3.Variables["found"].Value.(string)
	check("a code state's searches", found, false, "SENTINEL-in-reports", sentNotes, "/notes/plan.md")

	// nothing the searches returned reached an event either
	for _, e := range h.eventsOf(events.ToolResult) {
		if l := leaks(e.Str("output"), false); len(l) > 0 {
			t.Errorf("tool-result event of %s leaks %v", e.Str("tool"), l)
		}
	}
}

// countBefore is how many searches of the same tool come before the i-th.
func countBefore(i int) int {
	n := 0
	for j := 0; j < i; j++ {
		if searches[j]["tool"] == searches[i]["tool"] {
			n++
		}
	}
	return n
}

// evalGreps keeps the grep lines of an agent script's joined results (its ls and glob lines
// may name notes/, which the narrowed state may still list).
func evalGreps(text string) string {
	var keep []string
	for _, l := range strings.Split(text, "\n") {
		if !strings.HasPrefix(l, "/notes/") && !strings.HasPrefix(l, "/notes ") && l != "/notes/ (directory)" {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}
