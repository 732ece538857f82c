package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// SignatureTypes are the types a signature entry may declare, in order: JSON Schema's
// six type words, its two string formats, then this bundle's `file` (spec 01 §4.4).
var SignatureTypes = []string{"string", "integer", "number", "boolean", "date", "date-time", "object", "array", "file"}

// typePhrases word each type in an "invalid" issue (spec 01 §4.6), exact texts.
var typePhrases = map[string]string{
	"string":    "a string",
	"integer":   "an integer (a number with no fractional part)",
	"number":    "a number",
	"boolean":   "a boolean (true or false)",
	"date":      "a date (an RFC 3339 full-date, YYYY-MM-DD, naming a real calendar day)",
	"date-time": "a date-time (an RFC 3339 date-time with an offset, e.g. 2026-03-01T09:30:00Z)",
	"object":    "an object",
	"array":     "an array",
	"file":      "a file (a workspace-relative path)",
}

// NormalizeSignature is normalizeSignature (spec 01 §4.4): a requires/returns list as
// decoded from YAML or JSON ([]any of bare names and {name, type?, description?}
// mappings, or []string) as entries in declaration order. It is total: a non-list
// yields nil; an item that is neither a string nor a mapping with a string name is
// skipped; an unknown type is dropped; a description is trimmed and dropped when blank.
func NormalizeSignature(list any) []SignatureEntry {
	var items []any
	switch l := list.(type) {
	case []any:
		items = l
	case []string:
		for _, s := range l {
			items = append(items, s)
		}
	default:
		return nil
	}
	entries := make([]SignatureEntry, 0, len(items))
	for _, item := range items {
		switch it := item.(type) {
		case string:
			entries = append(entries, SignatureEntry{Name: it})
		case map[string]any:
			name, ok := it["name"].(string)
			if !ok {
				continue
			}
			entry := SignatureEntry{Name: name}
			if t, ok := it["type"].(string); ok && slices.Contains(SignatureTypes, t) {
				entry.Type = t
			}
			if d, ok := it["description"].(string); ok {
				entry.Description = JSTrim(d)
			}
			entries = append(entries, entry)
		}
	}
	return entries
}

// SignatureValueIssue is one reason a value map does not satisfy a signature (spec 01
// §4.6). Kind is "missing" (Name absent; Message `'<name>' is not set`) or "invalid" (a
// typed entry's value does not conform; Type is the declared type, Found the JSON kind
// that arrived: string, number, boolean, null, object or array; Message `'<name>' must
// be <phrase>, but <arrived> arrived`).
type SignatureValueIssue struct {
	Kind    string `json:"kind"`
	Name    string `json:"name"`
	Type    string `json:"type,omitempty"`
	Found   string `json:"found,omitempty"`
	Message string `json:"message"`
}

// SignatureValueIssues is signatureValueIssues (spec 01 §4.6): one issue per offending
// entry, in declaration order; none means every runtime check accepts values. An
// untyped entry accepts any present value, null included; a typed entry never accepts
// null. Nothing is coerced ("4" is not an integer). values hold JSON as encoding/json
// decodes it (see VariableValues for a store); any Go integer or float kind and
// json.Number count as numbers, other slices and arrays as arrays, other maps and
// structs as objects.
func SignatureValueIssues(entries []SignatureEntry, values map[string]any) []SignatureValueIssue {
	var issues []SignatureValueIssue
	for _, e := range entries {
		v, ok := values[e.Name]
		if !ok {
			issues = append(issues, SignatureValueIssue{Kind: "missing", Name: e.Name, Message: fmt.Sprintf("'%s' is not set", e.Name)})
			continue
		}
		if e.Type == "" || conforms(e.Type, v) {
			continue
		}
		found := jsonKind(v)
		issues = append(issues, SignatureValueIssue{
			Kind:    "invalid",
			Name:    e.Name,
			Type:    e.Type,
			Found:   found,
			Message: fmt.Sprintf("'%s' must be %s, but %s arrived", e.Name, typePhrases[e.Type], arrived(found, v)),
		})
	}
	return issues
}

// conforms is the one conformance rule per type (spec 01 §4.6 table).
func conforms(typ string, v any) bool {
	s, isString := v.(string)
	switch typ {
	case "string":
		return isString
	case "integer":
		f, ok := jsonNumber(v)
		return ok && !isNonFinite(f) && f == math.Trunc(f)
	case "number":
		f, ok := jsonNumber(v)
		return ok && !isNonFinite(f)
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "date":
		return isString && isFullDate(s)
	case "date-time":
		return isString && isDateTime(s)
	case "object":
		return jsonKind(v) == "object"
	case "array":
		return jsonKind(v) == "array"
	case "file":
		return isString && isWorkspaceRelative(s)
	}
	return false
}

// arrived words what arrived (spec 01 §4.6): a string of ≤ 40 UTF-16 units and a
// number are quoted so a malformed date or a fraction is visible.
func arrived(found string, v any) string {
	switch found {
	case "null":
		return "null"
	case "string":
		if s := v.(string); UTF16Len(s) <= 40 {
			return "a string (" + jsonQuote(s) + ")"
		}
	case "number":
		f, _ := jsonNumber(v)
		return "a number (" + FormatJSNumber(f) + ")"
	case "object", "array":
		return "an " + found
	}
	return "a " + found
}

// jsonKind names v's JSON kind: string, number, boolean, null, object or array.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	}
	if _, ok := jsonNumber(v); ok {
		return "number"
	}
	switch reflect.ValueOf(v).Kind() {
	case reflect.Slice, reflect.Array:
		return "array"
	default:
		return "object"
	}
}

// jsonNumber reads v as a JavaScript number: float64 as encoding/json decodes it, any
// other Go integer or float kind, and json.Number (an unparsable one is NaN).
func jsonNumber(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case json.Number:
		f, err := strconv.ParseFloat(string(n), 64)
		if err != nil && !isNonFinite(f) {
			return math.NaN(), true
		}
		return f, true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Float32, reflect.Float64:
		return rv.Float(), true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(rv.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return float64(rv.Uint()), true
	}
	return 0, false
}

func isNonFinite(f float64) bool { return math.IsNaN(f) || math.IsInf(f, 0) }

var (
	fullDatePattern = regexp.MustCompile(`^(\d{4})-(\d{2})-(\d{2})$`)
	dateTimePattern = regexp.MustCompile(`^(\d{4}-\d{2}-\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:[Zz]|[+-](\d{2}):(\d{2}))$`)
)

// isFullDate: an RFC 3339 full-date naming a real Gregorian calendar day.
func isFullDate(s string) bool {
	m := fullDatePattern.FindStringSubmatch(s)
	if m == nil {
		return false
	}
	year, month, day := atoi(m[1]), atoi(m[2]), atoi(m[3])
	return month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth(year, month)
}

// isDateTime: an RFC 3339 date-time with a real day, hour ≤ 23, minute ≤ 59, second
// ≤ 60 (leap second) and a mandatory offset of at most 23:59.
func isDateTime(s string) bool {
	m := dateTimePattern.FindStringSubmatch(s)
	if m == nil || !isFullDate(m[1]) {
		return false
	}
	if atoi(m[2]) > 23 || atoi(m[3]) > 59 || atoi(m[4]) > 60 {
		return false
	}
	return m[5] == "" || (atoi(m[5]) <= 23 && atoi(m[6]) <= 59)
}

// isWorkspaceRelative: a non-blank path with no leading '/' and no '..' segment.
func isWorkspaceRelative(s string) bool {
	if JSTrim(s) == "" || strings.HasPrefix(s, "/") || strings.HasPrefix(s, `\`) {
		return false
	}
	return !slices.Contains(strings.FieldsFunc(s, func(r rune) bool { return r == '/' || r == '\\' }), "..")
}

func daysInMonth(year, month int) int {
	switch month {
	case 2:
		if (year%4 == 0 && year%100 != 0) || year%400 == 0 {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// atoi reads a string of ASCII digits the patterns above have already matched.
func atoi(digits string) int {
	n, _ := strconv.Atoi(digits)
	return n
}

// SignatureJSONSchema is signatureJsonSchema (spec 01 §4.5): {"type":"object",
// "properties":{…},"required":[…]} with one property per entry in declaration order
// (string|integer|number|boolean|object|array as {"type":t}; date, date-time and file
// as {"type":"string","format":t}; an untyped entry as {}; a description copied on),
// every name required, and no additionalProperties key.
func SignatureJSONSchema(entries []SignatureEntry) json.RawMessage {
	var b bytes.Buffer
	b.WriteString(`{"type":"object","properties":{`)
	required := make([]string, 0, len(entries))
	for i, e := range entries {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(jsonQuote(e.Name))
		b.WriteString(":{")
		var fields []string
		switch e.Type {
		case "":
		case "date", "date-time", "file":
			fields = append(fields, `"type":"string"`, `"format":`+jsonQuote(e.Type))
		default:
			fields = append(fields, `"type":`+jsonQuote(e.Type))
		}
		if e.Description != "" {
			fields = append(fields, `"description":`+jsonQuote(e.Description))
		}
		b.WriteString(strings.Join(fields, ","))
		b.WriteByte('}')
		required = append(required, e.Name)
	}
	b.WriteString(`},"required":`)
	names, _ := json.Marshal(required) // a []string always marshals
	b.Write(names)
	b.WriteByte('}')
	return b.Bytes()
}

// splitIssues separates issues into quoted missing names and invalid messages.
func splitIssues(issues []SignatureValueIssue) (missing, invalid []string) {
	for _, is := range issues {
		if is.Kind == "missing" {
			missing = append(missing, "'"+is.Name+"'")
		} else {
			invalid = append(invalid, is.Message)
		}
	}
	return missing, invalid
}

// RequiresRefusal is requiresRefusal (spec 01 §4.7, 02 §1.4 item 10): "" when values
// (the turn's opening variables) satisfy the trigger's requires, else the refused
// start's reason `Refusing to start: trigger '<id>' requires '<a>', '<b>', which this
// firing does not supply.` and/or `… declares typed inputs this firing does not
// satisfy: <messages joined by "; ">.`, the two parts joined by ". It also ".
func RequiresRefusal(triggerID string, entries []SignatureEntry, values map[string]any) string {
	missing, invalid := splitIssues(SignatureValueIssues(entries, values))
	var parts []string
	if len(missing) > 0 {
		parts = append(parts, "requires "+strings.Join(missing, ", ")+", which this firing does not supply")
	}
	if len(invalid) > 0 {
		parts = append(parts, "declares typed inputs this firing does not satisfy: "+strings.Join(invalid, "; "))
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("Refusing to start: trigger '%s' %s.", triggerID, strings.Join(parts, ". It also "))
}

// ReturnsRefusal is the returns check's rejection reason (02 §2.4 item 4): "" when
// values (the session's variables) satisfy the current trigger's returns, else the
// unset clause and/or the non-conforming clause, space-joined.
func ReturnsRefusal(state, triggerID string, entries []SignatureEntry, values map[string]any) string {
	missing, invalid := splitIssues(SignatureValueIssues(entries, values))
	var parts []string
	if len(missing) > 0 {
		pronoun := "them"
		if len(missing) == 1 {
			pronoun = "it"
		}
		parts = append(parts, fmt.Sprintf("Completed in state '%s' without setting %s, which trigger '%s' declares in its 'returns'. Set %s with '%s' before finishing.",
			state, strings.Join(missing, ", "), triggerID, pronoun, SetVariablesTool))
	}
	if len(invalid) > 0 {
		parts = append(parts, fmt.Sprintf("Completed in state '%s' with returns that do not conform to the types trigger '%s' declares: %s. Set a conforming value with '%s' before finishing.",
			state, triggerID, strings.Join(invalid, "; "), SetVariablesTool))
	}
	return strings.Join(parts, " ")
}

// MistypedReturnsRefusal is the write-time check of typed returns (spec 01 §4.7): ""
// unless writes gives a typed return of the current trigger a non-conforming value
// (untyped and undeclared names are free), else `trigger '<id>' declares this
// return|these returns typed: <messages joined by "; ">. Write a value of the
// declared type.` The caller refuses the whole archmax_set_variables call with it.
func MistypedReturnsRefusal(triggerID string, entries []SignatureEntry, writes map[string]any) string {
	var written []SignatureEntry
	for _, e := range entries {
		if _, ok := writes[e.Name]; ok && e.Type != "" {
			written = append(written, e)
		}
	}
	_, invalid := splitIssues(SignatureValueIssues(written, writes))
	if len(invalid) == 0 {
		return ""
	}
	noun := "these returns"
	if len(invalid) == 1 {
		noun = "this return"
	}
	return fmt.Sprintf("trigger '%s' declares %s typed: %s. Write a value of the declared type.", triggerID, noun, strings.Join(invalid, "; "))
}

// TriggerSignature is a trigger's call signature (spec 01 §4.4): the description a caller
// reads (trimmed, "" when blank) and its typed requires and returns ([] when undeclared).
type TriggerSignature struct {
	Description string           `json:"description,omitempty"`
	Requires    []SignatureEntry `json:"requires"`
	Returns     []SignatureEntry `json:"returns"`
}

// SignatureForTrigger is signatureForTrigger (spec 01 §4.4): the signature of triggerID,
// false when no state declares it (for an id declared twice — a document error — the later
// declaration).
func SignatureForTrigger(sp *MachineSpec, triggerID string) (TriggerSignature, bool) {
	var found *Trigger
	for _, st := range sp.States {
		for _, t := range st.Triggers {
			if t.ID == triggerID {
				found = t
			}
		}
	}
	if found == nil {
		return TriggerSignature{}, false
	}
	sig := TriggerSignature{Description: strings.TrimSpace(found.Description), Requires: found.Requires, Returns: found.Returns}
	if sig.Requires == nil {
		sig.Requires = []SignatureEntry{}
	}
	if sig.Returns == nil {
		sig.Returns = []SignatureEntry{}
	}
	return sig, true
}
