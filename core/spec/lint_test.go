package spec

import (
	"strings"
	"testing"
)

const lintBase = `instructions: Do the work.
states:
  work:
    triggers:
      manual:
    instructions: Work.
    transitions:
      - to: review
        description: Ready.
  review:
    type: human
    instructions: Decide.
    transitions:
      - to: done
        description: Accept.
        type: approve
  done:
    instructions: Close.
`

// spec 01 §8.3 (phase L): each lint rule fires on its case, located, with its code and
// severity; the clean base has none.
func TestLint(t *testing.T) {
	for _, tc := range []struct {
		rule, old, new, code, sev, field string
	}{
		{"clean", "", "", "", "", ""},
		{"R-09 root instructions", "instructions: Do the work.\n", "", "spec.instructions-missing", "warning", "instructions"},
		{"R-26 disabled", "instructions: Do the work.\n", "instructions: Do the work.\ndisabled: true\n", "spec.disabled", "warning", "disabled"},
		{"R-13 human without instructions", "    instructions: Decide.\n", "", "human.instructions-missing", "error", "states.review.instructions"},
		{"R-13 two approve transitions", "        type: approve\n", "        type: approve\n      - to: work\n        description: Again.\n        type: approve\n", "human.duplicate-type", "error", "states.review.transitions"},
		{"R-14 unguided routing", "    instructions: Work.\n    transitions:\n      - to: review\n        description: Ready.\n",
			"    transitions:\n      - to: review\n        description: Ready.\n      - to: done\n        description: Skip.\n", "state.routing-unguided", "warning", "states.work.instructions"},
		{"R-15 requires twice", "    instructions: Work.\n", "    instructions: Work.\n    requires: [a, a]\n", "state.requires-duplicate", "warning", "states.work.requires"},
		{"R-12 model redundant", "instructions: Do the work.\n", "instructions: Do the work.\nsettings:\n  model: m1\n", "", "", ""},
		{"R-16 advance forbidden", "instructions: Do the work.\n", "instructions: Do the work.\ntools:\n  forbid_always: [archmax_advance]\n", "tools.advance-forbidden", "error", "tools.forbid_always"},
		{"R-17 essential in allow_always", "instructions: Do the work.\n", "instructions: Do the work.\ntools:\n  allow_always: [read_file]\n", "tools.essential-inert", "warning", "tools.allow_always"},
		{"R-08 unknown trigger key", "      manual:\n", "      manual:\n        channel: slack\n", "trigger.unknown-key", "warning", "states.work.triggers.manual.channel"},
		{"R-18 allowed and forbidden", "    instructions: Work.\n", "    instructions: Work.\n    tools:\n      allow: [grep]\n      forbid: [grep]\n", "governance.inert-entry", "warning", "states.work.tools"},
		{"R-19 scratchpad-only write", "    instructions: Work.\n", "    instructions: Work.\n    tools:\n      allow: [{ tool: write_file, paths: [scratchpad/a.md] }]\n", "tools.scratchpad-inert", "warning", "states.work.tools.allow"},
		{"R-20 undeclared guard reference", "    instructions: Work.\n", "    instructions: Work.\n    tools:\n      allow: [{ tool: write_file, paths: [\"out/${{area}}.md\"] }]\n", "reference.undeclared", "warning", "states.work.tools.allow"},
		{"P-10 budget on a human state", "    instructions: Decide.\n", "    instructions: Decide.\n    budget: { maxTurns: 3 }\n", "human.key-refused", "error", "states.review.budget"},
		{"P-18 reference in instructions", "    instructions: Work.\n", "    instructions: Work on ${{item}}.\n", "instructions.reference-not-resolved", "warning", "states.work.instructions"},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			src := lintBase
			if tc.old != "" {
				if !strings.Contains(src, tc.old) {
					t.Fatalf("base lacks %q", tc.old)
				}
				src = strings.Replace(src, tc.old, tc.new, 1)
			}
			sp, err := Load("wf", "workflow.yaml", []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			diags := Lint(sp, "workflow.yaml")
			if tc.code == "" {
				if len(diags) != 0 {
					t.Errorf("unexpected %+v", diags)
				}
				return
			}
			for _, d := range diags {
				if d.Code == tc.code {
					if d.Severity != tc.sev || d.Field != tc.field || d.File != "workflow.yaml" || d.Message == "" {
						t.Errorf("%+v", d)
					}
					if strings.HasPrefix(tc.field, "states.") && d.Line == 0 {
						t.Errorf("%s is not located", d.Code)
					}
					return
				}
			}
			t.Errorf("no %s in %+v", tc.code, diags)
		})
	}
}

// R-12, P-11, P-20: the rules that need a specific shape.
func TestLintShapes(t *testing.T) {
	src := `instructions: X.
settings:
  model: m1
states:
  judge:
    type: grader
    triggers:
      manual:
    instructions: Judge.
    on_error: judge
    model: m1
    tools:
      allow: [archmax_get_variables]
    transitions:
      - to: done
        description: Fine.
  done:
    instructions: Done.
`
	sp, err := Load("wf", "workflow.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var codes []string
	for _, d := range Lint(sp, "workflow.yaml") {
		codes = append(codes, d.Code)
	}
	got := strings.Join(codes, " ")
	for _, want := range []string{"state.model-redundant", "state.on-error-self", "grader.entry-state", "tools.control-granted"} {
		if !strings.Contains(got, want) {
			t.Errorf("lint lacks %s: %s", want, got)
		}
	}
}
