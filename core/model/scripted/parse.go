package scripted

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/dlclark/regexp2"
	"go.yaml.in/yaml/v3"
)

var namePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// ParseError is a malformed script: File and Line locate the offending YAML node.
type ParseError struct {
	File string
	Line int
	Msg  string
}

func (e *ParseError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

// Parse reads a spec-05 script. file names the source in errors. Every entry is validated
// as a Bedrock response would be (non-empty content, tool names `[a-zA-Z0-9_-]{1,64}`,
// `input` a JSON object, stopReason in the Converse enum) and every key is checked, so a
// malformed script fails here with a *ParseError carrying file:line. An entry's `input`
// defaults to {}; `/pattern/flags` strings are ECMAScript regexes (flags i, m, s, u honoured,
// g ignored), any other string matches as a substring. A top-level `usage: estimate` sets
// UsageEstimate (`usage: scripted`, the default, leaves it false); an entry's own `usage` is
// then a *ParseError at its line.
func Parse(file string, src []byte) (*Script, error) {
	p := parser{file: file}
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		line, msg := yamlErrLine(err)
		return nil, &ParseError{File: file, Line: line, Msg: msg}
	}
	s := &Script{
		file:     file,
		entries:  map[string][]*scriptEntry{},
		calls:    map[string]int{},
		attempts: map[faultKey]int{},
	}
	if len(doc.Content) == 0 {
		return s, nil
	}
	root := doc.Content[0]
	err := p.mapping(root, func(key string, v *yaml.Node) error {
		switch {
		case key == "strictToolTurns":
			return p.decode(v, &s.StrictToolTurns)
		case key == "usage":
			mode, err := p.str(v)
			if err == nil && mode != "estimate" && mode != "scripted" {
				err = p.errorf(v, "usage %q is not one of estimate, scripted", mode)
			}
			s.UsageEstimate = mode == "estimate"
			return err
		case key == "errors":
			return p.sequence(v, func(n *yaml.Node) error {
				f, err := p.fault(n)
				if err == nil && slices.ContainsFunc(s.faults, func(g fault) bool { return g.role == f.role && g.call == f.call }) {
					err = p.errorf(n, "a second errors entry for %s call %d", f.role, f.call)
				}
				s.faults = append(s.faults, f)
				return err
			})
		case slices.Contains(Roles, key):
			return p.sequence(v, func(n *yaml.Node) error {
				e, err := p.entry(n)
				s.entries[key] = append(s.entries[key], e)
				return err
			})
		}
		return p.errorf(v, "unknown top-level key %q (want %s, errors, strictToolTurns, usage)", key, strings.Join(Roles, ", "))
	})
	if err != nil {
		return nil, err
	}
	if s.UsageEstimate {
		for _, role := range Roles {
			for _, e := range s.entries[role] {
				if e.usageLine > 0 {
					return nil, &ParseError{File: file, Line: e.usageLine, Msg: "an entry's usage cannot be scripted when the file's usage is estimate (the fake estimates every call's)"}
				}
			}
		}
	}
	return s, nil
}

type parser struct{ file string }

func (p parser) errorf(n *yaml.Node, format string, args ...any) error {
	return &ParseError{File: p.file, Line: n.Line, Msg: fmt.Sprintf(format, args...)}
}

// mapping calls fn for each key of mapping node n, in order, rejecting duplicate keys.
func (p parser) mapping(n *yaml.Node, fn func(key string, v *yaml.Node) error) error {
	if n.Kind != yaml.MappingNode {
		return p.errorf(n, "expected a mapping")
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if seen[k.Value] {
			return p.errorf(k, "duplicate key %q", k.Value)
		}
		seen[k.Value] = true
		if err := fn(k.Value, n.Content[i+1]); err != nil {
			return err
		}
	}
	return nil
}

func (p parser) sequence(n *yaml.Node, fn func(*yaml.Node) error) error {
	if n.Kind != yaml.SequenceNode {
		return p.errorf(n, "expected a list")
	}
	for _, item := range n.Content {
		if err := fn(item); err != nil {
			return err
		}
	}
	return nil
}

func (p parser) decode(n *yaml.Node, out any) error {
	if err := n.Decode(out); err != nil {
		return p.errorf(n, "%v", strings.TrimPrefix(err.Error(), "yaml: unmarshal errors:\n  "))
	}
	return nil
}

func (p parser) str(n *yaml.Node) (string, error) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return "", p.errorf(n, "expected a string")
	}
	return n.Value, nil
}

func (p parser) nonNegative(n *yaml.Node, out *int64) error {
	if err := p.decode(n, out); err != nil {
		return err
	}
	if *out < 0 {
		return p.errorf(n, "must not be negative")
	}
	return nil
}

func (p parser) entry(n *yaml.Node) (*scriptEntry, error) {
	e := &scriptEntry{line: n.Line}
	hasStop := false
	err := p.mapping(n, func(key string, v *yaml.Node) error {
		var err error
		switch key {
		case "when":
			e.when, err = p.when(v)
		case "expect":
			e.expect, err = p.expect(v)
		case "text":
			if e.Text, err = p.str(v); err == nil && strings.TrimSpace(e.Text) == "" {
				err = p.errorf(v, "text is blank (Bedrock never answers a blank text block)")
			}
		case "toolCalls":
			err = p.sequence(v, func(c *yaml.Node) error {
				tc, err := p.toolCall(c)
				if err == nil && tc.ID != "" && slices.ContainsFunc(e.ToolCalls, func(o ToolCall) bool { return o.ID == tc.ID }) {
					err = p.errorf(c, "duplicate tool call id %q", tc.ID)
				}
				e.ToolCalls = append(e.ToolCalls, tc)
				return err
			})
		case "stopReason":
			hasStop = true
			if e.StopReason, err = p.str(v); err == nil && !slices.Contains(StopReasons, e.StopReason) {
				err = p.errorf(v, "stopReason %q is not one of %s", e.StopReason, strings.Join(StopReasons, ", "))
			}
		case "usage":
			e.usageLine = v.Line
			err = p.usage(v, &e.Usage)
		default:
			err = p.errorf(v, "unknown entry key %q", key)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if e.Text == "" && len(e.ToolCalls) == 0 {
		return nil, p.errorf(n, "entry has no content: give text, toolCalls or both")
	}
	if !hasStop {
		e.StopReason = "end_turn"
		if len(e.ToolCalls) > 0 {
			e.StopReason = "tool_use"
		}
	}
	return e, nil
}

func (p parser) toolCall(n *yaml.Node) (ToolCall, error) {
	tc := ToolCall{Input: json.RawMessage("{}")}
	err := p.mapping(n, func(key string, v *yaml.Node) error {
		var err error
		switch key {
		case "name", "id":
			var s string
			if s, err = p.str(v); err == nil && !namePattern.MatchString(s) {
				err = p.errorf(v, "tool call %s %q must match [a-zA-Z0-9_-]{1,64}", key, s)
			}
			if key == "name" {
				tc.Name = s
			} else {
				tc.ID = s
			}
		case "input":
			if v.Kind != yaml.MappingNode {
				return p.errorf(v, "tool call input must be a JSON object")
			}
			var obj map[string]any
			if err = p.decode(v, &obj); err != nil {
				return err
			}
			raw, jerr := json.Marshal(obj)
			if jerr != nil {
				return p.errorf(v, "tool call input is not JSON: %v", jerr)
			}
			tc.Input = raw
		default:
			err = p.errorf(v, "unknown tool call key %q", key)
		}
		return err
	})
	if err == nil && tc.Name == "" {
		err = p.errorf(n, "tool call has no name")
	}
	return tc, err
}

func (p parser) usage(n *yaml.Node, u *Usage) error {
	return p.mapping(n, func(key string, v *yaml.Node) error {
		switch key {
		case "inputTokens":
			return p.nonNegative(v, &u.InputTokens)
		case "outputTokens":
			return p.nonNegative(v, &u.OutputTokens)
		case "cacheReadInputTokens":
			return p.nonNegative(v, &u.CacheReadInputTokens)
		case "cacheWriteInputTokens":
			return p.nonNegative(v, &u.CacheWriteInputTokens)
		}
		return p.errorf(v, "unknown usage key %q", key)
	})
}

func (p parser) when(n *yaml.Node) (when, error) {
	var w when
	err := p.mapping(n, func(key string, v *yaml.Node) error {
		switch key {
		case "state":
			s, err := p.str(v)
			w.state = &s
			return err
		case "turn":
			var t int
			if err := p.decode(v, &t); err != nil {
				return err
			}
			if t < 1 {
				return p.errorf(v, "turn is 1-based")
			}
			w.turn = &t
			return nil
		case "lastUserText":
			m, err := p.matcher(v)
			w.lastUserText = m
			return err
		}
		return p.errorf(v, "unknown when key %q (want state, turn, lastUserText)", key)
	})
	return w, err
}

func (p parser) expect(n *yaml.Node) (expect, error) {
	var x expect
	err := p.mapping(n, func(key string, v *yaml.Node) error {
		switch key {
		case "toolsOffered":
			return p.decode(v, &x.toolsOffered)
		case "toolsNotOffered":
			return p.decode(v, &x.toolsNotOffered)
		case "systemIncludes":
			m, err := p.matcher(v)
			x.systemIncludes = m
			return err
		}
		return p.errorf(v, "unknown expect key %q (want toolsOffered, toolsNotOffered, systemIncludes)", key)
	})
	return x, err
}

func (p parser) fault(n *yaml.Node) (fault, error) {
	f := fault{call: -1, times: 1, afterChunks: -1}
	err := p.mapping(n, func(key string, v *yaml.Node) error {
		var err error
		switch key {
		case "role":
			if f.role, err = p.str(v); err == nil && !slices.Contains(Roles, f.role) {
				err = p.errorf(v, "role %q is not one of %s", f.role, strings.Join(Roles, ", "))
			}
		case "call":
			if err = p.decode(v, &f.call); err == nil && f.call < 0 {
				err = p.errorf(v, "call is a 0-based index")
			}
		case "error":
			if f.name, err = p.str(v); err == nil {
				if _, ok := HTTPStatus(f.name); !ok {
					err = p.errorf(v, "error %q is not a Bedrock runtime error name", f.name)
				}
			}
		case "times":
			if err = p.decode(v, &f.times); err == nil && f.times < 1 {
				err = p.errorf(v, "times must be at least 1")
			}
		case "message":
			f.message, err = p.str(v)
		case "afterChunks":
			if err = p.decode(v, &f.afterChunks); err == nil && f.afterChunks < 0 {
				err = p.errorf(v, "afterChunks must be 0 or more")
			}
		default:
			err = p.errorf(v, "unknown errors key %q (want role, call, error, times, message, afterChunks)", key)
		}
		return err
	})
	if err == nil && (f.role == "" || f.call < 0 || f.name == "") {
		err = p.errorf(n, "an errors entry needs role, call and error")
	}
	return f, err
}

// matcher is a substring, or an ECMAScript regex written /pattern/flags.
type matcher struct {
	src string
	re  *regexp2.Regexp
}

func (p parser) matcher(n *yaml.Node) (*matcher, error) {
	s, err := p.str(n)
	if err != nil {
		return nil, err
	}
	m := &matcher{src: s}
	end := strings.LastIndexByte(s, '/')
	if !strings.HasPrefix(s, "/") || end < 1 {
		return m, nil
	}
	opts := regexp2.RegexOptions(regexp2.ECMAScript)
	for _, f := range s[end+1:] {
		switch f {
		case 'i':
			opts |= regexp2.IgnoreCase
		case 'm':
			opts |= regexp2.Multiline
		case 's':
			opts |= regexp2.Singleline
		case 'u':
			opts |= regexp2.Unicode
		case 'g':
		default:
			return nil, p.errorf(n, "unknown regex flag %q in %s", f, s)
		}
	}
	if m.re, err = regexp2.Compile(s[1:end], opts); err != nil {
		return nil, p.errorf(n, "bad regex %s: %v", s, err)
	}
	return m, nil
}

func (m *matcher) match(s string) bool {
	if m.re == nil {
		return strings.Contains(s, m.src)
	}
	ok, err := m.re.MatchString(s)
	return err == nil && ok
}

// yamlErrLine splits a yaml.v3 syntax error ("yaml: line N: msg") into N and msg; the line
// is 1 when the error names none.
func yamlErrLine(err error) (int, string) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if num, text, ok := strings.Cut(rest, ": "); ok {
			if n, convErr := strconv.Atoi(num); convErr == nil {
				return n, text
			}
		}
	}
	return 1, msg
}
