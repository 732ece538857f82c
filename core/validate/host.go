package validate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/archmax-ai/archmax/core/hostconfig"
	"github.com/archmax-ai/archmax/core/machine"
	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/store"
)

// HostFile is the workspace's archmax.host.yaml as validate reads it (ReadHost).
type HostFile struct {
	// Present: the file exists. Without it every tool a workflow grants that is no built-in
	// is only a warning (a reference workspace whose cases mock host tools still validates),
	// and the mount checks stay silent (V-27, spec 01 §8.1 item 4).
	Present bool
	// Config is the file as far as it parsed (nil when it is not a YAML mapping).
	Config *hostconfig.Config
	// Diagnostics are the file's own findings (hostconfig.Parse), every one an error.
	Diagnostics []spec.Diagnostic
}

// ReadHost reads and parses archmax.host.yaml at the root of the authoring tree. A missing
// file is a HostFile that is not Present; the error is the store's only.
func ReadHost(ctx context.Context, files store.Files) (HostFile, error) {
	src, err := files.Read(ctx, hostconfig.File)
	if errors.Is(err, store.ErrNotFound) {
		return HostFile{}, nil
	}
	if err != nil {
		return HostFile{}, err
	}
	cfg, diags := hostconfig.Parse(src)
	return HostFile{Present: true, Config: cfg, Diagnostics: diags}, nil
}

// Mounts is the mount table the host file serves: the defaults and its mounts (nil when the
// file is absent, which leaves the mount checks out).
func (h HostFile) Mounts() []machine.Mount {
	if !h.Present {
		return nil
	}
	out := slices.Clone(machine.DefaultMounts)
	if h.Config != nil {
		for _, m := range h.Config.Mounts {
			out = append(out, machine.Mount{Name: m.Name, File: m.File, Governed: m.Governed, ReadOnly: m.ReadOnly})
		}
	}
	return out
}

// Tools are the tool names the host file declares (an mcp server's: prefix + as or name).
func (h HostFile) Tools() []string {
	if h.Config == nil {
		return nil
	}
	return h.Config.ToolNames()
}

// builtIn reports whether a grant names a tool the runtime itself provides: an essential
// tool, a control, a delegation tool (checked by the delegation pass), or one of the names
// the grants pass already refuses.
func builtIn(tool string) bool {
	return spec.IsEssentialTool(tool) || spec.IsControlTool(tool) || strings.HasPrefix(tool, spec.ArchmaxToolPrefix) ||
		tool == "write_todos" || tool == "eval" || slices.Contains(spec.UngrantableTools, tool) || tool == spec.ForbidAnyTool
}

// hostGrants: every tool a workflow grants is a built-in or one the host file declares
// (host.tool-undeclared) — an error when the workspace has a host file, a warning when it has
// none — since a grant of a tool nothing registers gives the state nothing.
func (v *run) hostGrants() {
	declared := v.opts.Host.Tools()
	check := func(field string, st *spec.State, entries []spec.ToolEntry) {
		for i, e := range entries {
			if builtIn(e.Tool) || slices.Contains(declared, e.Tool) {
				continue
			}
			where := "'tools.allow_always' grants"
			if st != nil {
				where = fmt.Sprintf("state '%s' grants", st.Slug)
			}
			f := fmt.Sprintf("%s.%d", field, i)
			if v.opts.Host.Present {
				v.add("error", "host.tool-undeclared", f, st, fmt.Sprintf("%s '%s', which %s does not declare (it declares: %s): the grant gives the state nothing",
					where, e.Tool, hostconfig.File, listOrNone(declared)))
			} else {
				v.add("warning", "host.tool-undeclared", f, st, fmt.Sprintf("%s '%s', which is no built-in tool, and the workspace has no %s declaring it: the grant gives the state nothing unless the host registers the tool (a case may mock it)",
					where, e.Tool, hostconfig.File))
			}
			v.diags[len(v.diags)-1].Hint = hintUndeclared
		}
	}
	check("tools.allow_always", nil, v.sp.Tools.Allow)
	for _, st := range v.sp.States {
		check("states."+st.Slug+".tools.allow", st, st.Tools.Allow)
	}
}

const hintUndeclared = "declare the tool in archmax.host.yaml's tools (lambda, http or an mcp server's expose list), or remove the grant"

// MCPTool is one tool of an MCP server's listing (tools/list), for Online.
type MCPTool struct {
	Name        string
	InputSchema json.RawMessage
}

// MCPLister lists the tools an MCP server offers (mcptool.List in the CLI).
type MCPLister func(ctx context.Context, server hostconfig.MCPServer) ([]MCPTool, error)

// Online checks what only the servers can say (`archmax validate --online`): each mcp
// server's expose list against its tools/list — an entry naming a tool the server does not
// offer is an error (host.mcp-not-offered), and so is a declared path argument that is not a
// property of the listed tool's input schema (host.path-argument); a server that cannot be
// reached is a warning (host.mcp-unreachable), its entries unchecked.
func Online(ctx context.Context, host HostFile, list MCPLister) []spec.Diagnostic {
	var out []spec.Diagnostic
	if host.Config == nil {
		return out
	}
	for i, d := range host.Config.Tools {
		if d.Kind != hostconfig.KindMCP || d.MCP == nil {
			continue
		}
		field := fmt.Sprintf("tools.%d.mcp", i)
		listed, err := list(ctx, *d.MCP)
		if err != nil {
			if ctx.Err() != nil {
				return out
			}
			out = append(out, spec.Diagnostic{Severity: "warning", Code: "host.mcp-unreachable", Field: field + ".url", File: hostconfig.File,
				Line: d.Line, Column: d.Column, Message: fmt.Sprintf("MCP server %s could not be listed (%v): its expose list was not checked", d.MCP.URL, err),
				Hint: "check that the server is reachable from here with the file's auth, or validate without --online"})
			continue
		}
		var names []string
		for _, t := range listed {
			names = append(names, t.Name)
		}
		for j, e := range d.MCP.Expose {
			f := fmt.Sprintf("%s.expose.%d", field, j)
			k := slices.IndexFunc(listed, func(t MCPTool) bool { return t.Name == e.Name })
			if k < 0 {
				out = append(out, spec.Diagnostic{Severity: "error", Code: "host.mcp-not-offered", Field: f, File: hostconfig.File, Line: e.Line, Column: e.Column,
					Message: fmt.Sprintf("MCP server %s offers no tool '%s' (it offers: %s)", d.MCP.URL, e.Name, listOrNone(names)),
					Hint:    "name one of the tools the server lists, or remove the entry"})
				continue
			}
			var schema struct {
				Properties map[string]json.RawMessage `json:"properties"`
			}
			_ = json.Unmarshal(listed[k].InputSchema, &schema)
			for _, pa := range e.Paths {
				if _, ok := schema.Properties[pa.Arg]; !ok {
					out = append(out, spec.Diagnostic{Severity: "error", Code: "host.path-argument", Field: f + ".paths", File: hostconfig.File, Line: e.Line, Column: e.Column,
						Message: fmt.Sprintf("path argument '%s' is not a property of %s's input schema on the server", pa.Arg, e.Name),
						Hint:    "declare only arguments the server's input schema has"})
				}
			}
		}
	}
	spec.SortDiagnostics(out)
	return out
}
