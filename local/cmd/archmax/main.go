// Command archmax is the local CLI of the archmax runtime: `archmax run` runs a turn of a
// workflow and prints the state flow — on the embedded default (fs store under .archmax/)
// or, with --aws, with its session in DynamoDB and S3; the model is a scripted one behind
// the Converse fake, or Amazon Bedrock with --bedrock. `archmax serve` serves the session
// HTTP API locally with timed wakes; `archmax decide` and `archmax deliver` resume parked
// sessions. `archmax validate` checks specs.
package main

import (
	"context"
	"errors"
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

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(execute(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// execute runs the CLI with args and returns the process exit code.
func execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := &cobra.Command{
		Use:           "archmax",
		Short:         "Run governed LLM-agent workflows locally",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetArgs(args)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	code := exitOK
	root.AddCommand(newRunCommand(&code), newDecideCommand(&code), newDeliverCommand(&code), newValidateCommand(&code), newTestCommand(&code), newGraphCommand(&code), newServeCommand())
	err := root.ExecuteContext(ctx)
	if err == nil {
		return code
	}
	var ue usageError
	if errors.As(err, &ue) || isCobraUsage(err) {
		help := "archmax --help"
		if len(args) > 0 && (args[0] == "run" || args[0] == "validate" || args[0] == "serve" || args[0] == "decide" || args[0] == "deliver") {
			help = "archmax " + args[0] + " --help"
		}
		fmt.Fprintf(stderr, "archmax: %v\nRun '%s' for usage.\n", err, help)
		return exitUsage
	}
	fmt.Fprintf(stderr, "archmax: %v\n", err)
	return exitFail
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
