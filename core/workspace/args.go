package workspace

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// argReader checks a tool call's arguments the way the reference's schema layer does
// (BR-41): unknown keys are ignored, a number may also be a numeric string, and every
// problem is collected for one error-status answer.
type argReader struct {
	raw      map[string]json.RawMessage
	problems []problem
}

// problem is one failed check: a message and the argument path it is at ("" = the whole
// input).
type problem struct {
	msg, at string
}

// newArgReader decodes the call's arguments; absent or null arguments are an empty object.
func newArgReader(raw json.RawMessage) *argReader {
	a := &argReader{raw: map[string]json.RawMessage{}}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return a
	}
	if kind := jsonKind(trimmed); kind != "object" {
		a.fail("", problemType("object", kind))
		return a
	}
	if err := json.Unmarshal(trimmed, &a.raw); err != nil {
		a.fail("", problemType("object", kindMalformed))
	}
	return a
}

func (a *argReader) fail(at, msg string) { a.problems = append(a.problems, problem{msg: msg, at: at}) }

// invalid reports whether any check failed.
func (a *argReader) invalid() bool { return len(a.problems) > 0 }

// jsonKind names the JSON type of a raw value as the schema messages do.
func jsonKind(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "undefined"
	}
	switch v[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	default:
		return "number"
	}
}

// str reads a string argument; present is false when it is absent (a problem when required).
func (a *argReader) str(name string, required bool) (value string, present bool) {
	v, ok := a.raw[name]
	if !ok {
		if required {
			a.fail(name, problemType("string", "undefined"))
		}
		return "", false
	}
	if err := json.Unmarshal(v, &value); err != nil || jsonKind(v) != "string" {
		a.fail(name, problemType("string", jsonKind(v)))
		return "", false
	}
	return value, true
}

// filePath reads the required file_path, taking path when file_path is absent (BR-41).
func (a *argReader) filePath() string {
	if _, ok := a.raw["file_path"]; !ok {
		if _, ok := a.raw["path"]; ok {
			v, _ := a.str("path", true)
			return v
		}
	}
	v, _ := a.str("file_path", true)
	return v
}

// nullableStr reads an optional string that may also be null ("" and false then).
func (a *argReader) nullableStr(name string) (string, bool) {
	if v, ok := a.raw[name]; ok && jsonKind(v) == "null" {
		return "", false
	}
	return a.str(name, false)
}

// num reads an optional finite number (or numeric string), def when absent.
func (a *argReader) num(name string, def float64) float64 {
	v, ok := a.raw[name]
	if !ok {
		return def
	}
	var f float64
	switch jsonKind(v) {
	case "number":
		if json.Unmarshal(v, &f) == nil {
			return f
		}
	case "string":
		var s string
		if json.Unmarshal(v, &s) == nil {
			if g, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil && !math.IsInf(g, 0) && !math.IsNaN(g) {
				return g
			}
		}
	}
	a.fail(name, problemType("number", jsonKind(v)))
	return def
}

// positiveInt reads an optional integer > 0 that may also be null; def when absent or null.
func (a *argReader) positiveInt(name string, def int) int {
	if v, ok := a.raw[name]; !ok || jsonKind(v) == "null" {
		return def
	}
	n := len(a.problems)
	f := a.num(name, float64(def))
	switch {
	case len(a.problems) > n:
		return def
	case f != math.Trunc(f):
		a.fail(name, problemNotInt)
	case f <= 0:
		a.fail(name, problemNotPositive)
	case f > math.MaxInt32:
		return math.MaxInt32
	}
	return int(f)
}

// boolean reads an optional boolean, false when absent.
func (a *argReader) boolean(name string) bool {
	v, ok := a.raw[name]
	if !ok {
		return false
	}
	var b bool
	if jsonKind(v) != "boolean" || json.Unmarshal(v, &b) != nil {
		a.fail(name, problemType("boolean", jsonKind(v)))
	}
	return b
}

// enum reads an optional string restricted to options, def when absent.
func (a *argReader) enum(name, def string, options ...string) string {
	if _, ok := a.raw[name]; !ok {
		return def
	}
	s, ok := a.str(name, true)
	if !ok {
		return def
	}
	for _, o := range options {
		if s == o {
			return s
		}
	}
	a.fail(name, problemOption(options))
	return def
}

// schemaError renders the error-status answer to a call whose arguments failed the checks
// (BR-41): the reference's prefix with the arguments as compact JSON, one "✖"/"→ at" block
// per problem, and the closing sentence (Go omits the reference's JS stack trace).
func (a *argReader) schemaError(tool string, raw json.RawMessage) string {
	var kwargs bytes.Buffer
	switch trimmed := bytes.TrimSpace(raw); {
	case len(trimmed) == 0:
		kwargs.WriteString("{}")
	case json.Compact(&kwargs, trimmed) != nil:
		kwargs.Reset()
		kwargs.Write(trimmed) // malformed: shown as received
	}
	var b strings.Builder
	b.WriteString(schemaOpen(tool, kwargs.String()))
	for i, p := range a.problems {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(schemaProblem + p.msg)
		if p.at != "" {
			b.WriteString(schemaAt + p.at)
		}
	}
	b.WriteString(schemaClose)
	return b.String()
}
