package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"

	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/store/fs"
	"github.com/archmax-ai/archmax/core/validate"
)

// newValidateCommand is `archmax validate`: validate.Workflow (spec 01 §8.1 validateWorkflow)
// for each named workflow, or every workflow of the workspace, printing every finding as
// `file:line:col: severity code: message [field]` with its fix hint on the next line.
func newValidateCommand(code *int) *cobra.Command {
	var workspace string
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "validate [flags] [WORKFLOW…]",
		Short: "Check workflow definitions; every workflow of the workspace when none is named",
		Long: `Check workflows/<slug>/ the way the runtime loads it and more: the schema and document rules
(which block loading), the lint rules and the state-graph analysis, then what needs the workspace —
slugs, the runtime contract, code-state scripts, skills, kernel probes of the grants, the delegation
graph through sibling workflows, and the case files under tests/. Every problem is printed as
file:line:col: severity code: message, with a hint on how to fix it.

Exit status: 0 clean (warnings allowed), 1 errors found, 2 usage error.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			files, err := fs.OpenFilesReadOnly(workspace)
			if err != nil {
				return usageError{fmt.Errorf("workspace %q: %w", workspace, err)}
			}
			ctx := context.Background()
			slugs := args
			if len(slugs) == 0 {
				if slugs, err = validate.Workflows(ctx, files); err != nil {
					return err
				}
				if len(slugs) == 0 {
					return usageError{fmt.Errorf("no workflows/<slug>/ folder in workspace %q", workspace)}
				}
			}
			var all []spec.Diagnostic
			for _, slug := range slugs {
				res, err := validate.Workflow(ctx, files, slug, validate.Options{})
				if err != nil {
					return err
				}
				all = append(all, res.Diagnostics...)
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
		switch {
		case d.Line > 0 && d.Column > 0:
			loc = fmt.Sprintf("%s:%d:%d", d.File, d.Line, d.Column)
		case d.Line > 0:
			loc = fmt.Sprintf("%s:%d", d.File, d.Line)
		}
		field := ""
		if d.Field != "" {
			field = " [" + d.Field + "]"
		}
		fmt.Fprintf(w, "%s: %s %s: %s%s\n", loc, d.Severity, d.Code, d.Message, field)
		if d.Hint != "" {
			fmt.Fprintf(w, "    hint: %s\n", d.Hint)
		}
	}
	if len(diags) == 0 {
		fmt.Fprintln(w, "no problems found")
	}
}
