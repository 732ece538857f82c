// Package validate is validateWorkflow (spec 01 §8.1): everything about a workflow that
// needs more than its workflow.yaml — the slugs, the runtime contract, the code states'
// script files, the skill registry, the host's mounts, kernel probes of the grants, the
// delegation graph through sibling workflows, and the case documents — on top of
// spec.ValidateSpec, in one pass that never stops at the first problem. It reads the
// authoring tree through store.Files (a directory, S3, memory), so `archmax validate`, a
// deployment check and a test see the same findings.
package validate

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/archmax-ai/archmax/core/cases"
	"github.com/archmax-ai/archmax/core/cases/runner"
	"github.com/archmax-ai/archmax/core/kernel"
	"github.com/archmax-ai/archmax/core/machine"
	"github.com/archmax-ai/archmax/core/sandbox"
	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/store"
	"github.com/archmax-ai/archmax/core/yamltree"
)

// Options configure Workflow. Mounts is the host's mount table the workflow will run
// against; nil leaves every mount diagnostic out (spec 01 §8.1 item 4, V-27) unless Host
// is present, whose table (Host.Mounts) is then used. Host is the workspace's host file
// (ReadHost): the tools it declares are the host tools a workflow may grant
// (host.tool-undeclared). Its own findings are not repeated here; the caller reports them.
type Options struct {
	Mounts []machine.Mount
	Host   HostFile
}

// Result is one workflow's validation (spec 01 §8.1 ValidationResult): Valid when no
// finding is an error; Diagnostics sorted by file and position (spec.SortDiagnostics), each
// with its fix hint.
type Result struct {
	Workflow    string            `json:"workflow"`
	Valid       bool              `json:"valid"`
	Diagnostics []spec.Diagnostic `json:"diagnostics"`
}

// Workflows lists the workflow slugs of the authoring tree (the folders under workflows/,
// sorted). Errors: the store's.
func Workflows(ctx context.Context, files store.Files) ([]string, error) {
	entries, err := files.List(ctx, "workflows")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if e.Dir {
			out = append(out, e.Name)
		}
	}
	return out, nil
}

// Workflow validates workflows/<slug>/ of files (spec 01 §8.1 validateWorkflow, §8.3 phases
// S, X, L and W). A missing or non-mapping workflow.yaml is reported alone (with the slug
// check), §8.1 item 5. Every problem with the workflow is a diagnostic, a file the store
// cannot read included (`workspace.unreadable`); the error is the context's only.
func Workflow(ctx context.Context, files store.Files, slug string, opts Options) (Result, error) {
	if opts.Mounts == nil {
		opts.Mounts = opts.Host.Mounts()
	}
	v := &run{ctx: ctx, files: files, slug: slug, opts: opts, file: "workflows/" + slug + "/workflow.yaml"}
	err := v.validate()
	if err != nil && ctx.Err() == nil { // an unreadable file (a symlink loop, a denied read) is this workflow's finding
		v.diags = append(v.diags, spec.Diagnostic{Severity: "error", Code: "workspace.unreadable", File: "workflows/" + slug + "/",
			Message: fmt.Sprintf("the workflow's files could not be read: %v", err)})
		err = nil
	}
	spec.SortDiagnostics(v.diags)
	res := Result{Workflow: slug, Valid: true, Diagnostics: spec.WithHints(v.diags)}
	if res.Diagnostics == nil {
		res.Diagnostics = []spec.Diagnostic{}
	}
	for _, d := range res.Diagnostics {
		if d.Severity == "error" {
			res.Valid = false
		}
	}
	return res, err
}

type run struct {
	ctx   context.Context
	files store.Files
	slug  string
	opts  Options
	file  string
	sp    *spec.MachineSpec
	diags []spec.Diagnostic
}

// add records a finding about the workflow's own file, located at field when the
// document declares it, else at st (when given).
func (v *run) add(sev, code, field string, st *spec.State, msg string) {
	d := spec.Diagnostic{Severity: sev, Code: code, Field: field, File: v.file, Message: msg}
	d.Line, d.Column = v.sp.Position(field, st)
	v.diags = append(v.diags, d)
}

func (v *run) validate() error {
	if !spec.IsSlug(v.slug) {
		v.diags = append(v.diags, spec.Diagnostic{Severity: "error", Code: "slug.invalid", Field: "workflow", File: v.file, Message: spec.WorkflowSlugRejection(v.slug)})
		if v.slug == "" || strings.ContainsAny(v.slug, `/\`) || strings.Trim(v.slug, ".") == "" {
			return nil // not a folder under workflows/: nothing to read
		}
	}
	prose := "workflows/" + v.slug + "/WORKFLOW.md"
	md, err := v.files.Read(v.ctx, prose)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	src, err := v.files.Read(v.ctx, v.file)
	if errors.Is(err, store.ErrNotFound) {
		if spec.HasFrontmatter(md) { // V-31
			v.diags = append(v.diags, spec.SingleFileRemoved(prose, v.file))
			return nil
		}
		v.diags = append(v.diags, spec.Diagnostic{Severity: "error", Code: "spec.missing", File: v.file,
			Message: fmt.Sprintf("No workflow.yaml found for workflow '%s'", v.slug)})
		return nil
	}
	if err != nil {
		return err
	}
	if spec.HasFrontmatter(md) { // V-31
		v.diags = append(v.diags, spec.CompetingMachines(prose, v.file))
	}
	sv := spec.ValidateSpec(v.file, src)
	v.diags = append(v.diags, sv.Diagnostics...)
	if sv.Partial == nil {
		return nil // §8.1 item 5: not a mapping, nothing more can be said
	}
	v.sp = sv.Partial
	v.stateSlugs()
	v.runtime()
	v.grants()
	v.hostGrants()
	for _, pass := range []func() error{v.scripts, v.skills, v.delegation, v.guardRefs} {
		if err := pass(); err != nil {
			return err
		}
	}
	v.mounts()
	if err := v.leftovers(); err != nil {
		return err
	}
	return v.cases()
}

// stateSlugs: every state slug is kebab-case.
func (v *run) stateSlugs() {
	for _, st := range v.sp.States {
		if !spec.IsSlug(st.Slug) {
			v.add("error", "slug.invalid", "states."+st.Slug, st, fmt.Sprintf(
				"State slug '%s' is not hyphen-separated kebab-case; use lowercase segments joined by single hyphens (e.g. 'review-draft').", st.Slug))
		}
	}
}

// runtime: the declared runtime contract is one this build implements (V-32).
func (v *run) runtime() {
	if err := spec.CheckRuntimeContract(v.slug, v.sp); err != nil {
		v.add("error", "runtime.version-unsupported", "runtime", nil, err.Error())
	}
}

// grants: `task` is never grantable (V-14), an allow_always path guard never targets a
// runtime-owned area, and the kernel probes of V-28 — grants the kernel would
// refuse whatever the call, and archmax_advance targets without an edge.
func (v *run) grants() {
	check := func(field string, st *spec.State, entries []spec.ToolEntry, always bool) {
		for i, e := range entries {
			f := fmt.Sprintf("%s.%d", field, i)
			if slices.Contains(spec.UngrantableTools, e.Tool) {
				v.add("error", "tools.ungrantable", f, st, fmt.Sprintf("'%s' cannot be granted: the runtime never offers it, and the kernel refuses it everywhere", e.Tool))
			}
			if e.Tool == "eval" {
				v.add("error", "kernel.probe.tool.eval", f, st, "a tool named bare 'eval' is always refused; scripts run through archmax_eval")
			}
			for _, g := range e.Paths {
				v.probePath(f, st, e.Tool, g, always)
			}
			for _, a := range e.Args {
				if e.Tool == spec.AdvanceTool && a.Name == "to" && st != nil {
					for _, g := range a.Globs {
						if strings.ContainsAny(g, "*?[{") || spec.HasVariableReference(g) {
							continue
						}
						if !slices.ContainsFunc(st.Transitions, func(t spec.Transition) bool { return t.To == g }) {
							v.add("warning", "kernel.probe.transition.no-edge", f, st, fmt.Sprintf(
								"state '%s' allows archmax_advance to '%s', but declares no transition there: the call is refused", st.Slug, g))
						}
					}
				}
			}
		}
	}
	check("tools.allow_always", nil, v.sp.Tools.Allow, true)
	for _, st := range v.sp.States {
		check("states."+st.Slug+".tools.allow", st, st.Tools.Allow, false)
	}
}

// probePath judges one path guard by its fixed leading folder: the runtime's internal
// areas are unreachable, the offload areas and read-only mounts refuse writes, the
// authoring plane is closed, and archmax_run runs only inside skill bundles (V-28, R-24).
func (v *run) probePath(field string, st *spec.State, tool, glob string, always bool) {
	if spec.HasVariableReference(glob) {
		glob = strings.SplitN(glob, "${{", 2)[0]
	}
	canon, err := kernel.CanonicalPath(glob)
	if err != nil {
		return // the kernel refuses the escaping path at call time; the schema keeps guards relative
	}
	first, _, _ := strings.Cut(canon, "/")
	if first == "" || strings.ContainsAny(first, "*?[{") {
		return
	}
	writes := slices.ContainsFunc(spec.BuiltInToolPaths[tool], func(p spec.PathArg) bool { return p.Access == "write" || p.Access == "remove" })
	offload := kernel.IsOffloadArea(first)
	switch {
	case always && (kernel.IsInternalArea(first) || offload):
		v.add("error", "tools.runtime-area", field, st, fmt.Sprintf(
			"'tools.allow_always' guards '%s' to '%s', a runtime-owned area: the runtime keeps its own records there", tool, glob))
	case kernel.IsInternalArea(first):
		v.add("error", "kernel.probe.zone.runtime-internal", field, st, fmt.Sprintf(
			"the grant of '%s' on '%s' reaches the runtime's internal area '%s/', which no tool reaches", tool, glob, first))
	case offload && writes:
		v.add("error", "kernel.probe.zone.runtime-managed", field, st, fmt.Sprintf(
			"the grant of '%s' on '%s' writes into '%s/', where only the runtime writes", tool, glob, first))
	case kernel.IsAuthoringPlane(first):
		v.add("error", "kernel.probe.zone.governance-plane", field, st, fmt.Sprintf(
			"the grant of '%s' on '%s' reaches the authoring plane 'workflows/', which agents never reach", tool, glob))
	case tool == spec.RunTool && first != kernel.SkillsMount:
		v.add("error", "kernel.probe.script.skill-only", field, st, fmt.Sprintf(
			"archmax_run is granted on '%s', but runs only files inside skill bundles (skills/<name>/…)", glob))
	case writes && v.readOnly(canon):
		v.add("error", "kernel.probe.zone.read-only", field, st, fmt.Sprintf(
			"the grant of '%s' on '%s' writes into a read-only mount: every such call is refused", tool, glob))
	}
}

// readOnly reports whether p lies in a mount the host serves read-only (the default
// mounts when the host's table was not given).
func (v *run) readOnly(p string) bool {
	table := v.opts.Mounts
	if table == nil {
		table = machine.DefaultMounts
	}
	m, ok := machine.MountOf(table, p)
	return ok && m.ReadOnly
}

// scripts: every code state's script exists (V-22), parses and imports only
// @archmax-ai/harness/* (V-23), as the sandbox will prepare it. A path V-07 refuses (already
// reported by the schema) is not resolved: it could leave the workspace or name another
// workflow's file.
func (v *run) scripts() error {
	for _, st := range v.sp.States {
		if st.Type != "code" || !spec.IsScriptPath(st.Script) {
			continue
		}
		field := "states." + st.Slug + ".script"
		script := path.Join("workflows", v.slug, st.Script)
		body, err := v.files.Read(v.ctx, script)
		if errors.Is(err, store.ErrNotFound) {
			v.add("error", "code.script-missing", field, st, fmt.Sprintf("code state '%s' script not found: %s", st.Slug, st.Script))
			continue
		}
		if err != nil {
			return err
		}
		if err := sandbox.Prepare(st.Script, body); err != nil {
			d := spec.Diagnostic{Severity: "error", Code: "script.invalid", Field: field, File: script, Message: err.Error()}
			var ie *sandbox.ImportError
			var se *sandbox.SyntaxError
			switch {
			case errors.As(err, &ie):
				d.Code, d.Line, d.Column = "script.foreign-import", ie.Line, ie.Column
			case errors.As(err, &se):
				d.Line, d.Column = se.Line, se.Column
			}
			v.diags = append(v.diags, d)
		}
	}
	return nil
}

// skills: every skill the workflow names is a bundle of the registry (V-26) whose SKILL.md
// names it; with bundles served and no root `skills` block, a warning.
func (v *run) skills() error {
	entries, err := v.files.List(v.ctx, kernel.SkillsMount)
	if err != nil {
		return err
	}
	var registry []string
	for _, e := range entries {
		if e.Dir && spec.IsSlug(e.Name) {
			registry = append(registry, e.Name)
		}
	}
	checked := map[string]bool{}
	check := func(field string, st *spec.State, names []string) error {
		for i, name := range names {
			f := fmt.Sprintf("%s.%d", field, i)
			if !slices.Contains(registry, name) {
				v.add("error", "skills.unknown", f, st, fmt.Sprintf("skill '%s' is not in the skill registry (no skills/%s/ folder); known: %s", name, name, listOrNone(registry)))
				continue
			}
			if checked[name] {
				continue
			}
			checked[name] = true
			doc := kernel.SkillsMount + "/" + name + "/SKILL.md"
			src, err := v.files.Read(v.ctx, doc)
			if errors.Is(err, store.ErrNotFound) {
				v.add("error", "skills.unknown", f, st, fmt.Sprintf("skill '%s' has no %s", name, doc))
				continue
			}
			if err != nil {
				return err
			}
			if got := frontmatterName(src); got != name {
				v.add("error", "skills.name-mismatch", f, st, fmt.Sprintf("%s names the skill '%s', not its folder's name '%s'", doc, got, name))
			}
		}
		return nil
	}
	lists := []struct {
		field string
		st    *spec.State
		names []string
	}{{"skills.allow_always", nil, v.sp.Skills.Allow}, {"skills.forbid_always", nil, v.sp.Skills.Forbid}}
	for _, st := range v.sp.States {
		lists = append(lists, struct {
			field string
			st    *spec.State
			names []string
		}{"states." + st.Slug + ".skills.allow", st, st.Skills.Allow}, struct {
			field string
			st    *spec.State
			names []string
		}{"states." + st.Slug + ".skills.forbid", st, st.Skills.Forbid})
	}
	for _, l := range lists {
		if err := check(l.field, l.st, l.names); err != nil {
			return err
		}
	}
	if _, _, declared := v.sp.Locate("skills"); !declared && len(registry) > 0 {
		v.add("warning", "skills.block-missing", "skills", nil, fmt.Sprintf(
			"the workspace serves skill bundles (%s) but the workflow has no root 'skills' block: no state reaches any of them", listOrNone(registry)))
	}
	return nil
}

// frontmatterName is the `name:` of a SKILL.md's YAML frontmatter ("" when absent).
func frontmatterName(src []byte) string {
	front, ok := spec.Frontmatter(src)
	if !ok {
		return ""
	}
	n, refused := yamltree.Decode(front, yamltree.Options{})
	if refused != nil || n == nil {
		return ""
	}
	if v := n.Get("name"); v != nil && v.Kind == yamltree.String {
		return v.Str
	}
	return ""
}

// mounts checks the workflow's mount names against the host's table (V-27, R-18's W half,
// R-23), only when the table was given (§8.1 item 4).
func (v *run) mounts() {
	if v.opts.Mounts == nil {
		return
	}
	var names []string
	governed := false
	for _, m := range v.opts.Mounts {
		names = append(names, m.Name)
		governed = governed || m.Governed
	}
	find := func(name string) (machine.Mount, bool) {
		i := slices.IndexFunc(v.opts.Mounts, func(m machine.Mount) bool { return m.Name == name })
		if i < 0 {
			return machine.Mount{}, false
		}
		return v.opts.Mounts[i], true
	}
	enabled := map[string]bool{}
	grants := func(field string, st *spec.State, list []spec.MountGrant) {
		for i, g := range list {
			f := fmt.Sprintf("%s.%d", field, i)
			m, ok := find(g.Mount)
			switch {
			case !ok:
				v.add("error", "mounts.unknown", f, st, fmt.Sprintf("mount '%s' is not served by the host; mounts: %s", g.Mount, listOrNone(names)))
			case !m.Governed:
				v.add("warning", "governance.inert-entry", f, st, fmt.Sprintf("mount '%s' is not governed: every state reaches it without a grant", g.Mount))
			case g.Access == "read_write" && m.ReadOnly:
				v.add("warning", "governance.inert-entry", f, st, fmt.Sprintf("mount '%s' is served read-only: 'read_write' cannot make it writable", g.Mount))
			}
			enabled[g.Mount] = true
		}
	}
	grants("mounts.allow_always", nil, v.sp.Mounts.Allow)
	for _, st := range v.sp.States {
		grants("states."+st.Slug+".mounts.allow", st, st.Mounts.Allow)
	}
	forbids := func(field string, st *spec.State, list []string) {
		for i, name := range list {
			f := fmt.Sprintf("%s.%d", field, i)
			m, ok := find(name)
			switch {
			case !ok:
				v.add("error", "mounts.unknown", f, st, fmt.Sprintf("mount '%s' is not served by the host; mounts: %s", name, listOrNone(names)))
			case st != nil && m.Governed && !enabled[name]:
				v.add("warning", "governance.inert-entry", f, st, fmt.Sprintf("state '%s' forbids the governed mount '%s', which nothing grants: the denial changes nothing", st.Slug, name))
			}
		}
	}
	forbids("mounts.forbid_always", nil, v.sp.Mounts.Forbid)
	for _, st := range v.sp.States {
		forbids("states."+st.Slug+".mounts.forbid", st, st.Mounts.Forbid)
	}
	if _, _, declared := v.sp.Locate("mounts"); !declared && governed {
		v.add("warning", "mounts.block-missing", "mounts", nil,
			"the host serves governed mounts but the workflow has no root 'mounts' block: no state reaches any of them")
	}
}

// leftovers: a hooks/ folder beside workflow.yaml is a pre-1.0 leftover the loader ignores
// (spec 01 §1 item 5, P-20).
func (v *run) leftovers() error {
	fi, err := v.files.Stat(v.ctx, path.Join("workflows", v.slug, "hooks"))
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Dir {
		v.diags = append(v.diags, spec.Diagnostic{Severity: "warning", Code: "hooks.leftover", File: path.Join("workflows", v.slug, "hooks"),
			Message: "a hooks/ folder is a pre-1.0 leftover the runtime ignores: hooks are code states now"})
	}
	return nil
}

// cases: every case file's schema errors (V-29), a trigger no state declares and a
// `from:` fixture that escapes tests/ or does not exist.
func (v *run) cases() error {
	testsDir := path.Join("workflows", v.slug, "tests")
	found, err := runner.DiscoverCases(v.ctx, v.files, testsDir)
	if err != nil {
		return err
	}
	for _, c := range found {
		if c.ParseError != "" { // the runner's own read and parse (spec 04 CD-01b)
			var se *cases.CaseSchemaError
			if !errors.As(c.Err, &se) {
				v.diags = append(v.diags, spec.Diagnostic{Severity: "error", Code: "case.invalid", File: c.File, Message: c.ParseError})
				continue
			}
			for _, is := range se.Issues {
				v.diags = append(v.diags, spec.Diagnostic{Severity: "error", Code: "case.invalid", Field: is.Path, File: c.File,
					Line: is.Line, Column: is.Column, Message: is.Message})
			}
			continue
		}
		if c.Doc == nil {
			continue
		}
		var tree *yamltree.Node // the file's positions, decoded when a finding needs one
		at := func(d spec.Diagnostic, keys ...string) spec.Diagnostic {
			if tree == nil {
				tree, _ = yamltree.Decode(c.Source, yamltree.Options{})
			}
			d.Line, d.Column = keyPosition(tree, keys...)
			return d
		}
		if id := c.Doc.TriggerID(); v.sp != nil && id != spec.ManualTrigger && v.sp.Trigger(id) == nil {
			v.diags = append(v.diags, at(spec.Diagnostic{Severity: "error", Code: "case.unknown-trigger", Field: "trigger.id", File: c.File,
				Message: fmt.Sprintf("the case starts with trigger '%s', which no state of workflow '%s' declares", id, v.slug)}, "trigger", "id"))
		}
		for _, e := range c.Doc.Workspace {
			if e.Source != cases.WorkspaceFile {
				continue
			}
			field := "workspace." + e.Path
			fixture, err := cases.FixturePath(e.From)
			if err != nil {
				v.diags = append(v.diags, at(spec.Diagnostic{Severity: "error", Code: "case.fixture-escapes", Field: field, File: c.File, Message: err.Error()},
					"workspace", e.Path, "from"))
				continue
			}
			if _, err := v.files.Stat(v.ctx, path.Join(testsDir, fixture)); errors.Is(err, store.ErrNotFound) {
				v.diags = append(v.diags, at(spec.Diagnostic{Severity: "error", Code: "case.fixture-missing", Field: field, File: c.File,
					Message: fmt.Sprintf("workspace entry '%s' references 'from: %s', but %s/%s does not exist", e.Path, e.From, testsDir, fixture)},
					"workspace", e.Path, "from"))
			} else if err != nil {
				return err
			}
		}
	}
	return nil
}

// keyPosition is the 1-based line and column of the value under keys in a decoded YAML
// document (the key itself when the value is missing), or zeros.
func keyPosition(n *yamltree.Node, keys ...string) (line, col int) {
	for _, k := range keys {
		if n == nil {
			return line, col
		}
		e := n.Entry(k)
		if e == nil {
			return line, col
		}
		line, col, n = e.Line, e.Col, e.Val
	}
	if n != nil && n.Line > 0 {
		line, col = n.Line, n.Col
	}
	return line, col
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "(none)"
	}
	return strings.Join(names, ", ")
}
