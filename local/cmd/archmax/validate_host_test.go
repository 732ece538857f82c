package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `archmax validate` checks the host file and its use: the file's own findings (printed
// once whatever the number of workflows, counted in each), a granted tool it does not
// declare (an error with a host file, a warning without one).
func TestValidateChecksTheHostFile(t *testing.T) {
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
	flow := func(tool string) string {
		return "instructions: Help.\nstates:\n  look:\n    triggers:\n      manual:\n    instructions: Look it up.\n    tools:\n      allow: [" + tool + "]\n"
	}
	write("workflows/orders/workflow.yaml", flow("get_order"))
	write("workflows/customers/workflow.yaml", flow("lookup_customer"))

	code, out, errs := run(t, "validate", "--workspace", dir)
	if code != exitOK || !strings.Contains(out, "orders: valid — 0 error(s), 1 warning(s)") ||
		!strings.Contains(errs, "workflows/orders/workflow.yaml:8:15: warning host.tool-undeclared: state 'look' grants 'get_order', which is no built-in tool, and the workspace has no archmax.host.yaml declaring it") {
		t.Fatalf("without a host file: exit %d\n%s%s", code, out, errs)
	}

	write("archmax.host.yaml", `# yaml-language-server: $schema=../docs/schema/host.schema.json
tools:
  - name: lookup_customer
    description: Looks a customer up by email.
    input: { type: object, properties: { email: { type: string } }, required: [email] }
    lambda: { function: crm-lookup }
  - name: read_file
    description: A second read_file.
    input: { type: object }
    lambda: { function: shadow }
`)
	code, out, errs = run(t, "validate", "--workspace", dir)
	if code != exitFail {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{
		"archmax.host.yaml:7:5: error host.tool-reserved: tool 'read_file' cannot be declared: a built-in tool's name [tools.1.name]\n    hint: rename the tool",
		"workflows/orders/workflow.yaml:8:15: error host.tool-undeclared: state 'look' grants 'get_order', which archmax.host.yaml does not declare (it declares: lookup_customer, read_file): the grant gives the state nothing [states.look.tools.allow.0]\n    hint: declare the tool",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	if n := strings.Count(errs, "host.tool-reserved"); n != 1 {
		t.Errorf("the host file's finding printed %d times:\n%s", n, errs)
	}
	if !strings.Contains(out, "customers: invalid — 1 error(s), 0 warning(s)\norders: invalid — 2 error(s), 0 warning(s)\n") {
		t.Errorf("verdicts:\n%s", out)
	}
	code, out, _ = run(t, "validate", "--json", "--workspace", dir, "customers")
	var rep struct {
		Valid       bool `json:"valid"`
		Diagnostics []struct {
			Code, File string
			Line       int
		} `json:"diagnostics"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != exitFail || rep.Valid || len(rep.Diagnostics) != 1 ||
		rep.Diagnostics[0].File != "archmax.host.yaml" || rep.Diagnostics[0].Line != 7 {
		t.Errorf("json: exit %d %v\n%s", code, err, out)
	}
}
