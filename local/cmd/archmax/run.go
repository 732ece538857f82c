package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/local/runner"
)

type runFlags struct {
	workspace, session, store, modelScript, trigger, modelID, region string
	bedrock, jsonOut                                                 bool
	vars                                                             []string
}

func newRunCommand(code *int) *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run [flags] WORKFLOW MESSAGE",
		Short: "Run one turn of a workflow and print the state flow",
		Long: `Run one turn of WORKFLOW (workflows/<slug>/ in the workspace) with MESSAGE as the person's
message, printing the states entered, tool calls and refusals, moves, the reply and the outcome.

A new session is minted per run unless --session names one; running the same --session again
continues that session in the state it ended in.

The model is either a scripted model (--model-script FILE, offline: served by the in-process
Converse-protocol fake and reached through the real Bedrock client) or Amazon Bedrock (--bedrock,
with the standard AWS credential chain and ARCHMAX_MODEL or --model).

Exit status: 0 completed or parked, 1 failed or rejected (or the call was refused), 2 usage error.`,
		Example: `  archmax run --workspace fixtures/access-desk \
    --model-script fixtures/access-desk/model-scripts/happy.model.yaml \
    access-request "Hi, I'm Dana from the platform team. I need badge access to the east lab, please."`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usageError{fmt.Errorf("run needs exactly two arguments, WORKFLOW and MESSAGE (got %d)", len(args))}
			}
			if strings.TrimSpace(args[1]) == "" {
				return usageError{errors.New("MESSAGE is empty: say what is being asked")}
			}
			if !spec.IsSlug(args[0]) {
				return usageError{errors.New(slugMessage(args[0]))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			vars, err := parseVars(f.vars)
			if err != nil {
				return usageError{err}
			}
			switch {
			case f.bedrock && f.modelScript != "":
				return usageError{errors.New("--model-script and --bedrock are mutually exclusive: pick one model")}
			case !f.bedrock && f.modelScript == "":
				return usageError{errors.New("choose the model: --model-script FILE (offline) or --bedrock (Amazon Bedrock)")}
			}
			sessionID := f.session
			if sessionID == "" {
				sessionID = spec.MintSessionID()
			} else if _, err := spec.CheckSessionID(sessionID); err != nil {
				return usageError{err}
			}
			r := newRenderer(cmd.OutOrStdout(), f.jsonOut)
			env, err := runner.Open(cmd.Context(), runner.Options{
				Workspace: f.workspace, StoreDir: f.store, ModelScript: f.modelScript, Bedrock: f.bedrock,
				ModelID: f.modelID, Region: f.region, Events: r.event,
			})
			if err != nil {
				return err
			}
			defer env.Close()
			eng, err := env.Engine(args[0])
			if err != nil {
				return err
			}
			r.header(sessionID, args[0])
			out, err := eng.Send(cmd.Context(), sessionID, session.SendInput{Message: args[1], Variables: vars, Trigger: f.trigger})
			if err != nil {
				return err
			}
			r.outcome(out)
			if out.Kind == session.KindFailed || out.Kind == session.KindRejected {
				*code = exitFail
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.workspace, "workspace", ".", "the authored workspace: workflows/, skills/, AGENTS.md")
	fl.StringVar(&f.session, "session", "", "session id to run or continue (default: a new session-<uuid>)")
	fl.StringVar(&f.store, "store", ".archmax", "directory of the local session store")
	fl.StringVar(&f.modelScript, "model-script", "", "serve this scripted model (spec 05) through the Converse fake")
	fl.BoolVar(&f.bedrock, "bedrock", false, "call Amazon Bedrock (standard AWS credential chain)")
	fl.StringVar(&f.modelID, "model", "", "default model id (else ARCHMAX_MODEL)")
	fl.StringVar(&f.region, "region", "", "AWS region for --bedrock (else AWS_REGION)")
	fl.StringVar(&f.trigger, "trigger", "", "trigger id of the turn (default manual)")
	fl.StringArrayVar(&f.vars, "var", nil, "seed a variable, NAME=VALUE (VALUE is read as JSON when it parses, else as a string); repeatable")
	fl.BoolVar(&f.jsonOut, "json", false, "print events and the outcome as JSON lines")
	return cmd
}

// parseVars reads --var NAME=VALUE pairs; a VALUE that parses as JSON keeps its type.
func parseVars(pairs []string) (map[string]any, error) {
	vars := map[string]any{}
	for _, p := range pairs {
		name, value, ok := strings.Cut(p, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("--var %q: expected NAME=VALUE", p)
		}
		if !spec.IsVariableName(name) {
			return nil, fmt.Errorf("--var %q: '%s' is not a valid variable name (lowercase letters, digits and underscores, starting with a letter)", p, name)
		}
		var v any
		if err := json.Unmarshal([]byte(value), &v); err != nil {
			v = value
		}
		vars[name] = v
	}
	return vars, nil
}
