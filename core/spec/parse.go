package spec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"

	yaml "sigs.k8s.io/yaml/goyaml.v3"
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
	l := &loader{file: file, pos: map[string]*node{}}
	root := l.decode(src)
	if root == nil {
		return nil, l.diags
	}
	s := l.machine(root)
	s.doc = governingDoc(root)
	if len(l.diags) == 0 {
		l.documentRules(s)
	}
	return s, l.diags
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

type nodeKind uint8

const (
	kindNull nodeKind = iota
	kindBool
	kindNumber
	kindString
	kindSeq
	kindMap
)

// node is a YAML value after alias and merge-key expansion, resolved with the YAML
// 1.2 core schema (§2.13), with the 1-based position of its source node.
type node struct {
	kind      nodeKind
	str       string  // kindString: the value
	num       float64 // kindNumber
	truth     bool    // kindBool
	items     []*node // kindSeq
	entries   []entry // kindMap, document order, keys unique
	line, col int
}

// entry is one mapping pair; line and col locate its key.
type entry struct {
	key       string
	line, col int
	val       *node
}

func (n *node) get(key string) *node {
	for _, e := range n.entries {
		if e.key == key {
			return e.val
		}
	}
	return nil
}

// Alias-expansion bound (§2.13 rule 4): an expanded tree may hold at most
// aliasExpansionFactor times the source's node count (at least aliasExpansionFloor
// nodes) and never more than aliasExpansionCap nodes.
const (
	aliasExpansionFactor = 64
	aliasExpansionFloor  = 1 << 12
	aliasExpansionCap    = 1 << 20
)

// YAML 1.2 core schema for plain scalars (§2.13 rule 2): yes/no/on/off and dates
// stay strings; 0o/0x integers; no YAML 1.1 octal or digit separators.
var (
	coreNull  = regexp.MustCompile(`^(?:~|null|Null|NULL)?$`)
	coreTrue  = regexp.MustCompile(`^(?:true|True|TRUE)$`)
	coreFalse = regexp.MustCompile(`^(?:false|False|FALSE)$`)
	coreInt   = regexp.MustCompile(`^[-+]?[0-9]+$`)
	coreOct   = regexp.MustCompile(`^0o[0-7]+$`)
	coreHex   = regexp.MustCompile(`^0x[0-9a-fA-F]+$`)
	coreFloat = regexp.MustCompile(`^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$`)
	coreInf   = regexp.MustCompile(`^[-+]?\.(?:inf|Inf|INF)$`)
	coreNaN   = regexp.MustCompile(`^\.(?:nan|NaN|NAN)$`)
	yamlLine  = regexp.MustCompile(`line (\d+)`)
)

// decode strips carriage returns before a newline or at the end (§1.9), parses one
// YAML document and expands it. It returns nil, with the finding recorded, when the
// input is not a single YAML mapping or its aliases expand past the bound.
func (l *loader) decode(src []byte) *node {
	src = bytes.ReplaceAll(src, []byte("\r\n"), []byte("\n"))
	src = bytes.TrimSuffix(src, []byte("\r"))
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var doc, next yaml.Node
	err := dec.Decode(&doc)
	if err == nil && !errors.Is(dec.Decode(&next), io.EOF) {
		err = errors.New("more than one YAML document") // one document per file (§2.13 rule 1)
	}
	if err != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		line := 0
		if err != nil {
			if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
				line, _ = strconv.Atoi(m[1])
			}
		} else if len(doc.Content) > 0 {
			line = doc.Content[0].Line
		}
		l.diags = append(l.diags, Diagnostic{Severity: sevError, Code: "spec.not-a-mapping",
			Message: fmt.Sprintf("invalid machine spec at %s (expected a YAML mapping)", l.file),
			File:    l.file, Line: line})
		return nil
	}
	budget := max(aliasExpansionFactor*countNodes(&doc), aliasExpansionFloor)
	x := &expander{l: l, budget: min(budget, aliasExpansionCap), active: map[*yaml.Node]bool{}}
	root := x.convert(doc.Content[0], "")
	if x.failed {
		return nil
	}
	return root
}

func countNodes(n *yaml.Node) int {
	c := 1
	for _, ch := range n.Content {
		c += countNodes(ch)
	}
	return c
}

// expander turns a yaml.Node tree into a node tree: aliases expanded within a node
// budget, merge keys applied, duplicate and non-string keys refused.
type expander struct {
	l      *loader
	budget int
	failed bool                // the bound was hit or an alias contains itself
	active map[*yaml.Node]bool // anchored nodes being expanded (alias cycles)
}

func (x *expander) convert(n *yaml.Node, field string) *node {
	x.budget--
	if x.budget < 0 || x.failed {
		if !x.failed { // report the bound once
			x.failed = true
			x.l.fail("yaml.alias-expansion", field, n.Line, n.Column,
				"aliases expand this document far beyond its source size; refusing it (alias bomb?)")
		}
		return &node{}
	}
	if n.Anchor != "" {
		x.active[n] = true
		defer delete(x.active, n)
	}
	switch n.Kind {
	case yaml.AliasNode:
		if x.active[n.Alias] {
			x.failed = true
			x.l.fail("yaml.alias-expansion", field, n.Line, n.Column,
				fmt.Sprintf("alias '*%s' refers to a node that contains it", n.Value))
			return &node{line: n.Line, col: n.Column}
		}
		return x.convert(n.Alias, field)
	case yaml.SequenceNode:
		out := &node{kind: kindSeq, line: n.Line, col: n.Column, items: make([]*node, 0, len(n.Content))}
		for i, ch := range n.Content {
			out.items = append(out.items, x.convert(ch, join(field, strconv.Itoa(i))))
		}
		return out
	case yaml.MappingNode:
		return x.mapping(n, field)
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return &node{line: n.Line, col: n.Column}
		}
		return x.convert(n.Content[0], field)
	default:
		return scalar(n)
	}
}

// mapping builds a mapping node. Explicit keys win over merged ones (`<<`), earlier
// merge sources over later ones; merged keys take the position of the `<<` entry.
func (x *expander) mapping(n *yaml.Node, field string) *node {
	out := &node{kind: kindMap, line: n.Line, col: n.Column}
	type pair struct {
		key   string
		k, v  *yaml.Node
		merge bool
	}
	pairs := make([]pair, 0, len(n.Content)/2)
	explicit := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if isMergeKey(k) {
			pairs = append(pairs, pair{k: k, v: v, merge: true})
			continue
		}
		key, ok := x.key(k, field)
		if !ok {
			continue
		}
		if first, dup := explicit[key]; dup {
			x.l.fail("yaml.duplicate-key", field, k.Line, k.Column,
				fmt.Sprintf("key %q is repeated in this mapping (first at line %d); a mapping cannot repeat a key", key, first.Line))
			continue
		}
		explicit[key] = k
		pairs = append(pairs, pair{key: key, k: k, v: v})
	}
	present := map[string]bool{}
	for _, p := range pairs {
		if !p.merge {
			present[p.key] = true
			val := x.convert(p.v, join(field, p.key))
			if val.kind == kindNull && p.v.Kind == yaml.ScalarNode && p.v.Value == "" {
				val.line, val.col = p.k.Line, p.k.Column // an empty value is found at its key
			}
			out.entries = append(out.entries, entry{key: p.key, line: p.k.Line, col: p.k.Column, val: val})
			continue
		}
		src := x.convert(p.v, field)
		sources := []*node{src}
		if src.kind == kindSeq {
			sources = src.items
		}
		for _, m := range sources {
			if m.kind != kindMap {
				x.l.fail("yaml.merge", field, p.k.Line, p.k.Column,
					"a merge key '<<' takes a mapping or a list of mappings")
				continue
			}
			for _, e := range m.entries {
				if explicit[e.key] == nil && !present[e.key] {
					present[e.key] = true
					out.entries = append(out.entries, e)
				}
			}
		}
	}
	return out
}

func isMergeKey(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.Value == "<<" &&
		k.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) == 0 &&
		(k.Style&yaml.TaggedStyle == 0 || k.Tag == "!!merge")
}

// key resolves a mapping key, which must be a string (§2.13 rule 5).
func (x *expander) key(k *yaml.Node, field string) (string, bool) {
	if k.Kind == yaml.AliasNode && k.Alias != nil {
		k = k.Alias
	}
	if k.Kind == yaml.ScalarNode {
		if v := scalar(k); v.kind == kindString {
			return v.str, true
		}
	}
	x.l.fail("yaml.non-string-key", field, k.Line, k.Column,
		fmt.Sprintf("mapping keys must be strings; quote the key %q", k.Value))
	return "", false
}

// scalar resolves a scalar node: quoted, block and explicitly string-like tagged
// scalars are strings; plain ones follow the YAML 1.2 core schema (§2.13).
func scalar(n *yaml.Node) *node {
	out := &node{kind: kindString, str: n.Value, line: n.Line, col: n.Column}
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return out
	}
	if n.Style&yaml.TaggedStyle != 0 {
		switch n.Tag {
		case "!!null", "!!bool", "!!int", "!!float":
		default: // !!str, !!timestamp, !!binary and custom tags keep their text
			return out
		}
	}
	v := n.Value
	if v != "" && !strings.ContainsRune("0123456789+-.~nNtTfF", rune(v[0])) {
		return out // no core-schema null, bool or number starts otherwise
	}
	switch {
	case coreNull.MatchString(v):
		out.kind = kindNull
	case coreTrue.MatchString(v), coreFalse.MatchString(v):
		out.kind, out.truth = kindBool, coreTrue.MatchString(v)
	case coreOct.MatchString(v), coreHex.MatchString(v):
		base := 8
		if v[1] == 'x' {
			base = 16
		}
		i, _ := new(big.Int).SetString(v[2:], base)
		out.kind = kindNumber
		out.num, _ = new(big.Float).SetInt(i).Float64() // beyond 2^53 rounds, as in JavaScript
	case coreInt.MatchString(v), coreFloat.MatchString(v):
		f, _ := strconv.ParseFloat(v, 64) // out-of-range values round to ±Inf, as in JavaScript
		out.kind, out.num = kindNumber, f
	case coreInf.MatchString(v):
		out.kind, out.num = kindNumber, math.Inf(1)
		if v[0] == '-' {
			out.num = math.Inf(-1)
		}
	case coreNaN.MatchString(v):
		out.kind, out.num = kindNumber, math.NaN()
	}
	return out
}

// governingDoc is the document specHash and the snapshot cover (§9.1 steps 1–2):
// null states read as {}, metadata removed at the root and on every state.
func governingDoc(root *node) *node {
	doc := &node{kind: kindMap, line: root.line, col: root.col}
	for _, e := range root.entries {
		switch e.key {
		case "metadata":
			continue
		case "states":
			if e.val.kind == kindMap {
				states := &node{kind: kindMap, line: e.val.line, col: e.val.col}
				for _, se := range e.val.entries {
					st := &node{kind: kindMap, line: se.val.line, col: se.val.col}
					switch se.val.kind {
					case kindNull:
					case kindMap:
						for _, ke := range se.val.entries {
							if ke.key != "metadata" {
								st.entries = append(st.entries, ke)
							}
						}
					default:
						st = se.val
					}
					states.entries = append(states.entries, entry{key: se.key, line: se.line, col: se.col, val: st})
				}
				e.val = states
			}
		}
		doc.entries = append(doc.entries, e)
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
	l.fail(code, field, n.line, n.col, msg)
}

func join(field, key string) string {
	if field == "" {
		return key
	}
	return field + "." + key
}

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

var (
	scriptPath = regexp.MustCompile(`^scripts/[^/].*\.(js|mjs)$`)
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
// with migration text (V-21), the root's name/description with their rename (V-02).
func (l *loader) unknownKey(field string, e entry) {
	switch {
	case legacyKeys[e.key] != "":
		l.fail("legacy.hooks-removed", join(field, e.key), e.line, e.col, legacyKeys[e.key])
	case field == "" && rootHints[e.key] != "":
		code := "schema.unknown-key"
		if e.key == "name" || e.key == "description" {
			code = "spec.name-key"
		}
		l.fail(code, field, e.line, e.col, fmt.Sprintf("Unrecognized key: %q.", e.key)+rootHints[e.key])
	default:
		l.fail("schema.unknown-key", field, e.line, e.col, fmt.Sprintf("Unrecognized key: %q", e.key))
	}
}

// mapping reports a non-mapping value and tells the caller whether to descend.
func (l *loader) mapping(n *node, field, msg string) bool {
	if n.kind == kindMap {
		return true
	}
	l.failAt("schema.type", field, n, msg)
	return false
}

// str reads any string.
func (l *loader) str(n *node, field string) string {
	if n.kind != kindString {
		l.failAt("schema.type", field, n, "must be a string")
	}
	return n.str
}

// nonEmpty reads a string whose trim is not empty (§2.1); msg replaces the default.
func (l *loader) nonEmpty(n *node, field, code, msg string) string {
	if n.kind != kindString || jsTrim(n.str) == "" {
		l.failAt(code, field, n, msg)
	}
	return n.str
}

func isInt(n *node) bool {
	return n.kind == kindNumber && n.num == math.Trunc(n.num) && math.Abs(n.num) <= 1<<53
}

// positive reads a positive integer (§2.1).
func (l *loader) positive(n *node, field string) int {
	if !isInt(n) || n.num <= 0 {
		l.failAt("schema.positive", field, n, msgPositive)
		return 0
	}
	return int(n.num)
}

// modelID reads a model id (§2.1, R-11).
func (l *loader) modelID(n *node, field string) string {
	switch {
	case n.kind != kindString:
		l.failAt("schema.model-id", field, n, msgModelID)
	case jsTrim(n.str) == "":
		l.failAt("schema.model-id", field, n, msgNonEmpty)
	}
	return n.str
}

// stringList reads a list of strings, passing each to check (when non-nil) for further
// rules; listMsg is the refusal for a value that is not a list.
func (l *loader) stringList(n *node, field, listMsg string, check func(s string, it *node, f string) bool) []string {
	if n.kind != kindSeq {
		l.failAt("schema.type", field, n, listMsg)
		return nil
	}
	out := make([]string, 0, len(n.items))
	for i, it := range n.items {
		f := idx(field, i)
		if it.kind != kindString {
			l.failAt("schema.type", f, it, "must be a string")
			continue
		}
		if check == nil || check(it.str, it, f) {
			out = append(out, it.str)
		}
	}
	return out
}

// text renders a value the way a refusal quotes it (JavaScript String(v)).
func text(n *node) string {
	switch n.kind {
	case kindString:
		return n.str
	case kindNumber:
		return FormatJSNumber(n.num)
	case kindBool:
		return strconv.FormatBool(n.truth)
	case kindNull:
		return "null"
	}
	return string(appendJSON(nil, n, false))
}

// plain converts a value to encoding/json-style Go data for Metadata and Extra.
func plain(n *node) any {
	switch n.kind {
	case kindString:
		return n.str
	case kindNumber:
		return n.num
	case kindBool:
		return n.truth
	case kindSeq:
		out := make([]any, len(n.items))
		for i, it := range n.items {
			out[i] = plain(it)
		}
		return out
	case kindMap:
		out := make(map[string]any, len(n.entries))
		for _, e := range n.entries {
			out[e.key] = plain(e.val)
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
	for _, e := range root.entries {
		v := e.val
		switch e.key {
		case "title":
			s.Title = l.str(v, e.key)
		case "instructions":
			s.Instructions = l.nonEmpty(v, e.key, "schema.non-empty", msgNonEmpty)
		case "disabled":
			s.Disabled = l.disabled(v)
		case "runtime":
			l.runtime(v, &s.Runtime)
		case "settings":
			l.settings(v, &s.Settings)
		case "tests":
			l.tests(v, &s.Tests)
		case "tools":
			s.Tools = l.tools(v, e.key, "allow_always", "forbid_always")
		case "skills":
			s.Skills = l.skills(v, e.key, "allow_always", "forbid_always")
		case "mounts":
			s.Mounts = l.mounts(v, e.key, "allow_always", "forbid_always")
		case "extensions":
			l.extensions(v)
		case "metadata":
			s.Metadata = l.metadata(v, e.key)
		case "states":
			states = v
		default:
			l.unknownKey("", e)
		}
	}
	const missing = "Machine spec is missing or has empty 'states'"
	switch {
	case states == nil:
		l.failAt("spec.states-empty", "states", root, missing)
	case states.kind != kindMap:
		l.failAt("spec.states-empty", "states", states, missing)
	default:
		l.pos["states"] = states
		for _, e := range states.entries {
			s.States = append(s.States, l.state(e))
		}
	}
	return s
}

// disabled reads `disabled` fail-closed (§2.12, V-33): absent, null and false leave
// the workflow running, every other value disables it; a non-boolean is an error.
func (l *loader) disabled(n *node) bool {
	if n.kind == kindBool {
		return n.truth
	}
	l.failAt("spec.disabled", "disabled", n, fmt.Sprintf(
		"must be a boolean (true or false); got %s, which the runtime reads fail-closed as disabled, "+
			"so this workflow starts no new turns. Write 'disabled: true' to mean it, or remove the key.",
		appendJSON(nil, n, false)))
	return n.kind != kindNull
}

// runtime reads `runtime` (§2.4): strict { engine?: string, version?: string | number }.
func (l *loader) runtime(n *node, rt *Runtime) {
	if !l.mapping(n, "runtime", "must be a mapping '{ engine?, version? }'") {
		return
	}
	for _, e := range n.entries {
		f := join("runtime", e.key)
		switch e.key {
		case "engine":
			rt.Engine = l.str(e.val, f)
		case "version":
			switch e.val.kind {
			case kindString:
				rt.Version = e.val.str
			case kindNumber:
				rt.Version = FormatJSNumber(e.val.num)
			default:
				l.failAt("schema.type", f, e.val, "must be a string or a number")
			}
		default:
			l.unknownKey("runtime", e)
		}
	}
}

// settings reads `settings` (§2.5, P-14).
func (l *loader) settings(n *node, st *Settings) {
	if !l.mapping(n, "settings", "must be a mapping") {
		return
	}
	for _, e := range n.entries {
		f, v := join("settings", e.key), e.val
		switch e.key {
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
			case v.kind == kindNull:
				st.MaxPtcCalls = nil
			case isInt(v) && v.num >= 0:
				calls := int(v.num)
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
			l.unknownKey("settings", e)
		}
	}
}

func (l *loader) promptCache(n *node, field string) *PromptCache {
	if !l.mapping(n, field, "must be a mapping '{ enabled?, ttl? }'") {
		return nil
	}
	pc := &PromptCache{}
	for _, e := range n.entries {
		f := join(field, e.key)
		switch e.key {
		case "enabled":
			if e.val.kind != kindBool {
				l.failAt("schema.type", f, e.val, "must be true or false")
				continue
			}
			on := e.val.truth
			pc.Enabled = &on
		case "ttl":
			if e.val.kind != kindString || (e.val.str != "5m" && e.val.str != "1h") {
				l.failAt("settings.prompt-cache-ttl", f, e.val, fmt.Sprintf("must be '5m' or '1h'; got %s", appendJSON(nil, e.val, false)))
				continue
			}
			pc.TTL = e.val.str
		default:
			l.unknownKey(field, e)
		}
	}
	return pc
}

// tests reads `tests` (§2.6, V-19); maxConcurrency > 1 is a document rule (V-20).
func (l *loader) tests(n *node, tc *TestsConfig) {
	if !l.mapping(n, "tests", "must be a mapping") {
		return
	}
	for _, e := range n.entries {
		f, v := join("tests", e.key), e.val
		switch e.key {
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
			l.unknownKey("tests", e)
		}
	}
}

func (l *loader) judge(n *node, field string) *JudgeConfig {
	if !l.mapping(n, field, "must be a mapping '{ model?, modelOptions? }'") {
		return nil
	}
	j := &JudgeConfig{}
	for _, e := range n.entries {
		f := join(field, e.key)
		switch e.key {
		case "model":
			j.Model = l.str(e.val, f)
		case "modelOptions":
			if !l.mapping(e.val, f, "must be a mapping '{ temperature?, maxTokens? }'") {
				continue
			}
			for _, o := range e.val.entries {
				of := join(f, o.key)
				switch o.key {
				case "temperature":
					if o.val.kind != kindNumber || !(o.val.num >= 0) {
						l.failAt("schema.type", of, o.val, "must be a number of at least 0")
						continue
					}
					t := o.val.num
					j.Temperature = &t
				case "maxTokens":
					if m := l.positive(o.val, of); m > 0 {
						j.MaxTokens = &m
					}
				default:
					l.unknownKey(f, o)
				}
			}
		default:
			l.unknownKey(field, e)
		}
	}
	return j
}

// extensions reads `extensions`: strict with no members in 1.0 (§2.10).
func (l *loader) extensions(n *node) {
	if !l.mapping(n, "extensions", "must be a mapping") {
		return
	}
	for _, e := range n.entries {
		if e.key == "hooks" {
			l.fail("legacy.hooks-removed", "extensions.hooks", e.line, e.col,
				"custom hook kinds were removed in 1.0: run custom checks in a 'type: code' state, or judge in a 'type: grader' state.")
			continue
		}
		l.unknownKey("extensions", e)
	}
}

// state reads one state (§3); a null value is an empty agent state (§2.3).
func (l *loader) state(se entry) *State {
	f := "states." + se.key
	st := &State{Slug: se.key, Type: typeAgent, Line: se.line, Column: se.col}
	n := se.val
	if n.kind == kindNull || !l.mapping(n, f, "must be a mapping of state keys (or empty, for a bare terminal state)") {
		return st
	}
	for _, e := range n.entries {
		kf, v := join(f, e.key), e.val
		switch e.key {
		case "type":
			switch t := text(v); {
			case v.kind == kindString && (t == typeAgent || t == typeHuman || t == typeCode || t == typeGrader):
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
			st.Triggers = l.triggers(v, kf, se.key)
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
			l.unknownKey(f, e)
		}
	}
	return st
}

func (l *loader) variable(s string, n *node, field string) bool {
	if !IsVariableName(s) {
		l.failAt("schema.variable-name", field, n, fmt.Sprintf("'%s' %s", s, msgVariable))
		return false
	}
	return true
}

// script checks the script path grammar (§6.7, V-07).
func (l *loader) script(n *node, field string) string {
	if n.kind != kindString || !scriptPath.MatchString(n.str) || strings.Contains(n.str, `\`) {
		l.failAt("code.script-path", field, n, msgScriptPath)
		return n.str
	}
	for _, seg := range strings.Split(n.str, "/") {
		if seg == "" || seg == "." || seg == ".." {
			l.failAt("code.script-path", field, n, msgScriptPath)
			break
		}
	}
	return n.str
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
	for _, e := range n.entries {
		f := join(field, e.key)
		switch e.key {
		case "maxTurns":
			b.MaxTurns = l.positive(e.val, f)
		case "timeoutMs":
			b.TimeoutMs = l.positive(e.val, f)
		case "maxParks":
			b.MaxParks = l.positive(e.val, f)
		default:
			l.unknownKey(field, e)
		}
	}
	return b
}

// transitions reads a state's edges (§3.4, V-03).
func (l *loader) transitions(n *node, field string) []Transition {
	if n.kind != kindSeq {
		l.failAt("schema.type", field, n, "must be a list of transitions, each '{ to, description, type? }'")
		return nil
	}
	out := make([]Transition, 0, len(n.items))
	for i, it := range n.items {
		f := idx(field, i)
		if !l.mapping(it, f, "must be a mapping '{ to, description, type? }'") {
			continue
		}
		var t Transition
		to, desc := it.get("to"), it.get("description")
		if to == nil {
			l.failAt("schema.non-empty", join(f, "to"), it, msgNonEmpty)
		}
		if desc == nil {
			l.failAt("transition.description-required", join(f, "description"), it, msgTransition)
		}
		for _, e := range it.entries {
			ef := join(f, e.key)
			switch e.key {
			case "to":
				l.pos[ef] = e.val
				t.To = l.nonEmpty(e.val, ef, "schema.non-empty", msgNonEmpty)
			case "description":
				t.Description = l.nonEmpty(e.val, ef, "transition.description-required", msgTransition)
			case "type":
				switch tt := text(e.val); {
				case e.val.kind == kindString && (tt == "approve" || tt == "reject" || tt == "refine" || tt == "none"):
					t.Type = tt
				default:
					l.failAt("transition.type-invalid", ef, e.val, fmt.Sprintf("unknown type '%s' (expected approve|reject|refine|none)", tt))
				}
			default:
				l.unknownKey(f, e)
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
	for _, e := range n.entries {
		switch e.key {
		case allowKey:
			b.Allow = l.toolEntries(e.val, join(field, e.key))
		case forbidKey:
			b.Forbid = l.toolEntries(e.val, join(field, e.key))
		default:
			l.unknownKey(field, e)
		}
	}
	return b
}

// toolEntries reads an allow/forbid list (§3.3.10).
func (l *loader) toolEntries(n *node, field string) []ToolEntry {
	if n.kind != kindSeq {
		l.failAt("schema.type", field, n, "must be a list of tool entries")
		return nil
	}
	out := make([]ToolEntry, 0, len(n.items))
	for i, it := range n.items {
		f := idx(field, i)
		l.pos[f] = it
		switch it.kind {
		case kindString:
			out = append(out, ToolEntry{Tool: it.str})
		case kindMap:
			out = append(out, l.toolObject(it, f))
		default:
			l.failAt("schema.type", f, it, "must be a tool name, or '{ tool, paths?, args?, connection?, source? }'")
		}
	}
	return out
}

func (l *loader) toolObject(n *node, field string) ToolEntry {
	var t ToolEntry
	if n.get("tool") == nil {
		l.failAt("tools.tool-required", join(field, "tool"), n, "must name a tool")
	}
	for _, e := range n.entries {
		f := join(field, e.key)
		switch e.key {
		case "tool":
			if e.val.kind != kindString {
				l.failAt("tools.tool-required", f, e.val, "must name a tool")
			}
			t.Tool = e.val.str
		case "paths":
			t.Guarded = true
			t.Paths = l.globs(e.val, f)
		case "args":
			t.Guarded = true
			if !l.mapping(e.val, f, "must be a mapping of argument name to a glob or a list of globs") {
				continue
			}
			if len(e.val.entries) == 0 {
				l.failAt("tools.guard-empty", f, e.val, "must guard at least one argument")
			}
			for _, a := range e.val.entries {
				t.Args = append(t.Args, ArgGuard{Name: a.key, Globs: l.globs(a.val, join(f, a.key))})
			}
		case "connection":
			t.Connection = l.str(e.val, f)
		case "source":
			t.Source = l.str(e.val, f)
		default:
			l.unknownKey(field, e)
		}
	}
	return t
}

// globs reads a guard: one glob or a non-empty list of globs, none absolute (P-12).
func (l *loader) globs(n *node, field string) []string {
	var out []string
	switch n.kind {
	case kindString:
		out = []string{n.str}
	case kindSeq:
		out = l.stringList(n, field, "", nil)
		if len(n.items) == 0 {
			l.failAt("tools.guard-empty", field, n, "must list at least one glob")
		}
	default:
		l.failAt("schema.type", field, n, "must be a glob or a list of globs")
		return nil
	}
	for _, g := range out {
		if strings.HasPrefix(g, "/") {
			l.failAt("tools.guard-absolute", field, n, fmt.Sprintf("'%s' starts with '/'; guard globs are workspace-relative (e.g. 'scratchpad/**')", g))
		}
	}
	return out
}

// skills reads a skills block of skill slugs (§3.3.11, §2.8, §1.5).
func (l *loader) skills(n *node, field, allowKey, forbidKey string) SkillsBlock {
	var b SkillsBlock
	if !l.mapping(n, field, fmt.Sprintf("must be a mapping '{ %s?, %s? }'", allowKey, forbidKey)) {
		return b
	}
	for _, e := range n.entries {
		var list *[]string
		switch e.key {
		case allowKey:
			list = &b.Allow
		case forbidKey:
			list = &b.Forbid
		default:
			l.unknownKey(field, e)
			continue
		}
		*list = l.stringList(e.val, join(field, e.key), "must be a list of skill slugs", func(s string, it *node, f string) bool {
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
	for _, e := range n.entries {
		f := join(field, e.key)
		switch e.key {
		case allowKey:
			if e.val.kind != kindSeq {
				l.failAt("schema.type", f, e.val, "must be a list of mount names, each optionally as '{ mount: <name>, access: read | read_write }'")
				continue
			}
			for i, it := range e.val.items {
				if g, ok := l.mountGrant(it, idx(f, i)); ok {
					b.Allow = append(b.Allow, g)
				}
			}
		case forbidKey:
			b.Forbid = l.stringList(e.val, f, "must be a list of mount names", l.mountName)
		default:
			l.unknownKey(field, e)
		}
	}
	return b
}

func (l *loader) mountGrant(n *node, field string) (MountGrant, bool) {
	switch {
	case n.kind == kindString:
		return MountGrant{Mount: n.str}, l.mountName(n.str, n, field)
	case n.kind == kindMap && n.get("mount") != nil:
		var g MountGrant
		ok := true
		for _, e := range n.entries {
			f := join(field, e.key)
			switch e.key {
			case "mount":
				if e.val.kind != kindString {
					l.failAt("mounts.name-invalid", f, e.val, fmt.Sprintf("is not a mount name: %s", appendJSON(nil, e.val, false)))
					ok = false
					continue
				}
				g.Mount = e.val.str
				ok = l.mountName(g.Mount, e.val, f) && ok
			case "access":
				if a := text(e.val); e.val.kind == kindString && (a == "read" || a == "read_write") {
					g.Access = a
				} else {
					l.failAt("mounts.access-invalid", f, e.val, fmt.Sprintf("unknown mount access '%s' (expected 'read' or 'read_write')", a))
					ok = false
				}
			default:
				l.unknownKey(field, e)
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
	ok := s != "" && s == jsTrim(s) && !strings.ContainsAny(s, "*?[]{}") &&
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
	if n.kind != kindMap {
		l.failAt("trigger.not-a-mapping", field, n, msgTriggers)
		return nil
	}
	out := make([]*Trigger, 0, len(n.entries))
	for _, e := range n.entries {
		if jsTrim(e.key) == "" {
			l.fail("trigger.id-empty", field, e.line, e.col, "a trigger id must be a non-empty string")
			continue
		}
		f := join(field, e.key)
		l.pos[f] = &node{line: e.line, col: e.col}
		tr := &Trigger{ID: e.key, State: slug}
		out = append(out, tr)
		switch e.val.kind {
		case kindNull:
			continue
		case kindMap:
		default:
			l.failAt("trigger.not-a-mapping", f, e.val, "must be a mapping of the trigger's options, or empty (e.g. 'manual:')")
			continue
		}
		for _, d := range e.val.entries {
			df, v := join(f, d.key), d.val
			switch d.key {
			case "session":
				tr.Session = l.sessionPath(v, df, msgSessionPath)
			case "message":
				if v.kind == kindBool && !v.truth {
					tr.MessageDisabled = true
					continue
				}
				tr.Message = l.sessionPath(v, df, msgMessagePath)
			case "connection":
				tr.Connection = l.nonEmpty(v, df, "trigger.connection", "must be a non-empty string naming the access connection in the host's environment.")
			case "description":
				tr.Description = jsTrim(l.nonEmpty(v, df, "trigger.description", "must be a non-empty string telling a caller what calling this entry does."))
			case "requires":
				tr.Requires = l.signature(v, df, d.key)
			case "returns":
				tr.Returns = l.signature(v, df, d.key)
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
				tr.Extra[d.key] = plain(v)
			}
		}
	}
	return out
}

// sessionPath checks the session-path grammar (§4.9) and returns the trimmed path.
func (l *loader) sessionPath(n *node, field, typeMsg string) string {
	if n.kind != kindString {
		l.failAt("trigger.session-path", field, n, typeMsg)
		return ""
	}
	segs, err := ParseSessionPath(n.str)
	var bad *InvalidSessionPathError
	if errors.As(err, &bad) {
		l.failAt("trigger.session-path", field, n, bad.Reason)
		return jsTrim(n.str)
	}
	return strings.Join(segs, ".")
}

// signature reads a trigger's requires/returns list (§4.4, R-06, V-18).
func (l *loader) signature(n *node, field, key string) []SignatureEntry {
	if n.kind != kindSeq {
		l.failAt("signature.not-a-list", field, n, fmt.Sprintf("must be a list of run-variable names, each a bare name or "+
			"'{ name, type?, description? }' (e.g. '%s: [order_id, { name: due, type: date }]').", key))
		return nil
	}
	out := make([]SignatureEntry, 0, len(n.items))
	seen := map[string]bool{}
	for i, it := range n.items {
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
	switch n.kind {
	case kindString:
		return SignatureEntry{Name: n.str}, l.variable(n.str, n, field)
	case kindMap:
	default:
		l.failAt("signature.name-invalid", field, n, fmt.Sprintf("'%s' is not a valid run-variable name", text(n)))
		return SignatureEntry{}, false
	}
	var ent SignatureEntry
	ok := true
	label := "The entry"
	name := n.get("name")
	switch {
	case name == nil:
		l.failAt("signature.name-invalid", field, n, msgEntryName)
		ok = false
	case name.kind != kindString:
		l.failAt("signature.name-invalid", join(field, "name"), name, msgEntryName)
		ok = false
	default:
		ent.Name = name.str
		if name.str != "" {
			label = fmt.Sprintf("Entry '%s'", name.str)
		}
		ok = l.variable(name.str, name, join(field, "name"))
	}
	for _, e := range n.entries {
		f := join(field, e.key)
		switch e.key {
		case "name":
		case "type":
			if e.val.kind != kindString || !slices.Contains(SignatureTypes, e.val.str) {
				l.failAt("signature.type-unknown", f, e.val, fmt.Sprintf("'type' must be one of %s or %s; got %s",
					strings.Join(SignatureTypes[:len(SignatureTypes)-1], ", "), SignatureTypes[len(SignatureTypes)-1], appendJSON(nil, e.val, false)))
				ok = false
				continue
			}
			ent.Type = e.val.str
		case "description":
			if e.val.kind != kindString || jsTrim(e.val.str) == "" {
				l.failAt("signature.description-blank", f, e.val, "'description' "+msgNonEmpty)
				ok = false
				continue
			}
			ent.Description = jsTrim(e.val.str)
		default:
			l.fail("signature.unknown-key", field, e.line, e.col, fmt.Sprintf("%s declares '%s', which a signature entry does not take: "+
				"it has 'name', 'type' and 'description' only.", label, e.key))
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
