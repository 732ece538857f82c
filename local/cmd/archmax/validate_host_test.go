package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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

// --online lists each MCP server the host file names and holds its expose list to it.
func TestValidateOnlineListsMCPServers(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "crm", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "find_customer", Description: "Finds a customer.", InputSchema: json.RawMessage(`{"type":"object","properties":{"email":{"type":"string"}}}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	defer srv.Close()
	dir := t.TempDir()
	for p, s := range map[string]string{
		"workflows/crm/workflow.yaml": "instructions: Help.\nstates:\n  look:\n    triggers:\n      manual:\n    instructions: Look.\n    tools:\n      allow: [crm_find_customer]\n",
		"archmax.host.yaml": "tools:\n  - mcp:\n      url: " + srv.URL + "/mcp\n      prefix: crm_\n      expose:\n        - name: find_customer\n" +
			"        - name: delete_customer\n  - mcp: { url: 'http://127.0.0.1:1/mcp', expose: [{ name: x }] }\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if code, out, errs := run(t, "validate", "--workspace", dir); code != exitOK {
		t.Fatalf("offline: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs := run(t, "validate", "--online", "--workspace", dir)
	if code != exitFail {
		t.Fatalf("online: exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{
		"archmax.host.yaml:7:11: error host.mcp-not-offered: MCP server " + srv.URL + "/mcp offers no tool 'delete_customer' (it offers: find_customer) [tools.0.mcp.expose.1]",
		"archmax.host.yaml:8:5: warning host.mcp-unreachable: MCP server http://127.0.0.1:1/mcp could not be listed",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
}

// archmax test: a case naming a tool the host file declares is not warned about (the case
// linter's host tools), and the host file's rules run in the case's engine.
func TestTestKnowsTheHostFile(t *testing.T) {
	dir := t.TempDir()
	for p, s := range map[string]string{
		"workflows/desk/workflow.yaml": "instructions: Help.\nstates:\n  work:\n    triggers:\n      manual:\n    instructions: Work.\n",
		"workflows/desk/tests/notes.test.yaml": `title: Notes are refused by the host
description: The host's rule refuses the model's note; the audit tool is mocked.
mocks:
  - { tool: audit_log, result: logged }
steps:
  - send: "take a note"
  - blockedTool: { name: write_file }
`,
		"workflows/desk/tests/notes.model.yaml": "agent:\n  - toolCalls:\n      - { name: write_file, input: { file_path: scratchpad/n.md, content: x } }\n  - text: Done.\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs := run(t, "test", "--workspace", dir, "desk")
	if code != exitFail || !strings.Contains(errs, "mocks[0] names 'audit_log', which no state of workflow 'desk' is granted") {
		t.Fatalf("without a host file: exit %d\n%s%s", code, out, errs)
	}
	host := `tools:
  - name: audit_log
    description: Logs.
    input: { type: object }
    lambda: { function: audit }
policyRules:
  - { id: host.no-notes, effect: block, tools: [write_file], reason: No notes here. }
`
	if err := os.WriteFile(filepath.Join(dir, "archmax.host.yaml"), []byte(host), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs = run(t, "test", "--workspace", dir, "desk")
	if code != exitOK || strings.Contains(errs, "audit_log") || !strings.Contains(out, "1 passed, 0 failed") {
		t.Errorf("with the host file: exit %d\n%s%s", code, out, errs)
	}
}

// `archmax validate` reports what local runs refuse a mount's dir for, with the runtime's
// own check (hostconfig.LocalMountProblem): links followed, each at its field with a hint —
// a dir this machine lacks only a warning when the mount has an s3 location, as is an
// s3-only mount. A grant of a mount nothing serves is mounts.unknown with a host file or
// without one (no host file serves the default mounts only).
func TestValidateChecksMountDirs(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "ws")
	write := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("workflows/desk/workflow.yaml", "instructions: Help.\nmounts:\n  allow_always: [contracts]\nstates:\n  look:\n    triggers:\n      manual:\n    instructions: Look it up.\n")
	write("data/terms.md", "terms")
	code, out, errs := run(t, "validate", "--workspace", dir)
	if code != exitFail || !strings.Contains(errs, "workflows/desk/workflow.yaml:3:18: error mounts.unknown: mount 'contracts' is not served by the host; mounts: skills, .platform, AGENTS.md [mounts.allow_always.0]") {
		t.Fatalf("a grant of an unserved mount without a host file: exit %d\n%s%s", code, out, errs)
	}

	link := filepath.Join(root, "ws-link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatalf("cannot make a symbolic link (the security check under test needs one): %v", err)
	}
	write("archmax.host.yaml", `mounts:
  - name: contracts
    dir: `+link+`
    governed: true
  - name: terms
    dir: data/terms.md
  - name: eu
    s3: s3://acme/eu/
  - name: us
    s3: s3://acme/us/
    dir: ../nowhere
  - name: old
    dir: ./workflows
`)
	code, out, errs = run(t, "validate", "--workspace", dir)
	if code != exitFail {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{
		"archmax.host.yaml:3:10: error host.mount: mount 'contracts': dir " + link + " (",
		"its links followed) holds the workspace, whose workflows/, archmax.host.yaml and session store no mount may serve [mounts.0.dir]\n    hint: point 'dir' at a folder of its own",
		"archmax.host.yaml:6:10: error host.mount: mount 'terms': dir data/terms.md is a file: say 'file: true' to mount one file [mounts.1.dir]\n    hint: add 'file: true'",
		"archmax.host.yaml:7:5: warning host.mount-dir: mount 'eu': it has no dir: local runs (archmax run, test, serve) serve mounts from a directory [mounts.2]\n    hint: add 'dir: ",
		"archmax.host.yaml:11:10: warning host.mount-dir: mount 'us': dir ../nowhere does not exist [mounts.3.dir]\n    hint: create the folder",
		"archmax.host.yaml:13:10: error host.mount: mount 'old': dir ./workflows is the workspace's workflows/, which is the authoring plane no agent may read [mounts.4.dir]",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	if strings.Contains(errs, "mounts.unknown") || !strings.Contains(out, "invalid — 3 error(s), 2 warning(s)") {
		t.Errorf("verdict:\n%s%s", out, errs)
	}
}

// RD22-18: `archmax validate` reports a bad ARCHMAX_SESSION_TTL when the host file has no
// retention: section (local runs refuse it); a good one, or none, is no finding.
func TestValidateReportsABadSessionTTLVariable(t *testing.T) {
	t.Setenv("ARCHMAX_SESSION_TTL", "forever")
	code, _, errs := run(t, "validate", "--workspace", ws, "access-request")
	if code != exitFail || !strings.Contains(errs, "ARCHMAX_SESSION_TTL") || !strings.Contains(errs, "env.invalid") {
		t.Errorf("a bad variable: exit %d, %s", code, errs)
	}
	t.Setenv("ARCHMAX_SESSION_TTL", "30d")
	if code, _, errs := run(t, "validate", "--workspace", ws, "access-request"); code != exitOK || strings.Contains(errs, "ARCHMAX_SESSION_TTL") {
		t.Errorf("a good variable: exit %d, %s", code, errs)
	}
}
