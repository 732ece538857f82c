package cases

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
	"unicode/utf16"

	"github.com/archmax-ai/archmax/core/spec"
	"go.yaml.in/yaml/v3"
)

// Issue is one schema violation of a case document (CD-70, API-04): Path addresses the
// offending value like `steps[2].reply.includes[0]`, or `title`. It is "" where the
// message locates itself: YAML-level failures (CE-13), the top-level unknown-key message
// (CD-02) and `trigger.args` (CD-20). Unknown keys of a nested mapping are reported at
// the mapping's path (`trigger: unknown key 'when'`), a missing required key at its own
// path (`steps[3].decide.to`). Line and Column are 1-based source positions (0 when
// unknown).
type Issue struct {
	Path    string
	Message string
	Line    int
	Column  int
}

// String renders the issue as `<path>: <message>`, or the message alone when Path is "".
func (i Issue) String() string {
	if i.Path == "" {
		return i.Message
	}
	return i.Path + ": " + i.Message
}

// CaseSchemaError is a case file that failed the schema (API-03, API-04): every issue
// of the document, never only the first. Error() is `<file>: <issue>; <issue>…`, each
// issue rendered by Issue.String, e.g.
// `tests/a.test.yaml: steps[1].succeeded: 'succeeded' takes the literal true`.
type CaseSchemaError struct {
	File   string
	Issues []Issue
}

// Name is the reference error name, "CaseSchemaError".
func (e *CaseSchemaError) Name() string { return "CaseSchemaError" }

func (e *CaseSchemaError) Error() string {
	parts := make([]string, len(e.Issues))
	for i, is := range e.Issues {
		parts[i] = is.String()
	}
	return e.File + ": " + strings.Join(parts, "; ")
}

// Messages. Those marked REF are exact (spec 04 §2, §3, §5, §7, §8); the others are this
// package's wording.
const (
	msgYAMLParse    = "YAML parse error: %s" // REF (CE-13)
	msgMultiDoc     = "YAML parse error: a case file holds exactly one YAML document, but this one holds more (a '---' starts another)"
	msgNotMapping   = "a test case is a YAML mapping (title, description, steps, ...)" // REF (CE-13)
	msgDuplicateKey = "key '%s' is repeated in this mapping (first at line %d); a mapping cannot repeat a key"
	msgNonStringKey = "mapping keys must be strings; quote the key %s"
	msgAliasBomb    = "aliases expand this document far beyond its source size; refusing it (alias bomb?)"
	msgAliasCycle   = "alias '*%s' refers to a node that contains it"
	msgMerge        = "a merge key '<<' takes a mapping or a list of mappings"

	msgTitleRequired       = "'title' is required: a short one-line label for the case (e.g. 'Unknown requester is rejected at entry')"                                               // REF (CD-01)
	msgDescriptionRequired = "'description' is required: one or two sentences stating the scenario driven and what is asserted"                                                       // REF (CD-01)
	msgTitleSingleLine     = "'title' is a single line — put the detail in 'description'"                                                                                             // REF (CD-01)
	msgTitleTooLong        = "'title' must be at most 60 characters (got %d) — keep it a label; put the detail in 'description'"                                                      // REF (CD-01)
	msgDescriptionTooLong  = "'description' must be at most 200 characters (got %d) — keep it to one or two sentences; longer rationale belongs in a YAML comment above the document" // REF (CD-01)

	msgUnknownKey     = "unknown key %s"                                                                                                                         // REF (CD-02), nested mappings
	msgUnknownTopKey  = "unknown key %s (known: %s)"                                                                                                             // REF (CD-02), the document
	msgSkip           = "'skip' takes a reason string"                                                                                                           // REF (CD-02)
	msgMocksList      = "'mocks' must be a list"                                                                                                                 // REF (CD-02)
	msgStepsList      = "'steps' must be a list"                                                                                                                 // REF (CD-02)
	msgTriggerArgs    = "trigger.args is not supported: a trigger carries only an id; put the run's input under variables:"                                      // CD-20 (decision)
	msgTrigger        = "'trigger' takes a mapping { id: <trigger-id> }"                                                                                         //
	msgTriggerID      = "takes a trigger id string"                                                                                                              // REF wording
	msgVariableName   = "is not a valid variable name (lowercase letters, digits and underscores, starting with a letter)"                                       // REF (CD-30)
	msgVariables      = "'variables' takes a mapping of variable name to value"                                                                                  //
	msgWorkspace      = "'workspace' takes a mapping of session path to content"                                                                                 //
	msgWorkspacePath  = "workspace paths must be non-empty"                                                                                                      // REF (CD-42)
	msgFrom           = "'from' takes a tests/-relative file path string"                                                                                        // REF (CD-43)
	msgMock           = "a mock is a mapping { tool, whenInput?, result }"                                                                                       //
	msgMockTool       = "takes a tool name string"                                                                                                               //
	msgMockControl    = "'%s' is a control tool, and control tools are never mocked: the runtime services them before any mock could answer"                     // CD-51
	msgMockResult     = "is required: the mocked call's result (a string is returned verbatim, any other value as JSON)"                                         // CD-50
	msgMatcher        = "takes a mapping, matched partially against the call's input"                                                                            //
	msgMalformedRegex = "malformed regex %s: %s"                                                                                                                 // REF (MT-04)
	msgClockShape     = "'clock' takes an ISO 8601 date or date-time string (e.g. '2026-03-20' or '2026-03-20T14:30:00Z')"                                       // CD-60
	msgClockNoZone    = "'clock' %s has no zone: a date-time takes Z or a ±HH:MM offset (e.g. '2026-03-20T14:30:00Z')"                                           // CD-60
	msgClockInvalid   = "'clock' %s is not an ISO 8601 date (YYYY-MM-DD, midnight UTC) or a date-time with Z or a ±HH:MM offset (e.g. '2026-03-20T16:30+02:00')" // CD-60

	msgStepShape         = "a step is a single-key mapping — an action ('send', 'decide', 'deliver') or an assertion (e.g. '- send: \"hi\"' then '- reachedState: done')" // REF (CD-70)
	msgStepKeys          = "a step declares exactly one key, got [%s]"                                                                                                    // REF (CD-70)
	msgUnknownStep       = "unknown step '%s' (actions: %s; assertions: %s)"                                                                                              // REF (CD-70)
	msgNoPrecedingAction = "assertion '%s' has no preceding action — put a 'send', 'decide', or 'deliver' step before it"                                                 // REF (CD-72)

	msgSend          = "takes a user message string" // REF (ST-01)
	msgDecide        = "takes a mapping { to: <state>, comment? }"
	msgDecideTo      = "takes the target state's slug string"
	msgComment       = "takes a comment string"
	msgDeliver       = "takes a mapping { trigger: <id>, variables? }"
	msgDeliverVars   = "takes a mapping of variable name to value"
	msgLiteralTrue   = "'%s' takes the literal true"                                                                                                                 // REF (§7.1)
	msgParked        = "'parked' takes the literal true, 'decision' | 'input' to pin the channel, or a mapping { channel?, state? } to pin where the session parked" // REF (AX-02)
	msgChannel       = "takes 'decision' or 'input'"
	msgStateSlug     = "takes a state slug string" // REF wording
	msgRaised        = "'raised' takes the literal true, the expected code string, or a mapping { code?, reason? } to pin the code and match the reason"
	msgRaisedEmpty   = "declare at least one of 'code'/'reason'"
	msgRaisedCode    = "takes the expected code string"
	msgRaisedReason  = "takes the expected reason string, or a '/pattern/flags' regex"
	msgVariablesStep = "takes a mapping { expect, path?, locked? }"
	msgExpect        = "takes a mapping of variable name to expected value"
	msgPathMap       = "takes a mapping of variable name to dotted path (e.g. { order: items.-1.sku })"
	msgPathValue     = "takes a dotted path string (e.g. 'items.-1.sku')"
	msgLockedMap     = "takes a mapping of variable name to true or false"
	msgLockedValue   = "takes true or false"
	msgReply         = "takes a mapping { includes?, excludes? }"
	msgReplyEmpty    = "declare at least one of 'includes'/'excludes'" // REF (AX-06)
	msgTokens        = "takes a token string or a list of token strings"
	msgToken         = "takes a token string"
	msgToolStep      = "takes a mapping { name, input? }"
	msgToolName      = "takes a tool name string"
	msgTrail         = "takes a mapping { to?, kind?, reason?, count }"
	msgTrailEmpty    = "declare at least one of 'to'/'kind'/'reason' to match against" // REF (AX-11)
	msgTrailKind     = "takes one of trigger, agent, human, grader, code, sub-workflow, reset, on_error"
	msgTrailReason   = "takes the exact reason string"
	msgCount         = "takes an integer count of 0 or more"
	msgRanWorkflow   = "takes a mapping { workflow, status?, count? }"
	msgWorkflowSlug  = "takes a workflow slug string"
	msgStatus        = "takes 'ok' or 'error'"
	msgGrade         = "takes a mapping { closedQA, atLeast }"
	msgClosedQA      = "takes a criterion string"
	msgAtLeast       = "takes a number from 0 to 1"
)

// ParseCaseDocument parses and validates one case file (API-03) with the one strict
// schema the runner and `archmax validate` share. file names the source in the error.
//
// It enforces: one YAML document, YAML 1.2 core schema, no duplicate or non-string keys,
// aliases expanded within a bound (CD-03, CE-13, OQ-C18); a mapping root; required,
// collapsed, UTF-16-measured title and description, the title on one line (CD-01); the
// top-level keys of CD-02 and strict mappings at every depth; skip, trigger (CD-10,
// CD-20), variable names (CD-30), workspace paths and `from:` values (CD-42…CD-44),
// mocks with a non-control tool and a result (CD-50, CD-51), clock forms (CD-60), the
// single-key step shapes (CD-70) with an action before every assertion (CD-72), the
// action shapes (ST-01…ST-03), the assertion shapes with `true`-only literals (§7.1,
// AX-01…AX-15), and every regex-capable string (MT-04, MT-05).
//
// On any violation it returns nil and a *CaseSchemaError carrying every issue found.
func ParseCaseDocument(file string, source []byte) (*CaseDocument, error) {
	p := &parser{}
	root := p.decode(source)
	var doc *CaseDocument
	if root != nil {
		doc = p.document(root)
	}
	if len(p.issues) > 0 {
		return nil, &CaseSchemaError{File: file, Issues: p.issues}
	}
	return doc, nil
}

// --- The YAML tree --------------------------------------------------------------

type nodeKind uint8

const (
	kindNull nodeKind = iota
	kindBool
	kindNumber
	kindString
	kindSeq
	kindMap
)

// node is a YAML value after alias and merge expansion, resolved with the YAML 1.2 core
// schema, with the 1-based position of its source node.
type node struct {
	kind      nodeKind
	str       string // kindString: the value
	raw       string // scalars: the source text
	num       float64
	truth     bool
	items     []*node
	entries   []entry // kindMap: document order, keys unique
	line, col int
}

// entry is one mapping pair; line and col locate its key.
type entry struct {
	key       string
	line, col int
	val       *node
}

func (n *node) get(key string) *entry {
	for i := range n.entries {
		if n.entries[i].key == key {
			return &n.entries[i]
		}
	}
	return nil
}

func (n *node) isScalar() bool { return n.kind != kindSeq && n.kind != kindMap }

// Alias-expansion bound: an expanded tree holds at most aliasExpansionFactor times the
// source's node count (at least aliasExpansionFloor) and never more than
// aliasExpansionCap nodes — the bound workflow.yaml uses (spec 01 §2.13 rule 4).
const (
	aliasExpansionFactor = 64
	aliasExpansionFloor  = 1 << 12
	aliasExpansionCap    = 1 << 20
)

// YAML 1.2 core schema for plain scalars: yes/no/on/off and dates stay strings.
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

// parser collects issues while reading a document.
type parser struct {
	issues []Issue
}

func (p *parser) add(path string, line, col int, msg string) {
	p.issues = append(p.issues, Issue{Path: path, Message: msg, Line: line, Column: col})
}

func (p *parser) at(path string, n *node, msg string) { p.add(path, n.line, n.col, msg) }

// decode reads exactly one YAML document whose root is a mapping and expands it; nil
// when there is none (the issue recorded).
func (p *parser) decode(src []byte) *node {
	src = bytes.ReplaceAll(src, []byte("\r\n"), []byte("\n"))
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) { // empty, or comments only
			p.add("", 0, 0, msgNotMapping)
		} else {
			p.yamlError(err)
		}
		return nil
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		p.yamlError(err)
		return nil
	default:
		p.add("", next.Line, next.Column, msgMultiDoc)
		return nil
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		line, col := doc.Line, doc.Column
		if len(doc.Content) > 0 {
			line, col = doc.Content[0].Line, doc.Content[0].Column
		}
		p.add("", line, col, msgNotMapping)
		return nil
	}
	budget := max(aliasExpansionFactor*countNodes(&doc), aliasExpansionFloor)
	x := &expander{p: p, budget: min(budget, aliasExpansionCap), active: map[*yaml.Node]bool{}}
	root := x.convert(doc.Content[0], "")
	if x.failed {
		return nil
	}
	return root
}

func (p *parser) yamlError(err error) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
	}
	p.add("", line, 0, fmt.Sprintf(msgYAMLParse, msg))
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
	p      *parser
	budget int
	failed bool                // the bound was hit or an alias contains itself
	active map[*yaml.Node]bool // anchored nodes being expanded (alias cycles)
}

func (x *expander) convert(n *yaml.Node, path string) *node {
	x.budget--
	if x.budget < 0 || x.failed {
		if !x.failed {
			x.failed = true
			x.p.add(path, n.Line, n.Column, msgAliasBomb)
		}
		return &node{}
	}
	if n.Anchor != "" {
		x.active[n] = true
		defer delete(x.active, n)
	}
	switch n.Kind {
	case yaml.AliasNode:
		if n.Alias == nil || x.active[n.Alias] {
			x.failed = true
			x.p.add(path, n.Line, n.Column, fmt.Sprintf(msgAliasCycle, n.Value))
			return &node{line: n.Line, col: n.Column}
		}
		return x.convert(n.Alias, path)
	case yaml.SequenceNode:
		out := &node{kind: kindSeq, line: n.Line, col: n.Column, items: make([]*node, 0, len(n.Content))}
		for i, ch := range n.Content {
			out.items = append(out.items, x.convert(ch, index(path, i)))
		}
		return out
	case yaml.MappingNode:
		return x.mapping(n, path)
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return &node{line: n.Line, col: n.Column}
		}
		return x.convert(n.Content[0], path)
	default:
		return scalar(n)
	}
}

// mapping builds a mapping node. Explicit keys win over merged ones (`<<`), earlier
// merge sources over later ones; merged keys take the position of the `<<` entry.
func (x *expander) mapping(n *yaml.Node, path string) *node {
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
		key, ok := x.key(k, path)
		if !ok {
			continue
		}
		if first, dup := explicit[key]; dup {
			x.p.add(path, k.Line, k.Column, fmt.Sprintf(msgDuplicateKey, key, first.Line))
			continue
		}
		explicit[key] = k
		pairs = append(pairs, pair{key: key, k: k, v: v})
	}
	present := map[string]bool{}
	for _, pr := range pairs {
		if !pr.merge {
			present[pr.key] = true
			val := x.convert(pr.v, join(path, pr.key))
			if val.kind == kindNull && pr.v.Kind == yaml.ScalarNode && pr.v.Value == "" {
				val.line, val.col = pr.k.Line, pr.k.Column // an empty value is found at its key
			}
			out.entries = append(out.entries, entry{key: pr.key, line: pr.k.Line, col: pr.k.Column, val: val})
			continue
		}
		src := x.convert(pr.v, path)
		sources := []*node{src}
		if src.kind == kindSeq {
			sources = src.items
		}
		for _, m := range sources {
			if m.kind != kindMap {
				x.p.add(path, pr.k.Line, pr.k.Column, msgMerge)
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

// key resolves a mapping key, which must be a string scalar.
func (x *expander) key(k *yaml.Node, path string) (string, bool) {
	if k.Kind == yaml.AliasNode && k.Alias != nil {
		k = k.Alias
	}
	if k.Kind == yaml.ScalarNode {
		if v := scalar(k); v.kind == kindString {
			return v.str, true
		}
	}
	x.p.add(path, k.Line, k.Column, fmt.Sprintf(msgNonStringKey, jsonQuote(k.Value)))
	return "", false
}

// scalar resolves a scalar node: quoted, block and explicitly string-like tagged scalars
// are strings; plain ones follow the YAML 1.2 core schema.
func scalar(n *yaml.Node) *node {
	out := &node{kind: kindString, str: n.Value, raw: n.Value, line: n.Line, col: n.Column}
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
	resolvePlain(out, n.Value)
	return out
}

// resolvePlain sets out's kind and value as the core schema reads the plain text v.
func resolvePlain(out *node, v string) {
	if v != "" && !strings.ContainsRune("0123456789+-.~nNtTfF", rune(v[0])) {
		return // no core-schema null, bool or number starts otherwise
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
}

// plainIsString reports whether the plain scalar text s reads back as the string s.
func plainIsString(s string) bool {
	n := &node{kind: kindString}
	resolvePlain(n, s)
	return n.kind == kindString
}

// --- Paths and shared readers ---------------------------------------------------

// join renders a key under path: `steps[2].reply`.
func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// index renders a list index under path: `steps[2]`.
func index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

func quoteKeys(keys []string) string {
	q := make([]string, len(keys))
	for i, k := range keys {
		q[i] = "'" + k + "'"
	}
	return strings.Join(q, ", ")
}

// strict walks a strict mapping: fn is called for each key of known, in document
// order; the unknown keys are reported together at path (CD-03, REF: one
// unrecognized-keys issue per mapping), positioned at the first of them.
func (p *parser) strict(n *node, path string, known []string, fn func(e *entry, path string)) {
	var unknown []*entry
	for i := range n.entries {
		e := &n.entries[i]
		if slices.Contains(known, e.key) {
			fn(e, join(path, e.key))
		} else {
			unknown = append(unknown, e)
		}
	}
	if len(unknown) > 0 {
		keys := make([]string, len(unknown))
		for i, e := range unknown {
			keys[i] = e.key
		}
		p.add(path, unknown[0].line, unknown[0].col, fmt.Sprintf(msgUnknownKey, quoteKeys(keys)))
	}
}

// nonEmpty reads a string of at least one character (REF: z.string().min(1)).
func (p *parser) nonEmpty(n *node, path, msg string) (string, bool) {
	if n.kind != kindString || n.str == "" {
		p.at(path, n, msg)
		return "", false
	}
	return n.str, true
}

// required reports a missing required key at its own path, positioned at its mapping.
func (p *parser) required(n *node, path, key, msg string) {
	if n.get(key) == nil {
		p.at(join(path, key), n, msg)
	}
}

// count reads an integer ≥ 0 (a JavaScript safe integer).
func (p *parser) count(n *node, path string) (int, bool) {
	if n.kind != kindNumber || n.num != math.Trunc(n.num) || n.num < 0 || n.num > 1<<53 {
		p.at(path, n, msgCount)
		return 0, false
	}
	return int(n.num), true
}

// value converts a node to a Value.
func value(n *node) Value {
	switch n.kind {
	case kindBool:
		return BoolValue(n.truth)
	case kindNumber:
		return NumberValue(n.num)
	case kindString:
		return StringValue(n.str)
	case kindSeq:
		items := make([]Value, len(n.items))
		for i, it := range n.items {
			items[i] = value(it)
		}
		return Value{Kind: ValueList, List: items}
	case kindMap:
		return Value{Kind: ValueMap, Map: fields(n)}
	}
	return Value{}
}

// fields converts a mapping node to Fields; an empty mapping is nil.
func fields(n *node) Fields {
	if len(n.entries) == 0 {
		return nil
	}
	out := make(Fields, len(n.entries))
	for i, e := range n.entries {
		out[i] = Field{Key: e.key, Value: value(e.val)}
	}
	return out
}

// regex validates one regex-capable string (MT-04).
func (p *parser) regex(s string, n *node, path string) {
	if err := validateRegexForm(s); err != nil {
		p.at(path, n, fmt.Sprintf(msgMalformedRegex, jsonQuote(s), err.Error()))
	}
}

// matcher reads a `whenInput` / `input` mapping, validating every string leaf — inside
// lists too — as a potential regex (MT-05, MT-10).
func (p *parser) matcher(n *node, path string) (Fields, bool) {
	if n.kind != kindMap {
		p.at(path, n, msgMatcher)
		return nil, false
	}
	before := len(p.issues)
	var walk func(n *node, path string)
	walk = func(n *node, path string) {
		switch n.kind {
		case kindString:
			p.regex(n.str, n, path)
		case kindSeq:
			for i, it := range n.items {
				walk(it, index(path, i))
			}
		case kindMap:
			for _, e := range n.entries {
				walk(e.val, join(path, e.key))
			}
		}
	}
	walk(n, path)
	return fields(n), len(p.issues) == before
}

// variableMap reads a name → value mapping whose names must be variable names (CD-30,
// ST-03); typeMsg refuses a value that is not a mapping.
func (p *parser) variableMap(n *node, path, typeMsg string) Fields {
	if n.kind != kindMap {
		p.at(path, n, typeMsg)
		return nil
	}
	for _, e := range n.entries {
		if !spec.IsVariableName(e.key) {
			p.add(join(path, e.key), e.line, e.col, msgVariableName)
		}
	}
	return fields(n)
}

// --- Prose ------------------------------------------------------------------------

// isJSSpace reports the characters JavaScript's \s and trim() treat as whitespace.
func isJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0x00A0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF:
		return true
	}
	return r >= 0x2000 && r <= 0x200A
}

// jsTrim is JavaScript's String.prototype.trim.
func jsTrim(s string) string { return strings.TrimFunc(s, isJSSpace) }

// collapseWhitespace trims both ends and turns every whitespace run into one space
// (CD-01; the reference's value.replace(/\s+/g, " ").trim()).
func collapseWhitespace(s string) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		if isJSSpace(r) {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}

// utf16Length is s's length in UTF-16 code units (JavaScript's String length).
func utf16Length(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// --- The document -----------------------------------------------------------------

func (p *parser) document(root *node) *CaseDocument {
	doc := &CaseDocument{}
	doc.Title = p.prose(root, "title", msgTitleRequired, msgTitleTooLong, CaseTitleMaxLength, true)
	doc.Description = p.prose(root, "description", msgDescriptionRequired, msgDescriptionTooLong, CaseDescriptionMaxLength, false)
	if e := root.get("skip"); e != nil {
		doc.Skip, _ = p.nonEmpty(e.val, "skip", msgSkip)
	}
	if e := root.get("trigger"); e != nil {
		doc.Trigger = p.trigger(e.val)
	}
	if e := root.get("variables"); e != nil {
		doc.Variables = p.variableMap(e.val, "variables", msgVariables)
	}
	if e := root.get("workspace"); e != nil {
		doc.Workspace = p.workspace(e.val)
	}
	if e := root.get("mocks"); e != nil {
		doc.Mocks = p.mocks(e.val)
	}
	if e := root.get("clock"); e != nil {
		doc.Clock = p.clock(e.val)
	}
	if e := root.get("steps"); e != nil {
		doc.Steps = p.steps(e.val)
	}
	var unknown []*entry
	for i := range root.entries {
		if e := &root.entries[i]; !slices.Contains(TopLevelKeys, e.key) {
			unknown = append(unknown, e)
		}
	}
	if len(unknown) > 0 {
		keys := make([]string, len(unknown))
		for i, e := range unknown {
			keys[i] = e.key
		}
		p.add("", unknown[0].line, unknown[0].col,
			fmt.Sprintf(msgUnknownTopKey, quoteKeys(keys), strings.Join(TopLevelKeys, ", ")))
	}
	return doc
}

// prose reads title or description (CD-01): a string whose collapsed form is non-empty
// and at most limit UTF-16 code units; a title must not span lines after trimming.
func (p *parser) prose(root *node, key, requiredMsg, tooLongMsg string, limit int, title bool) string {
	e := root.get(key)
	if e == nil {
		p.at(key, root, requiredMsg)
		return ""
	}
	n := e.val
	collapsed := ""
	if n.kind == kindString {
		collapsed = collapseWhitespace(n.str)
	}
	switch {
	case collapsed == "":
		p.at(key, n, requiredMsg)
	case title && strings.Contains(jsTrim(n.str), "\n"):
		p.at(key, n, msgTitleSingleLine)
	case utf16Length(collapsed) > limit:
		p.at(key, n, fmt.Sprintf(tooLongMsg, utf16Length(collapsed)))
	}
	return collapsed
}

// trigger reads `trigger: { id }` (CD-20); `args` gets its pointer to variables.
func (p *parser) trigger(n *node) *TriggerDecl {
	if n.kind != kindMap {
		p.at("trigger", n, msgTrigger)
		return nil
	}
	decl := &TriggerDecl{}
	var unknown []string
	var first *entry
	for i := range n.entries {
		e := &n.entries[i]
		switch e.key {
		case "id":
			decl.ID, _ = p.nonEmpty(e.val, "trigger.id", msgTriggerID)
		case "args":
			p.add("", e.line, e.col, msgTriggerArgs)
		default:
			if first == nil {
				first = e
			}
			unknown = append(unknown, e.key)
		}
	}
	if first != nil {
		p.add("trigger", first.line, first.col, fmt.Sprintf(msgUnknownKey, quoteKeys(unknown)))
	}
	p.required(n, "trigger", "id", msgTriggerID)
	return decl
}

// workspace reads `workspace:` (CD-40…CD-44).
func (p *parser) workspace(n *node) []WorkspaceEntry {
	if n.kind != kindMap {
		p.at("workspace", n, msgWorkspace)
		return nil
	}
	var out []WorkspaceEntry
	for _, e := range n.entries {
		path := join("workspace", e.key)
		if e.key == "" {
			p.add("workspace", e.line, e.col, msgWorkspacePath)
		}
		v := e.val
		if v.kind == kindMap && len(v.entries) == 1 && v.entries[0].key == "from" {
			from, _ := p.nonEmpty(v.entries[0].val, path, msgFrom)
			out = append(out, WorkspaceEntry{Path: e.key, Source: WorkspaceFile, From: from})
			continue
		}
		out = append(out, WorkspaceEntry{Path: e.key, Source: WorkspaceInline, Content: value(v)})
	}
	return out
}

// mocks reads `mocks:` (CD-50, CD-51).
func (p *parser) mocks(n *node) []Mock {
	if n.kind != kindSeq {
		p.at("mocks", n, msgMocksList)
		return nil
	}
	var out []Mock
	for i, it := range n.items {
		path := index("mocks", i)
		if it.kind != kindMap {
			p.at(path, it, msgMock)
			continue
		}
		var m Mock
		p.strict(it, path, []string{"tool", "whenInput", "result"}, func(e *entry, f string) {
			switch e.key {
			case "tool":
				if name, ok := p.nonEmpty(e.val, f, msgMockTool); ok {
					m.Name = name
					if slices.Contains(mockRefusedTools, name) {
						p.at(f, e.val, fmt.Sprintf(msgMockControl, name))
					}
				}
			case "whenInput":
				m.WhenInput, _ = p.matcher(e.val, f)
			case "result":
				m.Result = value(e.val)
			}
		})
		p.required(it, path, "tool", msgMockTool)
		p.required(it, path, "result", msgMockResult)
		out = append(out, m)
	}
	return out
}

// clock reads `clock:` from its raw scalar text (CD-60).
func (p *parser) clock(n *node) string {
	if !n.isScalar() || n.kind == kindNull {
		p.at("clock", n, msgClockShape)
		return ""
	}
	switch _, reason := parseClock(n.raw); reason {
	case clockNoZone:
		p.at("clock", n, fmt.Sprintf(msgClockNoZone, "'"+n.raw+"'"))
	case clockImpossible:
		p.at("clock", n, fmt.Sprintf(msgClockInvalid, "'"+n.raw+"'"))
	}
	return n.raw
}

// --- Steps ------------------------------------------------------------------------

func (p *parser) steps(n *node) []Step {
	if n.kind != kindSeq {
		p.at("steps", n, msgStepsList)
		return nil
	}
	var out []Step
	hasAction := false
	for i, it := range n.items {
		path := index("steps", i)
		if it.kind != kindMap {
			p.at(path, it, msgStepShape)
			continue
		}
		if len(it.entries) != 1 {
			keys := "none"
			if len(it.entries) > 0 {
				ks := make([]string, len(it.entries))
				for j, e := range it.entries {
					ks[j] = e.key
				}
				keys = strings.Join(ks, ", ")
			}
			p.at(path, it, fmt.Sprintf(msgStepKeys, keys))
			continue
		}
		e := it.entries[0]
		kind := StepKind(e.key)
		f := join(path, e.key)
		var step Step
		switch {
		case kind.IsAction(): // a malformed action still counts as the action above (CD-72)
			hasAction = true
			step = p.action(kind, e.val, f)
		case kind.IsAssertion():
			if !hasAction {
				p.at(path, it, fmt.Sprintf(msgNoPrecedingAction, kind))
			}
			step = p.assertion(kind, e.val, f)
		default:
			p.add(path, e.line, e.col, fmt.Sprintf(msgUnknownStep, e.key, kindList(ActionKinds), kindList(AssertionKinds)))
			continue
		}
		if step != nil {
			out = append(out, step)
		}
	}
	return out
}

func kindList(kinds []StepKind) string {
	s := make([]string, len(kinds))
	for i, k := range kinds {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

// action reads the payload of an action step at path (ST-01…ST-03).
func (p *parser) action(kind StepKind, n *node, path string) Step {
	switch kind {
	case StepSend:
		msg, _ := p.nonEmpty(n, path, msgSend)
		return SendStep{Message: msg}
	case StepDecide:
		if n.kind != kindMap {
			p.at(path, n, msgDecide)
			return nil
		}
		var s DecideStep
		p.strict(n, path, []string{"to", "comment"}, func(e *entry, f string) {
			switch e.key {
			case "to":
				s.To, _ = p.nonEmpty(e.val, f, msgDecideTo)
			case "comment":
				if e.val.kind != kindString {
					p.at(f, e.val, msgComment)
				}
				s.Comment = e.val.str
			}
		})
		p.required(n, path, "to", msgDecideTo)
		return s
	default: // StepDeliver
		if n.kind != kindMap {
			p.at(path, n, msgDeliver)
			return nil
		}
		var s DeliverStep
		p.strict(n, path, []string{"trigger", "variables"}, func(e *entry, f string) {
			switch e.key {
			case "trigger":
				s.Trigger, _ = p.nonEmpty(e.val, f, msgTriggerID)
			case "variables":
				s.Variables = p.variableMap(e.val, f, msgDeliverVars)
			}
		})
		p.required(n, path, "trigger", msgTriggerID)
		return s
	}
}

// assertion reads the payload of an assertion step at path (§7.1, AX-01…AX-15).
func (p *parser) assertion(kind StepKind, n *node, path string) Step {
	switch kind {
	case StepSucceeded, StepUsedNoTools, StepNoTraversal:
		if n.kind != kindBool || !n.truth {
			p.at(path, n, fmt.Sprintf(msgLiteralTrue, kind))
		}
		switch kind {
		case StepSucceeded:
			return SucceededAssertion{}
		case StepUsedNoTools:
			return UsedNoToolsAssertion{}
		}
		return NoTraversalAssertion{}
	case StepParked:
		return p.parked(n, path)
	case StepRaised:
		return p.raised(n, path)
	case StepVariables:
		return p.variablesAssertion(n, path)
	case StepReachedState:
		state, _ := p.nonEmpty(n, path, msgStateSlug)
		return ReachedStateAssertion{State: state}
	case StepTriggerArrival:
		trigger, _ := p.nonEmpty(n, path, msgTriggerID)
		return TriggerArrivalAssertion{Trigger: trigger}
	case StepReply:
		return p.reply(n, path)
	case StepCalledTool, StepNotCalledTool, StepBlockedTool:
		tp := p.toolPattern(n, path)
		switch kind {
		case StepCalledTool:
			return CalledToolAssertion{ToolPattern: tp}
		case StepNotCalledTool:
			return NotCalledToolAssertion{ToolPattern: tp}
		}
		return BlockedToolAssertion{ToolPattern: tp}
	case StepTrail:
		return p.trail(n, path)
	case StepRanWorkflow:
		return p.ranWorkflow(n, path)
	default: // StepGrade
		return p.grade(n, path)
	}
}

// parked reads `parked` (AX-02).
func (p *parser) parked(n *node, path string) Step {
	var a ParkedAssertion
	switch {
	case n.kind == kindBool && n.truth:
	case n.kind == kindString && (n.str == ChannelDecision || n.str == ChannelInput):
		a.Channel = n.str
	case n.kind == kindMap:
		p.strict(n, path, []string{"channel", "state"}, func(e *entry, f string) {
			switch e.key {
			case "channel":
				if v := e.val; v.kind == kindString && (v.str == ChannelDecision || v.str == ChannelInput) {
					a.Channel = v.str
				} else {
					p.at(f, v, msgChannel)
				}
			case "state":
				a.State, _ = p.nonEmpty(e.val, f, msgStateSlug)
			}
		})
	default:
		p.at(path, n, msgParked)
	}
	return a
}

// raised reads `raised` (AX-03).
func (p *parser) raised(n *node, path string) Step {
	var a RaisedAssertion
	switch {
	case n.kind == kindBool && n.truth:
	case n.kind == kindString && n.str != "":
		a.Code = n.str
	case n.kind == kindMap:
		p.strict(n, path, []string{"code", "reason"}, func(e *entry, f string) {
			switch e.key {
			case "code":
				a.Code, _ = p.nonEmpty(e.val, f, msgRaisedCode)
			case "reason":
				if reason, ok := p.nonEmpty(e.val, f, msgRaisedReason); ok {
					a.Reason = reason
					p.regex(reason, e.val, f)
				}
			}
		})
		if n.get("code") == nil && n.get("reason") == nil {
			p.at(path, n, msgRaisedEmpty)
		}
	default:
		p.at(path, n, msgRaised)
	}
	return a
}

// variablesAssertion reads `variables: { expect, path?, locked? }` (AX-04).
func (p *parser) variablesAssertion(n *node, path string) Step {
	var a VariablesAssertion
	if n.kind != kindMap {
		p.at(path, n, msgVariablesStep)
		return a
	}
	p.strict(n, path, []string{"expect", "path", "locked"}, func(e *entry, f string) {
		v := e.val
		switch e.key {
		case "expect":
			if v.kind != kindMap {
				p.at(f, v, msgExpect)
				return
			}
			a.Expect = fields(v)
		case "path":
			if v.kind != kindMap {
				p.at(f, v, msgPathMap)
				return
			}
			for _, pe := range v.entries {
				if pe.val.kind != kindString {
					p.at(join(f, pe.key), pe.val, msgPathValue)
					continue
				}
				a.Path = append(a.Path, VariablePath{Name: pe.key, Path: pe.val.str})
			}
		case "locked":
			if v.kind != kindMap {
				p.at(f, v, msgLockedMap)
				return
			}
			for _, le := range v.entries {
				if le.val.kind != kindBool {
					p.at(join(f, le.key), le.val, msgLockedValue)
					continue
				}
				a.Locked = append(a.Locked, VariableLock{Name: le.key, Locked: le.val.truth})
			}
		}
	})
	p.required(n, path, "expect", msgExpect)
	return a
}

// reply reads `reply: { includes?, excludes? }` (AX-06).
func (p *parser) reply(n *node, path string) Step {
	var a ReplyAssertion
	if n.kind != kindMap {
		p.at(path, n, msgReply)
		return a
	}
	p.strict(n, path, []string{"includes", "excludes"}, func(e *entry, f string) {
		tokens := p.tokens(e.val, f)
		if e.key == "includes" {
			a.Includes = tokens
		} else {
			a.Excludes = tokens
		}
	})
	if n.get("includes") == nil && n.get("excludes") == nil {
		p.at(path, n, msgReplyEmpty)
	}
	return a
}

// tokens reads one reply token or a list of them; an empty list is nil (API-06).
func (p *parser) tokens(n *node, path string) []string {
	switch n.kind {
	case kindString:
		p.regex(n.str, n, path)
		return []string{n.str}
	case kindSeq:
		var out []string
		for i, it := range n.items {
			f := index(path, i)
			if it.kind != kindString {
				p.at(f, it, msgToken)
				continue
			}
			p.regex(it.str, it, f)
			out = append(out, it.str)
		}
		return out
	}
	p.at(path, n, msgTokens)
	return nil
}

// toolPattern reads `{ name, input? }` (AX-07…AX-09).
func (p *parser) toolPattern(n *node, path string) ToolPattern {
	var tp ToolPattern
	if n.kind != kindMap {
		p.at(path, n, msgToolStep)
		return tp
	}
	p.strict(n, path, []string{"name", "input"}, func(e *entry, f string) {
		switch e.key {
		case "name":
			tp.Name, _ = p.nonEmpty(e.val, f, msgToolName)
		case "input":
			tp.Input, _ = p.matcher(e.val, f)
		}
	})
	p.required(n, path, "name", msgToolName)
	return tp
}

// trail reads `trail: { to?, kind?, reason?, count }` (AX-11).
func (p *parser) trail(n *node, path string) Step {
	var a TrailAssertion
	if n.kind != kindMap {
		p.at(path, n, msgTrail)
		return a
	}
	p.strict(n, path, []string{"to", "kind", "reason", "count"}, func(e *entry, f string) {
		v := e.val
		switch e.key {
		case "to":
			a.To, _ = p.nonEmpty(v, f, msgStateSlug)
		case "kind":
			if v.kind == kindString && slices.Contains(TrailKinds, v.str) {
				a.TrailKind = v.str
			} else {
				p.at(f, v, msgTrailKind)
			}
		case "reason":
			a.Reason, _ = p.nonEmpty(v, f, msgTrailReason)
		case "count":
			a.Count, _ = p.count(v, f)
		}
	})
	if n.get("to") == nil && n.get("kind") == nil && n.get("reason") == nil {
		p.at(path, n, msgTrailEmpty)
	}
	p.required(n, path, "count", msgCount)
	return a
}

// ranWorkflow reads `ranWorkflow: { workflow, status?, count? }` (AX-14).
func (p *parser) ranWorkflow(n *node, path string) Step {
	a := RanWorkflowAssertion{Status: StatusOK}
	if n.kind != kindMap {
		p.at(path, n, msgRanWorkflow)
		return a
	}
	p.strict(n, path, []string{"workflow", "status", "count"}, func(e *entry, f string) {
		v := e.val
		switch e.key {
		case "workflow":
			a.Workflow, _ = p.nonEmpty(v, f, msgWorkflowSlug)
		case "status":
			if v.kind == kindString && (v.str == StatusOK || v.str == StatusError) {
				a.Status = v.str
			} else {
				p.at(f, v, msgStatus)
			}
		case "count":
			if c, ok := p.count(v, f); ok {
				a.Count = &c
			}
		}
	})
	p.required(n, path, "workflow", msgWorkflowSlug)
	return a
}

// grade reads `grade: { closedQA, atLeast }` (AX-15).
func (p *parser) grade(n *node, path string) Step {
	var a GradeAssertion
	if n.kind != kindMap {
		p.at(path, n, msgGrade)
		return a
	}
	p.strict(n, path, []string{"closedQA", "atLeast"}, func(e *entry, f string) {
		v := e.val
		switch e.key {
		case "closedQA":
			a.ClosedQA, _ = p.nonEmpty(v, f, msgClosedQA)
		case "atLeast":
			if v.kind != kindNumber || !(v.num >= 0 && v.num <= 1) {
				p.at(f, v, msgAtLeast)
				return
			}
			a.AtLeast = v.num
		}
	})
	p.required(n, path, "closedQA", msgClosedQA)
	p.required(n, path, "atLeast", msgAtLeast)
	return a
}
