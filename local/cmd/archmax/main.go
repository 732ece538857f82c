// Command archmax is the local CLI of the archmax runtime: `archmax run` runs a turn of a
// workflow and prints the state flow — on the embedded default (fs store under .archmax/)
// or, with --aws, with its session in DynamoDB and S3; the model is a scripted one behind
// the Converse fake, or Amazon Bedrock with --bedrock. `archmax serve` serves the session
// HTTP API locally with timed wakes; `archmax decide`, `archmax deliver` and `archmax reply`
// answer parked sessions and `archmax sessions` reads them. `archmax validate` checks specs,
// `archmax test` runs cases, `archmax graph` exports a state graph.
//
// Streams, as the reference CLI's: a command's result (a reply, a summary line, a listing, a
// --json document) goes to stdout; the narration (the state flow, park reports, usage
// footers, --verbose lines, diagnostics, errors) to stderr.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/spf13/cobra"
)

// Exit codes.
const (
	exitOK    = 0
	exitFail  = 1 // the run failed or was rejected, or the runtime refused the call
	exitUsage = 2 // bad flags or arguments
)

type usageError struct{ error }

// stdin is where "-" reads a prompt from (tests replace it).
var stdin io.Reader = os.Stdin

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(execute(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// execute runs the CLI with args and returns the process exit code.
func execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := &cobra.Command{
		Use:   "archmax",
		Short: "Run governed LLM-agent workflows locally",
		Long: `Run governed LLM-agent workflows locally: command lines written for the @archmax-ai/harness 1.0
CLI run unchanged (run, test, validate, sessions, decide, reply, deliver, help), beside this
runtime's own commands (serve, graph, init, skill, redrive) and flags.

A command's result goes to stdout (a reply, a verdict or summary line, a listing, a --json
document); the narration (the state flow, park reports, usage, --verbose lines, diagnostics,
errors) to stderr. Exit 0 done (a park counts), 1 a failure, 2 a usage error. .env is loaded from
the current directory and the workspace root (--workspace, or --root); the process environment
wins. The model: --model-script FILE or --bedrock, else ARCHMAX_MODEL_SCRIPT, else Bedrock when
ARCHMAX_MODEL is set.

A failure the CLI knows how to fix is followed by a "hint:" line; with --json every failure is
also one line {"error": {"code", "message", "details"}} on stdout. On a terminal the narration is
coloured (NO_COLOR or --no-color turns that off), the agent's text is printed as it arrives, and a
step running longer than a second shows a progress line. 'archmax completion bash|zsh|fish|powershell'
prints a shell completion script (workflow names, session ids, decision targets). Sessions live in
.archmax/ in the workspace (--store DIR): 'archmax sessions ID' names the folder of a session's files.

Where this CLI differs from the reference's, on purpose: validate with no workflow checks every
workflow of the workspace; run and test read their first argument as the workflow only when the
workspace has it (with one workflow every argument is the prompt or filter); models run on Amazon
Bedrock or a scripted model, never an OpenAI-compatible endpoint (ARCHMAX_API_BASE_URL is not
read); and this runtime's flags stay beside the reference's (--workspace, --var, --park, --message,
--store, --aws, --json on run).`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetIn(stdin)
	root.SetArgs(args)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	if wantsVersion(args) {
		fmt.Fprintln(stdout, versionLine())
		return exitOK
	}
	if len(args) == 0 { // the reference CLI: a command is always required
		root.SetOut(stderr)
		_ = root.Help()
		fmt.Fprintln(stderr, "\narchmax: a command is required")
		return exitUsage
	}
	code := exitOK
	root.AddCommand(newRunCommand(&code), newDecideCommand(&code), newDeliverCommand(&code), newReplyCommand(&code),
		newSessionsCommand(&code), newValidateCommand(&code), newTestCommand(&code), newGraphCommand(&code), newServeCommand(),
		newInitCommand(&code), newSkillCommand(&code), newRedriveCommand(&code))
	root.Flags().Bool("version", false, "print the version and exit (every command takes --version)")
	root.PersistentFlags().Bool(noColorFlag, false, "no colour on a terminal (so does a set NO_COLOR)")
	addCompletions(root) // completion.go: workflow names, session ids, decision targets
	root.SetHelpCommand(&cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		RunE: func(c *cobra.Command, args []string) error {
			target, rest, err := root.Find(args)
			if err != nil || len(rest) > 0 {
				return usageError{fmt.Errorf("unknown command %q (archmax help lists them)", strings.Join(args, " "))}
			}
			return target.Help()
		},
	})
	err := root.ExecuteContext(ctx)
	if err == nil {
		return code
	}
	help := "archmax --help"
	if len(args) > 0 {
		if c, _, ferr := root.Find(args[:1]); ferr == nil && c != root {
			help = "archmax " + c.Name() + " --help"
		}
	}
	return reportError(stdout, stderr, args, err, help) // clierrors.go: the hint, the --json record
}

// wantsVersion reports whether --version appears among args before a "--": every command
// answers it, before its own arguments are checked.
func wantsVersion(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "--version":
			return true
		}
	}
	return false
}

// isCobraUsage recognises cobra's own argument errors (unknown command, wrong arg count).
func isCobraUsage(err error) bool {
	for _, p := range []string{"unknown command", "unknown flag", "accepts ", "requires at least", "invalid argument"} {
		if strings.Contains(err.Error(), p) {
			return true
		}
	}
	return false
}
