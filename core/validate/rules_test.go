package validate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/core/machine"
	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/store/memory"
)

// The base workspace is clean: one workflow with every state type, a delegation, a skill, a
// script and a case. Each rule row below edits it once to break the rule (the invalid case)
// and, where the rule has a near miss, once to come close without breaking it (the valid
// case).
const baseWorkflow = `title: Desk
instructions: Handle access requests.
skills:
  allow_always: [policy]
states:
  intake:
    triggers:
      manual:
        requires:
          - { name: ticket, type: string, description: The ticket id. }
    instructions: Draft the request, then hand it to the check.
    tools:
      allow:
        - archmax_workflow_helper
        - { tool: write_file, paths: ["out/${{ticket}}.md"] }
    transitions:
      - to: check
        description: The draft is written.
  check:
    type: code
    script: scripts/check.js
    transitions:
      - to: judge
        description: Every section is there.
      - to: intake
        description: A section is missing.
  judge:
    type: grader
    instructions: Judge whether the draft is sound.
    on_error: review
    transitions:
      - to: review
        description: The draft is sound.
  review:
    type: human
    instructions: Approve or decline the request.
    transitions:
      - to: done
        description: Approve.
        type: approve
  done:
    instructions: Tell the requester the outcome.
`

const baseHelper = `instructions: Help with a lookup.
skills: {}
states:
  work:
    triggers:
      manual:
    instructions: Look it up.
`

const baseScript = `import { defineCodeState } from "@archmax-ai/harness/sandbox";
export default defineCodeState(async ({ tools }) => {
  await tools.archmax_advance({ to: "judge", reason: "complete" });
});
`

const baseCase = `title: A request is drafted
description: The intake drafts the request.
trigger: { id: manual }
variables:
  ticket: T-1
workspace:
  scratchpad/note.md: { from: fixtures/note.md }
steps:
  - send: "I need access."
`

func baseFiles() map[string]string {
	return map[string]string{
		"skills/policy/SKILL.md":                 "---\nname: policy\ndescription: The policy.\n---\n# Policy\n",
		"workflows/desk/workflow.yaml":           baseWorkflow,
		"workflows/desk/scripts/check.js":        baseScript,
		"workflows/desk/tests/draft.test.yaml":   baseCase,
		"workflows/desk/tests/fixtures/note.md":  "# Note\n",
		"workflows/helper/workflow.yaml":         baseHelper,
		"workflows/helper/tests/.keep":           "",
		"workflows/desk/WORKFLOW.md":             "Desk.\n",
		"AGENTS.md":                              "Be careful.\n",
		"workflows/helper/scripts/unused.js":     "export default () => {};\n",
		"workflows/desk/tests/fixtures/other.md": "other\n",
	}
}

// edit is one change to the base workspace: replace old by new in file ("" old appends;
// a "" file-level new with old "*" deletes the file).
type edit struct{ file, old, new string }

func validateEdited(t *testing.T, edits []edit, opts Options) Result {
	t.Helper()
	files := baseFiles()
	for _, e := range edits {
		switch {
		case e.old == "*" && e.new == "":
			delete(files, e.file)
		case e.old == "":
			files[e.file] += e.new
		default:
			if !strings.Contains(files[e.file], e.old) {
				t.Fatalf("%s lacks %q", e.file, e.old)
			}
			files[e.file] = strings.Replace(files[e.file], e.old, e.new, 1)
		}
	}
	fs := memory.NewFiles()
	for k, v := range files {
		if err := fs.Write(context.Background(), k, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	res, err := Workflow(context.Background(), fs, "desk", opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

const wf = "workflows/desk/workflow.yaml"

func in(old, new string) []edit { return []edit{{wf, old, new}} }

// ruleCase is one row of the suite: spec 01 §8.3 rule id, the edit that breaks it, the code
// and severity it must raise, and an optional near miss that must not raise it.
type ruleCase struct {
	rule  string
	bad   []edit
	code  string
	sev   string
	valid []edit
	opts  Options
	field string // when set, the finding's Field
}

var ruleCases = []ruleCase{
	// 8.3.1 — rules stated by the seeds
	{rule: "V-01 unknown key", bad: in("  done:\n", "  done:\n    colour: red\n"), code: "schema.unknown-key", sev: "error",
		valid: in("  done:\n", "  done:\n    metadata: { colour: red }\n")},
	{rule: "V-02 top-level name", bad: in("title: Desk\n", "name: Desk\n"), code: "spec.name-key", sev: "error"},
	{rule: "V-03 transition description", bad: in("        description: The draft is written.\n", "        description: \"  \"\n"), code: "transition.description-required", sev: "error"},
	{rule: "V-05 code state without script", bad: in("    script: scripts/check.js\n", ""), code: "code.script-required", sev: "error"},
	{rule: "V-06 script on an agent state", bad: in("    instructions: Tell the requester the outcome.\n", "    instructions: Tell the requester the outcome.\n    script: scripts/check.js\n"), code: "state.script-refused", sev: "error"},
	{rule: "V-07 script path", bad: in("script: scripts/check.js", "script: ../check.js"), code: "code.script-path", sev: "error",
		valid: []edit{{wf, "script: scripts/check.js", "script: scripts/sub/check.mjs"}, {"workflows/desk/scripts/sub/check.mjs", "", baseScript}}},
	{rule: "V-08 code state with instructions", bad: in("    script: scripts/check.js\n", "    script: scripts/check.js\n    instructions: Check.\n"), code: "code.key-refused", sev: "error"},
	{rule: "V-08 code state with a budget", bad: in("    script: scripts/check.js\n", "    script: scripts/check.js\n    budget: { maxTurns: 2 }\n"), code: "code.key-refused", sev: "error"},
	{rule: "V-09 grader without instructions", bad: in("    instructions: Judge whether the draft is sound.\n", ""), code: "grader.instructions-required", sev: "error"},
	{rule: "V-10 grader without transitions", bad: in("    on_error: review\n    transitions:\n      - to: review\n        description: The draft is sound.\n", "    on_error: review\n"), code: "grader.transition-required", sev: "error"},
	{rule: "V-11 grader with evidence", bad: in("    on_error: review\n", "    on_error: review\n    evidence: [out/a.md]\n"), code: "grader.key-refused", sev: "error",
		valid: in("    on_error: review\n", "    on_error: review\n    budget: { maxTurns: 3 }\n")},
	{rule: "V-12 automated state granted write_todos", bad: in("    script: scripts/check.js\n", "    script: scripts/check.js\n    tools:\n      allow: [write_todos]\n"), code: "automated.tool-not-offered", sev: "error",
		valid: in("skills:\n", "tools:\n  allow_always: [{ tool: archmax_wait }]\nskills:\n")},
	{rule: "V-14 task granted", bad: in("        - archmax_workflow_helper\n", "        - archmax_workflow_helper\n        - task\n"), code: "tools.ungrantable", sev: "error"},
	{rule: "V-15 state type", bad: in("    type: human\n", "    type: person\n"), code: "state.type-invalid", sev: "error"},
	{rule: "V-16 transition target", bad: in("      - to: done\n", "      - to: finished\n"), code: "transition.unknown-target", sev: "error"},
	{rule: "V-17 on_error target", bad: in("    on_error: review\n", "    on_error: nowhere\n"), code: "state.on-error-unknown", sev: "error"},
	{rule: "V-18 signature type", bad: in("type: string, description: The ticket id.", "type: text, description: The ticket id."), code: "signature.type-unknown", sev: "error"},
	{rule: "V-19 tests block keys", bad: in("skills:\n", "tests:\n  retries: 2\nskills:\n"), code: "schema.unknown-key", sev: "error",
		valid: in("skills:\n", "tests:\n  caseTimeoutMs: 60000\n  maxConcurrency: 1\nskills:\n")},
	{rule: "V-20 tests.maxConcurrency", bad: in("skills:\n", "tests:\n  maxConcurrency: 2\nskills:\n"), code: "tests.max-concurrency-unsupported", sev: "error"},
	{rule: "V-21 removed hooks", bad: in("    script: scripts/check.js\n", "    script: scripts/check.js\n    before: [x]\n"), code: "legacy.hooks-removed", sev: "error"},
	{rule: "V-22 script file missing", bad: []edit{{"workflows/desk/scripts/check.js", "*", ""}}, code: "code.script-missing", sev: "error"},
	{rule: "V-23 foreign import", bad: []edit{{"workflows/desk/scripts/check.js", "", "import fs from \"node:fs\";\n"}}, code: "script.foreign-import", sev: "error"},
	{rule: "V-25 delegation target missing", bad: []edit{{"workflows/helper/workflow.yaml", "*", ""}}, code: "delegation.unknown-workflow", sev: "error"},
	{rule: "V-26 unknown skill", bad: in("allow_always: [policy]", "allow_always: [policy, ledger]"), code: "skills.unknown", sev: "error"},
	{rule: "V-26 SKILL.md name", bad: []edit{{"skills/policy/SKILL.md", "name: policy", "name: policies"}}, code: "skills.name-mismatch", sev: "error"},
	{rule: "V-27 unknown mount", bad: in("skills:\n", "mounts:\n  allow_always: [crm]\nskills:\n"), code: "mounts.unknown", sev: "error",
		opts:  Options{Mounts: []machine.Mount{{Name: "catalog", Governed: true}}},
		valid: in("skills:\n", "mounts:\n  allow_always: [crm]\nskills:\n")}, // no table given: no mount diagnostics (§8.1 item 4)
	{rule: "V-28 archmax_run outside skills", bad: in("        - archmax_workflow_helper\n", "        - archmax_workflow_helper\n        - { tool: archmax_run, paths: [\"out/*.js\"] }\n"), code: "kernel.probe.script.skill-only", sev: "error",
		valid: in("        - archmax_workflow_helper\n", "        - archmax_workflow_helper\n        - { tool: archmax_run, paths: [\"skills/policy/*.js\"] }\n")},
	{rule: "V-28 an internal area in another case", bad: in(`paths: ["out/${{ticket}}.md"]`, `paths: ["Checkpoints/${{ticket}}.md"]`), code: "kernel.probe.zone.runtime-internal", sev: "error"},
	{rule: "V-28 write into a read-only mount", bad: in(`paths: ["out/${{ticket}}.md"]`, `paths: ["skills/policy/${{ticket}}.md"]`), code: "kernel.probe.zone.read-only", sev: "error"},
	{rule: "V-28 advance target without an edge", bad: in("        - archmax_workflow_helper\n", "        - archmax_workflow_helper\n        - { tool: archmax_advance, args: { to: done } }\n"), code: "kernel.probe.transition.no-edge", sev: "warning",
		valid: in("        - archmax_workflow_helper\n", "        - archmax_workflow_helper\n        - { tool: archmax_advance, args: { to: check } }\n")},
	{rule: "V-29 case schema", bad: []edit{{"workflows/desk/tests/draft.test.yaml", "title: A request is drafted\n", ""}}, code: "case.invalid", sev: "error"},
	{rule: "V-04 an undescribed edge into a grader (V-03 covers every edge)", bad: in("        description: Every section is there.\n", "        description: \"\"\n"), code: "transition.description-required", sev: "error"},
	{rule: "V-31 frontmatter beside workflow.yaml", bad: []edit{{"workflows/desk/WORKFLOW.md", "*", ""}, {"workflows/desk/WORKFLOW.md", "", "---\ntitle: Desk\n---\nDesk.\n"}}, code: "layout.competing-machines", sev: "error",
		valid: []edit{{"workflows/desk/WORKFLOW.md", "*", ""}, {"workflows/desk/WORKFLOW.md", "", "Desk.\n\n---\n\nMore prose after a rule.\n"}}},
	{rule: "V-31 the single-file layout", bad: []edit{{wf, "*", ""}, {"workflows/desk/WORKFLOW.md", "*", ""}, {"workflows/desk/WORKFLOW.md", "", "---\nstates: {}\n---\nDesk.\n"}}, code: "layout.single-file-removed", sev: "error"},
	{rule: "V-32 runtime contract", bad: in("title: Desk\n", "title: Desk\nruntime: { version: \"3\" }\n"), code: "runtime.version-unsupported", sev: "error",
		valid: in("title: Desk\n", "title: Desk\nruntime: { engine: archmax-harness, version: 2 }\n")},
	{rule: "V-33 non-boolean disabled", bad: in("title: Desk\n", "title: Desk\ndisabled: yes-please\n"), code: "spec.disabled", sev: "error",
		valid: in("title: Desk\n", "title: Desk\ndisabled: false\n")},
	// 8.3.2 — rules from the reference
	{rule: "R-01 states empty", bad: []edit{{wf, "*", ""}, {wf, "", "instructions: x\nstates: {}\n"}}, code: "spec.states-empty", sev: "error"},
	{rule: "R-02 no entry", bad: in("      manual:\n        requires:\n          - { name: ticket, type: string, description: The ticket id. }\n", "      {}\n"), code: "spec.no-entry", sev: "error"},
	{rule: "R-03 trigger twice", bad: in("    instructions: Tell the requester the outcome.\n", "    instructions: Tell the requester the outcome.\n    triggers:\n      manual:\n"), code: "trigger.duplicate", sev: "error"},
	{rule: "R-04 wildcard grant", bad: in("        - archmax_workflow_helper\n", "        - archmax_workflow_helper\n        - \"*\"\n"), code: "tools.wildcard-grant", sev: "error"},
	{rule: "R-05 malformed guard reference", bad: in(`out/${{ticket}}.md`, `out/${{ ticket.}}.md`), code: "reference.malformed", sev: "error"},
	{rule: "R-06 signature duplicate", bad: in("          - { name: ticket, type: string, description: The ticket id. }\n", "          - { name: ticket, type: string, description: The ticket id. }\n          - { name: ticket, type: string, description: Again. }\n"), code: "signature.duplicate", sev: "error"},
	{rule: "R-06 signature name invalid", bad: in("{ name: ticket, type: string", "{ name: Ticket, type: string"), code: "signature.name-invalid", sev: "error"},
	{rule: "R-06 bare signature name invalid", bad: in("      manual:\n", "      manual:\n        returns: [Verdict]\n"), code: "signature.name-invalid", sev: "error",
		valid: in("      manual:\n", "      manual:\n        returns: [verdict]\n")},
	{rule: "R-07 trigger entry key", bad: in("      manual:\n", "      manual:\n        entry: intake\n"), code: "trigger.key-refused", sev: "error"},
	{rule: "R-08 unknown trigger key", bad: in("      manual:\n", "      manual:\n        channel: slack\n"), code: "trigger.unknown-key", sev: "warning"},
	{rule: "R-09 root instructions", bad: in("instructions: Handle access requests.\n", ""), code: "spec.instructions-missing", sev: "warning"},
	{rule: "R-10 blank state title", bad: in("  done:\n", "  done:\n    title: \" \"\n"), code: "schema.non-empty", sev: "error"},
	{rule: "R-11 model object", bad: in("title: Desk\n", "title: Desk\nsettings:\n  model: { id: m1 }\n"), code: "schema.model-id", sev: "error"},
	{rule: "R-12 redundant state model", bad: []edit{{wf, "title: Desk\n", "title: Desk\nsettings:\n  model: m1\n"}, {wf, "    instructions: Tell the requester the outcome.\n", "    instructions: Tell the requester the outcome.\n    model: m1\n"}}, code: "state.model-redundant", sev: "warning",
		valid: in("    instructions: Tell the requester the outcome.\n", "    instructions: Tell the requester the outcome.\n    model: m2\n")},
	{rule: "R-13 human state without instructions", bad: in("    instructions: Approve or decline the request.\n", ""), code: "human.instructions-missing", sev: "error"},
	{rule: "R-13 human state without transitions", bad: in("    transitions:\n      - to: done\n        description: Approve.\n        type: approve\n", ""), code: "human.transition-required", sev: "error"},
	{rule: "R-13 human self-transition", bad: in("        type: approve\n", "        type: approve\n      - to: review\n        description: Think again.\n"), code: "human.self-transition", sev: "error"},
	{rule: "R-14 unguided routing", bad: []edit{{wf, "    instructions: Draft the request, then hand it to the check.\n", ""},
		{wf, "        description: The draft is written.\n", "        description: The draft is written.\n      - to: done\n        description: Nothing to do.\n"}},
		code: "state.routing-unguided", sev: "warning",
		valid: in("        description: The draft is written.\n", "        description: The draft is written.\n      - to: done\n        description: Nothing to do.\n")},
	{rule: "R-15 requires twice", bad: in("    instructions: Tell the requester the outcome.\n", "    instructions: Tell the requester the outcome.\n    requires: [ticket, ticket]\n"), code: "state.requires-duplicate", sev: "warning"},
	{rule: "R-16 archmax_advance forbidden", bad: in("skills:\n", "tools:\n  forbid_always: [archmax_advance]\nskills:\n"), code: "tools.advance-forbidden", sev: "error"},
	{rule: "R-17 essential tool in allow_always", bad: in("skills:\n", "tools:\n  allow_always: [grep]\nskills:\n"), code: "tools.essential-inert", sev: "warning"},
	{rule: "R-18 allowed and forbidden", bad: in("    tools:\n      allow:\n", "    tools:\n      forbid: [archmax_workflow_helper]\n      allow:\n"), code: "governance.inert-entry", sev: "warning"},
	{rule: "R-18 skill granted twice", bad: in("    instructions: Tell the requester the outcome.\n", "    instructions: Tell the requester the outcome.\n    skills:\n      allow: [policy]\n"), code: "governance.inert-entry", sev: "warning"},
	{rule: "R-18 forbid_always of a granted tool", bad: in("skills:\n", "tools:\n  forbid_always: [archmax_workflow_helper]\nskills:\n"), code: "governance.inert-entry", sev: "warning",
		valid: in("skills:\n", "tools:\n  forbid_always: [bash]\nskills:\n")},
	{rule: "R-18 ungoverned mount grant", bad: in("skills:\n", "mounts:\n  allow_always: [catalog]\nskills:\n"), code: "governance.inert-entry", sev: "warning",
		opts: Options{Mounts: []machine.Mount{{Name: "catalog"}}}},
	{rule: "R-19 scratchpad-only write", bad: in(`paths: ["out/${{ticket}}.md"]`, `paths: ["scratchpad/${{ticket}}.md"]`), code: "tools.scratchpad-inert", sev: "warning"},
	{rule: "R-20 undeclared guard reference", bad: in(`out/${{ticket}}.md`, `out/${{area}}.md`), code: "reference.undeclared", sev: "warning"},
	{rule: "R-21 state slug", bad: []edit{{wf, "  done:\n", "  Done_State:\n"}, {wf, "      - to: done\n", "      - to: Done_State\n"}}, code: "slug.invalid", sev: "error"},
	{rule: "R-22 delegation cycle", bad: []edit{{"workflows/helper/workflow.yaml", "    instructions: Look it up.\n", "    instructions: Look it up.\n    tools:\n      allow: [archmax_workflow_desk]\n"}}, code: "delegation.cycle", sev: "error"},
	{rule: "R-22 target without manual", bad: []edit{{"workflows/helper/workflow.yaml", "      manual:\n", "      lookup:\n"}}, code: "delegation.not-delegatable", sev: "error"},
	{rule: "R-22 disabled target", bad: []edit{{"workflows/helper/workflow.yaml", "skills: {}\n", "skills: {}\ndisabled: true\n"}}, code: "delegation.disabled", sev: "warning"},
	{rule: "R-23 no skills block", bad: in("skills:\n  allow_always: [policy]\n", ""), code: "skills.block-missing", sev: "warning"},
	{rule: "R-23 no mounts block", bad: nil, code: "mounts.block-missing", sev: "warning", opts: Options{Mounts: []machine.Mount{{Name: "catalog", Governed: true}}},
		valid: in("skills:\n", "mounts: {}\nskills:\n")},
	{rule: "R-24 allow_always on a runtime area", bad: in("skills:\n", "tools:\n  allow_always:\n    - { tool: read_file, paths: [\"checkpoints/**\"] }\nskills:\n"), code: "tools.runtime-area", sev: "error"},
	{rule: "R-25 case trigger", bad: []edit{{"workflows/desk/tests/draft.test.yaml", "trigger: { id: manual }", "trigger: { id: webhook }"}}, code: "case.unknown-trigger", sev: "error"},
	{rule: "R-25 case fixture missing", bad: []edit{{"workflows/desk/tests/draft.test.yaml", "fixtures/note.md", "fixtures/gone.md"}}, code: "case.fixture-missing", sev: "error"},
	{rule: "R-25 case fixture escapes", bad: []edit{{"workflows/desk/tests/draft.test.yaml", "fixtures/note.md", "../workflow.yaml"}}, code: "case.fixture-escapes", sev: "error"},
	{rule: "R-26 disabled", bad: in("title: Desk\n", "title: Desk\ndisabled: true\n"), code: "spec.disabled", sev: "warning"},
	// 8.3.3 — the proposed rules
	{rule: "P-01 duplicate key", bad: in("  done:\n    instructions: Tell the requester the outcome.\n", "  done:\n    instructions: Tell the requester the outcome.\n    instructions: Again.\n"), code: "yaml.duplicate-key", sev: "error",
		field: "states.done.instructions"},
	{rule: "P-08 duplicate transition target", bad: in("        type: approve\n", "        type: approve\n      - to: done\n        description: Decline.\n        type: reject\n"), code: "transition.duplicate-target", sev: "error"},
	{rule: "P-10 budget on a human state", bad: in("    instructions: Approve or decline the request.\n", "    instructions: Approve or decline the request.\n    budget: { maxTurns: 2 }\n"), code: "human.key-refused", sev: "error"},
	{rule: "P-11 on_error to itself", bad: in("    on_error: review\n", "    on_error: judge\n"), code: "state.on-error-self", sev: "error"},
	{rule: "P-12 absolute guard", bad: in(`out/${{ticket}}.md`, `/out/${{ticket}}.md`), code: "tools.guard-absolute", sev: "error"},
	{rule: "K17-4 a path guard with '//' never matches", bad: in(`out/${{ticket}}.md`, `out//${{ticket}}.md`), code: "tools.guard-never-matches", sev: "warning",
		valid: in(`out/${{ticket}}.md`, `out/**/${{ticket}}.md`)},
	{rule: "K17-4 a path guard with a '..' segment never matches", bad: in(`out/${{ticket}}.md`, `out/../${{ticket}}.md`), code: "tools.guard-never-matches", sev: "warning"},
	{rule: "P-14 timeout above the cap", bad: in("title: Desk\n", "title: Desk\nsettings:\n  timeoutMs: 600001\n"), code: "settings.timeout-max", sev: "error",
		valid: in("title: Desk\n", "title: Desk\nsettings:\n  timeoutMs: 600000\n")},
	{rule: "P-15 evidence path", bad: in("    instructions: Approve or decline the request.\n", "    instructions: Approve or decline the request.\n    evidence: [/etc/passwd]\n"), code: "human.evidence-path", sev: "error",
		valid: in("    instructions: Approve or decline the request.\n", "    instructions: Approve or decline the request.\n    evidence: [out/draft.md]\n")},
	{rule: "P-17 unreachable state", bad: in("  done:\n", "  orphan:\n    instructions: Nobody comes here.\n  done:\n"), code: "state.unreachable", sev: "warning"},
	{rule: "P-17 no path to a terminal (cycle with no exit)", bad: in("      - to: done\n        description: Approve.\n", "      - to: intake\n        description: Approve.\n"), code: "state.no-terminal-path", sev: "warning"},
	{rule: "P-18 reference in instructions", bad: in("    instructions: Tell the requester the outcome.\n", "    instructions: Tell ${{ticket}} the outcome.\n"), code: "instructions.reference-not-resolved", sev: "warning"},
	{rule: "P-20 grader as entry", bad: in("    instructions: Judge whether the draft is sound.\n", "    instructions: Judge whether the draft is sound.\n    triggers:\n      review-now:\n"), code: "grader.entry-state", sev: "warning"},
	{rule: "P-20 self-edge on a code state", bad: in("      - to: intake\n        description: A section is missing.\n", "      - to: check\n        description: Again.\n"), code: "state.self-transition", sev: "warning"},
	{rule: "P-20 requires on a human state", bad: in("    instructions: Approve or decline the request.\n", "    instructions: Approve or decline the request.\n    requires: [ticket]\n"), code: "human.requires", sev: "warning"},
	{rule: "P-20 control tool granted", bad: in("        - archmax_workflow_helper\n", "        - archmax_workflow_helper\n        - archmax_raise\n"), code: "tools.control-granted", sev: "warning"},
	{rule: "P-20 session root not required", bad: in("      manual:\n", "      manual:\n        session: tenant.id\n"), code: "trigger.session-unrequired", sev: "warning",
		valid: in("      manual:\n", "      manual:\n        session: ticket\n")},
	{rule: "P-20 leftover hooks/", bad: []edit{{"workflows/desk/hooks/before.js", "", "x"}}, code: "hooks.leftover", sev: "warning"},
}

// spec 01 §8.3: every rule, one invalid case (its code, severity, a located field, a fix
// hint) and, where a near miss exists, one valid case that does not raise it. The base
// workspace itself is clean.
func TestRules(t *testing.T) {
	if res := validateEdited(t, nil, Options{}); len(res.Diagnostics) != 0 || !res.Valid {
		t.Fatalf("the base workspace is not clean: %+v", res.Diagnostics)
	}
	for _, tc := range ruleCases {
		t.Run(tc.rule, func(t *testing.T) {
			if tc.code != "" {
				res := validateEdited(t, tc.bad, tc.opts)
				d, ok := find(res.Diagnostics, tc.code)
				if !ok {
					t.Fatalf("no %s in %s", tc.code, codes(res.Diagnostics))
				}
				if d.Severity != tc.sev || d.Message == "" || d.File == "" || d.Hint == "" || (tc.field != "" && d.Field != tc.field) {
					t.Errorf("%+v", d)
				}
				if (d.File == wf || strings.HasSuffix(d.File, ".test.yaml")) && d.Field != "" && d.Line == 0 && !absentKey[d.Code] {
					t.Errorf("%s at %s is not located", d.Code, d.Field)
				}
				if res.Valid == (tc.sev == "error") {
					t.Errorf("valid=%v with a %s", res.Valid, tc.sev)
				}
			}
			if tc.valid != nil {
				res := validateEdited(t, tc.valid, Options{})
				if _, ok := find(res.Diagnostics, tc.code); ok && tc.code != "" {
					t.Errorf("the near miss raised %s: %s", tc.code, codes(res.Diagnostics))
				}
				if tc.code == "" && len(res.Diagnostics) != 0 {
					t.Errorf("the near miss raised %s", codes(res.Diagnostics))
				}
			}
		})
	}
}

// absentKey are the findings about a key the document lacks: nothing to point at.
var absentKey = map[string]bool{"spec.instructions-missing": true, "skills.block-missing": true, "mounts.block-missing": true}

func find(diags []spec.Diagnostic, code string) (spec.Diagnostic, bool) {
	for _, d := range diags {
		if d.Code == code {
			return d, true
		}
	}
	return spec.Diagnostic{}, false
}

func codes(diags []spec.Diagnostic) string {
	var out []string
	for _, d := range diags {
		out = append(out, d.Severity+" "+d.Code+" "+d.Field+": "+d.Message)
	}
	return strings.Join(out, "\n")
}

// unreadable is a Files whose reads of one key fail (a symlink loop, a denied read).
type unreadable struct {
	*memory.Files
	key string
}

func (u unreadable) Read(ctx context.Context, key string) ([]byte, error) {
	if key == u.key {
		return nil, errors.New("openat " + key + ": too many levels of symbolic links")
	}
	return u.Files.Read(ctx, key)
}

// A file the store cannot read is the workflow's finding (workspace.unreadable), never the
// end of the run: the other workflows are still validated.
func TestUnreadableFileIsAFinding(t *testing.T) {
	fs := memory.NewFiles()
	for k, v := range baseFiles() {
		must(t, fs.Write(context.Background(), k, []byte(v)))
	}
	files := unreadable{fs, "workflows/desk/workflow.yaml"}
	res, err := Workflow(context.Background(), files, "desk", Options{})
	if err != nil || res.Valid || len(res.Diagnostics) != 1 || res.Diagnostics[0].Code != "workspace.unreadable" || res.Diagnostics[0].Hint == "" {
		t.Fatalf("%v %+v", err, res)
	}
	if res, err = Workflow(context.Background(), files, "helper", Options{}); err != nil || !res.Valid {
		t.Fatalf("%v %+v", err, res)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// a problem found in a sibling's grant is reported at the validated workflow's own
// grant that leads there, naming the chain.
func TestTransitiveDelegationFindingNamesTheChain(t *testing.T) {
	long := strings.Repeat("a", 48)
	res := validateEdited(t, []edit{{"workflows/helper/workflow.yaml", "    instructions: Look it up.\n",
		"    instructions: Look it up.\n    tools:\n      allow: [archmax_workflow_" + long + "]\n"}}, Options{})
	d, ok := find(res.Diagnostics, "delegation.invalid-target")
	if !ok || d.Field != "states.intake.tools.allow.0" || d.Line == 0 || !strings.HasPrefix(d.Message, "via desk → helper: ") {
		t.Fatalf("%+v\n%s", d, codes(res.Diagnostics))
	}
}

// V-07: a script path the schema refuses is reported once, as code.script-path, and never
// resolved — no existence (V-22) or import (V-23) check runs on where it points, so a path
// out of the workspace cannot end the run as workspace.unreadable and a path into another
// workflow's scripts/ does not judge that workflow's file. Every other pass still reports.
func TestRefusedScriptPathIsNotResolved(t *testing.T) {
	for _, p := range []string{
		"scripts/../../other/scripts/x.js", // into a sibling workflow, whose script imports node:fs
		"scripts/../../../../outside.js",   // out of the workspace
		"../check.js",
		"scripts/./check.js",
		"/etc/check.js",
	} {
		t.Run(p, func(t *testing.T) {
			res := validateEdited(t, []edit{
				{wf, "script: scripts/check.js", "script: " + p},
				{"workflows/other/scripts/x.js", "", "import fs from \"node:fs\";\nexport default () => {};\n"},
				{wf, "allow_always: [policy]", "allow_always: [policy, ledger]"},                 // V-26
				{"workflows/desk/tests/draft.test.yaml", "fixtures/note.md", "fixtures/gone.md"},
			}, Options{})
			var got []string
			for _, d := range res.Diagnostics {
				got = append(got, d.Code+" "+d.Field)
			}
			want := []string{"case.fixture-missing workspace.scratchpad/note.md", "code.script-path states.check.script", "skills.unknown skills.allow_always.1"}
			if slices.Sort(got); !slices.Equal(got, want) {
				t.Fatalf("got\n%s\nwant exactly %q", codes(res.Diagnostics), want)
			}
		})
	}
}

// Findings come sorted by file, then line and column, then code, field and message — never
// in the order the passes ran — so a run is read top to bottom and two runs print alike.
func TestFindingsAreSortedByFileAndPosition(t *testing.T) {
	res := validateEdited(t, []edit{
		{wf, "        - archmax_workflow_helper\n", "        - zeta_tool\n        - archmax_workflow_helper\n"},
		{wf, "    tools:\n      allow:\n", "    tools:\n      forbid: [zeta_tool, archmax_workflow_helper]\n      allow:\n"}, // R-18 twice at one position
		{wf, "  done:\n", "  done:\n    colour: red\n"},                                                                      // V-01 (schema, late in the file)
		{wf, "instructions: Handle access requests.\n", ""},                                                                  // R-09 (lint, unlocated)
		{wf, "allow_always: [policy]", "allow_always: [policy, ledger]"},                                                     // V-26 (workspace pass, early in the file)
		{"workflows/desk/scripts/check.js", "", "import fs from \"node:fs\";\n"},                                             // V-23, in the script
		{"workflows/desk/tests/draft.test.yaml", "trigger: { id: manual }", "trigger: { id: fax }"},                          // R-25, in the case
	}, Options{})
	byPosition := func(a, b spec.Diagnostic) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column),
			cmp.Compare(a.Code, b.Code), cmp.Compare(a.Field, b.Field), cmp.Compare(a.Message, b.Message))
	}
	if !slices.IsSortedFunc(res.Diagnostics, byPosition) {
		t.Fatalf("not sorted by file and position:\n%s", located(res.Diagnostics))
	}
	var files, inert []string
	for _, d := range res.Diagnostics {
		if !slices.Contains(files, d.File) {
			files = append(files, d.File)
		}
		if d.Code == "governance.inert-entry" {
			inert = append(inert, d.Message)
		}
	}
	if want := []string{"workflows/desk/scripts/check.js", "workflows/desk/tests/draft.test.yaml", wf}; !slices.Equal(files, want) {
		t.Errorf("files in order %q, want %q", files, want)
	}
	if len(inert) != 2 || !strings.Contains(inert[0], "'archmax_workflow_helper'") {
		t.Errorf("two findings at one position are not ordered by message: %q", inert)
	}
}

func located(diags []spec.Diagnostic) string {
	var out []string
	for _, d := range diags {
		out = append(out, fmt.Sprintf("%s:%d:%d %s %s: %s", d.File, d.Line, d.Column, d.Code, d.Field, d.Message))
	}
	return strings.Join(out, "\n")
}
