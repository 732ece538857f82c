package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// The README's `make run` block is what `make run` prints: the Makefile's command line (its
// workspace, model script, workflow and message) run in process, the session id masked.
func TestREADMEDemoBlockIsWhatMakeRunPrints(t *testing.T) {
	readme, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	makefile, err := os.ReadFile("../../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	message := regexp.MustCompile(`(?m)^MESSAGE\s*[:?]?=\s*(.+)$`).FindSubmatch(makefile)
	if message == nil {
		t.Fatal("no MESSAGE := in the Makefile")
	}
	block := regexp.MustCompile("(?s)```\n(session session-… · workflow access-request\n.*?)```").FindSubmatch(readme)
	if block == nil {
		t.Fatal("no make run block (session session-… · workflow access-request) in the README")
	}
	code, out, errs := run(t, "run", "--workspace", ws, "--store", t.TempDir(),
		"--model-script", ws+"/model-scripts/happy.model.yaml", "access-request", strings.TrimSpace(string(message[1])))
	if code != exitOK {
		t.Fatalf("exit %d, stderr %s", code, errs)
	}
	got := regexp.MustCompile(`session session-[0-9a-f-]+`).ReplaceAllString(errs+out, "session session-…")
	if got != string(block[1]) {
		t.Errorf("the README's make run block is not what make run prints.\nprinted:\n%s\nREADME:\n%s", got, block[1])
	}
}
