package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The fixture workspace's cases all pass offline (issue 9): every workflow with a tests/
// directory is run through `archmax test` as a user would.
func TestFixtureCasesPass(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join(ws, "workflows", "*", "tests"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no fixture tests: %v", err)
	}
	for _, d := range dirs {
		wf := filepath.Base(filepath.Dir(d))
		t.Run(wf, func(t *testing.T) {
			code, stdout, stderr := run(t, "test", "--workspace", ws, "--json", wf)
			var res struct {
				Results []struct {
					ID      string `json:"id"`
					Verdict struct {
						Status   string   `json:"status"`
						Failures []string `json:"failures"`
					} `json:"verdict"`
				} `json:"results"`
				ExitCode int `json:"exitCode"`
			}
			if err := json.Unmarshal([]byte(stdout), &res); err != nil {
				t.Fatalf("stdout is not the result object: %v\n%s\n%s", err, stdout, stderr)
			}
			if code != 0 || res.ExitCode != 0 || len(res.Results) == 0 {
				t.Errorf("exit %d: %s", code, stderr)
			}
			for _, r := range res.Results {
				if r.Verdict.Status != "passed" {
					t.Errorf("%s: %s %v", r.ID, r.Verdict.Status, r.Verdict.Failures)
				}
			}
		})
	}
}

// spec 04 CE-12, RV-31: the summary line on stdout; a filter that matches nothing fails.
func TestTestCommandFilterAndExitCodes(t *testing.T) {
	code, stdout, _ := run(t, "test", "--workspace", ws, "access-request", "happy-path")
	if code != 0 || strings.TrimSpace(stdout) != "1 passed, 0 failed, 0 skipped" {
		t.Errorf("exit %d, stdout %q", code, stdout)
	}
	code, _, stderr := run(t, "test", "--workspace", ws, "access-request", "no-such-case")
	if code != 1 || !strings.Contains(stderr, "no cases matched 'no-such-case'") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	if code, _, errs := run(t, "test", "--workspace", ws); code != 2 || !strings.Contains(errs, "a workflow is required; this workspace has several: access-request, badge-approval") {
		t.Errorf("a missing WORKFLOW exits %d, want 2: %s", code, errs)
	}
	if _, err := os.Stat(ws); err != nil {
		t.Fatal(err)
	}
}

// spec 04 CD-01b: `archmax validate` reports a case file's schema errors, located.
func TestValidateReportsCaseSchemaErrors(t *testing.T) {
	dir := t.TempDir()
	if err := copyWorkspace(dir, ws); err != nil {
		t.Fatal(err)
	}
	bad := "title: x\nsteps:\n  - reply: { includes: [a] }\n"
	if err := os.WriteFile(filepath.Join(dir, "workflows", "access-request", "tests", "broken.test.yaml"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, out := run(t, "validate", "--workspace", dir, "access-request")
	for _, want := range []string{
		"workflows/access-request/tests/broken.test.yaml:1:1: error case.invalid: 'description' is required",
		"broken.test.yaml:3:5: error case.invalid: assertion 'reply' has no preceding action",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if code != 1 {
		t.Errorf("exit %d", code)
	}
}
