package hostconfig

import (
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/spec"
)

func fullFile(t testing.TB) string {
	t.Helper()
	src, err := os.ReadFile("testdata/full.host.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return string(src)
}

// at returns the 1-based line and column where marker starts in src; "context|token"
// locates the first token after context.
func at(t *testing.T, src, marker string) (int, int) {
	t.Helper()
	from := 0
	if context, token, ok := strings.Cut(marker, "|"); ok {
		from, marker = strings.Index(src, context), token
	}
	i := strings.Index(src[max(from, 0):], marker) + max(from, 0)
	if from < 0 || i < from {
		t.Fatalf("marker %q not in source", marker)
	}
	return strings.Count(src[:i], "\n") + 1, i - strings.LastIndex(src[:i], "\n")
}

func TestFullFileParses(t *testing.T) {
	src := fullFile(t)
	cfg, diags := Parse([]byte(src))
	if len(diags) > 0 {
		t.Fatalf("diagnostics: %+v", diags)
	}
	if cfg.Version != 1 || len(cfg.Tools) != 3 || len(cfg.PolicyRules) != 3 || len(cfg.Mounts) != 3 {
		t.Fatalf("config: %+v", cfg)
	}
	l := cfg.Tools[0]
	if l.Kind != KindLambda || l.Name != "get_order" || l.Timeout != 10*time.Second || l.MaxResultChars != 20000 ||
		*l.Lambda != (LambdaTool{Function: "arn:aws:lambda:eu-west-1:123456789012:function:orders-get", Qualifier: "live"}) {
		t.Errorf("lambda tool: %+v %+v", l, l.Lambda)
	}
	if line, col := at(t, src, "- name: get_order"); l.Line != line || l.Column != col+2 {
		t.Errorf("lambda tool at %d:%d, want %d:%d", l.Line, l.Column, line, col+2)
	}
	// the input schema keeps the document's key order: it is what the model reads
	if want := `{"type":"object","properties":{"order_id":{"type":"string","pattern":"^ORD-[0-9]+$"}},"required":["order_id"],"additionalProperties":false}`; string(l.Input) != want {
		t.Errorf("input = %s", l.Input)
	}
	h := cfg.Tools[1]
	if h.Kind != KindHTTP || h.HTTP.Method != "GET" || h.HTTP.Body != "none" || h.HTTP.MaxResponseBytes != 262144 ||
		h.HTTP.Headers["Accept"] != "application/json" || !reflect.DeepEqual(h.Paths, []spec.PathArg{{Arg: "save_to", Access: "write"}}) ||
		*h.HTTP.Auth != (Auth{Header: "Authorization", Prefix: "Bearer ", Secret: "billing/api-token", SecretKey: "token"}) {
		t.Errorf("http tool: %+v %+v", h, h.HTTP)
	}
	m := cfg.Tools[2]
	if m.Kind != KindMCP || m.Name != "" || m.Timeout != 20*time.Second || m.MCP.Prefix != "crm_" || *m.MCP.Auth.SigV4 != (SigV4{Service: "bedrock-agentcore", Region: "eu-west-1"}) ||
		len(m.MCP.Expose) != 3 || m.MCP.ToolName(m.MCP.Expose[1]) != "crm_get_customer" || m.MCP.ToolName(m.MCP.Expose[0]) != "crm_search_customers" ||
		!reflect.DeepEqual(m.MCP.Expose[2].Paths, []spec.PathArg{{Arg: "target", Access: "write"}}) {
		t.Errorf("mcp tool: %+v %+v", m, m.MCP)
	}
	r := cfg.PolicyRules
	if r[0].ID != "host.no-script-refunds" || r[0].Effect != EffectBlock || !reflect.DeepEqual(r[0].Origins, []string{"script", "code"}) ||
		r[0].Reason == "" || r[1].Effect != EffectAllow || !reflect.DeepEqual(r[1].Paths, []string{"contracts/**"}) ||
		!reflect.DeepEqual(r[1].Workflows, []string{"order-lookup"}) || !reflect.DeepEqual(r[1].States, []string{"review"}) ||
		!reflect.DeepEqual(r[2].Args, []spec.ArgGuard{{Name: "region", Globs: []string{"us-*", "ap-*"}}}) {
		t.Errorf("rules: %+v", r)
	}
	ms := cfg.Mounts
	if ms[0] != (MountDecl{Name: "contracts", S3: "s3://acme-contracts/current/", Dir: "testdata/contracts", ReadOnly: true, Governed: true, Line: ms[0].Line, Column: ms[0].Column, at: ms[0].at}) ||
		!ms[1].File || !ms[1].ReadOnly || ms[2].ReadOnly || !ms[2].Unsearchable {
		t.Errorf("mounts: %+v", ms)
	}
	if b, k, ok := ms[0].S3Location(); b != "acme-contracts" || k != "current/" || !ok {
		t.Errorf("S3Location = %q %q %v", b, k, ok)
	}
}

func TestEmptyFileDeclaresNothing(t *testing.T) {
	for _, src := range []string{"", "# nothing yet\n", "version: 1\n", "tools: []\npolicyRules: []\nmounts: []\n"} {
		cfg, diags := Parse([]byte(src))
		if len(diags) > 0 || cfg == nil || len(cfg.Tools)+len(cfg.PolicyRules)+len(cfg.Mounts) != 0 {
			t.Errorf("%q: %+v %+v", src, cfg, diags)
		}
	}
}

const lambdaTool = `tools:
  - name: get_order
    description: Gets an order.
    input: { type: object, properties: { id: { type: string } }, required: [id] }
    lambda: { function: orders-get }
`

const httpTool = `tools:
  - name: get_invoice
    description: Gets an invoice.
    input: { type: object, properties: { id: { type: string }, q: { type: string }, n: { type: integer } }, required: [id] }
    http: { method: GET, url: "https://api.example.com/v1/invoices/{id}?q={q}" }
`

// Each refused document names its finding: code, field and position (a marker in the
// source, "context|token" for the token after context).
func TestParseRefusals(t *testing.T) {
	for _, c := range []struct {
		name, src, code, field, marker string
		contains                       string
	}{
		{"not a mapping", "- a\n", CodeYAML, "", "- a", "is a YAML mapping"},
		{"syntax", "tools: [\n", CodeYAML, "", "", "YAML parse error"},
		{"two documents", "version: 1\n---\nversion: 1\n", CodeYAML, "", "", "exactly one YAML document"},
		{"duplicate key", "version: 1\nversion: 1\n", CodeYAML, "", "\n|version", "repeated"},
		{"unknown root key", "budget: {}\n", CodeUnknownKey, "budget", "budget", "unknown key 'budget'"},
		{"price naming no rate", "pricing: { claude: { cacheRead: 1 } }\n", CodePricing, "pricing.claude", "{ cacheRead: 1 }", "prices nothing"},
		{"negative rate", "pricing: { default: { input: -1 } }\n", CodeType, "pricing.default.input", "-1", "non-negative"},
		{"version 2", "version: 2\n", CodeVersion, "version", "2", "the only version"},
		{"tools not a list", "tools: {}\n", CodeType, "tools", "{}", "must be a list"},
		{"no kind", "tools:\n  - { name: x, description: d, input: { type: object } }\n", CodeKind, "tools.0", "{ name", "exactly one of"},
		{"two kinds", strings.Replace(lambdaTool, "lambda: { function: orders-get }", "lambda: { function: orders-get }\n    http: { method: GET, url: 'https://a.example/x' }", 1),
			CodeKind, "tools.0", "name: get_order", "exactly one kind"},
		{"unknown tool key", strings.Replace(lambdaTool, "    lambda:", "    retries: 3\n    lambda:", 1), CodeUnknownKey, "tools.0.retries", "retries", "unknown key"},
		{"missing description", strings.Replace(lambdaTool, "    description: Gets an order.\n", "", 1), CodeRequired, "tools.0.description", "name: get_order", "is required"},
		{"bad tool name", strings.Replace(lambdaTool, "get_order", "get order", 1), CodeToolName, "tools.0.name", "get order", "not a tool name Bedrock takes"},
		{"too long", strings.Replace(lambdaTool, "get_order", strings.Repeat("x", 65), 1), CodeToolName, "tools.0.name", "xxx", "1 to 64"},
		{"reserved prefix", strings.Replace(lambdaTool, "get_order", "archmax_lookup", 1), CodeToolReserved, "tools.0.name", "- name|name", "reserved"},
		{"delegation name", strings.Replace(lambdaTool, "get_order", "archmax_workflow_refunds", 1), CodeToolReserved, "tools.0.name", "- name|name", "delegation tool"},
		{"built-in name", strings.Replace(lambdaTool, "get_order", "read_file", 1), CodeToolReserved, "tools.0.name", "- name|name", "built-in"},
		{"runtime file tool", strings.Replace(lambdaTool, "get_order", "copy_file", 1), CodeToolReserved, "tools.0.name", "- name|name", "reserved"},
		{"task", strings.Replace(lambdaTool, "get_order", "task", 1), CodeToolReserved, "tools.0.name", "- name|name", "never offers"},
		{"sandbox key of a built-in", strings.Replace(lambdaTool, "get_order", "readFile", 1), CodeToolDuplicate, "tools.0.name", "- name|name", "tools.readFile"},
		{"declared twice", lambdaTool + strings.TrimPrefix(lambdaTool, "tools:\n"), CodeToolDuplicate, "tools.1.name", "Gets an order.\n    input: { type: object, properties: { id: { type: string } }, required: [id] }\n    lambda: { function: orders-get }\n  - |name", "declared twice"},
		{"sandbox keys clash", lambdaTool + strings.Replace(strings.TrimPrefix(lambdaTool, "tools:\n"), "get_order", "get-order", 1), CodeToolDuplicate, "tools.1.name", "name: get-order", "sandbox key tools.getOrder"},
		{"input not an object schema", strings.Replace(lambdaTool, "{ type: object, properties", "{ type: string, properties", 1), CodeInputSchema, "tools.0.input.type", "string, properties", "top-level type is \"object\""},
		{"input without type", strings.Replace(lambdaTool, "{ type: object, properties", "{ properties", 1), CodeInputSchema, "tools.0.input.type", "{ properties", "top-level type"},
		{"input does not compile", strings.Replace(lambdaTool, "required: [id]", "required: id", 1), CodeInputSchema, "tools.0.input.required", "required: id|id", "must be a list (got \"id\")"},
		{"input remote ref", strings.Replace(lambdaTool, "{ id: { type: string } }", "{ id: { $ref: 'https://evil.example/s.json' } }", 1), CodeInputSchema, "tools.0.input.properties.id.$ref", "'https://evil", "outside the input schema"},
		{"input a string", strings.Replace(lambdaTool, "input: { type: object, properties: { id: { type: string } }, required: [id] }", "input: object", 1), CodeInputSchema, "tools.0.input", "object\n", "JSON Schema mapping"},
		{"path arg not in schema", strings.Replace(lambdaTool, "    lambda:", "    paths: [{ arg: file, access: read }]\n    lambda:", 1), CodePathArgument, "tools.0.paths.0", "{ arg: file", "not a property of the input schema (properties: id)"},
		{"bad access", strings.Replace(lambdaTool, "    lambda:", "    paths: [{ arg: id, access: delete }]\n    lambda:", 1), CodePathArgument, "tools.0.paths.0.access", "delete", "read, list, search, write, remove, execute"},
		{"path arg twice", strings.Replace(lambdaTool, "    lambda:", "    paths: [{ arg: id, access: read }, { arg: id, access: write }]\n    lambda:", 1), CodePathArgument, "tools.0.paths.1", "{ arg: id, access: write", "declared twice"},
		{"timeout a number", strings.Replace(lambdaTool, "    lambda:", "    timeout: 30\n    lambda:", 1), CodeType, "tools.0.timeout", "30", "a duration"},
		{"timeout too long", strings.Replace(lambdaTool, "    lambda:", "    timeout: 16m\n    lambda:", 1), CodeType, "tools.0.timeout", "16m", "from 1ms to 15m"},
		{"result cap too big", strings.Replace(lambdaTool, "    lambda:", "    maxResultChars: 100001\n    lambda:", 1), CodeType, "tools.0.maxResultChars", "100001", "from 1 to 80000"},
		{"lambda function missing", strings.Replace(lambdaTool, "{ function: orders-get }", "{ qualifier: live }", 1), CodeRequired, "tools.0.lambda.function", "{ qualifier", "is required"},
		{"lambda function a URL", strings.Replace(lambdaTool, "orders-get", "https://x.example", 1), CodeLambda, "tools.0.lambda.function", "https", "not a Lambda function name"},
		{"lambda qualifier twice", strings.Replace(lambdaTool, "orders-get }", "orders-get:live, qualifier: live }", 1), CodeLambda, "tools.0.lambda.qualifier", "qualifier: live|live", "already names a qualifier"},
		{"http method", strings.Replace(httpTool, "GET", "TRACE", 1), CodeHTTP, "tools.0.http.method", "TRACE", "one of GET"},
		{"http plain", strings.Replace(httpTool, "https://api.example.com", "http://api.example.com", 1), CodeURL, "tools.0.http.url", `"http://`, "http:// only to localhost"},
		{"http other scheme", strings.Replace(httpTool, "https://", "ftp://", 1), CodeURL, "tools.0.http.url", `"ftp`, "scheme"},
		{"http placeholder in host", strings.Replace(httpTool, "api.example.com", "{id}.example.com", 1), CodeURL, "tools.0.http.url", `"https`, "host"},
		{"http user info", strings.Replace(httpTool, "api.example.com", "user@api.example.com", 1), CodeURL, "tools.0.http.url", `"https`, "user info"},
		{"http partial segment", strings.Replace(httpTool, "/{id}?", "/inv-{id}?", 1), CodeURL, "tools.0.http.url", `"https`, "whole path segment"},
		{"http partial value", strings.Replace(httpTool, "q={q}", "q=x{q}", 1), CodeURL, "tools.0.http.url", `"https`, "whole query value"},
		{"http placeholder key", strings.Replace(httpTool, "q={q}", "{q}=1", 1), CodeURL, "tools.0.http.url", `"https`, "query key is fixed"},
		{"http dot segment", strings.Replace(httpTool, "/v1/", "/v1/../", 1), CodeURL, "tools.0.http.url", `"https`, "no dot segments"},
		{"http fragment", strings.Replace(httpTool, "q={q}", "q={q}#x", 1), CodeURL, "tools.0.http.url", `"https`, "fragment"},
		{"http placeholder twice", strings.Replace(httpTool, "q={q}", "q={id}", 1), CodeURL, "tools.0.http.url", `"https`, "twice"},
		{"http placeholder not a property", strings.Replace(httpTool, "q={q}", "q={term}", 1), CodeURL, "tools.0.http.url", `"https`, "{term} is not a property"},
		{"http segment not required", strings.Replace(httpTool, "required: [id]", "required: [q]", 1), CodeURL, "tools.0.http.url", `"https`, "must list it in 'required'"},
		{"http placeholder an object", strings.Replace(httpTool, "q: { type: string }", "q: { type: object }", 1), CodeURL, "tools.0.http.url", `"https`, "not object"},
		{"http placeholder untyped", strings.Replace(httpTool, "q: { type: string }", "q: {}", 1), CodeURL, "tools.0.http.url", `"https`, "scalar type"},
		{"http GET body", strings.Replace(httpTool, "method: GET,", "method: GET, body: json,", 1), CodeHTTP, "tools.0.http.body", "json", "sends no body"},
		{"http header host", strings.Replace(httpTool, "method: GET,", "method: GET, headers: { Host: evil.example },", 1), CodeHTTP, "tools.0.http.headers.Host", "Host", "set by the transport"},
		{"http header and auth", strings.Replace(httpTool, "method: GET,", "method: GET, headers: { authorization: x }, auth: { header: Authorization, env: TOKEN },", 1), CodeHTTP, "tools.0.http.headers.authorization", "authorization", "set by 'auth'"},
		{"auth both", strings.Replace(httpTool, "method: GET,", "method: GET, auth: { sigv4: { service: execute-api }, header: X-Key, env: KEY },", 1), CodeAuth, "tools.0.http.auth", "{ sigv4", "not both"},
		{"auth no source", strings.Replace(httpTool, "method: GET,", "method: GET, auth: { header: X-Key },", 1), CodeAuth, "tools.0.http.auth", "{ header", "exactly one of 'secret'"},
		{"auth two sources", strings.Replace(httpTool, "method: GET,", "method: GET, auth: { header: X-Key, env: KEY, secret: s },", 1), CodeAuth, "tools.0.http.auth", "{ header", "exactly one of 'secret'"},
		{"auth secret key alone", strings.Replace(httpTool, "method: GET,", "method: GET, auth: { header: X-Key, env: KEY, secretKey: k },", 1), CodeAuth, "tools.0.http.auth.secretKey", "k }", "goes with 'secret'"},
		{"auth secret value", strings.Replace(httpTool, "method: GET,", "method: GET, auth: { header: X-Key, secret: 'Bearer abc def' },", 1), CodeAuth, "tools.0.http.auth.secret", "'Bearer", "never the secret itself"},
		{"auth empty", strings.Replace(httpTool, "method: GET,", "method: GET, auth: {},", 1), CodeAuth, "tools.0.http.auth", "{},", "'sigv4: { service }'"},
		{"sigv4 region", strings.Replace(httpTool, "method: GET,", "method: GET, auth: { sigv4: { service: execute-api, region: Europe } },", 1), CodeAuth, "tools.0.http.auth.sigv4.region", "Europe", "not an AWS region"},
		{"sigv4 service missing", strings.Replace(httpTool, "method: GET,", "method: GET, auth: { sigv4: {} },", 1), CodeRequired, "tools.0.http.auth.sigv4.service", "{} }", "is required"},
		{"mcp with a name", "tools:\n  - name: crm\n    mcp: { url: 'https://mcp.example/mcp', expose: [{ name: a }] }\n", CodeKind, "tools.0.name", "name: crm|name", "under 'mcp.expose'"},
		{"mcp no expose", "tools:\n  - mcp: { url: 'https://mcp.example/mcp' }\n", CodeRequired, "tools.0.mcp.expose", "{ url", "is required"},
		{"mcp empty expose", "tools:\n  - mcp: { url: 'https://mcp.example/mcp', expose: [] }\n", CodeType, "tools.0.mcp.expose", "[]", "at least one"},
		{"mcp url placeholder", "tools:\n  - mcp: { url: 'https://mcp.example/{x}', expose: [{ name: a }] }\n", CodeURL, "tools.0.mcp.url", "'https", "no placeholders"},
		{"mcp name invalid", "tools:\n  - mcp: { url: 'https://mcp.example/mcp', expose: [{ name: customer.get }] }\n", CodeToolName, "tools.0.mcp.expose.0", "{ name: customer", "give it an 'as' name"},
		{"mcp too long after prefix", "tools:\n  - mcp: { url: 'https://mcp.example/mcp', prefix: " + strings.Repeat("p", 60) + ", expose: [{ name: abcdef }] }\n", CodeToolName, "tools.0.mcp.expose.0", "{ name: abcdef", "is not a tool name Bedrock takes"},
		{"mcp bad prefix", "tools:\n  - mcp: { url: 'https://mcp.example/mcp', prefix: 'crm.', expose: [{ name: a }] }\n", CodeToolName, "tools.0.mcp.prefix", "'crm.'", "starts every exposed tool's name"},
		{"mcp reserved", "tools:\n  - mcp: { url: 'https://mcp.example/mcp', prefix: archmax_, expose: [{ name: a }] }\n", CodeToolReserved, "tools.0.mcp.expose.0", "{ name: a", "reserved"},
		{"mcp clash with a lambda tool", lambdaTool + "  - mcp: { url: 'https://mcp.example/mcp', expose: [{ name: x, as: get_order }] }\n", CodeToolDuplicate, "tools.1.mcp.expose.0", "{ name: x", "declared twice"},
		{"rule without reason", "policyRules:\n  - { id: host.x, effect: block, tools: [a] }\n", CodeRequired, "policyRules.0.reason", "{ id", "says why"},
		{"allow rule with reason", "policyRules:\n  - { id: host.x, effect: allow, tools: [a], reason: why }\n", CodeRule, "policyRules.0.reason", "why", "is for block rules"},
		{"rule effect", "policyRules:\n  - { id: host.x, effect: deny, tools: [a], reason: r }\n", CodeRule, "policyRules.0.effect", "deny", "block (refuse the call) or allow"},
		{"rule kernel id", "policyRules:\n  - { id: tool.forbidden, effect: block, tools: [a], reason: r }\n", CodeRule, "policyRules.0.id", "tool.forbidden", "kernel's own rule ids"},
		{"rule id shape", "policyRules:\n  - { id: 'Host X', effect: block, tools: [a], reason: r }\n", CodeRule, "policyRules.0.id", "'Host X'", "not a rule id"},
		{"rule ids twice", "policyRules:\n  - { id: host.x, effect: block, tools: [a], reason: r }\n  - { id: host.x, effect: block, tools: [b], reason: r }\n", CodeRule, "policyRules.1.id", "tools: [a], reason: r }\n  - |{", "taken by policyRules.0"},
		{"rule origin", "policyRules:\n  - { id: host.x, effect: block, tools: [a], origins: [lifecycle], reason: r }\n", CodeRule, "policyRules.0.origins.0", "lifecycle", "not an origin"},
		{"rule workflow", "policyRules:\n  - { id: host.x, effect: block, tools: [a], workflows: [Orders], reason: r }\n", CodeRule, "policyRules.0.workflows.0", "Orders", "not a workflow slug"},
		{"rule empty tools", "policyRules:\n  - { id: host.x, effect: block, tools: [], reason: r }\n", CodeType, "policyRules.0.tools", "[]", "at least one"},
		{"rule absolute path", "policyRules:\n  - { id: host.x, effect: block, tools: [a], paths: ['/etc/**'], reason: r }\n", CodeRule, "policyRules.0.paths.0", "'/etc", "workspace-relative"},
		{"rule bad reference", "policyRules:\n  - { id: host.x, effect: block, tools: [a], paths: ['x/${{}}'], reason: r }\n", CodeRule, "policyRules.0.paths.0", "'x/", "not a valid variable reference"},
		{"rule args empty", "policyRules:\n  - { id: host.x, effect: block, tools: [a], args: {}, reason: r }\n", CodeType, "policyRules.0.args", "{}", "argument name to a glob"},
		{"rule no tools", "policyRules:\n  - { id: host.x, effect: block, reason: r }\n", CodeRequired, "policyRules.0.tools", "{ id", "is required"},
		{"mount reserved root", "mounts:\n  - { name: workflows/x, dir: x }\n", CodeMount, "mounts.0.name", "workflows/x", "reserves"},
		{"mount the host file", "mounts:\n  - { name: Archmax.Host.YAML, file: true, dir: x }\n", CodeMount, "mounts.0.name", "Archmax", "reserves"},
		{"mount a session area", "mounts:\n  - { name: scratchpad, dir: x }\n", CodeMount, "mounts.0.name", "scratchpad", "reserves"},
		{"mount skills", "mounts:\n  - { name: skills/extra, dir: x }\n", CodeMount, "mounts.0.name", "skills/extra", "reserves"},
		{"mount name grammar", "mounts:\n  - { name: /contracts/, dir: x }\n", CodeMount, "mounts.0.name", "/contracts/", "not a mount name"},
		{"mount no backend", "mounts:\n  - { name: contracts }\n", CodeRequired, "mounts.0", "{ name", "'s3'"},
		{"mount whole bucket", "mounts:\n  - { name: contracts, s3: 's3://acme/' }\n", CodeMount, "mounts.0.s3", "'s3://", "whole bucket"},
		{"mount folder without slash", "mounts:\n  - { name: contracts, s3: 's3://acme/contracts' }\n", CodeMount, "mounts.0.s3", "'s3://", "ending in '/'"},
		{"mount file with slash", "mounts:\n  - { name: terms.md, file: true, s3: 's3://acme/terms/' }\n", CodeMount, "mounts.0.s3", "'s3://", "one object"},
		{"mount bad bucket", "mounts:\n  - { name: contracts, s3: 's3://Acme_Bucket/x/' }\n", CodeMount, "mounts.0.s3", "'s3://", "not s3://"},
		{"mount twice", "mounts:\n  - { name: contracts, dir: a }\n  - { name: contracts, dir: b }\n", CodeMount, "mounts.1.name", "dir: a }\n  - |{", "declared twice"},
		{"mount below a file mount", "mounts:\n  - { name: terms, file: true, dir: a }\n  - { name: terms/x, dir: b }\n", CodeMount, "mounts.1.name", "dir: a }\n  - |{", "below a file mount"},
		{"mount read-only a string", "mounts:\n  - { name: contracts, dir: a, readOnly: 'no' }\n", CodeType, "mounts.0.readOnly", "'no'", "true or false"},
		{"local on an mcp entry", "tools:\n  - mcp: { url: 'https://m.example/mcp', expose: [{ name: a }] }\n    local: { answers: [{ result: x }] }\n", CodeLocal, "tools.0.local", "local:", "goes on each exposed tool"},
		{"local input on a lambda tool", lambdaTool + "    local: { input: { type: object }, answers: [{ result: x }] }\n", CodeLocal, "tools.0.local.input", "{ type: object }, answers", "answers as the tool itself"},
		{"local without answers", lambdaTool + "    local: {}\n", CodeRequired, "tools.0.local.answers", "{}", "is required"},
		{"local no answer", lambdaTool + "    local: { answers: [] }\n", CodeLocal, "tools.0.local.answers", "[]", "at least one answer"},
		{"answer both", lambdaTool + "    local: { answers: [{ result: x, error: y }] }\n", CodeLocal, "tools.0.local.answers.0", "{ result", "exactly one of 'result'"},
		{"answer neither", lambdaTool + "    local: { answers: [{ whenInput: { id: a } }] }\n", CodeLocal, "tools.0.local.answers.0", "{ whenInput", "exactly one of 'result'"},
		{"answer whenInput a list", lambdaTool + "    local: { answers: [{ whenInput: [a], result: x }] }\n", CodeLocal, "tools.0.local.answers.0.whenInput", "[a]", "a mapping of the arguments"},
		{"answer unknown key", lambdaTool + "    local: { answers: [{ text: x }] }\n", CodeUnknownKey, "tools.0.local.answers.0.text", "text", "unknown key"},
		{"expose local without input", "tools:\n  - mcp: { url: 'https://m.example/mcp', expose: [{ name: a, local: { description: d, answers: [{ result: x }] } }] }\n",
			CodeRequired, "tools.0.mcp.expose.0.local.input", "{ description", "is required"},
		{"a server stood in in part", "tools:\n  - mcp:\n      url: 'https://m.example/mcp'\n      expose:\n        - { name: a, local: { description: d, input: { type: object }, answers: [{ result: x }] } }\n        - { name: b }\n",
			CodeLocal, "tools.0.mcp.expose", "- { name: a", "give every exposed tool a 'local' block, or none (1 of 2"},
		{"an exposed path the stand-in lacks", "tools:\n  - mcp:\n      url: 'https://m.example/mcp'\n      expose:\n        - { name: a, paths: [{ arg: file, access: read }], local: { description: d, input: { type: object }, answers: [{ result: x }] } }\n",
			CodePathArgument, "tools.0.mcp.expose.0.paths", "{ name: a", "not a property of the stand-in's input schema"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, diags := Parse([]byte(c.src))
			var found *spec.Diagnostic
			for i := range diags {
				if diags[i].Code == c.code && diags[i].Field == c.field {
					found = &diags[i]
					break
				}
			}
			if found == nil {
				t.Fatalf("no %s at %q in %+v\n%s", c.code, c.field, diags, c.src)
			}
			if !strings.Contains(found.Message, c.contains) {
				t.Errorf("message %q does not say %q", found.Message, c.contains)
			}
			if found.Severity != "error" || found.File != File || found.Hint == "" {
				t.Errorf("diagnostic %+v", found)
			}
			if c.marker != "" {
				line, col := at(t, c.src, c.marker)
				if found.Line != line || found.Column != col {
					t.Errorf("at %d:%d, want %d:%d (%q)", found.Line, found.Column, line, col, c.marker)
				}
			} else if found.Line == 0 {
				t.Errorf("no line: %+v", found)
			}
		})
	}
}

func TestHTTPDefaultsAndLoopback(t *testing.T) {
	src := strings.Replace(httpTool, "https://api.example.com", "http://127.0.0.1:8080", 1)
	cfg, diags := Parse([]byte(src))
	if len(diags) > 0 {
		t.Fatalf("a loopback http:// URL (local tests): %+v", diags)
	}
	if cfg.Tools[0].HTTP.Body != "none" {
		t.Errorf("GET body = %q", cfg.Tools[0].HTTP.Body)
	}
	cfg, diags = Parse([]byte(strings.Replace(httpTool, "method: GET", "method: POST", 1)))
	if len(diags) > 0 || cfg.Tools[0].HTTP.Body != "json" {
		t.Errorf("POST: %+v %+v", cfg, diags)
	}
	parts, err := SplitURL("https://API.example.com:8443/v1/invoices/{id}/lines/?q={q}&lang=en")
	if err != nil {
		t.Fatal(err)
	}
	want := URLParts{Origin: "https://api.example.com:8443",
		Path:  []URLPart{{Literal: "v1"}, {Literal: "invoices"}, {Arg: "id"}, {Literal: "lines"}, {Literal: ""}},
		Query: []URLQuery{{Key: "q", Arg: "q"}, {Key: "lang", Literal: "en"}}}
	if !reflect.DeepEqual(parts, want) || !reflect.DeepEqual(parts.Args(), []string{"id", "q"}) {
		t.Errorf("SplitURL = %+v", parts)
	}
}

func TestLoadRefusesAFileWithFindings(t *testing.T) {
	if _, err := Load([]byte(fullFile(t))); err != nil {
		t.Fatal(err)
	}
	_, err := Load([]byte("tools: {}\nmounts:\n  - { name: workflows, dir: x }\n"))
	var fe *FileError
	if !errors.As(err, &fe) || len(fe.Diagnostics) != 2 || !strings.Contains(err.Error(), "archmax.host.yaml:1:8") {
		t.Fatalf("Load: %v", err)
	}
}

// The JSON of an input schema is the document's, whatever YAML spelled.
func TestInputSchemaJSON(t *testing.T) {
	cfg, diags := Parse([]byte(`tools:
  - name: t
    description: d
    input:
      type: object
      properties:
        n: { type: integer, minimum: 0x10, maximum: 1e3 }
        flag: { type: boolean, default: yes }
        tags: { type: array, items: { type: string }, default: [] }
      required: [n]
    lambda: { function: f }
`))
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	var v map[string]any
	if err := json.Unmarshal(cfg.Tools[0].Input, &v); err != nil {
		t.Fatal(err)
	}
	want := `{"type":"object","properties":{"n":{"type":"integer","minimum":16,"maximum":1000},"flag":{"type":"boolean","default":"yes"},"tags":{"type":"array","items":{"type":"string"},"default":[]}},"required":["n"]}`
	if string(cfg.Tools[0].Input) != want {
		t.Errorf("input = %s", cfg.Tools[0].Input)
	}
}

// A stand-in's answers as local runs serve them: whenInput as JSON values, a string result
// as written, any other result as compact JSON in document order, an error's text.
func TestLocalStandIns(t *testing.T) {
	cfg, err := Load([]byte(lambdaTool + `    local:
      answers:
        - { whenInput: { id: ORD-1, n: 2 }, result: { status: shipped, id: ORD-1 } }
        - { whenInput: { id: ORD-9 }, error: "Error: ORD-9 belongs to another customer." }
        - result: "no such order"
  - mcp:
      url: https://tickets.example.com/mcp
      expose:
        - name: open_ticket
          local:
            description: Opens a ticket.
            input: { type: object, properties: { subject: { type: string } }, required: [subject] }
            answers: [{ result: TCK-1 }]
`))
	if err != nil {
		t.Fatal(err)
	}
	l := cfg.Tools[0].Local
	if l == nil || len(l.Answers) != 3 || l.Description != "" || l.Input != nil {
		t.Fatalf("lambda stand-in: %+v", l)
	}
	if a := l.Answers[0]; !reflect.DeepEqual(a.WhenInput, map[string]any{"id": "ORD-1", "n": 2.0}) || a.Result != `{"status":"shipped","id":"ORD-1"}` || a.Error != "" {
		t.Errorf("answer 0: %+v", a)
	}
	if a := l.Answers[1]; a.Error != "Error: ORD-9 belongs to another customer." || a.Result != "" {
		t.Errorf("answer 1: %+v", a)
	}
	if a := l.Answers[2]; a.WhenInput != nil || a.Result != "no such order" || a.Line == 0 {
		t.Errorf("answer 2: %+v", a)
	}
	m := cfg.Tools[1].MCP.Expose[0].Local
	if m == nil || m.Description != "Opens a ticket." || string(m.Input) != `{"type":"object","properties":{"subject":{"type":"string"}},"required":["subject"]}` ||
		len(m.Answers) != 1 || m.Answers[0].Result != "TCK-1" {
		t.Errorf("mcp stand-in: %+v", m)
	}
	// stand-ins are local: they name nothing to grant
	if r := cfg.Resources(); len(r.Functions) != 1 || len(r.Endpoints) != 1 || r.Secrets != nil || r.SigV4 != nil {
		t.Errorf("resources: %+v", r)
	}
}
