package validate

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/core/hostconfig"
	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/store/memory"
)

const grantsLookup = "        - archmax_workflow_helper\n        - lookup_customer\n"

func hostOf(t *testing.T, src string) HostFile {
	t.Helper()
	fs := memory.NewFiles()
	if err := fs.Write(context.Background(), hostconfig.File, []byte(src)); err != nil {
		t.Fatal(err)
	}
	h, err := ReadHost(context.Background(), fs)
	if err != nil || !h.Present {
		t.Fatalf("ReadHost: %+v %v", h, err)
	}
	return h
}

func findings(res Result, code string) []spec.Diagnostic {
	var out []spec.Diagnostic
	for _, d := range res.Diagnostics {
		if d.Code == code {
			out = append(out, d)
		}
	}
	return out
}

const lookupDecl = `tools:
  - name: lookup_customer
    description: Looks a customer up.
    input: { type: object, properties: { email: { type: string } }, required: [email] }
    lambda: { function: crm-lookup }
`

// A granted tool nothing declares: a warning without a host file (a reference workspace
// whose cases mock it still validates), an error with one; a declared one is clean.
func TestHostToolGrants(t *testing.T) {
	grant := in("        - archmax_workflow_helper\n", grantsLookup)
	res := validateEdited(t, grant, Options{})
	fs := findings(res, "host.tool-undeclared")
	if len(fs) != 1 || fs[0].Severity != "warning" || fs[0].Field != "states.intake.tools.allow.1" || fs[0].Line == 0 || !res.Valid ||
		!strings.Contains(fs[0].Message, "state 'intake' grants 'lookup_customer', which is no built-in tool, and the workspace has no archmax.host.yaml") {
		t.Errorf("without a host file: %+v (valid %v)", fs, res.Valid)
	}
	res = validateEdited(t, grant, Options{Host: hostOf(t, strings.Replace(lookupDecl, "lookup_customer", "find_customer", 1))})
	fs = findings(res, "host.tool-undeclared")
	if len(fs) != 1 || fs[0].Severity != "error" || res.Valid ||
		!strings.Contains(fs[0].Message, "'lookup_customer', which archmax.host.yaml does not declare (it declares: find_customer)") {
		t.Errorf("with a host file that does not declare it: %+v", fs)
	}
	res = validateEdited(t, grant, Options{Host: hostOf(t, lookupDecl)})
	if fs := findings(res, "host.tool-undeclared"); len(fs) != 0 || !res.Valid {
		t.Errorf("declared: %+v", res.Diagnostics)
	}
	// built-ins, controls and delegation tools are no host tools; allow_always is checked too
	res = validateEdited(t, in("skills:\n", "tools:\n  allow_always: [read_file, archmax_wait, write_todos, get_order]\nskills:\n"), Options{Host: hostOf(t, lookupDecl)})
	fs = findings(res, "host.tool-undeclared")
	if len(fs) != 1 || fs[0].Field != "tools.allow_always.3" || !strings.Contains(fs[0].Message, "'tools.allow_always' grants 'get_order'") {
		t.Errorf("allow_always: %+v", fs)
	}
	// an MCP server's tools are declared by prefix + as/name
	mcp := "tools:\n  - mcp: { url: 'https://crm.example/mcp', prefix: crm_, expose: [{ name: customer.find, as: lookup }] }\n"
	res = validateEdited(t, in("        - archmax_workflow_helper\n", "        - archmax_workflow_helper\n        - crm_lookup\n"), Options{Host: hostOf(t, mcp)})
	if fs := findings(res, "host.tool-undeclared"); len(fs) != 0 {
		t.Errorf("an exposed MCP tool: %+v", fs)
	}
}

// With a host file the mount checks run against its table (the defaults and its mounts).
func TestHostMountsAreTheTable(t *testing.T) {
	uses := in("skills:\n", "mounts:\n  allow_always: [crm]\nskills:\n")
	if fs := findings(validateEdited(t, uses, Options{}), "mounts.unknown"); len(fs) != 0 {
		t.Errorf("no host file, no table: %+v", fs)
	}
	res := validateEdited(t, uses, Options{Host: hostOf(t, "mounts:\n  - { name: catalog, dir: c, governed: true }\n")})
	if fs := findings(res, "mounts.unknown"); len(fs) != 1 || !strings.Contains(fs[0].Message, "mounts: skills, .platform, AGENTS.md, catalog") {
		t.Errorf("an unknown mount: %+v", fs)
	}
	res = validateEdited(t, uses, Options{Host: hostOf(t, "mounts:\n  - { name: crm, s3: 's3://acme/crm/', governed: true }\n")})
	if fs := findings(res, "mounts.unknown"); len(fs) != 0 || !res.Valid {
		t.Errorf("a host mount: %+v", res.Diagnostics)
	}
}

func TestReadHost(t *testing.T) {
	h, err := ReadHost(context.Background(), memory.NewFiles())
	if err != nil || h.Present || h.Mounts() != nil || h.Tools() != nil {
		t.Errorf("no file: %+v %v", h, err)
	}
	h = hostOf(t, "tools: {}\n")
	if len(h.Diagnostics) != 1 || h.Diagnostics[0].Code != hostconfig.CodeType || h.Diagnostics[0].File != hostconfig.File {
		t.Errorf("a broken file: %+v", h.Diagnostics)
	}
}

func TestOnlineChecksTheServersListings(t *testing.T) {
	h := hostOf(t, `tools:
  - mcp:
      url: https://crm.example/mcp
      expose:
        - name: find
        - name: export
          paths: [{ arg: target, access: write }]
        - name: gone
  - mcp: { url: 'https://down.example/mcp', expose: [{ name: x }] }
  - name: t
    description: d
    input: { type: object }
    lambda: { function: f }
`)
	list := func(_ context.Context, srv hostconfig.MCPServer) ([]MCPTool, error) {
		if strings.Contains(srv.URL, "down") {
			return nil, errors.New("connection refused")
		}
		return []MCPTool{{Name: "find", InputSchema: json.RawMessage(`{"type":"object"}`)},
			{Name: "export", InputSchema: json.RawMessage(`{"type":"object","properties":{"to":{"type":"string"}}}`)}}, nil
	}
	diags := Online(context.Background(), h, list)
	var got []string
	for _, d := range diags {
		got = append(got, d.Severity+" "+d.Code+" "+d.Field)
	}
	want := []string{"error host.path-argument tools.0.mcp.expose.1.paths", "error host.mcp-not-offered tools.0.mcp.expose.2", "warning host.mcp-unreachable tools.1.mcp.url"}
	if !slices.Equal(got, want) {
		t.Fatalf("Online: %v\n%+v", got, diags)
	}
	if !strings.Contains(diags[1].Message, "offers no tool 'gone' (it offers: find, export)") || diags[1].Line != 8 || diags[1].Column != 11 {
		t.Errorf("not offered: %+v", diags[1])
	}
}
