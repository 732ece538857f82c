// Package runner runs declarative cases (spec 04 §9, §12, §13): discovery under a
// workflow's tests/, one session per case driven through the engine with the case's
// trigger, variables, workspace, mocks and clock, the assertions of core/cases judged against
// each action's view, and the verdicts. It prints nothing: hosts (`archmax test`) report
// through the callbacks and the results.
package runner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/archmax-ai/archmax/core/cases"
	"github.com/archmax-ai/archmax/core/events"
	"github.com/archmax-ai/archmax/core/model/scripted"
	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/store"
	"github.com/archmax-ai/archmax/core/transcript"
)

// Target is what one case runs against: the workflow's engine (its model answers the agent
// and grader roles) and, when the suite declares a judge, the judge (spec 04 §10).
type Target struct {
	Engine *session.Engine
	Judge  cases.Judge // nil: grade steps fail "grading model unavailable"
	Close  func() error
	// Unused, when set, names the scripted-model entries no call consumed (spec 05): after a
	// case that ran to its end they are a warning, or with Options.Strict a failure.
	Unused func() []string
}

// Options configure RunTests (spec 04 API-01).
type Options struct {
	Workflow string      // the workflow slug
	Authored store.Files // the authoring backend: workflows/<slug>/workflow.yaml and tests/
	Filter   string      // a case-sensitive substring of the case file's workspace path ("" = all)
	// NewTarget builds the target of one case. script is the bytes of the case's
	// <name>.model.yaml when one lies beside it (offline), nil otherwise.
	NewTarget func(ctx context.Context, c *DiscoveredCase, script []byte) (*Target, error)
	// SessionIDForCase names a case's session (CE-50); nil: test-default-<runId>-<path>.
	SessionIDForCase func(file string) string
	// OnCaseStart is called for every selected case before it runs; OnCaseResult after.
	OnCaseStart  func(file, sessionID string)
	OnCaseResult func(cases.CaseResult)
	Now          func() time.Time // default time.Now (the run id, durations)
	// Strict fails a case whose scripted model has entries left unused (spec 05), or could
	// not serve a reply-only call (a park's handoff, the answer to a message sent to a park,
	// a wait's closing message), which otherwise is only the runtime's warning.
	Strict bool
	// HostTools are the target's own tool names, so a case naming one is not warned about.
	HostTools []string
}

// Result is a suite's outcome (API-01): Discovered counts the cases before filtering;
// Skipped is "disabled" for a disabled workflow.
type Result struct {
	Workflow   string             `json:"workflow"`
	Results    []cases.CaseResult `json:"results"`
	ExitCode   int                `json:"exitCode"`
	Discovered int                `json:"discovered"`
	Skipped    string             `json:"skipped,omitempty"`
}

// DiscoveredCase is one case file (API-02): its workspace path, id, parsed document or parse
// error.
type DiscoveredCase struct {
	File       string // workspace-relative path, e.g. workflows/x/tests/a/b.test.yaml
	ID         string // path below tests/ without the extension (CE-10)
	TestsDir   string // workflows/<slug>/tests
	Doc        *cases.CaseDocument
	ParseError string
	// Err is the parse's error (a *cases.CaseSchemaError carries every issue located) and
	// Source the file's bytes, nil when it could not be read.
	Err    error
	Source []byte
}

// SuiteError: the suite cannot run (an unloadable workflow, a rejected tests: block) —
// spec 04 CE-22, RV-31.
type SuiteError struct{ Message string }

func (e *SuiteError) Error() string { return e.Message }

// RunTests discovers and runs workflow's cases sequentially (spec 04 §9). Errors:
// *SuiteError, *session.UnknownWorkflowError, store errors; a case's own failure is in
// its result.
func RunTests(ctx context.Context, opts Options) (*Result, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	file := "workflows/" + opts.Workflow + "/workflow.yaml"
	src, err := opts.Authored.Read(ctx, file)
	if errors.Is(err, store.ErrNotFound) {
		return nil, &session.UnknownWorkflowError{Workflow: opts.Workflow}
	}
	if err != nil {
		return nil, err
	}
	sp, err := spec.Load(opts.Workflow, file, src)
	if err != nil {
		return nil, &SuiteError{Message: err.Error()}
	}
	res := &Result{Workflow: opts.Workflow, Results: []cases.CaseResult{}}
	if sp.Disabled {
		res.Skipped = "disabled"
		return res, nil
	}
	if n := sp.Tests.MaxConcurrency; n > 1 {
		return nil, &SuiteError{Message: fmt.Sprintf("'tests.maxConcurrency' is %d, but case concurrency is not implemented — cases run sequentially. Set it to 1 or remove the field.", n)}
	}
	found, err := DiscoverCases(ctx, opts.Authored, "workflows/"+opts.Workflow+"/tests")
	if err != nil {
		return nil, err
	}
	res.Discovered = len(found)
	lint := newCaseLinter(ctx, opts.Authored, opts.Workflow, sp, opts.HostTools)
	runID := fmt.Sprintf("test-run-%d", opts.Now().UnixMilli())
	for _, c := range found {
		if opts.Filter != "" && !strings.Contains(c.File, opts.Filter) {
			continue
		}
		sid := "test-default-" + runID + "-" + strings.ReplaceAll(c.File, "/", "-")
		if opts.SessionIDForCase != nil {
			sid = opts.SessionIDForCase(c.File)
		}
		if opts.OnCaseStart != nil {
			opts.OnCaseStart(c.File, sid)
		}
		r := runCase(ctx, opts, sp, lint, c, sid)
		res.Results = append(res.Results, r)
		if cases.ExitCodeForVerdict(r.Verdict) != 0 {
			res.ExitCode = 1
		}
		if opts.OnCaseResult != nil {
			opts.OnCaseResult(r)
		}
	}
	return res, nil
}

// DiscoverCases walks testsDir recursively through the authoring backend and parses every
// *.test.yaml / *.test.yml file, sorted by path (spec 04 CE-10, API-02). A missing tests
// directory is an empty suite.
func DiscoverCases(ctx context.Context, authored store.Files, testsDir string) ([]*DiscoveredCase, error) {
	var files []string
	var walk func(dir string) error
	walk = func(dir string) error {
		entries, err := authored.List(ctx, dir)
		if err != nil {
			return err
		}
		for _, e := range entries {
			p := dir + "/" + e.Name
			if e.Dir {
				if err := walk(p); err != nil {
					return err
				}
				continue
			}
			for _, ext := range cases.TestFileExtensions {
				if strings.HasSuffix(e.Name, ext) {
					files = append(files, p)
				}
			}
		}
		return nil
	}
	if err := walk(testsDir); err != nil {
		return nil, err
	}
	slices.Sort(files)
	out := make([]*DiscoveredCase, 0, len(files))
	for _, f := range files {
		c := &DiscoveredCase{File: f, TestsDir: testsDir, ID: caseID(testsDir, f)}
		src, err := authored.Read(ctx, f)
		switch {
		case err != nil:
			c.ParseError, c.Err = fmt.Sprintf("missing test file '%s'", f), err
		default:
			c.Source = src
			doc, perr := cases.ParseCaseDocument(f, src)
			if perr != nil {
				c.ParseError, c.Err = perr.Error(), perr
			} else {
				c.Doc = doc
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// caseID is the file's path below the tests directory without its extension (CE-10).
func caseID(testsDir, file string) string {
	id := strings.TrimPrefix(file, testsDir+"/")
	for _, ext := range cases.TestFileExtensions {
		id = strings.TrimSuffix(id, ext)
	}
	return id
}

// readModelScript reads a case's offline model script (<name>.model.yaml, or .model.yml);
// nil when it has none.
func readModelScript(ctx context.Context, authored store.Files, file string) ([]byte, error) {
	yml := strings.TrimSuffix(ModelScriptFor(file), ".yaml") + ".yml"
	for _, p := range []string{ModelScriptFor(file), yml} {
		b, err := authored.Read(ctx, p)
		if err == nil {
			return b, nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
	}
	return nil, nil
}

// ModelScriptFor is the path of a case's offline model script: <name>.model.yaml beside it.
func ModelScriptFor(file string) string {
	for _, ext := range cases.TestFileExtensions {
		if strings.HasSuffix(file, ext) {
			return strings.TrimSuffix(file, ext) + ".model.yaml"
		}
	}
	return file + ".model.yaml"
}

// caseRun is one case in progress.
type caseRun struct {
	opts    Options
	c       *DiscoveredCase
	doc     *cases.CaseDocument
	sid     string
	target  *Target
	records []cases.AssertionRecord
	view    *cases.View
	msgs    int // the transcript length before the current action

	mu       sync.Mutex
	unserved []string // under Strict: the reply-only calls the model script could not serve
}

// runCase runs one case and returns its result; it never fails for the case's own reasons
// (spec 04 ST-30…ST-44).
func runCase(ctx context.Context, opts Options, sp *spec.MachineSpec, lint *caseLinter, c *DiscoveredCase, sid string) cases.CaseResult {
	start := opts.Now()
	res := cases.CaseResult{ID: c.ID, File: c.File}
	finish := func() cases.CaseResult {
		res.DurationMs = opts.Now().Sub(start).Milliseconds()
		return res
	}
	if c.Doc == nil { // RV-21
		res.ID = c.File
		res.Verdict = cases.CaseVerdict{Status: cases.CaseFailed, Failures: []string{c.ParseError}}
		res.Error = c.ParseError
		return finish()
	}
	doc := c.Doc
	res.Title, res.Description = doc.Title, doc.Description
	if doc.Skip != "" { // CD-10
		res.Verdict, res.SkipReason = cases.SkippedVerdict(), doc.Skip
		return finish()
	}
	cr := &caseRun{opts: opts, c: c, doc: doc, sid: sid}
	res.SessionID = sid
	res.Warnings = lint.lintCase(doc)
	// next is the first step not yet run: on a halt or a death every assertion from there on
	// reports one not-executed record (ST-42) — an executed step that yielded none does not
	next := 0
	stopped := func() []cases.AssertionRecord {
		out := append([]cases.AssertionRecord(nil), cr.records...)
		for i := next; i < len(doc.Steps); i++ {
			if a, ok := doc.Steps[i].(cases.Assertion); ok {
				out = append(out, cases.NotExecutedRecord(i, a))
			}
		}
		return out
	}
	// strict adds the reply-only calls the script could not serve (Strict only) to a verdict
	strict := func(v cases.CaseVerdict) cases.CaseVerdict {
		cr.mu.Lock()
		defer cr.mu.Unlock()
		if len(cr.unserved) > 0 {
			v.Status = cases.CaseFailed
			v.Failures = append(v.Failures, cr.unserved...)
		}
		return v
	}
	die := func(msg string) cases.CaseResult {
		res.Records, res.Error = stopped(), msg
		res.Verdict = strict(cases.DiedVerdict(msg, cr.records))
		return finish()
	}
	// the from: fixtures, before the case timer (REF order)
	seeds, err := cr.materialize(ctx)
	if err != nil {
		return die(err.Error())
	}
	if _, err := spec.CheckSessionID(sid); err != nil { // CE-51
		return die(err.Error())
	}
	if sp.Trigger(doc.TriggerID()) == nil { // CD-22: the runtime's own refusal
		return die((&spec.UnknownTriggerError{TriggerID: doc.TriggerID(), Available: sp.TriggerIDs()}).Error())
	}
	script, err := readModelScript(ctx, opts.Authored, c.File)
	if err != nil {
		return die(fmt.Sprintf("read the case's model script: %v", err))
	}
	target, err := opts.NewTarget(ctx, c, script)
	if err != nil {
		return die(err.Error())
	}
	cr.target = target
	if target.Close != nil {
		defer func() { _ = target.Close() }()
	}
	timeout := time.Duration(sp.Tests.CaseTimeoutMs) * time.Millisecond
	cctx, cancel := context.WithTimeoutCause(ctx, timeout, fmt.Errorf("case '%s' timed out", c.ID))
	defer cancel()
	timedOut := func() bool {
		return errors.Is(context.Cause(cctx), context.DeadlineExceeded) || cctx.Err() != nil && ctx.Err() == nil
	}
	timeoutMsg := fmt.Sprintf("case '%s' timed out after %dms (tests.caseTimeoutMs)", c.ID, sp.Tests.CaseTimeoutMs)
	if len(seeds) > 0 {
		if err := target.Engine.Seed(cctx, sid, seeds); err != nil { // CD-42
			return die(err.Error())
		}
	}
	// a reused session (CE-53) already holds a transcript: the first turn starts after it
	if cr.msgs, err = target.Engine.MessageCount(cctx, sid); err != nil {
		return die(err.Error())
	}
	for i, step := range doc.Steps {
		next = i
		if a, ok := step.(cases.Action); ok {
			if err := cr.act(cctx, i, a); err != nil {
				if timedOut() {
					return die(timeoutMsg)
				}
				// name the step that died: a case may hold several actions (ST-40)
				return die(fmt.Sprintf("steps[%d] %s: %v", i, a.Kind(), err))
			}
			continue
		}
		a := step.(cases.Assertion)
		recs := cases.Evaluate(cctx, i, a, cr.view, target.Judge)
		if timedOut() {
			return die(timeoutMsg)
		}
		cr.records = append(cr.records, recs...)
		next = i + 1
		if a.Structural() && slices.ContainsFunc(recs, func(r cases.AssertionRecord) bool { return r.Status == cases.AssertionFailed }) {
			res.Records = stopped() // ST-31: halt
			res.Verdict = strict(cases.ReduceVerdict(cr.records))
			return finish()
		}
	}
	next = len(doc.Steps)
	if timedOut() { // the deadline passed while the last action settled
		return die(timeoutMsg)
	}
	res.Records = cr.records
	if res.Records == nil {
		res.Records = []cases.AssertionRecord{}
	}
	res.Verdict = strict(cases.ReduceVerdict(cr.records))
	if target.Unused != nil {
		if unused := target.Unused(); len(unused) > 0 {
			msg := "model script entries no call used: " + strings.Join(unused, "; ")
			if opts.Strict {
				res.Verdict.Status = cases.CaseFailed
				res.Verdict.Failures = append(res.Verdict.Failures, msg)
			} else {
				res.Warnings = append(res.Warnings, msg)
			}
		}
	}
	return finish()
}

// materialize turns the case's workspace entries into seed files: inline content, or a
// tests/-relative fixture read through the authoring backend (CD-41, CD-43).
func (cr *caseRun) materialize(ctx context.Context) ([]session.SeedFile, error) {
	var out []session.SeedFile
	for _, e := range cr.doc.Workspace {
		if e.Source != cases.WorkspaceFile {
			b, _ := e.InlineBytes()
			out = append(out, session.SeedFile{Path: e.Path, Content: b})
			continue
		}
		fixture, err := cases.FixturePath(e.From)
		if err != nil {
			return nil, err
		}
		b, err := cr.opts.Authored.Read(ctx, path.Join(cr.c.TestsDir, fixture))
		if errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("workspace entry '%s' references 'from: %s', but '%s/%s' does not exist", e.Path, e.From, cr.c.TestsDir, fixture)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, session.SeedFile{Path: e.Path, Content: b})
	}
	return out, nil
}

// act performs step i, an action (spec 04 §6.1), with the case's mocks and clock and captures
// its view (§6.2); an error is the action's death (ST-20). Under Strict it watches the call's
// events for the reply-only calls the model script could not serve.
func (cr *caseRun) act(ctx context.Context, i int, a cases.Action) error {
	if cr.opts.Strict {
		ctx = session.WithEventObserver(ctx, func(ev events.Event) {
			if msg, ok := unservedReplyOnly(ev); ok {
				cr.mu.Lock()
				cr.unserved = append(cr.unserved, fmt.Sprintf("steps[%d] %s: the model script could not answer the reply-only call: %s", i, a.Kind(), msg))
				cr.mu.Unlock()
			}
		})
	}
	if len(cr.doc.Mocks) > 0 {
		mocks := make([]session.ToolMock, 0, len(cr.doc.Mocks))
		for _, m := range cr.doc.Mocks {
			tm := session.ToolMock{Tool: m.Name, Result: m.ResultText()}
			if spec.IsWorkflowToolName(m.Name) {
				tm.Result = m.Result.Plain() // the dispatcher reads message / returns / error (CD-52)
			}
			if m.WhenInput != nil {
				tm.WhenInput = m.WhenInput.Plain()
			}
			mocks = append(mocks, tm)
		}
		ctx = session.WithToolMocks(ctx, mocks, func(w, args map[string]any) bool { return cases.InputMatches(w, args) })
	}
	if t, ok := cr.doc.ClockTime(); ok {
		ctx = session.WithPromptClock(ctx, t)
	}
	eng := cr.target.Engine
	var out *session.Outcome
	var err error
	switch s := a.(type) {
	case cases.SendStep:
		in := session.SendInput{Message: s.Message, Trigger: cr.doc.TriggerID()}
		if cr.doc.Variables != nil {
			in.Variables = cr.doc.Variables.Plain()
		}
		if v := cr.view; v != nil && v.Outcome.Kind == cases.OutcomeParked && v.Outcome.Channel == string(session.ChannelDecision) {
			// a message to a person's park is a reply, which applies no variables or trigger:
			// sending the case's again would only earn the runtime's "not applied" warning
			in.Variables, in.Trigger = nil, ""
		}
		out, err = eng.Send(ctx, cr.sid, in)
	case cases.DecideStep:
		out, err = eng.Decide(ctx, cr.sid, session.Decision{To: s.To, Comment: s.Comment})
	case cases.DeliverStep:
		var vars map[string]any
		if s.Variables != nil {
			vars = s.Variables.Plain()
		}
		out, err = eng.Deliver(ctx, cr.sid, session.Delivery{Trigger: s.Trigger, Variables: vars})
	default:
		return fmt.Errorf("unknown action %T", a)
	}
	if err != nil {
		return err
	}
	cr.view = viewOf(out, cr.msgs)
	cr.msgs = len(out.Messages)
	return nil
}

// replyOnlyUnwritten opens the runtime's warning (event warning, scope model) for a
// reply-only call whose model call failed: the park stands without the message (03 OQ-8).
const replyOnlyUnwritten = "the reply-only message could not be written: "

// unservedReplyOnly reports whether ev is that warning for a call the scripted model refused
// (scripted.MismatchErrorType: no entry left, none matching, an `expect` miss) and returns
// the script's message. A scripted fault (`errors:`) or a live model's error is not one: the
// case asked for the first, and the second is no script's doing.
func unservedReplyOnly(ev events.Event) (string, bool) {
	if ev.Type != events.Warning || ev.Str("scope") != "model" {
		return "", false
	}
	msg, ok := strings.CutPrefix(ev.Str("message"), replyOnlyUnwritten)
	if !ok || !strings.Contains(msg, scripted.MismatchErrorType) {
		return "", false
	}
	if i := strings.Index(msg, "scripted model: "); i >= 0 {
		msg = msg[i:] // past the client's "model call failed: ScriptedModelException (HTTP 400): "
	}
	return msg, true
}

// viewOf builds the view of an action's outcome; before is the transcript length before it.
func viewOf(out *session.Outcome, before int) *cases.View {
	v := &cases.View{
		SessionMessages: out.Messages,
		Trail:           out.AuditTrail,
		Variables:       maps.Clone(out.Variables),
		Outcome: cases.Outcome{Kind: string(out.Kind), Disposition: string(out.Disposition), State: out.State,
			Reply: out.Reply, Rejected: out.Rejected},
	}
	if before <= len(out.Messages) {
		v.TurnMessages = out.Messages[before:]
	}
	if t, ok := out.Variables[spec.TriggerVariable].Value.(string); ok {
		v.Trigger = t
	}
	if out.Pending != nil {
		v.Outcome.Channel = string(out.Pending.Channel)
	}
	if out.Exit != nil {
		v.Outcome.Exit = &cases.Exit{Success: out.Exit.Success, Code: out.Exit.Code, Reason: out.Exit.Reason}
	}
	for _, m := range v.TurnMessages {
		if m.Role == transcript.RoleTool && m.Blocked {
			v.BlockedCallIDs = append(v.BlockedCallIDs, m.ToolCallID)
		}
	}
	return v
}
