package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/archmax-ai/archmax/core/machine"
	"github.com/archmax-ai/archmax/core/spec"
)

// newGraphCommand exports a workflow's derived topology (spec 01 §3.7).
func newGraphCommand(code *int) *cobra.Command {
	var workspace, out string
	var mermaid bool
	cmd := &cobra.Command{
		Use:   "graph [flags] WORKFLOW",
		Short: "Export a workflow's state graph as graph.json or Mermaid",
		Long: `Print WORKFLOW's state graph, derived from its workflow.yaml: graph.json (nodes, edges with
conditional and label, entry, finals) by default, or the Mermaid flowchart with --mermaid.
--out DIR writes both files, DIR/graph.json and DIR/graph.mmd, instead.

Exit status: 0 written, 1 the workflow does not load, 2 usage error.`,
		Example: `  archmax graph --workspace fixtures/access-desk access-request
  archmax graph --workspace fixtures/access-desk --mermaid exception-request`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError{fmt.Errorf("graph takes exactly one WORKFLOW (got %d arguments)", len(args))}
			}
			if !spec.IsSlug(args[0]) {
				return usageError{errors.New(spec.WorkflowSlugRejection(args[0]))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			file := filepath.ToSlash(filepath.Join("workflows", args[0], "workflow.yaml"))
			src, err := os.ReadFile(filepath.Join(workspace, file))
			if err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "archmax: no workflow.yaml for workflow '%s' in workspace %q\n", args[0], workspace)
				*code = exitFail
				return nil
			}
			sp, err := spec.Load(args[0], file, src)
			if err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "archmax: %v\n", err)
				*code = exitFail
				return nil
			}
			g := machine.GraphOf(sp)
			js, _ := json.MarshalIndent(g, "", "  ")
			mmd := g.Mermaid(sp)
			switch {
			case out != "":
				if err := os.MkdirAll(out, 0o755); err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(out, "graph.json"), append(js, '\n'), 0o644); err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(out, "graph.mmd"), []byte(mmd+"\n"), 0o644); err != nil {
					return err
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s and %s\n", filepath.Join(out, "graph.json"), filepath.Join(out, "graph.mmd"))
			case mermaid:
				fmt.Fprint(cmd.OutOrStdout(), mmd)
			default:
				fmt.Fprintf(cmd.OutOrStdout(), "%s\n", js)
			}
			return nil
		},
	}
	cmd.Flags().SetNormalizeFunc(rootAlias)
	cmd.Flags().StringVar(&workspace, "workspace", ".", "the authored workspace: workflows/, skills/, AGENTS.md (also --root DIR)")
	cmd.Flags().StringVar(&out, "out", "", "write graph.json and graph.mmd into this directory")
	cmd.Flags().BoolVar(&mermaid, "mermaid", false, "print the Mermaid flowchart instead of graph.json")
	return cmd
}
