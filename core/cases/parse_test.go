package cases

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

const head = "title: T\ndescription: D\n"

// withSteps is a minimal document whose steps are the given lines.
func withSteps(lines ...string) string {
	return head + "steps:\n  - " + strings.Join(lines, "\n  - ") + "\n"
}

// afterSend puts one assertion (or action) line behind a send.
func afterSend(line string) string { return withSteps("send: hi", line) }

func schemaError(t *testing.T, src string) *CaseSchemaError {
	t.Helper()
	doc, err := ParseCaseDocument("tests/a.test.yaml", []byte(src))
	if err == nil {
		t.Fatalf("parsed, want a CaseSchemaError; doc = %+v", doc)
	}
	if doc != nil {
		t.Errorf("a refused document returned %+v, want nil", doc)
	}
	var se *CaseSchemaError
	if !errors.As(err, &se) {
		t.Fatalf("error %T %v, want *CaseSchemaError", err, err)
	}
	if se.File != "tests/a.test.yaml" {
		t.Errorf("File = %q", se.File)
	}
	return se
}

func mustParse(t *testing.T, src string) *CaseDocument {
	t.Helper()
	doc, err := ParseCaseDocument("tests/a.test.yaml", []byte(src))
	if err != nil {
		t.Fatalf("ParseCaseDocument: %v\nsource:\n%s", err, src)
	}
	return doc
}

func issueList(se *CaseSchemaError) string {
	var b strings.Builder
	for _, is := range se.Issues {
		fmt.Fprintf(&b, "\n  %q: %q (%d:%d)", is.Path, is.Message, is.Line, is.Column)
	}
	return b.String()
}

// TestSchemaErrors holds one row per schema message: the document must be refused with
// an issue at path carrying exactly msg (or, for prefix rows, starting with it).
func TestSchemaErrors(t *testing.T) {
	const known = "title, description, skip, trigger, variables, workspace, mocks, clock, steps"
	const steps = "actions: send, decide, deliver; assertions: succeeded, parked, raised, variables, " +
		"reachedState, reply, calledTool, notCalledTool, blockedTool, usedNoTools, trail, noTraversal, " +
		"triggerArrival, ranWorkflow, grade"
	rows := []struct {
		rule, name, src, path, msg string
		prefix                     bool
	}{
		// CE-13 — one YAML document, a mapping.
		{"CE-13", "yaml syntax error", "title: \"unterminated\n", "", "YAML parse error: ", true},
		{"CE-13", "two documents", head + "---\n" + head, "", msgMultiDoc, false},
		{"CE-13", "garbage after the document", head + "---\n[\n", "", "YAML parse error: ", true},
		{"CE-13", "empty file", "", "", msgNotMapping, false},
		{"CE-13", "comments only", "# nothing here\n", "", msgNotMapping, false},
		{"CE-13", "list root", "- title: T\n", "", msgNotMapping, false},
		{"CE-13", "scalar root", "hello\n", "", msgNotMapping, false},
		{"CE-13", "null root", "~\n", "", msgNotMapping, false},
		// CD-03 — duplicate and non-string keys, strict types.
		{"CD-03", "duplicate top-level key", "title: a\ntitle: b\ndescription: D\n", "",
			"key 'title' is repeated in this mapping (first at line 1); a mapping cannot repeat a key", false},
		{"CD-03", "duplicate nested key", withSteps("send: hi", "reply: { includes: a, includes: b }"), "steps[1].reply",
			"key 'includes' is repeated in this mapping (first at line 5); a mapping cannot repeat a key", false},
		{"CD-03", "non-string key", head + "variables: { 1: x }\n", "variables", `mapping keys must be strings; quote the key "1"`, false},
		{"CD-03", "null key", head + "workspace: { ~: x }\n", "workspace", `mapping keys must be strings; quote the key "~"`, false},
		{"CD-03", "a number title is not coerced", "title: 5\ndescription: D\n", "title", msgTitleRequired, false},
		{"CD-03", "a boolean title", "title: true\ndescription: D\n", "title", msgTitleRequired, false},
		// CD-01 — prose.
		{"CD-01", "missing title", "description: D\n", "title", msgTitleRequired, false},
		{"CD-01", "null title", "title:\ndescription: D\n", "title", msgTitleRequired, false},
		{"CD-01", "blank title", "title: \"  \\n\\t \"\ndescription: D\n", "title", msgTitleRequired, false},
		{"CD-01", "missing description", "title: T\n", "description", msgDescriptionRequired, false},
		{"CD-01", "non-string description", "title: T\ndescription: [a]\n", "description", msgDescriptionRequired, false},
		{"CD-01", "blank description", "title: T\ndescription: \"   \"\n", "description", msgDescriptionRequired, false},
		{"CD-01", "multi-line title", "title: |\n  one\n  two\ndescription: D\n", "title", msgTitleSingleLine, false},
		{"CD-01", "title too long", "title: " + strings.Repeat("a", 61) + "\ndescription: D\n", "title",
			"'title' must be at most 60 characters (got 61) — keep it a label; put the detail in 'description'", false},
		{"CD-01", "title measured in UTF-16 units", "title: " + strings.Repeat("😀", 31) + "\ndescription: D\n", "title",
			"'title' must be at most 60 characters (got 62) — keep it a label; put the detail in 'description'", false},
		{"CD-01", "title measured collapsed", "title: \"" + strings.Repeat("a ", 40) + "\"\ndescription: D\n", "title",
			"'title' must be at most 60 characters (got 79) — keep it a label; put the detail in 'description'", false},
		{"CD-01", "description too long", "title: T\ndescription: " + strings.Repeat("d", 201) + "\n", "description",
			"'description' must be at most 200 characters (got 201) — keep it to one or two sentences; longer rationale belongs in a YAML comment above the document", false},
		// CD-02 — top-level keys.
		{"CD-02", "unknown top-level key", head + "stepz: []\n", "", "unknown key 'stepz' (known: " + known + ")", false},
		{"CD-02", "two unknown top-level keys", head + "version: 1\nsessions: {}\n", "", "unknown key 'version', 'sessions' (known: " + known + ")", false},
		{"CE-04", "sessions is an unknown key", head + "sessions: { a: {} }\n", "", "unknown key 'sessions' (known: " + known + ")", false},
		{"CD-02", "mocks not a list", head + "mocks: { tool: x }\n", "mocks", msgMocksList, false},
		{"CD-02", "steps not a list", head + "steps: send\n", "steps", msgStepsList, false},
		// CD-10 — skip.
		{"CD-10", "skip true", head + "skip: true\n", "skip", msgSkip, false},
		{"CD-10", "skip empty", head + "skip: \"\"\n", "skip", msgSkip, false},
		{"CD-10", "skip null", head + "skip:\n", "skip", msgSkip, false},
		// CD-20 — trigger.
		{"CD-20", "trigger args", head + "trigger: { id: manual, args: { a: 1 } }\n", "", msgTriggerArgs, false},
		{"CD-20", "trigger scalar", head + "trigger: manual\n", "trigger", msgTrigger, false},
		{"CD-20", "trigger null", head + "trigger:\n", "trigger", msgTrigger, false},
		{"CD-20", "trigger without id", head + "trigger: {}\n", "trigger.id", msgTriggerID, false},
		{"CD-20", "trigger empty id", head + "trigger: { id: \"\" }\n", "trigger.id", msgTriggerID, false},
		{"CD-20", "trigger number id", head + "trigger: { id: 7 }\n", "trigger.id", msgTriggerID, false},
		{"CD-20", "trigger unknown key", head + "trigger: { id: manual, when: now }\n", "trigger", "unknown key 'when'", false},
		// CD-30 — variables.
		{"CD-30", "invalid variable name", head + "variables: { From-Email: a }\n", "variables.From-Email", msgVariableName, false},
		{"CD-30", "variable name with a capital", head + "variables: { orderId: a }\n", "variables.orderId", msgVariableName, false},
		{"CD-30", "variable name starting with a digit", head + "variables: { \"1st\": a }\n", "variables.1st", msgVariableName, false},
		{"CD-30", "variables not a mapping", head + "variables: [a]\n", "variables", msgVariables, false},
		{"CD-30", "variables null", head + "variables:\n", "variables", msgVariables, false},
		// CD-40…CD-44 — workspace.
		{"CD-40", "workspace not a mapping", head + "workspace: [a]\n", "workspace", msgWorkspace, false},
		{"CD-42", "empty workspace path", head + "workspace: { \"\": x }\n", "workspace", msgWorkspacePath, false},
		{"CD-43", "from a number", head + "workspace: { a.json: { from: 3 } }\n", "workspace.a.json", msgFrom, false},
		{"CD-43", "from empty", head + "workspace: { a.json: { from: \"\" } }\n", "workspace.a.json", msgFrom, false},
		{"CD-44", "from null is still a fixture", head + "workspace: { a.json: { from: } }\n", "workspace.a.json", msgFrom, false},
		// CD-50, CD-51 — mocks.
		{"CD-50", "mock not a mapping", head + "mocks: [read_file]\n", "mocks[0]", msgMock, false},
		{"CD-50", "mock without tool", head + "mocks: [{ result: x }]\n", "mocks[0].tool", msgMockTool, false},
		{"CD-50", "mock empty tool", head + "mocks: [{ tool: \"\", result: x }]\n", "mocks[0].tool", msgMockTool, false},
		{"CD-50", "mock without result", head + "mocks: [{ tool: read_file }]\n", "mocks[0].result", msgMockResult, false},
		{"CD-50", "mock unknown key", head + "mocks: [{ name: read_file, tool: read_file, result: x }]\n", "mocks[0]", "unknown key 'name'", false},
		{"CD-50", "whenInput not a mapping", head + "mocks: [{ tool: t, whenInput: [a], result: x }]\n", "mocks[0].whenInput", msgMatcher, false},
		// CD-60 — clock.
		{"CD-60", "clock mapping", head + "clock: { at: now }\n", "clock", msgClockShape, false},
		{"CD-60", "clock null", head + "clock:\n", "clock", msgClockShape, false},
		{"CD-60", "clock without zone", head + "clock: 2026-03-20T14:30:00\n", "clock",
			"'clock' '2026-03-20T14:30:00' has no zone: a date-time takes Z or a ±HH:MM offset (e.g. '2026-03-20T14:30:00Z')", false},
		{"CD-60", "clock impossible date", head + "clock: 2026-02-30\n", "clock", fmt.Sprintf(msgClockInvalid, "'2026-02-30'"), false},
		{"CD-60", "clock impossible hour", head + "clock: \"2026-03-20T25:00Z\"\n", "clock", fmt.Sprintf(msgClockInvalid, "'2026-03-20T25:00Z'"), false},
		{"CD-60", "clock impossible offset", head + "clock: \"2026-03-20T10:00+24:00\"\n", "clock", fmt.Sprintf(msgClockInvalid, "'2026-03-20T10:00+24:00'"), false},
		{"CD-60", "clock prose", head + "clock: 20 March 2026\n", "clock", fmt.Sprintf(msgClockInvalid, "'20 March 2026'"), false},
		{"CD-60", "clock number reads its raw text", head + "clock: 2026\n", "clock", fmt.Sprintf(msgClockInvalid, "'2026'"), false},
		// CD-70 — step shapes.
		{"CD-70", "step not a mapping", withSteps("hi"), "steps[0]", msgStepShape, false},
		{"CD-70", "step with no key", withSteps("{}"), "steps[0]", "a step declares exactly one key, got [none]", false},
		{"CD-70", "step with two keys", head + "steps:\n  - send: hi\n    succeeded: true\n", "steps[0]", "a step declares exactly one key, got [send, succeeded]", false},
		{"CD-70", "unknown step", afterSend("reachedstate: done"), "steps[1]", "unknown step 'reachedstate' (" + steps + ")", false},
		{"CD-70", "judge is an unknown step", afterSend("judge: { closedQA: ok, atLeast: 0.5 }"), "steps[1]", "unknown step 'judge' (" + steps + ")", false},
		{"CD-70", "legacy expect nesting", withSteps("send: hi", "expect: [{ succeeded: true }]"), "steps[1]", "unknown step 'expect' (" + steps + ")", false},
		// CD-72 — an action before every assertion.
		{"CD-72", "assertion first", withSteps("succeeded: true", "send: hi"), "steps[0]",
			"assertion 'succeeded' has no preceding action — put a 'send', 'decide', or 'deliver' step before it", false},
		{"CD-72", "assertion after an unknown step", withSteps("sned: hi", "reachedState: done"), "steps[1]",
			"assertion 'reachedState' has no preceding action — put a 'send', 'decide', or 'deliver' step before it", false},
		// ST-01…ST-03 — actions.
		{"ST-01", "send a number", withSteps("send: 3"), "steps[0].send", msgSend, false},
		{"ST-01", "send empty", withSteps("send: \"\""), "steps[0].send", msgSend, false},
		{"ST-01", "send null", withSteps("send:"), "steps[0].send", msgSend, false},
		{"ST-01", "send a mapping", withSteps("send: { message: hi }"), "steps[0].send", msgSend, false},
		{"ST-02", "decide scalar", withSteps("decide: approved"), "steps[0].decide", msgDecide, false},
		{"ST-02", "decide without to", withSteps("decide: {}"), "steps[0].decide.to", msgDecideTo, false},
		{"ST-02", "decide empty to", withSteps("decide: { to: \"\" }"), "steps[0].decide.to", msgDecideTo, false},
		{"ST-02", "decide target key", withSteps("decide: { target: approved }"), "steps[0].decide", "unknown key 'target'", false},
		{"ST-02", "decide non-string comment", withSteps("decide: { to: a, comment: 5 }"), "steps[0].decide.comment", msgComment, false},
		{"ST-03", "deliver scalar", withSteps("deliver: email_reply"), "steps[0].deliver", msgDeliver, false},
		{"ST-03", "deliver without trigger", withSteps("deliver: { variables: {} }"), "steps[0].deliver.trigger", msgTriggerID, false},
		{"ST-03", "deliver trigger as { id }", withSteps("deliver: { trigger: { id: t } }"), "steps[0].deliver.trigger", msgTriggerID, false},
		{"ST-03", "deliver message key", withSteps("deliver: { trigger: t, message: hi }"), "steps[0].deliver", "unknown key 'message'", false},
		{"ST-03", "deliver invalid variable name", withSteps("deliver: { trigger: t, variables: { \"Reply Body\": 1 } }"),
			"steps[0].deliver.variables.Reply Body", msgVariableName, false},
		{"ST-03", "deliver variables not a mapping", withSteps("deliver: { trigger: t, variables: [1] }"), "steps[0].deliver.variables", msgDeliverVars, false},
		// §7.1 — literal true.
		{"AX-01", "succeeded false", afterSend("succeeded: false"), "steps[1].succeeded", "'succeeded' takes the literal true", false},
		{"AX-10", "usedNoTools a string", afterSend("usedNoTools: \"true\""), "steps[1].usedNoTools", "'usedNoTools' takes the literal true", false},
		{"AX-12", "noTraversal a number", afterSend("noTraversal: 1"), "steps[1].noTraversal", "'noTraversal' takes the literal true", false},
		// AX-02 — parked.
		{"AX-02", "parked false", afterSend("parked: false"), "steps[1].parked", msgParked, false},
		{"AX-02", "parked unknown channel word", afterSend("parked: waiting"), "steps[1].parked", msgParked, false},
		{"AX-02", "parked list", afterSend("parked: [decision]"), "steps[1].parked", msgParked, false},
		{"AX-02", "parked unknown key", afterSend("parked: { node: clarify }"), "steps[1].parked", "unknown key 'node'", false},
		{"AX-02", "parked bad channel", afterSend("parked: { channel: email }"), "steps[1].parked.channel", msgChannel, false},
		{"AX-02", "parked empty state", afterSend("parked: { state: \"\" }"), "steps[1].parked.state", msgStateSlug, false},
		// AX-03 — raised.
		{"AX-03", "raised false", afterSend("raised: false"), "steps[1].raised", msgRaised, false},
		{"AX-03", "raised number", afterSend("raised: 7"), "steps[1].raised", msgRaised, false},
		{"AX-03", "raised empty code", afterSend("raised: \"\""), "steps[1].raised", msgRaised, false},
		{"AX-03", "raised empty mapping", afterSend("raised: {}"), "steps[1].raised", msgRaisedEmpty, false},
		{"AX-03", "raised unknown key", afterSend("raised: { status: failed }"), "steps[1].raised", "unknown key 'status'", false},
		{"AX-03", "raised non-string code", afterSend("raised: { code: 5 }"), "steps[1].raised.code", msgRaisedCode, false},
		{"AX-03", "raised empty reason", afterSend("raised: { reason: \"\" }"), "steps[1].raised.reason", msgRaisedReason, false},
		// AX-04 — variables.
		{"AX-04", "variables scalar", afterSend("variables: order_id"), "steps[1].variables", msgVariablesStep, false},
		{"AX-04", "variables without expect", afterSend("variables: {}"), "steps[1].variables.expect", msgExpect, false},
		{"AX-04", "expect not a mapping", afterSend("variables: { expect: [a] }"), "steps[1].variables.expect", msgExpect, false},
		{"AX-04", "path as a single string", afterSend("variables: { expect: { a: 1 }, path: a.b }"), "steps[1].variables.path", msgPathMap, false},
		{"AX-04", "path value not a string", afterSend("variables: { expect: { a: 1 }, path: { a: 1 } }"), "steps[1].variables.path.a", msgPathValue, false},
		{"AX-04", "locked as a single boolean", afterSend("variables: { expect: { a: 1 }, locked: true }"), "steps[1].variables.locked", msgLockedMap, false},
		{"AX-04", "locked value not a boolean", afterSend("variables: { expect: { a: 1 }, locked: { a: \"yes\" } }"), "steps[1].variables.locked.a", msgLockedValue, false},
		{"AX-04", "variables unknown key", afterSend("variables: { expect: { a: 1 }, nope: true }"), "steps[1].variables", "unknown key 'nope'", false},
		// AX-05, AX-13 — slugs and ids.
		{"AX-05", "reachedState empty", afterSend("reachedState: \"\""), "steps[1].reachedState", msgStateSlug, false},
		{"AX-05", "reachedState number", afterSend("reachedState: 5"), "steps[1].reachedState", msgStateSlug, false},
		{"AX-13", "triggerArrival mapping", afterSend("triggerArrival: { id: manual }"), "steps[1].triggerArrival", msgTriggerID, false},
		// AX-06 — reply.
		{"AX-06", "reply scalar", afterSend("reply: hello"), "steps[1].reply", msgReply, false},
		{"AX-06", "reply empty", afterSend("reply: {}"), "steps[1].reply", msgReplyEmpty, false},
		{"AX-06", "reply token a number", afterSend("reply: { includes: 5 }"), "steps[1].reply.includes", msgTokens, false},
		{"AX-06", "reply list with a number", afterSend("reply: { excludes: [a, 5] }"), "steps[1].reply.excludes[1]", msgToken, false},
		{"AX-06", "reply unknown key", afterSend("reply: { contains: a }"), "steps[1].reply", "unknown key 'contains'", false},
		// AX-07…AX-09 — tool assertions.
		{"AX-07", "calledTool scalar", afterSend("calledTool: read_file"), "steps[1].calledTool", msgToolStep, false},
		{"AX-07", "calledTool without name", afterSend("calledTool: { input: {} }"), "steps[1].calledTool.name", msgToolName, false},
		{"AX-08", "notCalledTool unknown key", afterSend("notCalledTool: { name: t, inputs: {} }"), "steps[1].notCalledTool", "unknown key 'inputs'", false},
		{"AX-09", "blockedTool input a list", afterSend("blockedTool: { name: t, input: [a] }"), "steps[1].blockedTool.input", msgMatcher, false},
		// AX-11 — trail.
		{"AX-11", "trail scalar", afterSend("trail: review"), "steps[1].trail", msgTrail, false},
		{"AX-11", "trail without a matcher", afterSend("trail: { count: 2 }"), "steps[1].trail", msgTrailEmpty, false},
		{"AX-11", "trail without count", afterSend("trail: { to: review }"), "steps[1].trail.count", msgCount, false},
		{"AX-11", "trail negative count", afterSend("trail: { to: review, count: -1 }"), "steps[1].trail.count", msgCount, false},
		{"AX-11", "trail fractional count", afterSend("trail: { to: review, count: 1.5 }"), "steps[1].trail.count", msgCount, false},
		{"AX-11", "trail string count", afterSend("trail: { to: review, count: \"2\" }"), "steps[1].trail.count", msgCount, false},
		{"AX-11", "trail unknown kind", afterSend("trail: { kind: branch, count: 0 }"), "steps[1].trail.kind", msgTrailKind, false},
		{"AX-11", "trail empty to", afterSend("trail: { to: \"\", count: 0 }"), "steps[1].trail.to", msgStateSlug, false},
		{"AX-11", "trail empty reason", afterSend("trail: { reason: \"\", count: 0 }"), "steps[1].trail.reason", msgTrailReason, false},
		// AX-14 — ranWorkflow.
		{"AX-14", "ranWorkflow scalar", afterSend("ranWorkflow: enrich"), "steps[1].ranWorkflow", msgRanWorkflow, false},
		{"AX-14", "ranWorkflow without workflow", afterSend("ranWorkflow: { status: ok }"), "steps[1].ranWorkflow.workflow", msgWorkflowSlug, false},
		{"AX-14", "ranWorkflow bad status", afterSend("ranWorkflow: { workflow: w, status: failed }"), "steps[1].ranWorkflow.status", msgStatus, false},
		{"AX-14", "ranWorkflow negative count", afterSend("ranWorkflow: { workflow: w, count: -2 }"), "steps[1].ranWorkflow.count", msgCount, false},
		{"AX-14", "ranWorkflow unknown key", afterSend("ranWorkflow: { workflowName: w }"), "steps[1].ranWorkflow", "unknown key 'workflowName'", false},
		// AX-15 — grade.
		{"AX-15", "grade scalar", afterSend("grade: good"), "steps[1].grade", msgGrade, false},
		{"AX-15", "grade without atLeast", afterSend("grade: { closedQA: ok }"), "steps[1].grade.atLeast", msgAtLeast, false},
		{"AX-15", "grade without closedQA", afterSend("grade: { atLeast: 0.5 }"), "steps[1].grade.closedQA", msgClosedQA, false},
		{"AX-15", "grade empty closedQA", afterSend("grade: { closedQA: \"\", atLeast: 0.5 }"), "steps[1].grade.closedQA", msgClosedQA, false},
		{"AX-15", "grade atLeast above 1", afterSend("grade: { closedQA: ok, atLeast: 2 }"), "steps[1].grade.atLeast", msgAtLeast, false},
		{"AX-15", "grade atLeast negative", afterSend("grade: { closedQA: ok, atLeast: -0.1 }"), "steps[1].grade.atLeast", msgAtLeast, false},
		{"AX-15", "grade atLeast NaN", afterSend("grade: { closedQA: ok, atLeast: .nan }"), "steps[1].grade.atLeast", msgAtLeast, false},
		{"AX-15", "grade atLeast a string", afterSend("grade: { closedQA: ok, atLeast: \"0.5\" }"), "steps[1].grade.atLeast", msgAtLeast, false},
		// OQ-C18 — aliases.
		{"OQ-C18", "merge of a scalar", head + "base: &b 1\nvariables: { <<: *b }\n", "variables", msgMerge, false},
	}
	for _, tool := range []string{"archmax_advance", "archmax_raise", "archmax_wait", "archmax_reset",
		"archmax_get_variables", "archmax_set_variables", "archmax_get_history"} {
		rows = append(rows, struct {
			rule, name, src, path, msg string
			prefix                     bool
		}{"CD-51", "mock of " + tool, head + "mocks: [{ tool: " + tool + ", result: ok }]\n", "mocks[0].tool",
			fmt.Sprintf(msgMockControl, tool), false})
	}
	for _, r := range rows {
		t.Run(r.rule+"/"+r.name, func(t *testing.T) {
			se := schemaError(t, r.src)
			for _, is := range se.Issues {
				if is.Path != r.path {
					continue
				}
				if is.Message == r.msg || (r.prefix && strings.HasPrefix(is.Message, r.msg)) {
					return
				}
			}
			t.Errorf("no issue %q: %q; got:%s", r.path, r.msg, issueList(se))
		})
	}
}

// TestSchemaErrorEveryIssue checks that every issue of a document is reported, in
// order, with positions, and that Error() joins them (API-04, CD-70).
func TestSchemaErrorEveryIssue(t *testing.T) {
	src := "title: 5\n" + // 1
		"foo: 1\n" + // 2
		"steps:\n" + // 3
		"  - succeeded: false\n" + // 4
		"  - send: hi\n" + // 5
		"  - reply: { includes: [a, 5] }\n" // 6
	se := schemaError(t, src)
	want := []Issue{
		{Path: "title", Message: msgTitleRequired, Line: 1, Column: 8},
		{Path: "description", Message: msgDescriptionRequired, Line: 1, Column: 1},
		{Path: "steps[0]", Message: "assertion 'succeeded' has no preceding action — put a 'send', 'decide', or 'deliver' step before it", Line: 4, Column: 5},
		{Path: "steps[0].succeeded", Message: "'succeeded' takes the literal true", Line: 4, Column: 16},
		{Path: "steps[2].reply.includes[1]", Message: msgToken, Line: 6, Column: 28},
		{Path: "", Message: "unknown key 'foo' (known: title, description, skip, trigger, variables, workspace, mocks, clock, steps)", Line: 2, Column: 1},
	}
	if !reflect.DeepEqual(se.Issues, want) {
		t.Fatalf("issues:%s\nwant:%s", issueList(se), issueList(&CaseSchemaError{Issues: want}))
	}
	wantText := "tests/a.test.yaml: title: " + msgTitleRequired + "; description: " + msgDescriptionRequired +
		"; steps[0]: assertion 'succeeded' has no preceding action — put a 'send', 'decide', or 'deliver' step before it" +
		"; steps[0].succeeded: 'succeeded' takes the literal true; steps[2].reply.includes[1]: " + msgToken +
		"; unknown key 'foo' (known: title, description, skip, trigger, variables, workspace, mocks, clock, steps)"
	if se.Error() != wantText {
		t.Errorf("Error() =\n%s\nwant\n%s", se.Error(), wantText)
	}
	if se.Name() != "CaseSchemaError" {
		t.Errorf("Name() = %q", se.Name())
	}
}

// TestYAMLParseErrorLine: a syntax error carries the parser's line (CE-13).
func TestYAMLParseErrorLine(t *testing.T) {
	se := schemaError(t, "title: T\ndescription: D\nsteps:\n  - send: [a\n")
	if len(se.Issues) != 1 || se.Issues[0].Line == 0 || !strings.HasPrefix(se.Issues[0].Message, "YAML parse error: ") {
		t.Fatalf("issues:%s", issueList(se))
	}
	if strings.Contains(se.Issues[0].Message, "yaml: ") {
		t.Errorf("message keeps the library prefix: %q", se.Issues[0].Message)
	}
}

// TestRegexValidation: every regex-capable string (MT-05) goes through validateRegexForm
// and a refusal becomes `malformed regex "<raw>": <message>` (MT-04); strings where the
// regex form does not apply never reach it.
func TestRegexValidation(t *testing.T) {
	var seen []string
	defer func(old func(string) error) { validateRegexForm = old }(validateRegexForm)
	validateRegexForm = func(s string) error {
		seen = append(seen, s)
		if strings.HasPrefix(s, "/[") {
			return errors.New("Invalid regular expression: missing /")
		}
		return nil
	}

	src := head + `variables: { v: "/[v/" }
mocks:
  - tool: read_file
    whenInput: { file_path: "/[w/", list: ["/[x/", { deep: "/ok/i" }], n: 4 }
    result: "/[result/"
steps:
  - send: "/[send/"
  - reply: { includes: "/[a/", excludes: ["plain", "/[b/"] }
  - raised: { code: "/[code/", reason: "/[reason/" }
  - raised: "/[rcode/"
  - calledTool: { name: t, input: { "p\"q": "/[c/" } }
  - notCalledTool: { name: t, input: { a: ["/ok/"] } }
  - blockedTool: { name: t, input: { a: "/[d/" } }
  - variables: { expect: { v: "/[e/" } }
  - trail: { to: "/[f/", reason: "/[g/", count: 0 }
  - reachedState: "/[h/"
  - triggerArrival: "/[i/"
`
	se := schemaError(t, src)
	wantIssues := map[string]string{
		"mocks[0].whenInput.file_path":  `/[w/`,
		"mocks[0].whenInput.list[0]":    `/[x/`,
		"steps[1].reply.includes":       `/[a/`,
		"steps[1].reply.excludes[1]":    `/[b/`,
		"steps[2].raised.reason":        `/[reason/`,
		`steps[4].calledTool.input.p"q`: `/[c/`,
		"steps[6].blockedTool.input.a":  `/[d/`,
	}
	if len(se.Issues) != len(wantIssues) {
		t.Errorf("issues:%s", issueList(se))
	}
	for _, is := range se.Issues {
		raw, ok := wantIssues[is.Path]
		if !ok {
			t.Errorf("unexpected issue %q: %q", is.Path, is.Message)
			continue
		}
		if want := "malformed regex " + jsonQuote(raw) + ": Invalid regular expression: missing /"; is.Message != want {
			t.Errorf("%s: %q, want %q", is.Path, is.Message, want)
		}
	}
	wantSeen := []string{"/[w/", "/[x/", "/ok/i", "/[a/", "plain", "/[b/", "/[reason/", "/[c/", "/ok/", "/[d/"}
	if !reflect.DeepEqual(seen, wantSeen) {
		t.Errorf("validated %q,\nwant      %q", seen, wantSeen)
	}
}

func TestMalformedRegexQuoting(t *testing.T) {
	defer func(old func(string) error) { validateRegexForm = old }(validateRegexForm)
	validateRegexForm = func(s string) error { return errors.New("bad") }
	se := schemaError(t, afterSend(`reply: { includes: "/a\"b\\c\n/" }`))
	want := `malformed regex "/a\"b\\c\n/": bad`
	if len(se.Issues) != 1 || se.Issues[0].Message != want {
		t.Fatalf("issues:%s\nwant %q", issueList(se), want)
	}
}

// TestRegexEngineInstalled: with match.go's engine installed, a malformed regex-shaped
// string is refused at parse time and a literal that looks like /x/y must be written
// differently (MT-04).
func TestRegexEngineInstalled(t *testing.T) {
	if validateRegexForm("/[/") == nil {
		t.Skip("no regex engine installed")
	}
	for _, raw := range []string{"/[/", "/etc/passwd", "/x/gg"} {
		se := schemaError(t, afterSend("reply: { includes: "+jsonQuote(raw)+" }"))
		prefix := "malformed regex " + jsonQuote(raw) + ": "
		if len(se.Issues) != 1 || !strings.HasPrefix(se.Issues[0].Message, prefix) || se.Issues[0].Path != "steps[1].reply.includes" {
			t.Errorf("%s: issues:%s", raw, issueList(se))
		}
	}
	mustParse(t, afterSend(`reply: { includes: ["/x/I", "//", "/(?<y>a)\\k<y>/s", "etc/passwd"] }`))
}

// TestAliasBombBounded: aliases expand within a bound, so a billion-laughs document is
// refused quickly (OQ-C18).
func TestAliasBombBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString(head + "variables:\n  a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 10; i++ {
		fmt.Fprintf(&b, "  a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n", i, i,
			i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	se := schemaError(t, b.String()) // refused by the node bound, before expanding 10^10 nodes
	if len(se.Issues) != 1 || se.Issues[0].Message != msgAliasBomb {
		t.Fatalf("issues:%s", issueList(se))
	}
}

// TestAliasesAndMerges: aliases expand and merge keys apply, explicit keys winning
// (OQ-C18).
func TestAliasesAndMerges(t *testing.T) {
	doc := mustParse(t, head+`variables:
  base: &base { a: 1, b: 2 }
  more: { <<: *base, b: 3, c: *base }
`)
	want := Fields{
		{Key: "base", Value: MapValue(Field{"a", NumberValue(1)}, Field{"b", NumberValue(2)})},
		{Key: "more", Value: MapValue(Field{"a", NumberValue(1)}, Field{"b", NumberValue(3)},
			Field{"c", MapValue(Field{"a", NumberValue(1)}, Field{"b", NumberValue(2)})})},
	}
	if !reflect.DeepEqual(doc.Variables, want) {
		t.Errorf("variables = %#v", doc.Variables)
	}
}

// TestCoreSchema: plain scalars read with the YAML 1.2 core schema (CD-03).
func TestCoreSchema(t *testing.T) {
	doc := mustParse(t, head+`variables:
  a: yes
  b: off
  c: 2026-03-20
  d: 0x1F
  e: 0o17
  f: 1_000
  g: ~
  h: True
  i: -.inf
  j: "true"
  k: !!str 12
  l: 012
  m: 1e3
`)
	want := Fields{
		{"a", StringValue("yes")}, {"b", StringValue("off")}, {"c", StringValue("2026-03-20")},
		{"d", NumberValue(31)}, {"e", NumberValue(15)}, {"f", StringValue("1_000")}, {"g", NullValue()},
		{"h", BoolValue(true)}, {"i", NumberValue(math.Inf(-1))}, {"j", StringValue("true")},
		{"k", StringValue("12")}, {"l", NumberValue(12)}, {"m", NumberValue(1000)},
	}
	if !reflect.DeepEqual(doc.Variables, want) {
		t.Errorf("variables =\n%#v\nwant\n%#v", doc.Variables, want)
	}
}

func intp(n int) *int { return &n }

// TestValidDocuments parses one document of every step kind and form.
func TestValidDocuments(t *testing.T) {
	rows := []struct {
		rule, name, src string
		want            *CaseDocument
	}{
		{"CD-73", "minimal", head, &CaseDocument{Title: "T", Description: "D"}},
		{"CD-73", "empty parts read as absent", head + "variables: {}\nworkspace: {}\nmocks: []\nsteps: []\n",
			&CaseDocument{Title: "T", Description: "D"}},
		{"CD-01", "prose collapsed", "title: >-\n  Alpha\n  case\ndescription: |\n  Drives   the alpha\n  case.\n",
			&CaseDocument{Title: "Alpha case", Description: "Drives the alpha case."}},
		{"CD-01", "one-line literal title", "title: |\n  Alpha case\ndescription: \"\\u00a0 D \\t\"\n",
			&CaseDocument{Title: "Alpha case", Description: "D"}},
		{"CD-01", "title at the limit", "title: " + strings.Repeat("😀", 30) + "\ndescription: D\n",
			&CaseDocument{Title: strings.Repeat("😀", 30), Description: "D"}},
		{"CD-10", "skip", head + "skip: pending fixture\n", &CaseDocument{Title: "T", Description: "D", Skip: "pending fixture"}},
		{"CD-20", "trigger", head + "trigger: { id: email_received }\n",
			&CaseDocument{Title: "T", Description: "D", Trigger: &TriggerDecl{ID: "email_received"}}},
		{"CD-30", "variables keep order and structure", head + "variables:\n  zeta: 1\n  alpha: { items: [{ sku: A-1 }] }\n  on: off\n",
			&CaseDocument{Title: "T", Description: "D", Variables: Fields{
				{"zeta", NumberValue(1)},
				{"alpha", MapValue(Field{"items", ListValue(MapValue(Field{"sku", StringValue("A-1")}))})},
				{"on", StringValue("off")},
			}}},
		{"CD-41", "workspace forms", head + "workspace:\n  verbatim.txt: \"hello\"\n  inline.json: { company: Acme }\n" +
			"  copied.json: { from: shared/fixture.json }\n  scratchpad/n.json: 4\n  nothing.json:\n  two.json: { from: a, to: b }\n",
			&CaseDocument{Title: "T", Description: "D", Workspace: []WorkspaceEntry{
				{Path: "verbatim.txt", Source: WorkspaceInline, Content: StringValue("hello")},
				{Path: "inline.json", Source: WorkspaceInline, Content: MapValue(Field{"company", StringValue("Acme")})},
				{Path: "copied.json", Source: WorkspaceFile, From: "shared/fixture.json"},
				{Path: "scratchpad/n.json", Source: WorkspaceInline, Content: NumberValue(4)},
				{Path: "nothing.json", Source: WorkspaceInline, Content: NullValue()},
				{Path: "two.json", Source: WorkspaceInline, Content: MapValue(Field{"from", StringValue("a")}, Field{"to", StringValue("b")})},
			}}},
		{"CD-50", "mocks", head + "mocks:\n  - tool: read_file\n    whenInput: { file_path: \"/orders/\" }\n    result: \"[]\"\n" +
			"  - tool: archmax_workflow_enrich\n    result: { message: done }\n  - tool: archmax_eval\n    whenInput: {}\n    result:\n",
			&CaseDocument{Title: "T", Description: "D", Mocks: []Mock{
				{Name: "read_file", WhenInput: Fields{{"file_path", StringValue("/orders/")}}, Result: StringValue("[]")},
				{Name: "archmax_workflow_enrich", Result: MapValue(Field{"message", StringValue("done")})},
				{Name: "archmax_eval", Result: NullValue()},
			}}},
		{"CD-60", "clock date", head + "clock: 2026-03-20\n", &CaseDocument{Title: "T", Description: "D", Clock: "2026-03-20"}},
		{"CD-60", "clock quoted date-time", head + "clock: \"2026-03-20T14:30:00Z\"\n",
			&CaseDocument{Title: "T", Description: "D", Clock: "2026-03-20T14:30:00Z"}},
		{"CD-60", "clock offset without seconds", head + "clock: 2026-03-20T16:30+02:00\n",
			&CaseDocument{Title: "T", Description: "D", Clock: "2026-03-20T16:30+02:00"}},
		{"ST-01", "send", withSteps("send: \"hi, I am a.stranger@nowhere.test\""),
			&CaseDocument{Title: "T", Description: "D", Steps: []Step{SendStep{Message: "hi, I am a.stranger@nowhere.test"}}}},
		{"ST-02", "decide forms", withSteps("decide: { to: refund-closed, comment: ok }", "decide: { to: rejected }", "decide: { to: a, comment: \"\" }"),
			&CaseDocument{Title: "T", Description: "D", Steps: []Step{
				DecideStep{To: "refund-closed", Comment: "ok"}, DecideStep{To: "rejected"}, DecideStep{To: "a"}}}},
		{"ST-03", "deliver forms", withSteps("deliver: { trigger: email_reply, variables: { reply_body: \"yes\" } }", "deliver: { trigger: timer }", "reachedState: answer"),
			&CaseDocument{Title: "T", Description: "D", Steps: []Step{
				DeliverStep{Trigger: "email_reply", Variables: Fields{{"reply_body", StringValue("yes")}}},
				DeliverStep{Trigger: "timer"},
				ReachedStateAssertion{State: "answer"}}}},
		{"AX-01", "true-valued assertions", withSteps("send: hi", "succeeded: true", "usedNoTools: true", "noTraversal: True"),
			&CaseDocument{Title: "T", Description: "D", Steps: []Step{SendStep{Message: "hi"},
				SucceededAssertion{}, UsedNoToolsAssertion{}, NoTraversalAssertion{}}}},
		{"AX-02", "parked forms", withSteps("send: hi", "parked: true", "parked: decision", "parked: input",
			"parked: { channel: input, state: clarify }", "parked: { state: review }", "parked: { channel: decision }", "parked: {}"),
			&CaseDocument{Title: "T", Description: "D", Steps: []Step{SendStep{Message: "hi"},
				ParkedAssertion{}, ParkedAssertion{Channel: "decision"}, ParkedAssertion{Channel: "input"},
				ParkedAssertion{Channel: "input", State: "clarify"}, ParkedAssertion{State: "review"},
				ParkedAssertion{Channel: "decision"}, ParkedAssertion{}}}},
		{"AX-03", "raised forms", withSteps("send: hi", "raised: true", "raised: orders-unavailable",
			"raised: { code: orders-unavailable, reason: /api is down/i }", "raised: { reason: The orders API is down. }", "raised: { code: x }"),
			&CaseDocument{Title: "T", Description: "D", Steps: []Step{SendStep{Message: "hi"},
				RaisedAssertion{}, RaisedAssertion{Code: "orders-unavailable"},
				RaisedAssertion{Code: "orders-unavailable", Reason: "/api is down/i"},
				RaisedAssertion{Reason: "The orders API is down."}, RaisedAssertion{Code: "x"}}}},
		{"AX-04", "variables forms", withSteps("send: hi",
			"variables: { expect: { company: Acme, order: { id: 1 } }, path: { order: items.-1.sku }, locked: { company: true, order: false } }",
			"variables: { expect: {} }"),
			&CaseDocument{Title: "T", Description: "D", Steps: []Step{SendStep{Message: "hi"},
				VariablesAssertion{
					Expect: Fields{{"company", StringValue("Acme")}, {"order", MapValue(Field{"id", NumberValue(1)})}},
					Path:   []VariablePath{{Name: "order", Path: "items.-1.sku"}},
					Locked: []VariableLock{{Name: "company", Locked: true}, {Name: "order", Locked: false}},
				},
				VariablesAssertion{}}}},
		{"AX-05", "reachedState and triggerArrival", withSteps("send: hi", "reachedState: refuse", "triggerArrival: manual"),
			&CaseDocument{Title: "T", Description: "D", Steps: []Step{SendStep{Message: "hi"},
				ReachedStateAssertion{State: "refuse"}, TriggerArrivalAssertion{Trigger: "manual"}}}},
		{"AX-06", "reply forms", withSteps("send: hi", `reply: { includes: "/approv/i" }`, `reply: { includes: ["plain", "/den/i"], excludes: ORD-2001 }`,
			"reply: { excludes: [] }"),
			&CaseDocument{Title: "T", Description: "D", Steps: []Step{SendStep{Message: "hi"},
				ReplyAssertion{Includes: []string{"/approv/i"}},
				ReplyAssertion{Includes: []string{"plain", "/den/i"}, Excludes: []string{"ORD-2001"}},
				ReplyAssertion{}}}},
		{"AX-07", "tool assertions", withSteps("send: hi", "calledTool: { name: read_file, input: { file_path: \"/orders/i\", n: [1, { a: b }] } }",
			"notCalledTool: { name: refund }", "blockedTool: { name: rm, input: {} }"),
			&CaseDocument{Title: "T", Description: "D", Steps: []Step{SendStep{Message: "hi"},
				CalledToolAssertion{ToolPattern: ToolPattern{Name: "read_file", Input: Fields{
					{"file_path", StringValue("/orders/i")},
					{"n", ListValue(NumberValue(1), MapValue(Field{"a", StringValue("b")}))}}}},
				NotCalledToolAssertion{ToolPattern: ToolPattern{Name: "refund"}},
				BlockedToolAssertion{ToolPattern: ToolPattern{Name: "rm"}}}}},
		{"AX-11", "trail forms", withSteps("send: hi", "trail: { kind: code, to: lookup, count: 0 }", "trail: { reason: approved, count: 2.0 }",
			"trail: { to: review, kind: sub-workflow, reason: r, count: 1e1 }"),
			&CaseDocument{Title: "T", Description: "D", Steps: []Step{SendStep{Message: "hi"},
				TrailAssertion{To: "lookup", TrailKind: "code", Count: 0},
				TrailAssertion{Reason: "approved", Count: 2},
				TrailAssertion{To: "review", TrailKind: "sub-workflow", Reason: "r", Count: 10}}}},
		{"AX-14", "ranWorkflow forms", withSteps("send: hi", "ranWorkflow: { workflow: enrich-account }",
			"ranWorkflow: { workflow: enrich-account, status: error, count: 2 }", "ranWorkflow: { workflow: w, count: 0 }"),
			&CaseDocument{Title: "T", Description: "D", Steps: []Step{SendStep{Message: "hi"},
				RanWorkflowAssertion{Workflow: "enrich-account", Status: "ok"},
				RanWorkflowAssertion{Workflow: "enrich-account", Status: "error", Count: intp(2)},
				RanWorkflowAssertion{Workflow: "w", Status: "ok", Count: intp(0)}}}},
		{"AX-15", "grade", withSteps("send: hi", "grade: { closedQA: \"Did it answer?\", atLeast: 0.7 }", "grade: { closedQA: ok, atLeast: 1 }"),
			&CaseDocument{Title: "T", Description: "D", Steps: []Step{SendStep{Message: "hi"},
				GradeAssertion{ClosedQA: "Did it answer?", AtLeast: 0.7}, GradeAssertion{ClosedQA: "ok", AtLeast: 1}}}},
		{"CE-13", "explicit document markers and CRLF", "---\r\ntitle: T\r\ndescription: D\r\n...\r\n",
			&CaseDocument{Title: "T", Description: "D"}},
	}
	for _, r := range rows {
		t.Run(r.rule+"/"+r.name, func(t *testing.T) {
			got := mustParse(t, r.src)
			if !reflect.DeepEqual(got, r.want) {
				t.Errorf("got\n%#v\nwant\n%#v", got, r.want)
			}
		})
	}
}

// TestStructural: the §7.1 classification, by kind and by value.
func TestStructural(t *testing.T) {
	structural := map[StepKind]bool{
		StepSucceeded: true, StepParked: true, StepRaised: true, StepVariables: true, StepReachedState: true,
		StepTrail: true, StepNoTraversal: true, StepTriggerArrival: true,
	}
	steps := []Assertion{SucceededAssertion{}, ParkedAssertion{}, RaisedAssertion{}, VariablesAssertion{},
		ReachedStateAssertion{}, ReplyAssertion{}, CalledToolAssertion{}, NotCalledToolAssertion{},
		BlockedToolAssertion{}, UsedNoToolsAssertion{}, TrailAssertion{}, NoTraversalAssertion{},
		TriggerArrivalAssertion{}, RanWorkflowAssertion{}, GradeAssertion{}}
	if len(steps) != len(AssertionKinds) {
		t.Fatalf("%d assertion types, %d kinds", len(steps), len(AssertionKinds))
	}
	for i, a := range steps {
		k := a.Kind()
		if k != AssertionKinds[i] {
			t.Errorf("type %T has kind %q, want %q (grammar order)", a, k, AssertionKinds[i])
		}
		if a.Structural() != structural[k] || k.Structural() != structural[k] {
			t.Errorf("%s: Structural() = %v / %v, want %v", k, a.Structural(), k.Structural(), structural[k])
		}
		if !k.IsAssertion() || k.IsAction() {
			t.Errorf("%s: IsAssertion/IsAction wrong", k)
		}
	}
	for _, a := range []Action{SendStep{}, DecideStep{}, DeliverStep{}} {
		if k := a.Kind(); !k.IsAction() || k.IsAssertion() || k.Structural() {
			t.Errorf("%s misclassified", k)
		}
	}
}

// TestClockTime: the accepted clock forms and their instants (CD-60).
func TestClockTime(t *testing.T) {
	rows := []struct {
		raw  string
		want time.Time
	}{
		{"2026-03-20", time.Date(2026, 3, 20, 0, 0, 0, 0, time.UTC)},
		{"2024-02-29", time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)},
		{"2026-03-20T14:30:00Z", time.Date(2026, 3, 20, 14, 30, 0, 0, time.UTC)},
		{"2026-03-20T14:30Z", time.Date(2026, 3, 20, 14, 30, 0, 0, time.UTC)},
		{"2026-03-20T16:30+02:00", time.Date(2026, 3, 20, 14, 30, 0, 0, time.UTC)},
		{"2026-03-20T09:30:15.25-05:00", time.Date(2026, 3, 20, 14, 30, 15, 250_000_000, time.UTC)},
	}
	for _, r := range rows {
		doc := mustParse(t, head+"clock: "+r.raw+"\n")
		got, ok := doc.ClockTime()
		if !ok || !got.Equal(r.want) {
			t.Errorf("%s: ClockTime() = %v, %v; want %v", r.raw, got, ok, r.want)
		}
	}
	for _, bad := range []string{"2023-02-29", "2026-13-01", "2026-03-20T14:60Z", "2026-03-20T14:30:60Z",
		"2026-03-20T14Z", "2026-03-20 14:30Z", "2026-03-20t14:30z", "26-03-20", "2026-03-20T14:30:00.Z", "2026-03-20T14:30+0200"} {
		if _, err := ParseCaseDocument("a", []byte(head+"clock: \""+bad+"\"\n")); err == nil {
			t.Errorf("clock %q accepted", bad)
		}
	}
	if _, ok := (&CaseDocument{}).ClockTime(); ok {
		t.Error("no clock reported a time")
	}
}

func TestTriggerID(t *testing.T) {
	if got := (&CaseDocument{}).TriggerID(); got != "manual" {
		t.Errorf("default trigger = %q (CD-21)", got)
	}
	if got := (&CaseDocument{Trigger: &TriggerDecl{ID: "email"}}).TriggerID(); got != "email" {
		t.Errorf("trigger = %q", got)
	}
}

// TestValueJSON: inline workspace content and mock results as JSON (CD-41, CD-50).
func TestValueJSON(t *testing.T) {
	doc := mustParse(t, head+`workspace:
  a.json: { z: 1, a: [true, null, "x\"y", 1.5e-7, 1e21, { }], e: [], n: .nan }
  b.txt: "verbatim\n"
  c.json: { from: fixtures/c.json }
mocks:
  - { tool: t, result: { b: 2, a: "</>\u2028" } }
  - { tool: u, result: "plain text" }
`)
	got, ok := doc.Workspace[0].InlineBytes()
	want := "{\n  \"z\": 1,\n  \"a\": [\n    true,\n    null,\n    \"x\\\"y\",\n    1.5e-7,\n    1e+21,\n    {}\n  ],\n  \"e\": [],\n  \"n\": null\n}\n"
	if !ok || string(got) != want {
		t.Errorf("InlineBytes =\n%s\nwant\n%s", got, want)
	}
	if got, ok := doc.Workspace[1].InlineBytes(); !ok || string(got) != "verbatim\n" {
		t.Errorf("string content = %q", got)
	}
	if _, ok := doc.Workspace[2].InlineBytes(); ok {
		t.Error("a fixture entry has inline bytes")
	}
	if got := doc.Mocks[0].ResultText(); got != "{\"b\":2,\"a\":\"</>\u2028\"}" {
		t.Errorf("ResultText = %q", got)
	}
	if got := doc.Mocks[1].ResultText(); got != "plain text" {
		t.Errorf("ResultText = %q", got)
	}
	plain := doc.Workspace[0].Content.Plain().(map[string]any)
	if plain["z"] != 1.0 || len(plain["a"].([]any)) != 6 {
		t.Errorf("Plain = %#v", plain)
	}
}

// FuzzParseCaseDocument: the parser never panics, answers a document or a
// *CaseSchemaError with at least one issue, and every document it accepts round-trips
// through SerializeCaseDocument (API-06).
func FuzzParseCaseDocument(f *testing.F) {
	for _, s := range corpus {
		f.Add([]byte(s))
	}
	for _, s := range []string{
		"", "~", "- a", "title: [", "title: T\n---\ntitle: U\n", head + "steps: [{}]\n",
		head + "variables: &a { x: *a }\n",
		head + "variables:\n  a: &a [x, x]\n  b: &b [*a, *a, *a]\n  c: [*b, *b, *b, *b]\n",
		head + "variables: { <<: [{ a: 1 }, { b: 2 }], a: 0 }\n",
		head + "steps: [{ succeeded: true }, { send: 3 }, { raised: {} }, { trail: { count: -1 } }]\n",
		"title: \"\\ud83d\"\ndescription: \"\\0\\x85\\u2028\"\n",
		head + "? [a]\n: b\n",
		head + "workspace: { \"a\\nb\": \"x\\r\\ny\" }\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		doc, err := ParseCaseDocument("f.test.yaml", src)
		if err != nil {
			var se *CaseSchemaError
			if !errors.As(err, &se) || doc != nil || len(se.Issues) == 0 {
				t.Fatalf("ParseCaseDocument = %v, %v", doc, err)
			}
			for _, is := range se.Issues {
				if is.Message == "" {
					t.Fatalf("an issue without a message: %+v", is)
				}
			}
			return
		}
		out, err := SerializeCaseDocument(doc)
		if err != nil {
			t.Fatalf("SerializeCaseDocument: %v\nsource:\n%q", err, src)
		}
		back, err := ParseCaseDocument("f.test.yaml", out)
		if err != nil {
			t.Fatalf("reparse: %v\nserialized:\n%s", err, out)
		}
		if !sameDocument(doc, back) {
			t.Fatalf("round trip changed the document\nsource:\n%q\nserialized:\n%s\nbefore %#v\nafter  %#v", src, out, doc, back)
		}
	})
}
