package spec

import (
	"maps"
	"regexp"
	"slices"
	"strings"
)

// referencePattern matches a ${{…}} span, or its escape $${{…}} (spec 01 §5.5).
var referencePattern = regexp.MustCompile(`(\$?)\$\{\{([^}]*)\}\}`)

// Unresolved reasons (UnresolvedReason, spec 01 §5.5).
const (
	ReasonMalformed   = "malformed"
	ReasonInvalidName = "invalid-name"
	ReasonUnset       = "unset"
	ReasonPathMissing = "path-missing"
	ReasonNonScalar   = "non-scalar"
)

// Reference is one ${{name.path}} reference (spec 01 §5.5): Raw is the whole span,
// Name the first dotted part of the trimmed inner text, Path the rest (nil for a
// whole-variable reference).
type Reference struct {
	Raw  string   `json:"raw"`
	Name string   `json:"name"`
	Path []string `json:"path,omitempty"`
}

// UnresolvedReference is why a reference could not be resolved (spec 01 §5.5): Ref is
// its raw span, Path the dotted path ("" for none), Reason one of the Reason*
// constants, Detail the spec's detail text for that reason.
type UnresolvedReference struct {
	Ref    string `json:"ref"`
	Name   string `json:"name"`
	Path   string `json:"path,omitempty"`
	Reason string `json:"reason"`
	Detail string `json:"detail"`
}

// span is one scanned ${{…}} or $${{…}}, with its byte offsets in the text.
type span struct {
	Reference
	start, end int
	escaped    bool
}

func scan(s string) []span {
	if !strings.Contains(s, "${{") {
		return nil
	}
	matches := referencePattern.FindAllStringSubmatchIndex(s, -1)
	spans := make([]span, 0, len(matches))
	for _, m := range matches {
		parts := strings.Split(JSTrim(s[m[4]:m[5]]), ".")
		ref := Reference{Raw: s[m[0]:m[1]], Name: parts[0]}
		if len(parts) > 1 {
			ref.Path = parts[1:]
		}
		spans = append(spans, span{Reference: ref, start: m[0], end: m[1], escaped: m[3] > m[2]})
	}
	return spans
}

// HasVariableReference reports whether s holds reference syntax: a ${{…}} reference or
// an escaped $${{…}} literal, either of which needs a resolution pass (spec 01 §5.5).
func HasVariableReference(s string) bool {
	return strings.Contains(s, "${{") && referencePattern.MatchString(s)
}

// ParseReferences lists every ${{…}} reference in s in order, malformed ones included
// and escaped $${{…}} literals excluded, with the first structural failure (malformed:
// an empty name or segment; invalid-name: a name outside the variable grammar), or nil
// (spec 01 §5.5).
func ParseReferences(s string) ([]Reference, *UnresolvedReference) {
	var refs []Reference
	var first *UnresolvedReference
	for _, sp := range scan(s) {
		if sp.escaped {
			continue
		}
		refs = append(refs, sp.Reference)
		if first == nil {
			first = structuralError(sp.Reference)
		}
	}
	return refs, first
}

// structuralError is referenceError: the reference's shape failure, or nil.
func structuralError(ref Reference) *UnresolvedReference {
	switch {
	case ref.Name == "" || slices.Contains(ref.Path, ""):
		return unresolved(ref, ReasonMalformed)
	case !IsVariableName(ref.Name):
		return unresolved(ref, ReasonInvalidName)
	}
	return nil
}

// unresolved builds the failure for ref with the spec's detail text for reason.
func unresolved(ref Reference, reason string) *UnresolvedReference {
	path := strings.Join(ref.Path, ".")
	target := "'" + ref.Name + "'"
	if len(ref.Path) > 0 {
		target += " at path '" + path + "'"
	}
	var detail string
	switch reason {
	case ReasonMalformed:
		detail = ref.Raw + " is not a valid reference — use ${{name}} or ${{name.path.to.value}}"
	case ReasonInvalidName:
		detail = ref.Raw + " names '" + ref.Name + "', which is not a valid variable name (lowercase letters, digits and underscores, starting with a letter)"
	case ReasonUnset:
		detail = "variable '" + ref.Name + "' is not set"
	case ReasonPathMissing:
		detail = target + " does not resolve — the value has no such path"
	case ReasonNonScalar:
		detail = target + " resolves to a non-scalar value; only strings, numbers and booleans can be substituted into a guard"
	}
	return &UnresolvedReference{Ref: ref.Raw, Name: ref.Name, Path: path, Reason: reason, Detail: detail}
}

// lookup resolves one well-formed reference to its value.
func lookup(ref Reference, vars map[string]any) (any, *UnresolvedReference) {
	if failure := structuralError(ref); failure != nil {
		return nil, failure
	}
	root, ok := vars[ref.Name]
	if !ok {
		return nil, unresolved(ref, ReasonUnset)
	}
	v, ok := ResolveValuePath(root, ref.Path)
	if !ok {
		return nil, unresolved(ref, ReasonPathMissing)
	}
	return v, nil
}

// substitute replaces every reference in s by render(its scalar value) and every
// escape by its literal; the first failure stops it.
func substitute(s string, vars map[string]any, render func(string) string) (string, *UnresolvedReference) {
	spans := scan(s)
	if len(spans) == 0 {
		return s, nil
	}
	var b strings.Builder
	cursor := 0
	for _, sp := range spans {
		b.WriteString(s[cursor:sp.start])
		cursor = sp.end
		if sp.escaped {
			b.WriteString(sp.Raw[1:])
			continue
		}
		v, failure := lookup(sp.Reference, vars)
		if failure != nil {
			return "", failure
		}
		text, ok := ScalarString(v)
		if !ok {
			return "", unresolved(sp.Reference, ReasonNonScalar)
		}
		b.WriteString(render(text))
	}
	b.WriteString(s[cursor:])
	return b.String(), nil
}

// ResolveText substitutes every reference in s verbatim against vars (variable name →
// value) and turns each escape $${{x}} into the literal ${{x}} (spec 01 §5.5). Only
// strings, numbers and booleans substitute; the first failing reference stops
// resolution and no partial text is returned.
func ResolveText(s string, vars map[string]any) (string, *UnresolvedReference) {
	return substitute(s, vars, func(v string) string { return v })
}

// ResolveGlob is ResolveText for a tools guard glob: each substituted value is
// glob-escaped, so a '*' in a value matches a literal '*' (spec 01 §5.5). A failure
// means the guard fails closed.
func ResolveGlob(s string, vars map[string]any) (string, *UnresolvedReference) {
	return substitute(s, vars, EscapeGlob)
}

// globMeta escapes each glob metacharacter \ * ? [ ] { } ( ) ! + @ | ^ $ with '\'.
var globMeta = strings.NewReplacer(
	`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`, `]`, `\]`, `{`, `\{`, `}`, `\}`,
	`(`, `\(`, `)`, `\)`, `!`, `\!`, `+`, `\+`, `@`, `\@`, `|`, `\|`, `^`, `\^`, `$`, `\$`,
)

// EscapeGlob prefixes each of \ * ? [ ] { } ( ) ! + @ | ^ $ in s with '\' so a glob
// matches s literally (spec 01 §5.5).
func EscapeGlob(s string) string { return globMeta.Replace(s) }

// ResolveArgs substitutes references in every string of a decoded JSON value — the
// agent's own tool-call arguments (spec 01 §5.5) — verbatim, as ResolveText does.
// Maps and slices are rebuilt, other values pass through; map keys are visited in
// sorted order, so the first failure is deterministic, and nothing partial is returned.
func ResolveArgs(args any, vars map[string]any) (any, *UnresolvedReference) {
	return ResolveArgsTyped(args, vars, false)
}

// ResolveArgsTyped is ResolveArgs with the delegation rule (spec 01 §5.5, §7.5): when
// keepType is true, a string that is exactly one reference takes the referenced value
// itself, keeping its type (numbers, booleans, null, objects and arrays included; the
// value is shared with vars, not copied).
func ResolveArgsTyped(args any, vars map[string]any, keepType bool) (any, *UnresolvedReference) {
	switch a := args.(type) {
	case string:
		if keepType {
			if spans := scan(a); len(spans) == 1 && !spans[0].escaped && spans[0].start == 0 && spans[0].end == len(a) {
				return lookup(spans[0].Reference, vars)
			}
		}
		text, failure := ResolveText(a, vars)
		if failure != nil {
			return nil, failure
		}
		return text, nil
	case []any:
		out := make([]any, len(a))
		for i, item := range a {
			v, failure := ResolveArgsTyped(item, vars, keepType)
			if failure != nil {
				return nil, failure
			}
			out[i] = v
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(a))
		for _, k := range slices.Sorted(maps.Keys(a)) {
			v, failure := ResolveArgsTyped(a[k], vars, keepType)
			if failure != nil {
				return nil, failure
			}
			out[k] = v
		}
		return out, nil
	}
	return args, nil
}

// UnresolvedArgumentRefusal is the correctable refusal of an agent tool call whose
// arguments hold an unresolvable reference (spec 01 §5.5), exact text.
func UnresolvedArgumentRefusal(u *UnresolvedReference) string {
	escaped := strings.Replace(u.Ref, "${{", "$${{", 1)
	return "Call refused before it ran: the argument reference " + u.Ref + " could not be resolved — " + u.Detail +
		". Nothing was called and no partial value was delivered. Check what is set with `" + GetVariablesTool +
		"`, then retry with a reference that resolves — or, if you meant the literal text, write it as " + escaped + "."
}

// ScalarString renders a substitutable value (spec 01 §5.5): a string as is, a boolean
// as true/false, a number as JavaScript String(n); false for null, objects and arrays.
func ScalarString(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case bool:
		if x {
			return "true", true
		}
		return "false", true
	}
	if f, ok := jsonNumber(v); ok {
		return FormatJSNumber(f), true
	}
	return "", false
}
