package cases

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// MT-01: what is regex-shaped.
func TestRegexFormShape(t *testing.T) {
	tests := []struct {
		id, in         string
		ok             bool
		pattern, flags string
	}{
		{"MT-01 simple", "/abc/", true, "abc", ""},
		{"MT-01 flags", "/abc/gi", true, "abc", "gi"},
		{"MT-01 empty pattern", "//", true, "", ""},
		{"MT-01 last slash wins", "/a/b/i", true, "a/b", "i"},
		{"MT-01 escaped slash is pattern text", `/a\/b/`, true, `a\/b`, ""},
		{"MT-01 newline inside pattern", "/a\nb/m", true, "a\nb", "m"},
		{"MT-01 lower-case letters only (any letter)", "/etc/passwd", true, "etc", "passwd"},
		{"MT-01 upper-case flag makes it plain", "/x/I", false, "", ""},
		{"MT-01 digit after slash makes it plain", "/a/1", false, "", ""},
		{"MT-01 trailing space makes it plain", "/a/ ", false, "", ""},
		{"MT-01 non-ASCII letter makes it plain", "/a/ü", false, "", ""},
		{"MT-01 leading space makes it plain", " /a/", false, "", ""},
		{"MT-01 lone slash", "/", false, "", ""},
		{"MT-01 no leading slash", "a/b/", false, "", ""},
		{"MT-01 empty", "", false, "", ""},
		{"MT-01 newline after last slash", "/a/\n", false, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.id, func(t *testing.T) {
			p, f, ok := splitRegexForm(tc.in)
			if ok != tc.ok || p != tc.pattern || f != tc.flags {
				t.Fatalf("splitRegexForm(%q) = %q, %q, %v; want %q, %q, %v", tc.in, p, f, ok, tc.pattern, tc.flags, tc.ok)
			}
		})
	}
}

// MT-01…MT-06 through TextMatches, the reply / raised.reason matcher.
func TestTextMatches(t *testing.T) {
	tests := []struct {
		id, pattern, text string
		want              bool
	}{
		// plain strings are case-sensitive substrings (MT-01, AX-06)
		{"MT-01 plain substring", "refund", "no refund today", true},
		{"MT-01 plain is case-sensitive", "Refund", "no refund today", false},
		{"MT-01 plain empty matches", "", "anything", true},
		{"MT-01 /x/I is a plain string", "/x/I", "path a/x/I here", true},
		{"MT-01 /x/I is not a regex", "/x/I", "x", false},
		{"MT-01 plain with regex metacharacters", "a.b*", "xa.b*y", true},
		{"MT-01 plain metacharacters literal", "a.b*", "axbb", false},
		// regex form
		{"MT-01 // matches everything", "//", "", true},
		{"MT-01 // matches text", "//", "abc", true},
		{"MT-01 escaped slash", `/a\/b/`, "xa/by", true},
		{"MT-01 unescaped inner slash", "/a/b/", "a/b", true},
		{"MT-01 pattern with newline", "/a\nb/", "a\nb", true},
		// MT-06: search, not full match
		{"MT-06 search anywhere", "/b/", "abc", true},
		{"MT-06 anchors still anchor", "/^b/", "abc", false},
		{"MT-06 full anchors", "/^abc$/", "abc", true},
		{"MT-06 no match", "/z/", "abc", false},
		// MT-02 flags that take effect
		{"MT-02 i", "/ABC/i", "xabcx", true},
		{"MT-02 no i is case-sensitive", "/ABC/", "xabcx", false},
		{"MT-02 m", "/^b$/m", "a\nb\nc", true},
		{"MT-02 no m", "/^b$/", "a\nb\nc", false},
		{"MT-02 s", "/a.b/s", "a\nb", true},
		{"MT-02 no s: dot excludes LF", "/a.b/", "a\nb", false},
		{"MT-02 no s: dot excludes U+2028 (JS line terminator)", "/a.b/", "a\u2028b", false},
		// MT-02 flags without effect (decision)
		{"MT-02 g no effect", "/b/g", "abc", true},
		{"MT-02 y no effect (not sticky)", "/b/y", "abc", true},
		{"MT-02 d no effect", "/b/d", "abc", true},
		{"MT-02 all accepted flags", "/B/dgimsy", "abc", true},
		// MT-02 u (mapped to ECMAScript /u semantics)
		{"MT-02 u: \\u{61} is a code point escape", `/^\u{61}$/u`, "a", true},
		{"MT-02 without u: \\u{61} is u repeated 61 times", `/^\u{61}$/`, "a", false},
		{"MT-02 without u: \\u{2} quantifier", `/^\u{2}$/`, "uu", true},
		{"MT-02 u: \\p{L} is a property escape", `/\p{L}/u`, "é", true},
		{"MT-02 without u: \\p{L} is literal p{L}", `/\p{L}/`, "é", false},
		{"MT-02 without u: \\p{L} matches literal", `/\p{L}/`, "p{L}", true},
		{"MT-02 v reads as u", `/\p{L}/v`, "é", true},
		{"MT-02 i legacy folding: k vs Kelvin sign", "/k/i", "\u212a", false},
		{"MT-02 iu Unicode folding: k vs Kelvin sign", "/k/iu", "\u212a", true},
		// MT-03 ECMAScript features RE2 lacks
		{"MT-03 lookahead", "/foo(?=bar)/", "foobar", true},
		{"MT-03 lookahead fails", "/foo(?=bar)/", "foobaz", false},
		{"MT-03 negative lookahead", "/^(?!.*secret).*$/", "all public", true},
		{"MT-03 negative lookahead fails", "/^(?!.*secret).*$/", "top secret", false},
		{"MT-03 lookbehind", `/(?<=\$)\d+/`, "cost $42", true},
		{"MT-03 negative lookbehind", `/(?<!\$)\b\d+/`, "cost $42", false},
		{"MT-03 backreference", `/(\w)\1/`, "hello", true},
		{"MT-03 backreference fails", `/(\w)\1/`, "helo", false},
		{"MT-03 named group + \\k", `/(?<d>\d)\k<d>/`, "a1221", true},
		{"MT-03 named group + \\k fails", `/(?<d>\d)\k<d>/`, "a1212", false},
		// MT-03 JS character-class semantics
		{"MT-03 \\d is ASCII only (Arabic-Indic three)", `/\d/`, "٣", false},
		{"MT-03 \\d is ASCII only even with u", `/\d/u`, "٣", false},
		{"MT-03 \\d matches ASCII digit", `/\d/`, "a3", true},
		{"MT-03 \\w is ASCII only", `/\w/`, "é", false},
		{"MT-03 \\s includes NBSP", `/\s/`, "\u00a0", true},
		{"MT-03 \\s includes BOM", `/\s/`, "\ufeff", true},
		{"MT-03 $ does not match before a final LF", "/abc$/", "abc\n", false},
		{"MT-03 [^] matches any character", "/a[^]b/", "a\nb", true},
		{"MT-03 [] matches nothing", "/[]/", "abc", false},
		{"MT-03 m: ^ after CR", "/^b/m", "a\rb", true},
	}
	for _, tc := range tests {
		t.Run(tc.id, func(t *testing.T) {
			got, err := TextMatches(tc.pattern, tc.text)
			if err != nil {
				t.Fatalf("TextMatches(%q, %q) error: %v", tc.pattern, tc.text, err)
			}
			if got != tc.want {
				t.Fatalf("TextMatches(%q, %q) = %v; want %v", tc.pattern, tc.text, got, tc.want)
			}
		})
	}
}

// MT-02, MT-03, MT-04: malformed regexes and their exact schema messages.
func TestRegexMalformed(t *testing.T) {
	tests := []struct {
		id, in, msg string
	}{
		{"MT-04 /etc/passwd (flags passwd)", "/etc/passwd",
			`malformed regex "/etc/passwd": Invalid flags supplied to RegExp constructor 'passwd'`},
		{"MT-02 unknown flag", "/a/x",
			`malformed regex "/a/x": Invalid flags supplied to RegExp constructor 'x'`},
		{"MT-02 repeated flag", "/a/ii",
			`malformed regex "/a/ii": Invalid flags supplied to RegExp constructor 'ii'`},
		{"MT-02 repeated flag non-adjacent", "/a/gig",
			`malformed regex "/a/gig": Invalid flags supplied to RegExp constructor 'gig'`},
		{"MT-02 u and v together", "/a/uv",
			`malformed regex "/a/uv": Invalid flags supplied to RegExp constructor 'uv'`},
		{"MT-03 unterminated group", "/(/",
			`malformed regex "/(/": Invalid regular expression: /(/: missing closing )`},
		{"MT-03 reversed range", "/[z-a]/i",
			`malformed regex "/[z-a]/i": Invalid regular expression: /[z-a]/i: [z-a] range in reverse order`},
		{"MT-03 nothing to repeat", "/*/",
			`malformed regex "/*/": Invalid regular expression: /*/: missing argument to repetition operator`},
		{"MT-03 possessive quantifier is not ECMAScript", "/a++/",
			`malformed regex "/a++/": Invalid regular expression: /a++/: invalid nested repetition operator`},
		{"MT-04 raw is JSON-quoted", "/\"(\\\n/",
			`malformed regex "/\"(\\\n/": Invalid regular expression: /"(\` + "\n" + `/: missing closing )`},
	}
	for _, tc := range tests {
		t.Run(tc.id, func(t *testing.T) {
			// The parser hook returns the engine message alone (document.go frames it).
			_, engineMsg, _ := strings.Cut(tc.msg, `": `)
			err := compileRegexForm(tc.in)
			if err == nil || err.Error() != engineMsg {
				t.Fatalf("compileRegexForm(%q)\n got %v\nwant %s", tc.in, err, engineMsg)
			}
			if verr := validateRegexForm(tc.in); verr == nil || verr.Error() != engineMsg {
				t.Fatalf("validateRegexForm not wired to compileRegexForm: %v", verr)
			}
			// Framed as the parser frames it: the full MT-04 message.
			if got := "malformed regex " + jsonQuote(tc.in) + ": " + err.Error(); got != tc.msg {
				t.Fatalf("framed message\n got %s\nwant %s", got, tc.msg)
			}
			// MT-04: never matched as a literal; TextMatches reports the full message.
			ok, terr := TextMatches(tc.in, tc.in)
			if ok || terr == nil || terr.Error() != tc.msg {
				t.Fatalf("TextMatches(%q, itself) = %v, %v; want false and %q", tc.in, ok, terr, tc.msg)
			}
			if !errors.Is(terr, err) {
				t.Fatalf("TextMatches error does not unwrap to the engine message")
			}
		})
	}

	valid := []string{"plain", "/x/I", "//", "/a/dgimsuy", "/a/v", "/(?<n>a)\\k<n>/", "/a/b/i", "/etc/passwd/"}
	for _, s := range valid {
		if err := compileRegexForm(s); err != nil {
			t.Errorf("MT-01/MT-04 compileRegexForm(%q) = %v; want nil", s, err)
		}
	}
}

func TestRegexQuoteLikeJSONStringify(t *testing.T) {
	tests := map[string]string{
		"plain":          `"plain"`,
		`a"b\c`:          `"a\"b\\c"`,
		"\b\f\n\r\t":     `"\b\f\n\r\t"`,
		"\x00\x1f\x7f":   `"\u0000\u001f` + "\x7f" + `"`,
		"<&>":            `"<&>"`,
		"\u2028\u2029é😀": "\"\u2028\u2029é😀\"",
		`\u2028`:         `"\\u2028"`,
	}
	for in, want := range tests {
		if got := jsonQuote(in); got != want {
			t.Errorf("MT-04 mtQuote(%q) = %s; want %s", in, got, want)
		}
	}
}

// MT-03 engine safety: a catastrophically backtracking pattern times out.
func TestRegexTimeout(t *testing.T) {
	old := regexMatchTimeout
	regexMatchTimeout = 50 * time.Millisecond
	resetRegexCache()
	t.Cleanup(func() { regexMatchTimeout = old; resetRegexCache() })

	hostile := `/^(\w+\s?)*$/`
	subject := strings.Repeat("a", 64) + "!"

	ok, err := TextMatches(hostile, subject) // a match that never aborted would hang the test
	if ok || !errors.Is(err, ErrRegexAborted) {
		t.Fatalf("TextMatches(hostile) = %v, %v; want false, ErrRegexAborted", ok, err)
	}
	if want := `regex "/^(\\w+\\s?)*$/": match aborted (timed out after 50ms)`; err.Error() != want {
		t.Fatalf("error = %q; want %q", err, want)
	}

	// PartialMatch reads an aborted match as "no match"; PartialMatchErr tells it apart.
	exp := map[string]any{"q": hostile}
	act := map[string]any{"q": subject}
	if PartialMatch(exp, act) {
		t.Fatal("MT-10 PartialMatch with an aborted regex leaf = true")
	}
	if ok, err := PartialMatchErr(exp, act); ok || !errors.Is(err, ErrRegexAborted) {
		t.Fatalf("PartialMatchErr = %v, %v; want false, ErrRegexAborted", ok, err)
	}
	// A definite mismatch in an earlier (sorted) key wins over the abort.
	exp2 := map[string]any{"a": "x", "q": hostile}
	act2 := map[string]any{"a": "y", "q": subject}
	if ok, err := PartialMatchErr(exp2, act2); ok || err != nil {
		t.Fatalf("PartialMatchErr(mismatch before abort) = %v, %v; want false, nil", ok, err)
	}
}

func TestRegexCache(t *testing.T) {
	resetRegexCache()
	t.Cleanup(resetRegexCache)
	a, err := compileRegexCached("/a+/i", "a+", "i")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := compileRegexCached("/a+/i", "a+", "i")
	if a != b {
		t.Fatal("cached pattern recompiled")
	}
	e1 := compileRegexForm("/(/")
	e2 := compileRegexForm("/(/")
	if e1 == nil || e1 != e2 {
		t.Fatal("malformed outcome not cached")
	}
	for i := range 3 * regexCacheMax {
		if _, err := TextMatches(fmt.Sprintf("/p%d/", i), "p1"); err != nil {
			t.Fatal(err)
		}
	}
	regexCache.RLock()
	n := len(regexCache.m)
	regexCache.RUnlock()
	if n > regexCacheMax {
		t.Fatalf("cache holds %d entries; bound is %d", n, regexCacheMax)
	}
	long := "/" + strings.Repeat("a", regexCacheMaxLen) + "/"
	if ok, err := TextMatches(long, strings.Repeat("a", regexCacheMaxLen)); !ok || err != nil {
		t.Fatalf("long pattern = %v, %v", ok, err)
	}
	regexCache.RLock()
	_, cached := regexCache.m[long]
	regexCache.RUnlock()
	if cached {
		t.Fatal("over-long pattern cached")
	}
}

// MT-02 decision: g and y keep no state between matches.
func TestRegexGlobalStickyStateless(t *testing.T) {
	for range 3 {
		if ok, err := TextMatches("/b/gy", "abc"); !ok || err != nil {
			t.Fatalf("MT-02 /b/gy repeated = %v, %v", ok, err)
		}
	}
}

type myMap map[string]string

func TestPartialMatch(t *testing.T) {
	obj := func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	list := func(v ...any) []any { return append([]any{}, v...) }
	tests := []struct {
		id               string
		expected, actual any
		want             bool
	}{
		// MT-10.1 mappings
		{"MT-10.1 equal mapping", obj("a", "x"), obj("a", "x"), true},
		{"MT-10.1 extra actual keys ignored", obj("a", "x"), obj("a", "x", "b", 2), true},
		{"MT-10.1 missing key fails", obj("a", "x", "c", "z"), obj("a", "x"), false},
		{"MT-10.1 nested partial", obj("o", obj("id", 1.0)), obj("o", obj("id", 1, "sku", "z")), true},
		{"MT-10.1 nested missing key fails", obj("o", obj("id", 1)), obj("o", obj("sku", "z")), false},
		{"MT-10.1 nested mismatch fails", obj("o", obj("id", 1)), obj("o", obj("id", 2)), false},
		{"MT-10.1 actual list is not a mapping", obj(), list(), false},
		{"MT-10.1 actual null is not a mapping", obj("a", "x"), nil, false},
		{"MT-10.1 actual string is not a mapping", obj(), "x", false},
		{"MT-10.1 empty mapping matches any mapping", obj(), obj("a", 1), true},
		{"MT-10.1 key present with null value", obj("a", nil), obj("a", nil), true},
		{"MT-10.1 null expected, key absent fails", obj("a", nil), obj(), false},
		{"MT-10.1 typed map actual", obj("k", "/^v/"), myMap{"k": "val"}, true},
		{"MT-10.1 map[any]any keys read as property names", obj("1", "one"), map[any]any{1: "one"}, true},
		{"MT-10.1 json.RawMessage actual", obj("n", 1, "s", "/b/"), json.RawMessage(`{"n":1.0,"s":"abc","x":[]}`), true},
		// MT-10.2 lists
		{"MT-10.2 same list", list(1, "a"), list(1.0, "a"), true},
		{"MT-10.2 longer actual fails", list(1), list(1, 2), false},
		{"MT-10.2 shorter actual fails", list(1, 2), list(1), false},
		{"MT-10.2 order matters", list(1, 2), list(2, 1), false},
		{"MT-10.2 mapping in list matches partially", list(obj("id", 1)), list(obj("id", 1, "x", 2)), true},
		{"MT-10.2 regex in list is a regex", list("/^a/", "b"), list("abc", "b"), true},
		{"MT-10.2 regex in list fails", list("/^a/"), list("cba"), false},
		{"MT-10.2 actual mapping is not a list", list(), obj(), false},
		{"MT-10.2 actual null is not a list", list(), nil, false},
		{"MT-10.2 empty lists", list(), list(), true},
		{"MT-10.2 []string actual", list("a", "/b/"), []string{"a", "xbx"}, true},
		{"MT-05 whenInput list of regexes", obj("tags", list("/^urgent$/i")), obj("tags", list("URGENT")), true},
		// MT-10.3 regex against the stringified actual
		{"MT-10.3 regex matches string", "/^ord-\\d+$/", "ord-42", true},
		{"MT-10.3 regex against int", "/^42$/", 42, true},
		{"MT-10.3 regex against float64", "/^1\\.5$/", 1.5, true},
		{"MT-10.3 regex against integral float64", "/^2$/", 2.0, true},
		{"MT-10.3 regex against json.Number 1.0", "/^1$/", json.Number("1.0"), true},
		{"MT-10.3 regex against 1e21", "/^1e\\+21$/", 1e21, true},
		{"MT-10.3 regex against boolean", "/^true$/", true, true},
		{"MT-10.3 regex against null reads empty", "/^$/", nil, true},
		{"MT-10.3 // matches null", "//", nil, true},
		{"MT-10.3 regex against null not 'null'", "/null/", nil, false},
		{"MT-10.3 regex against list joins with commas", "/^1,a,,2$/", list(1, "a", nil, list(2)), true},
		{"MT-10.3 regex against mapping", "/^\\[object Object\\]$/", obj("a", 1), true},
		{"MT-10.3 regex against absent key", obj("a", "//"), obj(), false},
		{"MT-10.3 regex with flags", obj("q", "/REFUND/i"), obj("q", "a refund please"), true},
		{"MT-10.3 regex fails", "/^x/", "yx", false},
		// MT-10.4 plain strings
		{"MT-10.4 equal string", "abc", "abc", true},
		{"MT-10.4 substring is not enough", "abc", "xabcx", false},
		{"MT-10.4 case-sensitive", "abc", "ABC", false},
		{"MT-10.4 no coercion string vs number", "4", 4, false},
		{"MT-10.4 no coercion string vs bool", "true", true, false},
		{"MT-10.4 /x/I is plain", "/x/I", "/x/I", true},
		{"MT-10.4 /x/I is not a regex", "/x/I", "x", false},
		{"MT-10.4 malformed regex compares literally (reference)", "/etc/passwd", "/etc/passwd", true},
		{"MT-10.4 empty string", "", "", true},
		{"MT-10.4 empty string vs null", "", nil, false},
		// MT-10.5 numbers
		{"MT-10.5 1 equals 1.0", 1, 1.0, true},
		{"MT-10.5 float vs int", 1.0, 1, true},
		{"MT-10.5 int vs json.Number", 3, json.Number("3"), true},
		{"MT-10.5 int vs json.Number 3.0", 3, json.Number("3.0"), true},
		{"MT-10.5 int vs json.Number 3e0", 3, json.Number("3e0"), true},
		{"MT-10.5 float vs json.Number", 0.1, json.Number("0.1"), true},
		{"MT-10.5 uint8 vs int64", uint8(7), int64(7), true},
		{"MT-10.5 float32 vs float64", float32(0.5), 0.5, true},
		{"MT-10.5 negative zero", 0, math.Copysign(0, -1), true},
		{"MT-10.5 different values", 1, 2, false},
		{"MT-10.5 fraction differs", 1, 1.5, false},
		{"MT-10.5 number vs string", 4, "4", false},
		{"MT-10.5 number vs bool", 1, true, false},
		{"MT-10.5 number vs null", 0, nil, false},
		{"MT-10.5 big integers exact", json.Number("9007199254740993"), int64(9007199254740993), true},
		{"MT-10.5 big integers differ", json.Number("9007199254740993"), int64(9007199254740992), false},
		{"MT-10.5 uint64 max", uint64(math.MaxUint64), json.Number("18446744073709551615"), true},
		{"MT-10.5 NaN matches nothing", math.NaN(), math.NaN(), false},
		// MT-10.6 booleans and null
		{"MT-10.6 true", true, true, true},
		{"MT-10.6 false", false, false, true},
		{"MT-10.6 true vs false", true, false, false},
		{"MT-10.6 true vs 1", true, 1, false},
		{"MT-10.6 false vs null", false, nil, false},
		{"MT-10.6 null vs null", nil, nil, true},
		{"MT-10.6 null vs empty string", nil, "", false},
		{"MT-10.6 null vs 0", nil, 0, false},
		{"MT-10.6 null vs empty mapping", nil, obj(), false},
		{"MT-10.6 null vs nil map (JSON null)", nil, map[string]any(nil), true},
		// MT-11 the actual keeps reference form
		{"MT-11 reference form matched literally", obj("order_id", "${{order_id}}"), obj("order_id", "${{order_id}}"), true},
		{"MT-11 substituted value does not match reference", obj("order_id", "${{order_id}}"), obj("order_id", "A-1"), false},
	}
	for _, tc := range tests {
		t.Run(tc.id, func(t *testing.T) {
			if got := PartialMatch(tc.expected, tc.actual); got != tc.want {
				t.Fatalf("PartialMatch(%#v, %#v) = %v; want %v", tc.expected, tc.actual, got, tc.want)
			}
			ok, err := PartialMatchErr(tc.expected, tc.actual)
			if ok != tc.want || err != nil {
				t.Fatalf("PartialMatchErr = %v, %v; want %v, nil", ok, err, tc.want)
			}
		})
	}
}

// MT-10 via a YAML-shaped whenInput against JSON-decoded call arguments, and
// the absent-matcher rule of CD-50 / AX-07.
func TestPartialMatchInput(t *testing.T) {
	var args any
	dec := json.NewDecoder(strings.NewReader(
		`{"file_path":"orders/A-17.json","opts":{"limit":10,"tags":["x","y"]},"dry":false}`))
	dec.UseNumber()
	if err := dec.Decode(&args); err != nil {
		t.Fatal(err)
	}
	var plain any
	_ = json.Unmarshal([]byte(`{"file_path":"orders/A-17.json","opts":{"limit":10,"tags":["x","y"]},"dry":false}`), &plain)

	tests := []struct {
		id   string
		want any
		ok   bool
	}{
		{"CD-50 absent whenInput matches every call", nil, true},
		{"CD-50 absent (nil map) matches every call", map[string]any(nil), true},
		{"MT-10 empty mapping matches", map[string]any{}, true},
		{"MT-10 regex leaf", map[string]any{"file_path": "/^orders\\/A-\\d+\\.json$/"}, true},
		{"MT-10 nested number", map[string]any{"opts": map[string]any{"limit": 10}}, true},
		{"MT-10 nested number float", map[string]any{"opts": map[string]any{"limit": 10.0}}, true},
		{"MT-10 list same length", map[string]any{"opts": map[string]any{"tags": []any{"x", "/y/"}}}, true},
		{"MT-10 list must be same length", map[string]any{"opts": map[string]any{"tags": []any{"x"}}}, false},
		{"MT-10 boolean", map[string]any{"dry": false}, true},
		{"MT-10 boolean mismatch", map[string]any{"dry": true}, false},
		{"MT-10 plain string is exact", map[string]any{"file_path": "orders/A-17"}, false},
		{"MT-10 missing key", map[string]any{"mode": "/./"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.id, func(t *testing.T) {
			if got := InputMatches(tc.want, args); got != tc.ok {
				t.Fatalf("InputMatches(%#v, UseNumber args) = %v; want %v", tc.want, got, tc.ok)
			}
			if got := InputMatches(tc.want, plain); got != tc.ok {
				t.Fatalf("InputMatches(%#v, float64 args) = %v; want %v", tc.want, got, tc.ok)
			}
		})
	}
}

func TestDeepEqual(t *testing.T) {
	obj := func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	list := func(v ...any) []any { return append([]any{}, v...) }
	var stored any
	_ = json.Unmarshal([]byte(`{"b":[1,{"x":"y"}],"a":1.0}`), &stored)
	tests := []struct {
		id   string
		a, b any
		want bool
	}{
		{"MT-20 same mapping", obj("a", 1, "b", "x"), obj("a", 1, "b", "x"), true},
		{"MT-20 key order irrelevant", obj("a", 1, "b", list(1, obj("x", "y"))), stored, true},
		{"MT-20 extra key in actual fails", obj("a", 1), obj("a", 1, "b", 2), false},
		{"MT-20 missing key in actual fails", obj("a", 1, "b", 2), obj("a", 1), false},
		{"MT-20 same key count, different keys", obj("a", 1), obj("b", 1), false},
		{"MT-20 null value vs absent key", obj("a", nil), obj("b", nil), false},
		{"MT-20 nested mapping is not partial", obj("o", obj("id", 1)), obj("o", obj("id", 1, "x", 2)), false},
		{"MT-20 lists in order", list(1, 2), list(1, 2), true},
		{"MT-20 list order matters", list(1, 2), list(2, 1), false},
		{"MT-20 list length matters", list(1), list(1, 1), false},
		{"MT-20 empty list vs empty mapping", list(), obj(), false},
		{"MT-20 numbers numerically", 1, 1.0, true},
		{"MT-20 numbers json.Number", 2.5, json.Number("2.5"), true},
		{"MT-20 numbers differ", 1, 2, false},
		{"MT-20 NaN is not equal", math.NaN(), math.NaN(), false},
		{"MT-20 strings exact", "a", "a", true},
		{"MT-20 strings case", "a", "A", false},
		{"MT-20 regex never interpreted", "/^a/", "abc", false},
		{"MT-20 regex compared literally", "/^a/", "/^a/", true},
		{"MT-20 no coercion", "1", 1, false},
		{"MT-20 booleans", true, true, true},
		{"MT-20 booleans differ", true, false, false},
		{"MT-20 boolean vs number", false, 0, false},
		{"MT-20 null", nil, nil, true},
		{"MT-20 null vs empty string", nil, "", false},
		{"MT-20 null vs empty mapping", nil, obj(), false},
		{"MT-20 typed values", []string{"a"}, list("a"), true},
		{"MT-20 json.RawMessage", obj("a", list(1)), json.RawMessage(`{"a":[1.0]}`), true},
	}
	for _, tc := range tests {
		t.Run(tc.id, func(t *testing.T) {
			if got := DeepEqual(tc.a, tc.b); got != tc.want {
				t.Fatalf("DeepEqual(%#v, %#v) = %v; want %v", tc.a, tc.b, got, tc.want)
			}
			if got := DeepEqual(tc.b, tc.a); got != tc.want {
				t.Fatalf("DeepEqual is not symmetric for %#v, %#v", tc.a, tc.b)
			}
		})
	}
}

// MT-10.3: String(number) as JavaScript renders it.
func TestPartialMatchNumberString(t *testing.T) {
	tests := []struct {
		f    float64
		want string
	}{
		{0, "0"},
		{math.Copysign(0, -1), "0"},
		{1, "1"},
		{-1, "-1"},
		{100, "100"},
		{2.5, "2.5"},
		{0.1, "0.1"},
		{123.456, "123.456"},
		{1e20, "100000000000000000000"},
		{1e21, "1e+21"},
		{1.5e21, "1.5e+21"},
		{123456789012345680000, "123456789012345680000"},
		{0.000001, "0.000001"},
		{1.5e-6, "0.0000015"},
		{1e-7, "1e-7"},
		{-1.23e-18, "-1.23e-18"},
		{1.7976931348623157e308, "1.7976931348623157e+308"},
		{5e-324, "5e-324"},
		{9007199254740993, "9007199254740992"},
		{math.NaN(), "NaN"},
		{math.Inf(1), "Infinity"},
		{math.Inf(-1), "-Infinity"},
	}
	for _, tc := range tests {
		if got := mtNumberString(tc.f); got != tc.want {
			t.Errorf("MT-10.3 String(%v) = %q; want %q", tc.f, got, tc.want)
		}
	}
}

func BenchmarkTextMatchesCached(b *testing.B) {
	text := strings.Repeat("the order was shipped. ", 20) + "Refund ID: RF-12345."
	pattern := `/refund id: rf-\d{5}/i`
	if ok, err := TextMatches(pattern, text); !ok || err != nil {
		b.Fatalf("TextMatches = %v, %v", ok, err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if ok, _ := TextMatches(pattern, text); !ok {
			b.Fatal("no match")
		}
	}
}

func BenchmarkPartialMatch(b *testing.B) {
	exp := map[string]any{"file_path": "/^orders\\//", "opts": map[string]any{"limit": 10}}
	act := map[string]any{"file_path": "orders/A-1.json", "opts": map[string]any{"limit": 10.0, "x": true}}
	b.ReportAllocs()
	for b.Loop() {
		if !PartialMatch(exp, act) {
			b.Fatal("no match")
		}
	}
}
