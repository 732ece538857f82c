package cases

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/archmax-ai/archmax/core/spec"
)

// Prose limits of a case, in UTF-16 code units of the whitespace-collapsed text (CD-01;
// the reference's CASE_TITLE_MAX_LENGTH and CASE_DESCRIPTION_MAX_LENGTH).
const (
	CaseTitleMaxLength       = 60
	CaseDescriptionMaxLength = 200
)

// TestFileExtensions are the names a case file ends with (CE-10, TEST_FILE_EXTENSIONS).
// Treat as read-only.
var TestFileExtensions = []string{".test.yaml", ".test.yml"}

// TopLevelKeys are a case document's keys in grammar order — the order the unknown-key
// message lists them (CD-02) and SerializeCaseDocument writes them (API-06, OQ-C13: clock
// before steps). Only title and description are required. Treat as read-only.
var TopLevelKeys = []string{"title", "description", "skip", "trigger", "variables", "workspace", "mocks", "clock", "steps"}

// StepKind is a step's single key: an action or an assertion (CD-70, CD-71).
type StepKind string

// Step kinds: the three actions (§6.1) and the assertion catalogue (§7.1).
const (
	StepSend           StepKind = "send"
	StepDecide         StepKind = "decide"
	StepDeliver        StepKind = "deliver"
	StepSucceeded      StepKind = "succeeded"
	StepParked         StepKind = "parked"
	StepRaised         StepKind = "raised"
	StepVariables      StepKind = "variables"
	StepReachedState   StepKind = "reachedState"
	StepReply          StepKind = "reply"
	StepCalledTool     StepKind = "calledTool"
	StepNotCalledTool  StepKind = "notCalledTool"
	StepBlockedTool    StepKind = "blockedTool"
	StepUsedNoTools    StepKind = "usedNoTools"
	StepTrail          StepKind = "trail"
	StepNoTraversal    StepKind = "noTraversal"
	StepTriggerArrival StepKind = "triggerArrival"
	StepRanWorkflow    StepKind = "ranWorkflow"
	StepGrade          StepKind = "grade"
)

// ActionKinds are the action step kinds in grammar order (ST-01…ST-03). Treat as
// read-only.
var ActionKinds = []StepKind{StepSend, StepDecide, StepDeliver}

// AssertionKinds are the assertion step kinds in grammar order — the order of the §7.1
// catalogue, which the unknown-step message lists (CD-70). Treat as read-only.
var AssertionKinds = []StepKind{
	StepSucceeded, StepParked, StepRaised, StepVariables, StepReachedState, StepReply,
	StepCalledTool, StepNotCalledTool, StepBlockedTool, StepUsedNoTools, StepTrail,
	StepNoTraversal, StepTriggerArrival, StepRanWorkflow, StepGrade,
}

// structuralKinds are the assertions whose failure halts the case (§7.1, ST-30).
var structuralKinds = []StepKind{
	StepSucceeded, StepParked, StepRaised, StepVariables, StepReachedState,
	StepTrail, StepNoTraversal, StepTriggerArrival,
}

// IsAction reports whether k is send, decide or deliver (CD-71).
func (k StepKind) IsAction() bool { return slices.Contains(ActionKinds, k) }

// IsAssertion reports whether k is one of AssertionKinds (CD-71, §7.1).
func (k StepKind) IsAssertion() bool { return slices.Contains(AssertionKinds, k) }

// Structural reports whether an assertion of kind k halts the case when it fails (§7.1):
// succeeded, parked, raised, variables, reachedState, trail, noTraversal and
// triggerArrival are structural; reply, calledTool, notCalledTool, blockedTool,
// usedNoTools, ranWorkflow and grade are not. Actions are not structural.
func (k StepKind) Structural() bool { return slices.Contains(structuralKinds, k) }

// Trail step kinds a `trail` assertion may name (AX-11; anything else is a schema
// error). Treat as read-only.
var TrailKinds = []string{"trigger", "agent", "human", "grader", "code", "sub-workflow", "reset", "on_error"}

// Park channels a `parked` assertion may pin (AX-02).
const (
	ChannelDecision = "decision"
	ChannelInput    = "input"
)

// Delegation statuses a `ranWorkflow` assertion may name (AX-14); StatusOK is the default.
const (
	StatusOK    = "ok"
	StatusError = "error"
)

// mockRefusedTools are the control tools a mock may not name (CD-51): the harness
// control tools except archmax_eval and archmax_run, which CD-51 does not list.
var mockRefusedTools = []string{
	spec.AdvanceTool, spec.RaiseTool, spec.WaitTool, spec.ResetTool,
	spec.GetVariablesTool, spec.SetVariablesTool, spec.GetHistoryTool,
}

// validateRegexForm checks one regex-capable string at parse time (MT-04, MT-05). It is
// called with every such string — reply tokens, raised.reason, and every string leaf of
// calledTool/notCalledTool/blockedTool `input` and of mocks[].whenInput — and returns nil
// when the string is not regex-shaped (MT-01) or compiles as an ECMAScript regex with
// valid flags (MT-02, MT-03); otherwise an error whose text is the engine's message,
// which the parser reports as `malformed regex "<raw, JSON-quoted>": <message>`.
// match.go installs the real check (compileRegexForm) from its init; this default lets
// every string pass.
var validateRegexForm = func(s string) error { return nil }

// CaseDocument is one parsed case file (§5, API-05, API-07). Empty optional parts are
// nil: a `variables: {}`, `workspace: {}`, `mocks: []` or `steps: []` reads as absent.
// Title and Description are stored whitespace-collapsed (CD-01).
type CaseDocument struct {
	Title       string           // required, collapsed, ≤ CaseTitleMaxLength UTF-16 units (CD-01)
	Description string           // required, collapsed, ≤ CaseDescriptionMaxLength (CD-01)
	Skip        string           // the skip reason; "" when the case runs (CD-10)
	Trigger     *TriggerDecl     // nil: the manual trigger (CD-20, CD-21)
	Variables   Fields           // seeds, locked, sent on every send (CD-30, CD-31)
	Workspace   []WorkspaceEntry // seeded before any step, in document order (CD-40…CD-44)
	Mocks       []Mock           // declarative tool results, first match wins (CD-50…CD-52)
	Clock       string           // the raw clock text; "" when absent (CD-60; see ClockTime)
	Steps       []Step           // actions and assertions in order (CD-70…CD-73)
}

// TriggerID is the trigger every send of the case runs under: the declared id, or
// spec.ManualTrigger when the case declares none (CD-21, CD-23).
func (d *CaseDocument) TriggerID() string {
	if d.Trigger == nil {
		return spec.ManualTrigger
	}
	return d.Trigger.ID
}

// ClockTime is the instant the case's model calls treat as now (CD-60): a date is that
// day at 00:00 UTC, a date-time keeps its offset. It reports false when the case pins no
// clock (or, for a hand-built document, when Clock is not an accepted form).
func (d *CaseDocument) ClockTime() (time.Time, bool) {
	if d.Clock == "" {
		return time.Time{}, false
	}
	t, reason := parseClock(d.Clock)
	return t, reason == ""
}

// TriggerDecl is the case's `trigger: { id }` (CD-20, CaseTriggerDecl): a non-empty id.
type TriggerDecl struct {
	ID string
}

// WorkspaceSource says where a workspace entry's bytes come from (CD-41, API-07).
type WorkspaceSource string

// Workspace entry sources.
const (
	// WorkspaceInline: Content is written — a string verbatim, any other value as JSON.
	WorkspaceInline WorkspaceSource = "inline"
	// WorkspaceFile: From names a fixture under the tests directory, copied byte-for-byte.
	WorkspaceFile WorkspaceSource = "file"
)

// WorkspaceEntry is one `workspace:` file (CD-40…CD-44, CaseWorkspaceEntry): Path is the
// session path as written (non-empty; its zone is checked when seeding, CD-42). For
// WorkspaceInline, Content holds the YAML value; for WorkspaceFile, From holds the
// `{ from: <path> }` value as written (non-empty; normalised when the runner reads it,
// CD-43). A single-key mapping whose key is `from` is always a fixture (CD-44).
type WorkspaceEntry struct {
	Path    string
	Source  WorkspaceSource
	Content Value
	From    string
}

// InlineBytes are the bytes an inline entry seeds (CD-41): a string's UTF-8 bytes
// verbatim; any other value as JSON with two-space indentation, keys in document order,
// and a trailing newline (JSON.stringify(v, null, 2) + "\n"). It reports false for a
// fixture entry.
func (e WorkspaceEntry) InlineBytes() ([]byte, bool) {
	if e.Source != WorkspaceInline {
		return nil, false
	}
	if e.Content.Kind == ValueString {
		return []byte(e.Content.Str), true
	}
	return append(e.Content.appendIndented(nil, ""), '\n'), true
}

// Mock is one `mocks:` entry as stored (CD-50): Name is the entry's `tool` (never a
// control tool, CD-51); WhenInput, nil when absent or empty, is matched partially against
// the call's input (MT-10); Result is required and may be any value, null included.
type Mock struct {
	Name      string
	WhenInput Fields
	Result    Value
}

// ResultText is the text a mocked call answers (CD-50): a string verbatim, any other
// value as compact JSON (JSON.stringify(result)).
func (m Mock) ResultText() string {
	if m.Result.Kind == ValueString {
		return m.Result.Str
	}
	b, _ := m.Result.MarshalJSON()
	return string(b)
}

// --- Steps --------------------------------------------------------------------

// Step is one entry of `steps`, a tagged union (CD-70, CaseStep): an Action — SendStep,
// DecideStep, DeliverStep — or an Assertion — SucceededAssertion, ParkedAssertion,
// RaisedAssertion, VariablesAssertion, ReachedStateAssertion, ReplyAssertion,
// CalledToolAssertion, NotCalledToolAssertion, BlockedToolAssertion,
// UsedNoToolsAssertion, TrailAssertion, NoTraversalAssertion, TriggerArrivalAssertion,
// RanWorkflowAssertion, GradeAssertion. The concrete types are values; switch on them.
type Step interface {
	Kind() StepKind
	isStep()
}

// Action is a step that drives the agent and produces a view (§6).
type Action interface {
	Step
	isAction()
}

// Assertion is a step checked against the view of the closest preceding action (CD-72,
// §7, CaseExpectation). Structural reports whether its failure halts the case (§7.1).
type Assertion interface {
	Step
	Structural() bool
	isAssertion()
}

type actionBase struct{}

func (actionBase) isStep()   {}
func (actionBase) isAction() {}

type assertionBase struct{}

func (assertionBase) isStep()      {}
func (assertionBase) isAssertion() {}

// SendStep is `send: <message>` (ST-01): one turn with the case's trigger, variables,
// clock and mocks. Message is a non-empty string.
type SendStep struct {
	actionBase
	Message string
}

// DecideStep is `decide: { to, comment? }` (ST-02): resolves a park at a human state.
// To is non-empty; Comment is "" when absent (and is then not sent).
type DecideStep struct {
	actionBase
	To      string
	Comment string
}

// DeliverStep is `deliver: { trigger, variables? }` (ST-03): resumes a session parked
// with archmax_wait. Trigger is a non-empty id (never matched against declared
// triggers); Variables, nil when absent or empty, have valid variable names.
type DeliverStep struct {
	actionBase
	Trigger   string
	Variables Fields
}

// SucceededAssertion is `succeeded: true` (AX-01). Structural.
type SucceededAssertion struct{ assertionBase }

// ParkedAssertion is `parked` (AX-02): `true` (both fields ""), `decision` / `input`
// (Channel), or `{ channel?, state? }`. Channel is "", ChannelDecision or ChannelInput;
// State is "" or the non-empty state the session parked in. Structural.
type ParkedAssertion struct {
	assertionBase
	Channel string
	State   string
}

// RaisedAssertion is `raised` (AX-03): `true` (both ""), `<code>` (Code), or
// `{ code?, reason? }` with at least one key. Code matches exactly; Reason exactly or,
// written `/pattern/flags`, as a regex (MT-01). Structural.
type RaisedAssertion struct {
	assertionBase
	Code   string
	Reason string
}

// VariablesAssertion is `variables: { expect, path?, locked? }` (AX-04). Expect maps
// names to expected values (nil when written `{}`); Path (name → dotted path) and Locked
// (name → lock state) are nil when absent or empty. All keep document order. Structural.
type VariablesAssertion struct {
	assertionBase
	Expect Fields
	Path   []VariablePath
	Locked []VariableLock
}

// VariablePath is one `variables.path` entry: the dotted path into Name's value.
type VariablePath struct {
	Name string
	Path string
}

// VariableLock is one `variables.locked` entry: the lock state expected of Name.
type VariableLock struct {
	Name   string
	Locked bool
}

// PathOf returns the dotted path declared for name, if any.
func (a VariablesAssertion) PathOf(name string) (string, bool) {
	for _, p := range a.Path {
		if p.Name == name {
			return p.Path, true
		}
	}
	return "", false
}

// LockedOf returns the lock state declared for name, if any.
func (a VariablesAssertion) LockedOf(name string) (locked, declared bool) {
	for _, l := range a.Locked {
		if l.Name == name {
			return l.Locked, true
		}
	}
	return false, false
}

// ReachedStateAssertion is `reachedState: <slug>` (AX-05). Structural.
type ReachedStateAssertion struct {
	assertionBase
	State string
}

// ReplyAssertion is `reply: { includes?, excludes? }` (AX-06): tokens in written order,
// each a plain substring or a `/pattern/flags` regex kept in its spelling. A single
// token reads as a one-element list (API-06); an empty list reads as nil.
type ReplyAssertion struct {
	assertionBase
	Includes []string
	Excludes []string
}

// ToolPattern is the `{ name, input? }` of calledTool, notCalledTool and blockedTool
// (AX-07…AX-09): Name is non-empty; Input, nil when absent or empty, is matched
// partially against the recorded arguments (MT-10, MT-11).
type ToolPattern struct {
	Name  string
	Input Fields
}

// CalledToolAssertion is `calledTool: { name, input? }` (AX-07).
type CalledToolAssertion struct {
	assertionBase
	ToolPattern
}

// NotCalledToolAssertion is `notCalledTool: { name, input? }` (AX-08).
type NotCalledToolAssertion struct {
	assertionBase
	ToolPattern
}

// BlockedToolAssertion is `blockedTool: { name, input? }` (AX-09).
type BlockedToolAssertion struct {
	assertionBase
	ToolPattern
}

// UsedNoToolsAssertion is `usedNoTools: true` (AX-10).
type UsedNoToolsAssertion struct{ assertionBase }

// TrailAssertion is `trail: { to?, kind?, reason?, count }` (AX-11): To, TrailKind (one
// of TrailKinds) and Reason are "" when absent, at least one is set, each set one
// non-empty and matched exactly; Count ≥ 0. Structural.
type TrailAssertion struct {
	assertionBase
	To        string
	TrailKind string
	Reason    string
	Count     int
}

// NoTraversalAssertion is `noTraversal: true` (AX-12). Structural.
type NoTraversalAssertion struct{ assertionBase }

// TriggerArrivalAssertion is `triggerArrival: <trigger-id>` (AX-13). Structural.
type TriggerArrivalAssertion struct {
	assertionBase
	Trigger string
}

// RanWorkflowAssertion is `ranWorkflow: { workflow, status?, count? }` (AX-14): Status is
// StatusOK (the default) or StatusError; Count is nil for "at least one".
type RanWorkflowAssertion struct {
	assertionBase
	Workflow string
	Status   string
	Count    *int
}

// GradeAssertion is `grade: { closedQA, atLeast }` (AX-15): a non-empty criterion and a
// bar in [0, 1].
type GradeAssertion struct {
	assertionBase
	ClosedQA string
	AtLeast  float64
}

// Kind implementations.

func (SendStep) Kind() StepKind                { return StepSend }
func (DecideStep) Kind() StepKind              { return StepDecide }
func (DeliverStep) Kind() StepKind             { return StepDeliver }
func (SucceededAssertion) Kind() StepKind      { return StepSucceeded }
func (ParkedAssertion) Kind() StepKind         { return StepParked }
func (RaisedAssertion) Kind() StepKind         { return StepRaised }
func (VariablesAssertion) Kind() StepKind      { return StepVariables }
func (ReachedStateAssertion) Kind() StepKind   { return StepReachedState }
func (ReplyAssertion) Kind() StepKind          { return StepReply }
func (CalledToolAssertion) Kind() StepKind     { return StepCalledTool }
func (NotCalledToolAssertion) Kind() StepKind  { return StepNotCalledTool }
func (BlockedToolAssertion) Kind() StepKind    { return StepBlockedTool }
func (UsedNoToolsAssertion) Kind() StepKind    { return StepUsedNoTools }
func (TrailAssertion) Kind() StepKind          { return StepTrail }
func (NoTraversalAssertion) Kind() StepKind    { return StepNoTraversal }
func (TriggerArrivalAssertion) Kind() StepKind { return StepTriggerArrival }
func (RanWorkflowAssertion) Kind() StepKind    { return StepRanWorkflow }
func (GradeAssertion) Kind() StepKind          { return StepGrade }

// Structural implementations (§7.1).

func (SucceededAssertion) Structural() bool      { return true }
func (ParkedAssertion) Structural() bool         { return true }
func (RaisedAssertion) Structural() bool         { return true }
func (VariablesAssertion) Structural() bool      { return true }
func (ReachedStateAssertion) Structural() bool   { return true }
func (ReplyAssertion) Structural() bool          { return false }
func (CalledToolAssertion) Structural() bool     { return false }
func (NotCalledToolAssertion) Structural() bool  { return false }
func (BlockedToolAssertion) Structural() bool    { return false }
func (UsedNoToolsAssertion) Structural() bool    { return false }
func (TrailAssertion) Structural() bool          { return true }
func (NoTraversalAssertion) Structural() bool    { return true }
func (TriggerArrivalAssertion) Structural() bool { return true }
func (RanWorkflowAssertion) Structural() bool    { return false }
func (GradeAssertion) Structural() bool          { return false }

// --- Values -------------------------------------------------------------------

// ValueKind is the kind of a YAML value read with the core schema.
type ValueKind uint8

// Value kinds; the zero Value is null.
const (
	ValueNull ValueKind = iota
	ValueBool
	ValueNumber
	ValueString
	ValueList
	ValueMap
)

// Value is an author-written value — a variable seed or expectation, a workspace
// content, a tool input pattern, a mock result — with mapping order kept (API-07).
// Numbers are float64, as JavaScript reads them (±Inf and NaN included).
type Value struct {
	Kind   ValueKind
	Bool   bool
	Number float64
	Str    string
	List   []Value
	Map    Fields
}

// Field is one mapping entry of a Value or of a name → value section.
type Field struct {
	Key   string
	Value Value
}

// Fields is a mapping in document order, keys unique.
type Fields []Field

// Constructors, mainly for hand-built documents and tests.

// NullValue is null.
func NullValue() Value { return Value{} }

// BoolValue is a boolean.
func BoolValue(b bool) Value { return Value{Kind: ValueBool, Bool: b} }

// NumberValue is a number.
func NumberValue(f float64) Value { return Value{Kind: ValueNumber, Number: f} }

// StringValue is a string.
func StringValue(s string) Value { return Value{Kind: ValueString, Str: s} }

// ListValue is a list of items.
func ListValue(items ...Value) Value { return Value{Kind: ValueList, List: items} }

// MapValue is a mapping of fields, in the given order.
func MapValue(fields ...Field) Value { return Value{Kind: ValueMap, Map: fields} }

// Get returns the value of key.
func (fs Fields) Get(key string) (Value, bool) {
	for _, f := range fs {
		if f.Key == key {
			return f.Value, true
		}
	}
	return Value{}, false
}

// Keys lists the keys in document order.
func (fs Fields) Keys() []string {
	keys := make([]string, len(fs))
	for i, f := range fs {
		keys[i] = f.Key
	}
	return keys
}

// Plain converts the mapping to encoding/json-style data (see Value.Plain); nil stays
// nil.
func (fs Fields) Plain() map[string]any {
	if fs == nil {
		return nil
	}
	out := make(map[string]any, len(fs))
	for _, f := range fs {
		out[f.Key] = f.Value.Plain()
	}
	return out
}

// Plain converts v to encoding/json-style data: nil, bool, float64, string, []any,
// map[string]any (mapping order is lost).
func (v Value) Plain() any {
	switch v.Kind {
	case ValueBool:
		return v.Bool
	case ValueNumber:
		return v.Number
	case ValueString:
		return v.Str
	case ValueList:
		out := make([]any, len(v.List))
		for i, it := range v.List {
			out[i] = it.Plain()
		}
		return out
	case ValueMap:
		if v.Map == nil {
			return map[string]any{}
		}
		return v.Map.Plain()
	}
	return nil
}

// MarshalJSON writes v as JSON.stringify does: compact, keys in document order,
// numbers as JavaScript prints them, NaN and ±Infinity as null.
func (v Value) MarshalJSON() ([]byte, error) { return v.appendCompact(nil), nil }

func (v Value) appendCompact(b []byte) []byte {
	switch v.Kind {
	case ValueList:
		b = append(b, '[')
		for i, it := range v.List {
			if i > 0 {
				b = append(b, ',')
			}
			b = it.appendCompact(b)
		}
		return append(b, ']')
	case ValueMap:
		b = append(b, '{')
		for i, f := range v.Map {
			if i > 0 {
				b = append(b, ',')
			}
			b = spec.AppendJSONString(b, f.Key)
			b = append(b, ':')
			b = f.Value.appendCompact(b)
		}
		return append(b, '}')
	}
	return v.appendScalar(b)
}

// appendIndented writes v as JSON.stringify(v, null, 2) does.
func (v Value) appendIndented(b []byte, indent string) []byte {
	inner := indent + "  "
	switch {
	case v.Kind == ValueList && len(v.List) > 0:
		b = append(b, '[')
		for i, it := range v.List {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '\n')
			b = append(b, inner...)
			b = it.appendIndented(b, inner)
		}
		b = append(b, '\n')
		b = append(b, indent...)
		return append(b, ']')
	case v.Kind == ValueMap && len(v.Map) > 0:
		b = append(b, '{')
		for i, f := range v.Map {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '\n')
			b = append(b, inner...)
			b = spec.AppendJSONString(b, f.Key)
			b = append(b, ": "...)
			b = f.Value.appendIndented(b, inner)
		}
		b = append(b, '\n')
		b = append(b, indent...)
		return append(b, '}')
	case v.Kind == ValueList:
		return append(b, "[]"...)
	case v.Kind == ValueMap:
		return append(b, "{}"...)
	}
	return v.appendScalar(b)
}

func (v Value) appendScalar(b []byte) []byte {
	switch v.Kind {
	case ValueBool:
		return strconv.AppendBool(b, v.Bool)
	case ValueNumber:
		if math.IsNaN(v.Number) || math.IsInf(v.Number, 0) {
			return append(b, "null"...)
		}
		return append(b, spec.FormatJSNumber(v.Number)...)
	case ValueString:
		return spec.AppendJSONString(b, v.Str)
	}
	return append(b, "null"...)
}

// jsonQuote is JSON.stringify(s).
func jsonQuote(s string) string { return string(spec.AppendJSONString(nil, s)) }

// --- Clock ----------------------------------------------------------------------

var clockPattern = regexp.MustCompile(
	`^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?(Z|[+-]\d{2}:\d{2})?)?$`)

// Clock refusal reasons (CD-60).
const (
	clockNoZone     = "no-zone"
	clockImpossible = "impossible"
)

// parseClock reads an accepted clock form (CD-60): YYYY-MM-DD (00:00 UTC), or
// YYYY-MM-DDTHH:MM[:SS[.fraction]] followed by Z or ±HH:MM. It returns the instant and
// "" or, for a refused text, clockNoZone (a date-time without a zone) or
// clockImpossible (any other text, or an impossible date, time or offset).
func parseClock(raw string) (time.Time, string) {
	m := clockPattern.FindStringSubmatch(raw)
	if m == nil {
		return time.Time{}, clockImpossible
	}
	num := func(s string) int { n, _ := strconv.Atoi(s); return n }
	year, month, day := num(m[1]), num(m[2]), num(m[3])
	if month < 1 || month > 12 || day < 1 || day > daysIn(year, month) {
		return time.Time{}, clockImpossible
	}
	if m[4] == "" {
		return time.Date(year, time.Month(month), day, 0, 0, 0, 0, time.UTC), ""
	}
	hour, minute, second := num(m[4]), num(m[5]), num(m[6])
	if hour > 23 || minute > 59 || second > 59 {
		return time.Time{}, clockImpossible
	}
	nanos := 0
	if frac := m[7]; frac != "" {
		if len(frac) > 9 {
			frac = frac[:9]
		}
		for len(frac) < 9 {
			frac += "0"
		}
		nanos = num(frac)
	}
	zone := m[8]
	if zone == "" {
		return time.Time{}, clockNoZone
	}
	loc := time.UTC
	if zone != "Z" {
		oh, om := num(zone[1:3]), num(zone[4:6])
		if oh > 23 || om > 59 {
			return time.Time{}, clockImpossible
		}
		offset := oh*3600 + om*60
		if zone[0] == '-' {
			offset = -offset
		}
		loc = time.FixedZone(zone, offset)
	}
	return time.Date(year, time.Month(month), day, hour, minute, second, nanos, loc), ""
}

func daysIn(year, month int) int {
	return time.Date(year, time.Month(month)+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// FixturePath normalises a workspace entry's `from:` to the fixture's path below the
// tests directory (CD-43): "." and empty segments dropped. Errors: a ".." segment (`'from:
// <from>' escapes the tests directory`), or an absolute or empty path (`'from: <from>' must
// be a tests/-relative file path`).
func FixturePath(from string) (string, error) {
	var segs []string
	for _, s := range strings.Split(from, "/") {
		switch s {
		case "", ".":
		case "..":
			return "", fmt.Errorf("'from: %s' escapes the tests directory", from)
		default:
			segs = append(segs, s)
		}
	}
	if len(segs) == 0 || strings.HasPrefix(from, "/") {
		return "", fmt.Errorf("'from: %s' must be a tests/-relative file path", from)
	}
	return strings.Join(segs, "/"), nil
}
