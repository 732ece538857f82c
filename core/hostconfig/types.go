// Package hostconfig is the host configuration of a deployment: `archmax.host.yaml` at the
// workspace root, beside AGENTS.md (DESIGN.md §10). It declares what the host adds to the
// workflows of its workspace — tools (Lambda functions, HTTPS endpoints, MCP servers),
// governance rules (the reference's policyRules, declaratively) and mounts — and never
// widens what a state allows: a workflow grants a host tool by name in `tools.allow` as it
// would any tool. The file is host material on the authoring plane: no agent, script or tool
// reaches it. Secrets are never in the file: it names an AWS Secrets Manager secret (or,
// locally, an environment variable).
//
// This package is pure (no I/O): Parse and Load read the file's bytes (parse.go), Rules
// turns the policy rules into the kernel's consumer rules (rules.go), and Resources lists
// the AWS resources the file names (resources.go); the tool kinds are built from these
// declarations by the assembly (core/host, functions/handlers/assembly, local/runner).
package hostconfig

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/archmax-ai/archmax/core/pricing"
	"github.com/archmax-ai/archmax/core/spec"
)

// File is the host file's path from the workspace root (and under the spec prefix in S3).
const File = spec.HostFile

// Config is a parsed host file. The zero value is a host that declares nothing.
type Config struct {
	// Version is the file format's version; 1 is the only one.
	Version int
	// Tools are the declared tools, in file order. An `mcp` declaration exposes several.
	Tools []ToolDecl
	// PolicyRules are the host's governance rules, run in order after the declared denials
	// and before the per-state defaults (03 GOV-04).
	PolicyRules []PolicyRule
	// Mounts are the host's mounts beside the defaults (skills/, .platform/, AGENTS.md).
	Mounts []MountDecl
	// Events is the events section (outbound notifications, lifecycle logging); nil when the
	// file has none (EventsOf gives the defaults).
	Events *Events
	// Pricing is the pricing section: model-usage costs in USD per 1M tokens, keyed by model
	// id (exact, else the longest key inside the id, else `default`). nil when the file has
	// none: the ARCHMAX_PRICE_* variables are the fallback; a model no entry prices reports
	// tokens only.
	Pricing pricing.Table
	// Budgets is the budgets section: limits in tokens and USD per turn, per session
	// lifetime and per workflow per UTC day (budgets.go). nil when the file has none.
	Budgets *Budgets
	// Retention is the retention section: how long a session is kept after its last
	// activity (retention.go). nil when the file has none: ARCHMAX_SESSION_TTL is the
	// fallback, else sessions are kept until deleted.
	Retention *Retention
	// Prompt is the prompt section: the prompt cache's switch and TTL, over the workflows'
	// settings.prompt_cache and ARCHMAX_PROMPT_CACHE (prompt.go). nil when the file has none.
	Prompt *Prompt
}

// Tool kinds.
const (
	KindLambda = "lambda"
	KindHTTP   = "http"
	KindMCP    = "mcp"
)

// ToolDecl is one entry of `tools:`. Kind selects which of Lambda, HTTP and MCP is set.
// For lambda and http the entry is one tool (Name, Description, Input, Paths); for mcp it is
// one server whose Expose list names the tools it contributes (descriptions and schemas come
// from the server's tools/list at run time).
type ToolDecl struct {
	Kind        string
	Name        string          // a Bedrock tool name [a-zA-Z0-9_-]{1,64}, not reserved (lambda, http)
	Description string          // what the model reads (lambda, http)
	Input       json.RawMessage // a JSON Schema whose top-level type is "object" (lambda, http)
	// Paths are the tool's declared path arguments, governed as paths (01 §7.3): each must be
	// a property of Input.
	Paths []spec.PathArg
	// Timeout bounds one call (default DefaultTimeout); MaxResultChars bounds the text kept
	// in the transcript (longer results are offloaded to large_tool_results/ like a
	// built-in's; default DefaultMaxResultChars).
	Timeout        time.Duration
	MaxResultChars int
	Lambda         *LambdaTool
	HTTP           *HTTPTool
	MCP            *MCPServer
	// Local is the tool's local stand-in (lambda, http): what local runs answer its calls
	// with instead of reaching the function or endpoint. An mcp server's stand-in is on each
	// exposed tool (MCPTool.Local).
	Local *LocalStandIn
	// Line and Column locate the entry in the file (for findings).
	Line, Column int
}

// LocalStandIn is a tool's `local:` block: canned answers that `archmax run`, `test` and
// `serve` serve the tool's calls from — over the kind's own wire protocol, from an
// in-process peer the local run starts (local/standin: a Lambda Invoke fake, an HTTP
// server, an MCP server), so the kind's own code runs — instead of the declared function,
// endpoint or server, and without its auth. The functions never read it: a deployed tool
// always reaches what the file declares.
type LocalStandIn struct {
	// Description and Input are what a stand-in MCP server lists for an exposed tool (mcp
	// only, and required there: the server's own listing is what the model reads). A lambda
	// or http stand-in answers as the declared tool, with its description and input.
	Description string
	Input       json.RawMessage
	// Answers are tried in order: the first whose WhenInput matches the call's arguments
	// answers it (a call none matches is an error result naming the arguments).
	Answers []LocalAnswer
	// Line and Column locate the block in the file.
	Line, Column int
}

// LocalAnswer is one canned answer of a stand-in, matched as a case's mock is (spec 04
// CD-50, MT-10): WhenInput partially — objects by their given members, numbers by value,
// anything else by equality; no WhenInput matches every call.
type LocalAnswer struct {
	WhenInput map[string]any
	// Result is the tool's result text (a string as written, any other value as compact
	// JSON); Error, when set, makes the answer an error result with that text instead.
	Result string
	Error  string
	Line   int
	Column int
}

// Defaults of a tool declaration.
const (
	DefaultTimeout = 30 * time.Second
	// MaxTimeout bounds a declared timeout: a Lambda invocation's own limit.
	MaxTimeout = 15 * time.Minute
	// DefaultMaxResultChars is the engine's offload threshold for host tools (80,000 UTF-16
	// units, workspace.OffloadThreshold), which is also the most a declaration may set.
	DefaultMaxResultChars = 80_000
	// DefaultMaxResponseBytes bounds an http tool's response body read; MaxResponseBytes is
	// the most a declaration may set (Lambda's own response limit).
	DefaultMaxResponseBytes = 1 << 20
	MaxResponseBytes        = 6 << 20
)

// LambdaTool invokes a function (RequestResponse) with the JSON payload
// {tool, input, session, state, callId, idempotencyKey}; the function answers
// {"text": "…"} (the tool result) or {"error": "…"} (an error result the model reads).
type LambdaTool struct {
	Function  string // a function name or ARN
	Qualifier string // a version or alias ("" = $LATEST)
}

// HTTPTool is one request to an HTTPS endpoint. URL's scheme and host are fixed by the file;
// its `{arg}` placeholders — whole path segments or whole query values only — are filled
// from the call's arguments, each percent-encoded as one segment or value (no dot segments,
// no '/', '?', '#' or '@' can be smuggled in). Arguments not used by the URL go in the JSON
// body when Body is "json" (the default for methods with a body), and nowhere otherwise.
type HTTPTool struct {
	Method           string            // GET, POST, PUT, PATCH, DELETE
	URL              string            // https://host[:port]/path/{arg}?q={arg}
	Headers          map[string]string // fixed headers
	Body             string            // "json" | "none"
	Auth             *Auth
	MaxResponseBytes int // default DefaultMaxResponseBytes
}

// MCPServer is a remote MCP server over Streamable HTTP (an AgentCore Gateway or any MCP
// server). Expose is the declaration of the tools it contributes, so validation works
// offline; at run time tools/list supplies their descriptions and schemas, and a listed
// tool the server does not offer is a clear error.
type MCPServer struct {
	URL    string
	Auth   *Auth
	Prefix string // prepended to every exposed tool's name ("" = none)
	Expose []MCPTool
}

// MCPTool is one tool an MCP server contributes: its name on the server, and the name the
// model calls it by (Prefix + As, As defaulting to Name), which must be a valid Bedrock
// tool name and not reserved.
type MCPTool struct {
	Name string
	As   string
	// Paths are its declared path arguments, as for a lambda or http tool.
	Paths []spec.PathArg
	// Local is its stand-in for local runs (with a Description and an Input: what the
	// stand-in server lists); a server's exposed tools have one each or none has.
	Local *LocalStandIn
	// Line and Column locate the entry in the file.
	Line, Column int
}

// ToolName is the name the model calls the tool by: the server's Prefix + As (As defaulting
// to Name).
func (s *MCPServer) ToolName(t MCPTool) string {
	if t.As != "" {
		return s.Prefix + t.As
	}
	return s.Prefix + t.Name
}

// Auth is how a request authenticates: SigV4 for AWS endpoints, or a header whose value is
// a secret (Secrets Manager, or an environment variable for local runs).
type Auth struct {
	SigV4 *SigV4
	// Header names the header carrying the secret (e.g. "Authorization"); Prefix goes before
	// the secret's value (e.g. "Bearer ").
	Header string
	Prefix string
	// Secret is a Secrets Manager secret ARN or name (SecretKey picks one key of a JSON
	// secret); Env names an environment variable instead (local use). Exactly one is set
	// when Header is.
	Secret    string
	SecretKey string
	Env       string
}

// SigV4 signs requests for an AWS service (e.g. "execute-api", "bedrock-agentcore") in a
// region ("" = the function's).
type SigV4 struct {
	Service string
	Region  string
}

// PolicyRule is a declarative consumer governance rule (03 GOV-04): when a call matches
// every condition given (tool, workflows, origins, states, path and argument globs), the
// rule's Effect decides it — "block" refuses with Reason under rule id ID, "allow" admits
// it without the state's own grants being consulted — else the rule abstains. Rules run
// after the safety rules and the declared denials, so they never loosen either.
//
// Path and argument globs follow the kernel's guards (docs/DECISIONS.md K17-1…K17-3): a
// block rule's globs match as a forbid entry's do (any governed path; a non-path argument
// widely, '*' crossing '/', dot segments resolved, case folded), an allow rule's as an allow
// entry's do (every governed path; a non-path argument narrowly, never a value with a '.'
// or '..' segment). `${{ }}` references resolve against the session's variables; one that
// does not resolve fires a block rule and never an allow rule.
type PolicyRule struct {
	ID        string   // a rule id for events and refusals, e.g. "host.no-weekend-refunds"
	Effect    string   // "block" | "allow"
	Tools     []string // tool names ("*" = any)
	Workflows []string // workflow slugs (empty = all)
	Origins   []string // agent, script, code, grader (empty = all)
	States    []string // state slugs (empty = all)
	Paths     []string // globs over the call's governed paths
	Args      []spec.ArgGuard
	Reason    string // the refusal the caller reads (block)
	Line      int
	Column    int
}

// Effects of a policy rule.
const (
	EffectBlock = "block"
	EffectAllow = "allow"
)

// MountDecl is one host mount (01 §1.6, §6.5, §6.6): a name in the agent's workspace served
// by a backend — an S3 prefix on AWS, a directory locally (either may be given, or both).
// For a file mount (File) S3 names one object and Dir one file.
type MountDecl struct {
	Name         string // a workspace path ("contracts", "catalogs/eu", a file "terms.md")
	S3           string // s3://bucket/prefix/ (a folder: ends in '/'), or s3://bucket/key (a file)
	Dir          string // a directory (or file) relative to the workspace root, or absolute (local runs)
	File         bool   // the mount is one file
	ReadOnly     bool   // default true
	Governed     bool   // reachable only where a state's mounts grant it
	Unsearchable bool   // `searchable: false`: glob and grep rooted above it skip it (GOV-58)
	Line, Column int
	at           mountPos // where the file writes its keys' values (At)
}

// mountPos is where a mount entry writes the values of the keys its local checks name.
type mountPos struct{ s3, dir, file, readOnly [2]int }

// At is where the file writes the value of the mount's key field ("s3", "dir", "file",
// "readOnly"): the entry's own position for "", another key or one the entry does not give.
func (m MountDecl) At(field string) (line, col int) {
	var p [2]int
	switch field {
	case "s3":
		p = m.at.s3
	case "dir":
		p = m.at.dir
	case "file":
		p = m.at.file
	case "readOnly":
		p = m.at.readOnly
	}
	if p[0] == 0 {
		return m.Line, m.Column
	}
	return p[0], p[1]
}

func (m *MountDecl) setPos(field string, line, col int) {
	p := [2]int{line, col}
	switch field {
	case "s3":
		m.at.s3 = p
	case "dir":
		m.at.dir = p
	case "file":
		m.at.file = p
	case "readOnly":
		m.at.readOnly = p
	}
}

// S3Location splits S3 into its bucket and key (a folder's key ends in '/'); ok is false
// when S3 is not set.
func (m MountDecl) S3Location() (bucket, key string, ok bool) {
	rest, found := strings.CutPrefix(m.S3, "s3://")
	if !found || m.S3 == "" {
		return "", "", false
	}
	bucket, key, _ = strings.Cut(rest, "/")
	return bucket, key, true
}
