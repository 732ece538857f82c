package spec

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/archmax-ai/archmax/core/internal/schematest"
)

// The editor schema docs/schema/workflow.schema.json is written by hand and held to
// this package's parser here, so the two cannot drift (issue 10, DECISIONS V10-4):
// every fixture the parser loads validates; every key the schema declares is one the
// parser takes, and every field of the parsed Go types is a key the schema declares;
// unknown keys are refused by both at every strict level; and documents the parser
// refuses for their shape are refused by the schema where JSON Schema can say so. The
// deliberate differences are listed below (schemaStricter, schemaLooser).

const workflowSchemaFile = "../../docs/schema/workflow.schema.json"

func workflowSchema(t *testing.T) (*jsonschema.Schema, map[string]any) {
	t.Helper()
	return schematest.Compile(t, workflowSchemaFile)
}

func yamlInstance(t *testing.T, src string) any {
	t.Helper()
	return schematest.Instance(t, src)
}

// parseErrors returns the error diagnostics Parse reports for src.
func parseErrors(src string) []Diagnostic {
	_, diags := Parse("workflow.yaml", []byte(src))
	var out []Diagnostic
	for _, d := range diags {
		if d.Severity == sevError {
			out = append(out, d)
		}
	}
	return out
}

// pointer walks a JSON pointer ("/$defs/state/properties") through the schema.
func pointer(t *testing.T, root map[string]any, ptr string) any {
	t.Helper()
	return schematest.Pointer(t, root, ptr)
}

func propertyNames(t *testing.T, root map[string]any, ptr string) []string {
	t.Helper()
	return schematest.Keys(t, root, ptr)
}

// refused reports a property schema that only refuses (false or {not: {}}, with or
// without a description): the schema names the key to flag it, not to take it.
func refused(prop any) bool {
	if b, ok := prop.(bool); ok {
		return !b
	}
	m, ok := prop.(map[string]any)
	if !ok {
		return false
	}
	not, ok := m["not"].(map[string]any)
	return ok && len(not) == 0
}

const probeBase = "states:\n  start:\n    triggers: { manual: }\n"

// inState puts a flow mapping's inner text as the state 'probe' beside a start state.
func inState(inner string) string {
	return probeBase + "  probe: { " + inner + " }\n"
}

// slot is one strict mapping of the grammar: the schema's properties at ptr, a document
// holding a mapping whose inner flow text is given, and for each declared key an inner
// text using it in an otherwise valid document.
type slot struct {
	ptr     string
	doc     func(inner string) string
	samples map[string]string
	loose   bool // the parser keeps unknown keys here (a trigger declaration)
}

func slots() []slot {
	root := func(inner string) string { return "{ " + inner + " }\n" }
	base := "states: { start: { triggers: { manual: } } }"
	withBase := func(inner string) string { return root(inner + ", " + base) }
	return []slot{
		{ptr: "/properties", doc: func(in string) string {
			if in == "" {
				return root(base)
			}
			return withBase(in)
		}, samples: map[string]string{
			"title":        "title: Invoice review",
			"instructions": "instructions: Amounts are in the invoice's currency.",
			"disabled":     "disabled: false",
			"runtime":      "runtime: { engine: archmax-harness }",
			"settings":     "settings: {}",
			"tests":        "tests: {}",
			"tools":        "tools: {}",
			"skills":       "skills: {}",
			"mounts":       "mounts: {}",
			"extensions":   "extensions: {}",
			"metadata":     "metadata: { owner: finance, canvas: [1, 2] }",
			"states":       "",
		}},
		{ptr: "/properties/runtime/properties", doc: func(in string) string { return withBase("runtime: { " + in + " }") },
			samples: map[string]string{"engine": "engine: archmax-harness", "version": "version: 2"}},
		{ptr: "/properties/settings/properties", doc: func(in string) string { return withBase("settings: { " + in + " }") },
			samples: map[string]string{
				"model":            "model: anthropic.claude-sonnet-4",
				"timeoutMs":        "timeoutMs: 600000",
				"memoryLimitBytes": "memoryLimitBytes: 1048576",
				"maxPtcCalls":      "maxPtcCalls: null",
				"maxResultChars":   "maxResultChars: 5000",
				"prompt_cache":     "prompt_cache: {}",
			}},
		{ptr: "/properties/settings/properties/prompt_cache/properties",
			doc:     func(in string) string { return withBase("settings: { prompt_cache: { " + in + " } }") },
			samples: map[string]string{"enabled": "enabled: false", "ttl": "ttl: 1h"}},
		{ptr: "/properties/tests/properties", doc: func(in string) string { return withBase("tests: { " + in + " }") },
			samples: map[string]string{"caseTimeoutMs": "caseTimeoutMs: 90000", "maxConcurrency": "maxConcurrency: 1", "judge": "judge: {}"}},
		{ptr: "/properties/tests/properties/judge/properties",
			doc:     func(in string) string { return withBase("tests: { judge: { " + in + " } }") },
			samples: map[string]string{"model": "model: judge-model", "modelOptions": "modelOptions: {}"}},
		{ptr: "/properties/tests/properties/judge/properties/modelOptions/properties",
			doc:     func(in string) string { return withBase("tests: { judge: { modelOptions: { " + in + " } } }") },
			samples: map[string]string{"temperature": "temperature: 0", "maxTokens": "maxTokens: 512"}},
		{ptr: "/properties/tools/properties", doc: func(in string) string { return withBase("tools: { " + in + " }") },
			samples: map[string]string{"allow_always": "allow_always: [read_file]", "forbid_always": `forbid_always: ["*"]`}},
		{ptr: "/properties/skills/properties", doc: func(in string) string { return withBase("skills: { " + in + " }") },
			samples: map[string]string{"allow_always": "allow_always: [order-data]", "forbid_always": "forbid_always: [legacy-data]"}},
		{ptr: "/properties/mounts/properties", doc: func(in string) string { return withBase("mounts: { " + in + " }") },
			samples: map[string]string{"allow_always": "allow_always: [reference, { mount: catalogs/eu, access: read_write }]", "forbid_always": "forbid_always: [secrets]"}},
		{ptr: "/$defs/state/properties", doc: inState, samples: map[string]string{
			"type":         "type: agent",
			"title":        "title: Finance sign-off",
			"summary":      "summary: Reads the invoice.",
			"instructions": "instructions: Read the invoice.",
			"triggers":     "triggers: { invoice-received: }",
			"transitions":  "transitions: [{ to: start, description: The totals disagree. }]",
			"on_error":     "on_error: start",
			"requires":     "requires: [total, vendor]",
			"tools":        "tools: {}",
			"skills":       "skills: {}",
			"mounts":       "mounts: {}",
			"budget":       "budget: {}",
			"evidence":     "type: human, instructions: Decide., transitions: [{ to: start, description: Back. }], evidence: [scratchpad/summary.md]",
			"approvers":    "type: human, instructions: Decide., transitions: [{ to: start, description: Back. }], approvers: [finance-leads]",
			"model":        "model: anthropic.claude-sonnet-4",
			"script":       "type: code, script: scripts/check-totals.mjs",
			"metadata":     "metadata: { x: 1 }",
		}},
		{ptr: "/$defs/state/properties/tools/properties", doc: func(in string) string { return inState("tools: { " + in + " }") },
			samples: map[string]string{"allow": "allow: [read_file]", "forbid": `forbid: ["*"]`}},
		{ptr: "/$defs/state/properties/skills/properties", doc: func(in string) string { return inState("skills: { " + in + " }") },
			samples: map[string]string{"allow": "allow: [order-data]", "forbid": "forbid: [order-data]"}},
		{ptr: "/$defs/state/properties/mounts/properties", doc: func(in string) string { return inState("mounts: { " + in + " }") },
			samples: map[string]string{"allow": "allow: [reference]", "forbid": "forbid: [reference]"}},
		{ptr: "/$defs/budget/properties", doc: func(in string) string { return inState("budget: { " + in + " }") },
			samples: map[string]string{"maxTurns": "maxTurns: 6", "timeoutMs": "timeoutMs: 30000", "maxParks": "maxParks: 2"}},
		{ptr: "/$defs/transition/properties", doc: func(in string) string { return inState("transitions: [{ " + in + " }]") },
			samples: map[string]string{
				"to":          "to: start, description: Back to the start.",
				"description": "description: Back to the start., to: start",
				"type":        "to: start, description: Back., type: refine",
			}},
		{ptr: "/$defs/guardedTool/properties", doc: func(in string) string { return inState("tools: { allow: [{ " + in + " }] }") },
			samples: map[string]string{
				"tool":       "tool: read_file",
				"paths":      `tool: write_file, paths: "scratchpad/${{vendor_id}}/**"`,
				"args":       "tool: lookup_customer, args: { region: [eu-*] }",
				"connection": "tool: lookup_customer, connection: crm",
				"source":     "tool: lookup_customer, source: generated",
			}},
		{ptr: "/$defs/mountGrant/anyOf/1/properties", doc: func(in string) string { return inState("mounts: { allow: [{ " + in + " }] }") },
			samples: map[string]string{"mount": "mount: reference", "access": "mount: reference, access: read"}},
		{ptr: "/$defs/signatureObject/properties", doc: func(in string) string { return inState("triggers: { t: { requires: [{ " + in + " }] } }") },
			samples: map[string]string{
				"name":        "name: order_id",
				"type":        "name: due, type: date",
				"description": "name: invoice, type: file, description: The PDF invoice.",
			}},
		{ptr: "/$defs/trigger/properties", loose: true, doc: func(in string) string { return inState("triggers: { t: { " + in + " } }") },
			samples: map[string]string{
				"session":     "session: triggers.-1.conversationId",
				"message":     "message: false",
				"connection":  "connection: support-inbox",
				"description": "description: Review one supplier invoice.",
				"requires":    "requires: [vendor_id, { name: due, type: date }]",
				"returns":     "returns: [{ name: verdict, type: string }]",
			}},
	}
}

// Every workflow the parser loads — the example workspace, this package's testdata, the
// Lambda handlers' test workspaces — validates against the schema.
func TestWorkflowSchemaAcceptsLoadableFixtures(t *testing.T) {
	sch, _ := workflowSchema(t)
	var files []string
	for _, root := range []string{"../../fixtures", "../../functions"} {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && d.Name() == "workflow.yaml" {
				files = append(files, p)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	testdata, _ := filepath.Glob("testdata/*.yaml")
	files = append(files, testdata...)
	loaded := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Load(filepath.Base(filepath.Dir(f)), f, src); err != nil {
			t.Logf("%s: not loadable, skipped: %v", f, err)
			continue
		}
		loaded++
		if err := sch.Validate(yamlInstance(t, string(src))); err != nil {
			t.Errorf("%s loads but the schema rejects it: %v", f, err)
		}
	}
	if loaded < 6 {
		t.Fatalf("only %d loadable workflow files found in %v", loaded, files)
	}
}

// Every key the schema declares, at every strict level, is one the parser takes: a
// document using it is clean for both (the schema never invents a key). A key the
// schema declares only to refuse it (a trigger's entry/name) is refused by both.
func TestWorkflowSchemaKeysAreParserKeys(t *testing.T) {
	sch, plain := workflowSchema(t)
	for _, s := range slots() {
		props := pointer(t, plain, s.ptr).(map[string]any)
		for _, key := range propertyNames(t, plain, s.ptr) {
			if refused(props[key]) {
				src := s.doc(key + ": x")
				if len(parseErrors(src)) == 0 {
					t.Errorf("%s: the schema refuses %q, the parser takes it", s.ptr, key)
				}
				if sch.Validate(yamlInstance(t, src)) == nil {
					t.Errorf("%s: the schema does not refuse %q", s.ptr, key)
				}
				continue
			}
			inner, ok := s.samples[key]
			if !ok {
				t.Errorf("%s: the schema declares %q: add a sample using it to slots()", s.ptr, key)
				continue
			}
			src := s.doc(inner)
			if errs := parseErrors(src); len(errs) > 0 {
				t.Errorf("%s: key %q — the parser refuses the sample %q: %v\n%s", s.ptr, key, inner, errs, src)
			}
			if err := sch.Validate(yamlInstance(t, src)); err != nil {
				t.Errorf("%s: key %q — the schema refuses the sample %q: %v", s.ptr, key, inner, err)
			}
		}
		for key := range s.samples {
			if _, ok := props[key]; !ok {
				t.Errorf("%s: sample for %q, which the schema does not declare", s.ptr, key)
			}
		}
	}
}

// An unknown key is refused by both at every strict level (V-01); a trigger
// declaration keeps it for the host, in both.
func TestWorkflowSchemaRefusesUnknownKeys(t *testing.T) {
	sch, plain := workflowSchema(t)
	for _, s := range slots() {
		var first string
		for _, key := range propertyNames(t, plain, s.ptr) {
			if s.samples[key] != "" {
				first = s.samples[key]
				break
			}
		}
		inner := "unheard_of: 1"
		if first != "" {
			inner = first + ", " + inner
		}
		src := s.doc(inner)
		parserRefuses := slices.ContainsFunc(parseErrors(src), func(d Diagnostic) bool { return strings.HasSuffix(d.Code, ".unknown-key") })
		schemaRefuses := sch.Validate(yamlInstance(t, src)) != nil
		switch {
		case s.loose && (parserRefuses || schemaRefuses):
			t.Errorf("%s keeps unknown keys, but parser refuses: %v, schema refuses: %v", s.ptr, parserRefuses, schemaRefuses)
		case !s.loose && (!parserRefuses || !schemaRefuses):
			t.Errorf("%s: an unknown key — parser refuses: %v, schema refuses: %v\n%s", s.ptr, parserRefuses, schemaRefuses, src)
		}
	}
}

// Every field of the parsed Go types is a key the schema declares where the table says
// (and every declared key is some field's), so a key added to the parser — which fills
// a field — cannot be missing from the schema.
func TestWorkflowSchemaCoversGoTypes(t *testing.T) {
	_, plain := workflowSchema(t)
	tools := map[string]string{"Allow": "allow", "Forbid": "forbid"}
	toolsAlways := map[string]string{"Allow": "allow_always", "Forbid": "forbid_always"}
	for _, c := range []struct {
		typ    any
		ptr    string
		fields map[string]string // Go field → schema key ("" = not a key: derived or positional)
		extra  []string          // keys with no field
	}{
		{MachineSpec{}, "/properties", map[string]string{"Title": "title", "Instructions": "instructions", "Disabled": "disabled",
			"States": "states", "Runtime": "runtime", "Settings": "settings", "Tests": "tests", "Tools": "tools", "Skills": "skills",
			"Mounts": "mounts", "Metadata": "metadata"}, []string{"extensions"}},
		{Runtime{}, "/properties/runtime/properties", map[string]string{"Engine": "engine", "Version": "version"}, nil},
		{Settings{}, "/properties/settings/properties", map[string]string{"Model": "model", "TimeoutMs": "timeoutMs",
			"MemoryLimitBytes": "memoryLimitBytes", "MaxPtcCalls": "maxPtcCalls", "MaxResultChars": "maxResultChars",
			"PromptCache": "prompt_cache"}, nil},
		{PromptCache{}, "/properties/settings/properties/prompt_cache/properties", map[string]string{"Enabled": "enabled", "TTL": "ttl"}, nil},
		{TestsConfig{}, "/properties/tests/properties", map[string]string{"CaseTimeoutMs": "caseTimeoutMs",
			"MaxConcurrency": "maxConcurrency", "Judge": "judge"}, nil},
		{JudgeConfig{}, "/properties/tests/properties/judge/properties", map[string]string{"Model": "model",
			"Temperature": "", "MaxTokens": ""}, []string{"modelOptions"}},
		{JudgeConfig{}, "/properties/tests/properties/judge/properties/modelOptions/properties", map[string]string{"Model": "",
			"Temperature": "temperature", "MaxTokens": "maxTokens"}, nil},
		{ToolsBlock{}, "/properties/tools/properties", toolsAlways, nil},
		{SkillsBlock{}, "/properties/skills/properties", toolsAlways, nil},
		{MountsBlock{}, "/properties/mounts/properties", toolsAlways, nil},
		{ToolsBlock{}, "/$defs/state/properties/tools/properties", tools, nil},
		{SkillsBlock{}, "/$defs/state/properties/skills/properties", tools, nil},
		{MountsBlock{}, "/$defs/state/properties/mounts/properties", tools, nil},
		{State{}, "/$defs/state/properties", map[string]string{"Slug": "", "Type": "type", "Title": "title", "Summary": "summary",
			"Instructions": "instructions", "Triggers": "triggers", "Transitions": "transitions", "OnError": "on_error",
			"Requires": "requires", "Tools": "tools", "Skills": "skills", "Mounts": "mounts", "Budget": "budget",
			"Evidence": "evidence", "Approvers": "approvers", "Script": "script", "Model": "model", "Metadata": "metadata",
			"Line": "", "Column": ""}, nil},
		{Budget{}, "/$defs/budget/properties", map[string]string{"MaxTurns": "maxTurns", "TimeoutMs": "timeoutMs", "MaxParks": "maxParks"}, nil},
		{Transition{}, "/$defs/transition/properties", map[string]string{"To": "to", "Description": "description", "Type": "type"}, nil},
		{ToolEntry{}, "/$defs/guardedTool/properties", map[string]string{"Tool": "tool", "Guarded": "", "Paths": "paths",
			"Args": "args", "Connection": "connection", "Source": "source"}, nil},
		{MountGrant{}, "/$defs/mountGrant/anyOf/1/properties", map[string]string{"Mount": "mount", "Access": "access"}, nil},
		{SignatureEntry{}, "/$defs/signatureObject/properties", map[string]string{"Name": "name", "Type": "type", "Description": "description"}, nil},
		{Trigger{}, "/$defs/trigger/properties", map[string]string{"ID": "", "State": "", "Session": "session",
			"Message": "message", "MessageDisabled": "", "Connection": "connection", "Description": "description",
			"Requires": "requires", "Returns": "returns", "Extra": ""}, []string{"entry", "name"}},
	} {
		rt := reflect.TypeOf(c.typ)
		declared := propertyNames(t, plain, c.ptr)
		covered := map[string]bool{}
		for i := range rt.NumField() {
			f := rt.Field(i)
			if !f.IsExported() {
				continue
			}
			key, ok := c.fields[f.Name]
			switch {
			case !ok:
				t.Errorf("%s.%s is new: map it to its key in %s (and declare the key in the schema)", rt.Name(), f.Name, c.ptr)
			case key != "" && !slices.Contains(declared, key):
				t.Errorf("%s.%s is read from %q, which %s does not declare", rt.Name(), f.Name, key, c.ptr)
			}
			covered[key] = true
		}
		for _, k := range c.extra {
			covered[k] = true
		}
		for _, k := range declared {
			if !covered[k] {
				t.Errorf("%s declares %q, which no field of %s holds", c.ptr, k, rt.Name())
			}
		}
	}
}

// The enums the schema lists are the parser's.
func TestWorkflowSchemaEnums(t *testing.T) {
	_, plain := workflowSchema(t)
	got := pointer(t, plain, "/$defs/signatureObject/properties/type/enum").([]any)
	var types []string
	for _, v := range got {
		types = append(types, v.(string))
	}
	if !slices.Equal(types, SignatureTypes) {
		t.Errorf("signature types: schema %v, parser %v", types, SignatureTypes)
	}
	stateTypes := pointer(t, plain, "/$defs/state/properties/type/enum").([]any)
	if fmt.Sprint(stateTypes) != fmt.Sprint([]string{typeAgent, typeHuman, typeCode, typeGrader}) {
		t.Errorf("state types: %v", stateTypes)
	}
}

// Documents the parser refuses for their shape are refused by the schema too.
func TestWorkflowSchemaRefusesWhatTheParserRefuses(t *testing.T) {
	sch, _ := workflowSchema(t)
	for name, src := range map[string]string{
		"disabled as a string":          `disabled: "no"` + "\n" + probeBase,
		"disabled null":                 "disabled:\n" + probeBase,
		"blank root instructions":       "instructions: '  '\n" + probeBase,
		"root title a number":           "title: 5\n" + probeBase,
		"root name":                     "name: x\n" + probeBase,
		"root triggers":                 "triggers: { manual: }\n" + probeBase,
		"extensions.hooks":              "extensions: { hooks: [x] }\n" + probeBase,
		"runtime version a boolean":     "runtime: { version: true }\n" + probeBase,
		"settings null":                 "settings:\n" + probeBase,
		"settings.timeoutMs too long":   "settings: { timeoutMs: 600001 }\n" + probeBase,
		"settings.timeoutMs fraction":   "settings: { timeoutMs: 1.5 }\n" + probeBase,
		"settings.maxPtcCalls negative": "settings: { maxPtcCalls: -1 }\n" + probeBase,
		"settings.model an object":      "settings: { model: { id: m, temperature: 0 } }\n" + probeBase,
		"prompt_cache ttl":              "settings: { prompt_cache: { ttl: 10m } }\n" + probeBase,
		"tests.maxConcurrency 2":        "tests: { maxConcurrency: 2 }\n" + probeBase,
		"judge temperature negative":    "tests: { judge: { modelOptions: { temperature: -1 } } }\n" + probeBase,
		"root skills.allow":             "skills: { allow: [a] }\n" + probeBase,
		"skill slug":                    "skills: { allow_always: [Order_Data] }\n" + probeBase,
		"mount name absolute":           `mounts: { allow_always: ["/reference"] }` + "\n" + probeBase,
		"mount name dot segment":        "mounts: { forbid_always: [a/../b] }\n" + probeBase,
		"mount access":                  "mounts: { allow_always: [{ mount: a, access: write }] }\n" + probeBase,
		"mount grant without mount":     "mounts: { allow_always: [{ access: read }] }\n" + probeBase,
		"wildcard grant":                `tools: { allow_always: ["*"] }` + "\n" + probeBase,
		"wildcard guarded grant":        inState(`tools: { allow: [{ tool: "*", paths: [a] }] }`),
		"guard without tool":            inState("tools: { allow: [{ paths: [a] }] }"),
		"empty paths":                   inState("tools: { allow: [{ tool: read_file, paths: [] }] }"),
		"absolute path guard":           inState(`tools: { forbid: [{ tool: read_file, paths: "/etc/**" }] }`),
		"empty args":                    inState("tools: { allow: [{ tool: t, args: {} }] }"),
		"tool entry a number":           inState("tools: { allow: [5] }"),
		"no states":                     "title: T\n",
		"empty states":                  "states: {}\n",
		"no trigger anywhere":           "states: { a: { transitions: [{ to: b, description: D }] }, b: }\n",
		"empty triggers only":           "states: { a: { triggers: {} } }\n",
		"state a string":                probeBase + "  probe: x\n",
		"state type":                    inState("type: wait"),
		"blank state title":             inState(`title: ""`),
		"blank on_error":                inState(`on_error: " "`),
		"state session":                 inState("session: conversation_id"),
		"state before hook":             inState("before: [x]"),
		"state rubric":                  inState("rubric: x"),
		"requires not a name":           inState("requires: [Total]"),
		"budget zero":                   inState("budget: { maxTurns: 0 }"),
		"transition without to":         inState("transitions: [{ description: D }]"),
		"transition without desc":       inState("transitions: [{ to: start }]"),
		"blank transition desc":         inState(`transitions: [{ to: start, description: "  " }]`),
		"transition type":               inState("transitions: [{ to: start, description: D, type: maybe }]"),
		"transitions a mapping":         inState("transitions: { to: start }"),
		"human script":                  inState("type: human, script: scripts/a.js"),
		"agent script":                  inState("script: scripts/a.js"),
		"grader script":                 inState("type: grader, instructions: Judge., script: scripts/a.js"),
		"code without script":           inState("type: code"),
		"script outside scripts/":       inState("type: code, script: lib/a.js"),
		"script dot-dot":                inState("type: code, script: scripts/../a.js"),
		"script extension":              inState("type: code, script: scripts/a.ts"),
		"script backslash":              inState(`type: code, script: 'scripts/a\b.js'`),
		"evidence dot-dot":              inState("type: human, evidence: [../x.md]"),
		"evidence glob":                 inState("type: human, evidence: [scratchpad/*.md]"),
		"evidence reference":            inState(`type: human, evidence: ["${{x}}.md"]`),
		"evidence absolute":             inState("type: human, evidence: [/x.md]"),
		"evidence over 20": inState("type: human, evidence: [" +
			strings.TrimSuffix(strings.Repeat("a.md, ", 21), ", ") + "]"),
		"approvers not strings":   inState("type: human, approvers: [1]"),
		"triggers a list":         inState("triggers: [manual]"),
		"trigger a string":        inState("triggers: { t: x }"),
		"blank trigger id":        inState(`triggers: { " ": }`),
		"trigger entry":           inState("triggers: { t: { entry: probe } }"),
		"trigger name":            inState("triggers: { t: { name: t } }"),
		"trigger session ref":     inState(`triggers: { t: { session: "${{conversation_id}}" } }`),
		"trigger session segment": inState("triggers: { t: { session: Conversation } }"),
		"trigger message true":    inState("triggers: { t: { message: true } }"),
		"blank trigger desc":      inState(`triggers: { t: { description: "" } }`),
		"requires a mapping":      inState("triggers: { t: { requires: { a: 1 } } }"),
		"requires bad name":       inState("triggers: { t: { requires: [Order] } }"),
		"requires twice":          inState("triggers: { t: { requires: [a, a] } }"),
		"requires type":           inState("triggers: { t: { requires: [{ name: a, type: uuid }] } }"),
		"requires entry key":      inState("triggers: { t: { requires: [{ name: a, required: true }] } }"),
		"requires without name":   inState("triggers: { t: { requires: [{ type: string }] } }"),
		"returns trigger":         inState("triggers: { t: { returns: [trigger] } }"),
		"returns title object":    inState("triggers: { t: { returns: [{ name: title }] } }"),
		"metadata a list":         inState("metadata: [x]"),
	} {
		if len(parseErrors(src)) == 0 {
			t.Errorf("%s: the parser accepts it (move it out of this table)\n%s", name, src)
		}
		if sch.Validate(yamlInstance(t, src)) == nil {
			t.Errorf("%s: the schema accepts what the parser refuses\n%s", name, src)
		}
	}
}

// schemaStricter: spec 01 §3.2 marks these keys errors on their state type, and a grader or
// human state must have instructions and a transition (seed and lint rules the editor
// should flag); the parser loads them (they are validate-time rules).
// If the parser comes to refuse one, move it to the table above.
func TestWorkflowSchemaStricterThanParser(t *testing.T) {
	sch, _ := workflowSchema(t)
	const judged = "instructions: Judge., transitions: [{ to: start, description: Back. }]"
	if err := sch.Validate(yamlInstance(t, inState("type: grader, "+judged))); err != nil {
		t.Fatalf("a sound grader: %v", err)
	}
	for name, src := range map[string]string{
		"code instructions": inState("type: code, script: scripts/a.js, instructions: Do."),
		"code model":        inState("type: code, script: scripts/a.js, model: m"),
		"code budget":       inState("type: code, script: scripts/a.js, budget: {}"),
		"code evidence":     inState("type: code, script: scripts/a.js, evidence: [a.md]"),
		"code approvers":    inState("type: code, script: scripts/a.js, approvers: [a]"),
		"grader evidence":   inState("type: grader, " + judged + ", evidence: [a.md]"),
		"grader approvers":  inState("type: grader, " + judged + ", approvers: [a]"),
		"grader maxParks":   inState("type: grader, " + judged + ", budget: { maxParks: 1 }"),
		// V-09, V-10, R-13, P-10: what a judge or a person must be given
		"grader without instructions": inState("type: grader, transitions: [{ to: start, description: Back. }]"),
		"grader without transitions":  inState("type: grader, instructions: Judge."),
		"human without instructions":  inState("type: human, transitions: [{ to: start, description: Back. }]"),
		"human without transitions":   inState("type: human, instructions: Decide."),
		"human budget":                inState("type: human, " + judged + ", budget: { maxTurns: 1 }"),
	} {
		if errs := parseErrors(src); len(errs) > 0 {
			t.Errorf("%s: the parser now refuses it (%v): move it to the refusal table", name, errs)
		}
		if sch.Validate(yamlInstance(t, src)) == nil {
			t.Errorf("%s: the schema accepts it", name)
		}
	}
}

// schemaLooser: the parser's cross-reference rules, which JSON Schema cannot state; the
// schema accepts these and `archmax validate` reports them.
func TestWorkflowSchemaLooserThanParser(t *testing.T) {
	sch, _ := workflowSchema(t)
	for name, src := range map[string]string{
		"unknown transition target": inState("transitions: [{ to: nowhere, description: D }]"),
		"two edges to one target":   inState("transitions: [{ to: start, description: A }, { to: start, description: B }]"),
		"unknown on_error target":   inState("on_error: nowhere"),
		"trigger declared twice":    inState("triggers: { manual: }"),
		"malformed guard reference": inState(`tools: { allow: [{ tool: write_file, paths: ["a/${{x..y}}"] }] }`),
	} {
		if len(parseErrors(src)) == 0 {
			t.Errorf("%s: the parser accepts it", name)
		}
		if err := sch.Validate(yamlInstance(t, src)); err != nil {
			t.Errorf("%s: the schema now refuses it (%v): move it to the refusal table", name, err)
		}
	}
}
