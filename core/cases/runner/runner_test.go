package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/archmax-ai/archmax/core/cases"
	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/store/memory"
)

// turnModel answers each model call from a queue of scripted answers; a nil answer blocks
// until the call is cancelled (a case timeout).
type turnModel struct {
	mu       sync.Mutex
	answers  []*model.Response
	requests []*model.Request
}

func (m *turnModel) Converse(ctx context.Context, req *model.Request) (*model.Response, error) {
	if err := model.ValidateRequest(req); err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.requests = append(m.requests, req)
	if len(m.answers) == 0 {
		m.mu.Unlock()
		return nil, fmt.Errorf("no scripted answer left")
	}
	a := m.answers[0]
	m.answers = m.answers[1:]
	m.mu.Unlock()
	if a == nil {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return a, nil
}

func text(s string) *model.Response {
	return &model.Response{StopReason: model.StopEndTurn, Usage: &model.Usage{InputTokens: 10, OutputTokens: 2},
		Message: model.Message{Role: model.RoleAssistant, Content: []model.Block{{Kind: model.BlockText, Text: s}}}}
}

func toolCall(id, name string, args map[string]any) *model.Response {
	raw, _ := json.Marshal(args)
	return &model.Response{StopReason: model.StopToolUse, Usage: &model.Usage{InputTokens: 10, OutputTokens: 2},
		Message: model.Message{Role: model.RoleAssistant, Content: []model.Block{{Kind: model.BlockToolUse,
			ToolUse: &model.ToolUse{ID: id, Name: name, Input: raw}}}}}
}

const flow = `
tests:
  caseTimeoutMs: 300
states:
  ask:
    triggers:
      manual:
      nightly:
    instructions: Answer.
    tools:
      allow: [read_file]
    transitions:
      - to: review
        description: Ready for a person.
  review:
    type: human
    transitions:
      - to: done
        description: Accept.
  done:
    instructions: Close.
`

type suite struct {
	t        *testing.T
	authored *memory.Files
	model    *turnModel
	log      *memory.Store
	files    *memory.Files
}

func newSuite(t *testing.T, cases map[string]string) *suite {
	s := &suite{t: t, authored: memory.NewFiles(), model: &turnModel{}, log: memory.New(), files: memory.NewFiles()}
	ctx := context.Background()
	must(t, s.authored.Write(ctx, "workflows/wf/workflow.yaml", []byte(flow)))
	for k, v := range cases {
		must(t, s.authored.Write(ctx, "workflows/wf/tests/"+k, []byte(v)))
	}
	return s
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (s *suite) run(filter string, answers ...*model.Response) *Result {
	s.t.Helper()
	s.model.answers = answers
	res, err := RunTests(context.Background(), Options{Workflow: "wf", Authored: s.authored, Filter: filter,
		SessionIDForCase: func(file string) string {
			return strings.ReplaceAll(strings.TrimPrefix(file, "workflows/wf/tests/"), "/", "-")
		},
		NewTarget: func(ctx context.Context, c *DiscoveredCase, script []byte) (*Target, error) {
			eng, err := session.New(session.Config{Workflow: "wf", Authored: s.authored, Log: s.log, Files: s.files, Model: s.model, ModelID: "m"})
			return &Target{Engine: eng}, err
		}})
	must(s.t, err)
	return res
}

func (s *suite) result(r *Result, id string) cases.CaseResult {
	s.t.Helper()
	for _, c := range r.Results {
		if c.ID == id {
			return c
		}
	}
	s.t.Fatalf("no result for %s in %+v", id, r.Results)
	return cases.CaseResult{}
}

const head = "title: A case\ndescription: What it drives and checks.\n"

// ST-30, RV-11: a case whose assertions hold passes; records carry their step indices; the
// second action's turn is its own (the view's cursor).
func TestPassingCaseAndTheTurnCursor(t *testing.T) {
	s := newSuite(t, map[string]string{"ok.test.yaml": head + `steps:
  - send: hello
  - succeeded: true
  - reply: { includes: [Hi] }
  - send: and again
  - usedNoTools: true
  - reply: { includes: [again, Hi] }
`})
	r := s.result(s.run("", text("Hi there."), text("Hello again.")), "ok")
	if r.Verdict.Status != cases.CasePassed || len(r.Records) != 5 || r.Records[0].Step != 1 || r.Records[4].Step != 5 || r.SessionID != "ok.test.yaml" {
		t.Fatalf("%+v", r)
	}
}

// RV-21, CD-10, CE-10: an unparseable file is a failed result with its error and no
// session; a skipped case runs nothing; ids are the path below tests/ without extension.
func TestParseErrorsAndSkips(t *testing.T) {
	s := newSuite(t, map[string]string{
		"bad.test.yaml":        "title: x\n",
		"sub/skipped.test.yml": head + "skip: not today\nsteps:\n  - send: hi\n",
		"notes.md":             "ignored",
	})
	res := s.run("")
	if res.Discovered != 2 || len(res.Results) != 2 || res.ExitCode != 1 {
		t.Fatalf("%+v", res)
	}
	bad := s.result(res, "workflows/wf/tests/bad.test.yaml")
	if bad.Verdict.Status != cases.CaseFailed || !strings.Contains(bad.Error, "'description' is required") || bad.SessionID != "" {
		t.Errorf("bad %+v", bad)
	}
	sk := s.result(res, "sub/skipped")
	if sk.Verdict.Status != cases.CaseSkipped || sk.SkipReason != "not today" || sk.SessionID != "" || len(s.model.requests) != 0 {
		t.Errorf("skipped %+v", sk)
	}
}

// ST-31, ST-42: a failed structural assertion halts the case; every later assertion has
// one not-executed record; the verdict names the halting miss; no error.
func TestStructuralMissHalts(t *testing.T) {
	s := newSuite(t, map[string]string{"halt.test.yaml": head + `steps:
  - send: hello
  - parked: true
  - reply: { includes: [a, b] }
  - send: more
  - succeeded: true
`})
	r := s.result(s.run("", text("Hi.")), "halt")
	if r.Verdict.Status != cases.CaseFailed || r.Error != "" || len(r.Verdict.Failures) != 1 || !strings.HasPrefix(r.Verdict.Failures[0], "parked") {
		t.Fatalf("%+v", r)
	}
	var notRun []string
	for _, rec := range r.Records {
		if rec.Status == cases.AssertionNotExecuted {
			notRun = append(notRun, fmt.Sprintf("%d:%s", rec.Step, rec.Kind))
		}
	}
	if strings.Join(notRun, " ") != "2:reply 4:succeeded" || len(s.model.requests) != 1 {
		t.Errorf("not executed %v, %d model calls", notRun, len(s.model.requests))
	}
}

// ST-20, ST-40, CD-22: an action the runtime refuses, and an unknown trigger, make the case
// die with the runtime's error; the trigger is checked before any step.
func TestDeaths(t *testing.T) {
	s := newSuite(t, map[string]string{
		"decide.test.yaml":  head + "steps:\n  - send: hi\n  - decide: { to: done }\n  - succeeded: true\n",
		"trigger.test.yaml": head + "trigger: { id: weekly }\nsteps:\n  - send: hi\n  - succeeded: true\n",
	})
	res := s.run("", text("Hi."))
	d := s.result(res, "decide")
	if d.Verdict.Status != cases.CaseFailed || !strings.Contains(d.Error, "steps[1] decide: ") || !strings.Contains(d.Error, "not parked") || d.Verdict.Failures[0] != d.Error {
		t.Errorf("decide %+v", d)
	}
	tr := s.result(res, "trigger")
	if !strings.Contains(tr.Error, "weekly") || !strings.Contains(tr.Error, "manual, nightly") || len(tr.Records) != 1 || tr.Records[0].Status != cases.AssertionNotExecuted {
		t.Errorf("trigger %+v", tr)
	}
}

// ST-41: the case timeout cancels the action in flight and dies with the exact message.
func TestCaseTimeout(t *testing.T) {
	s := newSuite(t, map[string]string{"slow.test.yaml": head + "steps:\n  - send: hi\n  - succeeded: true\n"})
	r := s.result(s.run("", nil), "slow")
	if r.Error != "case 'slow' timed out after 300ms (tests.caseTimeoutMs)" {
		t.Errorf("%q", r.Error)
	}
}

// CD-40…CD-43: inline and fixture files are seeded before the first step; a fixture that
// does not exist, or a path outside the run zone, kills the case before anything runs.
func TestWorkspaceSeeding(t *testing.T) {
	s := newSuite(t, map[string]string{
		"seed.test.yaml": head + `workspace:
  scratchpad/a.txt: inline text
  scratchpad/b.json: { k: [1, 2] }
  scratchpad/c.txt: { from: fixtures/c.txt }
steps:
  - send: read them
  - calledTool: { name: read_file, input: { file_path: scratchpad/c.txt } }
  - reply: { includes: [fixture bytes] }
`,
		"fixtures/c.txt":    "fixture bytes",
		"missing.test.yaml": head + "workspace:\n  scratchpad/x.txt: { from: nope.txt }\nsteps:\n  - send: hi\n",
		"zone.test.yaml":    head + "workspace:\n  skills/x/SKILL.md: no\nsteps:\n  - send: hi\n",
	})
	res := s.run("", toolCall("t1", "read_file", map[string]any{"file_path": "scratchpad/c.txt"}), text("It says: fixture bytes."))
	if r := s.result(res, "seed"); r.Verdict.Status != cases.CasePassed {
		t.Errorf("seed %+v", r)
	}
	b, _ := s.files.Read(context.Background(), "seed.test.yaml/scratchpad/b.json")
	if string(b) != "{\n  \"k\": [\n    1,\n    2\n  ]\n}\n" {
		t.Errorf("json seed %q", b)
	}
	if r := s.result(res, "missing"); r.Error != "workspace entry 'scratchpad/x.txt' references 'from: nope.txt', but 'workflows/wf/tests/nope.txt' does not exist" {
		t.Errorf("missing %q", r.Error)
	}
	if r := s.result(res, "zone"); !strings.Contains(r.Error, "authored") {
		t.Errorf("zone %q", r.Error)
	}
}

// CD-52, CD-61: mocks answer the agent's calls on every action; the clock pins the prompt.
func TestMocksAndClock(t *testing.T) {
	s := newSuite(t, map[string]string{"mock.test.yaml": head + `clock: "2026-03-20T14:37:00Z"
mocks:
  - tool: read_file
    whenInput: { file_path: "/stock/" }
    result: { units: 12 }
steps:
  - send: stock?
  - calledTool: { name: read_file }
  - reply: { includes: ["12"] }
`})
	r := s.result(s.run("", toolCall("t1", "read_file", map[string]any{"file_path": "scratchpad/stock.txt"}), text("12 units.")), "mock")
	if r.Verdict.Status != cases.CasePassed {
		t.Fatalf("%+v", r)
	}
	second := s.model.requests[1]
	found := false
	for _, m := range second.Messages {
		for _, b := range m.Content {
			if b.ToolResult != nil && strings.Contains(fmt.Sprint(b.ToolResult.Content), `{"units":12}`) {
				found = true
			}
		}
	}
	if !found {
		t.Error("the mocked result did not reach the model")
	}
	// the per-call content: the system prompt's last block, or (prompt cache on) the request's
	// final block, after the conversation's cachePoint
	last := second.Messages[len(second.Messages)-1].Content
	if sys := second.System[len(second.System)-1].Text + last[len(last)-1].Text; !strings.Contains(sys, "2026-03-20 14:30") {
		t.Error("the prompt clock is not the case's")
	}
}

// CE-11, CE-12, CE-20: a filter runs only matching cases but counts every discovered one;
// a disabled workflow runs nothing; maxConcurrency above 1 is a suite error.
func TestSuiteLevel(t *testing.T) {
	s := newSuite(t, map[string]string{"a.test.yaml": head + "steps:\n  - send: hi\n", "b.test.yaml": head + "steps:\n  - send: hi\n"})
	res := s.run("b.test", text("Hi."))
	if res.Discovered != 2 || len(res.Results) != 1 || res.Results[0].ID != "b" || res.ExitCode != 0 {
		t.Errorf("%+v", res)
	}
	ctx := context.Background()
	must(t, s.authored.Write(ctx, "workflows/wf/workflow.yaml", []byte("disabled: true\n"+flow)))
	if res := s.run(""); res.Skipped != "disabled" || len(res.Results) != 0 || res.ExitCode != 0 {
		t.Errorf("disabled %+v", res)
	}
	must(t, s.authored.Write(ctx, "workflows/wf/workflow.yaml", []byte(strings.Replace(flow, "caseTimeoutMs: 300", "caseTimeoutMs: 300\n  maxConcurrency: 2", 1))))
	_, err := RunTests(ctx, Options{Workflow: "wf", Authored: s.authored})
	if err == nil {
		t.Error("maxConcurrency 2 ran")
	}
}

// spec 05: scripted entries left unused are a warning, a failure under Strict.
func TestUnusedScriptEntries(t *testing.T) {
	s := newSuite(t, map[string]string{"u.test.yaml": head + "steps:\n  - send: hi\n  - succeeded: true\n"})
	for _, strict := range []bool{false, true} {
		s.model.answers = []*model.Response{text("Hi.")}
		res, err := RunTests(context.Background(), Options{Workflow: "wf", Authored: s.authored, Strict: strict,
			SessionIDForCase: func(string) string { return fmt.Sprintf("u-%v", strict) },
			NewTarget: func(ctx context.Context, c *DiscoveredCase, script []byte) (*Target, error) {
				eng, err := session.New(session.Config{Workflow: "wf", Authored: s.authored, Log: s.log, Files: s.files, Model: s.model, ModelID: "m"})
				return &Target{Engine: eng, Unused: func() []string { return []string{"u.model.yaml:3: agent entry"} }}, err
			}})
		must(t, err)
		r := res.Results[0]
		switch {
		case !strict && (r.Verdict.Status != cases.CasePassed || len(r.Warnings) != 1):
			t.Errorf("non-strict %+v", r)
		case strict && (r.Verdict.Status != cases.CaseFailed || res.ExitCode != 1 || !strings.Contains(r.Verdict.Failures[0], "u.model.yaml:3")):
			t.Errorf("strict %+v", r)
		}
	}
}

// CD-52: a mock of a delegation tool is served by the dispatcher with its structure — the
// closing message, the returns, or an error that fails the call.
func TestDelegationMocksKeepTheirShape(t *testing.T) {
	s := newSuite(t, map[string]string{"deleg.test.yaml": head + `mocks:
  - tool: archmax_workflow_check
    whenInput: { item: A }
    result: { message: mocked ok, returns: { verdict: in stock } }
  - tool: archmax_workflow_check
    result: { error: boom }
steps:
  - send: check both
  - ranWorkflow: { workflow: check, count: 1 }
  - ranWorkflow: { workflow: check, status: error, count: 1 }
`})
	ctx := context.Background()
	must(t, s.authored.Write(ctx, "workflows/wf/workflow.yaml", []byte(strings.Replace(flow, "allow: [read_file]", "allow: [read_file, archmax_workflow_check]", 1))))
	must(t, s.authored.Write(ctx, "workflows/check/workflow.yaml", []byte(
		"states:\n  c:\n    triggers:\n      manual:\n        requires: [item]\n        returns: [{ name: verdict, type: string }]\n    instructions: Check.\n")))
	call := func(id, item string) model.Block {
		raw, _ := json.Marshal(map[string]any{"item": item})
		return model.Block{Kind: model.BlockToolUse, ToolUse: &model.ToolUse{ID: id, Name: "archmax_workflow_check", Input: raw}}
	}
	both := &model.Response{StopReason: model.StopToolUse, Message: model.Message{Role: model.RoleAssistant, Content: []model.Block{call("t1", "A"), call("t2", "B")}}}
	r := s.result(s.run("", both, text("One of two.")), "deleg")
	if r.Verdict.Status != cases.CasePassed {
		t.Fatalf("%+v", r)
	}
	var results []string
	for _, m := range s.model.requests[1].Messages {
		for _, b := range m.Content {
			if b.ToolResult != nil {
				results = append(results, fmt.Sprint(b.ToolResult.Content))
			}
		}
	}
	got := strings.Join(results, " | ")
	if !strings.Contains(got, `{"message":"mocked ok","returns":{"verdict":"in stock"}}`) || !strings.Contains(got, "failed (mocked): boom") {
		t.Errorf("tool results %s", got)
	}
}

// CE-53: a case on a reused session reads only what its own actions appended.
func TestReusedSessionTurnCursor(t *testing.T) {
	s := newSuite(t, map[string]string{"again.test.yaml": head + "steps:\n  - send: hi\n  - usedNoTools: true\n"})
	s.run("", toolCall("t1", "read_file", map[string]any{"file_path": "scratchpad/x.txt"}), text("Nothing there."))
	res := s.run("", text("Hello again."))
	if r := res.Results[0]; r.Verdict.Status != cases.CasePassed {
		t.Errorf("the second run read the first run's turn: %+v", r)
	}
}

// A typo the case can only pass vacuously with — a state, a tool, a workflow the workflow
// does not have — is a warning on the result.
func TestLintWarnsAboutUnknownNames(t *testing.T) {
	s := newSuite(t, map[string]string{"typo.test.yaml": head + `mocks:
  - tool: no_such_tool
    result: x
steps:
  - send: hi
  - trail: { to: aprove, count: 0 }
  - notCalledTool: { name: wirte_file }
  - calledTool: { name: read_file }
  - ranWorkflow: { workflow: nope, count: 0 }
`})
	r := s.result(s.run("", toolCall("t1", "read_file", map[string]any{"file_path": "scratchpad/x"}), text("ok")), "typo")
	got := strings.Join(r.Warnings, "\n")
	for _, want := range []string{"mocks[0] names 'no_such_tool'", "steps[1].trail names 'aprove'", "steps[2].notCalledTool names 'wirte_file'", "steps[4].ranWorkflow names 'nope'"} {
		if !strings.Contains(got, want) {
			t.Errorf("warnings lack %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "read_file") {
		t.Errorf("a granted tool was warned about:\n%s", got)
	}
}

// ST-42, RV-03: an executed assertion that yields no record is not "not executed"; a died
// case names the step that died; records stay in step order.
func TestNotExecutedOnlyAfterAStop(t *testing.T) {
	s := newSuite(t, map[string]string{
		"empty.test.yaml": head + "steps:\n  - send: hi\n  - variables: { expect: {} }\n  - succeeded: true\n",
		"died.test.yaml":  head + "steps:\n  - send: hi\n  - succeeded: true\n  - decide: { to: done }\n  - succeeded: true\n",
	})
	res := s.run("", text("Hi."), text("Hi."))
	if r := s.result(res, "empty"); r.Verdict.Status != cases.CasePassed || len(r.Records) != 1 || r.Records[0].Step != 2 {
		t.Errorf("empty %+v", r)
	}
	d := s.result(res, "died")
	if !strings.HasPrefix(d.Error, "steps[2] decide: ") || len(d.Records) != 2 || d.Records[0].Step != 1 || d.Records[1].Step != 3 || d.Records[1].Status != cases.AssertionNotExecuted {
		t.Errorf("died %+v", d)
	}
}
