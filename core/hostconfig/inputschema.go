package hostconfig

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/archmax-ai/archmax/core/yamltree"
)

// inputSchemaID is the URL an input schema is compiled under.
const inputSchemaID = "urn:archmax:tool-input"

// CompileSchema compiles a tool's input schema as the host does everywhere — at load and
// when the tools are built (core/hosttool) — draft 2020-12 unless it names another
// ($schema), with no loader: a $ref must stay inside the document, so compiling never
// reaches the network or the disk.
func CompileSchema(raw []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	if err := c.AddResource(inputSchemaID, doc); err != nil {
		return nil, err
	}
	return c.Compile(inputSchemaID)
}

func compileSchema(raw []byte) error {
	_, err := CompileSchema(raw)
	return err
}

type noLoader struct{}

func (noLoader) Load(u string) (any, error) {
	return nil, fmt.Errorf("a $ref to %s: an input schema refers only to itself", u)
}

// schemaIssue is one problem of an input schema: where in it (keys and list indices from
// the schema's root), what is wrong and what to do.
type schemaIssue struct {
	loc        []string
	text, hint string
	key        bool // the problem is the last segment's key, not its value
}

// parentLoc is the instance location of e's parent in the tree under root (nil when e is
// the root or not in it).
func parentLoc(root, e *jsonschema.ValidationError) []string {
	for _, c := range root.Causes {
		if c == e {
			return root.InstanceLocation
		}
		if l := parentLoc(c, e); l != nil {
			return l
		}
	}
	return nil
}

// schemaRefused reports why the input schema n (at field) does not compile: one finding
// per problem, at its node, with its path inside the schema — the metaschema's verdict
// walked down to its leaves, not the library's dump.
func (p *parser) schemaRefused(err error, n *node, field string) {
	seen := map[string]bool{}
	for _, is := range schemaIssues(err, n) {
		at, f := n, field
		for i, seg := range is.loc {
			f = join(f, seg)
			if e := at.Entry(seg); is.key && i == len(is.loc)-1 && at.Kind == yamltree.Map && e != nil {
				at = &node{Line: e.Line, Col: e.Col}
			} else if next := child(at, seg); next != nil {
				at = next
			}
		}
		msg := fmt.Sprintf("'%s' %s", f, is.text)
		if seen[msg] {
			continue
		}
		seen[msg] = true
		p.hinted(CodeInputSchema, is.hint, f, at, "%s", msg)
	}
}

// child is the value under seg (a key, or a list index) of n, or nil.
func child(n *node, seg string) *node {
	switch n.Kind {
	case yamltree.Map:
		return n.Get(seg)
	case yamltree.Seq:
		if i, err := strconv.Atoi(seg); err == nil && i >= 0 && i < len(n.Items) {
			return n.Items[i]
		}
	}
	return nil
}

func nodeAt(n *node, loc []string) *node {
	for _, seg := range loc {
		next := child(n, seg)
		if next == nil {
			return nil
		}
		n = next
	}
	return n
}

var english = message.NewPrinter(language.English)

// schemaIssues turns a compile error into its problems. A metaschema refusal
// (*jsonschema.SchemaValidationError) is walked to its leaves: an anyOf or oneOf none of
// whose branches matched is one problem naming the branches — unless the value had the
// shape of a branch that failed deeper, whose failures are then the problems. Other
// refusals (a $ref outside the document or to nothing, a pattern Go cannot compile) are
// located at the keyword they concern when it can be found.
func schemaIssues(err error, root *node) []schemaIssue {
	var sv *jsonschema.SchemaValidationError
	var ve *jsonschema.ValidationError
	if errors.As(err, &sv) && errors.As(sv.Err, &ve) {
		var out []schemaIssue
		var walk func(e *jsonschema.ValidationError)
		walk = func(e *jsonschema.ValidationError) {
			switch k := e.ErrorKind.(type) {
			case *kind.PropertyNames:
				// A key of a mapping is refused (its leaves are located at the key, relative
				// to nothing). The library's location of this node can be overwritten by
				// its siblings' (a shared slice): the mapping is found below the parent's
				// location instead — the keyword whose mapping holds the key.
				loc := slices.Clone(e.InstanceLocation)
				if parent := parentLoc(ve, e); parent != nil {
					if pn := nodeAt(root, parent); pn != nil && pn.Kind == yamltree.Map {
						for _, x := range pn.Entries {
							if x.Val.Kind == yamltree.Map && x.Val.Entry(k.Property) != nil {
								loc = append(slices.Clone(parent), x.Key)
								break
							}
						}
					}
				}
				for _, l := range leaves(e) {
					if l == e {
						break
					}
					is := leaf(append(loc, k.Property), l.ErrorKind, nil)
					is.key = true
					out = append(out, is)
				}
				return
			case *kind.AnyOf, *kind.OneOf:
				if o, ok := k.(*kind.OneOf); ok && o.Subschemas != nil {
					break // more than one branch matched: a leaf
				}
				var deeper []*jsonschema.ValidationError
				for _, c := range e.Causes {
					if slices.ContainsFunc(leaves(c), func(l *jsonschema.ValidationError) bool { return len(l.InstanceLocation) > len(e.InstanceLocation) }) {
						deeper = append(deeper, c)
					}
				}
				if len(deeper) > 0 {
					for _, c := range deeper {
						walk(c)
					}
					return
				}
				var alts []jsonschema.ErrorKind
				for _, c := range e.Causes {
					for _, l := range leaves(c) {
						alts = append(alts, l.ErrorKind)
					}
				}
				out = append(out, branches(e.InstanceLocation, alts, nodeAt(root, e.InstanceLocation)))
				return
			}
			if len(e.Causes) == 0 {
				out = append(out, leaf(e.InstanceLocation, e.ErrorKind, nodeAt(root, e.InstanceLocation)))
				return
			}
			for _, c := range e.Causes {
				walk(c)
			}
		}
		walk(ve)
		return out
	}
	var load *jsonschema.LoadURLError
	var notFound *jsonschema.JSONPointerNotFoundError
	var badPointer *jsonschema.InvalidJsonPointerError
	var regex *jsonschema.InvalidRegexError
	switch {
	case errors.As(err, &load):
		return []schemaIssue{{loc: refAt(root, load.URL), text: fmt.Sprintf("refers to %s, outside the input schema", load.URL), hint: hintSchemaRef}}
	case errors.As(err, &notFound):
		return []schemaIssue{{loc: refAt(root, notFound.URL), text: fmt.Sprintf("points at %s, which is not in the input schema", fragmentOf(notFound.URL)), hint: hintSchemaRef}}
	case errors.As(err, &badPointer):
		return []schemaIssue{{loc: refAt(root, badPointer.URL), text: fmt.Sprintf("is not a JSON pointer into the input schema (%s)", fragmentOf(badPointer.URL)), hint: hintSchemaRef}}
	case errors.As(err, &regex):
		return []schemaIssue{{loc: pointer(regex.URL), text: fmt.Sprintf("%q is not a regular expression: %s", regex.Regex, strings.TrimPrefix(regex.Err.Error(), "error parsing regexp: ")), hint: hintSchemaRegex}}
	}
	return []schemaIssue{{loc: nil, text: "is not a JSON Schema that compiles: " + oneLine(err.Error()), hint: hintSchemaGeneral}}
}

// leaves are e's causes without causes of their own (e itself when it has none).
func leaves(e *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(e.Causes) == 0 {
		return []*jsonschema.ValidationError{e}
	}
	var out []*jsonschema.ValidationError
	for _, c := range e.Causes {
		out = append(out, leaves(c)...)
	}
	return out
}

// leaf is one failed keyword of the metaschema, said of the value at loc.
func leaf(loc []string, k jsonschema.ErrorKind, n *node) schemaIssue {
	hint := hintFor(loc)
	got := " (got " + display(n) + ")"
	switch k := k.(type) {
	case *kind.Type, *kind.Enum, *kind.Const:
		return schemaIssue{loc: loc, text: "must be " + want(k) + got, hint: hint}
	case *kind.Format:
		if k.Want == "regex" {
			return schemaIssue{loc: loc, text: "is not a regular expression: " + strings.TrimPrefix(fmt.Sprint(k.Err), "error parsing regexp: "), hint: hintSchemaRegex}
		}
		return schemaIssue{loc: loc, text: fmt.Sprintf("is not a valid %s: %v", k.Want, k.Err), hint: hint}
	case *kind.Minimum:
		return schemaIssue{loc: loc, text: "must be at least " + k.Want.RatString() + got, hint: hint}
	case *kind.MinItems:
		return schemaIssue{loc: loc, text: fmt.Sprintf("must list at least %d item%s (it lists %d)", k.Want, plural(k.Want), k.Got), hint: hint}
	case *kind.UniqueItems:
		return schemaIssue{loc: loc, text: fmt.Sprintf("lists the same value twice (items %d and %d)", k.Duplicates[0], k.Duplicates[1]), hint: hint}
	}
	return schemaIssue{loc: loc, text: k.LocalizedString(english), hint: hint}
}

// branches is an anyOf or oneOf of the metaschema that no branch matched, at loc: "must be
// A, or B". A type keyword's reads "one of "array", …, or a list of them".
func branches(loc []string, alts []jsonschema.ErrorKind, n *node) schemaIssue {
	if len(alts) == 1 {
		return leaf(loc, alts[0], n)
	}
	hint := hintFor(loc)
	var parts []string
	for _, a := range alts {
		if t, ok := a.(*kind.Type); ok && slices.Equal(t.Want, []string{"array"}) && hint == hintSchemaType {
			parts = append(parts, "a list of them")
			continue
		}
		switch a.(type) {
		case *kind.Type, *kind.Enum, *kind.Const:
			parts = append(parts, want(a))
		default:
			parts = append(parts, a.LocalizedString(english))
		}
	}
	return schemaIssue{loc: loc, text: "must be " + strings.Join(parts, ", or ") + " (got " + display(n) + ")", hint: hint}
}

// hintFor is the hint of a problem at loc: a type keyword's (or one of its list's) names
// the type names.
func hintFor(loc []string) string {
	n := len(loc)
	keyword := func(i int) bool { return loc[i] == "type" && (i == 0 || loc[i-1] != "properties") }
	if n > 0 && keyword(n-1) || n > 1 && keyword(n-2) && isIndex(loc[n-1]) {
		return hintSchemaType
	}
	return hintSchemaGeneral
}

func isIndex(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}

// want is what a type, enum or const keyword wants, in words.
func want(k jsonschema.ErrorKind) string {
	switch k := k.(type) {
	case *kind.Type:
		nouns := make([]string, len(k.Want))
		for i, t := range k.Want {
			nouns[i] = typeNoun(t)
		}
		return strings.Join(nouns, ", or ")
	case *kind.Enum:
		vals := make([]string, len(k.Want))
		for i, v := range k.Want {
			vals[i] = jsonText(v)
		}
		if len(vals) == 1 {
			return vals[0]
		}
		return "one of " + strings.Join(vals, ", ")
	case *kind.Const:
		return jsonText(k.Want)
	}
	return k.LocalizedString(english)
}

func typeNoun(t string) string {
	switch t {
	case "object":
		return "a mapping"
	case "array":
		return "a list"
	case "integer":
		return "an integer"
	case "boolean":
		return "true or false"
	case "null":
		return "null"
	}
	return "a " + t
}

func jsonText(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(v)
}

// display is the value of n as the file wrote it (a scalar), or its shape.
func display(n *node) string {
	switch {
	case n == nil:
		return "nothing"
	case n.Kind == yamltree.String:
		return strconv.Quote(n.Str)
	case n.Kind == yamltree.Map:
		return "a mapping"
	case n.Kind == yamltree.Seq:
		return "a list"
	}
	return n.Str
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// refAt is the location of the first $ref (or $dynamicRef) of the schema whose value
// names target: the reference the compiler could not follow.
func refAt(root *node, target string) []string {
	frag := fragmentOf(target)
	base, _, _ := strings.Cut(target, "#")
	var found []string
	var walk func(n *node, loc []string) bool
	walk = func(n *node, loc []string) bool {
		switch n.Kind {
		case yamltree.Map:
			for _, e := range n.Entries {
				if (e.Key == "$ref" || e.Key == "$dynamicRef") && e.Val.Kind == yamltree.String {
					v := e.Val.Str
					vBase, _, _ := strings.Cut(v, "#")
					if v == target || (v == frag && strings.HasPrefix(target, inputSchemaID)) || (vBase != "" && strings.HasSuffix(base, vBase)) {
						found = append(slices.Clone(loc), e.Key)
						return true
					}
				}
				if walk(e.Val, append(loc, e.Key)) {
					return true
				}
			}
		case yamltree.Seq:
			for i, it := range n.Items {
				if walk(it, append(loc, strconv.Itoa(i))) {
					return true
				}
			}
		}
		return false
	}
	walk(root, nil)
	return found
}

// fragmentOf is the "#…" part of u ("#" when it has none).
func fragmentOf(u string) string {
	if _, f, ok := strings.Cut(u, "#"); ok {
		return "#" + f
	}
	return "#"
}

// pointer is the location a keyword URL's JSON-pointer fragment names.
func pointer(u string) []string {
	_, f, ok := strings.Cut(u, "#")
	if !ok || f == "" {
		return nil
	}
	if d, err := url.PathUnescape(f); err == nil {
		f = d
	}
	var out []string
	for _, seg := range strings.Split(strings.TrimPrefix(f, "/"), "/") {
		out = append(out, strings.NewReplacer("~1", "/", "~0", "~").Replace(seg))
	}
	return out
}
