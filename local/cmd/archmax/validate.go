package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/spf13/cobra"

	"github.com/archmax-ai/archmax/core/hostconfig"
	"github.com/archmax-ai/archmax/core/hosttool"
	"github.com/archmax-ai/archmax/core/hosttool/mcptool"
	"github.com/archmax-ai/archmax/core/machine"
	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/store"
	"github.com/archmax-ai/archmax/core/store/fs"
	"github.com/archmax-ai/archmax/core/validate"
	"github.com/archmax-ai/archmax/functions/handlers/hostenv"
	"github.com/archmax-ai/archmax/local/runner"
)

// newValidateCommand is `archmax validate`: validate.Workflow (spec 01 §8.1 validateWorkflow)
// for each named workflow, or every workflow of the workspace, printing every finding as
// `file:line:col: severity code: message [field]` with its fix hint on the next line.
func newValidateCommand(code *int) *cobra.Command {
	var workspace, region string
	var jsonOut, online bool
	cmd := &cobra.Command{
		Use:   "validate [flags] [WORKFLOW…]",
		Short: "Check workflow definitions; every workflow of the workspace when none is named",
		Long: `Check workflows/<slug>/ the way the runtime loads it and more: the schema and document rules
(which block loading), the lint rules and the state-graph analysis, then what needs the workspace —
slugs, the runtime contract, code-state scripts, skills, kernel probes of the grants, the delegation
graph through sibling workflows, and the case files under tests/. No model is called.

The workspace's host file, archmax.host.yaml, is checked with every workflow: its own findings
(printed once), each mount's dir as local runs resolve it on this machine (links followed; a
missing dir is a warning when the mount also has an s3 location, as is an s3-only mount), a
granted tool it does not declare (an error; a warning when the workspace has no host file), and
the workflows' mounts against its mounts (the default mounts only without a host file).

Every problem goes to stderr as file:line:col: severity code: message [field], with a hint on how
to fix it on the next line. stdout gets the verdict, "valid — N error(s), N warning(s)" or
"invalid — …" (one line per workflow, "<workflow>: valid — …", when several are checked); with
--json it gets {"workflow", "valid", "diagnostics"} instead — one object for one workflow, a JSON
array of them for several.

Exit status: 0 clean (warnings allowed), 1 errors found, 2 usage error.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			files, err := fs.OpenFilesReadOnly(workspace)
			if err != nil {
				return usageError{fmt.Errorf("workspace %q: %w", workspace, err)}
			}
			ctx := context.Background()
			slugs := args
			if len(slugs) == 0 {
				if slugs, err = workflowFolders(ctx, files, cmd.ErrOrStderr()); err != nil {
					return err
				}
				if len(slugs) == 0 {
					return usageError{fmt.Errorf("no workflows/<slug>/workflow.yaml in workspace %q", workspace)}
				}
			}
			host, err := validate.ReadHost(ctx, files)
			if err != nil {
				return err
			}
			// the mounts' dirs as local runs resolve and refuse them, on this machine
			// (hostconfig.LocalMountProblem, which local/runner runs)
			host.Diagnostics = append(host.Diagnostics, hostconfig.LocalMountDiagnostics(host.Config, host.Diagnostics,
				hostconfig.LocalRoots{Workspace: workspace})...)
			host.Diagnostics = append(host.Diagnostics, budgetSlugFindings(ctx, files, host.Config)...) // budgets of no workflow
			// a bad ARCHMAX_SESSION_TTL without a retention: section, as local runs refuse it (RD22-18)
			if _, err := runner.SessionTTL(os.Getenv, host.Config); err != nil {
				host.Diagnostics = append(host.Diagnostics, spec.Diagnostic{Severity: "error", Code: "env.invalid", Field: runner.EnvSessionTTL,
					Message: err.Error(), Hint: "fix the variable (your environment or .env), or give the host file a retention: section, which replaces it"})
			}
			if online {
				host.Diagnostics = append(host.Diagnostics, validate.Online(ctx, host, mcpLister(region))...)
			}
			opts := validate.Options{Host: host}
			if !host.Present {
				// no host file: the host serves the default mounts only (every mount comes
				// from the file), so a grant of any other is mounts.unknown, as with a file
				opts.Mounts = machine.DefaultMounts
			}
			var reports []validationReport
			for _, slug := range slugs {
				res, err := validate.Workflow(ctx, files, slug, opts)
				if err != nil {
					return err
				}
				// the host file's own findings belong to every workflow it serves: a workflow
				// does not load under a host file that does not (they are printed once)
				diags := append(slices.Clone(host.Diagnostics), res.Diagnostics...)
				diags = append(diags, budgetFindings(ctx, files, slug, host.Config, os.Getenv)...) // a USD budget needs prices
				spec.SortDiagnostics(diags)
				rep := validationReport{Workflow: slug, Valid: true, Diagnostics: diags}
				if rep.Diagnostics == nil {
					rep.Diagnostics = []spec.Diagnostic{}
				}
				for _, d := range rep.Diagnostics {
					if d.Severity == "error" {
						rep.Valid = false
					}
				}
				if !rep.Valid {
					*code = exitFail
				}
				reports = append(reports, rep)
			}
			printValidation(cmd.OutOrStdout(), cmd.ErrOrStderr(), reports, jsonOut)
			return nil
		},
	}
	cmd.Flags().SetNormalizeFunc(rootAlias)
	cmd.Flags().StringVar(&workspace, "workspace", ".", "the authored workspace: workflows/, skills/, AGENTS.md (also --root DIR)")
	cmd.Flags().BoolVar(&online, "online", false, "also list each MCP server of archmax.host.yaml (tools/list) and check its expose list against it")
	cmd.Flags().StringVar(&region, "region", "", "AWS region for --online's SigV4 and secrets (default from the environment)")
	cmd.Flags().BoolVar(&jsonOut, "json", false, `print {"workflow", "valid", "diagnostics"} on stdout (an array of them for several workflows)`)
	return cmd
}

// mcpLister lists an MCP server's tools with the host file's auth (mcptool.List).
func mcpLister(region string) validate.MCPLister {
	deps := hostenv.Local(region).Deps()
	return func(ctx context.Context, srv hostconfig.MCPServer) ([]validate.MCPTool, error) {
		d, err := deps(ctx)
		if err != nil {
			return nil, err
		}
		if srv.Auth == nil { // no auth: no AWS configuration needed
			d = hosttool.Deps{}
		}
		infos, err := mcptool.List(ctx, srv, d)
		if err != nil {
			return nil, err
		}
		out := make([]validate.MCPTool, 0, len(infos))
		for _, t := range infos {
			out = append(out, validate.MCPTool{Name: t.Name, InputSchema: t.InputSchema})
		}
		return out, nil
	}
}

// workflowFolders lists the workflows validate checks when none is named: the folders under
// workflows/ holding a workflow.yaml (or a WORKFLOW.md, whose layout validate reports on);
// any other folder is no workflow, said on stderr and skipped, as the reference infers the
// one workflow of a workspace.
func workflowFolders(ctx context.Context, files store.Files, stderr io.Writer) ([]string, error) {
	all, err := validate.Workflows(ctx, files)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, slug := range all {
		_, yamlErr := files.Stat(ctx, "workflows/"+slug+"/workflow.yaml")
		_, mdErr := files.Stat(ctx, "workflows/"+slug+"/WORKFLOW.md")
		if yamlErr == nil || mdErr == nil {
			out = append(out, slug)
			continue
		}
		fmt.Fprintf(stderr, "workflows/%s/ holds no workflow.yaml: not a workflow, skipped\n", slug)
	}
	return out, nil
}

// validationReport is one workflow's --json object, the reference CLI's shape.
type validationReport struct {
	Workflow    string            `json:"workflow"`
	Valid       bool              `json:"valid"`
	Diagnostics []spec.Diagnostic `json:"diagnostics"`
}

// printValidation prints every finding on stderr, then the verdict line(s) — or the --json
// document — on stdout.
func printValidation(stdout, stderr io.Writer, reports []validationReport, jsonOut bool) {
	total := 0
	printed := map[spec.Diagnostic]bool{} // the host file's findings stand in every report
	for _, rep := range reports {
		total += len(rep.Diagnostics)
		for _, d := range rep.Diagnostics {
			if d.File == hostconfig.File {
				if printed[d] {
					continue
				}
				printed[d] = true
			}
			fmt.Fprintln(stderr, diagnosticLine(d))
			if d.Hint != "" {
				fmt.Fprintf(stderr, "    hint: %s\n", d.Hint)
			}
		}
	}
	if total == 0 {
		fmt.Fprintln(stderr, "no problems found")
	}
	if jsonOut {
		if len(reports) == 1 {
			_ = printJSON(stdout, reports[0])
		} else {
			_ = printJSON(stdout, reports)
		}
		return
	}
	for _, rep := range reports {
		errs := 0
		for _, d := range rep.Diagnostics {
			if d.Severity == "error" {
				errs++
			}
		}
		verdict := "valid"
		if !rep.Valid {
			verdict = "invalid"
		}
		line := fmt.Sprintf("%s — %d error(s), %d warning(s)", verdict, errs, len(rep.Diagnostics)-errs)
		if len(reports) > 1 {
			line = rep.Workflow + ": " + line
		}
		fmt.Fprintln(stdout, line)
	}
}
