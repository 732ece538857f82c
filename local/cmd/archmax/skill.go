package main

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/archmax-ai/archmax/local/skill"
)

// newSkillCommand is `archmax skill [FILE] [--path | --list]`: the bundled authoring skill.
func newSkillCommand(code *int) *cobra.Command {
	var where, list bool
	cmd := &cobra.Command{
		Use:   "skill [FILE] [--path | --list]",
		Short: "Print the bundled authoring skill for coding agents (SKILL.md and its references)",
		Long: `Print the authoring skill this binary carries: SKILL.md by default, or FILE, one of the files
--list names (e.g. references/cases.md, schema/workflow.schema.json). The skill teaches a coding
agent to write workflows, scripts and cases for this runtime; its references are the authoring
guide.

--path writes the skill to a folder of the user cache (archmax/skill/<version>/archmax-harness,
refreshed on every call) and prints that folder, for tools that install a skill from a
directory. 'archmax init' puts a copy into a new workspace's .agents/skills/.

Exit status: 0 printed, 1 FILE is not part of the skill or the cache cannot be written, 2 usage
error.`,
		Example: `  archmax skill | less
  archmax skill references/code-states.md
  cp -r "$(archmax skill --path)" ~/.claude/skills/`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageError{fmt.Errorf("skill takes at most one FILE (got %d arguments)", len(args))}
			}
			if len(args) == 1 && (where || list) {
				return usageError{fmt.Errorf("FILE cannot be combined with --path or --list")}
			}
			if where && list {
				return usageError{fmt.Errorf("--path and --list cannot be combined")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			switch {
			case list:
				files, err := skill.Files(skill.Skill())
				if err != nil {
					return err
				}
				fmt.Fprintln(out, strings.Join(files, "\n"))
			case where:
				base, err := os.UserCacheDir()
				if err != nil {
					return fmt.Errorf("no user cache folder to write the skill to: %w", err)
				}
				dir, err := skill.WriteSkill(filepath.Join(base, "archmax", "skill", cacheVersion()))
				if err != nil {
					return err
				}
				fmt.Fprintln(out, dir)
			default:
				name := "SKILL.md"
				if len(args) == 1 {
					name = path.Clean(strings.TrimPrefix(filepath.ToSlash(args[0]), skill.Name+"/"))
				}
				b, err := fs.ReadFile(skill.Skill(), name)
				if err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "archmax: '%s' is not a file of the skill ('archmax skill --list' names them)\n", args[0])
					*code = exitFail
					return nil
				}
				_, err = out.Write(b)
				return err
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&where, "path", false, "write the skill to the user cache and print its folder")
	cmd.Flags().BoolVar(&list, "list", false, "list the skill's files")
	return cmd
}

// cacheVersion names the cache folder of this build's skill: the module version, else "devel".
func cacheVersion() string {
	v := strings.Fields(versionLine())[1]
	return strings.NewReplacer("/", "_", "\\", "_").Replace(v)
}
