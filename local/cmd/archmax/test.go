package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/spf13/cobra"

	"github.com/archmax-ai/archmax/core/cases"
	"github.com/archmax-ai/archmax/core/cases/runner"
	"github.com/archmax-ai/archmax/core/events"
	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/pricing"
	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/store/fs"
	"github.com/archmax-ai/archmax/core/validate"
	localrunner "github.com/archmax-ai/archmax/local/runner"
)

type testFlags struct {
	workspace, store, modelID, region string
	bedrock, jsonOut, strict, verbose bool
	color                             bool // verdict lines coloured (a terminal; tty.go)
}

// newTestCommand runs a workflow's declarative cases (spec 04): each case offline through
// its <name>.model.yaml when one lies beside it, else against Bedrock with --bedrock.
func newTestCommand(code *int) *cobra.Command {
	var f testFlags
	cmd := &cobra.Command{
		Use:   "test [flags] [WORKFLOW] [FILTER]",
		Short: "Run a workflow's cases (workflows/<slug>/tests/*.test.yaml)",
		Long: `Run the declarative cases of WORKFLOW, one session per case file, in path order; FILTER keeps
the cases whose workspace path contains it. A case with a <name>.model.yaml beside it runs offline
through the scripted model (served by the Converse-protocol fake behind the real Bedrock client);
any other case needs --bedrock (Amazon Bedrock, standard credentials, ARCHMAX_MODEL or --model;
a set ARCHMAX_MODEL selects it too) and is reported as needing a model without it. WORKFLOW may
be left out when the workspace holds exactly one workflow (then a single argument is FILTER).
.env is loaded from the current directory and the workspace root (--workspace, or --root).

Progress, the state flow (--verbose), verdicts and failure details go to stderr; stdout gets one
line, "<n> passed, <n> failed, <n> skipped", or with --json the result object only. Sessions are
kept in memory for the run unless --store DIR keeps them (fs store).

Exit status: 0 every case passed or was skipped (also an empty selection of a disabled workflow),
1 a case failed, the workflow or its tests: block is invalid, or FILTER matched no case,
2 usage error.`,
		Example: `  archmax test --workspace fixtures/access-desk access-request
  archmax test --workspace fixtures/access-desk access-request declined`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 2 {
				return usageError{fmt.Errorf("test takes an optional WORKFLOW and FILTER (got %d arguments)", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			workflow, rest, err := leadingWorkflow(f.workspace, args)
			if err != nil {
				return err
			}
			if len(rest) > 1 {
				return usageError{fmt.Errorf("'%s' is not a workflow of this workspace", args[0])}
			}
			filter := ""
			if len(rest) == 1 {
				filter = rest[0]
			}
			if _, err := loadDotenv(f.workspace); err != nil {
				return usageError{err}
			}
			if !cmd.Flags().Changed("bedrock") && os.Getenv(envModel) != "" {
				f.bedrock = true
			}
			f.color = colorWanted(cmd, cmd.ErrOrStderr())
			*code = runSuite(cmd.Context(), f, workflow, filter, cmd.OutOrStdout(), cmd.ErrOrStderr())
			return nil
		},
	}
	cmd.Flags().SetNormalizeFunc(rootAlias)
	cmd.Flags().StringVar(&f.workspace, "workspace", ".", "the authored workspace: workflows/, skills/, AGENTS.md (also --root DIR)")
	cmd.Flags().StringVar(&f.store, "store", "", "keep the cases' sessions in this fs store (default: in memory for the run)")
	cmd.Flags().BoolVar(&f.bedrock, "bedrock", false, "run cases without a model script against Amazon Bedrock")
	cmd.Flags().StringVar(&f.modelID, "model", "", "default model id (else ARCHMAX_MODEL)")
	cmd.Flags().StringVar(&f.region, "region", "", "AWS region for Bedrock (else AWS_REGION)")
	cmd.Flags().BoolVar(&f.jsonOut, "json", false, "print the result object as JSON on stdout")
	cmd.Flags().BoolVar(&f.strict, "strict", false, "fail a case whose model script has entries left unused or cannot answer a reply-only call (a park's handoff, a reply)")
	cmd.Flags().BoolVarP(&f.verbose, "verbose", "v", false, "print each case's state flow")
	return cmd
}

// runSuite runs the suite and reports it; it returns the exit code (spec 04 RV-31).
func runSuite(ctx context.Context, f testFlags, workflow, filter string, stdout, stderr io.Writer) int {
	authored, err := fs.OpenFilesReadOnly(f.workspace)
	if err != nil {
		return failSuite(stdout, stderr, f.jsonOut, err)
	}
	flow := newRenderer(stderr, stderr, false, false)
	var tokens atomic.Int64
	var costMu sync.Mutex
	var caseCost, suiteCost *float64 // priced calls only: absent when none was priced
	var warnMu sync.Mutex
	var warnings []string // the current case's engine warnings, shown under its verdict
	onEvent := func(e events.Event) {
		if e.Type == events.Warning && !f.verbose {
			warnMu.Lock()
			warnings = append(warnings, e.Str("scope")+": "+e.Str("message"))
			warnMu.Unlock()
		}
		if e.Type == events.ModelUsage {
			in, _ := e.Data["inputTokens"].(int64)
			out, _ := e.Data["outputTokens"].(int64)
			tokens.Add(in + out)
			if c, ok := e.Data["costUsd"].(float64); ok {
				costMu.Lock()
				caseCost, suiteCost = pricing.Add(caseCost, &c), pricing.Add(suiteCost, &c)
				costMu.Unlock()
			}
		}
		if f.verbose {
			flow.event(e)
		}
	}
	judge := judgeConfig(ctx, authored, workflow) // the suite's, read once
	newTarget := func(ctx context.Context, c *runner.DiscoveredCase, script []byte) (*runner.Target, error) {
		opts := localrunner.Options{Workspace: f.workspace, StoreDir: f.store, MemoryStore: f.store == "",
			ModelID: f.modelID, Region: f.region, Events: onEvent}
		switch {
		case script != nil:
			opts.ModelScript, opts.ModelScriptSource = runner.ModelScriptFor(c.File), script
		case f.bedrock:
			opts.Bedrock = true
		case !slices.ContainsFunc(c.Doc.Steps, func(s cases.Step) bool { return s.Kind().IsAction() }):
			// no action, no model call (CD-73): an empty script answers nothing
			opts.ModelScript, opts.ModelScriptSource = "no model", []byte("agent: []\n")
		default:
			return nil, fmt.Errorf("case '%s' needs a model: add %s beside it to run it offline, or run with --bedrock", c.ID, runner.ModelScriptFor(c.File))
		}
		env, err := localrunner.Open(ctx, opts)
		if err != nil {
			return nil, err
		}
		eng, err := env.Engine(workflow)
		if err != nil {
			_ = env.Close()
			return nil, err
		}
		t := &runner.Target{Engine: eng, Close: env.Close, Unused: env.Unused}
		if j := judge; j != nil {
			id := j.Model // `judge: {}` is the environment's default model (JG-02)
			if id == "" {
				id = env.ModelID()
			}
			mj := cases.ModelJudge{Client: env.Model(), ModelID: id, Metadata: map[string]string{"archmax.role": "judge", "archmax.session": "judge"},
				Temperature: j.Temperature}
			if j.MaxTokens != nil {
				mj.MaxTokens = *j.MaxTokens
			}
			mj.OnResponse = func(r *model.Response) {
				if r.Usage != nil {
					tokens.Add(r.Usage.InputTokens + r.Usage.OutputTokens)
				}
			}
			t.Judge = mj
		}
		return t, nil
	}
	var passed, failed, skipped, noModel int
	hostFile, err := validate.ReadHost(ctx, authored) // its tools are no unknown names to a case
	if err != nil {
		return failSuite(stdout, stderr, f.jsonOut, err)
	}
	res, err := runner.RunTests(ctx, runner.Options{Workflow: workflow, Authored: authored, Filter: filter, NewTarget: newTarget, Strict: f.strict,
		HostTools: hostFile.Tools(),
		OnCaseStart: func(file, _ string) {
			tokens.Store(0)
			costMu.Lock()
			caseCost = nil
			costMu.Unlock()
			warnMu.Lock()
			warnings = nil
			warnMu.Unlock()
			fmt.Fprintf(stderr, "● %s\n", file)
		},
		OnCaseResult: func(r cases.CaseResult) {
			if needsModel(r) { // testmodel.go: its own heading, not a failure
				noModel++
				fmt.Fprintln(stderr, verdictPaint(f.color, needsModelLine(r)))
				return
			}
			switch r.Verdict.Status {
			case cases.CasePassed:
				passed++
			case cases.CaseSkipped:
				skipped++
			default:
				failed++
			}
			costMu.Lock()
			cost := caseCost
			costMu.Unlock()
			fmt.Fprintln(stderr, verdictPaint(f.color, verdictLine(r, tokens.Load(), cost)))
			warnMu.Lock()
			for _, w := range warnings {
				fmt.Fprintf(stderr, "    ⚠ %s\n", oneLine(strings.Replace(w, modelCallPrefix, "", 1), 400))
			}
			warnMu.Unlock()
		}})
	if err != nil {
		return failSuite(stdout, stderr, f.jsonOut, err)
	}
	if filter != "" && len(res.Results) == 0 && res.Skipped == "" {
		// the reference: an error, and nothing on stdout
		return failSuite(stdout, stderr, f.jsonOut, codedHint("NoCasesMatchedError", fmt.Errorf("no cases matched '%s' (%d discovered)", filter, res.Discovered),
			"FILTER keeps the cases whose path under the workspace contains it; 'archmax test "+workflow+"' runs them all"))
	}
	printNeedsModel(stderr, settleNeedsModel(res))
	if suiteCost != nil && !f.jsonOut { // usage is narration: stderr, beside the verdict lines
		fmt.Fprintf(stderr, "cost: %s (the suite's priced model calls)\n", pricing.Format(*suiteCost))
	}
	switch {
	case f.jsonOut:
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(res)
	case res.Skipped != "":
		fmt.Fprintf(stdout, "suite skipped — %s\n", res.Skipped)
	default:
		line := fmt.Sprintf("%d passed, %d failed, %d skipped", passed, failed, skipped)
		if noModel > 0 {
			line += fmt.Sprintf(", %d need a model", noModel)
		}
		fmt.Fprintln(stdout, line)
	}
	return res.ExitCode
}

// modelCallPrefix is what the Bedrock client puts before a scripted model's own message; the
// case report drops it so the script's message is what a line shows.
const modelCallPrefix = "model call failed: ScriptedModelException (HTTP 400): "

// strictReplyOnly marks the --strict failure of a reply-only call the script could not answer.
const strictReplyOnly = ": the model script could not answer the reply-only call: "

// judgeConfig is the workflow's tests.judge, nil when it declares none (JG-01).
func judgeConfig(ctx context.Context, authored interface {
	Read(context.Context, string) ([]byte, error)
}, workflow string) *spec.JudgeConfig {
	file := "workflows/" + workflow + "/workflow.yaml"
	src, err := authored.Read(ctx, file)
	if err != nil {
		return nil
	}
	sp, err := spec.Load(workflow, file, src)
	if err != nil {
		return nil
	}
	return sp.Tests.Judge
}

// verdictLine is a case's line: status, id, duration, tokens and (when a price applied to
// its model calls) cost, then one line per failure, the skip reason, or the error.
func verdictLine(r cases.CaseResult, tokens int64, cost *float64) string {
	mark := map[cases.CaseStatus]string{cases.CasePassed: "✔", cases.CaseFailed: "✗", cases.CaseSkipped: "○"}[r.Verdict.Status]
	spent := fmt.Sprintf("%d tokens", tokens)
	if cost != nil && tokens > 0 {
		spent += ", " + pricing.Format(*cost)
	}
	line := fmt.Sprintf("%s %s %s (%d ms, %s)", mark, r.Verdict.Status, r.ID, r.DurationMs, spent)
	var b strings.Builder
	b.WriteString(line)
	if r.SkipReason != "" {
		b.WriteString("\n    skipped: " + r.SkipReason)
	}
	notRun := 0
	for _, rec := range r.Records {
		if rec.Status == cases.AssertionFailed {
			fmt.Fprintf(&b, "\n    steps[%d] %s", rec.Step, cases.FailureEntry(rec))
		}
		if rec.Status == cases.AssertionNotExecuted {
			notRun++
		}
	}
	if r.Error != "" {
		b.WriteString("\n    error: " + r.Error)
	}
	for _, w := range r.Warnings {
		b.WriteString("\n    warning: " + w)
	}
	if r.Verdict.Status == cases.CaseFailed && r.Error == "" {
		// failures no assertion record carries: unused model-script entries, a reply-only call
		// the script could not answer (--strict)
		for _, f := range r.Verdict.Failures {
			if strings.HasPrefix(f, "model script entries") || strings.Contains(f, strictReplyOnly) {
				b.WriteString("\n    " + strings.Replace(f, modelCallPrefix, "", 1))
			}
		}
	}
	if notRun > 0 {
		fmt.Fprintf(&b, "\n    %d assertion(s) not executed", notRun)
	}
	return b.String()
}
