package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// A person decides a park from what `archmax sessions ID` prints, and nothing else: the
// state's instructions say what to check, the evidence file's content is there to check it
// against, each transition's description says which to pick, and the decide line says how.
// `archmax run` showed the same at the park.
func TestDecideAParkFromTheSessionsViewAlone(t *testing.T) {
	supportCopy(t)
	t.Setenv(envModelScript, filepath.Join(supportAbs, "model-scripts", "refund-review.model.yaml"))
	code, _, parkReport := run(t, "run", "order-lookup", "--session", "r-1", "support@acmecorp.com here. Please refund ORD-1003, it is weeks late.")
	if code != exitOK {
		t.Fatalf("run: exit %d\n%s", code, parkReport)
	}

	code, view, errs := run(t, "sessions", "r-1")
	if code != exitOK {
		t.Fatalf("sessions: exit %d %s", code, errs)
	}
	// where its files lie
	if !regexp.MustCompile(`\nfiles\s+` + regexp.QuoteMeta(filepath.Join(".archmax", "files", "r-1")+string(filepath.Separator)) + `\n`).MatchString(view) {
		t.Errorf("no files row:\n%s", view)
	}
	// what to check
	instructions := regexp.MustCompile(`(?m)^  instructions: (.+)$`).FindStringSubmatch(view)
	if instructions == nil || !strings.Contains(instructions[1], "scratchpad/refund.json follows the refund policy") {
		t.Fatalf("no instructions in the view:\n%s", view)
	}
	// the evidence, its size and where it lies, then its content
	ev := regexp.MustCompile(`(?m)^  evidence (\S+) \((\d+) bytes, (\S+)\)\n((?:    .*\n)+)`).FindStringSubmatch(view)
	if ev == nil || ev[1] != "scratchpad/refund.json" {
		t.Fatalf("no evidence block in the view:\n%s", view)
	}
	var record struct{ OrderID, Decision, Reason string }
	if err := json.Unmarshal([]byte(ev[4]), &record); err != nil {
		t.Fatalf("the evidence content is not the file's JSON: %v\n%s", err, ev[4])
	}
	onDisk, err := os.ReadFile(ev[3])
	if err != nil || !strings.Contains(string(onDisk), `"decision": "approved"`) || ev[2] != strconv.Itoa(len(onDisk)) {
		t.Errorf("the location %s holds %q (%v), size shown %s", ev[3], onDisk, err, ev[2])
	}
	// the choices with what each means
	choices := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^  → (\S+) \[(\w+)\] — (.+)$`).FindAllStringSubmatch(view, -1) {
		choices[m[2]] = m[1]
	}
	pick := choices["refine"]
	if record.OrderID == "ORD-1003" && record.Decision == "approved" && record.Reason != "" { // the policy: a late order is refunded
		pick = choices["approve"]
	}
	if pick != "refund-closed" {
		t.Fatalf("picked %q from %v:\n%s", pick, choices, view)
	}
	// how to decide
	line := regexp.MustCompile(`(?m)^  decide: archmax (decide r-1 --to) <state>`).FindStringSubmatch(view)
	if line == nil {
		t.Fatalf("no decide line:\n%s", view)
	}
	args := append(strings.Fields(line[1]), pick, "--comment", "Late order: refund per policy.")
	code, out, errs := run(t, args...)
	if code != exitOK || out != "Confirmed — ORD-1003 is delayed and your refund is approved.\n" {
		t.Fatalf("decide: exit %d %q\n%s", code, out, errs)
	}

	// the park report of the run showed the same texts, choices and evidence
	for _, want := range []string{
		"⏸ awaiting a decision in refund-review (park p",
		"  summary: A person approves the recorded refund decision or sends it back.",
		"  instructions: " + instructions[1],
		"  → refund-closed [approve] — The decision is right; close the case.",
		"  → refund-request [refine] — The decision or its explanation needs another look.",
		"  evidence scratchpad/refund.json (" + ev[2] + " bytes, " + ev[3] + ")\n" + ev[4],
		"  answer without deciding: archmax reply r-1 <message…>",
	} {
		if !strings.Contains(parkReport, want) {
			t.Errorf("the run's park report lacks %q:\n%s", want, parkReport)
		}
	}
}

// An evidence file is shown bounded — its first lines, its first bytes — with what was left
// out, its control characters escaped; sizes read as a person reads them.
func TestEvidenceIsBounded(t *testing.T) {
	var long []string
	for i := range 100 {
		long = append(long, "line "+strconv.Itoa(i))
	}
	got := evidenceText(strings.Join(long, "\n") + "\n")
	if len(got) != evidenceLines+1 || got[0] != "line 0" || got[evidenceLines-1] != "line 39" || !strings.HasPrefix(got[evidenceLines], "… 60 more line(s), ") {
		t.Errorf("100 lines: %q", got[len(got)-2:])
	}
	got = evidenceText(strings.Repeat("é", evidenceBytes)) // one line of 2×evidenceBytes bytes
	if len(got) != 2 || len(got[0]) > evidenceBytes+len("…") || !strings.HasSuffix(got[0], "é…") || got[1] != "… 8.0 KiB not shown" {
		t.Errorf("a long line: %d bytes, %q", len(got[0]), got[1])
	}
	if got := evidenceText("\x1b[31mred\n"); got[0] != `\u001B[31mred` {
		t.Errorf("control characters: %q", got)
	}
	for n, want := range map[int]string{0: "0 bytes", 1: "1 byte", 1023: "1023 bytes", 1536: "1.5 KiB", 3 << 20: "3.0 MiB"} {
		if got := byteSize(n); got != want {
			t.Errorf("byteSize(%d) = %q, want %q", n, got, want)
		}
	}
}
