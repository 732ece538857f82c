package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The reference CLI's documented command lines, run unchanged against copies of the
// customer-support fixture shaped for them: the reply on stdout, the narration on stderr,
// the model named by the environment (ARCHMAX_MODEL_SCRIPT, or the workspace's .env).

const supportWS = "../../../fixtures/customer-support"

// supportCopy copies the customer-support workspace into a temp dir, keeping only the named
// workflows when any are given, and makes it the working directory (the reference CLI's
// default root).
func supportCopy(t *testing.T, only ...string) string {
	t.Helper()
	dir := t.TempDir()
	if err := copyWorkspace(dir, supportAbs); err != nil {
		t.Fatal(err)
	}
	if len(only) > 0 {
		entries, _ := os.ReadDir(filepath.Join(dir, "workflows"))
		for _, e := range entries {
			keep := false
			for _, o := range only {
				keep = keep || e.Name() == o
			}
			if !keep {
				if err := os.RemoveAll(filepath.Join(dir, "workflows", e.Name())); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	t.Chdir(dir)
	return dir
}

// The enrich-order header's command line: `archmax run enrich-order --variables '{…}' PROMPT…`,
// the model from the workspace's .env; and with WORKFLOW left out in a one-workflow workspace.
func TestReferenceRunWithVariables(t *testing.T) {
	dir := supportCopy(t, "enrich-order")
	if err := os.WriteFile(filepath.Join(dir, ".env"), []byte("ARCHMAX_MODEL_SCRIPT=model-scripts/enrich-one.model.yaml\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(envModelScript, "")
	os.Unsetenv(envModelScript)
	for _, args := range [][]string{
		{"run", "enrich-order", "--variables", `{"order_id":"ORD-1003"}`, "Enrich", "the", "order"},
		{"run", "--variables", `{"order_id":"ORD-1003"}`, "Enrich the order"}, // the only workflow
	} {
		code, out, errs := run(t, args...)
		if code != exitOK || out != "ORD-1003 (Acme Corp) is delayed.\n" {
			t.Fatalf("%v: exit %d\nstdout %q\nstderr %s", args, code, out, errs)
		}
		for _, want := range []string{"· workflow enrich-order", "→ enrich", "⚙ write_file scratchpad/enrichment/ORD-1003.json", "✔ completed in enrich"} {
			if !strings.Contains(errs, want) {
				t.Errorf("stderr lacks %q:\n%s", want, errs)
			}
		}
	}
	// the process environment wins over .env: a script that does not exist is what runs
	t.Setenv(envModelScript, "nope.model.yaml")
	if code, _, errs := run(t, "run", "enrich-order", "--variables", `{"order_id":"ORD-1003"}`, "x"); code != exitFail || !strings.Contains(errs, "nope.model.yaml") {
		t.Errorf("process env over .env: exit %d %s", code, errs)
	}
	// --root names the workspace (and its .env) from elsewhere
	t.Chdir(t.TempDir())
	os.Unsetenv(envModelScript)
	if code, out, errs := run(t, "run", "--root", dir, "--store", filepath.Join(dir, ".archmax"), "--variables", `{"order_id":"ORD-1003"}`, "Enrich"); code != exitOK || out != "ORD-1003 (Acme Corp) is delayed.\n" {
		t.Errorf("--root: exit %d %q %s", code, out, errs)
	}
}

// `archmax run … --session S`, then `archmax deliver S --trigger email_reply --variables …`; and
// the same delivery reached through the trigger's session path from `archmax run --trigger`.
func TestReferenceDeliverWithVariables(t *testing.T) {
	supportCopy(t)
	t.Setenv(envModelScript, filepath.Join(supportAbs, "model-scripts", "clarify.model.yaml"))

	code, out, errs := run(t, "run", "order-lookup", "--session", "conv-7", "support@acmecorp.com:", "our", "parcel", "never", "came.")
	if code != exitOK || out != "Which order is it? Please reply with its ORD- number.\n" {
		t.Fatalf("run: exit %d %q\n%s", code, out, errs)
	}
	if !strings.Contains(errs, "⏸ awaiting input in clarify") || !strings.Contains(errs, "archmax deliver conv-7 --trigger <id>") {
		t.Errorf("park report:\n%s", errs)
	}
	code, out, errs = run(t, "deliver", "conv-7", "--trigger", "email_reply", "--variables", `{"conversation_id":"conv-7","reply_text":"It is ORD-1003."}`)
	if code != exitOK || out != "ORD-1003 is delayed; it has not shipped yet.\n" || !strings.Contains(errs, "✔ completed in orders-question (turn 2)") {
		t.Fatalf("deliver: exit %d %q\n%s", code, out, errs)
	}

	// the positional form, and a run whose trigger's session path finds the parked session
	if code, _, errs := run(t, "run", "order-lookup", "--session", "conv-8", "support@acmecorp.com: our parcel never came."); code != exitOK {
		t.Fatalf("run conv-8: exit %d %s", code, errs)
	}
	code, out, errs = run(t, "run", "order-lookup", "--trigger", "email_reply", "--variables", `{"conversation_id":"conv-8","reply_text":"ORD-1003"}`, "It", "is", "ORD-1003.")
	if code != exitOK || out != "ORD-1003 is delayed; it has not shipped yet.\n" || !strings.Contains(errs, "session conv-8 ·") {
		t.Fatalf("run by session path: exit %d %q\n%s", code, out, errs)
	}
	if code, _, errs := run(t, "deliver", "conv-8", "email_reply"); code != exitFail || !strings.Contains(errs, "conv-8") {
		t.Errorf("deliver to a finished session: exit %d %s", code, errs)
	}
}

// `archmax reply S "any news?"` on a session parked at a human state, `archmax decide S --to
// STATE`, and `archmax sessions` (table, one session, --json) around them.
func TestReferenceReplyDecideAndSessions(t *testing.T) {
	supportCopy(t)
	t.Setenv(envModelScript, filepath.Join(supportAbs, "model-scripts", "refund-review.model.yaml"))

	code, out, errs := run(t, "run", "order-lookup", "--session", "r-1", "support@acmecorp.com", "here.", "Please refund ORD-1003, it is weeks late.")
	if code != exitOK || out != "Your refund request is with our finance team for a final check.\n" {
		t.Fatalf("run: exit %d %q\n%s", code, out, errs)
	}
	if !strings.Contains(errs, "⏸ awaiting a decision in refund-review (park p") || !strings.Contains(errs, "archmax decide r-1 --to <refund-closed|refund-request>") ||
		!strings.Contains(errs, "archmax reply r-1 <message…>") {
		t.Errorf("park report:\n%s", errs)
	}

	code, out, errs = run(t, "reply", "r-1", "any news?")
	if code != exitOK || out != "Not yet — finance is still reviewing your refund of ORD-1003.\n" ||
		!strings.Contains(errs, "Session r-1 is still parked at the 'refund-review' human state — a decision is pending.") {
		t.Fatalf("reply: exit %d %q\n%s", code, out, errs)
	}
	if code, _, errs := run(t, "reply", "r-1"); code != exitUsage || !strings.Contains(errs, "a message is required") {
		t.Errorf("empty reply: exit %d %s", code, errs)
	}

	// the table, one session in full with the park's evidence, and the HTTP API's summary
	code, out, _ = run(t, "sessions")
	if code != exitOK || !strings.HasPrefix(out, "SESSION") || !strings.Contains(out, "r-1") ||
		!regexpMatch(`r-1\s+order-lookup\s+awaiting_decision \(open\)\s+refund-review\s+\S+\s+decision in refund-review: refund-closed\|refund-request`, out) {
		t.Errorf("sessions table:\n%s", out)
	}
	code, out, _ = run(t, "sessions", "r-1")
	for _, want := range []string{
		"status", "awaiting_decision (open)", "awaiting a decision in refund-review (park p",
		"  → refund-closed [approve] — The decision is right; close the case.",
		"  evidence scratchpad/refund.json", `    { "orderId": "ORD-1003", "decision": "approved"`,
		"variables\n  trigger (locked) = \"manual\"",
		"trail\n  1. trigger → screen-request", "code → refund-review: \"approved\" for ORD-1003 matches the refund policy.",
		"transcript (messages 1–", "user: support@acmecorp.com here. Please refund ORD-1003, it is weeks late.",
	} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("sessions r-1 lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = run(t, "sessions", "r-1", "--json")
	var sum map[string]any
	if err := json.Unmarshal([]byte(out), &sum); err != nil || code != exitOK || sum["sessionId"] != "r-1" || sum["status"] != "awaiting_decision" ||
		sum["workflowState"] != "refund-review" || sum["pending"] == nil {
		t.Errorf("sessions --json: exit %d %v\n%s", code, err, out)
	}

	code, out, errs = run(t, "decide", "r-1", "--to", "refund-closed", "--comment", "Policy followed.", "--workflow", "order-lookup")
	if code != exitOK || out != "Confirmed — ORD-1003 is delayed and your refund is approved.\n" || !strings.Contains(errs, "✔ completed in refund-closed (turn 3)") {
		t.Fatalf("decide: exit %d %q\n%s", code, out, errs)
	}
	if code, _, errs := run(t, "reply", "r-1", "thanks"); code != exitFail || !strings.Contains(errs, "r-1") {
		t.Errorf("reply to a finished session: exit %d %s", code, errs)
	}
	if code, _, errs := run(t, "decide", "r-1", "--to", "refund-closed", "--workflow", "enrich-order"); code != exitFail || !strings.Contains(errs, "belongs to workflow 'order-lookup', not 'enrich-order'") {
		t.Errorf("--workflow mismatch: exit %d %s", code, errs)
	}
	code, out, _ = run(t, "sessions", "--json", "--workflow", "order-lookup")
	var list []map[string]any
	if err := json.Unmarshal([]byte(out), &list); err != nil || code != exitOK || len(list) != 1 || list[0]["status"] != "completed" {
		t.Errorf("sessions --json list: exit %d %v\n%s", code, err, out)
	}
	if code, _, errs := run(t, "sessions", "nobody"); code != exitFail || !strings.Contains(errs, "no session 'nobody'") {
		t.Errorf("unknown session: exit %d %s", code, errs)
	}
}

// The workflow argument: optional with exactly one workflow, a usage error naming them with
// several; `-` and --message-file read the prompt; --variables must be a JSON object;
// --version on every command; validate's and test's reference --json shapes.
func TestReferenceArgumentsAndShapes(t *testing.T) {
	dir := supportCopy(t)
	t.Setenv(envModelScript, filepath.Join(supportAbs, "model-scripts", "enrich-one.model.yaml"))
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"run"}, "a workflow is required; this workspace has several: enrich-order, order-lookup, order-status"},
		{[]string{"test"}, "a workflow is required; this workspace has several: enrich-order, order-lookup, order-status"},
		{[]string{"run", "enrich-order", "--variables", "[1]", "x"}, "--variables must be a JSON object"},
		{[]string{"run", "enrich-order", "--variables", "{", "x"}, "--variables is not valid JSON"},
		{[]string{"run", "enrich-order", "--variables", `{"a":1}`, "--var", "a=2", "x"}, "variable 'a' is given by both"},
		{[]string{"run", "enrich-order"}, "a prompt is required"},
		{[]string{"run", "enrich-order", "--message-file", "m.txt", "x"}, "mutually exclusive"},
		{[]string{"decide", "s-1", "a", "--to", "b"}, "the target is given twice"},
		{[]string{"deliver", "s-1"}, "--trigger ID is required"},
	} {
		if code, _, errs := run(t, c.args...); code != exitUsage || !strings.Contains(errs, c.msg) {
			t.Errorf("%v: exit %d, stderr %q (want %q)", c.args, code, errs, c.msg)
		}
	}
	stdin = strings.NewReader("Enrich the order\n")
	t.Cleanup(func() { stdin = os.Stdin })
	if code, out, errs := run(t, "run", "enrich-order", "--variables", `{"order_id":"ORD-1003"}`, "-"); code != exitOK || out != "ORD-1003 (Acme Corp) is delayed.\n" {
		t.Errorf("prompt from stdin: exit %d %q %s", code, out, errs)
	}
	if err := os.WriteFile(filepath.Join(dir, "m.txt"), []byte("Enrich the order"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := run(t, "run", "enrich-order", "--variables", `{"order_id":"ORD-1003"}`, "--message-file", "m.txt"); code != exitOK || out != "ORD-1003 (Acme Corp) is delayed.\n" {
		t.Errorf("--message-file: exit %d %q %s", code, out, errs)
	}
	for _, cmd := range []string{"run", "decide", "deliver", "reply", "sessions", "validate", "test", "graph", "serve"} {
		if code, out, _ := run(t, cmd, "--version"); code != exitOK || !strings.HasPrefix(out, "archmax ") || !strings.Contains(out, "@archmax-ai/harness 1.0") {
			t.Errorf("%s --version: exit %d %q", cmd, code, out)
		}
	}

	code, out, errs := run(t, "validate", "order-lookup", "--json")
	var rep struct {
		Workflow    string            `json:"workflow"`
		Valid       bool              `json:"valid"`
		Diagnostics []json.RawMessage `json:"diagnostics"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != exitOK || rep.Workflow != "order-lookup" || !rep.Valid || rep.Diagnostics == nil {
		t.Errorf("validate --json: exit %d %v\n%s%s", code, err, out, errs)
	}
	if code, out, _ := run(t, "validate", "order-lookup"); code != exitOK || out != "valid — 0 error(s), 0 warning(s)\n" {
		t.Errorf("validate: exit %d %q", code, out)
	}
	code, out, _ = run(t, "validate", "--json")
	var reps []map[string]any
	if err := json.Unmarshal([]byte(out), &reps); err != nil || code != exitOK || len(reps) != 3 {
		t.Errorf("validate --json of several: exit %d %v\n%s", code, err, out)
	}
	code, out, errs = run(t, "test", "enrich-order", "--json")
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != exitOK || res["workflow"] != "enrich-order" || res["exitCode"] != float64(0) ||
		res["discovered"] != float64(1) || res["results"] == nil {
		t.Errorf("test --json: exit %d %v\n%s%s", code, err, out, errs)
	}
}

// Every case of the seed-script workspace passes offline under --strict: the 1.0 documents'
// code-state and agent scripts, as written, move the sessions where the documents say.
func TestSeedScriptCasesPass(t *testing.T) {
	for _, wf := range []string{"order-lookup", "enrich-order"} {
		code, out, errs := run(t, "test", "--strict", "--workspace", supportWS, wf)
		if code != exitOK || strings.Contains(out, " 0 passed") || !strings.HasSuffix(out, " 0 failed, 0 skipped\n") {
			t.Errorf("%s: exit %d %q\n%s", wf, code, out, errs)
		}
	}
}

// supportAbs is supportWS resolved before any test changes the working directory.
var supportAbs = func() string {
	abs, err := filepath.Abs(supportWS)
	if err != nil {
		panic(err)
	}
	return abs
}()

func regexpMatch(pattern, s string) bool { return regexp.MustCompile(pattern).MatchString(s) }

// A code-state script path that leaves the workflow's scripts/ (V-07) is reported once, as
// what it is, beside the workflow's other real findings: nothing is read through it.
func TestValidateEscapingScriptPath(t *testing.T) {
	dir := t.TempDir()
	for p, src := range map[string]string{
		"workflows/wf/workflow.yaml": "states:\n  check:\n    type: code\n    script: scripts/../../other/scripts/x.js\n    triggers:\n      manual:\n" +
			"    transitions:\n      - to: nowhere\n        description: Go.\n",
		"workflows/other/workflow.yaml":     "states:\n  a:\n    instructions: A.\n",
		"workflows/other/scripts/x.js":      "import fs from \"node:fs\";\n",
		"workflows/wf/scripts/unrelated.js": "export default async () => {};\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs := run(t, "validate", "--workspace", dir, "--json", "wf")
	var rep struct {
		Diagnostics []struct{ Code, Field string }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != exitFail {
		t.Fatalf("exit %d %v\n%s%s", code, err, out, errs)
	}
	var got []string
	for _, d := range rep.Diagnostics {
		got = append(got, d.Code+" "+d.Field)
	}
	want := "spec.instructions-missing instructions|state.no-terminal-path states.check|code.script-path states.check.script|" +
		"transition.unknown-target states.check.transitions.0.to"
	if strings.Join(got, "|") != want {
		t.Errorf("findings = %q\nwant       %q\n%s", got, want, errs)
	}
}

// Fresh-eyes findings on the reference surface: sessions stay with the workspace whatever the
// working directory; a command is required and an unknown help topic is a usage error; a
// filter that matches nothing prints nothing on stdout; validate infers the one workflow;
// a resume that parks again says where; the terminal never gets a model's control codes.
func TestReferenceEdges(t *testing.T) {
	dir := supportCopy(t)
	t.Setenv(envModelScript, filepath.Join(supportAbs, "model-scripts", "refund-review.model.yaml"))

	// run with --root from elsewhere, answer it from the workspace: one store, under the root
	t.Chdir(t.TempDir())
	if code, _, errs := run(t, "run", "--root", dir, "order-lookup", "--session", "r-9", "support@acmecorp.com here. Please refund ORD-1003, it is weeks late."); code != exitOK {
		t.Fatalf("run --root: exit %d %s", code, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, ".archmax")); err != nil {
		t.Errorf("the store is not under the workspace: %v", err)
	}
	if code, out, _ := run(t, "sessions", "--root", dir); code != exitOK || !strings.Contains(out, "r-9") {
		t.Errorf("sessions --root: exit %d\n%s", code, out)
	}
	t.Chdir(dir)
	if code, out, errs := run(t, "sessions"); code != exitOK || !strings.Contains(out, "r-9") {
		t.Errorf("sessions from the root: exit %d\n%s%s", code, out, errs)
	}
	if code, out, _ := run(t, "sessions", "--root", t.TempDir()); code != exitOK || out != "No durable sessions found.\n" {
		t.Errorf("an empty store: exit %d %q", code, out)
	}

	// a resume that parks again prints where it stands, never the message (the reference)
	code, out, errs := run(t, "decide", "r-9", "--to", "refund-request", "--comment", "Check the status again.")
	if code != exitOK || out != "Session r-9 parked at the 'refund-review' human state.\n" || !strings.Contains(errs, "💬 Your corrected refund request is back with finance.") {
		t.Errorf("a decision that parks again: exit %d %q\n%s", code, out, errs)
	}

	if code, out, errs := run(t); code != exitUsage || out != "" || !strings.Contains(errs, "a command is required") {
		t.Errorf("no command: exit %d %q %q", code, out, errs)
	}
	if code, _, errs := run(t, "help", "nope"); code != exitUsage || !strings.Contains(errs, `unknown command "nope"`) {
		t.Errorf("help nope: exit %d %q", code, errs)
	}
	if code, out, _ := run(t, "help", "sessions"); code != exitOK || !strings.Contains(out, "archmax sessions") {
		t.Errorf("help sessions: exit %d %q", code, out)
	}
	if code, out, errs := run(t, "test", "order-lookup", "no-such-case"); code != exitFail || out != "" || !strings.Contains(errs, "no cases matched 'no-such-case' (9 discovered)") {
		t.Errorf("a filter matching nothing: exit %d %q %q", code, out, errs)
	}
	if code, _, errs := run(t, "run", "Which", "orders", "are", "delayed?"); code != exitUsage || !strings.Contains(errs, "this workspace has several: enrich-order, order-lookup, order-status") {
		t.Errorf("a prompt without its workflow: exit %d %q", code, errs)
	}
	if code, _, errs := run(t, "run", "--root", filepath.Join(dir, "nope"), "hi"); code != exitUsage || !strings.Contains(errs, "nope") || strings.Contains(errs, "prompt") {
		t.Errorf("a missing workspace: exit %d %q", code, errs)
	}

	// validate infers the one workflow; a folder without workflow.yaml is no workflow
	one := supportCopy(t, "enrich-order")
	if err := os.MkdirAll(filepath.Join(one, "workflows", "notes"), 0o755); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := run(t, "validate"); code != exitOK || out != "valid — 0 error(s), 0 warning(s)\n" || !strings.Contains(errs, "workflows/notes/ holds no workflow.yaml") {
		t.Errorf("validate in a one-workflow workspace: exit %d %q %q", code, out, errs)
	}
}

// Text a model writes reaches the narration and the session view escaped, never as
// terminal control sequences; the reply on stdout stays as written.
func TestCleanEscapesControls(t *testing.T) {
	for in, want := range map[string]string{
		"plain\ttext\n":           "plain\ttext\n",
		"red \x1b[31mtext\x1b[0m": `red \u001B[31mtext\u001B[0m`,
		"bell\x07":                `bell\u0007`,
		"csi\u009b2J":             `csi\u009B2J`,
		"rtl \u202etxt":           `rtl \u202Etxt`,
		"bad \xff byte":           `bad \uFFFD byte`,
		"a real \ufffd stays":     "a real \ufffd stays",
	} {
		if got := clean(in); got != want {
			t.Errorf("clean(%q) = %q, want %q", in, got, want)
		}
	}
}
