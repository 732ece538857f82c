package spec

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

// Spec 01 §6.1.
func TestIsSlug(t *testing.T) {
	accepted := []string{"a", "order-lookup", "enrich-order-2", "v1", "0", strings.Repeat("a", 300)}
	refused := []string{"", "-a", "a-", "a--b", "a_b", "A", "a b", "é"}
	for _, s := range accepted {
		if !IsSlug(s) {
			t.Errorf("IsSlug(%q) = false", s)
		}
	}
	for _, s := range refused {
		if IsSlug(s) {
			t.Errorf("IsSlug(%q) = true", s)
		}
	}
}

// Spec 01 §7.5: a delegation target's slug is a slug of at most 47 characters (the tool name
// archmax_workflow_<slug> then fits Bedrock's 64-character limit).
func TestIsDelegationSlug(t *testing.T) {
	for s, want := range map[string]bool{
		strings.Repeat("a", 47): true, strings.Repeat("a", 48): false, "order-lookup": true,
		"": false, "Order": false, strings.Repeat("ab-", 15) + "ab": true, strings.Repeat("ab-", 15) + "abc": false,
	} {
		if got := IsDelegationSlug(s); got != want {
			t.Errorf("IsDelegationSlug(%q) = %v", s, got)
		}
		if want && len(WorkflowToolName(s)) > 64 {
			t.Errorf("%s is longer than a Bedrock tool name may be", WorkflowToolName(s))
		}
	}
}

// Spec 01 §5.1.
func TestIsVariableName(t *testing.T) {
	for s, want := range map[string]bool{
		"a": true, "order_id": true, "from_email": true, "a1_": true, strings.Repeat("x", 100): true,
		"": false, "_a": false, "1a": false, "Order": false, "a-b": false, "a.b": false, "a b": false,
	} {
		if got := IsVariableName(s); got != want {
			t.Errorf("IsVariableName(%q) = %v, want %v", s, got, want)
		}
	}
}

// Spec 01 §5.1: InvalidVariableNameError wording, source defaulting to "seeded".
func TestCheckVariableName(t *testing.T) {
	if err := CheckVariableName("order_id", ""); err != nil {
		t.Fatalf("valid name refused: %v", err)
	}
	tests := []struct{ name, source, want string }{
		{"Order", "", "'Order' is not a valid variable name (seeded). Use lowercase letters, digits and underscores, starting with a letter (e.g. 'from_email')."},
		{"a.b", "delivered to session 's1'", "'a.b' is not a valid variable name (delivered to session 's1'). Use lowercase letters, digits and underscores, starting with a letter (e.g. 'from_email')."},
	}
	for _, tt := range tests {
		err := CheckVariableName(tt.name, tt.source)
		var typed *InvalidVariableNameError
		if !errors.As(err, &typed) || typed.Variable != tt.name {
			t.Fatalf("CheckVariableName(%q) = %#v, want *InvalidVariableNameError", tt.name, err)
		}
		if err.Error() != tt.want {
			t.Errorf("message\n got %q\nwant %q", err.Error(), tt.want)
		}
	}
}

// Spec 01 §4.9 grammar, in its order.
func TestParseSessionPath(t *testing.T) {
	tests := []struct {
		in     string
		want   []string
		reason string
	}{
		{in: "conversation_id", want: []string{"conversation_id"}},
		{in: "  triggers.-1.conversationId ", want: []string{"triggers", "-1", "conversationId"}},
		{in: "msg.Thread-ID.0", want: []string{"msg", "Thread-ID", "0"}},
		{in: "   ", reason: "it is empty."},
		{in: "${{conversation_id}}", reason: "write the bare path, not a '${{…}}' reference (e.g. 'conversation_id')."},
		{in: "Conversation", reason: "its first segment must be a variable name (lowercase letters, digits and underscores, starting with a letter)."},
		{in: ".a", reason: "its first segment must be a variable name (lowercase letters, digits and underscores, starting with a letter)."},
		{in: "a..b", reason: "it has an empty segment — check for a doubled or trailing '.'."},
		{in: "a.b.", reason: "it has an empty segment — check for a doubled or trailing '.'."},
	}
	for _, tt := range tests {
		got, err := ParseSessionPath(tt.in)
		if tt.reason == "" {
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseSessionPath(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
			continue
		}
		var typed *InvalidSessionPathError
		if !errors.As(err, &typed) || typed.Reason != tt.reason || typed.Path != tt.in {
			t.Errorf("ParseSessionPath(%q) error = %#v, want reason %q", tt.in, err, tt.reason)
			continue
		}
		want := "the caller-supplied path '" + tt.in + "' is not a usable session path: " + tt.reason
		if err.Error() != want {
			t.Errorf("message %q, want %q", err.Error(), want)
		}
	}
}

// Spec 01 §5.5 path steps, shared by §4.9.
func TestResolveValuePath(t *testing.T) {
	root := map[string]any{
		"items":     []any{"a", "b", "c"},
		"obj":       map[string]any{"-0": "minus-zero", "-01": "minus-oh-one", "length": 7.0, "nil": nil},
		"tags":      []any{"x"},
		"scalar":    "text",
		"__proto__": "data",
	}
	tests := []struct {
		path []string
		want any
		ok   bool
	}{
		{nil, root, true},
		{[]string{"items", "0"}, "a", true},
		{[]string{"items", "2"}, "c", true},
		{[]string{"items", "-1"}, "c", true},
		{[]string{"items", "-3"}, "a", true},
		{[]string{"items", "-4"}, nil, false},
		{[]string{"items", "3"}, nil, false},
		{[]string{"items", "01"}, nil, false},
		{[]string{"items", "-0"}, nil, false},
		{[]string{"items", "-01"}, nil, false},
		{[]string{"items", "+1"}, nil, false},
		{[]string{"items", "1.0"}, nil, false},
		{[]string{"items", "99999999999999999999999"}, nil, false},
		{[]string{"tags", "length"}, nil, false},
		{[]string{"obj", "-0"}, "minus-zero", true},
		{[]string{"obj", "-01"}, "minus-oh-one", true},
		{[]string{"obj", "length"}, 7.0, true},
		{[]string{"obj", "nil"}, nil, true},
		{[]string{"obj", "constructor"}, nil, false},
		{[]string{"__proto__"}, "data", true},
		{[]string{"scalar", "length"}, nil, false},
		{[]string{"missing"}, nil, false},
	}
	for _, tt := range tests {
		got, ok := ResolveValuePath(root, tt.path)
		if ok != tt.ok || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ResolveValuePath(%q) = %v, %v; want %v, %v", tt.path, got, ok, tt.want, tt.ok)
		}
	}
}

// Spec 01 §4.9 resolution.
func TestSessionIDFromPath(t *testing.T) {
	vars := map[string]any{
		"conversation_id": "conv-7",
		"padded":          "  x  ",
		"blank":           "   ",
		"num":             42.0,
		"frac":            1.5,
		"big":             1e21,
		"inf":             math.Inf(1),
		"count":           int64(9),
		"flag":            true,
		"null":            nil,
		"obj":             map[string]any{"id": "inner"},
		"triggers":        []any{map[string]any{"conversationId": "first"}, map[string]any{"conversationId": "last"}},
	}
	tests := []struct {
		path string
		want string
		ok   bool
	}{
		{"conversation_id", "conv-7", true},
		{"padded", "  x  ", true},
		{"num", "42", true},
		{"frac", "1.5", true},
		{"big", "1e+21", true},
		{"count", "9", true},
		{"obj.id", "inner", true},
		{"triggers.-1.conversationId", "last", true},
		{"triggers.0.conversationId", "first", true},
		{"blank", "", false},
		{"inf", "", false},
		{"flag", "", false},
		{"null", "", false},
		{"obj", "", false},
		{"triggers", "", false},
		{"unset", "", false},
		{"obj.missing", "", false},
	}
	for _, tt := range tests {
		path, err := ParseSessionPath(tt.path)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := SessionIDFromPath(vars, path)
		if got != tt.want || ok != tt.ok {
			t.Errorf("SessionIDFromPath(%q) = %q, %v; want %q, %v", tt.path, got, ok, tt.want, tt.ok)
		}
	}
	if _, ok := SessionIDFromPath(vars, nil); ok {
		t.Error("an empty path resolved")
	}
}
