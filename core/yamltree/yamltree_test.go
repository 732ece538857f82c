package yamltree

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
)

// decode runs Decode with the default paths and collects the findings.
func decode(t *testing.T, src string) (*Node, *Refusal, []Finding) {
	t.Helper()
	var fs []Finding
	root, r := Decode([]byte(src), Options{Report: func(f Finding) { fs = append(fs, f) }})
	if (root == nil) == (r == nil) {
		t.Fatalf("Decode(%q) = %v, %v: want exactly one of a tree and a refusal", src, root, r)
	}
	return root, r, fs
}

func mustDecode(t *testing.T, src string) (*Node, []Finding) {
	t.Helper()
	root, r, fs := decode(t, src)
	if r != nil {
		t.Fatalf("Decode(%q) refused: %v (%+v)", src, r, fs)
	}
	return root, fs
}

func keys(n *Node) string {
	ks := make([]string, len(n.Entries))
	for i, e := range n.Entries {
		ks[i] = e.Key
	}
	return strings.Join(ks, ",")
}

// billionLaughs nests levels lists of width aliases to the previous list.
func billionLaughs(levels, width int) string {
	var b strings.Builder
	b.WriteString(`l0: &l0 ["lol"]` + "\n")
	for i := 1; i <= levels; i++ {
		refs := strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d,", i-1), width), ",")
		fmt.Fprintf(&b, "l%d: &l%d [%s]\n", i, i, refs)
	}
	return b.String()
}

func TestAliasBombIsRefusedOnce(t *testing.T) {
	root, r, fs := decode(t, billionLaughs(9, 9))
	if root != nil || r.Reason != Refused {
		t.Fatalf("got %v, %+v; want the Refused refusal", root, r)
	}
	if len(fs) != 1 || fs[0].Problem != AliasBomb {
		t.Fatalf("findings = %+v; want one AliasBomb", fs)
	}
	if !strings.HasPrefix(fs[0].Path, "l") || fs[0].Line == 0 || fs[0].Col == 0 {
		t.Errorf("AliasBomb finding = %+v; want a path and a position", fs[0])
	}
}

func TestAliasExpansionBound(t *testing.T) {
	// Small documents may expand up to AliasExpansionFloor nodes.
	for _, tc := range []struct {
		name string
		src  string
		ok   bool
	}{
		// 1 + 1 + 3 + 1 + 3·(1+3) + … stays far below the floor.
		{"modest reuse", billionLaughs(3, 3), true},
		// 8^4 leaf lists of one item each: past the floor for a document this small.
		{"past the floor", billionLaughs(4, 8), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, r, fs := decode(t, tc.src)
			if ok := r == nil; ok != tc.ok {
				t.Fatalf("accepted = %v (%+v, %+v); want %v", ok, r, fs, tc.ok)
			}
		})
	}
	// The budget scales with the source (factor 64) until the cap.
	big := strings.Repeat("- [1, 2, 3]\n", 2000) // 8,001 source nodes
	src := "items: &i\n" + indent(big) + "copy: *i\n"
	if _, r, fs := decode(t, src); r != nil {
		t.Errorf("a large document with one alias: refused %+v %+v", r, fs)
	}
	// …but never past AliasExpansionCap: 17,000 items copied 63 more times stay under
	// 64× the source (≈17,070 nodes) yet pass 2^20; 60 more copies stay under it.
	list := "items: &i [" + strings.TrimSuffix(strings.Repeat("1,", 17000), ",") + "]\n"
	for copies, ok := range map[int]bool{63: false, 60: true} {
		src := list + "copies: [" + strings.TrimSuffix(strings.Repeat("*i,", copies), ",") + "]\n"
		if _, r, fs := decode(t, src); (r == nil) != ok || (!ok && (r.Reason != Refused || fs[0].Problem != AliasBomb)) {
			t.Errorf("%d copies: refusal %+v, findings %+v; want accepted = %v", copies, r, fs, ok)
		}
	}
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n  ") + "\n"
}

func TestAliasCycle(t *testing.T) {
	root, r, fs := decode(t, "a:\n  b: &x\n    c: *x\n")
	if root != nil || r.Reason != Refused {
		t.Fatalf("got %v, %+v; want Refused", root, r)
	}
	want := Finding{Problem: AliasCycle, Path: "a.b.c", Line: 3, Col: 8, Name: "x"}
	if len(fs) != 1 || fs[0] != want {
		t.Errorf("findings = %+v; want [%+v]", fs, want)
	}
}

func TestAliasesExpand(t *testing.T) {
	root, fs := mustDecode(t, "a: &x {k: [1, two]}\nb: *x\n")
	if len(fs) != 0 {
		t.Fatalf("findings = %+v", fs)
	}
	b := root.Get("b")
	if b == nil || b.Kind != Map || keys(b) != "k" || len(b.Get("k").Items) != 2 || b.Get("k").Items[1].Str != "two" {
		t.Fatalf("b = %+v; want a copy of a", b)
	}
	if b.Line != 1 || b.Col != 4 { // the anchored node's own position (its anchor)
		t.Errorf("b at %d:%d; want 1:4", b.Line, b.Col)
	}
}

func TestMergeKeys(t *testing.T) {
	src := "" +
		"base: &base {a: 1, b: 1, c: 1}\n" +
		"more: &more {b: 2, d: 2}\n" +
		"m:\n" +
		"  x: 0\n" +
		"  <<: [*base, *more]\n" +
		"  a: 9\n"
	root, fs := mustDecode(t, src)
	if len(fs) != 0 {
		t.Fatalf("findings = %+v", fs)
	}
	m := root.Get("m")
	// Merged keys stand where `<<` stands, explicit keys stay where they are.
	if got := keys(m); got != "x,b,c,d,a" {
		t.Errorf("keys = %s; want x,b,c,d,a", got)
	}
	for key, want := range map[string]float64{"a": 9, "b": 1, "c": 1, "d": 2, "x": 0} {
		if v := m.Get(key); v == nil || v.Num != want {
			t.Errorf("m.%s = %+v; want %v (explicit over merged, earlier source over later)", key, v, want)
		}
	}
	if e := m.Entry("b"); e.Line != 1 || e.Col != 20 { // a merged pair keeps its source position
		t.Errorf("merged b at %d:%d; want 1:20", e.Line, e.Col)
	}

	// Only a plain or !!merge-tagged `<<` merges; a quoted one is an ordinary key.
	for src, want := range map[string]string{
		"m:\n  <<: {a: 1}\n":         "a",
		"m:\n  !!merge <<: {a: 1}\n": "a",
		"m:\n  '<<': {a: 1}\n":       "<<",
		"m:\n  \"<<\": {a: 1}\n":     "<<",
		"m:\n  !!str <<: {a: 1}\n":   "<<",
	} {
		root, fs := mustDecode(t, src)
		if got := keys(root.Get("m")); got != want || len(fs) != 0 {
			t.Errorf("%q: keys = %s, findings %+v; want %s", src, got, fs, want)
		}
	}
}

func TestBadMerge(t *testing.T) {
	root, fs := mustDecode(t, "m:\n  <<: [1, {a: 1}]\n  b: 2\n")
	want := Finding{Problem: BadMerge, Path: "m", Line: 2, Col: 3}
	if len(fs) != 1 || fs[0] != want {
		t.Errorf("findings = %+v; want [%+v]", fs, want)
	}
	if got := keys(root.Get("m")); got != "a,b" {
		t.Errorf("keys = %s; want the mapping sources merged: a,b", got)
	}
}

func TestDuplicateKey(t *testing.T) {
	root, fs := mustDecode(t, "a: 1\nb:\n  c: 1\n  c: 2\na: 3\n")
	want := []Finding{
		{Problem: DuplicateKey, Path: "", Line: 5, Col: 1, Name: "a", FirstLine: 1},
		{Problem: DuplicateKey, Path: "b", Line: 4, Col: 3, Name: "c", FirstLine: 3},
	}
	if fmt.Sprint(fs) != fmt.Sprint(want) {
		t.Errorf("findings = %+v; want %+v", fs, want)
	}
	if root.Get("a").Num != 1 || root.Get("b").Get("c").Num != 1 || keys(root) != "a,b" {
		t.Errorf("the first occurrence is kept: %+v", root)
	}
}

func TestNonStringKeys(t *testing.T) {
	root, fs := mustDecode(t, "1: a\nnull: b\ntrue: c\n? [x]\n: d\n'2': e\n&k key: f\nm: {*k : g}\n")
	var got []string
	for _, f := range fs {
		if f.Problem != NonStringKey {
			t.Errorf("unexpected %+v", f)
		}
		got = append(got, fmt.Sprintf("%s@%d:%d", f.Name, f.Line, f.Col))
	}
	if strings.Join(got, " ") != "1@1:1 null@2:1 true@3:1 @4:3" {
		t.Errorf("non-string keys = %v", got)
	}
	if keys(root) != "2,key,m" || keys(root.Get("m")) != "key" {
		t.Errorf("keys = %s / %s; want the string keys only (an alias to a string key is one)", keys(root), keys(root.Get("m")))
	}
}

func TestCoreSchemaScalars(t *testing.T) {
	str := func(s string) *Node { return &Node{Kind: String, Str: s} }
	num := func(f float64) *Node { return &Node{Kind: Number, Num: f} }
	for _, tc := range []struct {
		src  string
		want *Node
	}{
		{"yes", str("yes")}, {"no", str("no")}, {"on", str("on")}, {"off", str("off")}, {"y", str("y")},
		{"Yes", str("Yes")}, {"2026-03-20", str("2026-03-20")}, {"1_000", str("1_000")}, {"0b101", str("0b101")},
		{"0o17", num(15)}, {"0x1F", num(31)}, {"0x1f", num(31)}, {"017", num(17)}, {"0o18", str("0o18")}, {"0X1F", str("0X1F")},
		{"-12", num(-12)}, {"+3", num(3)}, {"1.5", num(1.5)}, {".5", num(0.5)}, {"1e3", num(1000)}, {"1.", num(1)},
		{".inf", num(math.Inf(1))}, {"+.Inf", num(math.Inf(1))}, {"-.INF", num(math.Inf(-1))}, {"1e999", num(math.Inf(1))},
		{"true", &Node{Kind: Bool, Truth: true}}, {"False", &Node{Kind: Bool}}, {"TRUE", &Node{Kind: Bool, Truth: true}}, {"tRUE", str("tRUE")},
		{"null", &Node{Kind: Null}}, {"~", &Node{Kind: Null}}, {"NULL", &Node{Kind: Null}}, {"", &Node{Kind: Null}},
		{`"1"`, str("1")}, {"'true'", str("true")}, {"!!str 1", str("1")}, {"!!int 0x10", num(16)}, {"!custom 1", str("1")},
		{"!!timestamp 2026-03-20", str("2026-03-20")}, {"|\n  1\n", str("1\n")},
	} {
		root, fs := mustDecode(t, "v: "+tc.src+"\n")
		v := root.Get("v")
		if len(fs) != 0 || v.Kind != tc.want.Kind || v.Num != tc.want.Num || v.Truth != tc.want.Truth ||
			(tc.want.Kind == String && v.Str != tc.want.Str) {
			t.Errorf("%q = %+v (%+v); want %+v", tc.src, v, fs, tc.want)
		}
	}
	for _, src := range []string{".nan", ".NaN", ".NAN"} {
		if v := Plain(src); v.Kind != Number || !math.IsNaN(v.Num) {
			t.Errorf("Plain(%q) = %+v; want NaN", src, v)
		}
	}
	if v := Plain(".Nan"); v.Kind != String {
		t.Errorf("Plain(.Nan) = %+v; want a string", v)
	}
	// Str is the source text of every scalar, whatever it resolves to.
	root, _ := mustDecode(t, "a: 0x1F\nb: ~\nc: True\n")
	for key, want := range map[string]string{"a": "0x1F", "b": "~", "c": "True"} {
		if got := root.Get(key).Str; got != want {
			t.Errorf("%s.Str = %q; want %q", key, got, want)
		}
	}
	// Beyond 2^53, hex rounds as JavaScript's Number does.
	if v := Plain("0x20000000000001"); v.Num != 9007199254740992 {
		t.Errorf("0x20000000000001 = %v", v.Num)
	}
}

func TestOneDocumentOnly(t *testing.T) {
	for _, tc := range []struct {
		src       string
		reason    Reason
		err       bool
		line, col int
	}{
		{"", NoDocument, true, 0, 0},
		{"# just a comment\n", NoDocument, true, 0, 0},
		{"a: 1\n---\nb: 2\n", ManyDocuments, false, 2, 1}, // at its "---"
		{"a: 1\n---\nb: [\n", ManyDocuments, true, 3, 0},
		{"a: [\n", SyntaxError, true, 1, 0},
		{"a: 1\n b: 2\n", SyntaxError, true, 2, 0},
		{"- a\n", NotMapping, false, 1, 1},
		{"\n\n  just text\n", NotMapping, false, 3, 3},
		{"---\n", NotMapping, false, 2, 1}, // an empty root: null
	} {
		root, r, _ := decode(t, tc.src)
		if root != nil || r.Reason != tc.reason || (r.Err != nil) != tc.err || r.Line != tc.line || r.Col != tc.col {
			t.Errorf("%q: got %+v; want reason %d, err %v, at %d:%d", tc.src, *r, tc.reason, tc.err, tc.line, tc.col)
		}
		if r != nil && r.Error() == "" {
			t.Errorf("%q: empty Error()", tc.src)
		}
	}
	if _, r, _ := decode(t, "---\na: 1\n...\n"); r != nil {
		t.Errorf("explicit start and end markers: refused %+v", r)
	}
}

func TestCRLF(t *testing.T) {
	root, fs := mustDecode(t, "a: b\r\nblock: |\r\n  one\r\n  two\r\nc:\r\n  - d\r\n")
	if len(fs) != 0 {
		t.Fatalf("findings = %+v", fs)
	}
	if got := root.Get("a").Str; got != "b" {
		t.Errorf("a = %q; want b", got)
	}
	if got := root.Get("block").Str; got != "one\ntwo\n" {
		t.Errorf("block = %q; want LF line ends", got)
	}
	if e := root.Entry("c"); e.Line != 5 || e.Col != 1 || e.Val.Items[0].Line != 6 || e.Val.Items[0].Col != 5 {
		t.Errorf("positions under CRLF: %+v", e)
	}
}

func TestPathsAndPositions(t *testing.T) {
	src := "a:\n  - x: 1\n    x: 2\n  - {1: y}\nb:\n"
	var fs []Finding
	root, r := Decode([]byte(src), Options{
		Index:  func(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" },
		Report: func(f Finding) { fs = append(fs, f) },
	})
	if r != nil {
		t.Fatal(r)
	}
	if len(fs) != 2 || fs[0].Path != "a[0]" || fs[1].Path != "a[1]" {
		t.Errorf("paths = %+v; want a[0] and a[1] (custom Index)", fs)
	}
	fs = nil
	if _, r := Decode([]byte(src), Options{Report: func(f Finding) { fs = append(fs, f) }}); r != nil || len(fs) != 2 || fs[0].Path != "a.0" || fs[1].Path != "a.1" {
		t.Errorf("default paths = %+v; want a.0 and a.1", fs)
	}
	fs = nil
	Decode([]byte("a:\n  b:\n    c: 1\n    c: 2\n"), Options{
		Join:   func(path, key string) string { return path + "/" + key },
		Report: func(f Finding) { fs = append(fs, f) },
	})
	if len(fs) != 1 || fs[0].Path != "/a/b" {
		t.Errorf("custom Join path = %+v; want /a/b", fs)
	}
	// An empty value is found at its key.
	if b := root.Get("b"); b.Kind != Null || b.Line != 5 || b.Col != 1 {
		t.Errorf("b = %+v; want null at 5:1", b)
	}
	if !root.Get("b").IsScalar() || root.Get("a").IsScalar() || root.Get("nope") != nil || root.Entry("nope") != nil {
		t.Errorf("Get/Entry/IsScalar")
	}
	// Report may be nil.
	if _, r := Decode([]byte("a: 1\na: 2\n"), Options{}); r != nil {
		t.Errorf("nil Report: %v", r)
	}
}

func TestJoin(t *testing.T) {
	if Join("", "a") != "a" || Join("a", "b") != "a.b" || Join("a", "") != "a." {
		t.Error("Join")
	}
}
