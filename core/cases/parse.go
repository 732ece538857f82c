package cases

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/yamltree"
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

// node and entry are the expanded YAML tree that core/yamltree builds: aliases expanded
// within the bound workflow.yaml uses (spec 01 §2.13 rule 4), merge keys applied, the
// YAML 1.2 core schema (yes/no/on/off and dates stay strings), positions. A scalar's
// Str is its source text whatever its kind (`clock` reads it).
type (
	node  = yamltree.Node
	entry = yamltree.Entry
)

// parser collects issues while reading a document.
type parser struct {
	issues []Issue
}

func (p *parser) add(path string, line, col int, msg string) {
	p.issues = append(p.issues, Issue{Path: path, Message: msg, Line: line, Column: col})
}

func (p *parser) at(path string, n *node, msg string) { p.add(path, n.Line, n.Col, msg) }

// decode reads exactly one YAML document whose root is a mapping and expands it; nil
// when there is none (the issue recorded).
func (p *parser) decode(src []byte) *node {
	root, refusal := yamltree.Decode(src, yamltree.Options{Index: index, Report: p.yamlFinding})
	if refusal == nil {
		return root
	}
	switch refusal.Reason {
	case yamltree.NoDocument: // empty, or comments only
		p.add("", 0, 0, msgNotMapping)
	case yamltree.SyntaxError:
		p.yamlError(refusal)
	case yamltree.ManyDocuments:
		if refusal.Err != nil { // the second document does not parse
			p.yamlError(refusal)
		} else {
			p.add("", refusal.Line, refusal.Col, msgMultiDoc)
		}
	case yamltree.NotMapping:
		p.add("", refusal.Line, refusal.Col, msgNotMapping)
	} // yamltree.Refused: the finding is already recorded
	return nil
}

func (p *parser) yamlError(r *yamltree.Refusal) {
	p.add("", r.Line, 0, fmt.Sprintf(msgYAMLParse, strings.TrimPrefix(r.Err.Error(), "yaml: ")))
}

// yamlFinding records what the tree refused.
func (p *parser) yamlFinding(f yamltree.Finding) {
	var msg string
	switch f.Problem {
	case yamltree.AliasBomb:
		msg = msgAliasBomb
	case yamltree.AliasCycle:
		msg = fmt.Sprintf(msgAliasCycle, f.Name)
	case yamltree.DuplicateKey:
		msg = fmt.Sprintf(msgDuplicateKey, f.Name, f.FirstLine)
	case yamltree.NonStringKey:
		msg = fmt.Sprintf(msgNonStringKey, jsonQuote(f.Name))
	case yamltree.BadMerge:
		msg = msgMerge
	}
	p.add(f.Path, f.Line, f.Col, msg)
}

// --- Paths and shared readers ---------------------------------------------------

// join renders a key under path: `steps[2].reply`.
func join(path, key string) string { return yamltree.Join(path, key) }

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
	for i := range n.Entries {
		e := &n.Entries[i]
		if slices.Contains(known, e.Key) {
			fn(e, join(path, e.Key))
		} else {
			unknown = append(unknown, e)
		}
	}
	if len(unknown) > 0 {
		keys := make([]string, len(unknown))
		for i, e := range unknown {
			keys[i] = e.Key
		}
		p.add(path, unknown[0].Line, unknown[0].Col, fmt.Sprintf(msgUnknownKey, quoteKeys(keys)))
	}
}

// nonEmpty reads a string of at least one character (REF: z.string().min(1)).
func (p *parser) nonEmpty(n *node, path, msg string) (string, bool) {
	if n.Kind != yamltree.String || n.Str == "" {
		p.at(path, n, msg)
		return "", false
	}
	return n.Str, true
}

// required reports a missing required key at its own path, positioned at its mapping.
func (p *parser) required(n *node, path, key, msg string) {
	if n.Entry(key) == nil {
		p.at(join(path, key), n, msg)
	}
}

// count reads an integer ≥ 0 (a JavaScript safe integer).
func (p *parser) count(n *node, path string) (int, bool) {
	if n.Kind != yamltree.Number || n.Num != math.Trunc(n.Num) || n.Num < 0 || n.Num > 1<<53 {
		p.at(path, n, msgCount)
		return 0, false
	}
	return int(n.Num), true
}

// value converts a node to a Value.
func value(n *node) Value {
	switch n.Kind {
	case yamltree.Bool:
		return BoolValue(n.Truth)
	case yamltree.Number:
		return NumberValue(n.Num)
	case yamltree.String:
		return StringValue(n.Str)
	case yamltree.Seq:
		items := make([]Value, len(n.Items))
		for i, it := range n.Items {
			items[i] = value(it)
		}
		return Value{Kind: ValueList, List: items}
	case yamltree.Map:
		return Value{Kind: ValueMap, Map: fields(n)}
	}
	return Value{}
}

// fields converts a mapping node to Fields; an empty mapping is nil.
func fields(n *node) Fields {
	if len(n.Entries) == 0 {
		return nil
	}
	out := make(Fields, len(n.Entries))
	for i, e := range n.Entries {
		out[i] = Field{Key: e.Key, Value: value(e.Val)}
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
	if n.Kind != yamltree.Map {
		p.at(path, n, msgMatcher)
		return nil, false
	}
	before := len(p.issues)
	var walk func(n *node, path string)
	walk = func(n *node, path string) {
		switch n.Kind {
		case yamltree.String:
			p.regex(n.Str, n, path)
		case yamltree.Seq:
			for i, it := range n.Items {
				walk(it, index(path, i))
			}
		case yamltree.Map:
			for _, e := range n.Entries {
				walk(e.Val, join(path, e.Key))
			}
		}
	}
	walk(n, path)
	return fields(n), len(p.issues) == before
}

// variableMap reads a name → value mapping whose names must be variable names (CD-30,
// ST-03); typeMsg refuses a value that is not a mapping.
func (p *parser) variableMap(n *node, path, typeMsg string) Fields {
	if n.Kind != yamltree.Map {
		p.at(path, n, typeMsg)
		return nil
	}
	for _, e := range n.Entries {
		if !spec.IsVariableName(e.Key) {
			p.add(join(path, e.Key), e.Line, e.Col, msgVariableName)
		}
	}
	return fields(n)
}

// --- Prose ------------------------------------------------------------------------

// collapseWhitespace trims both ends and turns every whitespace run into one space
// (CD-01; the reference's value.replace(/\s+/g, " ").trim()).
func collapseWhitespace(s string) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		if spec.IsJSSpace(r) {
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

// --- The document -----------------------------------------------------------------

func (p *parser) document(root *node) *CaseDocument {
	doc := &CaseDocument{}
	doc.Title = p.prose(root, "title", msgTitleRequired, msgTitleTooLong, CaseTitleMaxLength, true)
	doc.Description = p.prose(root, "description", msgDescriptionRequired, msgDescriptionTooLong, CaseDescriptionMaxLength, false)
	if e := root.Entry("skip"); e != nil {
		doc.Skip, _ = p.nonEmpty(e.Val, "skip", msgSkip)
	}
	if e := root.Entry("trigger"); e != nil {
		doc.Trigger = p.trigger(e.Val)
	}
	if e := root.Entry("variables"); e != nil {
		doc.Variables = p.variableMap(e.Val, "variables", msgVariables)
	}
	if e := root.Entry("workspace"); e != nil {
		doc.Workspace = p.workspace(e.Val)
	}
	if e := root.Entry("mocks"); e != nil {
		doc.Mocks = p.mocks(e.Val)
	}
	if e := root.Entry("clock"); e != nil {
		doc.Clock = p.clock(e.Val)
	}
	if e := root.Entry("steps"); e != nil {
		doc.Steps = p.steps(e.Val)
	}
	var unknown []*entry
	for i := range root.Entries {
		if e := &root.Entries[i]; !slices.Contains(TopLevelKeys, e.Key) {
			unknown = append(unknown, e)
		}
	}
	if len(unknown) > 0 {
		keys := make([]string, len(unknown))
		for i, e := range unknown {
			keys[i] = e.Key
		}
		p.add("", unknown[0].Line, unknown[0].Col,
			fmt.Sprintf(msgUnknownTopKey, quoteKeys(keys), strings.Join(TopLevelKeys, ", ")))
	}
	return doc
}

// prose reads title or description (CD-01): a string whose collapsed form is non-empty
// and at most limit UTF-16 code units; a title must not span lines after trimming.
func (p *parser) prose(root *node, key, requiredMsg, tooLongMsg string, limit int, title bool) string {
	e := root.Entry(key)
	if e == nil {
		p.at(key, root, requiredMsg)
		return ""
	}
	n := e.Val
	collapsed := ""
	if n.Kind == yamltree.String {
		collapsed = collapseWhitespace(n.Str)
	}
	switch {
	case collapsed == "":
		p.at(key, n, requiredMsg)
	case title && strings.Contains(spec.JSTrim(n.Str), "\n"):
		p.at(key, n, msgTitleSingleLine)
	case spec.UTF16Len(collapsed) > limit:
		p.at(key, n, fmt.Sprintf(tooLongMsg, spec.UTF16Len(collapsed)))
	}
	return collapsed
}

// trigger reads `trigger: { id }` (CD-20); `args` gets its pointer to variables.
func (p *parser) trigger(n *node) *TriggerDecl {
	if n.Kind != yamltree.Map {
		p.at("trigger", n, msgTrigger)
		return nil
	}
	decl := &TriggerDecl{}
	var unknown []string
	var first *entry
	for i := range n.Entries {
		e := &n.Entries[i]
		switch e.Key {
		case "id":
			decl.ID, _ = p.nonEmpty(e.Val, "trigger.id", msgTriggerID)
		case "args":
			p.add("", e.Line, e.Col, msgTriggerArgs)
		default:
			if first == nil {
				first = e
			}
			unknown = append(unknown, e.Key)
		}
	}
	if first != nil {
		p.add("trigger", first.Line, first.Col, fmt.Sprintf(msgUnknownKey, quoteKeys(unknown)))
	}
	p.required(n, "trigger", "id", msgTriggerID)
	return decl
}

// workspace reads `workspace:` (CD-40…CD-44).
func (p *parser) workspace(n *node) []WorkspaceEntry {
	if n.Kind != yamltree.Map {
		p.at("workspace", n, msgWorkspace)
		return nil
	}
	var out []WorkspaceEntry
	for _, e := range n.Entries {
		path := join("workspace", e.Key)
		if e.Key == "" {
			p.add("workspace", e.Line, e.Col, msgWorkspacePath)
		}
		v := e.Val
		if v.Kind == yamltree.Map && len(v.Entries) == 1 && v.Entries[0].Key == "from" {
			from, _ := p.nonEmpty(v.Entries[0].Val, path, msgFrom)
			out = append(out, WorkspaceEntry{Path: e.Key, Source: WorkspaceFile, From: from})
			continue
		}
		out = append(out, WorkspaceEntry{Path: e.Key, Source: WorkspaceInline, Content: value(v)})
	}
	return out
}

// mocks reads `mocks:` (CD-50, CD-51).
func (p *parser) mocks(n *node) []Mock {
	if n.Kind != yamltree.Seq {
		p.at("mocks", n, msgMocksList)
		return nil
	}
	var out []Mock
	for i, it := range n.Items {
		path := index("mocks", i)
		if it.Kind != yamltree.Map {
			p.at(path, it, msgMock)
			continue
		}
		var m Mock
		p.strict(it, path, []string{"tool", "whenInput", "result"}, func(e *entry, f string) {
			switch e.Key {
			case "tool":
				if name, ok := p.nonEmpty(e.Val, f, msgMockTool); ok {
					m.Name = name
					if slices.Contains(mockRefusedTools, name) {
						p.at(f, e.Val, fmt.Sprintf(msgMockControl, name))
					}
				}
			case "whenInput":
				m.WhenInput, _ = p.matcher(e.Val, f)
			case "result":
				m.Result = value(e.Val)
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
	if !n.IsScalar() || n.Kind == yamltree.Null {
		p.at("clock", n, msgClockShape)
		return ""
	}
	switch _, reason := parseClock(n.Str); reason {
	case clockNoZone:
		p.at("clock", n, fmt.Sprintf(msgClockNoZone, "'"+n.Str+"'"))
	case clockImpossible:
		p.at("clock", n, fmt.Sprintf(msgClockInvalid, "'"+n.Str+"'"))
	}
	return n.Str
}

// --- Steps ------------------------------------------------------------------------

func (p *parser) steps(n *node) []Step {
	if n.Kind != yamltree.Seq {
		p.at("steps", n, msgStepsList)
		return nil
	}
	var out []Step
	hasAction := false
	for i, it := range n.Items {
		path := index("steps", i)
		if it.Kind != yamltree.Map {
			p.at(path, it, msgStepShape)
			continue
		}
		if len(it.Entries) != 1 {
			keys := "none"
			if len(it.Entries) > 0 {
				ks := make([]string, len(it.Entries))
				for j, e := range it.Entries {
					ks[j] = e.Key
				}
				keys = strings.Join(ks, ", ")
			}
			p.at(path, it, fmt.Sprintf(msgStepKeys, keys))
			continue
		}
		e := it.Entries[0]
		kind := StepKind(e.Key)
		f := join(path, e.Key)
		var step Step
		switch {
		case kind.IsAction(): // a malformed action still counts as the action above (CD-72)
			hasAction = true
			step = p.action(kind, e.Val, f)
		case kind.IsAssertion():
			if !hasAction {
				p.at(path, it, fmt.Sprintf(msgNoPrecedingAction, kind))
			}
			step = p.assertion(kind, e.Val, f)
		default:
			p.add(path, e.Line, e.Col, fmt.Sprintf(msgUnknownStep, e.Key, kindList(ActionKinds), kindList(AssertionKinds)))
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
		if n.Kind != yamltree.Map {
			p.at(path, n, msgDecide)
			return nil
		}
		var s DecideStep
		p.strict(n, path, []string{"to", "comment"}, func(e *entry, f string) {
			switch e.Key {
			case "to":
				s.To, _ = p.nonEmpty(e.Val, f, msgDecideTo)
			case "comment":
				if e.Val.Kind != yamltree.String {
					p.at(f, e.Val, msgComment)
				}
				s.Comment = e.Val.Str
			}
		})
		p.required(n, path, "to", msgDecideTo)
		return s
	default: // StepDeliver
		if n.Kind != yamltree.Map {
			p.at(path, n, msgDeliver)
			return nil
		}
		var s DeliverStep
		p.strict(n, path, []string{"trigger", "variables"}, func(e *entry, f string) {
			switch e.Key {
			case "trigger":
				s.Trigger, _ = p.nonEmpty(e.Val, f, msgTriggerID)
			case "variables":
				s.Variables = p.variableMap(e.Val, f, msgDeliverVars)
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
		if n.Kind != yamltree.Bool || !n.Truth {
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
	case n.Kind == yamltree.Bool && n.Truth:
	case n.Kind == yamltree.String && (n.Str == ChannelDecision || n.Str == ChannelInput):
		a.Channel = n.Str
	case n.Kind == yamltree.Map:
		p.strict(n, path, []string{"channel", "state"}, func(e *entry, f string) {
			switch e.Key {
			case "channel":
				if v := e.Val; v.Kind == yamltree.String && (v.Str == ChannelDecision || v.Str == ChannelInput) {
					a.Channel = v.Str
				} else {
					p.at(f, v, msgChannel)
				}
			case "state":
				a.State, _ = p.nonEmpty(e.Val, f, msgStateSlug)
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
	case n.Kind == yamltree.Bool && n.Truth:
	case n.Kind == yamltree.String && n.Str != "":
		a.Code = n.Str
	case n.Kind == yamltree.Map:
		p.strict(n, path, []string{"code", "reason"}, func(e *entry, f string) {
			switch e.Key {
			case "code":
				a.Code, _ = p.nonEmpty(e.Val, f, msgRaisedCode)
			case "reason":
				if reason, ok := p.nonEmpty(e.Val, f, msgRaisedReason); ok {
					a.Reason = reason
					p.regex(reason, e.Val, f)
				}
			}
		})
		if n.Entry("code") == nil && n.Entry("reason") == nil {
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
	if n.Kind != yamltree.Map {
		p.at(path, n, msgVariablesStep)
		return a
	}
	p.strict(n, path, []string{"expect", "path", "locked"}, func(e *entry, f string) {
		v := e.Val
		switch e.Key {
		case "expect":
			if v.Kind != yamltree.Map {
				p.at(f, v, msgExpect)
				return
			}
			a.Expect = fields(v)
		case "path":
			if v.Kind != yamltree.Map {
				p.at(f, v, msgPathMap)
				return
			}
			for _, pe := range v.Entries {
				if pe.Val.Kind != yamltree.String {
					p.at(join(f, pe.Key), pe.Val, msgPathValue)
					continue
				}
				a.Path = append(a.Path, VariablePath{Name: pe.Key, Path: pe.Val.Str})
			}
		case "locked":
			if v.Kind != yamltree.Map {
				p.at(f, v, msgLockedMap)
				return
			}
			for _, le := range v.Entries {
				if le.Val.Kind != yamltree.Bool {
					p.at(join(f, le.Key), le.Val, msgLockedValue)
					continue
				}
				a.Locked = append(a.Locked, VariableLock{Name: le.Key, Locked: le.Val.Truth})
			}
		}
	})
	p.required(n, path, "expect", msgExpect)
	return a
}

// reply reads `reply: { includes?, excludes? }` (AX-06).
func (p *parser) reply(n *node, path string) Step {
	var a ReplyAssertion
	if n.Kind != yamltree.Map {
		p.at(path, n, msgReply)
		return a
	}
	p.strict(n, path, []string{"includes", "excludes"}, func(e *entry, f string) {
		tokens := p.tokens(e.Val, f)
		if e.Key == "includes" {
			a.Includes = tokens
		} else {
			a.Excludes = tokens
		}
	})
	if n.Entry("includes") == nil && n.Entry("excludes") == nil {
		p.at(path, n, msgReplyEmpty)
	}
	return a
}

// tokens reads one reply token or a list of them; an empty list is nil (API-06).
func (p *parser) tokens(n *node, path string) []string {
	switch n.Kind {
	case yamltree.String:
		p.regex(n.Str, n, path)
		return []string{n.Str}
	case yamltree.Seq:
		var out []string
		for i, it := range n.Items {
			f := index(path, i)
			if it.Kind != yamltree.String {
				p.at(f, it, msgToken)
				continue
			}
			p.regex(it.Str, it, f)
			out = append(out, it.Str)
		}
		return out
	}
	p.at(path, n, msgTokens)
	return nil
}

// toolPattern reads `{ name, input? }` (AX-07…AX-09).
func (p *parser) toolPattern(n *node, path string) ToolPattern {
	var tp ToolPattern
	if n.Kind != yamltree.Map {
		p.at(path, n, msgToolStep)
		return tp
	}
	p.strict(n, path, []string{"name", "input"}, func(e *entry, f string) {
		switch e.Key {
		case "name":
			tp.Name, _ = p.nonEmpty(e.Val, f, msgToolName)
		case "input":
			tp.Input, _ = p.matcher(e.Val, f)
		}
	})
	p.required(n, path, "name", msgToolName)
	return tp
}

// trail reads `trail: { to?, kind?, reason?, count }` (AX-11).
func (p *parser) trail(n *node, path string) Step {
	var a TrailAssertion
	if n.Kind != yamltree.Map {
		p.at(path, n, msgTrail)
		return a
	}
	p.strict(n, path, []string{"to", "kind", "reason", "count"}, func(e *entry, f string) {
		v := e.Val
		switch e.Key {
		case "to":
			a.To, _ = p.nonEmpty(v, f, msgStateSlug)
		case "kind":
			if v.Kind == yamltree.String && slices.Contains(TrailKinds, v.Str) {
				a.TrailKind = v.Str
			} else {
				p.at(f, v, msgTrailKind)
			}
		case "reason":
			a.Reason, _ = p.nonEmpty(v, f, msgTrailReason)
		case "count":
			a.Count, _ = p.count(v, f)
		}
	})
	if n.Entry("to") == nil && n.Entry("kind") == nil && n.Entry("reason") == nil {
		p.at(path, n, msgTrailEmpty)
	}
	p.required(n, path, "count", msgCount)
	return a
}

// ranWorkflow reads `ranWorkflow: { workflow, status?, count? }` (AX-14).
func (p *parser) ranWorkflow(n *node, path string) Step {
	a := RanWorkflowAssertion{Status: StatusOK}
	if n.Kind != yamltree.Map {
		p.at(path, n, msgRanWorkflow)
		return a
	}
	p.strict(n, path, []string{"workflow", "status", "count"}, func(e *entry, f string) {
		v := e.Val
		switch e.Key {
		case "workflow":
			a.Workflow, _ = p.nonEmpty(v, f, msgWorkflowSlug)
		case "status":
			if v.Kind == yamltree.String && (v.Str == StatusOK || v.Str == StatusError) {
				a.Status = v.Str
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
	if n.Kind != yamltree.Map {
		p.at(path, n, msgGrade)
		return a
	}
	p.strict(n, path, []string{"closedQA", "atLeast"}, func(e *entry, f string) {
		v := e.Val
		switch e.Key {
		case "closedQA":
			a.ClosedQA, _ = p.nonEmpty(v, f, msgClosedQA)
		case "atLeast":
			if v.Kind != yamltree.Number || !(v.Num >= 0 && v.Num <= 1) {
				p.at(f, v, msgAtLeast)
				return
			}
			a.AtLeast = v.Num
		}
	})
	p.required(n, path, "closedQA", msgClosedQA)
	p.required(n, path, "atLeast", msgAtLeast)
	return a
}
