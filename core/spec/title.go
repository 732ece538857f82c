package spec

import (
	"fmt"
	"strings"
	"unicode/utf16"
)

// VariableEntry is one stored session variable (spec 01 §5.1, §5.4): Value is any JSON
// value; Locked is true when a host established it (title is never locked).
type VariableEntry struct {
	Value  any  `json:"value"`
	Locked bool `json:"locked"`
}

// VariableValues is the name → value view of a variable store, the values argument of
// the signature checks and the vars argument of the reference resolvers.
func VariableValues(store map[string]VariableEntry) map[string]any {
	values := make(map[string]any, len(store))
	for name, e := range store {
		values[name] = e.Value
	}
	return values
}

const (
	// TriggerVariable holds the id of the trigger the session is currently running
	// under; the runtime sets it, always locked (spec 01 §5.2).
	TriggerVariable = "trigger"
	// TitleVariable holds the session's short task label; never locked (spec 01 §5.3).
	TitleVariable = "title"
	// TitleMaxLength bounds a trimmed title, in UTF-16 code units (spec 01 §5.3).
	TitleMaxLength = 200
)

// titleShape leads every title refusal (spec 01 §5.3).
const titleShape = "'title' is reserved for a short label naming the task this run is doing. It must be a non-empty single-line string of at most 200 characters"

// TitleWriteError is titleWriteError (spec 01 §5.3): "" when v may be stored as the
// title, else the exact refusal detail — v not a string ("…, but a <type> was given.",
// <type> as JavaScript typeof names it, null as "null"), the untrimmed value holding
// '\r' or '\n', the trimmed value empty, or longer than TitleMaxLength UTF-16 code
// units. A host seed wraps the detail in *InvalidTitleError; store NormalizeTitle(v).
func TitleWriteError(v any) string {
	s, ok := v.(string)
	if !ok {
		return fmt.Sprintf("%s, but a %s was given.", titleShape, jsTypeof(v))
	}
	if strings.ContainsAny(s, "\r\n") {
		return titleShape + "; this one spans more than one line."
	}
	trimmed := JSTrim(s)
	if trimmed == "" {
		return titleShape + "; this one is empty."
	}
	if n := UTF16Len(trimmed); n > TitleMaxLength {
		return fmt.Sprintf("%s; this one is %d. Shorten it and retry.", titleShape, n)
	}
	return ""
}

// NormalizeTitle is the value stored for a title TitleWriteError accepted: its trim
// (spec 01 §5.3).
func NormalizeTitle(s string) string { return JSTrim(s) }

// jsTypeof names v's kind as JavaScript's typeof would, with null as "null".
func jsTypeof(v any) string {
	switch kind := jsonKind(v); kind {
	case "array":
		return "object"
	default:
		return kind
	}
}

// UTF16Len is s's length in UTF-16 code units (JavaScript's String length).
func UTF16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}
