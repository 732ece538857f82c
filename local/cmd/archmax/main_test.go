package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const ws = "../../../fixtures/access-desk"

// run executes the CLI in process; what its .env loading set in the environment is undone.
func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	saved := os.Environ()
	defer func() {
		os.Clearenv()
		for _, kv := range saved {
			k, v, _ := strings.Cut(kv, "=")
			_ = os.Setenv(k, v)
		}
	}()
	var out, errb bytes.Buffer
	code := execute(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestRunPrintsTheFlowAndTheOutcome(t *testing.T) {
	store := t.TempDir()
	code, out, errs := run(t, "run", "--workspace", ws, "--store", store, "--session", "cli-1",
		"--model-script", ws+"/model-scripts/happy.model.yaml",
		"access-request", "Hi, I'm Dana from the platform team. I need badge access to the east lab, please.")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %s", code, errs)
	}
	// the narration on stderr, the reply alone on stdout (the reference CLI's streams)
	for _, want := range []string{
		"session cli-1 · workflow access-request",
		"→ screen", "│ requested area: east-lab (standard)",
		"⇢ screen → check-grants: East Lab is a standard area; check the requester's team",
		"→ check-grants", "⚙ read_file skills/access-policy/assets/grants.json",
		"→ approve", "✔ completed in approve (turn 1)", "usage: in 12640 · out 177",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	if out != "Approved — your badge will open the East Lab within the hour, Dana.\n" {
		t.Errorf("stdout = %q", out)
	}
}

func TestRunRefusedToolShowsTheRefusal(t *testing.T) {
	code, _, out := run(t, "run", "--workspace", ws, "--store", t.TempDir(),
		"--model-script", ws+"/model-scripts/refused-tool.model.yaml",
		"access-request", "Hi, I'm Dana from the platform team. I need badge access to the east lab, please.")
	if code != exitOK || !strings.Contains(out, "⛔ write_file refused (tool.forbidden-here)") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

func TestRunJSONLines(t *testing.T) {
	code, out, _ := run(t, "run", "--json", "--workspace", ws, "--store", t.TempDir(),
		"--model-script", ws+"/model-scripts/declined.model.yaml",
		"access-request", "This is Ravi from finance, I need access to the west lab.")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var last map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil {
		t.Fatal(err)
	}
	if last["type"] != "outcome" || last["kind"] != "completed" || last["state"] != "decline" {
		t.Errorf("outcome line = %v", last)
	}
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Errorf("not a JSON line: %q", l)
		}
	}
}

func TestRunExitCodes(t *testing.T) {
	cases := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"missing message", []string{"run", "--workspace", ws, "access-request"}, exitUsage, "a prompt is required"},
		{"unknown flag", []string{"run", "--frobnicate", "access-request", "hi"}, exitUsage, "unknown flag"},
		{"no model", []string{"run", "--workspace", ws, "access-request", "hi"}, exitUsage, "choose the model"},
		{"bad var", []string{"run", "--var", "Bad=1", "--workspace", ws, "--model-script", "x", "access-request", "hi"}, exitUsage, "not a valid variable name"},
		{"unknown workflow", []string{"run", "--workspace", ws, "--store", t.TempDir(), "--model-script", ws + "/model-scripts/happy.model.yaml", "nope", "hi"}, exitFail, "No workflow.yaml found for workflow 'nope'"},
		{"unknown command", []string{"frob"}, exitUsage, "unknown command"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, errs := run(t, c.args...)
			if code != c.code || !strings.Contains(errs, c.msg) {
				t.Errorf("exit %d (want %d), stderr %q (want %q)", code, c.code, errs, c.msg)
			}
		})
	}
}

// A call the runtime refuses exits 1: an undeclared trigger cannot open a new session.
func TestRunRefusedCallExitsOne(t *testing.T) {
	code, out, _ := run(t, "run", "--workspace", ws, "--store", t.TempDir(),
		"--model-script", ws+"/model-scripts/happy.model.yaml", "--trigger", "email",
		"access-request", "hi")
	if code != exitFail {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

func TestParseVars(t *testing.T) {
	vars, err := parseVars([]string{"n=3", "s=hello", "o={\"a\":[1]}", "q=\"x\""})
	if err != nil {
		t.Fatal(err)
	}
	if vars["n"] != float64(3) || vars["s"] != "hello" || vars["q"] != "x" {
		t.Errorf("vars = %v", vars)
	}
	if _, ok := vars["o"].(map[string]any); !ok {
		t.Errorf("o = %#v", vars["o"])
	}
	if _, err := parseVars([]string{"novalue"}); err == nil {
		t.Error("NAME without '=' must be refused")
	}
}

func TestRunUsageChecks(t *testing.T) {
	cases := []struct {
		name, msg string
		args      []string
	}{
		{"bad slug", "is not hyphen-separated kebab-case", []string{"run", "--model-script", "x", "Bad_Slug", "hi"}},
		{"bad session id", "Invalid session id", []string{"run", "--model-script", "x", "--session", "a/b", "access-request", "hi"}},
		{"two models", "mutually exclusive", []string{"run", "--model-script", "x", "--bedrock", "access-request", "hi"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, errs := run(t, c.args...)
			if code != exitUsage || !strings.Contains(errs, c.msg) || !strings.Contains(errs, "archmax run --help") {
				t.Errorf("exit %d, stderr %q", code, errs)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	code, out, errs := run(t, "validate", "--workspace", ws)
	if code != exitOK || !strings.Contains(errs, "no problems found") || !strings.Contains(out, "access-request: valid — 0 error(s), 0 warning(s)\n") {
		t.Fatalf("fixture workspace: exit %d\n%s%s", code, out, errs)
	}
	dir := t.TempDir()
	write := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("workflows/bad/workflow.yaml", "states:\n  a:\n    triggers:\n      manual:\n    colour: red\n    transitions:\n      - to: nowhere\n        description: go\n  b:\n    type: code\n    script: scripts/b.js\n")
	write("workflows/bad/scripts/b.js", "\nimport fs from \"fs\";\n")
	code, summary, out := run(t, "validate", "--workspace", dir, "bad")
	if code != exitFail || !strings.HasPrefix(summary, "invalid — ") {
		t.Fatalf("exit %d\n%s%s", code, summary, out)
	}
	for _, want := range []string{
		`workflows/bad/workflow.yaml:5:5: error schema.unknown-key: Unrecognized key: "colour"`,
		"workflows/bad/scripts/b.js:2:",
		"script.foreign-import",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = run(t, "validate", "--json", "--workspace", dir, "bad")
	var rep struct {
		Workflow    string           `json:"workflow"`
		Valid       *bool            `json:"valid"`
		Diagnostics []map[string]any `json:"diagnostics"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != exitFail || rep.Workflow != "bad" || rep.Valid == nil || *rep.Valid || len(rep.Diagnostics) < 2 {
		t.Errorf("json: exit %d, %v\n%s", code, err, out)
	}
}

// The exception-request fixture (issue 7): a check-behind code state that sends the note
// back with what is missing and escalates after two rounds (counted on the trail), and a
// grader that reads the note and approves or sends it back — driven end to end by the CLI.
func TestExceptionRequestFixture(t *testing.T) {
	const msg = "I need weekend access to the east lab for the data-centre migration."
	for _, tc := range []struct {
		script string
		want   []string
	}{
		{"exception-approved", []string{
			"⇢ check-sections → security-review: the note has every required section",
			"⚙ read_file [grader] scratchpad/exception.md",
			"⇢ security-review → file: The migration is a business reason and 31 March is the end date.",
			"✔ completed in file (turn 1)"}},
		{"exception-sent-back", []string{
			"⇢ security-review → draft: The justification has no end date; add when the exception ends.",
			"⇢ draft → check-sections: Added the end date.",
			"⇢ security-review → file: Business reason and end date (31 March) are both given.",
			"✔ completed in file (turn 1)"}},
		{"exception-escalated", []string{
			"│ missing: Why; sent back 0 time(s) before",
			"⇢ check-sections → draft: add the missing section(s): Why",
			"│ missing: Why; sent back 2 time(s) before",
			"⇢ check-sections → escalate: the note still lacks Why after two rounds",
			"✔ completed in escalate (turn 1)"}},
	} {
		t.Run(tc.script, func(t *testing.T) {
			code, errs, out := run(t, "run", "--workspace", ws, "--store", t.TempDir(),
				"--model-script", ws+"/model-scripts/"+tc.script+".model.yaml", "exception-request", msg)
			if code != exitOK {
				t.Fatalf("exit %d: %s\n%s", code, errs, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// Issue 10 acceptance: `archmax validate` on a broken copy of a fixture reports all its
// problems in one run — schema, lint, graph, script, delegation and case findings — each as
// file:line:col: severity code: message with a hint; exit 1; exit 2 for a missing workspace.
func TestValidateBrokenFixtureCopy(t *testing.T) {
	dir := t.TempDir()
	if err := copyWorkspace(dir, ws); err != nil {
		t.Fatal(err)
	}
	edit := func(p, old, new string) {
		t.Helper()
		f := filepath.Join(dir, p)
		b, err := os.ReadFile(f)
		if err != nil || !strings.Contains(string(b), old) {
			t.Fatalf("%s lacks %q (%v)", p, old, err)
		}
		if err := os.WriteFile(f, []byte(strings.Replace(string(b), old, new, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const wfFile = "workflows/exception-request/workflow.yaml"
	edit(wfFile, "    summary: Checks", "    instructions: Check it.\n    summary: Checks")                                                         // V-08 (lint error)
	edit(wfFile, "    type: grader\n", "    type: grader\n    colour: red\n")                                                                       // V-01 (schema); nothing else is said of this state
	edit(wfFile, "      - to: draft\n        description: A section is missing", "      - to: drafts\n        description: A section is missing")   // V-16 (document rule; reported beside the schema error)
	edit(wfFile, "states:\n  draft:\n", "states:\n  orphan:\n    instructions: Nobody comes here.\n  draft:\n")                                     // P-17 (graph)
	edit("workflows/exception-request/scripts/check-sections.js", "const REQUIRED", "import fs from \"node:fs\";\nconst REQUIRED")                  // V-23
	edit("workflows/exception-request/tests/form-start-seeded-note.test.yaml", "trigger: { id: exception-form }", "trigger: { id: exception-fax }")
	edit("workflows/badge-desk/workflow.yaml", "- archmax_workflow_badge-check", "- archmax_workflow_badge-audit")                                  // R-22 / V-25

	code, _, out := run(t, "validate", "--workspace", dir)
	if code != exitFail {
		t.Fatalf("exit %d\n%s", code, out)
	}
	for _, want := range []string{
		wfFile + ":41:5: error schema.unknown-key: Unrecognized key: \"colour\" [states.security-review]",
		wfFile + ":35:13: error transition.unknown-target: ",
		wfFile + ":28:5: error code.key-refused: ",
		wfFile + ":7:3: warning state.unreachable: ",
		"workflows/exception-request/scripts/check-sections.js:11:1: error script.foreign-import: ",
		"workflows/exception-request/tests/form-start-seeded-note.test.yaml:9:16: error case.unknown-trigger: ",
		"workflows/badge-desk/workflow.yaml:24:11: error delegation.unknown-workflow: ",
		"    hint: ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if code, _, errs := run(t, "validate", "--workspace", filepath.Join(dir, "nope")); code != exitUsage {
		t.Errorf("missing workspace: exit %d %s", code, errs)
	}
}
