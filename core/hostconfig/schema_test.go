package hostconfig

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/core/internal/schematest"
	"github.com/archmax-ai/archmax/core/outbound"
	"github.com/archmax-ai/archmax/core/pricing"
	"github.com/archmax-ai/archmax/core/spec"
)

// The editor schema docs/schema/host.schema.json is written by hand and held to Parse here,
// both ways, as core/spec/schema_test.go holds workflow.schema.json: every host file the
// parser loads validates; every key the schema declares is one the parser takes, and every
// field of the parsed types is a declared key; unknown keys are refused by both at every
// level; documents the parser refuses for their shape are refused by the schema where JSON
// Schema can say so; the enums are the parser's.

const hostSchemaFile = "../../docs/schema/host.schema.json"

func parseErrs(src string) []spec.Diagnostic {
	_, diags := Parse([]byte(src))
	return diags
}

type slot struct {
	ptr     string
	doc     func(inner string) string
	samples map[string]string
}

const (
	okInput = "input: { type: object, properties: { id: { type: string } }, required: [id] }"
	okTool  = "name: t, description: d, " + okInput
)

func slots() []slot {
	tool := func(in string) string { return "tools:\n  - { " + in + " }\n" }
	lambda := func(in string) string { return tool(okTool + ", lambda: { " + in + " }") }
	http := func(in string) string { return tool(okTool + ", http: { " + in + " }") }
	mcp := func(in string) string { return tool("mcp: { " + in + " }") }
	mcpURL := "url: 'https://mcp.example/mcp', "
	return []slot{
		{ptr: "/properties", doc: func(in string) string { return "{ " + in + " }\n" }, samples: map[string]string{
			"version": "version: 1", "tools": "tools: []", "policyRules": "policyRules: []", "mounts": "mounts: []", "events": "events: {}",
			"pricing": "pricing: { default: { input: 3 } }", "budgets": "budgets: { session: { turn: { tokens: 100 } } }",
			"retention": "retention: { sessions: 30d }", "prompt": "prompt: { cache: { enabled: true } }"}},
		{ptr: "/properties/prompt/properties", doc: func(in string) string { return "prompt: { " + in + " }\n" }, samples: map[string]string{
			"cache": "cache: { ttl: 1h }"}},
		{ptr: "/properties/prompt/properties/cache/properties", doc: func(in string) string { return "prompt: { cache: { " + in + " } }\n" }, samples: map[string]string{
			"enabled": "enabled: false", "ttl": "ttl: 5m"}},
		{ptr: "/properties/retention/properties", doc: func(in string) string { return "retention: { " + in + " }\n" }, samples: map[string]string{
			"sessions": "sessions: 12h"}},
		{ptr: "/properties/budgets/properties", doc: func(in string) string { return "budgets: { " + in + " }\n" }, samples: map[string]string{
			"session": "session: { lifetime: { tokens: 100 } }", "workflows": "workflows: { access-request: { daily: { tokens: 100 } } }"}},
		{ptr: "/properties/budgets/properties/session/properties", doc: func(in string) string { return "budgets: { session: { " + in + " } }\n" }, samples: map[string]string{
			"turn": "turn: { tokens: 100 }", "lifetime": "lifetime: { tokens: 100 }"}},
		{ptr: "/$defs/budgetWorkflow/properties", doc: func(in string) string { return "budgets: { workflows: { w: { " + in + " } } }\n" }, samples: map[string]string{
			"turn": "turn: { tokens: 100 }", "lifetime": "lifetime: { tokens: 100 }", "daily": "daily: { tokens: 100 }"}},
		{ptr: "/$defs/budgetLimit/properties", doc: func(in string) string { return "budgets: { session: { turn: { " + in + " } } }\n" }, samples: map[string]string{
			"tokens": "tokens: 100", "usd": "usd: 2.5"}},
		{ptr: "/$defs/price/properties", doc: func(in string) string { return "pricing: { claude: { " + in + " } }\n" }, samples: map[string]string{
			"input": "input: 3", "output": "output: 15", "cacheRead": "input: 3, cacheRead: 0.3", "cacheWrite": "output: 15, cacheWrite: 3.75",
			"cacheWrite1h": "input: 3, cacheWrite: 3.75, cacheWrite1h: 6"}},
		{ptr: "/$defs/events/properties", doc: func(in string) string { return "events: { " + in + " }\n" }, samples: map[string]string{
			"eventBridge": "eventBridge: { bus: archmax-events }", "log": "log: { info: false }"}},
		{ptr: "/$defs/events/properties/eventBridge/properties", doc: func(in string) string { return "events: { eventBridge: { " + in + " } }\n" }, samples: map[string]string{
			"bus": "bus: 'arn:aws:events:eu-west-1:123456789012:event-bus/archmax-events'", "types": "bus: b, types: [Session Parked, Session Event]",
			"maxDetailBytes": "bus: b, maxDetailBytes: 16384"}},
		{ptr: "/$defs/events/properties/log/properties", doc: func(in string) string { return "events: { log: { " + in + " } }\n" }, samples: map[string]string{
			"info": "info: false", "warn": "warn: true", "error": "error: true"}},
		{ptr: "/$defs/tool/properties", doc: tool, samples: map[string]string{
			"name": okTool + ", lambda: { function: f }", "description": okTool + ", lambda: { function: f }", "input": okTool + ", lambda: { function: f }",
			"paths":          okTool + ", paths: [{ arg: id, access: read }], lambda: { function: f }",
			"timeout":        okTool + ", timeout: 5s, lambda: { function: f }",
			"maxResultChars": okTool + ", maxResultChars: 1000, lambda: { function: f }",
			"lambda":         okTool + ", lambda: { function: f }",
			"http":           okTool + ", http: { method: GET, url: 'https://a.example/x' }",
			"mcp":            "mcp: { " + mcpURL + "expose: [{ name: a }] }",
			"local":          okTool + ", lambda: { function: f }, local: { answers: [{ result: ok }] }"}},
		{ptr: "/$defs/lambda/properties", doc: lambda, samples: map[string]string{
			"function": "function: f", "qualifier": "function: f, qualifier: '7'"}},
		{ptr: "/$defs/http/properties", doc: http, samples: map[string]string{
			"method": "method: GET, url: 'https://a.example/x'", "url": "method: GET, url: 'https://a.example/x/{id}'",
			"headers":          "method: GET, url: 'https://a.example/x', headers: { Accept: text/plain }",
			"body":             "method: POST, url: 'https://a.example/x', body: none",
			"auth":             "method: GET, url: 'https://a.example/x', auth: { header: X-Key, env: KEY }",
			"maxResponseBytes": "method: GET, url: 'https://a.example/x', maxResponseBytes: 100"}},
		{ptr: "/$defs/mcp/properties", doc: mcp, samples: map[string]string{
			"url": mcpURL + "expose: [{ name: a }]", "expose": mcpURL + "expose: [{ name: a }]",
			"auth":   mcpURL + "auth: { sigv4: { service: bedrock-agentcore } }, expose: [{ name: a }]",
			"prefix": mcpURL + "prefix: crm_, expose: [{ name: a }]"}},
		{ptr: "/$defs/mcp/properties/expose/items/properties", doc: func(in string) string { return mcp(mcpURL + "expose: [{ " + in + " }]") }, samples: map[string]string{
			"name": "name: a", "as": "name: a.b, as: a_b", "paths": "name: a, paths: [{ arg: file, access: read }]",
			"local": "name: a, local: { description: d, " + okInput + ", answers: [{ result: ok }] }"}},
		{ptr: "/$defs/local/properties", doc: func(in string) string { return mcp(mcpURL + "expose: [{ name: a, local: { " + in + " } }]") }, samples: map[string]string{
			"description": "description: d, " + okInput + ", answers: [{ result: ok }]", "input": okInput + ", description: d, answers: [{ result: ok }]",
			"answers": "answers: [{ error: no }], description: d, " + okInput}},
		{ptr: "/$defs/localAnswer/properties", doc: func(in string) string {
			return tool(okTool + ", lambda: { function: f }, local: { answers: [{ " + in + " }] }")
		}, samples: map[string]string{"whenInput": "whenInput: { id: ORD-1 }, result: { status: shipped }", "result": "result: shipped", "error": "error: No such order."}},
		{ptr: "/$defs/pathArgs/items/properties", doc: func(in string) string {
			return tool(okTool + ", paths: [{ " + in + " }], lambda: { function: f }")
		}, samples: map[string]string{"arg": "arg: id, access: read", "access": "access: read, arg: id"}},
		{ptr: "/$defs/auth/properties", doc: func(in string) string { return http("method: GET, url: 'https://a.example/x', auth: { " + in + " }") }, samples: map[string]string{
			"sigv4": "sigv4: { service: execute-api }", "header": "header: X-Key, env: KEY", "prefix": "header: Authorization, prefix: 'Bearer ', env: KEY",
			"secret": "header: X-Key, secret: api/key", "secretKey": "header: X-Key, secret: api/key, secretKey: token", "env": "header: X-Key, env: KEY"}},
		{ptr: "/$defs/auth/properties/sigv4/properties", doc: func(in string) string {
			return http("method: GET, url: 'https://a.example/x', auth: { sigv4: { " + in + " } }")
		}, samples: map[string]string{"service": "service: execute-api", "region": "service: execute-api, region: eu-west-1"}},
		{ptr: "/$defs/policyRule/properties", doc: func(in string) string { return "policyRules:\n  - { " + in + " }\n" }, samples: map[string]string{
			"id": "id: host.x, effect: allow, tools: [a]", "effect": "id: host.x, effect: allow, tools: [a]", "tools": "id: host.x, effect: allow, tools: ['*']",
			"workflows": "id: host.x, effect: allow, tools: [a], workflows: [order-lookup]",
			"origins":   "id: host.x, effect: allow, tools: [a], origins: [agent, grader]",
			"states":    "id: host.x, effect: allow, tools: [a], states: [review]",
			"paths":     "id: host.x, effect: allow, tools: [a], paths: 'contracts/**'",
			"args":      "id: host.x, effect: allow, tools: [a], args: { region: [eu-*] }",
			"reason":    "id: host.x, effect: block, tools: [a], reason: Not here."}},
		{ptr: "/$defs/mount/properties", doc: func(in string) string { return "mounts:\n  - { " + in + " }\n" }, samples: map[string]string{
			"name": "name: contracts, dir: c", "dir": "name: contracts, dir: c", "s3": "name: contracts, s3: 's3://acme/contracts/'",
			"file": "name: terms.md, file: true, dir: t.md", "readOnly": "name: contracts, dir: c, readOnly: false",
			"governed": "name: contracts, dir: c, governed: true", "searchable": "name: contracts, dir: c, searchable: false"}},
	}
}

func TestHostSchemaAcceptsTheFixtures(t *testing.T) {
	sch, _ := schematest.Compile(t, hostSchemaFile)
	files, _ := filepath.Glob("testdata/*.host.yaml")
	more, _ := filepath.Glob("../../fixtures/*/" + File)
	files = append(files, more...)
	if len(files) == 0 {
		t.Fatal("no host files")
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Load(src); err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if err := sch.Validate(schematest.Instance(t, string(src))); err != nil {
			t.Errorf("%s loads but the schema refuses it: %v", f, err)
		}
	}
}

func TestHostSchemaKeysAreParserKeys(t *testing.T) {
	sch, plain := schematest.Compile(t, hostSchemaFile)
	for _, s := range slots() {
		props := schematest.Pointer(t, plain, s.ptr).(map[string]any)
		for _, key := range schematest.Keys(t, plain, s.ptr) {
			inner, ok := s.samples[key]
			if !ok {
				t.Errorf("%s: the schema declares %q: add a sample using it to slots()", s.ptr, key)
				continue
			}
			src := s.doc(inner)
			if errs := parseErrs(src); len(errs) > 0 {
				t.Errorf("%s: key %q — the parser refuses the sample: %v\n%s", s.ptr, key, errs, src)
			}
			if err := sch.Validate(schematest.Instance(t, src)); err != nil {
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

func TestHostSchemaRefusesUnknownKeys(t *testing.T) {
	sch, plain := schematest.Compile(t, hostSchemaFile)
	for _, s := range slots() {
		first := ""
		for _, key := range schematest.Keys(t, plain, s.ptr) {
			if s.samples[key] != "" {
				first = s.samples[key]
				break
			}
		}
		src := s.doc(first + ", unheard_of: 1")
		parser := slices.ContainsFunc(parseErrs(src), func(d spec.Diagnostic) bool { return d.Code == CodeUnknownKey })
		schema := sch.Validate(schematest.Instance(t, src)) != nil
		if !parser || !schema {
			t.Errorf("%s: an unknown key — parser refuses: %v, schema refuses: %v\n%s", s.ptr, parser, schema, src)
		}
	}
}

func TestHostSchemaCoversGoTypes(t *testing.T) {
	_, plain := schematest.Compile(t, hostSchemaFile)
	for _, c := range []struct {
		typ    any
		ptr    string
		fields map[string]string // Go field → schema key ("" = derived or positional)
	}{
		{Config{}, "/properties", map[string]string{"Version": "version", "Tools": "tools", "PolicyRules": "policyRules", "Mounts": "mounts", "Events": "events", "Pricing": "pricing", "Budgets": "budgets", "Retention": "retention", "Prompt": "prompt"}},
		{Prompt{}, "/properties/prompt/properties", map[string]string{"Cache": "cache", "Line": "", "Column": ""}},
		{spec.PromptCache{}, "/properties/prompt/properties/cache/properties", map[string]string{"Enabled": "enabled", "TTL": "ttl"}},
		{Retention{}, "/properties/retention/properties", map[string]string{"Sessions": "sessions", "Line": "", "Column": ""}},
		{Budgets{}, "/properties/budgets/properties", map[string]string{"Session": "session", "Workflows": "workflows", "Line": "", "Column": ""}},
		{BudgetLimits{}, "/$defs/budgetWorkflow/properties", map[string]string{"Turn": "turn", "Lifetime": "lifetime", "Daily": "daily", "Line": "", "Column": ""}},
		{BudgetLimit{}, "/$defs/budgetLimit/properties", map[string]string{"Tokens": "tokens", "USD": "usd"}},
		{pricing.Price{}, "/$defs/price/properties", map[string]string{"Input": "input", "Output": "output", "CacheRead": "cacheRead", "CacheWrite": "cacheWrite", "CacheWrite1h": "cacheWrite1h"}},
		{Events{}, "/$defs/events/properties", map[string]string{"EventBridge": "eventBridge", "Log": "log"}},
		{EventBridgeSink{}, "/$defs/events/properties/eventBridge/properties", map[string]string{"Bus": "bus", "Types": "types", "MaxDetailBytes": "maxDetailBytes", "Line": "", "Column": ""}},
		{EventLog{}, "/$defs/events/properties/log/properties", map[string]string{"Info": "info", "Warn": "warn", "Error": "error"}},
		{ToolDecl{}, "/$defs/tool/properties", map[string]string{"Kind": "", "Name": "name", "Description": "description", "Input": "input",
			"Paths": "paths", "Timeout": "timeout", "MaxResultChars": "maxResultChars", "Lambda": "lambda", "HTTP": "http", "MCP": "mcp", "Local": "local", "Line": "", "Column": ""}},
		{LocalStandIn{}, "/$defs/local/properties", map[string]string{"Description": "description", "Input": "input", "Answers": "answers", "Line": "", "Column": ""}},
		{LocalAnswer{}, "/$defs/localAnswer/properties", map[string]string{"WhenInput": "whenInput", "Result": "result", "Error": "error", "Line": "", "Column": ""}},
		{LambdaTool{}, "/$defs/lambda/properties", map[string]string{"Function": "function", "Qualifier": "qualifier"}},
		{HTTPTool{}, "/$defs/http/properties", map[string]string{"Method": "method", "URL": "url", "Headers": "headers", "Body": "body", "Auth": "auth", "MaxResponseBytes": "maxResponseBytes"}},
		{MCPServer{}, "/$defs/mcp/properties", map[string]string{"URL": "url", "Auth": "auth", "Prefix": "prefix", "Expose": "expose"}},
		{MCPTool{}, "/$defs/mcp/properties/expose/items/properties", map[string]string{"Name": "name", "As": "as", "Paths": "paths", "Local": "local", "Line": "", "Column": ""}},
		{spec.PathArg{}, "/$defs/pathArgs/items/properties", map[string]string{"Arg": "arg", "Access": "access"}},
		{Auth{}, "/$defs/auth/properties", map[string]string{"SigV4": "sigv4", "Header": "header", "Prefix": "prefix", "Secret": "secret", "SecretKey": "secretKey", "Env": "env"}},
		{SigV4{}, "/$defs/auth/properties/sigv4/properties", map[string]string{"Service": "service", "Region": "region"}},
		{PolicyRule{}, "/$defs/policyRule/properties", map[string]string{"ID": "id", "Effect": "effect", "Tools": "tools", "Workflows": "workflows", "Origins": "origins",
			"States": "states", "Paths": "paths", "Args": "args", "Reason": "reason", "Line": "", "Column": ""}},
		{MountDecl{}, "/$defs/mount/properties", map[string]string{"Name": "name", "S3": "s3", "Dir": "dir", "File": "file", "ReadOnly": "readOnly",
			"Governed": "governed", "Unsearchable": "searchable", "Line": "", "Column": "", "at": ""}},
	} {
		rt := reflect.TypeOf(c.typ)
		declared := schematest.Keys(t, plain, c.ptr)
		covered := map[string]bool{}
		for i := range rt.NumField() {
			f := rt.Field(i)
			key, ok := c.fields[f.Name]
			switch {
			case !ok:
				t.Errorf("%s.%s is new: map it to its key in %s (and declare the key in the schema)", rt.Name(), f.Name, c.ptr)
			case key != "" && !slices.Contains(declared, key):
				t.Errorf("%s.%s is read from %q, which %s does not declare", rt.Name(), f.Name, key, c.ptr)
			}
			covered[key] = true
		}
		for _, k := range declared {
			if !covered[k] {
				t.Errorf("%s declares %q, which no field of %s holds", c.ptr, k, rt.Name())
			}
		}
	}
	// the parser's key lists are the schema's
	for ptr, keys := range map[string][]string{"/properties": rootKeys, "/$defs/tool/properties": toolKeys, "/$defs/lambda/properties": lambdaKeys,
		"/$defs/http/properties": httpKeys, "/$defs/mcp/properties": mcpKeys, "/$defs/mcp/properties/expose/items/properties": exposeKeys,
		"/$defs/pathArgs/items/properties": pathKeys, "/$defs/auth/properties": authKeys, "/$defs/auth/properties/sigv4/properties": sigv4Keys,
		"/$defs/policyRule/properties": ruleKeys, "/$defs/mount/properties": mountKeys,
		"/$defs/local/properties": localKeys, "/$defs/localAnswer/properties": answerKeys,
		"/$defs/events/properties": eventsKeys, "/$defs/events/properties/eventBridge/properties": eventBridgeKeys,
		"/$defs/events/properties/log/properties": eventLogKeys, "/$defs/price/properties": priceKeys,
		"/properties/budgets/properties": budgetsKeys, "/properties/budgets/properties/session/properties": budgetSessionKeys,
		"/$defs/budgetWorkflow/properties": budgetWorkflowKeys, "/$defs/budgetLimit/properties": budgetLimitKeys,
		"/properties/retention/properties": retentionKeys, "/properties/prompt/properties": promptKeys,
		"/properties/prompt/properties/cache/properties": promptCacheKeys} {
		got := schematest.Keys(t, plain, ptr)
		want := slices.Sorted(slices.Values(keys))
		if !slices.Equal(slices.Sorted(slices.Values(got)), want) {
			t.Errorf("%s: schema %v, parser %v", ptr, got, want)
		}
	}
}

func TestHostSchemaEnums(t *testing.T) {
	_, plain := schematest.Compile(t, hostSchemaFile)
	for ptr, want := range map[string][]string{
		"/$defs/pathArgs/items/properties/access/enum":                     spec.PathAccesses,
		"/$defs/http/properties/method/enum":                               httpMethods,
		"/$defs/policyRule/properties/origins/items/enum":                  ruleOrigins,
		"/$defs/policyRule/properties/effect/enum":                         {EffectBlock, EffectAllow},
		"/$defs/http/properties/body/enum":                                 {"json", "none"},
		"/$defs/events/properties/eventBridge/properties/types/items/enum": outbound.Types,
	} {
		if got := fmt.Sprint(schematest.Pointer(t, plain, ptr)); got != fmt.Sprint(want) {
			t.Errorf("%s: schema %s, parser %v", ptr, got, want)
		}
	}
}

// Documents the parser refuses for their shape are refused by the schema too.
func TestHostSchemaRefusesWhatTheParserRefuses(t *testing.T) {
	sch, _ := schematest.Compile(t, hostSchemaFile)
	tool := func(in string) string { return "tools:\n  - { " + in + " }\n" }
	for name, src := range map[string]string{
		"version 2":              "version: 2\n",
		"retention a number":     "retention: { sessions: 30 }\n",
		"retention in minutes":   "retention: { sessions: 90m }\n",
		"prompt.cache a boolean": "prompt: { cache: false }\n",
		"prompt.cache ttl 10m":   "prompt: { cache: { ttl: 10m } }\n",
		"tools a mapping":        "tools: {}\n",
		"no kind":                tool(okTool),
		"two kinds":              tool(okTool + ", lambda: { function: f }, http: { method: GET, url: 'https://a.example/' }"),
		"lambda no name":         tool("description: d, " + okInput + ", lambda: { function: f }"),
		"mcp with a name":        tool("name: x, mcp: { url: 'https://m.example/', expose: [{ name: a }] }"),
		"mcp with paths":         tool("paths: [], mcp: { url: 'https://m.example/', expose: [{ name: a }] }"),
		"mcp empty expose":       tool("mcp: { url: 'https://m.example/', expose: [] }"),
		"reserved name":          tool(strings.Replace(okTool, "name: t", "name: archmax_x", 1) + ", lambda: { function: f }"),
		"built-in name":          tool(strings.Replace(okTool, "name: t", "name: read_file", 1) + ", lambda: { function: f }"),
		"name with a space":      tool(strings.Replace(okTool, "name: t", "name: 'a b'", 1) + ", lambda: { function: f }"),
		"input a string type":    tool("name: t, description: d, input: { type: string }, lambda: { function: f }"),
		"blank description":      tool("name: t, description: ' ', " + okInput + ", lambda: { function: f }"),
		"timeout a number":       tool(okTool + ", timeout: 30, lambda: { function: f }"),
		"result cap too big":     tool(okTool + ", maxResultChars: 80001, lambda: { function: f }"),
		"bad access":             tool(okTool + ", paths: [{ arg: id, access: delete }], lambda: { function: f }"),
		"lambda url":             tool(okTool + ", lambda: { function: 'https://x' }"),
		"http method":            tool(okTool + ", http: { method: TRACE, url: 'https://a.example/' }"),
		"http ftp":               tool(okTool + ", http: { method: GET, url: 'ftp://a.example/' }"),
		"http placeholder host":  tool(okTool + ", http: { method: GET, url: 'https://{id}.example/' }"),
		"http user info":         tool(okTool + ", http: { method: GET, url: 'https://u@a.example/' }"),
		"http fragment":          tool(okTool + ", http: { method: GET, url: 'https://a.example/#x' }"),
		"auth both":              tool(okTool + ", http: { method: GET, url: 'https://a.example/', auth: { sigv4: { service: s }, header: X, env: E } }"),
		"auth no source":         tool(okTool + ", http: { method: GET, url: 'https://a.example/', auth: { header: X } }"),
		"auth two sources":       tool(okTool + ", http: { method: GET, url: 'https://a.example/', auth: { header: X, env: E, secret: s } }"),
		"auth key with env":      tool(okTool + ", http: { method: GET, url: 'https://a.example/', auth: { header: X, env: E, secretKey: k } }"),
		"rule no reason":         "policyRules:\n  - { id: host.x, effect: block, tools: [a] }\n",
		"allow with reason":      "policyRules:\n  - { id: host.x, effect: allow, tools: [a], reason: r }\n",
		"rule effect":            "policyRules:\n  - { id: host.x, effect: deny, tools: [a], reason: r }\n",
		"rule origin":            "policyRules:\n  - { id: host.x, effect: allow, tools: [a], origins: [lifecycle] }\n",
		"rule id":                "policyRules:\n  - { id: 'Host X', effect: allow, tools: [a] }\n",
		"rule empty tools":       "policyRules:\n  - { id: host.x, effect: allow, tools: [] }\n",
		"rule workflow":          "policyRules:\n  - { id: host.x, effect: allow, tools: [a], workflows: [Orders] }\n",
		"mount no backend":       "mounts:\n  - { name: contracts }\n",
		"mount slashes":          "mounts:\n  - { name: /contracts/, dir: c }\n",
		"mount whole bucket":     "mounts:\n  - { name: contracts, s3: 's3://acme/' }\n",
		"mount bad bucket":       "mounts:\n  - { name: contracts, s3: 's3://Acme_Bucket/x/' }\n",
		"mount read-only text":   "mounts:\n  - { name: contracts, dir: c, readOnly: 'no' }\n",
		"local on an mcp entry":  tool("mcp: { url: 'https://m.example/', expose: [{ name: a }] }, local: { answers: [{ result: x }] }"),
		"lambda local input":     tool(okTool + ", lambda: { function: f }, local: { " + okInput + ", answers: [{ result: x }] }"),
		"lambda local no answer": tool(okTool + ", lambda: { function: f }, local: { answers: [] }"),
		"expose local no input":  tool("mcp: { url: 'https://m.example/', expose: [{ name: a, local: { description: d, answers: [{ result: x }] } }] }"),
		"answer both":            tool(okTool + ", lambda: { function: f }, local: { answers: [{ result: x, error: y }] }"),
		"answer neither":         tool(okTool + ", lambda: { function: f }, local: { answers: [{ whenInput: { id: a } }] }"),
		"answer input a list":    tool(okTool + ", lambda: { function: f }, local: { answers: [{ whenInput: [a], result: x }] }"),
		"answer blank error":     tool(okTool + ", lambda: { function: f }, local: { answers: [{ error: ' ' }] }"),
	} {
		if len(parseErrs(src)) == 0 {
			t.Errorf("%s: the parser takes it\n%s", name, src)
		}
		if sch.Validate(schematest.Instance(t, src)) == nil {
			t.Errorf("%s: the schema takes it\n%s", name, src)
		}
	}
}

// The README's example host file loads and validates.
func TestREADMEExample(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "## Host configuration")
	_, block, ok2 := strings.Cut(section, "```yaml\n")
	src, _, ok3 := strings.Cut(block, "```\n")
	if !ok || !ok2 || !ok3 {
		t.Fatal("no example in the README's Host configuration section")
	}
	if _, err := Load([]byte(src)); err != nil {
		t.Fatal(err)
	}
	sch, _ := schematest.Compile(t, hostSchemaFile)
	if err := sch.Validate(schematest.Instance(t, src)); err != nil {
		t.Errorf("the schema refuses the README's example: %v", err)
	}
}
