package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/archmax-ai/archmax/local/skill"
)

// newInitCommand is `archmax init [DIR]`: the starter workspace and the bundled authoring skill.
func newInitCommand(code *int) *cobra.Command {
	return &cobra.Command{
		Use:   "init [DIR]",
		Short: "Write a starter workspace (one workflow, a case, the authoring skill) into DIR",
		Long: `Write a starter workspace into DIR (default: the current directory), created when missing:

  AGENTS.md                              the prompt layer every session's model reads
  README.md, .gitignore                  for you (.archmax/ and .env stay out of git)
  workflows/leave-request/workflow.yaml  a code state, an agent state and a human state
  workflows/leave-request/scripts/       the code state's script
  workflows/leave-request/tests/         a case and the scripted model it runs offline with
  .agents/skills/archmax-harness/        the authoring skill for a coding agent (archmax skill)

The YAML files carry '# yaml-language-server: $schema=…' headers pointing at the skill's
schema/ folder, so an editor completes and checks them. The workspace passes 'archmax validate'
and 'archmax test' as written. Nothing is replaced: when any of these files already exists,
init names them and writes nothing.

Exit status: 0 written, 1 a file is in the way or DIR cannot be written, 2 usage error.`,
		Example: `  archmax init my-desk && cd my-desk && archmax validate && archmax test`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageError{fmt.Errorf("init takes at most one DIR (got %d arguments)", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			files, err := skill.Init(dir)
			var conflict *skill.ConflictError
			if errors.As(err, &conflict) {
				fmt.Fprintf(cmd.ErrOrStderr(), "archmax: init would replace %s in %s; nothing was written (move them away, or init another directory)\n",
					strings.Join(conflict.Paths, ", "), dir)
				*code = exitFail
				return nil
			}
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			own := 0
			for _, f := range files {
				if !strings.HasPrefix(f, skill.InstallDir+"/") {
					fmt.Fprintln(out, filepath.ToSlash(filepath.Join(dir, f)))
					own++
				}
			}
			fmt.Fprintln(out, filepath.ToSlash(filepath.Join(dir, skill.InstallDir))+"/ ("+fmt.Sprint(len(files)-own)+" files)")
			root := ""
			if dir != "." {
				root = " --root " + dir
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "next: archmax validate%s && archmax test%s\n", root, root)
			return nil
		},
	}
}
