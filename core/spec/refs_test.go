package spec

import (
	"reflect"
	"strings"
	"testing"
)

var refVars = map[string]any{
	"order_id": "o-1",
	"qty":      4.0,
	"price":    0.1,
	"big":      1e21,
	"rush":     true,
	"note":     nil,
	"star":     "a*b?[c]{d}(e)!+@|^$\\",
	"order":    map[string]any{"items": []any{map[string]any{"sku": "s-1"}, map[string]any{"sku": "s-2"}}, "-0": "mz", "-01": "mzo"},
	"tags":     []any{"x", "y"},
}

// Spec 01 §5.5.
func TestResolveText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"no refs", "no refs"},
		{"${{order_id}}", "o-1"},
		{"id=${{ order_id }}, qty=${{qty}}, again ${{order_id}}", "id=o-1, qty=4, again o-1"},
		{"${{price}}|${{big}}|${{rush}}", "0.1|1e+21|true"},
		{"${{order.items.0.sku}} ${{order.items.-1.sku}} ${{tags.-2}}", "s-1 s-2 x"},
		{"${{order.-0}} ${{order.-01}}", "mz mzo"},
		{"$${{order_id}}", "${{order_id}}"},
		{"$${{x.y}} and ${{qty}}", "${{x.y}} and 4"},
		{"$$${{qty}}", "$${{qty}}"},
		{"${{star}}", `a*b?[c]{d}(e)!+@|^$\`},
		{"${{}", "${{}"},
		{"${ {qty}}", "${ {qty}}"},
	}
	for _, tt := range tests {
		got, u := ResolveText(tt.in, refVars)
		if u != nil || got != tt.want {
			t.Errorf("ResolveText(%q) = %q, %+v; want %q", tt.in, got, u, tt.want)
		}
	}
}

// Spec 01 §5.5 failure reasons and detail texts; the first failure stops.
func TestResolveTextFailures(t *testing.T) {
	tests := []struct {
		in   string
		want UnresolvedReference
	}{
		{"${{ }}", UnresolvedReference{Ref: "${{ }}", Reason: "malformed", Detail: "${{ }} is not a valid reference — use ${{name}} or ${{name.path.to.value}}"}},
		{"${{a..b}}", UnresolvedReference{Ref: "${{a..b}}", Name: "a", Path: ".b", Reason: "malformed", Detail: "${{a..b}} is not a valid reference — use ${{name}} or ${{name.path.to.value}}"}},
		{"${{qty.}}", UnresolvedReference{Ref: "${{qty.}}", Name: "qty", Reason: "malformed", Detail: "${{qty.}} is not a valid reference — use ${{name}} or ${{name.path.to.value}}"}},
		{"${{Order}}", UnresolvedReference{Ref: "${{Order}}", Name: "Order", Reason: "invalid-name", Detail: "${{Order}} names 'Order', which is not a valid variable name (lowercase letters, digits and underscores, starting with a letter)"}},
		{"x ${{missing}} ${{Bad}}", UnresolvedReference{Ref: "${{missing}}", Name: "missing", Reason: "unset", Detail: "variable 'missing' is not set"}},
		{"${{order.items.2.sku}}", UnresolvedReference{Ref: "${{order.items.2.sku}}", Name: "order", Path: "items.2.sku", Reason: "path-missing", Detail: "'order' at path 'items.2.sku' does not resolve — the value has no such path"}},
		{"${{tags.length}}", UnresolvedReference{Ref: "${{tags.length}}", Name: "tags", Path: "length", Reason: "path-missing", Detail: "'tags' at path 'length' does not resolve — the value has no such path"}},
		{"${{tags.-0}}", UnresolvedReference{Ref: "${{tags.-0}}", Name: "tags", Path: "-0", Reason: "path-missing", Detail: "'tags' at path '-0' does not resolve — the value has no such path"}},
		{"${{order.__proto__}}", UnresolvedReference{Ref: "${{order.__proto__}}", Name: "order", Path: "__proto__", Reason: "path-missing", Detail: "'order' at path '__proto__' does not resolve — the value has no such path"}},
		{"${{order}}", UnresolvedReference{Ref: "${{order}}", Name: "order", Reason: "non-scalar", Detail: "'order' resolves to a non-scalar value; only strings, numbers and booleans can be substituted into a guard"}},
		{"${{order.items}}", UnresolvedReference{Ref: "${{order.items}}", Name: "order", Path: "items", Reason: "non-scalar", Detail: "'order' at path 'items' resolves to a non-scalar value; only strings, numbers and booleans can be substituted into a guard"}},
		{"${{note}}", UnresolvedReference{Ref: "${{note}}", Name: "note", Reason: "non-scalar", Detail: "'note' resolves to a non-scalar value; only strings, numbers and booleans can be substituted into a guard"}},
	}
	for _, tt := range tests {
		got, u := ResolveText(tt.in, refVars)
		if u == nil || *u != tt.want || got != "" {
			t.Errorf("ResolveText(%q) = %q, %+v\nwant failure %+v", tt.in, got, u, tt.want)
		}
	}
}

// Spec 01 §5.5 glob escaping of substituted values only.
func TestResolveGlob(t *testing.T) {
	got, u := ResolveGlob("orders/${{order_id}}/**/${{star}}.json", refVars)
	want := `orders/o-1/**/a\*b\?\[c\]\{d\}\(e\)\!\+\@\|\^\$\\.json`
	if u != nil || got != want {
		t.Errorf("ResolveGlob = %q, %+v; want %q", got, u, want)
	}
	if got, _ := ResolveGlob("$${{star}}/*", refVars); got != "${{star}}/*" {
		t.Errorf("escape in a glob: %q", got)
	}
	if _, u := ResolveGlob("x/${{missing}}", refVars); u == nil || u.Reason != ReasonUnset {
		t.Errorf("unresolved glob: %+v", u)
	}
}

func TestEscapeGlob(t *testing.T) {
	if got := EscapeGlob(`plain-text.txt`); got != "plain-text.txt" {
		t.Errorf("plain: %q", got)
	}
	for _, c := range strings.Split(`\ * ? [ ] { } ( ) ! + @ | ^ $`, " ") {
		if got := EscapeGlob("a" + c + "b"); got != `a\`+c+"b" {
			t.Errorf("EscapeGlob(%q) = %q", "a"+c+"b", got)
		}
	}
}

func TestHasVariableReferenceAndParse(t *testing.T) {
	for s, want := range map[string]bool{"${{a}}": true, "$${{a}}": true, "x ${{}} y": true, "${a}": false, "{{a}}": false, "": false} {
		if got := HasVariableReference(s); got != want {
			t.Errorf("HasVariableReference(%q) = %v", s, got)
		}
	}
	refs, u := ParseReferences("a ${{ order.items.0 }} $${{skip}} ${{Bad}} ${{x}}")
	want := []Reference{
		{Raw: "${{ order.items.0 }}", Name: "order", Path: []string{"items", "0"}},
		{Raw: "${{Bad}}", Name: "Bad"},
		{Raw: "${{x}}", Name: "x"},
	}
	if !reflect.DeepEqual(refs, want) {
		t.Errorf("ParseReferences refs = %#v", refs)
	}
	if u == nil || u.Reason != ReasonInvalidName || u.Ref != "${{Bad}}" {
		t.Errorf("ParseReferences failure = %+v", u)
	}
	if _, u := ParseReferences("${{a}} ${{b.c}}"); u != nil {
		t.Errorf("well-formed refs reported %+v", u)
	}
}

// Spec 01 §5.5: agent arguments verbatim; delegation keeps a lone reference's type.
func TestResolveArgs(t *testing.T) {
	args := map[string]any{
		"path":  "orders/${{order_id}}.json",
		"n":     "${{qty}}",
		"list":  []any{"${{tags.0}}", 3.0, nil, map[string]any{"deep": "${{rush}}"}},
		"keep":  true,
		"lit":   "$${{order_id}}",
		"mixed": " ${{qty}}",
	}
	got, u := ResolveArgs(args, refVars)
	want := map[string]any{
		"path":  "orders/o-1.json",
		"n":     "4",
		"list":  []any{"x", 3.0, nil, map[string]any{"deep": "true"}},
		"keep":  true,
		"lit":   "${{order_id}}",
		"mixed": " 4",
	}
	if u != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ResolveArgs = %#v, %+v", got, u)
	}
	if args["path"] != "orders/${{order_id}}.json" {
		t.Error("ResolveArgs mutated its input")
	}

	typed, u := ResolveArgsTyped(map[string]any{"n": "${{qty}}", "o": "${{ order }}", "s": "q=${{qty}}", "z": "${{note}}"}, refVars, true)
	wantTyped := map[string]any{"n": 4.0, "o": refVars["order"], "s": "q=4", "z": nil}
	if u != nil || !reflect.DeepEqual(typed, wantTyped) {
		t.Errorf("ResolveArgsTyped = %#v, %+v", typed, u)
	}
	if _, u := ResolveArgsTyped(map[string]any{"x": "${{missing}}"}, refVars, true); u == nil || u.Reason != ReasonUnset {
		t.Errorf("typed lone unset reference: %+v", u)
	}

	// The first failure in sorted key order stops resolution.
	_, u = ResolveArgs(map[string]any{"b": "${{b_missing}}", "a": []any{"${{a_missing}}"}}, refVars)
	if u == nil || u.Name != "a_missing" {
		t.Errorf("first failure = %+v, want a_missing", u)
	}
	if got, u := ResolveArgs("${{order}}", refVars); u == nil || got != nil || u.Reason != ReasonNonScalar {
		t.Errorf("non-scalar argument: %v, %+v", got, u)
	}
}

// Spec 01 §5.5 refusal text.
func TestUnresolvedArgumentRefusal(t *testing.T) {
	_, u := ResolveArgs(map[string]any{"q": "id ${{order.missing}}"}, refVars)
	want := "Call refused before it ran: the argument reference ${{order.missing}} could not be resolved — 'order' at path 'missing' does not resolve — the value has no such path. Nothing was called and no partial value was delivered. Check what is set with `archmax_get_variables`, then retry with a reference that resolves — or, if you meant the literal text, write it as $${{order.missing}}."
	if got := UnresolvedArgumentRefusal(u); got != want {
		t.Errorf("refusal\n got %q\nwant %q", got, want)
	}
}

func TestScalarString(t *testing.T) {
	tests := []struct {
		v    any
		want string
		ok   bool
	}{
		{"s", "s", true}, {true, "true", true}, {false, "false", true}, {4.0, "4", true}, {-0.5, "-0.5", true},
		{1e-7, "1e-7", true}, {int64(12), "12", true}, {nil, "", false}, {map[string]any{}, "", false}, {[]any{}, "", false},
	}
	for _, tt := range tests {
		got, ok := ScalarString(tt.v)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ScalarString(%#v) = %q, %v", tt.v, got, ok)
		}
	}
}

func BenchmarkResolveGlob(b *testing.B) {
	const glob = "orders/${{order_id}}/items/${{order.items.-1.sku}}/**/*.{json,yaml}"
	for b.Loop() {
		if _, u := ResolveGlob(glob, refVars); u != nil {
			b.Fatal(u)
		}
	}
}
