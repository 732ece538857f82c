package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// The example workspace's host tools run offline: archmax test runs order-status's cases —
// one answered by the three stand-ins of archmax.host.yaml (a Lambda function, an HTTPS API,
// an MCP server, started in process), one mocking the lambda tool — and archmax run drives
// the workflow through all three. Nothing leaves the machine: every stand-in is on loopback.
func TestHostToolsRunOfflineOnTheExampleWorkspace(t *testing.T) {
	code, out, errs := run(t, "test", "--strict", "--workspace", supportAbs, "order-status")
	if code != exitOK || out != "2 passed, 0 failed, 0 skipped\n" ||
		!strings.Contains(errs, "✔ passed held-order-mocked") || !strings.Contains(errs, "✔ passed shipped-tracked-ticketed") {
		t.Fatalf("archmax test: exit %d\nstdout %q\nstderr %s", code, out, errs)
	}

	dir := supportCopy(t)
	code, out, errs = run(t, "run", "--workspace", dir, "--model-script", filepath.Join(dir, "model-scripts", "order-status.model.yaml"),
		"order-status", "support@acmecorp.com here: what is the status of ORD-1002?")
	if code != exitOK || out != "ORD-1002 has shipped and is at the Leeds depot, due on 2026-11-28; your ticket is TCK-1042.\n" {
		t.Fatalf("archmax run: exit %d\nstdout %q\nstderr %s", code, out, errs)
	}
	for _, want := range []string{"⚙ get_order", "⚙ track_parcel", "⇢ check-status → notify-customer: The recorded status shipped is get_order's.", "⚙ open_ticket"} {
		if !strings.Contains(errs, want) {
			t.Errorf("the flow lacks %q:\n%s", want, errs)
		}
	}
	// the case linter knows the host file's tools, and validate finds nothing to say
	if code, out, errs := run(t, "validate", "--workspace", dir, "order-status"); code != exitOK || out != "valid — 0 error(s), 0 warning(s)\n" {
		t.Errorf("validate: exit %d %q\n%s", code, out, errs)
	}
}
