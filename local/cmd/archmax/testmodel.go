package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/archmax-ai/archmax/core/cases"
	"github.com/archmax-ai/archmax/core/cases/runner"
)

// A case with no scripted model beside it, run without --bedrock, is not a failure of the
// workflow: it is counted under its own heading — "needs a model" — reported as skipped (its
// skipReason saying what it needs) in the --json result, and leaves the exit status alone.

// needsModelMark is in the error of a case that needs a model (test.go's newTarget).
const needsModelMark = "' needs a model: add "

// needsModel reports whether r is a case that did not run for want of a model.
func needsModel(r cases.CaseResult) bool {
	return r.Verdict.Status == cases.CaseFailed && strings.Contains(r.Error, needsModelMark)
}

// needsModelLine is such a case's verdict line.
func needsModelLine(r cases.CaseResult) string {
	return fmt.Sprintf("○ needs a model %s\n    %s", r.ID, r.Error)
}

// settleNeedsModel turns each case that needs a model into a skipped one (its reason the
// need), recomputes the suite's exit status without them, and returns their files.
func settleNeedsModel(res *runner.Result) []string {
	var files []string
	res.ExitCode = 0
	for i, r := range res.Results {
		if needsModel(r) {
			files = append(files, r.File)
			r.Verdict = cases.CaseVerdict{Status: cases.CaseSkipped}
			r.SkipReason, r.Error = r.Error[strings.Index(r.Error, "needs a model"):], ""
			res.Results[i] = r
		}
		if cases.ExitCodeForVerdict(res.Results[i].Verdict) != 0 {
			res.ExitCode = 1
		}
	}
	return files
}

// printNeedsModel writes the heading and the cases under it (nothing when there are none).
func printNeedsModel(w io.Writer, files []string) {
	if len(files) == 0 {
		return
	}
	fmt.Fprintf(w, "needs a model (%d): add <case>.model.yaml beside each to run it offline, or run with --bedrock (Amazon Bedrock)\n", len(files))
	for _, f := range files {
		fmt.Fprintf(w, "  %s\n", f)
	}
}

// failSuite reports a suite that cannot run (or a filter that matched nothing) as every
// failure is reported — the stderr line and hint, and with --json one error record on stdout
// (in place of the result object) — and returns its exit status.
func failSuite(stdout, stderr io.Writer, jsonOut bool, err error) int {
	var args []string
	if jsonOut {
		args = []string{"--json"}
	}
	return reportError(stdout, stderr, args, err, "archmax test --help")
}
