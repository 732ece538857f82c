package spec

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/archmax-ai/archmax/core/yamltree"
)

// Parse reads one workflow.yaml (spec 01 §1.9, §2, §3, §4.1–§4.4, §8.1) and returns
// the parsed spec with every load-blocking finding, each carrying Field, Line and
// Column (never stopping at the first). It runs the strict schema and then — only
// when the shape held — the document rules of refineSpec (§8.1): states non-empty
// transition and on_error targets exist (V-16, V-17), one edge per target
// (P-08), script required on code states and refused elsewhere (CS-01, V-05, V-06),
// well-formed guard references, no "*" in a grant, at least one
// trigger, no trigger id declared twice, tests.maxConcurrency ≤ 1
// (V-20). Lint findings are not reported here.
//
// The spec is nil only when there is nothing parseable: a YAML parse failure, an
// empty document, a non-mapping root ("spec.not-a-mapping") or a refused alias
// expansion ("yaml.alias-expansion"). Otherwise it is returned even beside schema
// errors, as the best-effort reading a validator can keep inspecting; only a spec
// whose diagnostics hold no error is fit to run (use Load for that).
func Parse(file string, src []byte) (*MachineSpec, []Diagnostic) {
	s, diags, _, _ := parse(file, src)
	return s, diags
}

// parse is Parse that also reports whether the shape held (no schema finding) and, when it
// did not, the schema findings alone (the scopes the later phases stay out of).
func parse(file string, src []byte) (_ *MachineSpec, _ []Diagnostic, shape bool, schemaOnly []Diagnostic) {
	l := &loader{file: file, pos: map[string]*node{}}
	root := l.decode(src)
	if root == nil {
		return nil, l.diags, false, l.diags
	}
	s := l.machine(root)
	s.doc = governingDoc(root)
	s.docStates = stateEntries(s.doc)
	schema := len(l.diags)
	l.documentRules(s)
	if schema == 0 {
		return s, l.diags, true, nil
	}
	// The shape failed: the document rules ran on what the schema could read, so one run
	// reports them too, but not where a schema finding already stands (§8.1 requirement 1).
	schemaOnly = l.diags[:schema:schema]
	return s, append(schemaOnly, outsideScopes(schemaOnly, l.diags[schema:])...), false, schemaOnly
}

// outsideScopes keeps the findings no schema finding makes unreliable (V10-8). An unknown
// key is skipped and everything beside it was read, so it spoils nothing; any other schema
// finding spoils its own field and what lies under it; a state whose type or shape could not
// be read spoils everything said of that state; unreadable triggers spoil the rules over all
// states (an entry, unique trigger ids); unreadable edges spoil the graph analysis.
func outsideScopes(schema, findings []Diagnostic) []Diagnostic {
	var covers []string
	brokenStates := map[string]bool{}
	wholeStates, graph := false, false
	for _, d := range schema {
		if d.Code == "schema.unknown-key" || d.Code == "legacy.hooks-removed" || d.Code == "spec.name-key" {
			continue
		}
		covers = append(covers, d.Field)
		segs := strings.Split(d.Field, ".")
		if segs[0] != "states" {
			continue
		}
		switch {
		case len(segs) == 1:
			wholeStates, graph = true, true
		case len(segs) == 2 || segs[2] == "type":
			brokenStates[segs[1]], wholeStates, graph = true, true, true
		case segs[2] == "triggers":
			wholeStates, graph = true, true
		case segs[2] == "transitions" || segs[2] == "on_error":
			graph = true
		}
	}
	var out []Diagnostic
	for _, d := range findings {
		segs := strings.SplitN(d.Field, ".", 3)
		switch {
		case slices.ContainsFunc(covers, func(c string) bool { return d.Field == c || strings.HasPrefix(d.Field, c+".") }):
		case segs[0] == "states" && len(segs) > 1 && brokenStates[segs[1]]:
		case d.Field == "states" && wholeStates:
		case graph && (d.Code == "state.unreachable" || d.Code == "state.no-terminal-path"):
		default:
			out = append(out, d)
		}
	}
	return out
}

// SpecValidation is ValidateSpec's answer (spec 01 §8.1 validateSpec). OK: the shape and
// the document rules held, so the spec loads. Spec is present whenever the shape held (even
// beside a document-rule error). Schema holds the schema and document-rule findings (all
// errors), Lint the lint phase's, Diagnostics both in that order, each with its fix hint.
// When the shape fails, the document rules and the lint phase still run on what the schema
// could read, reporting nothing in a state (or root key) that holds a schema finding.
type SpecValidation struct {
	OK   bool
	Spec *MachineSpec
	// Partial is the spec as far as it parsed — Spec when the shape held, else what the
	// schema could read beside its findings; nil only when the document is not a YAML
	// mapping. Workspace checks (package validate) run on it so one run reports them too.
	Partial     *MachineSpec
	Schema      []Diagnostic
	Lint        []Diagnostic
	Diagnostics []Diagnostic
}

// Valid reports whether Diagnostics holds no error: what makes `archmax validate` pass.
func (v SpecValidation) Valid() bool {
	for _, d := range v.Diagnostics {
		if d.Severity == sevError {
			return false
		}
	}
	return true
}

// ValidateSpec is the total validation of one workflow.yaml (spec 01 §8.1 requirement 1):
// it never stops at the first problem and never panics — the YAML bounds (§2.13), the
// strict schema (phase S), the document rules (X) and the lint phase with the graph
// analysis (L), each finding with severity, §8.3 code, dotted field, file, line and column.
// The loader (Load) runs the same S and X phases, so the runtime and `archmax validate`
// always agree on what loads; L errors fail validation but never block loading (§8.1 item 3).
func ValidateSpec(file string, src []byte) SpecValidation {
	s, schema, shape, schemaOnly := parse(file, src)
	v := SpecValidation{Schema: WithHints(schema), Partial: s}
	switch {
	case shape:
		v.Spec = s
		v.OK = !slices.ContainsFunc(schema, func(d Diagnostic) bool { return d.Severity == sevError })
		v.Lint = WithHints(Lint(s, file))
	case s != nil:
		// lint what the schema could read, outside the scopes it refused (requirement 1)
		v.Lint = WithHints(outsideScopes(schemaOnly, Lint(s, file)))
	}
	v.Diagnostics = append(append([]Diagnostic(nil), v.Schema...), v.Lint...)
	return v
}

// Load parses a workflow that must be usable (spec 01 §1.9, V-30): any error
// diagnostic — including an empty or non-mapping document — yields a
// *WorkflowLoadError for workflow slug naming file, and no spec.
func Load(slug, file string, src []byte) (*MachineSpec, error) {
	s, diags := Parse(file, src)
	for _, d := range diags {
		if d.Severity == sevError {
			return nil, &WorkflowLoadError{Workflow: slug, File: file, Diagnostics: diags}
		}
	}
	return s, nil
}

// --- The YAML tree ------------------------------------------------------------

// node and entry are the expanded YAML tree (§2.13) that core/yamltree builds: aliases
// expanded within the bound, merge keys applied, the YAML 1.2 core schema, positions.
type (
	node  = yamltree.Node
	entry = yamltree.Entry
)

// decode strips carriage returns before a newline or at the end (§1.9; yamltree does
// the former), parses the one YAML document a file holds (§2.13 rule 1) and expands it.
// It returns nil, with the finding recorded, when the input is not a single YAML
// mapping or its aliases expand past the bound.
func (l *loader) decode(src []byte) *node {
	root, refusal := yamltree.Decode(bytes.TrimSuffix(src, []byte("\r")), yamltree.Options{Report: l.yamlFinding})
	if refusal == nil {
		return root
	}
	if refusal.Reason != yamltree.Refused { // a refused expansion is already reported
		line := 0
		if refusal.Reason == yamltree.SyntaxError || refusal.Reason == yamltree.NotMapping {
			line = refusal.Line
		}
		d := Diagnostic{Severity: sevError, Code: "spec.not-a-mapping",
			Message: fmt.Sprintf("invalid machine spec at %s (expected a YAML mapping)", l.file), File: l.file, Line: line}
		if refusal.Reason == yamltree.SyntaxError {
			d.Code, d.Message = "yaml.syntax", fmt.Sprintf("invalid machine spec at %s (expected a YAML mapping): %s", l.file,
				strings.TrimPrefix(refusal.Err.Error(), "yaml: "))
		}
		if bad := invalidUTF8(src); bad != nil {
			d = *bad
			d.File = l.file
		}
		l.diags = append(l.diags, d)
	}
	return nil
}

// invalidUTF8 locates the first byte of src that is not UTF-8 (a YAML file is text, §1.9),
// or returns nil.
func invalidUTF8(src []byte) *Diagnostic {
	if utf8.Valid(src) {
		return nil
	}
	line, col := 1, 1
	for i := 0; i < len(src); {
		r, n := utf8.DecodeRune(src[i:])
		if r == utf8.RuneError && n <= 1 {
			return &Diagnostic{Severity: sevError, Code: "yaml.encoding", Line: line, Column: col,
				Message: fmt.Sprintf("the file is not UTF-8 text: byte 0x%02x at line %d, column %d; save it as UTF-8", src[i], line, col)}
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
		i += n
	}
	return nil
}

// yamlFinding records what the tree refused (§2.13 rules 3–5 and merge keys). A repeated
// key is located at its second occurrence and named by its own path (P-01).
func (l *loader) yamlFinding(f yamltree.Finding) {
	var code, msg string
	field := f.Path
	switch f.Problem {
	case yamltree.AliasBomb:
		code, msg = "yaml.alias-expansion", "aliases expand this document far beyond its source size; refusing it (alias bomb?)"
	case yamltree.AliasCycle:
		code, msg = "yaml.alias-expansion", fmt.Sprintf("alias '*%s' refers to a node that contains it", f.Name)
	case yamltree.DuplicateKey:
		code, msg, field = "yaml.duplicate-key",
			fmt.Sprintf("key %q is repeated in this mapping (first at line %d); a mapping cannot repeat a key", f.Name, f.FirstLine), join(f.Path, f.Name)
	case yamltree.NonStringKey:
		code, msg = "yaml.non-string-key", fmt.Sprintf("mapping keys must be strings; quote the key %q", f.Name)
	case yamltree.BadMerge:
		code, msg = "yaml.merge", "a merge key '<<' takes a mapping or a list of mappings"
	}
	l.fail(code, field, f.Line, f.Col, msg)
}

// governingDoc is the document specHash and the snapshot cover (§9.1 steps 1–2):
// null states read as {}, metadata removed at the root and on every state.
func governingDoc(root *node) *node {
	doc := &node{Kind: yamltree.Map, Line: root.Line, Col: root.Col}
	for _, e := range root.Entries {
		switch e.Key {
		case "metadata":
			continue
		case "states":
			if e.Val.Kind == yamltree.Map {
				states := &node{Kind: yamltree.Map, Line: e.Val.Line, Col: e.Val.Col}
				for _, se := range e.Val.Entries {
					st := &node{Kind: yamltree.Map, Line: se.Val.Line, Col: se.Val.Col}
					switch se.Val.Kind {
					case yamltree.Null:
					case yamltree.Map:
						for _, ke := range se.Val.Entries {
							if ke.Key != "metadata" {
								st.Entries = append(st.Entries, ke)
							}
						}
					default:
						st = se.Val
					}
					states.Entries = append(states.Entries, entry{Key: se.Key, Line: se.Line, Col: se.Col, Val: st})
				}
				e.Val = states
			}
		}
		doc.Entries = append(doc.Entries, e)
	}
	return doc
}

// --- The schema ---------------------------------------------------------------

// loader walks the expanded tree through the strict schema, collecting diagnostics.
type loader struct {
	file  string
	diags []Diagnostic
	pos   map[string]*node // field → node, for positions the document rules report
}

func (l *loader) fail(code, field string, line, col int, msg string) {
	l.diags = append(l.diags, Diagnostic{Severity: sevError, Code: code, Field: field,
		Message: msg, File: l.file, Line: line, Column: col})
}

func (l *loader) failAt(code, field string, n *node, msg string) {
	if n == nil { // a document rule over a spec whose shape failed: the node may be missing
		l.fail(code, field, 0, 0, msg)
		return
	}
	l.fail(code, field, n.Line, n.Col, msg)
}

func join(field, key string) string { return yamltree.Join(field, key) }

func idx(field string, i int) string { return field + "." + strconv.Itoa(i) }

// Shared messages (spec 01 §2.1, §3.4, §4.1, §4.4, §4.9).
const (
	msgNonEmpty   = "must be a non-empty string"
	msgPositive   = "must be a positive number"
	msgTransition = "must be a non-empty string: it is the only thing the agent is told about this edge — " +
		"no attribute of the target state is disclosed to it — so an undescribed edge cannot be chosen. " +
		"Say when to take it (e.g. 'Refunds over $50'), not where it goes."
	msgModelID = "must be a model id string (e.g. 'anthropic.claude-sonnet-4'). Only the id is declared in a " +
		"workflow: the endpoint, credentials and sampling settings (temperature, max tokens) belong to the " +
		"assembly's configuration."
	msgTriggers = "must be a mapping of trigger id to its declaration (e.g. 'triggers: { manual: }', " +
		"or an id with a 'session' path under it)."
	msgVariable    = "is not a valid run-variable name. Use lowercase letters, digits and underscores, starting with a letter (e.g. 'order_id')."
	msgEntryName   = "a signature entry needs a 'name' naming its variable (e.g. '{ name: order_id, type: string }')"
	msgMountGrant  = "must be a mount name, or '{ mount: <name>, access: read | read_write }' to name the access this level gives"
	msgScriptPath  = "must be a path inside the workflow's 'scripts/' directory ending in .js or .mjs (e.g. 'scripts/check-totals.js'), with no '..', '.' or empty segment and no '\\'"
	msgSessionPath = "must be a dotted path string (e.g. 'conversation_id' or 'triggers.-1.conversationId')."
	msgMessagePath = "must be a dotted path string (e.g. 'triggers.-1.text'), or false when firings carry no message."
	msgWildcard    = "'*' is not a tool name a grant may use: a grant names each tool a state may call, one by one; " +
		"the every-tool wildcard only denies, in a 'forbid' or 'forbid_always' entry."
)

// legacyKeys are the hook-era keys 1.0 removed (§0.3, V-21), with migration text.
var legacyKeys = map[string]string{
	"before": "'before' hooks were removed in 1.0: put a 'type: code' state (a script) or a 'type: grader' " +
		"state (a judge) in front of this state and route through it.",
	"after": "'after' hooks were removed in 1.0: route this state's transitions through a 'type: code' " +
		"state (a script) or a 'type: grader' state (a judge) behind it.",
	"rubric": "rubrics were removed in 1.0: judge the work in a 'type: grader' state whose instructions hold the criteria.",
}

// rootHints extend the unknown-key message for root keys authors commonly carry over.
var rootHints = map[string]string{
	"name":        " The workflow's display name is 'title:' (and its standing direction 'instructions:').",
	"description": " Standing direction for the whole session is 'instructions:' (and the display name 'title:').",
	"policy":      " Denials moved to 'tools.forbid_always'.",
	"triggers":    " Triggers are declared under a state's 'triggers:'.",
}

// unknownKey reports a key a strict object does not take (V-01): the hook-era keys
// with migration text (V-21), the root's name/description with their rename (V-02), any
// other with a "did you mean" hint when one of the keys the mapping takes is close.
func (l *loader) unknownKey(field string, e entry, known []string) {
	switch {
	case legacyKeys[e.Key] != "":
		l.fail("legacy.hooks-removed", join(field, e.Key), e.Line, e.Col, legacyKeys[e.Key])
	case field == "" && rootHints[e.Key] != "":
		code := "schema.unknown-key"
		if e.Key == "name" || e.Key == "description" {
			code = "spec.name-key"
		}
		l.fail(code, field, e.Line, e.Col, fmt.Sprintf("Unrecognized key: %q.", e.Key)+rootHints[e.Key])
	default:
		l.fail("schema.unknown-key", field, e.Line, e.Col, fmt.Sprintf("Unrecognized key: %q", e.Key))
		l.diags[len(l.diags)-1].Hint = keyHint(e.Key, known)
	}
}

// mapping reports a non-mapping value and tells the caller whether to descend.
func (l *loader) mapping(n *node, field, msg string) bool {
	if n.Kind == yamltree.Map {
		return true
	}
	l.failAt("schema.type", field, n, msg)
	return false
}

// str reads any string.
func (l *loader) str(n *node, field string) string {
	if n.Kind != yamltree.String {
		l.failAt("schema.type", field, n, "must be a string")
	}
	return n.Str
}

// nonEmpty reads a string whose trim is not empty (§2.1); msg replaces the default.
func (l *loader) nonEmpty(n *node, field, code, msg string) string {
	if n.Kind != yamltree.String || JSTrim(n.Str) == "" {
		l.failAt(code, field, n, msg)
	}
	return n.Str
}

func isInt(n *node) bool {
	return n.Kind == yamltree.Number && n.Num == math.Trunc(n.Num) && math.Abs(n.Num) <= 1<<53
}

// positive reads a positive integer (§2.1).
func (l *loader) positive(n *node, field string) int {
	if !isInt(n) || n.Num <= 0 {
		l.failAt("schema.positive", field, n, msgPositive)
		return 0
	}
	return int(n.Num)
}

// modelID reads a model id (§2.1, R-11).
func (l *loader) modelID(n *node, field string) string {
	switch {
	case n.Kind != yamltree.String:
		l.failAt("schema.model-id", field, n, msgModelID)
	case JSTrim(n.Str) == "":
		l.failAt("schema.model-id", field, n, msgNonEmpty)
	}
	return n.Str
}

// stringList reads a list of strings, passing each to check (when non-nil) for further
// rules; listMsg is the refusal for a value that is not a list.
func (l *loader) stringList(n *node, field, listMsg string, check func(s string, it *node, f string) bool) []string {
	if n.Kind != yamltree.Seq {
		l.failAt("schema.type", field, n, listMsg)
		return nil
	}
	out := make([]string, 0, len(n.Items))
	for i, it := range n.Items {
		f := idx(field, i)
		if it.Kind != yamltree.String {
			l.failAt("schema.type", f, it, "must be a string")
			continue
		}
		if check == nil || check(it.Str, it, f) {
			out = append(out, it.Str)
		}
	}
	return out
}

// text renders a value the way a refusal quotes it (JavaScript String(v)).
func text(n *node) string {
	switch n.Kind {
	case yamltree.String:
		return n.Str
	case yamltree.Number:
		return FormatJSNumber(n.Num)
	case yamltree.Bool:
		return strconv.FormatBool(n.Truth)
	case yamltree.Null:
		return "null"
	}
	return string(appendJSON(nil, n, false))
}

// plain converts a value to encoding/json-style Go data for Metadata and Extra.
func plain(n *node) any {
	switch n.Kind {
	case yamltree.String:
		return n.Str
	case yamltree.Number:
		return n.Num
	case yamltree.Bool:
		return n.Truth
	case yamltree.Seq:
		out := make([]any, len(n.Items))
		for i, it := range n.Items {
			out[i] = plain(it)
		}
		return out
	case yamltree.Map:
		out := make(map[string]any, len(n.Entries))
		for _, e := range n.Entries {
			out[e.Key] = plain(e.Val)
		}
		return out
	}
	return nil
}

// metadata reads a loose host mapping (§2.11).
func (l *loader) metadata(n *node, field string) map[string]any {
	if !l.mapping(n, field, "must be a mapping") {
		return nil
	}
	return plain(n).(map[string]any)
}

// machine reads the root mapping (§2.1) with defaults applied.
func (l *loader) machine(root *node) *MachineSpec {
	maxPtc := defaultMaxPtcCalls
	s := &MachineSpec{
		Runtime: Runtime{Version: defaultRuntimeVersion},
		Settings: Settings{TimeoutMs: defaultTimeoutMs, MemoryLimitBytes: defaultMemoryLimitBytes,
			MaxPtcCalls: &maxPtc, MaxResultChars: defaultMaxResultChars},
		Tests: TestsConfig{CaseTimeoutMs: defaultCaseTimeoutMs, MaxConcurrency: defaultMaxConcurrency},
	}
	var states *node
	for _, e := range root.Entries {
		v := e.Val
		switch e.Key {
		case "title":
			s.Title = l.str(v, e.Key)
		case "instructions":
			s.Instructions = l.nonEmpty(v, e.Key, "schema.non-empty", msgNonEmpty)
		case "disabled":
			s.Disabled = l.disabled(v)
		case "runtime":
			l.runtime(v, &s.Runtime)
		case "settings":
			l.settings(v, &s.Settings)
		case "tests":
			l.tests(v, &s.Tests)
		case "tools":
			s.Tools = l.tools(v, e.Key, "allow_always", "forbid_always")
		case "skills":
			s.Skills = l.skills(v, e.Key, "allow_always", "forbid_always")
		case "mounts":
			s.Mounts = l.mounts(v, e.Key, "allow_always", "forbid_always")
		case "extensions":
			l.extensions(v)
		case "metadata":
			s.Metadata = l.metadata(v, e.Key)
		case "states":
			states = v
		default:
			l.unknownKey("", e, rootKeys)
		}
	}
	const missing = "Machine spec is missing or has empty 'states'"
	switch {
	case states == nil:
		l.failAt("spec.states-empty", "states", root, missing)
	case states.Kind != yamltree.Map:
		l.failAt("spec.states-empty", "states", states, missing)
	default:
		l.pos["states"] = states
		s.bySlug = make(map[string]*State, len(states.Entries))
		for _, e := range states.Entries {
			st := l.state(e)
			s.States = append(s.States, st)
			s.bySlug[st.Slug] = st
		}
	}
	return s
}

// disabled reads `disabled` fail-closed (§2.12, V-33): absent, null and false leave
// the workflow running, every other value disables it; a non-boolean is an error.
func (l *loader) disabled(n *node) bool {
	if n.Kind == yamltree.Bool {
		return n.Truth
	}
	l.failAt("spec.disabled", "disabled", n, fmt.Sprintf(
		"must be a boolean (true or false); got %s, which the runtime reads fail-closed as disabled, "+
			"so this workflow starts no new turns. Write 'disabled: true' to mean it, or remove the key.",
		appendJSON(nil, n, false)))
	return n.Kind != yamltree.Null
}

// runtime reads `runtime` (§2.4): strict { engine?: string, version?: string | number }.
func (l *loader) runtime(n *node, rt *Runtime) {
	if !l.mapping(n, "runtime", "must be a mapping '{ engine?, version? }'") {
		return
	}
	for _, e := range n.Entries {
		f := join("runtime", e.Key)
		switch e.Key {
		case "engine":
			rt.Engine = l.str(e.Val, f)
		case "version":
			switch e.Val.Kind {
			case yamltree.String:
				rt.Version = e.Val.Str
			case yamltree.Number:
				rt.Version = FormatJSNumber(e.Val.Num)
			default:
				l.failAt("schema.type", f, e.Val, "must be a string or a number")
			}
		default:
			l.unknownKey("runtime", e, runtimeKeys)
		}
	}
}

// settings reads `settings` (§2.5, P-14).
func (l *loader) settings(n *node, st *Settings) {
	if !l.mapping(n, "settings", "must be a mapping") {
		return
	}
	for _, e := range n.Entries {
		f, v := join("settings", e.Key), e.Val
		switch e.Key {
		case "model":
			st.Model = l.modelID(v, f)
		case "timeoutMs":
			if ms := l.positive(v, f); ms > maxTimeoutMs {
				l.failAt("settings.timeout-max", f, v, fmt.Sprintf("must be at most %d (10 minutes)", maxTimeoutMs))
			} else if ms > 0 {
				st.TimeoutMs = ms
			}
		case "memoryLimitBytes":
			if b := l.positive(v, f); b > 0 {
				st.MemoryLimitBytes = int64(b)
			}
		case "maxPtcCalls":
			switch {
			case v.Kind == yamltree.Null:
				st.MaxPtcCalls = nil
			case isInt(v) && v.Num >= 0:
				calls := int(v.Num)
				st.MaxPtcCalls = &calls
			default:
				l.failAt("schema.type", f, v, "must be a whole number of at least 0, or null for no limit")
			}
		case "maxResultChars":
			if c := l.positive(v, f); c > 0 {
				st.MaxResultChars = c
			}
		case "prompt_cache":
			st.PromptCache = l.promptCache(v, f)
		default:
			l.unknownKey("settings", e, settingsKeys)
		}
	}
}

func (l *loader) promptCache(n *node, field string) *PromptCache {
	if !l.mapping(n, field, "must be a mapping '{ enabled?, ttl? }'") {
		return nil
	}
	pc := &PromptCache{}
	for _, e := range n.Entries {
		f := join(field, e.Key)
		switch e.Key {
		case "enabled":
			if e.Val.Kind != yamltree.Bool {
				l.failAt("schema.type", f, e.Val, "must be true or false")
				continue
			}
			on := e.Val.Truth
			pc.Enabled = &on
		case "ttl":
			if e.Val.Kind != yamltree.String || (e.Val.Str != "5m" && e.Val.Str != "1h") {
				l.failAt("settings.prompt-cache-ttl", f, e.Val, fmt.Sprintf("must be '5m' or '1h'; got %s", appendJSON(nil, e.Val, false)))
				continue
			}
			pc.TTL = e.Val.Str
		default:
			l.unknownKey(field, e, promptCacheKeys)
		}
	}
	return pc
}

// tests reads `tests` (§2.6, V-19); maxConcurrency > 1 is a document rule (V-20).
func (l *loader) tests(n *node, tc *TestsConfig) {
	if !l.mapping(n, "tests", "must be a mapping") {
		return
	}
	for _, e := range n.Entries {
		f, v := join("tests", e.Key), e.Val
		switch e.Key {
		case "caseTimeoutMs":
			if ms := l.positive(v, f); ms > 0 {
				tc.CaseTimeoutMs = ms
			}
		case "maxConcurrency":
			l.pos[f] = v
			if c := l.positive(v, f); c > 0 {
				tc.MaxConcurrency = c
			}
		case "judge":
			tc.Judge = l.judge(v, f)
		default:
			l.unknownKey("tests", e, testsKeys)
		}
	}
}

func (l *loader) judge(n *node, field string) *JudgeConfig {
	if !l.mapping(n, field, "must be a mapping '{ model?, modelOptions? }'") {
		return nil
	}
	j := &JudgeConfig{}
	for _, e := range n.Entries {
		f := join(field, e.Key)
		switch e.Key {
		case "model":
			j.Model = l.str(e.Val, f)
		case "modelOptions":
			if !l.mapping(e.Val, f, "must be a mapping '{ temperature?, maxTokens? }'") {
				continue
			}
			for _, o := range e.Val.Entries {
				of := join(f, o.Key)
				switch o.Key {
				case "temperature":
					if o.Val.Kind != yamltree.Number || !(o.Val.Num >= 0) {
						l.failAt("schema.type", of, o.Val, "must be a number of at least 0")
						continue
					}
					t := o.Val.Num
					j.Temperature = &t
				case "maxTokens":
					if m := l.positive(o.Val, of); m > 0 {
						j.MaxTokens = &m
					}
				default:
					l.unknownKey(f, o, modelOptionsKeys)
				}
			}
		default:
			l.unknownKey(field, e, judgeKeys)
		}
	}
	return j
}

// extensions reads `extensions`: strict with no members in 1.0 (§2.10).
func (l *loader) extensions(n *node) {
	if !l.mapping(n, "extensions", "must be a mapping") {
		return
	}
	for _, e := range n.Entries {
		if e.Key == "hooks" {
			l.fail("legacy.hooks-removed", "extensions.hooks", e.Line, e.Col,
				"custom hook kinds were removed in 1.0: run custom checks in a 'type: code' state, or judge in a 'type: grader' state.")
			continue
		}
		l.unknownKey("extensions", e, nil)
	}
}

// state reads one state (§3); a null value is an empty agent state (§2.3).
func (l *loader) state(se entry) *State {
	f := "states." + se.Key
	st := &State{Slug: se.Key, Type: typeAgent, Line: se.Line, Column: se.Col}
	n := se.Val
	if n.Kind == yamltree.Null || !l.mapping(n, f, "must be a mapping of state keys (or empty, for a bare terminal state)") {
		return st
	}
	for _, e := range n.Entries {
		kf, v := join(f, e.Key), e.Val
		switch e.Key {
		case "type":
			switch t := text(v); {
			case v.Kind == yamltree.String && (t == typeAgent || t == typeHuman || t == typeCode || t == typeGrader):
				st.Type = t
			default:
				l.failAt("state.type-invalid", kf, v, fmt.Sprintf("unknown state type '%s' (expected 'agent', 'human', 'code' or 'grader')", t))
			}
		case "title":
			st.Title = l.nonEmpty(v, kf, "schema.non-empty", msgNonEmpty)
		case "instructions":
			st.Instructions = l.str(v, kf)
		case "summary":
			st.Summary = l.str(v, kf)
		case "evidence":
			st.Evidence = l.evidence(v, kf)
		case "approvers":
			st.Approvers = l.stringList(v, kf, "must be a list of strings", nil)
		case "triggers":
			st.Triggers = l.triggers(v, kf, se.Key)
		case "budget":
			st.Budget = l.budget(v, kf)
		case "model":
			st.Model = l.modelID(v, kf)
		case "on_error":
			l.pos[kf] = v
			st.OnError = l.nonEmpty(v, kf, "schema.non-empty", msgNonEmpty)
		case "tools":
			st.Tools = l.tools(v, kf, "allow", "forbid")
		case "skills":
			st.Skills = l.skills(v, kf, "allow", "forbid")
		case "mounts":
			st.Mounts = l.mounts(v, kf, "allow", "forbid")
		case "requires":
			st.Requires = l.stringList(v, kf, "must be a list of run-variable names", l.variable)
		case "metadata":
			st.Metadata = l.metadata(v, kf)
		case "transitions":
			st.Transitions = l.transitions(v, kf)
		case "script":
			l.pos[kf] = v
			st.Script = l.script(v, kf)
		default:
			l.unknownKey(f, e, stateKeys)
		}
	}
	return st
}

// variable checks a run-variable name (§5.1) where a state's `requires` lists it.
func (l *loader) variable(s string, n *node, field string) bool {
	return l.variableName("schema.variable-name", s, n, field)
}

// signatureName checks a signature entry's name (§4.4): R-06's, so coded signature.*.
func (l *loader) signatureName(s string, n *node, field string) bool {
	return l.variableName("signature.name-invalid", s, n, field)
}

func (l *loader) variableName(code, s string, n *node, field string) bool {
	if !IsVariableName(s) {
		l.failAt(code, field, n, fmt.Sprintf("'%s' %s", s, msgVariable))
		return false
	}
	return true
}

// script checks the script path grammar (§6.7, V-07).
func (l *loader) script(n *node, field string) string {
	if n.Kind != yamltree.String || !IsScriptPath(n.Str) {
		l.failAt("code.script-path", field, n, msgScriptPath)
	}
	return n.Str
}

// evidence reads a human state's declared evidence paths (§3.3.14, P-15).
func (l *loader) evidence(n *node, field string) []string {
	paths := l.stringList(n, field, "must be a list of workspace-relative paths", func(p string, it *node, f string) bool {
		bad := p == "" || strings.HasPrefix(p, "/") || strings.ContainsAny(p, "*?[]{}") || strings.Contains(p, "${{")
		for _, seg := range strings.Split(p, "/") {
			bad = bad || seg == ".."
		}
		if bad {
			l.failAt("human.evidence-path", f, it, fmt.Sprintf("'%s' is not a usable evidence path: name one workspace-relative file, "+
				"with no leading '/', no '..' segment, no glob characters and no '${{…}}' reference", p))
		}
		return !bad
	})
	if len(paths) > 20 {
		l.failAt("human.evidence-path", field, n, fmt.Sprintf("declares %d evidence paths; at most 20 are allowed", len(paths)))
	}
	return paths
}

// budget reads a state's `budget` (§3.3.13).
func (l *loader) budget(n *node, field string) Budget {
	var b Budget
	if !l.mapping(n, field, "must be a mapping '{ maxTurns?, timeoutMs?, maxParks? }'") {
		return b
	}
	for _, e := range n.Entries {
		f := join(field, e.Key)
		switch e.Key {
		case "maxTurns":
			b.MaxTurns = l.positive(e.Val, f)
		case "timeoutMs":
			b.TimeoutMs = l.positive(e.Val, f)
		case "maxParks":
			b.MaxParks = l.positive(e.Val, f)
		default:
			l.unknownKey(field, e, budgetKeys)
		}
	}
	return b
}

// transitions reads a state's edges (§3.4, V-03).
func (l *loader) transitions(n *node, field string) []Transition {
	if n.Kind != yamltree.Seq {
		l.failAt("schema.type", field, n, "must be a list of transitions, each '{ to, description, type? }'")
		return nil
	}
	out := make([]Transition, 0, len(n.Items))
	for i, it := range n.Items {
		f := idx(field, i)
		if !l.mapping(it, f, "must be a mapping '{ to, description, type? }'") {
			continue
		}
		var t Transition
		to, desc := it.Get("to"), it.Get("description")
		if to == nil {
			l.failAt("schema.non-empty", join(f, "to"), it, msgNonEmpty)
		}
		if desc == nil {
			l.failAt("transition.description-required", join(f, "description"), it, msgTransition)
		}
		for _, e := range it.Entries {
			ef := join(f, e.Key)
			switch e.Key {
			case "to":
				l.pos[ef] = e.Val
				t.To = l.nonEmpty(e.Val, ef, "schema.non-empty", msgNonEmpty)
			case "description":
				t.Description = l.nonEmpty(e.Val, ef, "transition.description-required", msgTransition)
			case "type":
				switch tt := text(e.Val); {
				case e.Val.Kind == yamltree.String && (tt == "approve" || tt == "reject" || tt == "refine" || tt == "none"):
					t.Type = tt
				default:
					l.failAt("transition.type-invalid", ef, e.Val, fmt.Sprintf("unknown type '%s' (expected approve|reject|refine|none)", tt))
				}
			default:
				l.unknownKey(f, e, transitionKeys)
			}
		}
		out = append(out, t)
	}
	return out
}

// tools reads a tools block (§3.3.9 state allow/forbid, §2.7 root
// allow_always/forbid_always).
func (l *loader) tools(n *node, field, allowKey, forbidKey string) ToolsBlock {
	var b ToolsBlock
	if !l.mapping(n, field, fmt.Sprintf("must be a mapping '{ %s?, %s? }'", allowKey, forbidKey)) {
		return b
	}
	for _, e := range n.Entries {
		switch e.Key {
		case allowKey:
			b.Allow = l.toolEntries(e.Val, join(field, e.Key))
		case forbidKey:
			b.Forbid = l.toolEntries(e.Val, join(field, e.Key))
		default:
			l.unknownKey(field, e, []string{allowKey, forbidKey})
		}
	}
	return b
}

// toolEntries reads an allow/forbid list (§3.3.10).
func (l *loader) toolEntries(n *node, field string) []ToolEntry {
	if n.Kind != yamltree.Seq {
		l.failAt("schema.type", field, n, "must be a list of tool entries")
		return nil
	}
	out := make([]ToolEntry, 0, len(n.Items))
	for i, it := range n.Items {
		f := idx(field, i)
		l.pos[f] = it
		switch it.Kind {
		case yamltree.String:
			out = append(out, ToolEntry{Tool: it.Str})
		case yamltree.Map:
			out = append(out, l.toolObject(it, f))
		default:
			l.failAt("schema.type", f, it, "must be a tool name, or '{ tool, paths?, args?, connection?, source? }'")
		}
	}
	return out
}

func (l *loader) toolObject(n *node, field string) ToolEntry {
	var t ToolEntry
	if n.Get("tool") == nil {
		l.failAt("tools.tool-required", join(field, "tool"), n, "must name a tool")
	}
	for _, e := range n.Entries {
		f := join(field, e.Key)
		switch e.Key {
		case "tool":
			if e.Val.Kind != yamltree.String {
				l.failAt("tools.tool-required", f, e.Val, "must name a tool")
			}
			t.Tool = e.Val.Str
		case "paths":
			t.Guarded = true
			t.Paths = l.globs(e.Val, f)
		case "args":
			t.Guarded = true
			if !l.mapping(e.Val, f, "must be a mapping of argument name to a glob or a list of globs") {
				continue
			}
			if len(e.Val.Entries) == 0 {
				l.failAt("tools.guard-empty", f, e.Val, "must guard at least one argument")
			}
			for _, a := range e.Val.Entries {
				t.Args = append(t.Args, ArgGuard{Name: a.Key, Globs: l.globs(a.Val, join(f, a.Key))})
			}
		case "connection":
			t.Connection = l.str(e.Val, f)
		case "source":
			t.Source = l.str(e.Val, f)
		default:
			l.unknownKey(field, e, toolObjectKeys)
		}
	}
	return t
}

// globs reads a guard: one glob or a non-empty list of globs, none absolute (P-12).
func (l *loader) globs(n *node, field string) []string {
	relative := func(g string, at *node, f string) bool {
		if strings.HasPrefix(g, "/") {
			l.failAt("tools.guard-absolute", f, at, fmt.Sprintf("'%s' starts with '/'; guard globs are workspace-relative (e.g. 'scratchpad/**')", g))
		}
		return true
	}
	switch n.Kind {
	case yamltree.String:
		relative(n.Str, n, field)
		return []string{n.Str}
	case yamltree.Seq:
		if len(n.Items) == 0 {
			l.failAt("tools.guard-empty", field, n, "must list at least one glob")
		}
		return l.stringList(n, field, "", relative)
	}
	l.failAt("schema.type", field, n, "must be a glob or a list of globs")
	return nil
}

// skills reads a skills block of skill slugs (§3.3.11, §2.8, §1.5).
func (l *loader) skills(n *node, field, allowKey, forbidKey string) SkillsBlock {
	var b SkillsBlock
	if !l.mapping(n, field, fmt.Sprintf("must be a mapping '{ %s?, %s? }'", allowKey, forbidKey)) {
		return b
	}
	for _, e := range n.Entries {
		var list *[]string
		switch e.Key {
		case allowKey:
			list = &b.Allow
		case forbidKey:
			list = &b.Forbid
		default:
			l.unknownKey(field, e, []string{allowKey, forbidKey})
			continue
		}
		*list = l.stringList(e.Val, join(field, e.Key), "must be a list of skill slugs", func(s string, it *node, f string) bool {
			if !IsSlug(s) {
				l.failAt("skills.slug-invalid", f, it, fmt.Sprintf("'%s' is not a skill slug. Entries are skill bundle directory names "+
					"in kebab-case (e.g. 'order-data'), never paths or globs; narrow paths inside an enabled skill with a "+
					"'tools.allow' entry instead.", s))
				return false
			}
			return true
		})
	}
	return b
}

// mounts reads a mounts block (§3.3.12, §2.9, §6.6).
func (l *loader) mounts(n *node, field, allowKey, forbidKey string) MountsBlock {
	var b MountsBlock
	if !l.mapping(n, field, fmt.Sprintf("must be a mapping '{ %s?, %s? }'", allowKey, forbidKey)) {
		return b
	}
	for _, e := range n.Entries {
		f := join(field, e.Key)
		switch e.Key {
		case allowKey:
			if e.Val.Kind != yamltree.Seq {
				l.failAt("schema.type", f, e.Val, "must be a list of mount names, each optionally as '{ mount: <name>, access: read | read_write }'")
				continue
			}
			for i, it := range e.Val.Items {
				if g, ok := l.mountGrant(it, idx(f, i)); ok {
					b.Allow = append(b.Allow, g)
				}
			}
		case forbidKey:
			b.Forbid = l.stringList(e.Val, f, "must be a list of mount names", l.mountName)
		default:
			l.unknownKey(field, e, []string{allowKey, forbidKey})
		}
	}
	return b
}

func (l *loader) mountGrant(n *node, field string) (MountGrant, bool) {
	switch {
	case n.Kind == yamltree.String:
		return MountGrant{Mount: n.Str}, l.mountName(n.Str, n, field)
	case n.Kind == yamltree.Map && n.Get("mount") != nil:
		var g MountGrant
		ok := true
		for _, e := range n.Entries {
			f := join(field, e.Key)
			switch e.Key {
			case "mount":
				if e.Val.Kind != yamltree.String {
					l.failAt("mounts.name-invalid", f, e.Val, fmt.Sprintf("is not a mount name: %s", appendJSON(nil, e.Val, false)))
					ok = false
					continue
				}
				g.Mount = e.Val.Str
				ok = l.mountName(g.Mount, e.Val, f) && ok
			case "access":
				if a := text(e.Val); e.Val.Kind == yamltree.String && (a == "read" || a == "read_write") {
					g.Access = a
				} else {
					l.failAt("mounts.access-invalid", f, e.Val, fmt.Sprintf("unknown mount access '%s' (expected 'read' or 'read_write')", a))
					ok = false
				}
			default:
				l.unknownKey(field, e, mountGrantKeys)
				ok = false
			}
		}
		return g, ok
	default:
		l.failAt("mounts.grant-invalid", field, n, fmt.Sprintf("%s; got %s", msgMountGrant, appendJSON(nil, n, false)))
		return MountGrant{}, false
	}
}

// mountName checks the mount-name grammar (§6.6).
func (l *loader) mountName(s string, n *node, field string) bool {
	ok := s != "" && s == JSTrim(s) && !strings.ContainsAny(s, "*?[]{}") &&
		!strings.HasPrefix(s, "/") && !strings.HasSuffix(s, "/")
	for _, seg := range strings.Split(s, "/") {
		ok = ok && seg != "" && seg != "." && seg != ".."
	}
	if !ok {
		l.failAt("mounts.name-invalid", field, n, fmt.Sprintf("'%s' is not a mount name. Entries are mount-table keys without "+
			"their slashes (e.g. 'reference' or 'catalogs/eu'), never globs, leading slashes or '..' segments; narrow "+
			"paths inside an enabled mount with a 'tools.allow' entry instead.", s))
	}
	return ok
}

// triggers reads a state's `triggers:` (§4.1, R-07).
func (l *loader) triggers(n *node, field, slug string) []*Trigger {
	if n.Kind != yamltree.Map {
		l.failAt("trigger.not-a-mapping", field, n, msgTriggers)
		return nil
	}
	out := make([]*Trigger, 0, len(n.Entries))
	for _, e := range n.Entries {
		if JSTrim(e.Key) == "" {
			l.fail("trigger.id-empty", field, e.Line, e.Col, "a trigger id must be a non-empty string")
			continue
		}
		f := join(field, e.Key)
		l.pos[f] = &node{Line: e.Line, Col: e.Col}
		tr := &Trigger{ID: e.Key, State: slug}
		out = append(out, tr)
		switch e.Val.Kind {
		case yamltree.Null:
			continue
		case yamltree.Map:
		default:
			l.failAt("trigger.not-a-mapping", f, e.Val, "must be a mapping of the trigger's options, or empty (e.g. 'manual:')")
			continue
		}
		for _, d := range e.Val.Entries {
			df, v := join(f, d.Key), d.Val
			switch d.Key {
			case "session":
				tr.Session = l.sessionPath(v, df, msgSessionPath)
			case "message":
				if v.Kind == yamltree.Bool && !v.Truth {
					tr.MessageDisabled = true
					continue
				}
				tr.Message = l.sessionPath(v, df, msgMessagePath)
			case "connection":
				tr.Connection = l.nonEmpty(v, df, "trigger.connection", "must be a non-empty string naming the access connection in the host's environment.")
			case "description":
				tr.Description = JSTrim(l.nonEmpty(v, df, "trigger.description", "must be a non-empty string telling a caller what calling this entry does."))
			case "requires":
				tr.Requires = l.signature(v, df, d.Key)
			case "returns":
				tr.Returns = l.signature(v, df, d.Key)
			case "entry":
				l.failAt("trigger.key-refused", df, v, "declares 'entry', but the state this declaration sits on is the trigger's entry state: "+
					"move the declaration under the 'triggers:' of the state it should start in, and drop the key.")
			case "name":
				l.failAt("trigger.key-refused", df, v, "declares 'name', but the key this declaration sits under is the trigger id: "+
					"rename that key instead, and drop this one.")
			default:
				if tr.Extra == nil {
					tr.Extra = map[string]any{}
				}
				tr.Extra[d.Key] = plain(v)
			}
		}
	}
	return out
}

// sessionPath checks the session-path grammar (§4.9) and returns the trimmed path.
func (l *loader) sessionPath(n *node, field, typeMsg string) string {
	if n.Kind != yamltree.String {
		l.failAt("trigger.session-path", field, n, typeMsg)
		return ""
	}
	segs, err := ParseSessionPath(n.Str)
	var bad *InvalidSessionPathError
	if errors.As(err, &bad) {
		l.failAt("trigger.session-path", field, n, bad.Reason)
		return JSTrim(n.Str)
	}
	return strings.Join(segs, ".")
}

// signature reads a trigger's requires/returns list (§4.4, R-06, V-18).
func (l *loader) signature(n *node, field, key string) []SignatureEntry {
	if n.Kind != yamltree.Seq {
		l.failAt("signature.not-a-list", field, n, fmt.Sprintf("must be a list of run-variable names, each a bare name or "+
			"'{ name, type?, description? }' (e.g. '%s: [order_id, { name: due, type: date }]').", key))
		return nil
	}
	out := make([]SignatureEntry, 0, len(n.Items))
	seen := map[string]bool{}
	for i, it := range n.Items {
		f := idx(field, i)
		ent, ok := l.signatureEntry(it, f)
		if ent.Name == "" {
			continue
		}
		if seen[ent.Name] {
			l.failAt("signature.duplicate", f, it, fmt.Sprintf("'%s' is listed more than once.", ent.Name))
			ok = false
		}
		seen[ent.Name] = true
		if key == "returns" {
			if why := reservedReturns[ent.Name]; why != "" {
				l.failAt("signature.reserved-return", f, it, why)
				ok = false
			}
		}
		if ok {
			out = append(out, ent)
		}
	}
	return out
}

// reservedReturns are the names a `returns` list refuses (§4.4).
var reservedReturns = map[string]string{
	"trigger": "'trigger' is the built-in trigger variable: the runtime sets and locks it, so a session cannot declare it as something it produces.",
	"title":   "'title' is the built-in title variable naming the task: returning a sub-run's title would rename the task of whoever called it.",
	"note":    "'note' carries the note a sub-workflow completes with when a return is missing, so a session cannot declare it as something it produces.",
}

// signatureEntry reads one entry: a bare name or a strict { name, type?, description? }.
// The returned Name is set whenever the entry names a string, valid or not, so the
// list checks can still see it.
func (l *loader) signatureEntry(n *node, field string) (SignatureEntry, bool) {
	switch n.Kind {
	case yamltree.String:
		return SignatureEntry{Name: n.Str}, l.signatureName(n.Str, n, field)
	case yamltree.Map:
	default:
		l.failAt("signature.name-invalid", field, n, fmt.Sprintf("'%s' is not a valid run-variable name", text(n)))
		return SignatureEntry{}, false
	}
	var ent SignatureEntry
	ok := true
	label := "The entry"
	name := n.Get("name")
	switch {
	case name == nil:
		l.failAt("signature.name-invalid", field, n, msgEntryName)
		ok = false
	case name.Kind != yamltree.String:
		l.failAt("signature.name-invalid", join(field, "name"), name, msgEntryName)
		ok = false
	default:
		ent.Name = name.Str
		if name.Str != "" {
			label = fmt.Sprintf("Entry '%s'", name.Str)
		}
		ok = l.signatureName(name.Str, name, join(field, "name"))
	}
	for _, e := range n.Entries {
		f := join(field, e.Key)
		switch e.Key {
		case "name":
		case "type":
			if e.Val.Kind != yamltree.String || !slices.Contains(SignatureTypes, e.Val.Str) {
				l.failAt("signature.type-unknown", f, e.Val, fmt.Sprintf("'type' must be one of %s or %s; got %s",
					strings.Join(SignatureTypes[:len(SignatureTypes)-1], ", "), SignatureTypes[len(SignatureTypes)-1], appendJSON(nil, e.Val, false)))
				ok = false
				continue
			}
			ent.Type = e.Val.Str
		case "description":
			if e.Val.Kind != yamltree.String || JSTrim(e.Val.Str) == "" {
				l.failAt("signature.description-blank", f, e.Val, "'description' "+msgNonEmpty)
				ok = false
				continue
			}
			ent.Description = JSTrim(e.Val.Str)
		default:
			l.fail("signature.unknown-key", field, e.Line, e.Col, fmt.Sprintf("%s declares '%s', which a signature entry does not take: "+
				"it has 'name', 'type' and 'description' only.", label, e.Key))
			l.diags[len(l.diags)-1].Hint = keyHint(e.Key, signatureEntryKeys)
			ok = false
		}
	}
	return ent, ok
}

// --- Document rules (refineSpec, §8.1) ------------------------------------------

// documentRules runs the cross-reference rules over a shape-valid spec.
func (l *loader) documentRules(s *MachineSpec) {
	states := l.pos["states"]
	if len(s.States) == 0 {
		l.failAt("spec.states-empty", "states", states, "Machine spec is missing or has empty 'states'")
		return
	}
	for _, st := range s.States {
		f := "states." + st.Slug
		targets := map[string]bool{}
		for i, t := range st.Transitions {
			tf := idx(f+".transitions", i) + ".to"
			switch {
			case s.State(t.To) == nil:
				l.failAt("transition.unknown-target", tf, l.pos[tf], fmt.Sprintf("State '%s' transitions to undefined state '%s'", st.Slug, t.To))
			case targets[t.To]:
				l.failAt("transition.duplicate-target", tf, l.pos[tf], fmt.Sprintf("State '%s' declares a second transition to '%s'; "+
					"give each target one edge and describe in it when to take it", st.Slug, t.To))
			}
			targets[t.To] = true
		}
		if st.OnError != "" && s.State(st.OnError) == nil {
			of := f + ".on_error"
			l.failAt("state.on-error-unknown", of, l.pos[of], fmt.Sprintf("State '%s' on_error routes to undefined state '%s'", st.Slug, st.OnError))
		}
		switch {
		case st.Type == typeCode && st.Script == "":
			l.fail("code.script-required", f, st.Line, st.Column, fmt.Sprintf("State '%s' is a code state and must declare "+
				"'script' (e.g. 'script: scripts/%s.js')", st.Slug, st.Slug))
		case st.Type != typeCode && st.Script != "":
			sf := f + ".script"
			l.failAt("state.script-refused", sf, l.pos[sf], fmt.Sprintf("State '%s' declares 'script', which only a 'type: code' "+
				"state runs; set 'type: code' or remove the key", st.Slug))
		}
		where := fmt.Sprintf("State '%s'", st.Slug)
		l.guardRules(where, f+".tools.allow", st.Tools.Allow, true)
		l.guardRules(where, f+".tools.forbid", st.Tools.Forbid, false)
	}
	l.guardRules("tools.allow_always", "tools.allow_always", s.Tools.Allow, true)
	l.guardRules("tools.forbid_always", "tools.forbid_always", s.Tools.Forbid, false)

	var ids []string
	owners := map[string][]string{}
	second := map[string]*node{} // where each doubled id is declared again
	for _, st := range s.States {
		for _, tr := range st.Triggers {
			if owners[tr.ID] == nil {
				ids = append(ids, tr.ID)
			} else if second[tr.ID] == nil {
				second[tr.ID] = l.pos["states."+st.Slug+".triggers."+tr.ID]
			}
			owners[tr.ID] = append(owners[tr.ID], st.Slug)
		}
	}
	for _, id := range ids {
		if len(owners[id]) < 2 {
			continue
		}
		why := "a tool trigger must name a unique start state"
		if id == ManualTrigger {
			why = "a manual start state must be unambiguous"
		}
		l.failAt("trigger.duplicate", "states", second[id], fmt.Sprintf("Multiple states declare trigger '%s' (%s); %s",
			id, strings.Join(owners[id], ", "), why))
	}
	if len(ids) == 0 {
		l.failAt("spec.no-entry", "states", states,
			"Workflow has no start state; declare a `triggers` mapping on at least one state (e.g. `triggers: { manual: }`)")
	}
	if s.Tests.MaxConcurrency > 1 {
		f := "tests.maxConcurrency"
		l.failAt("tests.max-concurrency-unsupported", f, l.pos[f], "'tests.maxConcurrency' above 1 is not supported: case "+
			"concurrency is not implemented and offline cases run sequentially — set it to 1 or remove the field")
	}
}

// guardRules checks one allow/forbid list: every ${{…}} reference in a
// guard glob must be well formed ($${{…}} is an escape, §5.5), and a grant may not
// name "*".
func (l *loader) guardRules(where, field string, entries []ToolEntry, grant bool) {
	for i, t := range entries {
		f := idx(field, i)
		globs := t.Paths
		for _, a := range t.Args {
			globs = append(globs[:len(globs):len(globs)], a.Globs...)
		}
		for _, g := range globs {
			refs, _ := ParseReferences(g)
			for _, ref := range refs {
				if structuralError(ref) != nil {
					l.failAt("reference.malformed", f, l.pos[f], fmt.Sprintf("%s guards '%s' on '%s', which is not a valid variable "+
						"reference — use ${{name}} or ${{name.path.to.value}}.", where, t.Tool, ref.Raw))
				}
			}
		}
		if grant && t.Tool == ForbidAnyTool {
			l.failAt("tools.wildcard-grant", f, l.pos[f], msgWildcard)
		}
	}
}
