package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/local/runner"
)

// runFlags are the flags of every command that runs the engine: the workspace, the store
// (local or --aws), the model, the output mode, and the command's own inputs.
type runFlags struct {
	workspace, session, store, modelScript, trigger, modelID, region string
	bedrock, jsonOut, verbose                                        bool
	vars                                                             []string
	variables, sessionPath, messageFile, workflow                    string
	aws                                                              bool
	awsOpts                                                          runner.AWS
	env                                                              dotenv // what .env set (loaded by open)
}

// awsOnlyFlags are meaningful only with --aws.
var awsOnlyFlags = []string{"table", "bucket", "session-prefix", "endpoint-url", "create-table"}

func newRunCommand(code *int) *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run [flags] [WORKFLOW] PROMPT...",
		Short: "Run one turn of a workflow; the reply goes to stdout",
		Long: `Run one turn of WORKFLOW (workflows/<slug>/ in the workspace) with PROMPT as the person's
message: the rest of the line is the prompt, so it needs no quoting ("-" reads it from stdin,
--message-file FILE from a file). WORKFLOW may be left out when the workspace holds exactly one
workflow; with several, name it.

The reply goes to stdout, so 'archmax run … > reply.txt' captures it; the narration — the states
entered, tool calls and refusals, moves, the outcome, a park and how to answer it, the token
usage, and with --verbose one raw line per lifecycle event — goes to stderr. --json prints the
lifecycle events and the outcome as JSON lines on stdout instead.

The session: --session ID continues that session (running it again opens in the state it ended
in) or starts one under that id; without it the trigger's 'session:' path is read from the
variables (--session-path PATH overrides the path), else a new session-<uuid> is minted. A
session parked for input takes the turn as a delivery of the trigger, one parked at a human
state as a reply.

Variables: --variables JSON (an object) and --var NAME=VALUE (JSON when it parses, else a
string) seed locked variables; --trigger ID picks the trigger (default manual).

The model is a scripted model (--model-script FILE, offline: served by the in-process
Converse-protocol fake and reached through the real Bedrock client) or Amazon Bedrock
(--bedrock, with the standard AWS credential chain and ARCHMAX_MODEL or --model). With neither
flag, ARCHMAX_MODEL_SCRIPT names a scripted model, else a set ARCHMAX_MODEL selects Bedrock;
.env is loaded from the current directory and then from the workspace root (--workspace, or
--root as the reference CLI spells it), never overriding the process environment.

Sessions live in the local store (--store, default .archmax/) unless --aws keeps them in real
AWS services with the caller's credentials (standard credential chain, --region or AWS_REGION):
the session log in the DynamoDB table --table (else ARCHMAX_TABLE), session files and large
values in the S3 bucket --bucket (else ARCHMAX_BUCKET) under --session-prefix (else
ARCHMAX_SESSION_PREFIX, else sessions/). --create-table creates the table if it does not exist.
--endpoint-url points DynamoDB and S3 at one local peer (e.g. LocalStack), with the static
credentials AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY and path-style S3. Specs always come
from --workspace, the local authored tree.

Exit status: 0 completed or parked, 1 failed or rejected (or the call was refused), 2 usage error.`,
		Example: `  archmax run --workspace fixtures/access-desk \
    --model-script fixtures/access-desk/model-scripts/happy.model.yaml \
    access-request Hi, I am Dana from the platform team. I need badge access to the east lab, please.
  archmax run enrich-order --variables '{"order_id":"ORD-1003"}' Enrich the order
  echo "any news?" | archmax run --session conv-7 order-lookup -`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			workflow, prompt, err := f.workflowAndPrompt(cmd, args)
			if err != nil {
				return err
			}
			vars, err := f.seedVariables()
			if err != nil {
				return usageError{err}
			}
			if f.session != "" {
				if _, err := spec.CheckSessionID(f.session); err != nil {
					return usageError{err}
				}
			}
			r := f.renderer(cmd)
			defer r.stop()
			env, err := f.open(cmd, r)
			if err != nil {
				return err
			}
			defer env.Close()
			f.withParkReader(r, env)
			eng, err := env.Engine(workflow)
			if err != nil {
				return err
			}
			var prior *session.SessionSummary // a session named again: what it was (clierrors.go)
			if f.session != "" {
				prior = priorSession(cmd.Context(), env, f.session)
			}
			res, err := eng.ResolveSession(cmd.Context(), session.ResolveInput{Trigger: f.trigger, Variables: vars,
				SessionID: f.session, SessionPath: f.sessionPath})
			if err != nil {
				return f.turnError(cmd.Context(), env, f.session, prior, err)
			}
			r.header(res.SessionID, workflow)
			out, err := eng.Send(cmd.Context(), res.SessionID, session.SendInput{Message: prompt, Variables: vars, Trigger: f.trigger})
			if err != nil {
				return f.turnError(cmd.Context(), env, res.SessionID, prior, err)
			}
			*code = r.outcome(out, verbRun)
			return nil
		},
	}
	fl := cmd.Flags()
	f.addEnvFlags(cmd)
	fl.StringVar(&f.session, "session", "", "session id to run or continue (default: the trigger's session path, else a new session-<uuid>)")
	fl.StringVar(&f.sessionPath, "session-path", "", "dotted path in the variables holding the session id, overriding the trigger's 'session:'")
	fl.StringVar(&f.trigger, "trigger", "", "trigger id of the turn (default manual)")
	fl.StringVar(&f.messageFile, "message-file", "", `read the prompt from this file ("-": stdin)`)
	f.addVariableFlags(cmd, "seed")
	return cmd
}

// workflowAndPrompt splits run's arguments: the workflow (the first argument when it names a
// workflow of the workspace, else the workspace's only workflow) and the prompt (the rest of
// the line joined with spaces; "-" or --message-file read it).
func (f *runFlags) workflowAndPrompt(cmd *cobra.Command, args []string) (string, string, error) {
	if err := checkWorkspace(f.workspace); err != nil {
		return "", "", err
	}
	workflow, args, err := leadingWorkflow(f.workspace, args)
	if err != nil {
		return "", "", err
	}
	prompt := strings.TrimSpace(strings.Join(args, " "))
	switch {
	case f.messageFile != "" && prompt != "":
		return "", "", usageError{errors.New("--message-file and a prompt on the command line are mutually exclusive: pick one")}
	case f.messageFile == "-" || prompt == "-":
		b, err := io.ReadAll(cmd.InOrStdin())
		if err != nil {
			return "", "", usageError{fmt.Errorf("read the prompt from stdin: %w", err)}
		}
		prompt = strings.TrimSpace(string(b))
	case f.messageFile != "":
		b, err := os.ReadFile(f.messageFile)
		if err != nil {
			return "", "", usageError{fmt.Errorf("--message-file: %w", err)}
		}
		prompt = strings.TrimSpace(string(b))
	}
	if prompt == "" {
		return "", "", usageError{fmt.Errorf("a prompt is required: archmax run %s <prompt…> — the rest of the line is the person's message (or -, or --message-file FILE)", workflow)}
	}
	return workflow, prompt, nil
}

// leadingWorkflow takes the workflow off the front of args: the first argument when it names
// a workflow of the workspace; else, when the workspace holds exactly one workflow, that one
// (and every argument is left); else the first argument, when it is a workflow slug (one the
// workspace lacks is the engine's error, exit 1); else a usage error — saying why it is no
// workflow name, or, with no argument, naming the workspace's workflows.
func leadingWorkflow(root string, args []string) (string, []string, error) {
	if len(args) > 0 && isWorkflowOf(root, args[0]) {
		return args[0], args[1:], nil
	}
	slugs, err := workspaceWorkflows(root)
	if err != nil {
		return "", nil, usageError{fmt.Errorf("workspace %q: %w", root, err)}
	}
	if len(slugs) == 1 {
		return slugs[0], args, nil
	}
	if len(args) > 0 && spec.IsSlug(args[0]) {
		return args[0], args[1:], nil // a workflow the workspace lacks: the engine reports it (exit 1)
	}
	if len(args) > 0 && len(slugs) == 0 {
		return "", nil, checkWorkflowArg(args[0]) // why it is no workflow name
	}
	w, err := onlyWorkflow(root)
	return w, args, err
}

// addEnvFlags registers the flags of every command that runs the engine: the workspace,
// the store (local or --aws), the model, --json and --verbose.
func (f *runFlags) addEnvFlags(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.SetNormalizeFunc(rootAlias)
	fl.StringVar(&f.workspace, "workspace", ".", "the authored workspace: workflows/, skills/, AGENTS.md (also --root DIR)")
	fl.StringVar(&f.store, "store", "", "directory of the local session store (default: .archmax/ in the workspace)")
	fl.StringVar(&f.modelScript, "model-script", "", "serve this scripted model through the Converse fake (else ARCHMAX_MODEL_SCRIPT)")
	fl.BoolVar(&f.bedrock, "bedrock", false, "call Amazon Bedrock (standard AWS credential chain; the default when ARCHMAX_MODEL is set)")
	fl.StringVar(&f.modelID, "model", "", "default model id (else ARCHMAX_MODEL)")
	fl.StringVar(&f.region, "region", "", "AWS region for --bedrock and --aws (else AWS_REGION)")
	f.addAWSFlags(cmd)
	fl.BoolVar(&f.jsonOut, "json", false, "print the lifecycle events and the outcome as JSON lines on stdout")
	fl.BoolVar(&f.verbose, "verbose", false, "print one raw line per lifecycle event on stderr")
}

// addAWSFlags registers --aws and the flags it takes.
func (f *runFlags) addAWSFlags(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.BoolVar(&f.aws, "aws", false, "keep sessions in DynamoDB and S3 (caller's AWS credentials) instead of --store")
	fl.StringVar(&f.awsOpts.Table, "table", "", "with --aws: DynamoDB table of the session log (else ARCHMAX_TABLE)")
	fl.StringVar(&f.awsOpts.Bucket, "bucket", "", "with --aws: S3 bucket of session files (else ARCHMAX_BUCKET)")
	fl.StringVar(&f.awsOpts.SessionPrefix, "session-prefix", "", "with --aws: S3 key prefix of session files (else ARCHMAX_SESSION_PREFIX, else sessions/)")
	fl.StringVar(&f.awsOpts.Endpoint, "endpoint-url", "", "with --aws: one DynamoDB and S3 endpoint (local peer; static AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, path-style S3)")
	fl.BoolVar(&f.awsOpts.CreateTable, "create-table", false, "with --aws: create the table if it does not exist")
}

// addVariableFlags registers --variables and --var; verb says what they do ("seed", "deliver").
func (f *runFlags) addVariableFlags(cmd *cobra.Command, verb string) {
	fl := cmd.Flags()
	fl.StringVar(&f.variables, "variables", "", verb+` variables from a JSON object, locked, e.g. '{"order_id":"ORD-1003"}'`)
	fl.StringArrayVar(&f.vars, "var", nil, verb+" a variable, NAME=VALUE (VALUE is read as JSON when it parses, else as a string); repeatable")
}

// renderer is the command's flow printer: narration on stderr, the result on stdout; on a
// terminal coloured and with a progress line (tty.go).
func (f *runFlags) renderer(cmd *cobra.Command) *renderer {
	r := newRenderer(cmd.OutOrStdout(), cmd.ErrOrStderr(), f.jsonOut, f.verbose)
	if !f.jsonOut && isTerminal(cmd.ErrOrStderr()) {
		r.color = colorWanted(cmd, cmd.ErrOrStderr())
		r.streaming = !f.verbose // the agent's text as it arrives (livetext.go)
		r.startProgress()
	}
	return r
}

// open loads .env, checks the shared flags and assembles the environment, events going to
// r. Flag mistakes are usage errors.
func (f *runFlags) open(cmd *cobra.Command, r *renderer) (*runner.Env, error) {
	script, bedrock, err := f.model()
	if err != nil {
		return nil, err
	}
	if bedrock {
		if err := bedrockPreflight(cmd.Context(), f.region, f.modelID); err != nil { // awscheck.go
			return nil, err
		}
	}
	opts := runner.Options{
		Workspace: f.workspace, StoreDir: f.storeDir(), ModelScript: script, Bedrock: bedrock,
		ModelID: f.modelID, Region: f.region,
	}
	if r != nil {
		opts.Events = r.event
	}
	return f.openWith(cmd, opts)
}

// storeDir is --store, else .archmax/ in the workspace root: sessions stay with the
// workspace whatever directory a command runs from (the reference keeps them under the root).
func (f *runFlags) storeDir() string {
	if f.store != "" {
		return f.store
	}
	return filepath.Join(f.workspace, ".archmax")
}

// checkWorkspace refuses a workspace that is not a folder: a usage error naming it.
func checkWorkspace(dir string) error {
	st, err := os.Stat(dir)
	switch {
	case err != nil:
		return usageError{fmt.Errorf("workspace %q: %v (pass --workspace DIR, or --root DIR, naming the folder that holds workflows/)", dir, errors.Unwrap(err))}
	case !st.IsDir():
		return usageError{fmt.Errorf("workspace %q is not a folder (pass --workspace DIR naming the folder that holds workflows/)", dir)}
	}
	return nil
}

// model loads .env and settles the model (modelChoice); a mistake is a usage error.
func (f *runFlags) model() (string, bool, error) {
	env, err := loadDotenv(f.workspace)
	if err != nil {
		return "", false, usageError{err}
	}
	f.env = env
	script, bedrock, err := modelChoice(f.modelScript, f.bedrock, env)
	if err != nil {
		return "", false, usageError{err}
	}
	return script, bedrock, nil
}

// openWith checks the AWS flags and opens the environment with opts (the session store
// settings added); a malformed setting is a usage error.
func (f *runFlags) openWith(cmd *cobra.Command, opts runner.Options) (*runner.Env, error) {
	if err := checkAWSFlags(cmd, f.aws); err != nil {
		return nil, usageError{err}
	}
	if f.aws {
		opts.AWS = &f.awsOpts
		if err := awsStorePreflight(cmd.Context(), f.region, f.awsOpts.Endpoint); err != nil { // awscheck.go
			return nil, err
		}
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

// seedVariables merges --variables (a JSON object) and --var pairs; a name both give is
// refused.
func (f *runFlags) seedVariables() (map[string]any, error) {
	vars, err := parseVars(f.vars)
	if err != nil {
		return nil, err
	}
	obj, err := parseVariablesJSON(f.variables)
	if err != nil {
		return nil, err
	}
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		if _, dup := vars[k]; dup {
			return nil, fmt.Errorf("variable '%s' is given by both --variables and --var: give it once", k)
		}
		vars[k] = obj[k]
	}
	return vars, nil
}

// parseVariablesJSON reads --variables: absent, or a JSON object.
func parseVariablesJSON(raw string) (map[string]any, error) {
	if raw == "" {
		return nil, nil
	}
	var v any
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		return nil, fmt.Errorf("--variables is not valid JSON: %v", err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New(`--variables must be a JSON object, e.g. '{"order_id":"ORD-1003"}'`)
	}
	return obj, nil
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
