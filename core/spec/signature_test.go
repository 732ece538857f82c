package spec

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Spec 01 §4.4 normalizeSignature: total, order-preserving, both spellings.
func TestNormalizeSignature(t *testing.T) {
	list := []any{
		"order_id",
		map[string]any{"name": "due", "type": "date", "description": "  when  "},
		map[string]any{"name": "n", "type": "float"},
		map[string]any{"name": "blank", "description": "   "},
		map[string]any{"type": "string"},
		42,
		nil,
		[]any{"nested"},
		map[string]any{"name": "doc", "type": "file"},
	}
	want := []SignatureEntry{
		{Name: "order_id"},
		{Name: "due", Type: "date", Description: "when"},
		{Name: "n"},
		{Name: "blank"},
		{Name: "doc", Type: "file"},
	}
	if got := NormalizeSignature(list); !reflect.DeepEqual(got, want) {
		t.Errorf("NormalizeSignature = %#v\nwant %#v", got, want)
	}
	if got := NormalizeSignature([]string{"a", "b"}); !reflect.DeepEqual(got, []SignatureEntry{{Name: "a"}, {Name: "b"}}) {
		t.Errorf("[]string: %#v", got)
	}
	for _, notList := range []any{nil, "a", map[string]any{"name": "a"}, 3.0} {
		if got := NormalizeSignature(notList); len(got) != 0 {
			t.Errorf("NormalizeSignature(%#v) = %#v, want empty", notList, got)
		}
	}
}

// Spec 01 §4.4 order.
func TestSignatureTypesOrder(t *testing.T) {
	want := "string integer number boolean date date-time object array file"
	if got := strings.Join(SignatureTypes, " "); got != want {
		t.Errorf("SignatureTypes = %s", got)
	}
}

// Spec 01 §4.6 conformance table, every type, no coercion.
func TestSignatureConformance(t *testing.T) {
	tests := []struct {
		typ  string
		v    any
		want bool
	}{
		{"string", "x", true}, {"string", "", true}, {"string", 4.0, false}, {"string", nil, false},
		{"integer", 4.0, true}, {"integer", -3.0, true}, {"integer", 4, true}, {"integer", int64(1) << 60, true},
		{"integer", json.Number("4.0"), true}, {"integer", 4.5, false}, {"integer", "4", false},
		{"integer", math.Inf(1), false}, {"integer", math.NaN(), false}, {"integer", json.Number("x"), false},
		{"number", 4.5, true}, {"number", 0.0, true}, {"number", uint8(3), true}, {"number", float32(1.5), true},
		{"number", math.Inf(-1), false}, {"number", math.NaN(), false}, {"number", "4.5", false}, {"number", true, false},
		{"boolean", true, true}, {"boolean", false, true}, {"boolean", "true", false}, {"boolean", 1.0, false},
		{"date", "2026-03-01", true}, {"date", "2024-02-29", true}, {"date", "2000-02-29", true},
		{"date", "2026-02-30", false}, {"date", "2026-02-29", false}, {"date", "1900-02-29", false},
		{"date", "2026-04-31", false}, {"date", "2026-13-01", false}, {"date", "2026-00-10", false},
		{"date", "2026-01-00", false}, {"date", "2026-1-01", false}, {"date", "2026-03-01T00:00:00Z", false},
		{"date", "2026-03-01\n", false}, {"date", "２０２６-03-01", false},
		{"date-time", "2026-03-01T09:30:00Z", true}, {"date-time", "2026-03-01t09:30:00z", true},
		{"date-time", "2026-03-01T09:30:00.123+05:30", true}, {"date-time", "2026-12-31T23:59:60-23:59", true},
		{"date-time", "2024-02-29T00:00:00Z", true},
		{"date-time", "2026-03-01T09:30:00", false}, {"date-time", "2026-03-01 09:30:00Z", false},
		{"date-time", "2026-02-30T09:30:00Z", false}, {"date-time", "2026-03-01T24:00:00Z", false},
		{"date-time", "2026-03-01T09:60:00Z", false}, {"date-time", "2026-03-01T09:30:61Z", false},
		{"date-time", "2026-03-01T09:30:00+24:00", false}, {"date-time", "2026-03-01T09:30:00+05:60", false},
		{"date-time", "2026-03-01T09:30Z", false}, {"date-time", "2026-03-01", false},
		{"object", map[string]any{}, true}, {"object", map[string]string{"a": "b"}, true},
		{"object", []any{}, false}, {"object", nil, false}, {"object", "{}", false},
		{"array", []any{}, true}, {"array", []string{"a"}, true}, {"array", map[string]any{}, false}, {"array", nil, false},
		{"file", "scratchpad/attachments/a.pdf", true}, {"file", "a..b/c", true},
		{"file", "/etc/passwd", false}, {"file", "../x", false}, {"file", "a/../../x", false}, {"file", `a\..\x`, false},
		{"file", "", false}, {"file", "  ", false}, {"file", 1.0, false},
	}
	for _, tt := range tests {
		issues := SignatureValueIssues([]SignatureEntry{{Name: "v", Type: tt.typ}}, map[string]any{"v": tt.v})
		if got := len(issues) == 0; got != tt.want {
			t.Errorf("%s conforms(%#v) = %v, want %v (%v)", tt.typ, tt.v, got, tt.want, issues)
		}
	}
}

// Spec 01 §4.6 messages, kinds and <arrived> renderings.
func TestSignatureValueIssues(t *testing.T) {
	entries := []SignatureEntry{
		{Name: "missing"},
		{Name: "untyped_null"},
		{Name: "typed_null", Type: "string"},
		{Name: "count", Type: "integer"},
		{Name: "num_str", Type: "integer"},
		{Name: "long_str", Type: "number"},
		{Name: "astral", Type: "number"},
		{Name: "due", Type: "date"},
		{Name: "at", Type: "date-time"},
		{Name: "flag", Type: "string"},
		{Name: "obj", Type: "array"},
		{Name: "arr", Type: "object"},
		{Name: "ok", Type: "boolean"},
		{Name: "doc", Type: "file"},
	}
	values := map[string]any{
		"untyped_null": nil,
		"typed_null":   nil,
		"count":        4.5,
		"num_str":      "4",
		"long_str":     strings.Repeat("x", 41),
		"astral":       strings.Repeat("😀", 20), // 40 UTF-16 units
		"due":          "2026-02-30",
		"at":           "2026-03-01T09:30:00",
		"flag":         true,
		"obj":          map[string]any{},
		"arr":          []any{},
		"ok":           true,
		"doc":          "/abs",
		"extra":        "ignored",
	}
	want := []SignatureValueIssue{
		{Kind: "missing", Name: "missing", Message: "'missing' is not set"},
		{Kind: "invalid", Name: "typed_null", Type: "string", Found: "null", Message: "'typed_null' must be a string, but null arrived"},
		{Kind: "invalid", Name: "count", Type: "integer", Found: "number", Message: "'count' must be an integer (a number with no fractional part), but a number (4.5) arrived"},
		{Kind: "invalid", Name: "num_str", Type: "integer", Found: "string", Message: `'num_str' must be an integer (a number with no fractional part), but a string ("4") arrived`},
		{Kind: "invalid", Name: "long_str", Type: "number", Found: "string", Message: "'long_str' must be a number, but a string arrived"},
		{Kind: "invalid", Name: "astral", Type: "number", Found: "string", Message: "'astral' must be a number, but a string (\"" + strings.Repeat("😀", 20) + "\") arrived"},
		{Kind: "invalid", Name: "due", Type: "date", Found: "string", Message: `'due' must be a date (an RFC 3339 full-date, YYYY-MM-DD, naming a real calendar day), but a string ("2026-02-30") arrived`},
		{Kind: "invalid", Name: "at", Type: "date-time", Found: "string", Message: `'at' must be a date-time (an RFC 3339 date-time with an offset, e.g. 2026-03-01T09:30:00Z), but a string ("2026-03-01T09:30:00") arrived`},
		{Kind: "invalid", Name: "flag", Type: "string", Found: "boolean", Message: "'flag' must be a string, but a boolean arrived"},
		{Kind: "invalid", Name: "obj", Type: "array", Found: "object", Message: "'obj' must be an array, but an object arrived"},
		{Kind: "invalid", Name: "arr", Type: "object", Found: "array", Message: "'arr' must be an object, but an array arrived"},
		{Kind: "invalid", Name: "doc", Type: "file", Found: "string", Message: `'doc' must be a file (a workspace-relative path), but a string ("/abs") arrived`},
	}
	got := SignatureValueIssues(entries, values)
	if len(got) != len(want) {
		t.Fatalf("got %d issues, want %d: %#v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("issue %d\n got %#v\nwant %#v", i, got[i], want[i])
		}
	}
	if issues := SignatureValueIssues(entries[:1], nil); len(issues) != 1 || issues[0].Kind != "missing" {
		t.Errorf("nil values: %#v", issues)
	}
}

// A string arrival is JSON-quoted as JSON.stringify would (no HTML escaping).
func TestSignatureArrivedQuoting(t *testing.T) {
	issues := SignatureValueIssues([]SignatureEntry{{Name: "n", Type: "number"}}, map[string]any{"n": "a\"<b>\n"})
	want := `'n' must be a number, but a string ("a\"<b>\n") arrived`
	if len(issues) != 1 || issues[0].Message != want {
		t.Errorf("got %#v, want %s", issues, want)
	}
}

func TestSignatureValueIssueJSON(t *testing.T) {
	b, _ := json.Marshal(SignatureValueIssue{Kind: "missing", Name: "a", Message: "'a' is not set"})
	if string(b) != `{"kind":"missing","name":"a","message":"'a' is not set"}` {
		t.Errorf("json %s", b)
	}
}

// Spec 01 §4.5: declaration order, formats, descriptions, no additionalProperties.
func TestSignatureJSONSchema(t *testing.T) {
	entries := []SignatureEntry{
		{Name: "order_id", Type: "string", Description: "The <order>"},
		{Name: "qty", Type: "integer"},
		{Name: "amount", Type: "number"},
		{Name: "rush", Type: "boolean"},
		{Name: "due", Type: "date"},
		{Name: "at", Type: "date-time"},
		{Name: "meta", Type: "object"},
		{Name: "lines", Type: "array"},
		{Name: "doc", Type: "file"},
		{Name: "anything", Description: "free"},
		{Name: "bare"},
	}
	want := `{"type":"object","properties":{` +
		`"order_id":{"type":"string","description":"The <order>"},` +
		`"qty":{"type":"integer"},"amount":{"type":"number"},"rush":{"type":"boolean"},` +
		`"due":{"type":"string","format":"date"},"at":{"type":"string","format":"date-time"},` +
		`"meta":{"type":"object"},"lines":{"type":"array"},"doc":{"type":"string","format":"file"},` +
		`"anything":{"description":"free"},"bare":{}},` +
		`"required":["order_id","qty","amount","rush","due","at","meta","lines","doc","anything","bare"]}`
	got := SignatureJSONSchema(entries)
	if string(got) != want {
		t.Fatalf("schema\n got %s\nwant %s", got, want)
	}
	if empty := string(SignatureJSONSchema(nil)); empty != `{"type":"object","properties":{},"required":[]}` {
		t.Errorf("empty schema %s", empty)
	}

	sch := compileSchema(t, got)
	conforming := `{"order_id":"o-1","qty":4.0,"amount":2.5,"rush":false,"due":"2026-03-01","at":"2026-03-01T09:30:00Z",` +
		`"meta":{},"lines":[],"doc":"a.pdf","anything":null,"bare":[1],"extra":true}`
	if err := sch.Validate(decodeInstance(t, conforming)); err != nil {
		t.Errorf("conforming instance refused: %v", err)
	}
	for _, bad := range []string{
		`{"qty":4}`,
		strings.Replace(conforming, `"qty":4.0`, `"qty":"4"`, 1),
		strings.Replace(conforming, `"qty":4.0`, `"qty":4.5`, 1),
		strings.Replace(conforming, `"meta":{}`, `"meta":[]`, 1),
	} {
		if err := sch.Validate(decodeInstance(t, bad)); err == nil {
			t.Errorf("non-conforming instance accepted: %s", bad)
		}
	}
}

func compileSchema(t *testing.T, raw json.RawMessage) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("signature.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("signature.json")
	if err != nil {
		t.Fatalf("schema does not compile: %v", err)
	}
	return sch
}

func decodeInstance(t *testing.T, s string) any {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Spec 01 §4.7, 02 §1.4 item 10.
func TestRequiresRefusal(t *testing.T) {
	entries := []SignatureEntry{{Name: "order_id"}, {Name: "email"}, {Name: "qty", Type: "integer"}, {Name: "due", Type: "date"}}
	tests := []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"satisfied", map[string]any{"order_id": "o", "email": nil, "qty": 4.0, "due": "2024-02-29"}, ""},
		{"missing", map[string]any{"email": "e", "qty": 1.0, "due": "2026-01-01"},
			"Refusing to start: trigger 'order_placed' requires 'order_id', which this firing does not supply."},
		{"two missing", map[string]any{"qty": 1.0, "due": "2026-01-01"},
			"Refusing to start: trigger 'order_placed' requires 'order_id', 'email', which this firing does not supply."},
		{"typed", map[string]any{"order_id": "o", "email": "e", "qty": "4", "due": "2026-02-30"},
			`Refusing to start: trigger 'order_placed' declares typed inputs this firing does not satisfy: 'qty' must be an integer (a number with no fractional part), but a string ("4") arrived; 'due' must be a date (an RFC 3339 full-date, YYYY-MM-DD, naming a real calendar day), but a string ("2026-02-30") arrived.`},
		{"both", map[string]any{"email": "e", "qty": 1.5, "due": "2026-01-01"},
			"Refusing to start: trigger 'order_placed' requires 'order_id', which this firing does not supply. It also declares typed inputs this firing does not satisfy: 'qty' must be an integer (a number with no fractional part), but a number (1.5) arrived."},
	}
	for _, tt := range tests {
		if got := RequiresRefusal("order_placed", entries, tt.values); got != tt.want {
			t.Errorf("%s\n got %q\nwant %q", tt.name, got, tt.want)
		}
	}
	if got := RequiresRefusal("manual", nil, nil); got != "" {
		t.Errorf("no requires: %q", got)
	}
}

// 02 §2.4 item 4.
func TestReturnsRefusal(t *testing.T) {
	entries := []SignatureEntry{{Name: "summary"}, {Name: "total", Type: "number"}, {Name: "lines", Type: "array"}}
	tests := []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"complete", map[string]any{"summary": "s", "total": 1.0, "lines": []any{}}, ""},
		{"one unset", map[string]any{"total": 1.0, "lines": []any{}},
			"Completed in state 'done' without setting 'summary', which trigger 'manual' declares in its 'returns'. Set it with 'archmax_set_variables' before finishing."},
		{"two unset", map[string]any{"lines": []any{}},
			"Completed in state 'done' without setting 'summary', 'total', which trigger 'manual' declares in its 'returns'. Set them with 'archmax_set_variables' before finishing."},
		{"both", map[string]any{"total": "1", "lines": []any{}},
			`Completed in state 'done' without setting 'summary', which trigger 'manual' declares in its 'returns'. Set it with 'archmax_set_variables' before finishing. Completed in state 'done' with returns that do not conform to the types trigger 'manual' declares: 'total' must be a number, but a string ("1") arrived. Set a conforming value with 'archmax_set_variables' before finishing.`},
	}
	for _, tt := range tests {
		if got := ReturnsRefusal("done", "manual", entries, tt.values); got != tt.want {
			t.Errorf("%s\n got %q\nwant %q", tt.name, got, tt.want)
		}
	}
}

// Spec 01 §4.7 write-time check of typed returns.
func TestMistypedReturnsRefusal(t *testing.T) {
	entries := []SignatureEntry{{Name: "summary"}, {Name: "total", Type: "number"}, {Name: "due", Type: "date"}}
	tests := []struct {
		name   string
		writes map[string]any
		want   string
	}{
		{"untyped and undeclared are free", map[string]any{"summary": 1.0, "other": nil}, ""},
		{"conforming", map[string]any{"total": 3.0}, ""},
		{"unwritten typed return is not checked", map[string]any{"summary": "s"}, ""},
		{"one", map[string]any{"total": "3"},
			`trigger 'manual' declares this return typed: 'total' must be a number, but a string ("3") arrived. Write a value of the declared type.`},
		{"two", map[string]any{"total": nil, "due": "tomorrow"},
			`trigger 'manual' declares these returns typed: 'total' must be a number, but null arrived; 'due' must be a date (an RFC 3339 full-date, YYYY-MM-DD, naming a real calendar day), but a string ("tomorrow") arrived. Write a value of the declared type.`},
	}
	for _, tt := range tests {
		if got := MistypedReturnsRefusal("manual", entries, tt.writes); got != tt.want {
			t.Errorf("%s\n got %q\nwant %q", tt.name, got, tt.want)
		}
	}
}

// 01 §4.4: signatureForTrigger — the declared lists, the trimmed description, nothing for an
// undeclared trigger.
func TestSignatureForTrigger(t *testing.T) {
	sp, err := Load("wf", "workflow.yaml", []byte(`states:
  a:
    triggers:
      manual:
        description: "  Ask for it.  "
        requires: [{ name: item, type: string }]
        returns: [verdict]
      nightly:
    instructions: A.
`))
	if err != nil {
		t.Fatal(err)
	}
	sig, ok := SignatureForTrigger(sp, "manual")
	if !ok || sig.Description != "Ask for it." || len(sig.Requires) != 1 || sig.Requires[0].Type != "string" || sig.Returns[0].Name != "verdict" {
		t.Errorf("manual %+v %v", sig, ok)
	}
	if sig, ok := SignatureForTrigger(sp, "nightly"); !ok || sig.Requires == nil || len(sig.Requires)+len(sig.Returns) != 0 || sig.Description != "" {
		t.Errorf("nightly %+v", sig)
	}
	if _, ok := SignatureForTrigger(sp, "weekly"); ok {
		t.Error("an undeclared trigger has a signature")
	}
}
