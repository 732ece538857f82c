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
	aws                                                              bool
	awsOpts                                                          runner.AWS
}

// awsOnlyFlags are meaningful only with --aws.
var awsOnlyFlags = []string{"table", "bucket", "session-prefix", "endpoint-url", "create-table"}

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

Sessions live in the local store (--store, default .archmax/) unless --aws keeps them in real
AWS services with the caller's credentials (standard credential chain, --region or AWS_REGION):
the session log in the DynamoDB table --table (else ARCHMAX_TABLE), session files and large
values in the S3 bucket --bucket (else ARCHMAX_BUCKET) under --session-prefix (else
ARCHMAX_SESSION_PREFIX, else sessions/). --create-table creates the table if it does not exist.
--endpoint-url points DynamoDB and S3 at one local peer (e.g. LocalStack), with the static
credentials AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY and path-style S3. Specs always come
from --workspace, the local authored tree; the model is still --model-script or --bedrock.

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
				return usageError{errors.New(spec.WorkflowSlugRejection(args[0]))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			vars, err := parseVars(f.vars)
			if err != nil {
				return usageError{err}
			}
			sessionID := f.session
			if sessionID == "" {
				sessionID = spec.MintSessionID()
			} else if _, err := spec.CheckSessionID(sessionID); err != nil {
				return usageError{err}
			}
			r := newRenderer(cmd.OutOrStdout(), f.jsonOut)
			env, err := f.open(cmd, r)
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
	f.addEnvFlags(cmd)
	fl.StringVar(&f.session, "session", "", "session id to run or continue (default: a new session-<uuid>)")
	fl.StringVar(&f.trigger, "trigger", "", "trigger id of the turn (default manual)")
	fl.StringArrayVar(&f.vars, "var", nil, "seed a variable, NAME=VALUE (VALUE is read as JSON when it parses, else as a string); repeatable")
	return cmd
}

// addEnvFlags registers the flags of every command that runs the engine: the workspace,
// the store (local or --aws), the model, and --json.
func (f *runFlags) addEnvFlags(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.workspace, "workspace", ".", "the authored workspace: workflows/, skills/, AGENTS.md")
	fl.StringVar(&f.store, "store", ".archmax", "directory of the local session store")
	fl.StringVar(&f.modelScript, "model-script", "", "serve this scripted model (spec 05) through the Converse fake")
	fl.BoolVar(&f.bedrock, "bedrock", false, "call Amazon Bedrock (standard AWS credential chain)")
	fl.StringVar(&f.modelID, "model", "", "default model id (else ARCHMAX_MODEL)")
	fl.StringVar(&f.region, "region", "", "AWS region for --bedrock and --aws (else AWS_REGION)")
	fl.BoolVar(&f.aws, "aws", false, "keep sessions in DynamoDB and S3 (caller's AWS credentials) instead of --store")
	fl.StringVar(&f.awsOpts.Table, "table", "", "with --aws: DynamoDB table of the session log (else ARCHMAX_TABLE)")
	fl.StringVar(&f.awsOpts.Bucket, "bucket", "", "with --aws: S3 bucket of session files (else ARCHMAX_BUCKET)")
	fl.StringVar(&f.awsOpts.SessionPrefix, "session-prefix", "", "with --aws: S3 key prefix of session files (else ARCHMAX_SESSION_PREFIX, else sessions/)")
	fl.StringVar(&f.awsOpts.Endpoint, "endpoint-url", "", "with --aws: one DynamoDB and S3 endpoint (local peer; static AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, path-style S3)")
	fl.BoolVar(&f.awsOpts.CreateTable, "create-table", false, "with --aws: create the table if it does not exist")
	fl.BoolVar(&f.jsonOut, "json", false, "print events and the outcome as JSON lines")
}

// open checks the shared flags and assembles the environment, events going to r. Flag
// mistakes are usage errors.
func (f *runFlags) open(cmd *cobra.Command, r *renderer) (*runner.Env, error) {
	switch {
	case f.bedrock && f.modelScript != "":
		return nil, usageError{errors.New("--model-script and --bedrock are mutually exclusive: pick one model")}
	case !f.bedrock && f.modelScript == "":
		return nil, usageError{errors.New("choose the model: --model-script FILE (offline) or --bedrock (Amazon Bedrock)")}
	}
	if err := checkAWSFlags(cmd, f.aws); err != nil {
		return nil, usageError{err}
	}
	opts := runner.Options{
		Workspace: f.workspace, StoreDir: f.store, ModelScript: f.modelScript, Bedrock: f.bedrock,
		ModelID: f.modelID, Region: f.region, Events: r.event,
	}
	if f.aws {
		opts.AWS = &f.awsOpts
	}
	env, err := runner.Open(cmd.Context(), opts)
	var se *runner.SettingError
	if errors.As(err, &se) {
		return nil, usageError{err}
	}
	return env, err
}

// checkAWSFlags refuses AWS-only flags without --aws, and --store with it.
func checkAWSFlags(cmd *cobra.Command, aws bool) error {
	if aws {
		if cmd.Flags().Changed("store") {
			return errors.New("--store and --aws are mutually exclusive: with --aws sessions live in DynamoDB and S3")
		}
		return nil
	}
	for _, name := range awsOnlyFlags {
		if cmd.Flags().Changed(name) {
			return fmt.Errorf("--%s needs --aws", name)
		}
	}
	return nil
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
