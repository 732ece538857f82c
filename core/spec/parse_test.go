package spec

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
)

func appendixA(t testing.TB) string {
	t.Helper()
	src, err := os.ReadFile("testdata/invoice.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return string(src)
}

// at returns the 1-based line and column where marker starts in src. A marker
// "context|token" locates the first token after the first context.
func at(t *testing.T, src, marker string) (int, int) {
	t.Helper()
	from := 0
	if context, token, ok := strings.Cut(marker, "|"); ok {
		from, marker = strings.Index(src, context), token
	}
	i := strings.Index(src[max(from, 0):], marker) + max(from, 0)
	if from < 0 || i < from {
		t.Fatalf("marker %q not in source", marker)
	}
	line := strings.Count(src[:i], "\n") + 1
	return line, i - strings.LastIndex(src[:i], "\n")
}

// edit replaces exactly one occurrence of old in src.
func edit(t *testing.T, src, old, new string) string {
	t.Helper()
	if strings.Count(src, old) != 1 {
		t.Fatalf("edit target %q occurs %d times", old, strings.Count(src, old))
	}
	return strings.Replace(src, old, new, 1)
}

func mustParse(t *testing.T, src string) *MachineSpec {
	t.Helper()
	s, diags := Parse("workflow.yaml", []byte(src))
	if len(diags) > 0 || s == nil {
		t.Fatalf("Parse: %+v", diags)
	}
	return s
}

func TestAppendixAParsesClean(t *testing.T) {
	s := mustParse(t, appendixA(t))
	if got := len(s.States); got != 5 {
		t.Fatalf("states = %d, want 5", got)
	}
	if s.Title != "Invoice review" || s.Runtime != (Runtime{Engine: "archmax-harness", Version: "2"}) {
		t.Errorf("title/runtime = %q %+v", s.Title, s.Runtime)
	}
	if s.Settings.TimeoutMs != 20000 || s.Settings.PromptCache == nil || s.Settings.PromptCache.TTL != "5m" || !*s.Settings.PromptCache.Enabled {
		t.Errorf("settings = %+v", s.Settings)
	}
	if s.Tests.CaseTimeoutMs != 90000 || s.Tests.Judge == nil || s.Tests.MaxConcurrency != 1 {
		t.Errorf("tests = %+v", s.Tests)
	}
	wantForbid := []ToolEntry{{Tool: "*", Guarded: true, Paths: []string{"secrets/**"}}}
	if !reflect.DeepEqual(s.Tools.Forbid, wantForbid) {
		t.Errorf("tools.forbid_always = %+v", s.Tools.Forbid)
	}
	if !reflect.DeepEqual(s.Mounts.Allow, []MountGrant{{Mount: "policies"}}) {
		t.Errorf("mounts = %+v", s.Mounts)
	}
	if s.Metadata["owner"] != "finance-platform" {
		t.Errorf("metadata = %v", s.Metadata)
	}
	tr := s.Trigger("manual")
	want := &Trigger{ID: "manual", State: "intake", Session: "vendor_id", Description: "Review one supplier invoice.",
		Requires: []SignatureEntry{{Name: "invoice", Type: "file", Description: "The PDF or text invoice."}, {Name: "vendor_id"}},
		Returns:  []SignatureEntry{{Name: "verdict", Type: "string"}}}
	if !reflect.DeepEqual(tr, want) {
		t.Errorf("trigger manual = %+v", tr)
	}
	intake := s.State("intake")
	if intake.Type != "agent" || !reflect.DeepEqual(intake.Requires, []string{"total", "vendor"}) ||
		!reflect.DeepEqual(intake.Tools.Allow, []ToolEntry{{Tool: "write_file", Guarded: true, Paths: []string{"scratchpad/${{vendor_id}}/**"}}}) {
		t.Errorf("intake = %+v", intake)
	}
	if l, c := at(t, appendixA(t), "intake:"); intake.Line != l || intake.Column != c {
		t.Errorf("intake at %d:%d, want %d:%d", intake.Line, intake.Column, l, c)
	}
	grader := s.State("approve-or-reject")
	if grader.Type != "grader" || grader.Budget != (Budget{MaxTurns: 6}) || grader.OnError != "manual-review" {
		t.Errorf("grader = %+v", grader)
	}
	human := s.State("manual-review")
	if human.Title != "Finance sign-off" || !reflect.DeepEqual(human.Approvers, []string{"finance-leads"}) ||
		!reflect.DeepEqual(human.Evidence, []string{"scratchpad/summary.md"}) {
		t.Errorf("human = %+v", human)
	}
	if tt := human.TransitionTo("done"); tt == nil || tt.Type != "approve" || tt.Description != "A person approved payment." {
		t.Errorf("human → done = %+v", tt)
	}
	if human.TransitionTo("nowhere") != nil || human.IsTerminal() || !s.State("done").IsTerminal() {
		t.Error("TransitionTo/IsTerminal")
	}
	if done := s.State("done"); done.Type != "code" || done.Script != "scripts/record-verdict.js" {
		t.Errorf("done = %+v", done)
	}
	if s.State("missing") != nil || s.Trigger("missing") != nil {
		t.Error("absent state/trigger must be nil")
	}
}

// TestAppendixAEdits runs the single-edit table of spec 01 Appendix A: the
// load-blocking rows report their diagnostic at the listed field; the lint rows
// (V-08, V-10, V-11, V-12, R-13, R-17) do not block loading.
func TestAppendixAEdits(t *testing.T) {
	base := appendixA(t)
	tests := []struct {
		name, old, new string
		code, field    string
		marker         string // where the diagnostic points, in the edited source
		message        string // exact message, when the spec gives it
	}{
		{name: "V-05 delete script from check-totals", old: "    script: scripts/check-totals.js\n", new: "",
			code: "code.script-required", field: "states.check-totals", marker: "check-totals:\n    type: code"},
		{name: "V-03 blank description", old: "description: Totals and vendor are recorded.", new: `description: "  "`,
			code: "transition.description-required", field: "states.intake.transitions.0.description", marker: `"  "`,
			message: "must be a non-empty string: it is the only thing the agent is told about this edge — no attribute of the target state is disclosed to it — so an undescribed edge cannot be chosen. Say when to take it (e.g. 'Refunds over $50'), not where it goes."},
		{name: "V-02 top-level name", old: "title: Invoice review\n", new: "title: Invoice review\nname: invoices\n",
			code: "spec.name-key", field: "", marker: "name: invoices"},
		{name: "V-07 script outside scripts/", old: "script: scripts/check-totals.js", new: "script: ../shared/x.js",
			code: "code.script-path", field: "states.check-totals.script", marker: "../shared/x.js"},
		{name: "V-21 before hook", old: "    requires: [total, vendor]\n", new: "    requires: [total, vendor]\n    before: [{ script: hooks/x.js }]\n",
			code: "legacy.hooks-removed", field: "states.intake.before", marker: "before:"},
		{name: "R-03 manual declared twice", old: "    summary: Sets the `verdict` return and completes.\n",
			new:  "    summary: Sets the `verdict` return and completes.\n    triggers: { manual: }\n",
			code: "trigger.duplicate", field: "states", marker: "manual: }",
			message: "Multiple states declare trigger 'manual' (intake, done); a manual start state must be unambiguous"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := edit(t, base, tc.old, tc.new)
			_, diags := Parse("workflow.yaml", []byte(src))
			if len(diags) != 1 {
				t.Fatalf("diagnostics = %+v, want exactly one", diags)
			}
			d := diags[0]
			line, col := at(t, src, tc.marker)
			if d.Code != tc.code || d.Field != tc.field || d.Line != line || d.Column != col || d.Severity != "error" || d.File != "workflow.yaml" {
				t.Errorf("got %+v, want code %s field %q at %d:%d", d, tc.code, tc.field, line, col)
			}
			if tc.message != "" && d.Message != tc.message {
				t.Errorf("message = %q, want %q", d.Message, tc.message)
			}
		})
	}
	lintOnly := []struct{ name, old, new string }{
		{"V-08 instructions on a code state", "    summary: Sets the `verdict` return and completes.\n", "    summary: Sets the `verdict` return and completes.\n    instructions: x\n"},
		{"V-10 grader without transitions", "    on_error: manual-review\n    transitions:\n      - to: done\n        description: The vendor is approved and the invoice can be paid.\n      - to: manual-review\n        description: The vendor is unknown or blocked.\n", "    on_error: manual-review\n"},
		{"V-11 maxParks on a grader", "budget: { maxTurns: 6 }", "budget: { maxTurns: 6, maxParks: 2 }"},
		{"V-12 archmax_wait on a code state", "    script: scripts/check-totals.js\n", "    script: scripts/check-totals.js\n    tools: { allow: [archmax_wait] }\n"},
		{"R-13 human without instructions", "    instructions: Ask finance to approve payment or send the invoice back.\n", ""},
		{"R-17 essential tool in allow_always", "tools:\n  forbid_always", "tools:\n  allow_always: [read_file]\n  forbid_always"},
	}
	for _, tc := range lintOnly {
		t.Run(tc.name, func(t *testing.T) {
			mustParse(t, edit(t, base, tc.old, tc.new))
		})
	}
}

const minimal = `states:
  start:
    triggers:
      manual:
    transitions:
      - to: done
        description: Finished.
  done:
`

// TestLoadBlockingRules covers each schema and document rule with its code, field
// and position.
func TestLoadBlockingRules(t *testing.T) {
	tests := []struct {
		name, src, code, field, marker, message string
	}{
		{"V-01 unknown state key", strings.Replace(minimal, "transitions:", "transtions:", 1), "schema.unknown-key", "states.start", "transtions:", `Unrecognized key: "transtions"`},
		{"V-01 unknown root key", "policy: {}\n" + minimal, "schema.unknown-key", "", "policy:", ""},
		{"V-01 unknown transition key", strings.Replace(minimal, "description: Finished.", "description: Finished.\n        label: x", 1), "schema.unknown-key", "states.start.transitions.0", "label:", `Unrecognized key: "label"`},
		{"V-01 settings.sub_workflows refused", "settings: { sub_workflows: {} }\n" + minimal, "schema.unknown-key", "settings", "sub_workflows", `Unrecognized key: "sub_workflows"`},
		{"V-01 root skills.allow refused", "skills: { allow: [a] }\n" + minimal, "schema.unknown-key", "skills", "allow:", `Unrecognized key: "allow"`},
		{"V-01 session directly on a state", strings.Replace(minimal, "  done:\n", "  done:\n    session: x\n", 1), "schema.unknown-key", "states.done", "session: x", `Unrecognized key: "session"`},
		{"V-02 root description", "description: x\n" + minimal, "spec.name-key", "", "description: x", ""},
		{"V-03 missing description", strings.Replace(minimal, "\n        description: Finished.", "", 1), "transition.description-required", "states.start.transitions.0.description", "to: done", ""},
		{"V-03 description not a string", strings.Replace(minimal, "description: Finished.", "description: 5", 1), "transition.description-required", "states.start.transitions.0.description", "5\n", ""},
		{"V-15 unknown state type", strings.Replace(minimal, "  done:\n", "  done:\n    type: wait\n", 1), "state.type-invalid", "states.done.type", "wait", "unknown state type 'wait' (expected 'agent', 'human', 'code' or 'grader')"},
		{"§3.4 rule 4 unknown transition type", strings.Replace(minimal, "description: Finished.", "description: Finished.\n        type: maybe", 1), "transition.type-invalid", "states.start.transitions.0.type", "maybe", "unknown type 'maybe' (expected approve|reject|refine|none)"},
		{"V-16 unknown target", strings.Replace(minimal, "to: done", "to: nowhere", 1), "transition.unknown-target", "states.start.transitions.0.to", "nowhere", "State 'start' transitions to undefined state 'nowhere'"},
		{"P-08 duplicate target", strings.Replace(minimal, "description: Finished.", "description: Finished.\n      - to: done\n        description: Again.", 1), "transition.duplicate-target", "states.start.transitions.1.to", "done\n        description: Again.", ""},
		{"V-17 on_error unknown", strings.Replace(minimal, "    transitions:", "    on_error: ghost\n    transitions:", 1), "state.on-error-unknown", "states.start.on_error", "ghost", "State 'start' on_error routes to undefined state 'ghost'"},
		{"V-05 code state without script", strings.Replace(minimal, "  done:\n", "  done:\n    type: code\n", 1), "code.script-required", "states.done", "done:\n    type", ""},
		{"V-06 script on an agent state", strings.Replace(minimal, "  done:\n", "  done:\n    script: scripts/x.js\n", 1), "state.script-refused", "states.done.script", "scripts/x.js", ""},
		{"R-04 wildcard in a state grant", strings.Replace(minimal, "    transitions:", "    tools: { allow: [\"*\"] }\n    transitions:", 1), "tools.wildcard-grant", "states.start.tools.allow.0", `"*"`, ""},
		{"R-04 wildcard in allow_always", "tools: { allow_always: [{ tool: \"*\", paths: [x] }] }\n" + minimal, "tools.wildcard-grant", "tools.allow_always.0", "{ tool", ""},
		{"R-05 malformed guard reference", strings.Replace(minimal, "    transitions:", "    tools:\n      allow:\n        - { tool: write_file, paths: [\"out/${{ Bad }}/**\"] }\n    transitions:", 1),
			"reference.malformed", "states.start.tools.allow.0", "{ tool: write_file", "State 'start' guards 'write_file' on '${{ Bad }}', which is not a valid variable reference — use ${{name}} or ${{name.path.to.value}}."},
		{"R-05 empty segment in an args guard of forbid_always", "tools: { forbid_always: [{ tool: lookup, args: { region: [\"${{a..b}}\"] } }] }\n" + minimal,
			"reference.malformed", "tools.forbid_always.0", "{ tool: lookup", "tools.forbid_always guards 'lookup' on '${{a..b}}', which is not a valid variable reference — use ${{name}} or ${{name.path.to.value}}."},
		{"R-02 no trigger", strings.Replace(minimal, "    triggers:\n      manual:\n", "", 1), "spec.no-entry", "states", "start:", "Workflow has no start state; declare a `triggers` mapping on at least one state (e.g. `triggers: { manual: }`)"},
		{"R-03 tool trigger declared twice", strings.Replace(minimal, "  done:\n", "  done:\n    triggers: { ping: }\n", 1) + "  other:\n    triggers:\n      ping:\n", "trigger.duplicate", "states", "ping:\n", "Multiple states declare trigger 'ping' (done, other); a tool trigger must name a unique start state"},
		{"R-01 empty states", "states: {}\n", "spec.states-empty", "states", "{}", "Machine spec is missing or has empty 'states'"},
		{"R-01 missing states", "title: x\n", "spec.states-empty", "states", "title", "Machine spec is missing or has empty 'states'"},
		{"R-01 states as a list", "states: [a]\n", "spec.states-empty", "states", "[a]", "Machine spec is missing or has empty 'states'"},
		{"V-20 maxConcurrency above 1", "tests: { maxConcurrency: 2 }\n" + minimal, "tests.max-concurrency-unsupported", "tests.maxConcurrency", "2 }",
			"'tests.maxConcurrency' above 1 is not supported: case concurrency is not implemented and offline cases run sequentially — set it to 1 or remove the field"},
		{"V-19 tests unknown key", "tests: { reporters: [x] }\n" + minimal, "schema.unknown-key", "tests", "reporters", ""},
		{"V-19 judge temperature below 0", "tests: { judge: { modelOptions: { temperature: -1 } } }\n" + minimal, "schema.type", "tests.judge.modelOptions.temperature", "-1", ""},
		{"V-21 extensions.hooks", "extensions: { hooks: [x] }\n" + minimal, "legacy.hooks-removed", "extensions.hooks", "hooks", ""},
		{"§2.10 extensions has no members", "extensions: { custom: 1 }\n" + minimal, "schema.unknown-key", "extensions", "custom", ""},
		{"V-21 rubric on a state", strings.Replace(minimal, "  done:\n", "  done:\n    rubric: { instructions: x }\n", 1), "legacy.hooks-removed", "states.done.rubric", "rubric:", ""},
		{"R-07 triggers not a mapping", strings.Replace(minimal, "    triggers:\n      manual:\n", "    triggers: [manual]\n", 1), "trigger.not-a-mapping", "states.start.triggers", "[manual]",
			"must be a mapping of trigger id to its declaration (e.g. 'triggers: { manual: }', or an id with a 'session' path under it)."},
		{"R-07 declaration not a mapping", strings.Replace(minimal, "      manual:\n", "      manual: yes\n", 1), "trigger.not-a-mapping", "states.start.triggers.manual", "yes", ""},
		{"R-07 entry key refused", strings.Replace(minimal, "      manual:\n", "      manual: { entry: done }\n", 1), "trigger.key-refused", "states.start.triggers.manual.entry", "done }", ""},
		{"R-07 name key refused", strings.Replace(minimal, "      manual:\n", "      manual: { name: go }\n", 1), "trigger.key-refused", "states.start.triggers.manual.name", "go }", ""},
		{"R-07 session reference refused", strings.Replace(minimal, "      manual:\n", "      manual: { session: \"${{conv}}\" }\n", 1), "trigger.session-path", "states.start.triggers.manual.session", `"${{`, "write the bare path, not a '${{…}}' reference (e.g. 'conversation_id')."},
		{"R-07 session empty segment", strings.Replace(minimal, "      manual:\n", "      manual: { session: \"a..b\" }\n", 1), "trigger.session-path", "states.start.triggers.manual.session", `"a..b"`, "it has an empty segment — check for a doubled or trailing '.'."},
		{"R-07 session first segment", strings.Replace(minimal, "      manual:\n", "      manual: { session: Conv.id }\n", 1), "trigger.session-path", "states.start.triggers.manual.session", "Conv.id", "its first segment must be a variable name (lowercase letters, digits and underscores, starting with a letter)."},
		{"R-07 session blank", strings.Replace(minimal, "      manual:\n", "      manual: { session: \" \" }\n", 1), "trigger.session-path", "states.start.triggers.manual.session", `" "`, "it is empty."},
		{"R-07 message true", strings.Replace(minimal, "      manual:\n", "      manual: { message: true }\n", 1), "trigger.session-path", "states.start.triggers.manual.message", "true", "must be a dotted path string (e.g. 'triggers.-1.text'), or false when firings carry no message."},
		{"R-07 blank description", strings.Replace(minimal, "      manual:\n", "      manual: { description: \"\" }\n", 1), "trigger.description", "states.start.triggers.manual.description", `""`, ""},
		{"R-07 connection not a string", strings.Replace(minimal, "      manual:\n", "      manual: { connection: 3 }\n", 1), "trigger.connection", "states.start.triggers.manual.connection", "3 }", ""},
		{"R-06 bare name invalid", strings.Replace(minimal, "      manual:\n", "      manual: { requires: [Order] }\n", 1), "signature.name-invalid", "states.start.triggers.manual.requires.0", "Order",
			"'Order' is not a valid run-variable name. Use lowercase letters, digits and underscores, starting with a letter (e.g. 'order_id')."},
		{"R-06 entry name invalid", strings.Replace(minimal, "      manual:\n", "      manual: { returns: [{ name: 2nd, type: string }] }\n", 1), "signature.name-invalid", "states.start.triggers.manual.returns.0.name", "2nd",
			"'2nd' is not a valid run-variable name. Use lowercase letters, digits and underscores, starting with a letter (e.g. 'order_id')."},
		{"V-18 unknown signature type", strings.Replace(minimal, "      manual:\n", "      manual: { requires: [{ name: x, type: text }] }\n", 1), "signature.type-unknown", "states.start.triggers.manual.requires.0.type", "text",
			`'type' must be one of string, integer, number, boolean, date, date-time, object, array or file; got "text"`},
		{"R-06 entry without name", strings.Replace(minimal, "      manual:\n", "      manual: { requires: [{ type: string }] }\n", 1), "signature.name-invalid", "states.start.triggers.manual.requires.0", "{ type",
			"a signature entry needs a 'name' naming its variable (e.g. '{ name: order_id, type: string }')"},
		{"R-06 unknown entry key", strings.Replace(minimal, "      manual:\n", "      manual: { returns: [{ name: x, desc: y }] }\n", 1), "signature.unknown-key", "states.start.triggers.manual.returns.0", "desc",
			"Entry 'x' declares 'desc', which a signature entry does not take: it has 'name', 'type' and 'description' only."},
		{"R-06 blank entry description", strings.Replace(minimal, "      manual:\n", "      manual: { returns: [{ name: x, description: \" \" }] }\n", 1), "signature.description-blank", "states.start.triggers.manual.returns.0.description", `" "`, "'description' must be a non-empty string"},
		{"R-06 duplicate across spellings", strings.Replace(minimal, "      manual:\n", "      manual: { requires: [a, { name: a }] }\n", 1), "signature.duplicate", "states.start.triggers.manual.requires.1", "{ name: a", "'a' is listed more than once."},
		{"R-06 trigger in returns", strings.Replace(minimal, "      manual:\n", "      manual: { returns: [trigger] }\n", 1), "signature.reserved-return", "states.start.triggers.manual.returns.0", "trigger]", ""},
		{"R-06 note in returns", strings.Replace(minimal, "      manual:\n", "      manual: { returns: [{ name: note }] }\n", 1), "signature.reserved-return", "states.start.triggers.manual.returns.0", "{ name: note", ""},
		{"R-06 requires not a list", strings.Replace(minimal, "      manual:\n", "      manual: { requires: order_id }\n", 1), "signature.not-a-list", "states.start.triggers.manual.requires", "order_id",
			"must be a list of run-variable names, each a bare name or '{ name, type?, description? }' (e.g. 'requires: [order_id, { name: due, type: date }]')."},
		{"§3.3.13 budget zero", strings.Replace(minimal, "  done:\n", "  done:\n    budget: { maxTurns: 0 }\n", 1), "schema.positive", "states.done.budget.maxTurns", "0 }", "must be a positive number"},
		{"§3.3.13 budget fractional", strings.Replace(minimal, "  done:\n", "  done:\n    budget: { timeoutMs: 1.5 }\n", 1), "schema.positive", "states.done.budget.timeoutMs", "1.5", "must be a positive number"},
		{"§3.3.13 budget quoted", strings.Replace(minimal, "  done:\n", "  done:\n    budget: { maxParks: \"3\" }\n", 1), "schema.positive", "states.done.budget.maxParks", `"3"`, "must be a positive number"},
		{"R-11 model object", strings.Replace(minimal, "  done:\n", "  done:\n    model: { id: x, temperature: 0 }\n", 1), "schema.model-id", "states.done.model", "{ id", ""},
		{"R-11 settings.model blank", "settings: { model: \"\" }\n" + minimal, "schema.model-id", "settings.model", `""`, "must be a non-empty string"},
		{"R-10 root instructions blank", "instructions: \"\"\n" + minimal, "schema.non-empty", "instructions", `""`, "must be a non-empty string"},
		{"R-10 state title blank", strings.Replace(minimal, "  done:\n", "  done:\n    title: \" \"\n", 1), "schema.non-empty", "states.done.title", `" "`, "must be a non-empty string"},
		{"§3.3.12 unknown mount access", strings.Replace(minimal, "  done:\n", "  done:\n    mounts: { allow: [{ mount: docs, access: write }] }\n", 1), "mounts.access-invalid", "states.done.mounts.allow.0.access", "write", "unknown mount access 'write' (expected 'read' or 'read_write')"},
		{"§3.3.12 malformed grant", "mounts: { allow_always: [5] }\n" + minimal, "mounts.grant-invalid", "mounts.allow_always.0", "5]",
			"must be a mount name, or '{ mount: <name>, access: read | read_write }' to name the access this level gives; got 5"},
		{"§6.6 mount name with slashes", "mounts: { forbid_always: [\"/x/\"] }\n" + minimal, "mounts.name-invalid", "mounts.forbid_always.0", `"/x/"`, ""},
		{"§1.5 skill not a slug", "skills: { allow_always: [Order_Data] }\n" + minimal, "skills.slug-invalid", "skills.allow_always.0", "Order_Data", ""},
		{"§3.3.10 object without tool", strings.Replace(minimal, "  done:\n", "  done:\n    tools: { allow: [{ paths: [x] }] }\n", 1), "tools.tool-required", "states.done.tools.allow.0.tool", "{ paths", "must name a tool"},
		{"§3.3.10 object is strict", strings.Replace(minimal, "  done:\n", "  done:\n    tools: { forbid: [{ tool: x, path: y }] }\n", 1), "schema.unknown-key", "states.done.tools.forbid.0", "path:", `Unrecognized key: "path"`},
		{"P-12 empty paths", strings.Replace(minimal, "  done:\n", "  done:\n    tools: { allow: [{ tool: x, paths: [] }] }\n", 1), "tools.guard-empty", "states.done.tools.allow.0.paths", "[] }", ""},
		{"P-12 absolute glob", strings.Replace(minimal, "  done:\n", "  done:\n    tools: { allow: [{ tool: x, paths: /etc/** }] }\n", 1), "tools.guard-absolute", "states.done.tools.allow.0.paths", "/etc", ""},
		{"P-14 timeoutMs above 600000", "settings: { timeoutMs: 600001 }\n" + minimal, "settings.timeout-max", "settings.timeoutMs", "600001", ""},
		{"P-14 prompt_cache ttl", "settings: { prompt_cache: { ttl: 10m } }\n" + minimal, "settings.prompt-cache-ttl", "settings.prompt_cache.ttl", "10m", ""},
		{"§2.5 maxPtcCalls negative", "settings: { maxPtcCalls: -1 }\n" + minimal, "schema.type", "settings.maxPtcCalls", "-1", ""},
		{"§2.4 runtime is strict", "runtime: { engine: x, flavour: y }\n" + minimal, "schema.unknown-key", "runtime", "flavour", ""},
		{"§2.4 runtime version type", "runtime: { version: [2] }\n" + minimal, "schema.type", "runtime.version", "[2]", ""},
		{"§2.13 null settings", "settings:\n" + minimal, "schema.type", "settings", "settings:", ""},
		{"§2.13 null tools", "tools:\n" + minimal, "schema.type", "tools", "tools:", ""},
		{"§2.13 null transitions", strings.Replace(minimal, "  done:\n", "  done:\n    transitions:\n", 1), "schema.type", "states.done.transitions", "done:|transitions:", ""},
		{"§2.11 metadata must be a mapping", "metadata: [a]\n" + minimal, "schema.type", "metadata", "[a]", "must be a mapping"},
		{"§3.3.8 state requires names", strings.Replace(minimal, "  done:\n", "  done:\n    requires: [ok, Not-ok]\n", 1), "schema.variable-name", "states.done.requires.1", "Not-ok", ""},
		{"P-15 absolute evidence path", strings.Replace(minimal, "  done:\n", "  done:\n    evidence: [/etc/passwd]\n", 1), "human.evidence-path", "states.done.evidence.0", "/etc", ""},
		// P-01: the finding names the duplicated key's own path, at its second occurrence
		{"P-01 duplicate state", minimal + "  start:\n    summary: again\n", "yaml.duplicate-key", "states.start", "start:\n    summary", ""},
		{"P-01 duplicate key in a flow mapping", strings.Replace(minimal, "  done:\n", "  done:\n    budget: { maxTurns: 1, maxTurns: 2 }\n", 1), "yaml.duplicate-key", "states.done.budget.maxTurns", "maxTurns: 2", ""},
		{"P-01 duplicate state key", strings.Replace(minimal, "  done:\n", "  done:\n    title: Done\n    title: Finished\n", 1), "yaml.duplicate-key", "states.done.title", "title: Finished", ""},
		{"P-01 duplicate root key", "title: A\ntitle: B\n" + minimal, "yaml.duplicate-key", "title", "title: B", ""},
		{"§2.13 rule 5 non-string key", strings.Replace(minimal, "      manual:\n", "      manual:\n      1: {}\n", 1), "yaml.non-string-key", "states.start.triggers", "1: {}", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, diags := Parse("workflow.yaml", []byte(tc.src))
			if s == nil {
				t.Fatalf("spec is nil for a mapping document (%+v)", diags)
			}
			if len(diags) != 1 {
				t.Fatalf("diagnostics = %+v, want exactly one", diags)
			}
			d := diags[0]
			line, col := at(t, tc.src, tc.marker)
			if d.Code != tc.code || d.Field != tc.field || d.Line != line || d.Column != col || d.Severity != "error" {
				t.Errorf("got %+v, want code %s field %q at %d:%d", d, tc.code, tc.field, line, col)
			}
			if tc.message != "" && d.Message != tc.message {
				t.Errorf("message = %q, want %q", d.Message, tc.message)
			}
		})
	}
}

func TestScriptPathGrammar(t *testing.T) { // §6.7, V-07
	for path, ok := range map[string]bool{
		"scripts/x.js": true, "scripts/a/b.mjs": true, "scripts/.hidden.js": true,
		"scripts/../x.js": false, "/scripts/x.js": false, "scripts/x.ts": false, "x.js": false,
		"scripts//x.js": false, "scripts/./x.js": false, `scripts/a\b.js`: false, "scripts/": false, "hooks/x.js": false,
	} {
		src := strings.Replace(minimal, "  done:\n", "  done:\n    type: code\n    script: '"+path+"'\n", 1)
		_, diags := Parse("w.yaml", []byte(src))
		if got := len(diags) == 0; got != ok {
			t.Errorf("script %q: accepted = %v, want %v (%+v)", path, got, ok, diags)
		}
	}
}

func TestAllIssuesAtOnce(t *testing.T) { // §8.1 requirement 1: total, never the first only
	src := "name: x\n" + strings.Replace(minimal, "  done:\n", "  done:\n    type: robot\n    budget: { maxTurns: 0 }\n    transtions: []\n", 1)
	_, diags := Parse("w.yaml", []byte(src))
	var codes []string
	for _, d := range diags {
		codes = append(codes, d.Code)
	}
	want := []string{"spec.name-key", "state.type-invalid", "schema.positive", "schema.unknown-key"}
	if !reflect.DeepEqual(codes, want) {
		t.Errorf("codes = %v, want %v", codes, want)
	}
	// Document rules report every finding too.
	src = strings.Replace(minimal, "to: done", "to: a", 1) + "    on_error: b\n"
	_, diags = Parse("w.yaml", []byte(src))
	if len(diags) != 2 || diags[0].Code != "transition.unknown-target" || diags[1].Code != "state.on-error-unknown" {
		t.Errorf("diagnostics = %+v", diags)
	}
}

func TestGuardReferences(t *testing.T) { // R-05, §5.5
	for glob, ok := range map[string]bool{
		"out/${{vendor_id}}/**": true, "out/${{ order.items.-1 }}": true, "out/$${{ Not A Ref }}": true,
		"out/${{}}": false, "out/${{a.}}": false, "out/${{9a}}": false, "${{ok}}/${{Bad}}": false,
	} {
		src := strings.Replace(minimal, "  done:\n", "  done:\n    tools: { forbid: [{ tool: read_file, args: { file_path: '"+glob+"' } }] }\n", 1)
		_, diags := Parse("w.yaml", []byte(src))
		if got := len(diags) == 0; got != ok {
			t.Errorf("glob %q: accepted = %v, want %v (%+v)", glob, got, ok, diags)
		}
	}
}

func TestDisabledFailClosed(t *testing.T) { // §2.12, V-33
	tests := []struct {
		value    string
		disabled bool
		errs     int
	}{
		{"", false, 0}, {"disabled: false\n", false, 0}, {"disabled: true\n", true, 0},
		{"disabled: \"no\"\n", true, 1}, {"disabled: no\n", true, 1}, {"disabled: 0\n", true, 1}, {"disabled:\n", false, 1},
	}
	for _, tc := range tests {
		s, diags := Parse("w.yaml", []byte(tc.value+minimal))
		if s == nil || s.Disabled != tc.disabled || len(diags) != tc.errs {
			t.Errorf("%q: spec %v disabled %v diags %+v", tc.value, s != nil, s != nil && s.Disabled, diags)
			continue
		}
		if tc.errs == 1 && (diags[0].Code != "spec.disabled" || !strings.Contains(diags[0].Message, "fail-closed as disabled")) {
			t.Errorf("%q: %+v", tc.value, diags[0])
		}
	}
}

func TestDefaults(t *testing.T) {
	s := mustParse(t, minimal)
	if s.Settings.TimeoutMs != 15000 || s.Settings.MemoryLimitBytes != 67108864 || s.Settings.MaxPtcCalls == nil ||
		*s.Settings.MaxPtcCalls != 200 || s.Settings.MaxResultChars != 100000 || s.Settings.PromptCache != nil || s.Settings.Model != "" {
		t.Errorf("settings = %+v", s.Settings)
	}
	if s.Tests != (TestsConfig{CaseTimeoutMs: 120000, MaxConcurrency: 1}) {
		t.Errorf("tests = %+v", s.Tests)
	}
	if s.Runtime != (Runtime{Version: "1"}) || s.Disabled || s.Title != "" || s.Metadata != nil {
		t.Errorf("root = %+v", s)
	}
	done := s.State("done")
	if done.Type != "agent" || !done.IsTerminal() || done.Budget != (Budget{}) {
		t.Errorf("null state = %+v", done)
	}
	s = mustParse(t, "settings: { maxPtcCalls: null, memoryLimitBytes: 1024 }\nruntime: { version: 2 }\n"+minimal)
	if s.Settings.MaxPtcCalls != nil || s.Settings.MemoryLimitBytes != 1024 || s.Runtime.Version != "2" {
		t.Errorf("explicit null maxPtcCalls / numeric version: %+v %+v", s.Settings, s.Runtime)
	}
	s = mustParse(t, "settings: { maxPtcCalls: 0 }\n"+minimal)
	if s.Settings.MaxPtcCalls == nil || *s.Settings.MaxPtcCalls != 0 {
		t.Errorf("maxPtcCalls 0 = %v", s.Settings.MaxPtcCalls)
	}
}

func TestNullHandling(t *testing.T) { // §2.13 rule 6
	s := mustParse(t, minimal)
	if tr := s.Trigger("manual"); tr == nil || tr.State != "start" || tr.Requires != nil || tr.Extra != nil {
		t.Errorf("null declaration = %+v", tr)
	}
	s = mustParse(t, strings.Replace(minimal, "      manual:\n", "      manual: { message: false, connection: mail, x-ui: { color: red } }\n", 1))
	tr := s.Trigger("manual")
	if !tr.MessageDisabled || tr.Message != "" || tr.Connection != "mail" || !reflect.DeepEqual(tr.Extra, map[string]any{"x-ui": map[string]any{"color": "red"}}) {
		t.Errorf("declaration = %+v", tr)
	}
}

func TestYAML12Scalars(t *testing.T) { // §2.13 rules 1–2
	src := `title: yes
instructions: 2026-03-20
metadata: { a: on, b: 0o17, c: 0755, d: 1_000, e: 0x1F, f: .inf, g: ~, h: 2026-03-20T10:00:00Z, i: !!str 12, j: "true" }
states:
  start:
    summary: off
    triggers: { on: , "no": }
`
	s := mustParse(t, src)
	if s.Title != "yes" || s.Instructions != "2026-03-20" || s.State("start").Summary != "off" {
		t.Errorf("strings: %q %q %q", s.Title, s.Instructions, s.State("start").Summary)
	}
	if ids := s.TriggerIDs(); !reflect.DeepEqual(ids, []string{"on", "no"}) {
		t.Errorf("trigger ids = %q", ids)
	}
	want := map[string]any{"a": "on", "b": 15.0, "c": 755.0, "d": "1_000", "e": 31.0, "f": s.Metadata["f"], "g": nil,
		"h": "2026-03-20T10:00:00Z", "i": "12", "j": "true"}
	if !reflect.DeepEqual(s.Metadata, want) {
		t.Errorf("metadata = %#v", s.Metadata)
	}
}

func TestAnchorsAliasesAndMerge(t *testing.T) { // §2.13 rule 4
	src := `x-edge: &edge { to: done, description: Finished. }
states:
  base: &base
    summary: shared
    instructions: base text
  start:
    <<: *base
    instructions: own text
    triggers: { manual: }
    transitions: [*edge]
  done:
`
	_, diags := Parse("w.yaml", []byte(src))
	if len(diags) != 1 || diags[0].Code != "schema.unknown-key" { // x-edge is not a root key
		t.Fatalf("diagnostics = %+v", diags)
	}
	s := mustParse(t, strings.Replace(src, "x-edge: &edge { to: done, description: Finished. }\n", "metadata: { edge: &edge { to: done, description: Finished. } }\n", 1))
	st := s.State("start")
	if st.Summary != "shared" || st.Instructions != "own text" || !reflect.DeepEqual(st.Transitions, []Transition{{To: "done", Description: "Finished."}}) {
		t.Errorf("merged state = %+v", st)
	}
}

func TestAliasExpansionBounded(t *testing.T) { // §2.13 rule 4
	bomb := "a: &a [x, x, x, x, x, x, x, x, x]\n"
	prev := "a"
	for _, n := range []string{"b", "c", "d", "e", "f", "g", "h", "i"} {
		bomb += n + ": &" + n + " [" + strings.Repeat("*"+prev+", ", 8) + "*" + prev + "]\n"
		prev = n
	}
	for name, src := range map[string]string{"bomb": bomb + minimal, "cycle": "metadata: &m { self: *m }\n" + minimal} {
		s, diags := Parse("w.yaml", []byte(src))
		if s != nil || len(diags) != 1 || diags[0].Code != "yaml.alias-expansion" {
			t.Errorf("%s: spec %v, diagnostics %+v", name, s != nil, diags)
		}
	}
}

func TestNotAMapping(t *testing.T) { // §1.9, §2.13 rule 1
	const msg = "invalid machine spec at w.yaml (expected a YAML mapping)"
	for name, src := range map[string]string{
		"empty": "", "comment only": "# nothing\n", "scalar": "just text\n", "list": "- a\n",
		"parse failure": "states: [\n", "two documents": minimal + "---\n" + minimal, "null": "~\n",
	} {
		s, diags := Parse("w.yaml", []byte(src))
		want, code := msg, "spec.not-a-mapping"
		if name == "parse failure" { // the reference's text, then the parser's reason
			want, code = msg+": line 1: did not find expected node content", "yaml.syntax"
		}
		if s != nil || len(diags) != 1 || diags[0].Message != want || diags[0].Code != code {
			t.Errorf("%s: spec %v, diagnostics %+v", name, s != nil, diags)
		}
		_, err := Load("w", "w.yaml", []byte(src))
		var le *WorkflowLoadError
		if !errors.As(err, &le) {
			t.Errorf("%s: Load error = %v", name, err)
		}
	}
}

func TestCarriageReturnsStripped(t *testing.T) { // §1.9
	crlf := strings.ReplaceAll(minimal, "\n", "\r\n") + "\r"
	a, b := mustParse(t, minimal), mustParse(t, crlf)
	if a.Hash() != b.Hash() {
		t.Error("CRLF changes the hash")
	}
}

func TestEntry(t *testing.T) { // §4.3
	tests := []struct{ src, want string }{
		{minimal, "start"},
		{"states:\n  a:\n  b:\n    triggers: { ping: }\n  c:\n    triggers: { manual: }\n", "c"},
		{"states:\n  a:\n  b:\n    triggers: { ping: }\n  c:\n    triggers: { pong: }\n", "b"},
		{"states:\n  a:\n  b:\n", "a"}, // spec.no-entry, still parsed
	}
	for _, tc := range tests {
		s, _ := Parse("w.yaml", []byte(tc.src))
		if got := s.Entry(); got != tc.want {
			t.Errorf("Entry() = %q, want %q for\n%s", got, tc.want, tc.src)
		}
	}
	if (&MachineSpec{}).Entry() != "" {
		t.Error("empty spec entry")
	}
	s, _ := Parse("w.yaml", []byte("states:\n  a:\n    triggers: { manual: , ping: }\n  b:\n    triggers: { ping: }\n"))
	if tr := s.Trigger("ping"); tr == nil || tr.State != "b" {
		t.Errorf("doubled id: later declaration must win, got %+v", tr)
	}
	if ids := s.TriggerIDs(); !reflect.DeepEqual(ids, []string{"manual", "ping"}) {
		t.Errorf("TriggerIDs = %v", ids)
	}
}

func TestLoad(t *testing.T) { // §1.9, V-30
	s, err := Load("wf", "workflows/wf/workflow.yaml", []byte(minimal))
	if err != nil || s == nil {
		t.Fatalf("Load(valid) = %v, %v", s, err)
	}
	_, err = Load("wf", "workflows/wf/workflow.yaml", []byte(strings.Replace(minimal, "to: done", "to: nowhere", 1)))
	var le *WorkflowLoadError
	if !errors.As(err, &le) || le.Name() != "WorkflowLoadError" || le.Workflow != "wf" || len(le.Diagnostics) != 1 {
		t.Fatalf("Load(invalid) error = %#v", err)
	}
	want := "Cannot load workflow 'wf' (workflows/wf/workflow.yaml): 'states.start.transitions.0.to': State 'start' transitions to undefined state 'nowhere'. Run 'archmax validate wf' for details."
	if err.Error() != want {
		t.Errorf("Error() =\n%s\nwant\n%s", err, want)
	}
	_, err = Load("wf", "w.yaml", nil)
	if want := "Cannot load workflow 'wf' (w.yaml): invalid machine spec at w.yaml (expected a YAML mapping). Run 'archmax validate wf' for details."; err == nil || err.Error() != want {
		t.Errorf("Error() = %v, want %s", err, want)
	}
}

func sha32(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:])[:32]
}

// TestSpecHashPinned pins specHash to the §9.1 algorithm: the stableStringify text is
// written out by hand and hashed here with crypto/sha256.
func TestSpecHashPinned(t *testing.T) {
	tests := []struct{ name, src, stable string }{
		{"null states, metadata removed, sorted keys", `metadata: { canvas: 1 }
states:
  b:
  a:
    triggers: { manual: }
    metadata: { x: 1 }
`, `{"states":{"a":{"triggers":{"manual":null}},"b":{}}}`},
		{"escapes, numbers, UTF-16 key order", "title: \"Tab\\there \\\"q\\\" é 😀 \\x01 /\"\n" + `settings: { timeoutMs: 1.5e4, maxPtcCalls: null }
runtime: { version: 2.50 }
states:
  "ｚ":
  "😀":
    triggers: { manual: }
`, `{"runtime":{"version":2.5},"settings":{"maxPtcCalls":null,"timeoutMs":15000},"states":{"😀":{"triggers":{"manual":null}},"ｚ":{}},"title":"Tab\there \"q\" é 😀 \u0001 /"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := mustParse(t, tc.src)
			if got, want := s.Hash(), sha32(tc.stable); got != want {
				t.Errorf("Hash() = %s, want %s = sha256(%s)[:32]", got, want, tc.stable)
			}
		})
	}
}

func TestSpecHashStability(t *testing.T) { // §9.1 consequences
	base := appendixA(t)
	h := mustParse(t, base).Hash()
	if len(h) != 32 || strings.ToLower(h) != h {
		t.Fatalf("hash %q is not 32 lowercase hex characters", h)
	}
	same := map[string]string{
		"comments":       "# leading comment\n" + strings.Replace(base, "title: Invoice review", "title: Invoice review # trailing", 1),
		"root key order": edit(t, base, "title: Invoice review\n", "") + "title: Invoice review\n",
		"state key order": edit(t, edit(t, base, "    summary: Reads the uploaded invoice and records its totals.\n", ""),
			"    requires: [total, vendor]\n", "    requires: [total, vendor]\n    summary: Reads the uploaded invoice and records its totals.\n"),
		"quoting style":  edit(t, base, "title: Invoice review", `title: "Invoice review"`),
		"metadata edits": edit(t, edit(t, base, "metadata: { owner: finance-platform }", "metadata: { owner: ops, x: [1] }"), "    type: human\n", "    type: human\n    metadata: { x: 1, y: 2 }\n"),
		"flow vs block":  edit(t, base, "runtime: { engine: archmax-harness, version: \"2\" }", "runtime:\n  version: \"2\"\n  engine: archmax-harness"),
	}
	for name, src := range same {
		if got := mustParse(t, src).Hash(); got != h {
			t.Errorf("%s changed the hash", name)
		}
	}
	differs := map[string]string{
		"transition order": edit(t, base, "      - to: approve-or-reject\n        description: The recorded total matches the line items.\n      - to: intake\n        description: The totals disagree; record them again.\n",
			"      - to: intake\n        description: The totals disagree; record them again.\n      - to: approve-or-reject\n        description: The recorded total matches the line items.\n"),
		"a value":      edit(t, base, "timeoutMs: 20000", "timeoutMs: 20001"),
		"number type":  edit(t, base, `version: "2"`, "version: 2"),
		"a null state": edit(t, base, "    summary: Sets the `verdict` return and completes.\n", "    summary: Sets the `verdict` return and completes.\n  extra:\n"),
	}
	for name, src := range differs {
		if got := mustParse(t, src).Hash(); got == h {
			t.Errorf("%s did not change the hash", name)
		}
	}
}

func TestSnapshotJSON(t *testing.T) { // §9.2
	s := mustParse(t, appendixA(t))
	snap := s.SnapshotJSON()
	if strings.Contains(string(snap), "metadata") || strings.Contains(string(snap), "finance-platform") {
		t.Error("snapshot carries metadata")
	}
	if !strings.HasPrefix(string(snap), "{\n  \"title\": \"Invoice review\",\n  \"instructions\": ") {
		t.Errorf("snapshot is not 2-space indented in document order:\n%.120s", snap)
	}
	var fromSnap, fromHash any
	if err := json.Unmarshal(snap, &fromSnap); err != nil {
		t.Fatalf("snapshot is not JSON: %v", err)
	}
	if err := json.Unmarshal(appendJSON(nil, s.doc, true), &fromHash); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromSnap, fromHash) {
		t.Error("snapshot and hashed document differ")
	}
	states := fromSnap.(map[string]any)["states"].(map[string]any)
	if len(states) != 5 || states["intake"].(map[string]any)["triggers"].(map[string]any)["manual"].(map[string]any)["session"] != "vendor_id" {
		t.Errorf("states = %v", states)
	}
	if got := string(mustParse(t, "states:\n  a:\n    triggers: { manual: }\n    transitions: []\n").SnapshotJSON()); got !=
		"{\n  \"states\": {\n    \"a\": {\n      \"triggers\": {\n        \"manual\": null\n      },\n      \"transitions\": []\n    }\n  }\n}" {
		t.Errorf("snapshot =\n%s", got)
	}
}

func BenchmarkParse(b *testing.B) {
	src := []byte(appendixA(b))
	b.ReportAllocs()
	for b.Loop() {
		if _, diags := Parse("workflow.yaml", src); len(diags) > 0 {
			b.Fatal(diags)
		}
	}
}

// Issue 10 "Bad input": hostile documents end in bounded time with a clear, located
// diagnostic and never a panic — non-UTF-8 bytes, nesting past the parser's depth, and the
// YAML 1.1 booleans that YAML 1.2 (§2.13 rule 2) reads as plain strings used as state names.
func TestHostileInput(t *testing.T) {
	for _, tc := range []struct {
		name, src, code, msg string
		line                 int
	}{
		{"invalid UTF-8 byte", "title: caf\xe9\nstates:\n  a:\n    triggers: { manual: }\n", "yaml.encoding", "byte 0xe9 at line 1, column 11", 1},
		{"invalid UTF-8 in a key", "states:\n  \xc3\x28:\n    triggers: { manual: }\n", "yaml.encoding", "byte 0xc3 at line 2, column 3", 2},
		{"deep flow nesting", "title: " + strings.Repeat("[", 200_000) + "\n", "yaml.syntax", "exceeded max depth", 0},
		{"deep flow mappings", "metadata: " + strings.Repeat("{a: ", 50_000) + "\n", "yaml.syntax", "exceeded max depth", 0},
		{"unterminated quote", "title: \"open\nstates: {}\n", "yaml.syntax", "found unexpected end of stream", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, diags := Parse("workflow.yaml", []byte(tc.src))
			if s != nil || len(diags) != 1 {
				t.Fatalf("spec %v, diagnostics %+v", s != nil, diags)
			}
			d := diags[0]
			if d.Code != tc.code || !strings.Contains(d.Message, tc.msg) || d.Line != tc.line || d.File != "workflow.yaml" {
				t.Errorf("%+v", d)
			}
		})
	}
	s, diags := Parse("workflow.yaml", []byte("states:\n  on:\n    triggers: { manual: }\n    transitions:\n      - { to: \"no\", description: Go. }\n  no:\n    transitions:\n      - { to: y, description: Go. }\n  y: {}\n"))
	if len(diags) != 0 || s.State("on") == nil || s.State("no") == nil || s.State("y") == nil {
		t.Errorf("on/no/y as state names: %+v", diags)
	}
}

// V10-8: a schema finding spoils only what it covers — an unknown key nothing, an absolute
// guard its own entry — so one run still reports the rest of the same state (issue 10: "all
// its problems in one run"); a state whose type cannot be read is left alone.
func TestValidateSpecReportsBesideSchemaErrors(t *testing.T) {
	src := `instructions: X.
states:
  a:
    colour: red
    triggers:
      manual:
        channel: slack
    instructions: A.
    on_error: ghost
    requires: [x, x]
    tools:
      allow:
        - "*"
        - { tool: write_file, paths: ["/abs"] }
    transitions:
      - to: b
        descripton: typo
      - to: nowhere
        description: Gone.
      - to: b
        description: Again.
  b:
    type: persn
    instructions: B.
    transitions:
      - to: nowhere-either
        description: Never said.
`
	v := ValidateSpec("workflow.yaml", []byte(src))
	var got []string
	for _, d := range v.Diagnostics {
		got = append(got, d.Code+"@"+d.Field)
	}
	all := strings.Join(got, " ")
	for _, want := range []string{
		"schema.unknown-key@states.a", "tools.guard-absolute@states.a.tools.allow.1.paths.0",
		"schema.unknown-key@states.a.transitions.0", "transition.description-required@states.a.transitions.0.description",
		"transition.unknown-target@states.a.transitions.1.to", "transition.duplicate-target@states.a.transitions.2.to",
		"state.on-error-unknown@states.a.on_error", "tools.wildcard-grant@", "trigger.unknown-key@states.a.triggers.manual.channel",
		"state.requires-duplicate@states.a.requires", "state.type-invalid@states.b.type",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("lacks %s:\n%s", want, strings.Join(got, "\n"))
		}
	}
	if strings.Contains(all, "nowhere-either") || strings.Contains(all, "state.unreachable") {
		t.Errorf("a guess about the unreadable state b or the graph:\n%s", strings.Join(got, "\n"))
	}
}
