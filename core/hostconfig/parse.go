package hostconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/yamltree"
)

// Diagnostic codes of the host file. Every finding is an error: a host file with one does
// not load (Load), so no function and no local run serves a half-read host.
const (
	CodeYAML          = "host.yaml"           // not one YAML mapping; a duplicate key, an alias bomb
	CodeUnknownKey    = "host.unknown-key"    // a key the format does not have
	CodeType          = "host.type"           // a value of the wrong shape
	CodeRequired      = "host.required"       // a required key is missing
	CodeVersion       = "host.version"        // a version other than 1
	CodeKind          = "host.kind"           // a tool entry with none or several of lambda, http, mcp
	CodeToolName      = "host.tool-name"      // not a Bedrock tool name (too long after a prefix)
	CodeToolReserved  = "host.tool-reserved"  // a built-in's, a control's or a delegation tool's name
	CodeToolDuplicate = "host.tool-duplicate" // two tools of one name (or one sandbox key)
	CodeInputSchema   = "host.input-schema"   // not a JSON Schema of an object
	CodePathArgument  = "host.path-argument"  // a declared path argument the schema lacks; a bad access
	CodeLambda        = "host.lambda"         // a function name or qualifier Lambda does not take
	CodeURL           = "host.url"            // an http or mcp URL (template) refused
	CodeHTTP          = "host.http"           // a method, header or body setting refused
	CodeAuth          = "host.auth"           // an auth block refused
	CodeRule          = "host.rule"           // a policy rule refused
	CodeMount         = "host.mount"          // a mount refused
	CodeLocal         = "host.local"          // a local stand-in refused
	CodeEvents        = "host.events"         // an events section refused (a bus, a detail type)
	CodePricing       = "host.pricing"        // a price entry that prices nothing
	CodeBudget        = "host.budget"         // a budget that limits nothing, or a USD one on unpriced models
)

// FileError is a host file that does not load: every error found, each located.
type FileError struct {
	Diagnostics []spec.Diagnostic
}

func (e *FileError) Error() string {
	var parts []string
	for _, d := range e.Diagnostics {
		loc := d.File
		if d.Line > 0 {
			loc = fmt.Sprintf("%s:%d:%d", d.File, d.Line, d.Column)
		}
		parts = append(parts, fmt.Sprintf("%s: %s [%s]", loc, d.Message, d.Field))
	}
	return "the host file does not load: " + strings.Join(parts, "; ")
}

// Name returns the error's name.
func (e *FileError) Name() string { return "HostConfigError" }

// Load parses the host file and fails with a *FileError when it has any finding.
func Load(src []byte) (*Config, error) {
	cfg, diags := Parse(src)
	if len(diags) > 0 {
		return nil, &FileError{Diagnostics: diags}
	}
	return cfg, nil
}

// Parse reads archmax.host.yaml strictly — one YAML document (the YAML 1.2 core schema,
// no duplicate keys, aliases within workflow.yaml's bound), a mapping at every level with
// no unknown key — and checks what a host can be refused for at load: tool names (Bedrock's
// grammar, not reserved, unique, one sandbox key each), input schemas (a JSON Schema that
// compiles, of type object), declared path arguments (properties of the schema, accesses
// of PATH_ACCESSES), Lambda function names, http URL templates and mcp URLs, auth blocks,
// policy rules and mounts. Every finding is an error with its field path (`tools.0.http.url`),
// line and column, sorted; the config is the best-effort reading beside them (nil only when
// the source is not a YAML mapping).
func Parse(src []byte) (*Config, []spec.Diagnostic) {
	p := &parser{}
	cfg := p.document(src)
	spec.SortDiagnostics(p.diags)
	return cfg, p.diags
}

type node = yamltree.Node

type parser struct {
	diags []spec.Diagnostic
}

func (p *parser) add(code, field string, line, col int, format string, args ...any) {
	p.diags = append(p.diags, spec.Diagnostic{Severity: "error", Code: code, Field: field, File: File,
		Line: line, Column: col, Message: fmt.Sprintf(format, args...), Hint: hints[code]})
}

func (p *parser) at(code, field string, n *node, format string, args ...any) {
	p.add(code, field, n.Line, n.Col, format, args...)
}

// hinted is at with a hint of its own (what this finding's fix is, beyond its code's).
func (p *parser) hinted(code, hint, field string, n *node, format string, args ...any) {
	p.at(code, field, n, format, args...)
	if hint != "" {
		p.diags[len(p.diags)-1].Hint = hint
	}
}

// problem reports a shared check's Problem (checks.go) found in the block n at field,
// located at what its Field names below n — a header at its name, a value at itself, a
// missing key at its mapping.
func (p *parser) problem(pr *Problem, n *node, field string) {
	at, f := n, field
	if pr.Field != "" {
		f = join(field, pr.Field)
	}
	if name, ok := strings.CutPrefix(pr.Field, "headers."); ok {
		if hs := n.Get("headers"); hs != nil && hs.Kind == yamltree.Map {
			if e := hs.Entry(name); e != nil {
				p.hinted(pr.Code, pr.Hint, f, &node{Line: e.Line, Col: e.Col}, "%s", pr.Message)
				return
			}
			at = hs
		}
	} else if pr.Field != "" {
		for _, seg := range strings.Split(pr.Field, ".") {
			next := at.Get(seg)
			if at.Kind != yamltree.Map || next == nil {
				break
			}
			at = next
		}
	}
	p.hinted(pr.Code, pr.Hint, f, at, "%s", pr.Message)
}

func join(path, key string) string  { return yamltree.Join(path, key) }
func idx(path string, i int) string { return path + "." + strconv.Itoa(i) }

func (p *parser) document(src []byte) *Config {
	root, refusal := yamltree.Decode(src, yamltree.Options{Report: func(f yamltree.Finding) {
		switch f.Problem {
		case yamltree.DuplicateKey:
			p.add(CodeYAML, f.Path, f.Line, f.Col, "key '%s' is repeated in this mapping (first at line %d); a mapping cannot repeat a key", f.Name, f.FirstLine)
		case yamltree.NonStringKey:
			p.add(CodeYAML, f.Path, f.Line, f.Col, "mapping keys must be strings; quote the key %s", f.Name)
		case yamltree.BadMerge:
			p.add(CodeYAML, f.Path, f.Line, f.Col, "a merge key '<<' takes a mapping or a list of mappings")
		case yamltree.AliasCycle:
			p.add(CodeYAML, f.Path, f.Line, f.Col, "alias '*%s' refers to a node that contains it", f.Name)
		default:
			p.add(CodeYAML, f.Path, f.Line, f.Col, "aliases expand this document far beyond its source size; refusing it (alias bomb?)")
		}
	}})
	if refusal != nil {
		switch refusal.Reason {
		case yamltree.NoDocument:
			return &Config{Version: 1} // an empty file (or comments only) declares nothing
		case yamltree.SyntaxError:
			p.add(CodeYAML, "", refusal.Line, 0, "YAML parse error: %s", strings.TrimPrefix(refusal.Err.Error(), "yaml: "))
		case yamltree.ManyDocuments:
			p.add(CodeYAML, "", refusal.Line, refusal.Col, "the host file holds exactly one YAML document, but this one holds more (a '---' starts another)")
		case yamltree.NotMapping:
			p.add(CodeYAML, "", refusal.Line, refusal.Col, "the host file is a YAML mapping (version, tools, policyRules, mounts, events, pricing, budgets, retention, prompt)")
		}
		return nil
	}
	cfg := &Config{Version: 1}
	p.strict(root, "", rootKeys, func(e *yamltree.Entry, f string) {
		switch e.Key {
		case "version":
			if e.Val.Kind != yamltree.Number || e.Val.Num != 1 {
				p.at(CodeVersion, f, e.Val, "'version' is 1, the only version of the host file")
			}
		case "tools":
			for i, it := range p.list(e.Val, f, "must be a list of tool declarations") {
				cfg.Tools = append(cfg.Tools, p.tool(it, idx(f, i)))
			}
		case "policyRules":
			for i, it := range p.list(e.Val, f, "must be a list of policy rules") {
				cfg.PolicyRules = append(cfg.PolicyRules, p.rule(it, idx(f, i)))
			}
		case "mounts":
			for i, it := range p.list(e.Val, f, "must be a list of mounts") {
				cfg.Mounts = append(cfg.Mounts, p.mount(it, idx(f, i)))
			}
		case "events":
			cfg.Events = p.events(e.Val, f)
		case "pricing":
			cfg.Pricing = p.pricingTable(e.Val, f)
		case "budgets":
			cfg.Budgets = p.budgets(e.Val, f)
		case "retention":
			cfg.Retention = p.retention(e.Val, f)
		case "prompt":
			cfg.Prompt = p.prompt(e.Val, f)
		}
	})
	p.toolNames(cfg)
	p.ruleIDs(cfg)
	p.mountNames(cfg)
	return cfg
}

// Keys of each mapping of the format (the JSON Schema declares the same; schema_test.go).
var (
	rootKeys   = []string{"version", "tools", "policyRules", "mounts", "events", "pricing", "budgets", "retention", "prompt"}
	toolKeys   = []string{"name", "description", "input", "paths", "timeout", "maxResultChars", KindLambda, KindHTTP, KindMCP, "local"}
	lambdaKeys = []string{"function", "qualifier"}
	httpKeys   = []string{"method", "url", "headers", "body", "auth", "maxResponseBytes"}
	mcpKeys    = []string{"url", "auth", "prefix", "expose"}
	exposeKeys = []string{"name", "as", "paths", "local"}
	localKeys  = []string{"description", "input", "answers"}
	answerKeys = []string{"whenInput", "result", "error"}
	pathKeys   = []string{"arg", "access"}
	authKeys   = []string{"sigv4", "header", "prefix", "secret", "secretKey", "env"}
	sigv4Keys  = []string{"service", "region"}
	ruleKeys   = []string{"id", "effect", "tools", "workflows", "origins", "states", "paths", "args", "reason"}
	mountKeys  = []string{"name", "s3", "dir", "file", "readOnly", "governed", "searchable"}
)

// strict walks a mapping: fn is called for each known key in document order; unknown keys
// are reported, each at its own position.
func (p *parser) strict(n *node, path string, known []string, fn func(e *yamltree.Entry, field string)) bool {
	if n.Kind != yamltree.Map {
		what := "the host file"
		if path != "" {
			what = "'" + path + "'"
		}
		p.at(CodeType, path, n, "%s must be a mapping of %s", what, quoteKeys(known))
		return false
	}
	for i := range n.Entries {
		e := &n.Entries[i]
		if !slices.Contains(known, e.Key) {
			p.add(CodeUnknownKey, join(path, e.Key), e.Line, e.Col, "unknown key '%s' (known: %s)", e.Key, quoteKeys(known))
			continue
		}
		fn(e, join(path, e.Key))
	}
	return true
}

func quoteKeys(keys []string) string {
	q := make([]string, len(keys))
	for i, k := range keys {
		q[i] = "'" + k + "'"
	}
	return strings.Join(q, ", ")
}

func (p *parser) list(n *node, field, msg string) []*node {
	if n.Kind != yamltree.Seq {
		p.at(CodeType, field, n, "'%s' %s", field, msg)
		return nil
	}
	return n.Items
}

// str reads a non-blank string.
func (p *parser) str(n *node, field string) (string, bool) {
	if n.Kind != yamltree.String || strings.TrimSpace(n.Str) == "" {
		p.at(CodeType, field, n, "'%s' must be a non-blank string", field)
		return "", false
	}
	return n.Str, true
}

func (p *parser) boolean(n *node, field string) bool {
	if n.Kind != yamltree.Bool {
		p.at(CodeType, field, n, "'%s' must be true or false", field)
		return false
	}
	return n.Truth
}

// integer reads an integer in [lo, hi].
func (p *parser) integer(n *node, field string, lo, hi int) int {
	if n.Kind != yamltree.Number || n.Num != math.Trunc(n.Num) || n.Num < float64(lo) || n.Num > float64(hi) {
		p.at(CodeType, field, n, "'%s' must be an integer from %d to %d", field, lo, hi)
		return 0
	}
	return int(n.Num)
}

// strings reads a non-empty list of non-blank strings.
func (p *parser) strings(n *node, field string) []string {
	items := p.list(n, field, "must be a list of strings")
	if n.Kind == yamltree.Seq && len(items) == 0 {
		p.at(CodeType, field, n, "'%s' must list at least one entry (leave the key out to mean all)", field)
	}
	var out []string
	for i, it := range items {
		if s, ok := p.str(it, idx(field, i)); ok {
			out = append(out, s)
		}
	}
	return out
}

func (p *parser) required(n *node, field string, keys ...string) {
	if n.Kind != yamltree.Map {
		return
	}
	for _, k := range keys {
		if n.Entry(k) == nil {
			p.at(CodeRequired, join(field, k), n, "'%s' is required", join(field, k))
		}
	}
}

// --- tools -----------------------------------------------------------------------

// toolNamePattern is Bedrock's toolSpec name grammar.
var toolNamePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func (p *parser) tool(n *node, field string) ToolDecl {
	d := ToolDecl{Line: n.Line, Column: n.Col}
	var kinds []string
	var paths []*yamltree.Entry
	var local *yamltree.Entry
	ok := p.strict(n, field, toolKeys, func(e *yamltree.Entry, f string) {
		switch e.Key {
		case "name":
			d.Name, _ = p.str(e.Val, f)
		case "description":
			d.Description, _ = p.str(e.Val, f)
		case "input":
			d.Input = p.inputSchema(e.Val, f)
		case "paths":
			paths = append(paths, e)
			d.Paths = p.pathArgs(e.Val, f)
		case "timeout":
			d.Timeout = p.duration(e.Val, f)
		case "maxResultChars":
			d.MaxResultChars = p.integer(e.Val, f, 1, DefaultMaxResultChars)
		case KindLambda:
			kinds = append(kinds, e.Key)
			d.Lambda = p.lambda(e.Val, f)
		case KindHTTP:
			kinds = append(kinds, e.Key)
			d.HTTP = p.http(e.Val, f)
		case KindMCP:
			kinds = append(kinds, e.Key)
			d.MCP = p.mcp(e.Val, f)
		case "local":
			local = e
		}
	})
	if !ok {
		return d
	}
	if local != nil {
		if e := local; n.Entry(KindMCP) != nil {
			p.add(CodeLocal, join(field, "local"), e.Line, e.Col, "an mcp server's stand-in goes on each exposed tool, which it lists: expose: [{ name, local: { description, input, answers } }]")
		} else {
			d.Local = p.local(e.Val, join(field, "local"), false)
		}
	}
	switch len(kinds) {
	case 0:
		p.at(CodeKind, field, n, "a tool declaration names its kind with exactly one of 'lambda', 'http' or 'mcp'")
		return d
	case 1:
		d.Kind = kinds[0]
	default:
		p.at(CodeKind, field, n, "a tool declaration has exactly one kind, but this one has %s", quoteKeys(kinds))
		return d
	}
	if d.Kind == KindMCP {
		for _, k := range []string{"name", "description", "input", "paths"} {
			if e := n.Entry(k); e != nil {
				p.add(CodeKind, join(field, k), e.Line, e.Col, "an mcp server's tools take their names, descriptions and input schemas from the server: list them under 'mcp.expose' (with 'paths' there)")
			}
		}
		return d
	}
	p.required(n, field, "name", "description", "input")
	if d.Name != "" && !toolNamePattern.MatchString(d.Name) {
		p.at(CodeToolName, join(field, "name"), n.Get("name"), "'%s' is not a tool name Bedrock takes: 1 to 64 of a-z, A-Z, 0-9, '_' and '-'", d.Name)
	}
	if d.Input != nil {
		props := schemaProperties(d.Input)
		for _, e := range paths {
			for i, pa := range d.Paths {
				if _, ok := props[pa.Arg]; !ok {
					at := e.Val
					if i < len(e.Val.Items) {
						at = e.Val.Items[i]
					}
					p.at(CodePathArgument, idx(join(field, "paths"), i), at, "path argument '%s' is not a property of the input schema (properties: %s)", pa.Arg, orNone(sortedKeys(props)))
				}
			}
		}
		if d.HTTP != nil {
			p.urlPlaceholders(n, field, d)
		}
	}
	return d
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// inputSchema converts the input mapping to JSON (document key order) and checks it is a
// JSON Schema that compiles (draft 2020-12, no remote references) with "type": "object".
func (p *parser) inputSchema(n *node, field string) json.RawMessage {
	if n.Kind != yamltree.Map {
		p.at(CodeInputSchema, field, n, "'%s' must be a JSON Schema mapping whose type is object (e.g. { type: object, properties: { id: { type: string } } })", field)
		return nil
	}
	raw, err := toJSON(n)
	if err != nil {
		p.at(CodeInputSchema, field, n, "'%s' cannot be written as JSON: %v", field, err)
		return nil
	}
	if t := n.Get("type"); t == nil || t.Kind != yamltree.String || t.Str != "object" {
		at := n
		if t != nil {
			at = t
		}
		p.at(CodeInputSchema, join(field, "type"), at, "an input schema's top-level type is \"object\" (Bedrock's tool input is a JSON object)")
		return nil
	}
	if err := compileSchema(raw); err != nil {
		p.schemaRefused(err, n, field)
		return nil
	}
	return raw
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// schemaProperties returns the top-level properties of a schema, by name.
func schemaProperties(raw json.RawMessage) map[string]json.RawMessage {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	_ = json.Unmarshal(raw, &s)
	if s.Properties == nil {
		return map[string]json.RawMessage{}
	}
	return s.Properties
}

func schemaRequired(raw json.RawMessage) []string {
	var s struct {
		Required []string `json:"required"`
	}
	_ = json.Unmarshal(raw, &s)
	return s.Required
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// toJSON writes a YAML value as JSON, mapping keys in document order.
func toJSON(n *node) ([]byte, error) {
	var b bytes.Buffer
	var write func(n *node) error
	write = func(n *node) error {
		switch n.Kind {
		case yamltree.Null:
			b.WriteString("null")
		case yamltree.Bool:
			b.WriteString(strconv.FormatBool(n.Truth))
		case yamltree.Number:
			if math.IsInf(n.Num, 0) || math.IsNaN(n.Num) {
				return fmt.Errorf("%s is not a JSON number", n.Str)
			}
			out, _ := json.Marshal(n.Num)
			b.Write(out)
		case yamltree.String:
			out, _ := json.Marshal(n.Str)
			b.Write(out)
		case yamltree.Seq:
			b.WriteByte('[')
			for i, it := range n.Items {
				if i > 0 {
					b.WriteByte(',')
				}
				if err := write(it); err != nil {
					return err
				}
			}
			b.WriteByte(']')
		case yamltree.Map:
			b.WriteByte('{')
			for i, e := range n.Entries {
				if i > 0 {
					b.WriteByte(',')
				}
				k, _ := json.Marshal(e.Key)
				b.Write(k)
				b.WriteByte(':')
				if err := write(e.Val); err != nil {
					return err
				}
			}
			b.WriteByte('}')
		}
		return nil
	}
	if err := write(n); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// pathArgs reads `paths: [{ arg, access }]` (03 GOV-50).
func (p *parser) pathArgs(n *node, field string) []spec.PathArg {
	var out []spec.PathArg
	seen := map[string]bool{}
	for i, it := range p.list(n, field, "must be a list of { arg, access }") {
		f := idx(field, i)
		var pa spec.PathArg
		if !p.strict(it, f, pathKeys, func(e *yamltree.Entry, ff string) {
			switch e.Key {
			case "arg":
				pa.Arg, _ = p.str(e.Val, ff)
			case "access":
				if e.Val.Kind != yamltree.String || !slices.Contains(spec.PathAccesses, e.Val.Str) {
					p.at(CodePathArgument, ff, e.Val, "'%s' is one of %s", ff, strings.Join(spec.PathAccesses, ", "))
					return
				}
				pa.Access = e.Val.Str
			}
		}) {
			continue
		}
		p.required(it, f, "arg", "access")
		if pa.Arg != "" && seen[pa.Arg] {
			p.at(CodePathArgument, f, it, "path argument '%s' is declared twice", pa.Arg)
			continue
		}
		seen[pa.Arg] = true
		out = append(out, pa)
	}
	return out
}

// duration reads a Go duration string ("30s", "2m") in (0, MaxTimeout].
func (p *parser) duration(n *node, field string) time.Duration {
	if n.Kind == yamltree.String {
		if d, err := time.ParseDuration(n.Str); err == nil && d > 0 && d <= MaxTimeout {
			return d
		}
	}
	p.at(CodeType, field, n, "'%s' must be a duration from 1ms to 15m, such as \"30s\" or \"2m\"", field)
	return 0
}

// Lambda function names: a name, a partial ARN (account:function:name) or a full ARN, with
// an optional :qualifier on the last two (Lambda's FunctionName grammar).
var (
	lambdaFunction  = regexp.MustCompile(`^(arn:aws[a-zA-Z-]*:lambda:[a-z]{2}(-gov)?-[a-z]+-\d{1}:\d{12}:function:|\d{12}:function:)?[a-zA-Z0-9-_]{1,64}(:(\$LATEST|[a-zA-Z0-9-_]+))?$`)
	lambdaQualifier = regexp.MustCompile(`^(\$LATEST|[0-9]+|[a-zA-Z0-9$_-]{1,128})$`)
)

func (p *parser) lambda(n *node, field string) *LambdaTool {
	l := &LambdaTool{}
	if !p.strict(n, field, lambdaKeys, func(e *yamltree.Entry, f string) {
		switch e.Key {
		case "function":
			if s, ok := p.str(e.Val, f); ok {
				if !lambdaFunction.MatchString(s) {
					p.at(CodeLambda, f, e.Val, "'%s' is not a Lambda function name, partial ARN or ARN (e.g. orders-get, arn:aws:lambda:eu-west-1:123456789012:function:orders-get)", s)
				}
				l.Function = s
			}
		case "qualifier":
			if s, ok := p.str(e.Val, f); ok {
				if !lambdaQualifier.MatchString(s) {
					p.at(CodeLambda, f, e.Val, "'%s' is not a Lambda version or alias", s)
				}
				l.Qualifier = s
			}
		}
	}) {
		return l
	}
	p.required(n, field, "function")
	if l.Qualifier != "" && functionQualified(l.Function) {
		p.at(CodeLambda, join(field, "qualifier"), n.Get("qualifier"), "the function already names a qualifier; give it once")
	}
	return l
}

// functionQualified reports whether a function name carries its own :qualifier.
func functionQualified(f string) bool {
	n := strings.Count(f, ":")
	if strings.HasPrefix(f, "arn:") {
		return n == 7
	}
	return n == 1 || n == 3
}

var httpMethods = []string{"GET", "POST", "PUT", "PATCH", "DELETE"}

func (p *parser) http(n *node, field string) *HTTPTool {
	h := &HTTPTool{}
	var bodyNode *node
	var headers []Header
	if !p.strict(n, field, httpKeys, func(e *yamltree.Entry, f string) {
		switch e.Key {
		case "method":
			if e.Val.Kind == yamltree.String {
				h.Method = e.Val.Str // kept when refused: the best-effort reading is the file's
			}
			if e.Val.Kind != yamltree.String || !slices.Contains(httpMethods, e.Val.Str) {
				p.at(CodeHTTP, f, e.Val, "'%s' is one of %s", f, strings.Join(httpMethods, ", "))
			}
		case "url":
			if s, ok := p.str(e.Val, f); ok {
				h.URL = s
				p.urlTemplate(s, e.Val, f)
			}
		case "headers":
			h.Headers, headers = p.headers(e.Val, f)
		case "body":
			bodyNode = e.Val
			if e.Val.Kind == yamltree.String {
				h.Body = e.Val.Str
			}
			if e.Val.Kind != yamltree.String || (e.Val.Str != "json" && e.Val.Str != "none") {
				p.at(CodeHTTP, f, e.Val, "'%s' is json (the arguments the URL does not use, as a JSON object) or none", f)
			}
		case "auth":
			h.Auth = p.auth(e.Val, f)
		case "maxResponseBytes":
			h.MaxResponseBytes = p.integer(e.Val, f, 1, MaxResponseBytes)
		}
	}) {
		return h
	}
	p.required(n, field, "method", "url")
	switch {
	case h.Body == "" && (h.Method == "GET" || h.Method == "DELETE"):
		h.Body = "none"
	case h.Body == "":
		h.Body = "json"
	case h.Body == "json" && (h.Method == "GET" || h.Method == "DELETE"):
		p.at(CodeHTTP, join(field, "body"), bodyNode, "a %s request sends no body: leave 'body' out (or say none) and put the arguments in the URL", h.Method)
	}
	for _, pr := range HeaderProblems(headers, h.Auth) {
		p.problem(pr, n, field)
	}
	return h
}

// headers reads the fixed headers (every string value kept, in the map and in file order:
// what they may be is HeaderProblems', checked once auth is read).
func (p *parser) headers(n *node, field string) (map[string]string, []Header) {
	if n.Kind != yamltree.Map {
		p.at(CodeType, field, n, "'%s' must be a mapping of header name to value", field)
		return nil, nil
	}
	out := map[string]string{}
	var list []Header
	for _, e := range n.Entries {
		if e.Val.Kind != yamltree.String {
			p.hinted(CodeHTTP, hintHeaderType, join(field, e.Key), e.Val, "header '%s' takes a one-line string value", e.Key)
			continue
		}
		out[e.Key] = e.Val.Str
		list = append(list, Header{e.Key, e.Val.Str})
	}
	return out, list
}

// loopback reports whether host names this machine (http:// is taken only there, for local
// tests: no request leaves the machine unencrypted).
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// placeholder matches a whole `{name}` path segment or query value.
var placeholder = regexp.MustCompile(`^\{([A-Za-z_][A-Za-z0-9_-]*)\}$`)

// URLParts is an http tool's URL template split: the fixed scheme://host[:port], then its
// path segments and query pairs, each literal or a whole `{arg}` placeholder.
type URLParts struct {
	Origin string     // scheme://host[:port], fixed by the file
	Path   []URLPart  // the path's segments after the first '/' ("" for a trailing '/')
	Query  []URLQuery // in template order
}

// URLPart is a path segment: Literal (as written, percent-encoding kept) or Arg.
type URLPart struct{ Literal, Arg string }

// URLQuery is one query pair: a literal key and a literal value or an Arg.
type URLQuery struct{ Key, Literal, Arg string }

// SplitURL splits an http tool's URL template, or refuses it with a *URLError saying what
// to do instead: absolute; https (http only to a loopback host); a fixed, plain host;
// printable ASCII only; no fragment; placeholders only as whole path segments or whole
// query values; no literal segment that is or decodes to a dot segment or holds '/', '\'
// or a control character. The parser and the http kind split with it (an mcp URL too,
// which has no placeholders).
func SplitURL(template string) (URLParts, error) {
	var parts URLParts
	if strings.ContainsFunc(template, func(r rune) bool { return r <= ' ' || r == 0x7f || r > 0x7e }) {
		return parts, urlErr(hintURLChars, "it has spaces, control or non-ASCII characters")
	}
	if strings.ContainsAny(template, "#") {
		return parts, urlErr(hintURLFragment, "a URL template has no fragment ('#')")
	}
	scheme, rest, ok := strings.Cut(template, "://")
	if !ok {
		return parts, urlErr(hintURLAbsolute, "it is not an absolute URL (https://host/path)")
	}
	if scheme != "https" && scheme != "http" {
		return parts, urlErr(hintURLScheme, "its scheme is %q: a tool's URL is https", scheme)
	}
	authority, pathQuery := rest, ""
	if i := strings.IndexAny(rest, "/?"); i >= 0 {
		authority, pathQuery = rest[:i], rest[i:]
	}
	switch {
	case authority == "":
		return parts, urlErr(hintURLNoHost, "it has no host: scheme://host[:port] comes first")
	case strings.Contains(authority, "@"):
		return parts, urlErr(hintURLUserInfo, "its host %q is not fixed: no user info in scheme://host[:port]", authority)
	case strings.ContainsAny(authority, "{}"):
		return parts, urlErr(hintURLHostArg, "its host %q is not fixed: no placeholder in scheme://host[:port]", authority)
	case strings.ContainsAny(authority, "%\\"):
		return parts, urlErr(hintURLHostEscape, "its host %q is not fixed: no escape or '\\' in scheme://host[:port]", authority)
	}
	u, err := url.Parse(scheme + "://" + authority)
	if err != nil || u.Hostname() == "" {
		return parts, urlErr(hintURLHost, "its host %q is not a host name", authority)
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return parts, urlErr(hintURLPort, "its port %q is not a port", port)
		}
	}
	if scheme == "http" && !loopback(u.Hostname()) {
		return parts, urlErr(hintURLPlain, "it is http:// to %s: a tool's URL is https (http:// only to localhost or a loopback address, for local tests)", u.Hostname())
	}
	parts.Origin = scheme + "://" + strings.ToLower(authority)
	pathPart, query, hasQuery := strings.Cut(pathQuery, "?")
	if pathPart != "" {
		for _, seg := range strings.Split(strings.TrimPrefix(pathPart, "/"), "/") {
			if m := placeholder.FindStringSubmatch(seg); m != nil {
				parts.Path = append(parts.Path, URLPart{Arg: m[1]})
				continue
			}
			if strings.ContainsAny(seg, "{}") {
				return parts, urlErr(hintURLSegmentArg, "path segment %q: a placeholder fills a whole path segment ('/{id}/'), never part of one", seg)
			}
			if seg == "." || seg == ".." || strings.EqualFold(seg, "%2e") || strings.EqualFold(seg, "%2e%2e") {
				return parts, urlErr(hintURLDotSegment, "path segment %q: no dot segments", seg)
			}
			if _, err := url.PathUnescape(seg); err != nil {
				return parts, urlErr(hintURLSegment, "path segment %q is not valid in a URL (a '%%' starts an escape %%XX)", seg)
			}
			if seg != "" {
				if why := SegmentProblem(seg); why != "" {
					hint := hintURLSegment
					if strings.Contains(why, "dot segment") {
						hint = hintURLDotSegment
					}
					return parts, urlErr(hint, "path segment %q: %s", seg, why)
				}
			}
			parts.Path = append(parts.Path, URLPart{Literal: seg})
		}
	}
	if hasQuery && query != "" {
		for _, pair := range strings.Split(query, "&") {
			k, v, _ := strings.Cut(pair, "=")
			if k == "" || strings.ContainsAny(k, "{}") {
				return parts, urlErr(hintURLQueryKey, "query pair %q: a query key is fixed and non-empty; a placeholder fills a whole value ('?q={term}')", pair)
			}
			if _, err := url.QueryUnescape(k); err != nil {
				return parts, urlErr(hintURLQueryEscape, "query key %q is not valid in a URL (a '%%' starts an escape %%XX)", k)
			}
			if m := placeholder.FindStringSubmatch(v); m != nil {
				parts.Query = append(parts.Query, URLQuery{Key: k, Arg: m[1]})
				continue
			}
			if strings.ContainsAny(v, "{}") {
				return parts, urlErr(hintURLQueryValue, "query value %q: a placeholder fills a whole query value, never part of one", v)
			}
			if _, err := url.QueryUnescape(v); err != nil {
				return parts, urlErr(hintURLQueryEscape, "query value %q is not valid in a URL (a '%%' starts an escape %%XX)", v)
			}
			parts.Query = append(parts.Query, URLQuery{Key: k, Literal: v})
		}
	}
	return parts, nil
}

// Args names the placeholders of the template, in order.
func (u URLParts) Args() []string {
	var out []string
	for _, s := range u.Path {
		if s.Arg != "" {
			out = append(out, s.Arg)
		}
	}
	for _, q := range u.Query {
		if q.Arg != "" {
			out = append(out, q.Arg)
		}
	}
	return out
}

func (p *parser) urlTemplate(s string, n *node, field string) {
	parts, err := SplitURL(s)
	if err != nil {
		p.urlRefused(s, err, n, field)
		return
	}
	seen := map[string]bool{}
	for _, a := range parts.Args() {
		if seen[a] {
			p.hinted(CodeURL, hintURLArgTwice, field, n, "URL %q uses the placeholder {%s} twice", s, a)
		}
		seen[a] = true
	}
}

// urlRefused reports SplitURL's refusal with its own hint.
func (p *parser) urlRefused(s string, err error, n *node, field string) {
	hint := ""
	var ue *URLError
	if errors.As(err, &ue) {
		hint = ue.Hint
	}
	p.hinted(CodeURL, hint, field, n, "URL %q is refused: %v", s, err)
}

// urlPlaceholders: every placeholder of an http tool's URL is a property of its input schema
// of a scalar type, and a path segment's is required (a URL with a missing segment is
// another resource).
func (p *parser) urlPlaceholders(n *node, field string, d ToolDecl) {
	parts, err := SplitURL(d.HTTP.URL)
	if err != nil {
		return
	}
	props := schemaProperties(d.Input)
	required := schemaRequired(d.Input)
	urlField := join(join(field, KindHTTP), "url")
	at := n.Get(KindHTTP).Get("url")
	check := func(arg string, segment bool) {
		raw, ok := props[arg]
		if !ok {
			p.hinted(CodeURL, hintURLArgUnknown, urlField, at, "placeholder {%s} is not a property of the input schema (properties: %s)", arg, orNone(sortedKeys(props)))
			return
		}
		var prop struct {
			Type any `json:"type"`
		}
		_ = json.Unmarshal(raw, &prop)
		types := []string{}
		switch t := prop.Type.(type) {
		case string:
			types = append(types, t)
		case []any:
			for _, x := range t {
				if s, ok := x.(string); ok {
					types = append(types, s)
				}
			}
		}
		for _, t := range types {
			if t == "object" || t == "array" || t == "null" {
				p.hinted(CodeURL, hintURLArgType, urlField, at, "placeholder {%s} fills one URL segment or value: its property must be a string, number, integer or boolean, not %s", arg, t)
				return
			}
		}
		if len(types) == 0 {
			p.hinted(CodeURL, hintURLArgUntyped, urlField, at, "placeholder {%s}: give its property a scalar type (string, number, integer or boolean)", arg)
			return
		}
		if segment && !slices.Contains(required, arg) {
			p.hinted(CodeURL, fmt.Sprintf(hintURLArgRequired, arg, arg), urlField, at, "placeholder {%s} fills a path segment, so the input schema must list it in 'required'", arg)
		}
	}
	for _, s := range parts.Path {
		if s.Arg != "" {
			check(s.Arg, true)
		}
	}
	for _, q := range parts.Query {
		if q.Arg != "" {
			check(q.Arg, false)
		}
	}
}

func (p *parser) mcp(n *node, field string) *MCPServer {
	m := &MCPServer{}
	if !p.strict(n, field, mcpKeys, func(e *yamltree.Entry, f string) {
		switch e.Key {
		case "url":
			if s, ok := p.str(e.Val, f); ok {
				m.URL = s
				if pr := MCPURLProblem(s); pr != nil {
					p.hinted(pr.Code, pr.Hint, f, e.Val, "%s", pr.Message)
				}
			}
		case "auth":
			m.Auth = p.auth(e.Val, f)
		case "prefix":
			if e.Val.Kind != yamltree.String || !regexp.MustCompile(`^[a-zA-Z0-9_-]{1,63}$`).MatchString(e.Val.Str) {
				p.at(CodeToolName, f, e.Val, "'%s' is 1 to 63 of a-z, A-Z, 0-9, '_' and '-' (it starts every exposed tool's name)", f)
				return
			}
			m.Prefix = e.Val.Str
		case "expose":
			items := p.list(e.Val, f, "must be a list of { name, as?, paths? }")
			if e.Val.Kind == yamltree.Seq && len(items) == 0 {
				p.at(CodeType, f, e.Val, "'%s' lists at least one of the server's tools: only listed tools are offered", f)
			}
			for i, it := range items {
				ff := idx(f, i)
				t := MCPTool{Line: it.Line, Column: it.Col}
				if !p.strict(it, ff, exposeKeys, func(x *yamltree.Entry, fx string) {
					switch x.Key {
					case "name":
						if s, ok := p.str(x.Val, fx); ok {
							if len(s) > 128 || strings.IndexFunc(s, unicode.IsControl) >= 0 {
								p.at(CodeToolName, fx, x.Val, "'%s' is not an MCP tool name (at most 128 characters, no control characters)", s)
							}
							t.Name = s
						}
					case "as":
						t.As, _ = p.str(x.Val, fx)
					case "paths":
						t.Paths = p.pathArgs(x.Val, fx)
					case "local":
						t.Local = p.local(x.Val, fx, true)
					}
				}) {
					continue
				}
				p.required(it, ff, "name")
				m.Expose = append(m.Expose, t)
			}
			stood := 0
			for _, t := range m.Expose {
				if t.Local != nil {
					stood++
				}
			}
			for j, t := range m.Expose {
				if t.Local == nil || t.Local.Input == nil {
					continue
				}
				props := schemaProperties(t.Local.Input)
				for _, pa := range t.Paths {
					if _, ok := props[pa.Arg]; !ok {
						p.add(CodePathArgument, join(idx(f, j), "paths"), t.Line, t.Column, "path argument '%s' is not a property of the stand-in's input schema (properties: %s)", pa.Arg, orNone(sortedKeys(props)))
					}
				}
			}
			if stood > 0 && stood < len(m.Expose) {
				p.at(CodeLocal, f, e.Val, "a stand-in serves the whole server: give every exposed tool a 'local' block, or none (%d of %d have one)", stood, len(m.Expose))
			}
		}
	}) {
		return m
	}
	p.required(n, field, "url", "expose")
	return m
}

// local reads a `local:` stand-in: its answers and, for an exposed MCP tool (server), the
// description and input the stand-in server lists.
func (p *parser) local(n *node, field string, server bool) *LocalStandIn {
	l := &LocalStandIn{Line: n.Line, Column: n.Col}
	if !p.strict(n, field, localKeys, func(e *yamltree.Entry, f string) {
		switch e.Key {
		case "description":
			if !server {
				p.at(CodeLocal, f, e.Val, "a lambda or http stand-in answers as the tool itself, with the tool's description and input: leave '%s' out", e.Key)
				return
			}
			l.Description, _ = p.str(e.Val, f)
		case "input":
			if !server {
				p.at(CodeLocal, f, e.Val, "a lambda or http stand-in answers as the tool itself, with the tool's description and input: leave '%s' out", e.Key)
				return
			}
			l.Input = p.inputSchema(e.Val, f)
		case "answers":
			items := p.list(e.Val, f, "must be a list of { whenInput?, result | error }")
			if e.Val.Kind == yamltree.Seq && len(items) == 0 {
				p.at(CodeLocal, f, e.Val, "'%s' lists at least one answer", f)
			}
			for i, it := range items {
				if a, ok := p.answer(it, idx(f, i)); ok {
					l.Answers = append(l.Answers, a)
				}
			}
		}
	}) {
		return l
	}
	if server {
		p.required(n, field, "description", "input", "answers")
	} else {
		p.required(n, field, "answers")
	}
	return l
}

// answer reads one canned answer of a stand-in.
func (p *parser) answer(n *node, field string) (LocalAnswer, bool) {
	a := LocalAnswer{Line: n.Line, Column: n.Col}
	var result, failure bool
	if !p.strict(n, field, answerKeys, func(e *yamltree.Entry, f string) {
		switch e.Key {
		case "whenInput":
			if e.Val.Kind != yamltree.Map {
				p.at(CodeLocal, f, e.Val, "'%s' is a mapping of the arguments the answer is for (matched partially, as a case's mock)", f)
				return
			}
			raw, err := toJSON(e.Val)
			if err == nil {
				err = json.Unmarshal(raw, &a.WhenInput)
			}
			if err != nil {
				p.at(CodeLocal, f, e.Val, "'%s' is not JSON: %v", f, err)
			}
		case "result":
			result = true
			if e.Val.Kind == yamltree.String {
				a.Result = e.Val.Str
				return
			}
			raw, err := toJSON(e.Val)
			if err != nil {
				p.at(CodeLocal, f, e.Val, "'%s' is not JSON: %v", f, err)
				return
			}
			a.Result = string(raw)
		case "error":
			failure = true
			a.Error, _ = p.str(e.Val, f)
		}
	}) {
		return a, false
	}
	if result == failure {
		p.at(CodeLocal, field, n, "an answer has exactly one of 'result' (the tool's result: a string as written, any other value as JSON) and 'error' (an error result's text)")
		return a, false
	}
	return a, true
}

// envName is a POSIX environment variable name.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// auth reads an auth block: the shapes of its values here, what they may be in
// AuthProblems (checks.go, which the tool kinds run too) once the block reads cleanly.
func (p *parser) auth(n *node, field string) *Auth {
	a := &Auth{}
	before := len(p.diags)
	if !p.strict(n, field, authKeys, func(e *yamltree.Entry, f string) {
		switch e.Key {
		case "sigv4":
			a.SigV4 = &SigV4{}
			p.strict(e.Val, f, sigv4Keys, func(x *yamltree.Entry, fx string) {
				switch x.Key {
				case "service":
					a.SigV4.Service, _ = p.str(x.Val, fx)
				case "region":
					a.SigV4.Region, _ = p.str(x.Val, fx)
				}
			})
		case "header":
			a.Header, _ = p.str(e.Val, f)
		case "prefix":
			if e.Val.Kind != yamltree.String {
				p.hinted(CodeAuth, hintAuthPrefix, f, e.Val, "'%s' is a one-line string put before the secret (e.g. \"Bearer \")", f)
				return
			}
			a.Prefix = e.Val.Str
		case "secret":
			a.Secret, _ = p.str(e.Val, f)
		case "secretKey":
			a.SecretKey, _ = p.str(e.Val, f)
		case "env":
			if s, ok := p.str(e.Val, f); ok {
				if !envName.MatchString(s) {
					p.at(CodeAuth, f, e.Val, "'%s' is not an environment variable name", s)
				}
				a.Env = s
			}
		}
	}) || len(p.diags) > before {
		return a
	}
	for _, pr := range AuthProblems(a) {
		p.problem(pr, n, field)
	}
	return a
}

// reservedToolName says why a host tool may not take name, or "".
func reservedToolName(name string) string {
	switch {
	case spec.IsWorkflowToolName(name):
		return "a delegation tool's name (archmax_workflow_<slug>)"
	case spec.IsReservedToolName(name):
		return "reserved: 'archmax_' names the runtime's own tools, and copy_file, move_file and remove_file are built-in"
	case spec.IsEssentialTool(name), name == "write_todos":
		return "a built-in tool's name"
	case name == "eval" || slices.Contains(spec.UngrantableTools, name):
		return "a name the runtime never offers (the kernel refuses it everywhere)"
	}
	return ""
}

// toolNames: every tool the file declares — a lambda or http entry's name, each exposed
// MCP tool's prefix + as/name — is a Bedrock tool name, not reserved, declared once, with a
// sandbox key (tools.<camelCase>) no other tool has.
func (p *parser) toolNames(cfg *Config) {
	byName := map[string]string{}
	byKey := map[string]string{}
	for _, b := range spec.EssentialTools {
		byKey[spec.CamelToolKey(b)] = b
	}
	declare := func(name, field string, line, col int) {
		if why := reservedToolName(name); why != "" {
			p.add(CodeToolReserved, field, line, col, "tool '%s' cannot be declared: %s", name, why)
			return
		}
		if first, dup := byName[name]; dup {
			p.add(CodeToolDuplicate, field, line, col, "tool '%s' is declared twice (first at %s)", name, first)
			return
		}
		key := spec.CamelToolKey(name)
		if other, clash := byKey[key]; clash {
			p.add(CodeToolDuplicate, field, line, col, "tool '%s' has the sandbox key tools.%s, which '%s' already has: rename one", name, key, other)
			return
		}
		byName[name], byKey[key] = field, name
	}
	for i, d := range cfg.Tools {
		field := idx("tools", i)
		switch {
		case d.Kind == KindMCP && d.MCP != nil:
			for j, t := range d.MCP.Expose {
				f := idx(join(join(field, KindMCP), "expose"), j)
				name := d.MCP.ToolName(t)
				if t.Name == "" {
					continue
				}
				if !toolNamePattern.MatchString(name) {
					p.add(CodeToolName, f, t.Line, t.Column, "the model would call this tool '%s', which is not a tool name Bedrock takes (1 to 64 of a-z, A-Z, 0-9, '_' and '-'): give it an 'as' name that is", name)
					continue
				}
				declare(name, f, t.Line, t.Column)
			}
		case d.Name != "" && toolNamePattern.MatchString(d.Name):
			declare(d.Name, join(field, "name"), d.Line, d.Column)
		}
	}
}

// ruleIDPattern is a policy rule's id: dotted lower-case words.
var ruleIDPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*(\.[a-z0-9][a-z0-9_-]*)*$`)

// kernelRuleIDs are the kernel's own rule ids (03 GOV-61): a host rule never takes one, so
// an event's ruleId always says who decided.
var kernelRuleIDs = []string{"zone.governance-plane", "script.skill-only", "tool.reply-only", "tool.eval", "tool.ungrantable",
	"zone.read-only", "zone.runtime-internal", "zone.runtime-managed", "skill.forbidden", "skill.not-allowed",
	"mount.read-only", "mount.forbidden", "mount.not-allowed", "tool.path-argument", "tool.forbidden", "tool.forbidden-here",
	"tool.scratchpad", "tool.offload-read", "tool.allowed", "allow", "tool.not-allowed", "tool.unresolved-variable",
	"transition.requires", "transition.no-edge"}

// Origins a policy rule may name (kernel.Origin values).
var ruleOrigins = []string{"agent", "script", "code", "grader"}

func (p *parser) rule(n *node, field string) PolicyRule {
	r := PolicyRule{Line: n.Line, Column: n.Col}
	if !p.strict(n, field, ruleKeys, func(e *yamltree.Entry, f string) {
		switch e.Key {
		case "id":
			if s, ok := p.str(e.Val, f); ok {
				r.ID = s
				switch {
				case !ruleIDPattern.MatchString(s):
					p.at(CodeRule, f, e.Val, "'%s' is not a rule id: dotted lower-case words (e.g. host.no-script-refunds)", s)
				case slices.Contains(kernelRuleIDs, s):
					p.at(CodeRule, f, e.Val, "'%s' is one of the kernel's own rule ids; a host rule takes its own (e.g. host.%s)", s, strings.ReplaceAll(s, ".", "-"))
				}
			}
		case "effect":
			if e.Val.Kind != yamltree.String || (e.Val.Str != EffectBlock && e.Val.Str != EffectAllow) {
				p.at(CodeRule, f, e.Val, "'%s' is block (refuse the call) or allow (admit it without the state's grants)", f)
				return
			}
			r.Effect = e.Val.Str
		case "tools":
			r.Tools = p.strings(e.Val, f)
		case "workflows":
			r.Workflows = p.strings(e.Val, f)
			for i, w := range r.Workflows {
				if !spec.IsSlug(w) {
					p.at(CodeRule, idx(f, i), e.Val.Items[i], "'%s' is not a workflow slug", w)
				}
			}
		case "origins":
			r.Origins = p.strings(e.Val, f)
			for i, o := range r.Origins {
				if !slices.Contains(ruleOrigins, o) {
					p.at(CodeRule, idx(f, i), e.Val.Items[i], "'%s' is not an origin: agent (the model), script (an agent script), code (a code state) or grader", o)
				}
			}
		case "states":
			r.States = p.strings(e.Val, f)
		case "paths":
			r.Paths = p.globs(e.Val, f)
		case "args":
			if e.Val.Kind != yamltree.Map || len(e.Val.Entries) == 0 {
				p.at(CodeType, f, e.Val, "'%s' must be a mapping of argument name to a glob or a list of globs", f)
				return
			}
			for _, a := range e.Val.Entries {
				r.Args = append(r.Args, spec.ArgGuard{Name: a.Key, Globs: p.globs(a.Val, join(f, a.Key))})
			}
		case "reason":
			r.Reason, _ = p.str(e.Val, f)
		}
	}) {
		return r
	}
	p.required(n, field, "id", "effect", "tools")
	switch {
	case r.Effect == EffectBlock && r.Reason == "" && n.Entry("reason") == nil:
		p.at(CodeRequired, join(field, "reason"), n, "a block rule says why in 'reason': the caller reads it")
	case r.Effect == EffectAllow && r.Reason != "":
		p.at(CodeRule, join(field, "reason"), n.Get("reason"), "an allow rule refuses nothing: 'reason' is for block rules")
	}
	if slices.Contains(r.Tools, spec.ForbidAnyTool) && len(r.Tools) > 1 {
		p.at(CodeRule, join(field, "tools"), n.Get("tools"), "'*' already names every tool")
	}
	return r
}

// globs reads one glob or a non-empty list of them, workspace-relative, with well-formed
// ${{ }} references.
func (p *parser) globs(n *node, field string) []string {
	var items []*node
	switch n.Kind {
	case yamltree.String:
		items = []*node{n}
	case yamltree.Seq:
		items = n.Items
		if len(items) == 0 {
			p.at(CodeType, field, n, "'%s' must list at least one glob", field)
		}
	default:
		p.at(CodeType, field, n, "'%s' must be a glob or a list of globs", field)
		return nil
	}
	var out []string
	for i, it := range items {
		f := field
		if n.Kind == yamltree.Seq {
			f = idx(field, i)
		}
		if it.Kind != yamltree.String || it.Str == "" {
			p.at(CodeType, f, it, "'%s' must be a non-empty glob string", f)
			continue
		}
		if _, bad := spec.ParseReferences(it.Str); bad != nil {
			p.at(CodeRule, f, it, "'%s' is not a valid variable reference — use ${{name}} or ${{name.path.to.value}}", bad.Ref)
		}
		if strings.HasPrefix(it.Str, "/") && field != "" && !strings.Contains(field, ".args.") {
			p.at(CodeRule, f, it, "'%s' starts with '/'; path globs are workspace-relative (e.g. 'contracts/**')", it.Str)
		}
		out = append(out, it.Str)
	}
	return out
}

func (p *parser) ruleIDs(cfg *Config) {
	seen := map[string]int{}
	for i, r := range cfg.PolicyRules {
		if r.ID == "" {
			continue
		}
		if first, dup := seen[r.ID]; dup {
			p.add(CodeRule, join(idx("policyRules", i), "id"), r.Line, r.Column, "rule id '%s' is taken by policyRules.%d: ids name one rule each", r.ID, first)
			continue
		}
		seen[r.ID] = i
	}
}

// reservedMountRoots are the workspace root names no host mount may take (its first
// segment, ignoring case): the session areas, the authoring plane, the default mounts and
// the host file itself (01 §6.5, GOV-59).
var reservedMountRoots = append(append([]string{spec.AuthoringPrefix, File}, spec.SessionAreaNames...), spec.DefaultMountRoots...)

// s3Bucket is S3's bucket-name grammar (general purpose buckets).
var s3Bucket = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)

func (p *parser) mount(n *node, field string) MountDecl {
	m := MountDecl{ReadOnly: true, Line: n.Line, Column: n.Col}
	if !p.strict(n, field, mountKeys, func(e *yamltree.Entry, f string) {
		m.setPos(e.Key, e.Val.Line, e.Val.Col)
		switch e.Key {
		case "name":
			if s, ok := p.str(e.Val, f); ok {
				m.Name = s
				if !mountName(s) {
					p.at(CodeMount, f, e.Val, "'%s' is not a mount name: no leading or trailing '/', no empty, '.' or '..' segment, none of * ? [ ] { }", s)
					return
				}
				first, _, _ := strings.Cut(s, "/")
				if spec.ReservedName(first, reservedMountRoots...) {
					p.at(CodeMount, f, e.Val, "mount '%s' would take '%s', which the workspace root reserves (the session areas, workflows/, skills/, .platform/, AGENTS.md and %s)", s, first, File)
				}
			}
		case "s3":
			if s, ok := p.str(e.Val, f); ok {
				m.S3 = s
			}
		case "dir":
			if s, ok := p.str(e.Val, f); ok {
				m.Dir = s
				if strings.ContainsRune(s, 0) {
					p.at(CodeMount, f, e.Val, "'%s' is not a directory path", f)
				}
			}
		case "file":
			m.File = p.boolean(e.Val, f)
		case "readOnly":
			m.ReadOnly = p.boolean(e.Val, f)
		case "governed":
			m.Governed = p.boolean(e.Val, f)
		case "searchable":
			m.Unsearchable = !p.boolean(e.Val, f)
		}
	}) {
		return m
	}
	p.required(n, field, "name")
	if m.S3 == "" && m.Dir == "" {
		p.at(CodeRequired, field, n, "a mount is served by 's3' (s3://bucket/prefix/, on AWS), 'dir' (a directory, locally) or both")
	}
	if m.S3 != "" {
		bucket, key, ok := m.S3Location()
		switch {
		case !ok || !s3Bucket.MatchString(bucket) || strings.Contains(bucket, ".."):
			p.at(CodeMount, join(field, "s3"), n.Get("s3"), "%q is not s3://<bucket>/<prefix>/", m.S3)
		case key == "" || key == "/":
			p.at(CodeMount, join(field, "s3"), n.Get("s3"), "%q mounts a whole bucket: name a prefix (s3://%s/<prefix>/)", m.S3, bucket)
		case m.File && strings.HasSuffix(key, "/"):
			p.at(CodeMount, join(field, "s3"), n.Get("s3"), "a file mount names one object: %q ends in '/'", m.S3)
		case !m.File && !strings.HasSuffix(key, "/"):
			p.at(CodeMount, join(field, "s3"), n.Get("s3"), "a folder mount names a prefix ending in '/' (%s/), or say 'file: true'", m.S3)
		case strings.Contains("/"+key, "/../") || strings.Contains("/"+key, "/./") || strings.Contains(key, "//"):
			p.at(CodeMount, join(field, "s3"), n.Get("s3"), "%q has an empty, '.' or '..' segment", m.S3)
		}
	}
	if m.File && m.Unsearchable {
		p.at(CodeMount, join(field, "searchable"), n.Get("searchable"), "a file mount is never searched: 'searchable' is for folder mounts")
	}
	return m
}

// mountName is the mount-name grammar of spec 01 §6.6.
func mountName(s string) bool {
	if s == "" || s != strings.TrimSpace(s) || strings.ContainsAny(s, "*?[]{}\\") || strings.HasPrefix(s, "/") || strings.HasSuffix(s, "/") {
		return false
	}
	for _, seg := range strings.Split(s, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// mountNames: no two mounts share a name, and none lies inside a file mount.
func (p *parser) mountNames(cfg *Config) {
	for i, m := range cfg.Mounts {
		for j := range i {
			o := cfg.Mounts[j]
			switch {
			case m.Name == "" || o.Name == "":
			case m.Name == o.Name:
				p.add(CodeMount, join(idx("mounts", i), "name"), m.Line, m.Column, "mount '%s' is declared twice (first at mounts.%d)", m.Name, j)
			case o.File && strings.HasPrefix(m.Name, o.Name+"/"), m.File && strings.HasPrefix(o.Name, m.Name+"/"):
				p.add(CodeMount, join(idx("mounts", i), "name"), m.Line, m.Column, "mounts '%s' and '%s': nothing lies below a file mount", o.Name, m.Name)
			}
		}
	}
}
