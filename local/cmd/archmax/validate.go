package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"

	"github.com/archmax-ai/archmax/core/cases"
	"github.com/archmax-ai/archmax/core/cases/runner"
	"github.com/archmax-ai/archmax/core/machine"
	"github.com/archmax-ai/archmax/core/sandbox"
	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/store/fs"
)

// newValidateCommand checks workflows the way the loader does: the strict schema and the
// document rules that block loading (spec 01 §8), plus each code state's script (exists,
// parses, imports only @archmax-ai/harness/*: V-22, V-23). The complete validator (lint,
// skills, mounts, delegation) lands with the validation issue.
func newValidateCommand(code *int) *cobra.Command {
	var workspace string
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "validate [flags] [WORKFLOW…]",
		Short: "Check workflow definitions; every workflow of the workspace when none is named",
		Long: `Check workflows/<slug>/workflow.yaml the way the runtime loads it and print every problem as
file:line:col: severity code: message. Also checks each code state's script file.

Exit status: 0 clean, 1 errors found, 2 usage error.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			slugs := args
			if len(slugs) == 0 {
				entries, err := os.ReadDir(filepath.Join(workspace, "workflows"))
				if err != nil {
					return usageError{fmt.Errorf("no workflows/ directory in workspace %q", workspace)}
				}
				for _, e := range entries {
					if e.IsDir() {
						slugs = append(slugs, e.Name())
					}
				}
			}
			var all []spec.Diagnostic
			for _, slug := range slugs {
				all = append(all, validateWorkflow(workspace, slug)...)
			}
			printDiagnostics(cmd.OutOrStdout(), all, jsonOut)
			if slices.ContainsFunc(all, func(d spec.Diagnostic) bool { return d.Severity == "error" }) {
				*code = exitFail
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&workspace, "workspace", ".", "the authored workspace: workflows/, skills/, AGENTS.md")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print the diagnostics as a JSON array")
	return cmd
}

func validateWorkflow(workspace, slug string) []spec.Diagnostic {
	file := filepath.ToSlash(filepath.Join("workflows", slug, "workflow.yaml"))
	if !spec.IsSlug(slug) {
		return []spec.Diagnostic{{Severity: "error", Code: "slug.invalid", Field: "workflow", File: file, Message: slugMessage(slug)}}
	}
	src, err := os.ReadFile(filepath.Join(workspace, file))
	if err != nil {
		return []spec.Diagnostic{{Severity: "error", Code: "spec.missing", File: file, Message: fmt.Sprintf("No workflow.yaml found for workflow '%s'", slug)}}
	}
	sp, diags := spec.Parse(file, src)
	for i := range diags {
		if diags[i].File == "" {
			diags[i].File = file
		}
	}
	if sp == nil {
		return append(diags, validateCases(workspace, slug)...)
	}
	diags = append(diags, spec.Lint(sp, file)...)
	diags = append(diags, machine.GraphDiagnostics(sp, file)...)
	diags = append(diags, delegationDiagnostics(workspace, file, slug, sp)...)
	for _, st := range sp.States {
		if st.Type != "code" || st.Script == "" {
			continue
		}
		script := filepath.ToSlash(filepath.Join("workflows", slug, st.Script))
		body, err := os.ReadFile(filepath.Join(workspace, script))
		if err != nil {
			diags = append(diags, spec.Diagnostic{Severity: "error", Code: "code.script-missing", Field: "states." + st.Slug + ".script",
				File: file, Line: st.Line, Column: st.Column, Message: fmt.Sprintf("code state '%s' script not found: %s", st.Slug, st.Script)})
			continue
		}
		if err := sandbox.Prepare(st.Script, body); err != nil {
			d := spec.Diagnostic{Severity: "error", Code: "script.invalid", Field: "states." + st.Slug + ".script", File: script, Message: err.Error()}
			var ie *sandbox.ImportError
			var se *sandbox.SyntaxError
			switch {
			case errors.As(err, &ie):
				d.Code, d.Line, d.Column = "script.foreign-import", ie.Line, ie.Column
			case errors.As(err, &se):
				d.Line, d.Column = se.Line, se.Column
			}
			diags = append(diags, d)
		}
	}
	return append(diags, validateCases(workspace, slug)...)
}

// validateCases reports every schema error of the workflow's case files as an error,
// with the runner's own parser (spec 04 CD-01b, RV-21).
func validateCases(workspace, slug string) []spec.Diagnostic {
	authored, err := fs.OpenFilesReadOnly(workspace)
	if err != nil {
		return nil
	}
	found, err := runner.DiscoverCases(context.Background(), authored, "workflows/"+slug+"/tests")
	if err != nil {
		return []spec.Diagnostic{{Severity: "error", Code: "case.unreadable", File: "workflows/" + slug + "/tests", Message: err.Error()}}
	}
	var diags []spec.Diagnostic
	for _, c := range found {
		if c.ParseError == "" {
			continue
		}
		src, _ := authored.Read(context.Background(), c.File)
		_, perr := cases.ParseCaseDocument(c.File, src)
		var se *cases.CaseSchemaError
		if !errors.As(perr, &se) {
			diags = append(diags, spec.Diagnostic{Severity: "error", Code: "case.invalid", File: c.File, Message: c.ParseError})
			continue
		}
		for _, is := range se.Issues {
			diags = append(diags, spec.Diagnostic{Severity: "error", Code: "case.invalid", Field: is.Path, File: c.File,
				Line: is.Line, Column: is.Column, Message: is.Message})
		}
	}
	return diags
}

// slugMessage is the workflow-slug diagnostic of spec 01 §6.1.
func slugMessage(slug string) string {
	if slug == "" {
		return "No workflow slug provided; name the workflow by its 'workflows/<slug>/' directory (e.g. 'order-lookup')."
	}
	return fmt.Sprintf("Workflow slug '%s' is not hyphen-separated kebab-case; rename the 'workflows/%s/' directory to lowercase segments joined by single hyphens (e.g. 'order-lookup').", slug, slug)
}

func printDiagnostics(w io.Writer, diags []spec.Diagnostic, jsonOut bool) {
	if jsonOut {
		if diags == nil {
			diags = []spec.Diagnostic{}
		}
		b, _ := json.MarshalIndent(diags, "", "  ")
		fmt.Fprintf(w, "%s\n", b)
		return
	}
	for _, d := range diags {
		loc := d.File
		if d.Line > 0 {
			loc = fmt.Sprintf("%s:%d:%d", d.File, d.Line, d.Column)
		}
		field := ""
		if d.Field != "" {
			field = " [" + d.Field + "]"
		}
		fmt.Fprintf(w, "%s: %s %s: %s%s\n", loc, d.Severity, d.Code, d.Message, field)
	}
	if len(diags) == 0 {
		fmt.Fprintln(w, "no problems found")
	}
}
