package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A case with no model script, run without --bedrock, is counted under its own heading —
// not as a failure: the suite passes when the others do, and --json reports it skipped with
// what it needs. A case that fails still fails beside it.
func TestCaseWithoutAModelScriptHasItsOwnHeading(t *testing.T) {
	dir := t.TempDir()
	if err := copyWorkspace(dir, ws); err != nil {
		t.Fatal(err)
	}
	tests := filepath.Join(dir, "workflows", "access-request", "tests")
	src, err := os.ReadFile(filepath.Join(tests, "happy-path.test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tests, "no-script.test.yaml"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(envModel, "")
	t.Setenv(envModelScript, "")

	code, out, errs := run(t, "test", "--workspace", dir, "access-request")
	if code != exitOK || !strings.HasSuffix(out, " passed, 0 failed, 0 skipped, 1 need a model\n") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	for _, want := range []string{
		"○ needs a model no-script\n    case 'no-script' needs a model: add workflows/access-request/tests/no-script.model.yaml beside it",
		"needs a model (1): add <case>.model.yaml beside each to run it offline, or run with --bedrock (Amazon Bedrock)\n  workflows/access-request/tests/no-script.test.yaml\n",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	if strings.Contains(errs, "✗ failed no-script") {
		t.Errorf("counted as a failure:\n%s", errs)
	}

	code, out, _ = run(t, "test", "--workspace", dir, "--json", "access-request")
	var res struct {
		Results []struct {
			ID         string `json:"id"`
			SkipReason string `json:"skipReason"`
			Error      string `json:"error"`
			Verdict    struct{ Status string }
		}
		ExitCode int `json:"exitCode"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != exitOK || res.ExitCode != 0 {
		t.Fatalf("--json: exit %d %v\n%s", code, err, out)
	}
	for _, r := range res.Results {
		if r.ID == "no-script" && (r.Verdict.Status != "skipped" || !strings.HasPrefix(r.SkipReason, "needs a model: add ") || r.Error != "") {
			t.Errorf("no-script: %+v", r)
		}
	}

	// a failing case beside it still fails the suite
	if err := os.WriteFile(filepath.Join(tests, "happy-path.model.yaml"), []byte("agent: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := run(t, "test", "--workspace", dir, "access-request"); code != exitFail || !strings.Contains(out, " 1 failed, 0 skipped, 1 need a model") {
		t.Errorf("with a failure: exit %d %s %s", code, out, errs)
	}
}

// With --json a suite that cannot run, or a filter that matches nothing, is one error record
// on stdout (in place of the result object).
func TestSuiteFailuresAreRecordsWithJSON(t *testing.T) {
	dir := t.TempDir()
	if err := copyWorkspace(dir, ws); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "test", "--workspace", dir, "--json", "access-request", "no-such-case")
	if got, _, details := errorLine(t, strings.TrimSpace(out)); code != exitFail || got != "NoCasesMatchedError" || details["hint"] == nil ||
		!strings.Contains(errs, "archmax: no cases matched 'no-such-case'") {
		t.Errorf("no match: exit %d %s %s", code, out, errs)
	}
	if code, out, _ := run(t, "test", "--workspace", dir, "access-request", "no-such-case"); code != exitFail || out != "" {
		t.Errorf("no match without --json: exit %d %q", code, out)
	}
	wf := filepath.Join(dir, "workflows", "access-request", "workflow.yaml")
	if err := os.WriteFile(wf, []byte("statez: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ = run(t, "test", "--workspace", dir, "--json", "access-request")
	if got, _, _ := errorLine(t, strings.TrimSpace(out)); code != exitFail || got == "" {
		t.Errorf("suite error: exit %d %s", code, out)
	}
}
