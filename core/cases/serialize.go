package cases

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/yamltree"
	"go.yaml.in/yaml/v3"
)

// yaml11Booleans are plain words a YAML 1.1 reader takes for booleans; they are strings
// under the core schema, but are written quoted so that no reader misreads them.
var yaml11Booleans = []string{"yes", "Yes", "YES", "no", "No", "NO", "on", "On", "ON", "off", "Off", "OFF"}

// SerializeCaseDocument writes doc as case YAML, the inverse of ParseCaseDocument
// (API-06): top-level keys in TopLevelKeys order, absent and empty parts omitted; nested
// keys in grammar order — trigger {id}; mock {tool, whenInput, result}; decide {to,
// comment}; deliver {trigger, variables}; parked as true, the channel, or {channel,
// state} when a state is pinned; raised as true, the code, or {code, reason} when a
// reason is pinned; variables {expect, path, locked}; reply {includes, excludes} with
// tokens always as lists; calledTool/notCalledTool/blockedTool {name, input}; trail {to,
// kind, reason, count}; ranWorkflow {workflow, status, count} with status always
// written; grade {closedQA, atLeast} — and user mappings in their stored order.
// Strings are quoted when a plain scalar would read back differently, multi-line strings
// use literal block style where YAML allows it, and lines are never folded. Comments are
// not part of the document.
//
// For every document ParseCaseDocument returns, ParseCaseDocument(SerializeCaseDocument(
// doc)) deep-equals doc. A hand-built document the grammar would refuse is an error: the
// output is parsed back before it is returned, and its *CaseSchemaError (File
// "serialized case") is wrapped.
func SerializeCaseDocument(doc *CaseDocument) ([]byte, error) {
	if doc == nil {
		return nil, errors.New("cases: cannot serialize a nil case document")
	}
	root := mappingNode()
	put(root, "title", stringNode(doc.Title))
	put(root, "description", stringNode(doc.Description))
	if doc.Skip != "" {
		put(root, "skip", stringNode(doc.Skip))
	}
	if doc.Trigger != nil {
		t := mappingNode()
		put(t, "id", stringNode(doc.Trigger.ID))
		put(root, "trigger", t)
	}
	if len(doc.Variables) > 0 {
		put(root, "variables", fieldsNode(doc.Variables))
	}
	if len(doc.Workspace) > 0 {
		ws := mappingNode()
		for _, e := range doc.Workspace {
			switch e.Source {
			case WorkspaceFile:
				f := mappingNode()
				put(f, "from", stringNode(e.From))
				put(ws, e.Path, f)
			case WorkspaceInline:
				if c := e.Content; c.Kind == ValueMap && len(c.Map) == 1 && c.Map[0].Key == "from" {
					return nil, fmt.Errorf("cases: workspace entry %q: inline content {from: …} would read back as a fixture (CD-44); write it as a string", e.Path)
				}
				put(ws, e.Path, valueNode(e.Content))
			default:
				return nil, fmt.Errorf("cases: workspace entry %q has no source", e.Path)
			}
		}
		put(root, "workspace", ws)
	}
	if len(doc.Mocks) > 0 {
		ms := sequenceNode()
		for _, m := range doc.Mocks {
			mn := mappingNode()
			put(mn, "tool", stringNode(m.Name))
			if len(m.WhenInput) > 0 {
				put(mn, "whenInput", fieldsNode(m.WhenInput))
			}
			put(mn, "result", valueNode(m.Result))
			ms.Content = append(ms.Content, mn)
		}
		put(root, "mocks", ms)
	}
	if doc.Clock != "" {
		put(root, "clock", stringNode(doc.Clock))
	}
	if len(doc.Steps) > 0 {
		ss := sequenceNode()
		for i, s := range doc.Steps {
			payload, err := stepNode(s)
			if err != nil {
				return nil, fmt.Errorf("cases: steps[%d]: %w", i, err)
			}
			sn := mappingNode()
			put(sn, string(s.Kind()), payload)
			ss.Content = append(ss.Content, sn)
		}
		put(root, "steps", ss)
	}

	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return nil, fmt.Errorf("cases: encoding the case document: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("cases: encoding the case document: %w", err)
	}
	out := buf.Bytes()
	if _, err := ParseCaseDocument("serialized case", out); err != nil {
		return nil, fmt.Errorf("cases: the document is not one the case grammar accepts: %w", err)
	}
	return out, nil
}

// stepNode is a step's payload (the value under its single key).
func stepNode(s Step) (*yaml.Node, error) {
	switch s := s.(type) {
	case SendStep:
		return stringNode(s.Message), nil
	case DecideStep:
		n := mappingNode()
		put(n, "to", stringNode(s.To))
		if s.Comment != "" {
			put(n, "comment", stringNode(s.Comment))
		}
		return n, nil
	case DeliverStep:
		n := mappingNode()
		put(n, "trigger", stringNode(s.Trigger))
		if len(s.Variables) > 0 {
			put(n, "variables", fieldsNode(s.Variables))
		}
		return n, nil
	case SucceededAssertion, UsedNoToolsAssertion, NoTraversalAssertion:
		return boolNode(true), nil
	case ParkedAssertion:
		switch {
		case s.State != "":
			n := mappingNode()
			if s.Channel != "" {
				put(n, "channel", stringNode(s.Channel))
			}
			put(n, "state", stringNode(s.State))
			return n, nil
		case s.Channel != "":
			return stringNode(s.Channel), nil
		}
		return boolNode(true), nil
	case RaisedAssertion:
		switch {
		case s.Reason != "":
			n := mappingNode()
			if s.Code != "" {
				put(n, "code", stringNode(s.Code))
			}
			put(n, "reason", stringNode(s.Reason))
			return n, nil
		case s.Code != "":
			return stringNode(s.Code), nil
		}
		return boolNode(true), nil
	case VariablesAssertion:
		n := mappingNode()
		put(n, "expect", fieldsNode(s.Expect))
		if len(s.Path) > 0 {
			pn := mappingNode()
			for _, vp := range s.Path {
				put(pn, vp.Name, stringNode(vp.Path))
			}
			put(n, "path", pn)
		}
		if len(s.Locked) > 0 {
			ln := mappingNode()
			for _, vl := range s.Locked {
				put(ln, vl.Name, boolNode(vl.Locked))
			}
			put(n, "locked", ln)
		}
		return n, nil
	case ReachedStateAssertion:
		return stringNode(s.State), nil
	case TriggerArrivalAssertion:
		return stringNode(s.Trigger), nil
	case ReplyAssertion:
		n := mappingNode()
		if len(s.Includes) > 0 || len(s.Excludes) == 0 {
			put(n, "includes", stringsNode(s.Includes)) // `includes: []` keeps an empty reply valid
		}
		if len(s.Excludes) > 0 {
			put(n, "excludes", stringsNode(s.Excludes))
		}
		return n, nil
	case CalledToolAssertion:
		return toolPatternNode(s.ToolPattern), nil
	case NotCalledToolAssertion:
		return toolPatternNode(s.ToolPattern), nil
	case BlockedToolAssertion:
		return toolPatternNode(s.ToolPattern), nil
	case TrailAssertion:
		n := mappingNode()
		if s.To != "" {
			put(n, "to", stringNode(s.To))
		}
		if s.TrailKind != "" {
			put(n, "kind", stringNode(s.TrailKind))
		}
		if s.Reason != "" {
			put(n, "reason", stringNode(s.Reason))
		}
		put(n, "count", numberNode(float64(s.Count)))
		return n, nil
	case RanWorkflowAssertion:
		n := mappingNode()
		put(n, "workflow", stringNode(s.Workflow))
		status := s.Status
		if status == "" {
			status = StatusOK
		}
		put(n, "status", stringNode(status))
		if s.Count != nil {
			put(n, "count", numberNode(float64(*s.Count)))
		}
		return n, nil
	case GradeAssertion:
		n := mappingNode()
		put(n, "closedQA", stringNode(s.ClosedQA))
		put(n, "atLeast", numberNode(s.AtLeast))
		return n, nil
	case nil:
		return nil, errors.New("nil step")
	}
	return nil, fmt.Errorf("unknown step type %T", s)
}

func toolPatternNode(tp ToolPattern) *yaml.Node {
	n := mappingNode()
	put(n, "name", stringNode(tp.Name))
	if len(tp.Input) > 0 {
		put(n, "input", fieldsNode(tp.Input))
	}
	return n
}

// --- Nodes ----------------------------------------------------------------------

func mappingNode() *yaml.Node  { return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"} }
func sequenceNode() *yaml.Node { return &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"} }

func put(m *yaml.Node, key string, v *yaml.Node) { m.Content = append(m.Content, stringNode(key), v) }

// stringNode writes s so that it reads back as the same string: double-quoted when a
// plain scalar would resolve to something else under the core schema (or under YAML
// 1.1's booleans), or when s holds a line break other than '\n' (block and plain styles
// would normalise it); otherwise the encoder's choice — plain, quoted where the syntax
// requires it, or a literal block for multi-line text.
func stringNode(s string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
	if yamltree.Plain(s).Kind != yamltree.String || slices.Contains(yaml11Booleans, s) || strings.ContainsAny(s, "\r\u0085\u2028\u2029") {
		n.Style = yaml.DoubleQuotedStyle
	}
	return n
}

func stringsNode(items []string) *yaml.Node {
	n := sequenceNode()
	for _, s := range items {
		n.Content = append(n.Content, stringNode(s))
	}
	return n
}

func boolNode(b bool) *yaml.Node {
	v := "false"
	if b {
		v = "true"
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Value: v}
}

// numberNode writes f as a plain core-schema number: JavaScript's digits (which the
// core schema reads back exactly), .nan, .inf or -.inf.
func numberNode(f float64) *yaml.Node {
	var v string
	switch {
	case math.IsNaN(f):
		v = ".nan"
	case math.IsInf(f, 1):
		v = ".inf"
	case math.IsInf(f, -1):
		v = "-.inf"
	default:
		v = spec.FormatJSNumber(f)
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Value: v}
}

func fieldsNode(fs Fields) *yaml.Node {
	n := mappingNode()
	for _, f := range fs {
		put(n, f.Key, valueNode(f.Value))
	}
	return n
}

func valueNode(v Value) *yaml.Node {
	switch v.Kind {
	case ValueBool:
		return boolNode(v.Bool)
	case ValueNumber:
		return numberNode(v.Number)
	case ValueString:
		return stringNode(v.Str)
	case ValueList:
		n := sequenceNode()
		for _, it := range v.List {
			n.Content = append(n.Content, valueNode(it))
		}
		return n
	case ValueMap:
		return fieldsNode(v.Map)
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Value: "null"}
}
