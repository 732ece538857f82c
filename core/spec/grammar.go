package spec

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

var (
	slugPattern         = regexp.MustCompile(`^[a-z0-9]+(?:-[a-z0-9]+)*$`)
	variableNamePattern = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	scriptPathPattern   = regexp.MustCompile(`^scripts/[^/].*\.(js|mjs)$`)
)

// Session-path refusal reasons (spec 01 §4.9), exact texts.
const (
	sessionPathEmpty        = "it is empty."
	sessionPathReference    = "write the bare path, not a '${{…}}' reference (e.g. 'conversation_id')."
	sessionPathFirstSegment = "its first segment must be a variable name (lowercase letters, digits and underscores, starting with a letter)."
	sessionPathEmptySegment = "it has an empty segment — check for a doubled or trailing '.'."
)

// IsSlug reports whether s is a slug: lowercase alphanumeric segments joined by
// single hyphens, no length limit (spec 01 §6.1, ^[a-z0-9]+(?:-[a-z0-9]+)*$).
func IsSlug(s string) bool { return slugPattern.MatchString(s) }

// MaxDelegationSlug is the longest workflow slug a delegation tool may name: Bedrock caps
// tool names at 64 characters and archmax_workflow_ takes 17 (spec 01 §6.1, DESIGN.md §2).
const MaxDelegationSlug = 47

// IsDelegationSlug reports whether s can be named by a delegation tool: a slug of at most
// MaxDelegationSlug characters.
func IsDelegationSlug(s string) bool { return len(s) <= MaxDelegationSlug && IsSlug(s) }

// IsScriptPath reports whether p is a code state's `script` as V-07 and §6.7 take it: inside
// the workflow's scripts/ folder, ending .js or .mjs, with no '\' and no empty, "." or ".."
// segment — so workflows/<slug>/<p> names a file of that folder and nothing else. A path it
// refuses is never resolved.
func IsScriptPath(p string) bool {
	if !scriptPathPattern.MatchString(p) || strings.Contains(p, `\`) {
		return false
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// IsVariableName reports whether s matches VARIABLE_NAME_PATTERN ^[a-z][a-z0-9_]*$,
// no length limit (spec 01 §5.1).
func IsVariableName(s string) bool { return variableNamePattern.MatchString(s) }

// CheckVariableName returns *InvalidVariableNameError when name is not a variable
// name, nil otherwise (spec 01 §5.1). A blank source reads "seeded".
func CheckVariableName(name, source string) error {
	if IsVariableName(name) {
		return nil
	}
	return &InvalidVariableNameError{Variable: name, Source: defaultSource(source)}
}

// ParseSessionPath parses a dotted session path (`session:`, `message:`, an assembly or
// per-firing sessionPath; spec 01 §4.9) into its segments, the variable name first:
// "triggers.-1.conversationId" ⇒ ["triggers", "-1", "conversationId"]. The value is
// trimmed first. A refused path is *InvalidSessionPathError whose Reason is the
// grammar's text, checked in the spec's order.
func ParseSessionPath(p string) ([]string, error) {
	raw := JSTrim(p)
	reason := ""
	segments := strings.Split(raw, ".")
	switch {
	case raw == "":
		reason = sessionPathEmpty
	case strings.Contains(raw, "${{"):
		reason = sessionPathReference
	case !IsVariableName(segments[0]):
		reason = sessionPathFirstSegment
	default:
		for _, s := range segments[1:] {
			if s == "" {
				reason = sessionPathEmptySegment
				break
			}
		}
	}
	if reason != "" {
		return nil, &InvalidSessionPathError{Path: p, Reason: reason}
	}
	return segments, nil
}

// ResolveValuePath descends path from root with the reference path rules (spec 01
// §5.5): a map[string]any by key; a []any only by a canonical index ^(0|[1-9][0-9]*)$
// or a from-end index ^-[1-9][0-9]*$ (-1 is the last element; "-0", "-01" and
// "length" miss); a scalar by nothing. It reports false when a step misses; a present
// null resolves to (nil, true).
func ResolveValuePath(root any, path []string) (any, bool) {
	current := root
	for _, segment := range path {
		switch c := current.(type) {
		case map[string]any:
			v, ok := c[segment]
			if !ok {
				return nil, false
			}
			current = v
		case []any:
			i, ok := arrayIndex(segment, len(c))
			if !ok {
				return nil, false
			}
			current = c[i]
		default:
			return nil, false
		}
	}
	return current, true
}

// arrayIndex reads segment as an index into an array of length n.
func arrayIndex(segment string, n int) (int, bool) {
	fromEnd := strings.HasPrefix(segment, "-")
	digits := strings.TrimPrefix(segment, "-")
	if digits == "" || (digits[0] == '0' && (len(digits) > 1 || fromEnd)) {
		return 0, false
	}
	for _, r := range digits {
		if r < '0' || r > '9' {
			return 0, false
		}
	}
	i, err := strconv.Atoi(digits)
	if err != nil { // out of int range: past any array's end
		return 0, false
	}
	if fromEnd {
		i = n - i
	}
	return i, i >= 0 && i < n
}

// SessionIDFromPath resolves a parsed session path (ParseSessionPath's segments, the
// variable name first) against a firing's variables (spec 01 §4.9): the variable must
// be present; a string whose trim is non-empty is returned as is, a finite number as
// JavaScript String(n); anything else (unset, missing path, blank string, boolean,
// object, array, null) reports false.
func SessionIDFromPath(vars map[string]any, path []string) (string, bool) {
	if len(path) == 0 {
		return "", false
	}
	root, ok := vars[path[0]]
	if !ok {
		return "", false
	}
	v, ok := ResolveValuePath(root, path[1:])
	if !ok {
		return "", false
	}
	if s, isString := v.(string); isString && JSTrim(s) != "" {
		return s, true
	}
	if f, isNumber := jsonNumber(v); isNumber && !isNonFinite(f) {
		return FormatJSNumber(f), true
	}
	return "", false
}

// JSTrim trims what JavaScript's String.prototype.trim trims: ECMAScript WhiteSpace and
// LineTerminator code points (IsJSSpace).
func JSTrim(s string) string { return strings.TrimFunc(s, IsJSSpace) }

// IsJSSpace reports whether r is ECMAScript WhiteSpace or a LineTerminator (what \s and
// String.prototype.trim match).
func IsJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0x00A0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF:
		return true
	}
	return r >= 0x2000 && r <= 0x200A
}

// WorkflowSlugRejection is the workflow-slug diagnostic of spec 01 §6.1 for a slug
// IsSlug refuses: an empty slug asks for one, any other names the folder to rename.
func WorkflowSlugRejection(slug string) string {
	if slug == "" {
		return "No workflow slug provided; name the workflow by its 'workflows/<slug>/' directory (e.g. 'order-lookup')."
	}
	return fmt.Sprintf("Workflow slug '%s' is not hyphen-separated kebab-case; rename the 'workflows/%s/' directory to lowercase segments joined by single hyphens (e.g. 'order-lookup').", slug, slug)
}
