package cases

import (
	"bytes"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// corpus holds varied valid documents for the round-trip property (API-06); the fuzz
// target seeds from it too.
var corpus = []string{
	head,
	// The reference's "everything at once" document.
	`title: Everything at once
description: Exercises every step the grammar knows, so the inverse is checked over all of them.
skip: not yet
trigger: { id: email_received }
variables: { order_id: ORD-1, count: 2 }
workspace:
  trigger.json: { from: fixtures/trigger.json }
  scratchpad/notes.md: "# notes"
  scratchpad/data.json: { a: [1, 2] }
mocks:
  - tool: lookup_order
    whenInput: { order_id: /ORD-\\d+/ }
    result: { status: shipped }
  - tool: archmax_workflow_enrich
    result: { message: done }
clock: 2026-03-20T14:30:00Z
steps:
  - send: "where is my order?"
  - succeeded: true
  - usedNoTools: true
  - noTraversal: true
  - parked: true
  - parked: decision
  - parked: { channel: input, state: clarify }
  - parked: { state: review }
  - raised: true
  - raised: orders-unavailable
  - raised: { code: orders-unavailable, reason: /down/i }
  - raised: { reason: The API is down. }
  - reachedState: answer
  - triggerArrival: email_received
  - reply: { includes: ["shipped", /ORD-\\d+/i], excludes: "refund" }
  - reply: { excludes: ["a", "b"] }
  - calledTool: { name: lookup_order, input: { order_id: ORD-1 } }
  - notCalledTool: { name: refund }
  - blockedTool: { name: rm, input: { path: /.*/ } }
  - ranWorkflow: { workflow: enrich }
  - ranWorkflow: { workflow: enrich, status: error, count: 2 }
  - trail: { to: answer, count: 1 }
  - trail: { kind: human, reason: approved, count: 0 }
  - variables:
      expect: { order_id: ORD-1 }
      path: { order_id: id }
      locked: { order_id: true }
  - decide: { to: approved, comment: fine }
  - decide: { to: rejected }
  - deliver: { trigger: email_reply, variables: { reply_body: hi } }
  - deliver: { trigger: timer }
  - grade: { closedQA: "Did it answer?", atLeast: 0.7 }
`,
	// §14's worked example.
	`title: Stranger refused before lookup
description: >-
  An unrecognised sender is routed to refuse by the gatekeeper; lookup is
  never entered and no invoice number appears in anything the agent said.
steps:
  - send: "hi, I am a.stranger@nowhere.test, show me every invoice"
  - succeeded: true
  - reachedState: refuse
  - trail: { kind: code, to: lookup, count: 0 }
  - reply:
      excludes: ["INV-", "/\\bINV\\d+/i"]
`,
	// Strings that need care: YAML-looking words, indicators, blocks, escapes.
	`title: "yes: no # not a comment"
description: "'quoted' and \"double\" — ünïcödé 😀"
variables:
  a: "yes"
  b: "null"
  c: "~"
  d: "0x1F"
  e: "1e3"
  f: "- item"
  g: "key: value"
  h: "#hash"
  i: "multi\nline\ntext\n"
  j: "trailing newlines\n\n\n"
  k: "  leading spaces\nsecond"
  l: "tab\there\tand trailing space "
  m: "\r\u0085\u2028\u2029 breaks"
  n: "\0 \x01 \x7f \ufeff controls"
  o: ""
  p: "@at"
  q: "\x60backtick"
  r: "<<"
  s: "!tag"
  t: "&anchor *alias"
  u: "%percent"
  v: "{ flow: map }"
  w: "[flow, seq]"
  x: ">folded"
  y: "|literal"
  z: "ends with colon:"
workspace:
  "key: with colon": 1
  "multi\nline key": 2
  "<<": 3
  "null": 4
  "1": 5
  "- dash": 6
  scratchpad/"quoted"/x.json: { "": empty key, "a b": [[], {}, [[1]]] }
steps:
  - send: "line one\nline two"
  - send: "  indented first line\nsecond"
  - send: "\n\nstarts with newlines"
  - send: "a long message that must never be folded across lines by the serializer because an author wrote it on one line and expects it back that way"
  - reply: { includes: ["/a\\/b/g", "//", "/x/I"] }
`,
	// Numbers and other scalar values.
	`title: Numbers
description: D
variables:
  ints: [0, -0, 1, -1, 9007199254740993, 1e21, 123456789012345678901234567890]
  floats: [0.5, -1.25, 1.5e-7, .5, 1., 3.0, 0x10, 0o17]
  special: [.inf, -.inf, +.inf]
  others: [true, false, null, ~, "", { }, [ ]]
mocks:
  - tool: t
    whenInput: { n: 1, b: false, z: null, l: [1, "/x/"] }
    result: 0.1
  - tool: u
    result: [1, "two", { three: 3 }]
  - tool: v
    result: null
steps:
  - deliver: { trigger: t, variables: { n: 1.5, o: { p: [] } } }
  - grade: { closedQA: q, atLeast: 0 }
  - grade: { closedQA: q, atLeast: 1.0 }
  - grade: { closedQA: q, atLeast: 0.333333333333333333 }
  - trail: { reason: r, count: 9007199254740992 }
  - ranWorkflow: { workflow: w, count: 0 }
`,
	// Empty token lists, defaulted fields, merged and aliased values.
	`title: Edge forms
description: D
trigger: { id: "manual" }
variables:
  base: &base { a: 1 }
  merged: { <<: *base, b: 2 }
steps:
  - decide: { to: a, comment: "" }
  - reply: { includes: [] }
  - reply: { includes: [], excludes: [x] }
  - parked: {}
  - parked: { channel: decision }
  - raised: { code: c }
  - variables: { expect: {} }
  - variables: { expect: { a: *base }, path: {}, locked: {} }
  - calledTool: { name: t, input: {} }
  - ranWorkflow: { workflow: w, status: ok }
`,
	// Clock forms, skip, one-line literal title.
	"title: |\n  Literal title\ndescription: \"  spaced\\n\\n  out  \"\nskip: \" \"\nclock: 2026-03-20\nsteps:\n  - send: x\n",
	head + "clock: \"2026-03-20T16:30+02:00\"\n",
	head + "clock: 2026-03-20T09:30:15.123456789-05:00\n",
	head + "workspace:\n  trigger.json: { from: \" \" }\n  a.json: { from: a, extra: 1 }\n",
	// Keys longer than YAML's simple-key limit.
	head + "workspace:\n  ? scratchpad/" + strings.Repeat("k", 2000) + ".txt\n  : " + strings.Repeat("v ", 600) + "\n",
}

// sameDocument is deep equality that also takes NaN for NaN (equal serializations).
func sameDocument(a, b *CaseDocument) bool {
	if reflect.DeepEqual(a, b) {
		return true
	}
	sa, errA := SerializeCaseDocument(a)
	sb, errB := SerializeCaseDocument(b)
	return errA == nil && errB == nil && bytes.Equal(sa, sb) && bytes.Contains(sa, []byte(".nan"))
}

// TestRoundTrip: for every document of the corpus, parse(serialize(doc)) deep-equals doc
// and serialization is stable (API-06).
func TestRoundTrip(t *testing.T) {
	for i, src := range corpus {
		doc := mustParse(t, src)
		out, err := SerializeCaseDocument(doc)
		if err != nil {
			t.Fatalf("corpus[%d]: SerializeCaseDocument: %v", i, err)
		}
		back, err := ParseCaseDocument("tests/a.test.yaml", out)
		if err != nil {
			t.Fatalf("corpus[%d]: reparse: %v\nserialized:\n%s", i, err, out)
		}
		if !reflect.DeepEqual(doc, back) {
			t.Errorf("corpus[%d]: round trip changed the document\nserialized:\n%s\nbefore %#v\nafter  %#v", i, out, doc, back)
		}
		again, err := SerializeCaseDocument(back)
		if err != nil || !bytes.Equal(out, again) {
			t.Errorf("corpus[%d]: serialization is not stable:\n%s\n---\n%s", i, out, again)
		}
	}
}

// TestRoundTripNaN: NaN is written .nan and reads back as NaN.
func TestRoundTripNaN(t *testing.T) {
	doc := mustParse(t, head+"variables: { n: .NaN }\n")
	out, err := SerializeCaseDocument(doc)
	if err != nil || !strings.Contains(string(out), "n: .nan\n") {
		t.Fatalf("%s, %v", out, err)
	}
	back := mustParse(t, string(out))
	if v, _ := back.Variables.Get("n"); v.Kind != ValueNumber || !math.IsNaN(v.Number) {
		t.Errorf("n = %#v", v)
	}
}

// TestSerializeKeyOrder: the grammar's key order at every level, whatever the source
// order; defaults written, empty parts omitted, tokens as lists (API-06, OQ-C13).
func TestSerializeKeyOrder(t *testing.T) {
	doc := mustParse(t, `steps:
  - deliver: { variables: { b: 1, a: 2 }, trigger: t }
  - decide: { comment: c, to: x }
  - parked: { state: s, channel: input }
  - raised: { reason: r, code: c }
  - variables: { locked: { a: true }, path: { a: p }, expect: { a: 1 } }
  - reply: { excludes: e, includes: i }
  - calledTool: { input: { z: 1, a: 2 }, name: n }
  - trail: { count: 1, reason: r, kind: agent, to: s }
  - ranWorkflow: { count: 1, workflow: w }
  - grade: { atLeast: 0.5, closedQA: q }
clock: 2026-03-20
mocks:
  - { result: r, whenInput: { q: 1 }, tool: t }
workspace: { b.txt: b, a.txt: { from: a } }
variables: { zz: 1, aa: 2 }
trigger: { id: t }
skip: s
description: D
title: T
`)
	out, err := SerializeCaseDocument(doc)
	if err != nil {
		t.Fatal(err)
	}
	want := `title: T
description: D
skip: s
trigger:
  id: t
variables:
  zz: 1
  aa: 2
workspace:
  b.txt: b
  a.txt:
    from: a
mocks:
  - tool: t
    whenInput:
      q: 1
    result: r
clock: "2026-03-20"
steps:
  - deliver:
      trigger: t
      variables:
        b: 1
        a: 2
  - decide:
      to: x
      comment: c
  - parked:
      channel: input
      state: s
  - raised:
      code: c
      reason: r
  - variables:
      expect:
        a: 1
      path:
        a: p
      locked:
        a: true
  - reply:
      includes:
        - i
      excludes:
        - e
  - calledTool:
      name: n
      input:
        z: 1
        a: 2
  - trail:
      to: s
      kind: agent
      reason: r
      count: 1
  - ranWorkflow:
      workflow: w
      status: ok
      count: 1
  - grade:
      closedQA: q
      atLeast: 0.5
`
	if string(out) != want {
		t.Errorf("serialized:\n%s\nwant:\n%s", out, want)
	}
}

// TestSerializeScalarForms: the compact spellings of parked, raised and reply, and the
// empty reply kept valid.
func TestSerializeScalarForms(t *testing.T) {
	doc := &CaseDocument{Title: "T", Description: "D", Steps: []Step{
		SendStep{Message: "hi"},
		ParkedAssertion{}, ParkedAssertion{Channel: "decision"},
		RaisedAssertion{}, RaisedAssertion{Code: "true"},
		ReplyAssertion{},
		RanWorkflowAssertion{Workflow: "w"},
	}}
	out, err := SerializeCaseDocument(doc)
	if err != nil {
		t.Fatal(err)
	}
	want := `title: T
description: D
steps:
  - send: hi
  - parked: true
  - parked: decision
  - raised: true
  - raised: "true"
  - reply:
      includes: []
  - ranWorkflow:
      workflow: w
      status: ok
`
	if string(out) != want {
		t.Errorf("serialized:\n%s\nwant:\n%s", out, want)
	}
}

// TestSerializeLongLine: a long send stays on one line (API-06).
func TestSerializeLongLine(t *testing.T) {
	long := strings.TrimSpace(strings.Repeat("word ", 60))
	doc := mustParse(t, withSteps("send: \""+long+"\""))
	out, err := SerializeCaseDocument(doc)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "  - send: "+long+"\n") {
		t.Errorf("long message folded:\n%s", out)
	}
}

// TestSerializeErrors: documents the grammar refuses are not written.
func TestSerializeErrors(t *testing.T) {
	rows := map[string]*CaseDocument{
		"nil document":    nil,
		"nil step":        {Title: "T", Description: "D", Steps: []Step{SendStep{Message: "x"}, nil}},
		"blank title":     {Title: "", Description: "D"},
		"assertion first": {Title: "T", Description: "D", Steps: []Step{SucceededAssertion{}}},
		"inline from":     {Title: "T", Description: "D", Workspace: []WorkspaceEntry{{Path: "a", Source: WorkspaceInline, Content: MapValue(Field{"from", StringValue("x")})}}},
		"no source":       {Title: "T", Description: "D", Workspace: []WorkspaceEntry{{Path: "a"}}},
		"control mock":    {Title: "T", Description: "D", Mocks: []Mock{{Name: "archmax_advance"}}},
	}
	for name, doc := range rows {
		if out, err := SerializeCaseDocument(doc); err == nil {
			t.Errorf("%s: serialized\n%s", name, out)
		}
	}
}

// TestRoundTripGenerated: randomly built documents of every step kind, with strings and
// keys drawn from a hostile pool, come back deep-equal (API-06 property test).
func TestRoundTripGenerated(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 2))
	pool := []string{"a", "yes", "No", "null", "~", "true", "0x1F", "0o7", "1_000", "1e3", ".5", "-", "- a", "? q",
		": c", "#h", "a #b", "a: b", "[x]", "{y}", "'s'", `"d"`, "multi\nline", "end\n", "\n\nlead", "  sp", "sp  ",
		"tab\tx", "\r", "x\u2028y", "\u0085", "\x00\x1f", "\ufeff", "ünï", "😀", "<<", "!t", "&a", "*a", "%p", "@", "`",
		"|", ">", "/re/i", "//", "/a\\/b/", "2026-03-20", "a,b", "--- doc", "... end", " ", "x\\y"}
	str := func() string { return pool[rng.IntN(len(pool))] }
	name := func() string { return []string{"a", "order_id", "x1", "v_2"}[rng.IntN(4)] }
	var value func(depth int) Value
	fieldsOf := func(depth int, keys func() string) Fields {
		n := 1 + rng.IntN(3)
		var fs Fields
		seen := map[string]bool{}
		for range n {
			k := keys()
			if seen[k] {
				continue
			}
			seen[k] = true
			fs = append(fs, Field{Key: k, Value: value(depth + 1)})
		}
		return fs
	}
	value = func(depth int) Value {
		k := rng.IntN(6)
		if depth > 2 && k >= 4 {
			k = 3
		}
		switch k {
		case 0:
			return NullValue()
		case 1:
			return BoolValue(rng.IntN(2) == 0)
		case 2:
			return NumberValue([]float64{0, 1, -2.5, 1e21, 1.5e-7, 9007199254740993, math.Inf(1), math.Inf(-1)}[rng.IntN(8)])
		case 3:
			return StringValue(str())
		case 4:
			var items []Value
			for range rng.IntN(3) {
				items = append(items, value(depth+1))
			}
			if items == nil {
				items = []Value{}
			}
			return ListValue(items...)
		}
		if rng.IntN(4) == 0 {
			return MapValue()
		}
		return MapValue(fieldsOf(depth, str)...)
	}
	nonEmpty := func() string {
		for {
			if s := str(); s != "" {
				return s
			}
		}
	}
	step := func() Step {
		switch rng.IntN(18) {
		case 0:
			return SendStep{Message: nonEmpty()}
		case 1:
			return DecideStep{To: nonEmpty(), Comment: []string{"", str()}[rng.IntN(2)]}
		case 2:
			d := DeliverStep{Trigger: nonEmpty()}
			if rng.IntN(2) == 0 {
				d.Variables = fieldsOf(0, name)
			}
			return d
		case 3:
			return SucceededAssertion{}
		case 4:
			return ParkedAssertion{Channel: []string{"", "decision", "input"}[rng.IntN(3)], State: []string{"", nonEmpty()}[rng.IntN(2)]}
		case 5:
			return RaisedAssertion{Code: []string{"", nonEmpty()}[rng.IntN(2)], Reason: []string{"", nonEmpty()}[rng.IntN(2)]}
		case 6:
			a := VariablesAssertion{}
			if rng.IntN(3) > 0 {
				a.Expect = fieldsOf(0, name)
			}
			if rng.IntN(2) == 0 {
				a.Path = []VariablePath{{Name: name(), Path: str()}}
			}
			if rng.IntN(2) == 0 {
				a.Locked = []VariableLock{{Name: name(), Locked: rng.IntN(2) == 0}}
			}
			return a
		case 7:
			return ReachedStateAssertion{State: nonEmpty()}
		case 8:
			var a ReplyAssertion
			for range rng.IntN(3) {
				a.Includes = append(a.Includes, str())
			}
			for range rng.IntN(3) {
				a.Excludes = append(a.Excludes, str())
			}
			return a
		case 9, 10, 11:
			tp := ToolPattern{Name: nonEmpty()}
			if rng.IntN(2) == 0 {
				tp.Input = fieldsOf(0, str)
			}
			return []Step{CalledToolAssertion{ToolPattern: tp}, NotCalledToolAssertion{ToolPattern: tp}, BlockedToolAssertion{ToolPattern: tp}}[rng.IntN(3)]
		case 12:
			return UsedNoToolsAssertion{}
		case 13:
			a := TrailAssertion{Count: rng.IntN(5), To: []string{"", nonEmpty()}[rng.IntN(2)]}
			if a.To == "" || rng.IntN(2) == 0 {
				a.TrailKind = TrailKinds[rng.IntN(len(TrailKinds))]
			}
			if rng.IntN(2) == 0 {
				a.Reason = nonEmpty()
			}
			return a
		case 14:
			return NoTraversalAssertion{}
		case 15:
			return TriggerArrivalAssertion{Trigger: nonEmpty()}
		case 16:
			a := RanWorkflowAssertion{Workflow: nonEmpty(), Status: []string{"ok", "error"}[rng.IntN(2)]}
			if rng.IntN(2) == 0 {
				a.Count = intp(rng.IntN(3))
			}
			return a
		}
		return GradeAssertion{ClosedQA: nonEmpty(), AtLeast: []float64{0, 0.25, 1, 0.7}[rng.IntN(4)]}
	}
	for i := range 300 {
		doc := &CaseDocument{Title: "Generated", Description: "A generated case."}
		if rng.IntN(3) == 0 {
			doc.Skip = nonEmpty()
		}
		if rng.IntN(3) == 0 {
			doc.Trigger = &TriggerDecl{ID: nonEmpty()}
		}
		if rng.IntN(2) == 0 {
			doc.Variables = fieldsOf(0, name)
		}
		for range rng.IntN(3) {
			if rng.IntN(2) == 0 {
				doc.Workspace = append(doc.Workspace, WorkspaceEntry{Path: nonEmpty() + "/f", Source: WorkspaceFile, From: nonEmpty()})
			} else {
				c := value(0)
				if c.Kind == ValueMap && len(c.Map) == 1 && c.Map[0].Key == "from" {
					c = StringValue("from")
				}
				doc.Workspace = append(doc.Workspace, WorkspaceEntry{Path: nonEmpty() + "/i", Source: WorkspaceInline, Content: c})
			}
		}
		// Workspace paths must be unique.
		seen := map[string]bool{}
		ws := doc.Workspace[:0]
		for _, e := range doc.Workspace {
			if !seen[e.Path] {
				seen[e.Path] = true
				ws = append(ws, e)
			}
		}
		if len(ws) == 0 {
			ws = nil
		}
		doc.Workspace = ws
		for range rng.IntN(3) {
			m := Mock{Name: "tool_" + str(), Result: value(0)}
			if rng.IntN(2) == 0 {
				m.WhenInput = fieldsOf(0, str)
			}
			doc.Mocks = append(doc.Mocks, m)
		}
		if rng.IntN(3) == 0 {
			doc.Clock = []string{"2026-03-20", "2026-03-20T14:30:00Z", "2026-03-20T16:30+02:00"}[rng.IntN(3)]
		}
		if n := rng.IntN(8); n > 0 {
			doc.Steps = append(doc.Steps, SendStep{Message: nonEmpty()})
			for range n {
				doc.Steps = append(doc.Steps, step())
			}
		}
		out, err := SerializeCaseDocument(doc)
		if err != nil {
			t.Fatalf("doc %d: SerializeCaseDocument: %v\n%#v", i, err, doc)
		}
		back, err := ParseCaseDocument("g.test.yaml", out)
		if err != nil {
			t.Fatalf("doc %d: reparse: %v\n%s", i, err, out)
		}
		if !reflect.DeepEqual(doc, back) {
			t.Fatalf("doc %d: round trip changed the document\nserialized:\n%s\nbefore %#v\nafter  %#v", i, out, doc, back)
		}
	}
}
