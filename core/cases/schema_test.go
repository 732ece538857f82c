package cases

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/archmax-ai/archmax/core/internal/schematest"
)

// The editor schema docs/schema/case.schema.json is written by hand and held to
// ParseCaseDocument here, so the two cannot drift (issue 10, DECISIONS V10-4): every
// fixture case and a varied set of valid documents validate; every key and step kind
// the schema declares is one the parser takes, and every kind of ActionKinds and
// AssertionKinds and every key of TopLevelKeys is one the schema declares; unknown keys
// and kinds are refused by both at every level; and documents the parser refuses for
// their shape are refused by the schema too, except the differences listed in
// TestCaseSchemaLooserThanParser.

const caseSchemaFile = "../../docs/schema/case.schema.json"

func caseSchema(t *testing.T) (*jsonschema.Schema, map[string]any) {
	t.Helper()
	return schematest.Compile(t, caseSchemaFile)
}

func caseInstance(t *testing.T, src string) any {
	t.Helper()
	return schematest.Instance(t, src)
}

// caseIssues returns the parser's issues for src (nil when it parses).
func caseIssues(t *testing.T, src string) []Issue {
	t.Helper()
	_, err := ParseCaseDocument("case.test.yaml", []byte(src))
	if err == nil {
		return nil
	}
	var se *CaseSchemaError
	if !errors.As(err, &se) {
		t.Fatalf("error %T %v, want *CaseSchemaError", err, err)
	}
	return se.Issues
}

func schemaPointer(t *testing.T, root map[string]any, ptr string) any {
	t.Helper()
	return schematest.Pointer(t, root, ptr)
}

func schemaKeys(t *testing.T, root map[string]any, ptr string) []string {
	t.Helper()
	return schematest.Keys(t, root, ptr)
}

func kindNames(kinds []StepKind) []string {
	out := make([]string, len(kinds))
	for i, k := range kinds {
		out[i] = string(k)
	}
	return out
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return s
}

const caseHead = "title: T\ndescription: D\n"

// caseStep is a document whose steps are a send and then the given step's inner flow
// text.
func caseStep(inner string) string {
	return caseHead + "steps: [{ send: hi }, { " + inner + " }]\n"
}

// caseSlot is one strict mapping of the grammar: the schema's properties at ptr, a
// document holding a mapping whose inner flow text is given, and for each declared key an
// inner text using it in an otherwise valid document. single: a step, one key only.
type caseSlot struct {
	ptr     string
	doc     func(inner string) string
	samples map[string]string
	single  bool
}

func caseSlots() []caseSlot {
	in := func(key string) func(string) string {
		return func(inner string) string { return caseStep(key + ": { " + inner + " }") }
	}
	return []caseSlot{
		{ptr: "/properties", doc: func(inner string) string { return caseHead + inner + "\n" }, samples: map[string]string{
			"title":       "",
			"description": "",
			"skip":        "skip: the desk is closed this week",
			"trigger":     "trigger: { id: exception-form }",
			"variables":   "variables: { order_id: A-1, items: [{ sku: x }] }",
			"workspace":   "workspace: { scratchpad/a.md: text, trigger.json: { a: 1 }, scratchpad/b.md: { from: fixtures/b.md } }",
			"mocks":       "mocks: [{ tool: read_file, result: x }]",
			"clock":       "clock: 2026-03-20T16:30+02:00",
			"steps":       "steps: [{ send: hi }, { succeeded: true }]",
		}},
		{ptr: "/properties/trigger/properties", doc: func(inner string) string { return caseHead + "trigger: { " + inner + " }\n" },
			samples: map[string]string{"id": "id: manual"}},
		{ptr: "/$defs/mock/properties", doc: func(inner string) string { return caseHead + "mocks: [{ " + inner + " }]\n" },
			samples: map[string]string{
				"tool":      "tool: read_file, result: x",
				"whenInput": `tool: read_file, whenInput: { file_path: "/grants\\.json$/", n: [1, "/a/i"] }, result: x`,
				"result":    "result: { rows: [] }, tool: lookup",
			}},
		{ptr: "/$defs/step/properties", single: true, doc: caseStep, samples: map[string]string{
			"send":           "send: and another thing",
			"decide":         "decide: { to: done }",
			"deliver":        "deliver: { trigger: manager-reply }",
			"succeeded":      "succeeded: true",
			"parked":         "parked: decision",
			"raised":         "raised: order.unknown",
			"variables":      "variables: { expect: { area: east-lab } }",
			"reachedState":   "reachedState: done",
			"reply":          "reply: { includes: filed }",
			"calledTool":     "calledTool: { name: read_file }",
			"notCalledTool":  "notCalledTool: { name: write_file }",
			"blockedTool":    "blockedTool: { name: write_file }",
			"usedNoTools":    "usedNoTools: true",
			"trail":          "trail: { to: done, count: 1 }",
			"noTraversal":    "noTraversal: true",
			"triggerArrival": "triggerArrival: manager-reply",
			"ranWorkflow":    "ranWorkflow: { workflow: badge-check }",
			"grade":          "grade: { closedQA: \"Is the answer polite?\", atLeast: 0.8 }",
		}},
		{ptr: "/$defs/actionKinds/properties/decide/properties",
			doc:     func(inner string) string { return caseHead + "steps: [{ decide: { " + inner + " } }]\n" },
			samples: map[string]string{"to": "to: badge-granted", "comment": "to: badge-granted, comment: Fine by me."}},
		{ptr: "/$defs/actionKinds/properties/deliver/properties",
			doc:     func(inner string) string { return caseHead + "steps: [{ deliver: { " + inner + " } }]\n" },
			samples: map[string]string{"trigger": "trigger: manager-reply", "variables": `trigger: t, variables: { end_date: "2026-03-31" }`}},
		{ptr: "/$defs/assertionKinds/properties/parked/anyOf/2/properties", doc: in("parked"),
			samples: map[string]string{"channel": "channel: input", "state": "state: draft"}},
		{ptr: "/$defs/assertionKinds/properties/raised/anyOf/2/properties", doc: in("raised"),
			samples: map[string]string{"code": "code: team.unknown", "reason": "reason: /unknown team/i"}},
		{ptr: "/$defs/assertionKinds/properties/variables/properties", doc: in("variables"),
			samples: map[string]string{
				"expect": "expect: { requester: Dana }",
				"path":   "expect: { order: x }, path: { order: items.-1.sku }",
				"locked": "expect: { requester: Dana }, locked: { requester: true }",
			}},
		{ptr: "/$defs/assertionKinds/properties/reply/properties", doc: in("reply"),
			samples: map[string]string{"includes": `includes: ["/manager/", filed]`, "excludes": "excludes: /approved/i"}},
		{ptr: "/$defs/toolPattern/properties", doc: in("calledTool"),
			samples: map[string]string{"name": "name: read_file", "input": "name: read_file, input: { file_path: scratchpad/exception.md }"}},
		{ptr: "/$defs/assertionKinds/properties/trail/properties", doc: in("trail"),
			samples: map[string]string{
				"to":     "to: draft, count: 2",
				"kind":   "kind: on_error, count: 0",
				"reason": "reason: the note has every required section, count: 1",
				"count":  "count: 0, to: escalate",
			}},
		{ptr: "/$defs/assertionKinds/properties/ranWorkflow/properties", doc: in("ranWorkflow"),
			samples: map[string]string{
				"workflow": "workflow: badge-check",
				"status":   "workflow: badge-approval, status: error",
				"count":    "workflow: badge-check, count: 2",
			}},
		{ptr: "/$defs/assertionKinds/properties/grade/properties", doc: in("grade"),
			samples: map[string]string{"closedQA": "closedQA: \"Is it declined?\", atLeast: 1", "atLeast": "atLeast: 0, closedQA: x"}},
	}
}

// Every fixture case the parser accepts validates against the schema.
func TestCaseSchemaAcceptsFixtureCases(t *testing.T) {
	sch, _ := caseSchema(t)
	n := 0
	err := filepath.WalkDir("../../fixtures", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !slices.ContainsFunc(TestFileExtensions, func(ext string) bool { return strings.HasSuffix(p, ext) }) {
			return err
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if _, err := ParseCaseDocument(p, src); err != nil {
			t.Logf("%s: not parseable, skipped: %v", p, err)
			return nil
		}
		n++
		if err := sch.Validate(caseInstance(t, string(src))); err != nil {
			t.Errorf("%s parses but the schema rejects it: %v", p, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 10 {
		t.Fatalf("only %d fixture cases found", n)
	}
}

// A varied set of valid documents: accepted by both.
func TestCaseSchemaAcceptsValidDocuments(t *testing.T) {
	sch, _ := caseSchema(t)
	for name, src := range map[string]string{
		"minimal":                 caseHead,
		"skipped":                 caseHead + "skip: waits for the new catalogue\n",
		"empty steps":             caseHead + "steps: []\n",
		"empty parts":             caseHead + "variables: {}\nworkspace: {}\nmocks: []\n",
		"block title":             "title: |\n  Unknown requester is rejected at entry\ndescription: >-\n  The screen raises before\n  any model call.\n",
		"title of 60":             "title: " + strings.Repeat("x", 60) + "\ndescription: D\n",
		"description of 200":      "title: T\ndescription: " + strings.Repeat("y", 200) + "\n",
		"clock date unquoted":     caseHead + "clock: 2026-03-20\n",
		"clock zulu fraction":     caseHead + "clock: \"2026-03-20T14:30:05.25Z\"\n",
		"clock offset no seconds": caseHead + "clock: 2026-03-20T16:30-05:00\n",
		"workspace values": caseHead + "workspace:\n  scratchpad/n.json: 5\n  scratchpad/null.json:\n" +
			"  scratchpad/list.json: [1, two]\n  scratchpad/obj.json: { from: x, also: y }\n" +
			"  scratchpad/from.md: { from: fixtures/a.md }\n  scratchpad/t.txt: \"{\\\"from\\\": \\\"x\\\"}\"\n",
		"mocks": caseHead + "mocks:\n  - tool: archmax_workflow_badge-check\n    whenInput: { area: east-lab }\n" +
			"    result: { returns: { cleared: true } }\n  - tool: archmax_eval\n    result: null\n",
		"every step form": caseHead + `trigger: { id: exception-form }
variables: { requester: Dana }
steps:
  - send: "I need access."
  - parked: true
  - parked: { channel: decision }
  - parked: {}
  - decide: { to: badge-granted, comment: "" }
  - raised: true
  - raised: { reason: "/unknown/" }
  - raised: { code: x, reason: y }
  - variables: { expect: {}, path: {}, locked: {} }
  - deliver: { trigger: manager-reply, variables: { end_date: "2026-03-31", n: 2 } }
  - reply: { includes: [], excludes: [a, "/b/m"] }
  - calledTool: { name: x, input: {} }
  - blockedTool: { name: write_file, input: { file_path: "/grants\\/.*/" } }
  - trail: { kind: sub-workflow, count: 0 }
  - ranWorkflow: { workflow: badge-check, status: ok, count: 0 }
  - grade: { closedQA: "Polite?", atLeast: 0.5 }
  - send: again
  - succeeded: true
`,
	} {
		if is := caseIssues(t, src); is != nil {
			t.Errorf("%s: the parser refuses it: %v", name, is)
			continue
		}
		if err := sch.Validate(caseInstance(t, src)); err != nil {
			t.Errorf("%s: the schema refuses what the parser accepts: %v\n%s", name, err, src)
		}
	}
}

// The schema declares exactly the parser's top-level keys and step kinds, in both
// directions, and the parser's enums.
func TestCaseSchemaDeclaresTheParserGrammar(t *testing.T) {
	_, plain := caseSchema(t)
	check := func(what string, schema, parser []string) {
		t.Helper()
		if !slices.Equal(sorted(schema), sorted(parser)) {
			t.Errorf("%s: schema %v, parser %v", what, sorted(schema), sorted(parser))
		}
	}
	check("top-level keys", schemaKeys(t, plain, "/properties"), TopLevelKeys)
	check("actions", schemaKeys(t, plain, "/$defs/actionKinds/properties"), kindNames(ActionKinds))
	check("first-step actions", schemaKeys(t, plain, "/$defs/action/properties"), kindNames(ActionKinds))
	check("assertions", schemaKeys(t, plain, "/$defs/assertionKinds/properties"), kindNames(AssertionKinds))
	check("steps", schemaKeys(t, plain, "/$defs/step/properties"), append(kindNames(ActionKinds), kindNames(AssertionKinds)...))
	for _, k := range append(slices.Clone(ActionKinds), AssertionKinds...) {
		group := "assertionKinds"
		if k.IsAction() {
			group = "actionKinds"
		}
		want := "#/$defs/" + group + "/properties/" + string(k)
		if got := schemaPointer(t, plain, "/$defs/step/properties/"+string(k)+"/$ref"); got != want {
			t.Errorf("step %s refers to %v, want %s", k, got, want)
		}
	}
	enum := func(ptr string) []string {
		var out []string
		for _, v := range schemaPointer(t, plain, ptr).([]any) {
			out = append(out, v.(string))
		}
		return out
	}
	check("trail kinds", enum("/$defs/assertionKinds/properties/trail/properties/kind/enum"), TrailKinds)
	check("unmockable tools", enum("/$defs/mock/properties/tool/not/enum"), mockRefusedTools)
	check("ranWorkflow status", enum("/$defs/assertionKinds/properties/ranWorkflow/properties/status/enum"), []string{StatusOK, StatusError})
	check("park channels", enum("/$defs/assertionKinds/properties/parked/anyOf/1/enum"), []string{ChannelDecision, ChannelInput})
	check("required keys", enum("/required"), []string{"title", "description"})
}

// Every key and step kind the schema declares, at every strict level, is one the parser
// takes (the schema never invents one); trigger.args, declared only to refuse it, is
// refused by both.
func TestCaseSchemaKeysAreParserKeys(t *testing.T) {
	sch, plain := caseSchema(t)
	for _, s := range caseSlots() {
		props := schemaPointer(t, plain, s.ptr).(map[string]any)
		for _, key := range schemaKeys(t, plain, s.ptr) {
			if p, ok := props[key].(map[string]any); ok && p["not"] != nil && len(p["not"].(map[string]any)) == 0 {
				src := s.doc(key + ": {}")
				if caseIssues(t, src) == nil {
					t.Errorf("%s: the schema refuses %q, the parser takes it", s.ptr, key)
				}
				if sch.Validate(caseInstance(t, src)) == nil {
					t.Errorf("%s: the schema does not refuse %q", s.ptr, key)
				}
				continue
			}
			inner, ok := s.samples[key]
			if !ok {
				t.Errorf("%s: the schema declares %q: add a sample using it to caseSlots()", s.ptr, key)
				continue
			}
			src := s.doc(inner)
			if is := caseIssues(t, src); is != nil {
				t.Errorf("%s: key %q — the parser refuses the sample: %v\n%s", s.ptr, key, is, src)
			}
			if err := sch.Validate(caseInstance(t, src)); err != nil {
				t.Errorf("%s: key %q — the schema refuses the sample: %v\n%s", s.ptr, key, err, src)
			}
		}
		for key := range s.samples {
			if _, ok := props[key]; !ok {
				t.Errorf("%s: sample for %q, which the schema does not declare", s.ptr, key)
			}
		}
	}
}

// An unknown key (or step kind) is refused by both at every level (CD-02, CD-03, CD-70).
func TestCaseSchemaRefusesUnknownKeys(t *testing.T) {
	sch, plain := caseSchema(t)
	for _, s := range caseSlots() {
		inner := "unheard_of: 1"
		if !s.single {
			for _, key := range schemaKeys(t, plain, s.ptr) {
				if s.samples[key] != "" {
					sep := ", "
					if s.ptr == "/properties" { // block lines at the document's top
						sep = "\n"
					}
					inner = s.samples[key] + sep + inner
					break
				}
			}
		}
		src := s.doc(inner)
		parserRefuses := slices.ContainsFunc(caseIssues(t, src), func(i Issue) bool {
			return strings.Contains(i.Message, "unknown key") || strings.Contains(i.Message, "unknown step")
		})
		schemaRefuses := sch.Validate(caseInstance(t, src)) != nil
		if !parserRefuses || !schemaRefuses {
			t.Errorf("%s: an unknown key — parser refuses: %v, schema refuses: %v\n%s", s.ptr, parserRefuses, schemaRefuses, src)
		}
	}
}

// Documents the parser refuses for their shape are refused by the schema too.
func TestCaseSchemaRefusesWhatTheParserRefuses(t *testing.T) {
	sch, _ := caseSchema(t)
	for name, src := range map[string]string{
		"no title":                  "description: D\n",
		"no description":            "title: T\n",
		"title a number":            "title: 5\ndescription: D\n",
		"blank title":               "title: \"  \"\ndescription: D\n",
		"title on two lines":        "title: \"one\\ntwo\"\ndescription: D\n",
		"title over 60":             "title: " + strings.Repeat("x", 61) + "\ndescription: D\n",
		"description over 200":      "title: T\ndescription: " + strings.Repeat("y", 201) + "\n",
		"unknown top-level key":     caseHead + "judge: {}\n",
		"skip empty":                caseHead + "skip: \"\"\n",
		"skip a boolean":            caseHead + "skip: true\n",
		"trigger a string":          caseHead + "trigger: manual\n",
		"trigger without id":        caseHead + "trigger: {}\n",
		"trigger empty id":          caseHead + "trigger: { id: \"\" }\n",
		"trigger args":              caseHead + "trigger: { id: manual, args: { a: 1 } }\n",
		"variables bad name":        caseHead + "variables: { Order: 1 }\n",
		"variables a list":          caseHead + "variables: [a]\n",
		"workspace empty path":      caseHead + "workspace: { \"\": x }\n",
		"workspace a list":          caseHead + "workspace: [a]\n",
		"workspace from empty":      caseHead + "workspace: { scratchpad/a.md: { from: \"\" } }\n",
		"workspace from a number":   caseHead + "workspace: { scratchpad/a.md: { from: 5 } }\n",
		"mocks a mapping":           caseHead + "mocks: { tool: x }\n",
		"mock a string":             caseHead + "mocks: [read_file]\n",
		"mock a control tool":       caseHead + "mocks: [{ tool: archmax_advance, result: x }]\n",
		"mock without result":       caseHead + "mocks: [{ tool: read_file }]\n",
		"mock without tool":         caseHead + "mocks: [{ result: x }]\n",
		"mock empty tool":           caseHead + "mocks: [{ tool: \"\", result: x }]\n",
		"mock unknown key":          caseHead + "mocks: [{ tool: t, result: x, when: y }]\n",
		"mock whenInput a string":   caseHead + "mocks: [{ tool: t, whenInput: x, result: x }]\n",
		"clock without zone":        caseHead + "clock: \"2026-03-20T14:30:00\"\n",
		"clock hour 25":             caseHead + "clock: \"2026-03-20T25:00Z\"\n",
		"clock month 13":            caseHead + "clock: \"2026-13-01\"\n",
		"clock a number":            caseHead + "clock: 2026\n",
		"clock offset 24":           caseHead + "clock: \"2026-03-20T10:00+24:00\"\n",
		"steps a mapping":           caseHead + "steps: { send: hi }\n",
		"step a string":             caseHead + "steps: [send]\n",
		"step with no key":          caseHead + "steps: [{}]\n",
		"step with two keys":        caseHead + "steps: [{ send: hi, succeeded: true }]\n",
		"assertion before action":   caseHead + "steps: [{ succeeded: true }, { send: hi }]\n",
		"unknown step":              caseStep("judge: { closedQA: x }"),
		"send empty":                caseHead + "steps: [{ send: \"\" }]\n",
		"send a number":             caseHead + "steps: [{ send: 5 }]\n",
		"decide a string":           caseHead + "steps: [{ decide: done }]\n",
		"decide without to":         caseHead + "steps: [{ decide: {} }]\n",
		"decide target":             caseHead + "steps: [{ decide: { target: done } }]\n",
		"decide comment a number":   caseHead + "steps: [{ decide: { to: done, comment: 5 } }]\n",
		"deliver trigger object":    caseHead + "steps: [{ deliver: { trigger: { id: x } } }]\n",
		"deliver message":           caseHead + "steps: [{ deliver: { trigger: x, message: y } }]\n",
		"deliver bad variable":      caseHead + "steps: [{ deliver: { trigger: x, variables: { Bad: 1 } } }]\n",
		"succeeded false":           caseStep("succeeded: false"),
		"usedNoTools a string":      caseStep("usedNoTools: \"true\""),
		"noTraversal yes":           caseStep("noTraversal: yes"),
		"parked false":              caseStep("parked: false"),
		"parked channel word":       caseStep("parked: waiting"),
		"parked bad channel":        caseStep("parked: { channel: human }"),
		"parked empty state":        caseStep("parked: { state: \"\" }"),
		"raised false":              caseStep("raised: false"),
		"raised empty":              caseStep("raised: \"\""),
		"raised empty mapping":      caseStep("raised: {}"),
		"raised unknown key":        caseStep("raised: { code: x, detail: y }"),
		"variables without expect":  caseStep("variables: { path: {} }"),
		"variables expect a string": caseStep("variables: { expect: x }"),
		"variables path a string":   caseStep("variables: { expect: {}, path: a.b }"),
		"variables path a number":   caseStep("variables: { expect: {}, path: { a: 1 } }"),
		"variables locked a string": caseStep("variables: { expect: {}, locked: { a: \"yes\" } }"),
		"variables locked boolean":  caseStep("variables: { expect: {}, locked: true }"),
		"reachedState empty":        caseStep("reachedState: \"\""),
		"reachedState a mapping":    caseStep("reachedState: { to: done }"),
		"triggerArrival a number":   caseStep("triggerArrival: 5"),
		"reply empty":               caseStep("reply: {}"),
		"reply a string":            caseStep("reply: filed"),
		"reply token a number":      caseStep("reply: { includes: 5 }"),
		"reply token list number":   caseStep("reply: { excludes: [a, 5] }"),
		"calledTool a string":       caseStep("calledTool: read_file"),
		"calledTool without name":   caseStep("calledTool: { input: {} }"),
		"calledTool args":           caseStep("notCalledTool: { name: x, args: {} }"),
		"blockedTool input a list":  caseStep("blockedTool: { name: x, input: [a] }"),
		"trail nothing to match":    caseStep("trail: { count: 1 }"),
		"trail without count":       caseStep("trail: { to: done }"),
		"trail negative count":      caseStep("trail: { to: done, count: -1 }"),
		"trail fractional count":    caseStep("trail: { to: done, count: 1.5 }"),
		"trail kind":                caseStep("trail: { kind: llm, count: 1 }"),
		"trail regex reason":        caseStep("trail: { reason: \"\", count: 1 }"),
		"ranWorkflow a string":      caseStep("ranWorkflow: badge-check"),
		"ranWorkflow status":        caseStep("ranWorkflow: { workflow: x, status: failed }"),
		"ranWorkflow count":         caseStep("ranWorkflow: { workflow: x, count: -1 }"),
		"ranWorkflow no workflow":   caseStep("ranWorkflow: { count: 1 }"),
		"grade without atLeast":     caseStep("grade: { closedQA: x }"),
		"grade atLeast over 1":      caseStep("grade: { closedQA: x, atLeast: 1.5 }"),
		"grade atLeast a string":    caseStep("grade: { closedQA: x, atLeast: \"0.5\" }"),
		"grade empty criterion":     caseStep("grade: { closedQA: \"\", atLeast: 0.5 }"),
	} {
		if caseIssues(t, src) == nil {
			t.Errorf("%s: the parser accepts it (move it out of this table)\n%s", name, src)
		}
		if sch.Validate(caseInstance(t, src)) == nil {
			t.Errorf("%s: the schema accepts what the parser refuses\n%s", name, src)
		}
	}
}

// What the parser refuses and the schema lets through, by design: rules JSON Schema
// cannot state — ECMAScript regex validity (MT-04), days in a month (CD-60), and the
// whitespace-collapsed UTF-16 length of title and description (CD-01), which the
// schema bounds by their non-space characters only.
func TestCaseSchemaLooserThanParser(t *testing.T) {
	sch, _ := caseSchema(t)
	words := strings.TrimSpace(strings.Repeat("a ", 31)) // 31 characters, 61 collapsed
	for name, src := range map[string]string{
		"malformed regex token":   caseStep("reply: { includes: \"/(/\" }"),
		"malformed regex input":   caseStep("calledTool: { name: x, input: { a: \"/[/\" } }"),
		"malformed regex reason":  caseStep("raised: { reason: \"/)/\" }"),
		"malformed regex mock":    caseHead + "mocks: [{ tool: t, whenInput: { a: [\"/(/\"] }, result: x }]\n",
		"30 February":             caseHead + "clock: \"2026-02-30\"\n",
		"title collapsed over 60": "title: " + words + "\ndescription: D\n",
		"description over 200 cu": "title: T\ndescription: " + strings.Repeat("😀", 101) + "\n",
	} {
		if caseIssues(t, src) == nil {
			t.Errorf("%s: the parser accepts it", name)
		}
		if err := sch.Validate(caseInstance(t, src)); err != nil {
			t.Errorf("%s: the schema now refuses it (%v): move it to the refusal table", name, err)
		}
	}
}
