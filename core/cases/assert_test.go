package cases

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/transcript"
)

// Tests of Evaluate (04-cases.md §7.2): for every assertion kind at least one pass and
// one miss with the exact detail the spec gives.

type axWant struct {
	kind   string
	status AssertionStatus
	detail string
}

func axCheck(t *testing.T, name string, got []AssertionRecord, step int, want ...axWant) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d records %+v; want %d", name, len(got), got, len(want))
	}
	for i, w := range want {
		r := got[i]
		if r.Kind != w.kind || r.Status != w.status || r.Detail != w.detail || r.Step != step {
			t.Errorf("%s: record %d = {kind %q status %q detail %q step %d}; want {kind %q status %q detail %q step %d}",
				name, i, r.Kind, r.Status, r.Detail, r.Step, w.kind, w.status, w.detail, step)
		}
		if r.Threshold != nil || r.Score != nil {
			t.Errorf("%s: record %d carries threshold/score on a non-grade kind", name, i)
		}
	}
}

func axEval(a Assertion, v *View) []AssertionRecord {
	return Evaluate(context.Background(), 3, a, v, nil)
}

func pass(kind, detail string) axWant { return axWant{kind, AssertionPassed, detail} }
func miss(kind, detail string) axWant { return axWant{kind, AssertionFailed, detail} }

// AX-01
func TestEvaluateSucceeded(t *testing.T) {
	a := SucceededAssertion{}
	cases := []struct {
		name string
		o    Outcome
		want axWant
	}{
		{"completed", Outcome{Kind: "completed"}, pass("succeeded", "")},
		{"raised", Outcome{Kind: "failed", Exit: &Exit{Code: "denied", Reason: "no access"}}, miss("succeeded", "raised 'denied': no access")},
		{"parked", Outcome{Kind: "parked", Channel: "decision", State: "review"}, miss("succeeded", "the session is parked")},
		{"rejected with reason", Outcome{Kind: "rejected", Rejected: "trigger 'manual' requires 'order_id'"},
			miss("succeeded", "the turn did not complete: trigger 'manual' requires 'order_id'")},
		{"failed without raise", Outcome{Kind: "failed"}, miss("succeeded", "the turn did not complete")},
		{"failed with a success exit", Outcome{Kind: "failed", Exit: &Exit{Success: true}}, miss("succeeded", "the turn did not complete")},
	}
	for _, c := range cases {
		axCheck(t, "AX-01 "+c.name, axEval(a, &View{Outcome: c.o}), 3, c.want)
	}
	// Earlier tool errors and refusals inside the turn are irrelevant (AX-01).
	v := &View{Outcome: Outcome{Kind: "completed"}, TurnMessages: []transcript.Message{
		{Role: "assistant", ToolCalls: []transcript.ToolCall{{ID: "c1", Name: "x"}}},
		{Role: "tool", ToolCallID: "c1", Tool: "x", Text: "boom", Error: true},
	}}
	axCheck(t, "AX-01 completed after a tool error", axEval(a, v), 3, pass("succeeded", ""))
}

// AX-02
func TestEvaluateParked(t *testing.T) {
	decision := Outcome{Kind: "parked", Channel: "decision", State: "review"}
	input := Outcome{Kind: "parked", Channel: "input", State: "clarify"}
	cases := []struct {
		name string
		a    ParkedAssertion
		o    Outcome
		want axWant
	}{
		{"true on decision", ParkedAssertion{}, decision, pass("parked", "")},
		{"true on input", ParkedAssertion{}, input, pass("parked", "")},
		{"true, not parked", ParkedAssertion{}, Outcome{Kind: "completed"}, miss("parked", "")},
		{"decision pinned", ParkedAssertion{Channel: "decision"}, decision, pass("parked", "decision")},
		{"decision pinned, input park", ParkedAssertion{Channel: "decision"}, input, miss("parked", "decision")},
		{"channel and state", ParkedAssertion{Channel: "input", State: "clarify"}, input, pass("parked", "input in clarify")},
		{"state mismatch", ParkedAssertion{Channel: "input", State: "review"}, input, miss("parked", "input in review")},
		{"state only", ParkedAssertion{State: "clarify"}, input, pass("parked", "clarify")},
		{"state only, completed", ParkedAssertion{State: "clarify"}, Outcome{Kind: "completed", State: "clarify"}, miss("parked", "clarify")},
	}
	for _, c := range cases {
		axCheck(t, "AX-02 "+c.name, axEval(c.a, &View{Outcome: c.o}), 3, c.want)
	}
}

// AX-03
func TestEvaluateRaised(t *testing.T) {
	raise := Outcome{Kind: "failed", Exit: &Exit{Code: "refund_denied", Reason: "Refund window closed"}}
	label := "raised 'refund_denied': Refund window closed"
	cases := []struct {
		name string
		a    RaisedAssertion
		o    Outcome
		want axWant
	}{
		{"true", RaisedAssertion{}, raise, pass("raised", label)},
		{"code", RaisedAssertion{Code: "refund_denied"}, raise, pass("raised", label)},
		{"other code", RaisedAssertion{Code: "fraud"}, raise, miss("raised", label)},
		{"reason exact", RaisedAssertion{Reason: "Refund window closed"}, raise, pass("raised", label)},
		{"reason plain is exact, not substring", RaisedAssertion{Reason: "window"}, raise, miss("raised", label)},
		{"reason regex", RaisedAssertion{Code: "refund_denied", Reason: "/window\\s+CLOSED/i"}, raise, pass("raised", label)},
		{"reason regex miss", RaisedAssertion{Reason: "/^window/"}, raise, miss("raised", label)},
		{"code matches, reason not", RaisedAssertion{Code: "refund_denied", Reason: "other"}, raise, miss("raised", label)},
		{"nothing raised", RaisedAssertion{}, Outcome{Kind: "completed"}, miss("raised", "the session did not raise (outcome: completed)")},
		{"parked", RaisedAssertion{Code: "x"}, Outcome{Kind: "parked"}, miss("raised", "the session did not raise (outcome: parked)")},
		{"failed without raise", RaisedAssertion{}, Outcome{Kind: "failed"}, miss("raised", "the session did not raise (outcome: failed)")},
		{"code is never a regex (MT-05)", RaisedAssertion{Code: "/refund/"}, raise, miss("raised", label)},
	}
	for _, c := range cases {
		axCheck(t, "AX-03 "+c.name, axEval(c.a, &View{Outcome: c.o}), 3, c.want)
	}
}

// AX-04
func TestEvaluateVariables(t *testing.T) {
	vars := map[string]spec.VariableEntry{
		"order_id": {Value: "A-1", Locked: true},
		"total":    {Value: 42.0, Locked: false},
		"customer": {Value: map[string]any{"name": "Ann", "tier": "silver"}, Locked: true},
		"order": {Value: map[string]any{"items": []any{
			map[string]any{"sku": "S-1"}, map[string]any{"sku": "S-9"},
		}}},
		"pattern": {Value: "A-1"},
		"nothing": {Value: nil},
	}
	v := &View{Variables: vars}
	str, num := StringValue, NumberValue

	a := VariablesAssertion{
		Expect: Fields{{"order_id", str("A-1")}, {"total", num(42)}},
		Locked: []VariableLock{{"order_id", true}, {"total", true}, {"unlisted", true}},
		Path:   []VariablePath{{"unlisted", "a.b"}},
	}
	axCheck(t, "AX-04 values and locks", axEval(a, v), 3,
		pass("variables", "order_id"),
		pass("variables", "order_id locked=true (actual true)"),
		pass("variables", "total"),
		miss("variables", "total locked=true (actual false)"))

	a = VariablesAssertion{
		Expect: Fields{
			{"missing", str("x")},
			{"total", num(41)},
			{"customer", MapValue(Field{"name", str("Ann")}, Field{"tier", str("gold")})},
			{"pattern", str("/A-\\d/")},
			{"nothing", NullValue()},
		},
		Locked: []VariableLock{{"missing", true}, {"customer", false}},
	}
	axCheck(t, "AX-04 misses", axEval(a, v), 3,
		miss("variables", "missing (not set)"),
		miss("variables", "total: expected 41, got 42"),
		miss("variables", `customer: expected {"name":"Ann","tier":"gold"}, got {"name":"Ann","tier":"silver"}`),
		miss("variables", "customer locked=false (actual true)"),
		miss("variables", `pattern: expected "/A-\\d/", got "A-1"`),
		pass("variables", "nothing"))

	a = VariablesAssertion{
		Expect: Fields{{"order", str("S-9")}, {"customer", str("x")}},
		Path:   []VariablePath{{"order", "items.-1.sku"}, {"customer", "address.city"}},
		Locked: []VariableLock{{"customer", true}},
	}
	axCheck(t, "AX-04 paths", axEval(a, v), 3,
		pass("variables", "order.items.-1.sku"),
		miss("variables", "customer.address.city (path does not resolve)"),
		pass("variables", "customer locked=true (actual true)"))

	a = VariablesAssertion{Expect: Fields{{"order", str("S-1")}}, Path: []VariablePath{{"order", "items.0.sku"}}}
	axCheck(t, "AX-04 index path", axEval(a, v), 3, pass("variables", "order.items.0.sku"))
	a = VariablesAssertion{Expect: Fields{{"order", str("S-1")}}, Path: []VariablePath{{"order", "items.2.sku"}}}
	axCheck(t, "AX-04 index past the end", axEval(a, v), 3, miss("variables", "order.items.2.sku (path does not resolve)"))

	axCheck(t, "AX-04 empty expect yields no record", axEval(VariablesAssertion{Locked: []VariableLock{{"total", true}}}, v), 3)
}

// AX-05
func TestEvaluateReachedState(t *testing.T) {
	trail := []transcript.TrailStep{
		{To: "start", Kind: "trigger", Reason: "manual"},
		{To: "lookup", Kind: "code", Reason: "known sender"},
		{To: "start", Kind: "sub-workflow", Workflow: "billing"},
	}
	v := &View{Trail: trail}
	axCheck(t, "AX-05 code advance", axEval(ReachedStateAssertion{State: "lookup"}, v), 3, pass("reachedState", "lookup"))
	axCheck(t, "AX-05 never entered", axEval(ReachedStateAssertion{State: "refuse"}, v), 3, miss("reachedState", "refuse"))
	// A sub-workflow step's `to` (the calling state) counts; a trigger arrival does not.
	axCheck(t, "AX-05 sub-workflow step", axEval(ReachedStateAssertion{State: "start"}, v), 3, pass("reachedState", "start"))
	v = &View{Trail: trail[:1]}
	axCheck(t, "AX-05 trigger arrival only", axEval(ReachedStateAssertion{State: "start"}, v), 3, miss("reachedState", "start"))
}

func replyView() *View {
	return &View{
		Outcome: Outcome{Kind: "parked", Reply: "Passing to a human."},
		SessionMessages: []transcript.Message{
			{Role: "user", Text: "where is INV-77?"},
			{Role: "assistant", Text: "Your order A-1 ships today."},
			{Role: "assistant", ToolCalls: []transcript.ToolCall{{ID: "c1", Name: "lookup", Args: map[string]any{"q": "INV-1"}}}},
			{Role: "tool", ToolCallID: "c1", Tool: "lookup", Text: "INV-1 found"},
			{Role: "runtime", Note: transcript.NoteDecision, Text: "A person decided: INV-2"},
			{Role: "assistant", Text: "Passing to a human."},
		},
	}
}

// AX-06
func TestEvaluateReply(t *testing.T) {
	v := replyView()
	a := ReplyAssertion{
		Includes: []string{"A-1", "/ships\\s+TODAY/i", "today.\nPassing", "refund"},
		Excludes: []string{"INV-", "/\\bA-\\d\\b/", "human"},
	}
	axCheck(t, "AX-06", axEval(a, v), 3,
		pass("reply.includes", "A-1"),
		pass("reply.includes", "/ships\\s+TODAY/i"),
		pass("reply.includes", "today.\nPassing"), // one subject joined with LF (OQ-C16)
		miss("reply.includes", "refund"),
		pass("reply.excludes", "INV-"), // user, tool and runtime-note texts are not the subject
		miss("reply.excludes", "/\\bA-\\d\\b/"),
		miss("reply.excludes", "human"))

	// No assistant text: the outcome's reply is the subject.
	v = &View{Outcome: Outcome{Kind: "completed", Reply: "fallback text"}}
	axCheck(t, "AX-06 outcome reply", axEval(ReplyAssertion{Includes: []string{"fallback"}}, v), 3, pass("reply.includes", "fallback"))
	// Plain tokens are case-sensitive substrings.
	axCheck(t, "AX-06 case-sensitive", axEval(ReplyAssertion{Includes: []string{"Fallback"}}, v), 3, miss("reply.includes", "Fallback"))
}

// AX-06 with an aborted regex: never a pass, includes or excludes.
func TestEvaluateReplyAbortedRegex(t *testing.T) {
	old := regexMatchTimeout
	regexMatchTimeout = 30 * time.Millisecond
	resetRegexCache()
	t.Cleanup(func() { regexMatchTimeout = old; resetRegexCache() })

	hostile := `/^(\w+\s?)*$/`
	v := &View{SessionMessages: []transcript.Message{{Role: "assistant", Text: strings.Repeat("a", 64) + "!"}}}
	got := axEval(ReplyAssertion{Includes: []string{hostile}, Excludes: []string{hostile}}, v)
	wantDetail := hostile + ` (regex "/^(\\w+\\s?)*$/": match aborted (timed out after 30ms))`
	axCheck(t, "AX-06 aborted", got, 3, miss("reply.includes", wantDetail), miss("reply.excludes", wantDetail))
}

func toolTurn() []transcript.Message {
	return []transcript.Message{
		{Role: "user", Text: "please"},
		{Role: "assistant", Text: "Looking.", ToolCalls: []transcript.ToolCall{
			{ID: "c1", Name: "lookup_order", Args: map[string]any{"id": "A-1", "opts": map[string]any{"full": true}}},
			{ID: "c2", Name: "read_file", Args: map[string]any{"path": "secret.txt"}},
			{ID: "c3", Name: "send_email", Args: map[string]any{"to": "x@y.z"}},
			{ID: "c4", Name: "write_file", Args: map[string]any{"path": "a.txt"}},
			{ID: "c5", Name: "archmax_advance", Args: map[string]any{"to": "done", "reason": "${{order_id}}"}},
		}},
		{Role: "tool", ToolCallID: "c1", Tool: "lookup_order", Text: `{"status": "shipped"}`},
		{Role: "tool", ToolCallID: "c2", Tool: "read_file", Text: "refused by policy", Error: true, Blocked: true},
		{Role: "tool", ToolCallID: "c3", Tool: "send_email", Text: "SMTP down", Error: true},
		{Role: "tool", ToolCallID: "c4", Tool: "write_file", Text: "refused (tool-blocked event only)", Error: true},
		{Role: "runtime", Note: transcript.NoteEvent, Text: "an event"},
		{Role: "assistant", Note: transcript.NoteEvent, ToolCalls: []transcript.ToolCall{{ID: "n1", Name: "archmax_note"}}},
		{Role: "assistant", ToolCalls: []transcript.ToolCall{{ID: "n2", Name: "archmax_note", Args: map[string]any{"note": "event"}}}},
	}
}

// AX-07, AX-08, AX-09, AX-10 (ST-11: the turn's assistant messages only).
func TestEvaluateToolAssertions(t *testing.T) {
	earlier := []transcript.Message{
		{Role: "assistant", ToolCalls: []transcript.ToolCall{{ID: "p1", Name: "old_tool"}}},
		{Role: "tool", ToolCallID: "p1", Tool: "old_tool", Text: "ok"},
	}
	turn := toolTurn()
	v := &View{
		TurnMessages:    turn,
		SessionMessages: append(append([]transcript.Message{}, earlier...), turn...),
		BlockedCallIDs:  []string{"c4"},
	}
	in := func(fs ...Field) ToolPattern { return ToolPattern{Name: "lookup_order", Input: fs} }
	tp := func(name string) ToolPattern { return ToolPattern{Name: name} }
	str := StringValue

	cases := []struct {
		name string
		a    Assertion
		want axWant
	}{
		{"AX-07 by name", CalledToolAssertion{ToolPattern: tp("lookup_order")}, pass("calledTool", "lookup_order")},
		{"AX-07 input partial", CalledToolAssertion{ToolPattern: in(Field{"id", str("A-1")})}, pass("calledTool", "lookup_order")},
		{"AX-07 input nested partial", CalledToolAssertion{ToolPattern: in(Field{"opts", MapValue(Field{"full", BoolValue(true)})})}, pass("calledTool", "lookup_order")},
		{"AX-07 input regex", CalledToolAssertion{ToolPattern: in(Field{"id", str("/^A-\\d+$/")})}, pass("calledTool", "lookup_order")},
		{"AX-07 input mismatch", CalledToolAssertion{ToolPattern: in(Field{"id", str("B-2")})}, miss("calledTool", "lookup_order")},
		{"AX-07 refused call counts", CalledToolAssertion{ToolPattern: tp("read_file")}, pass("calledTool", "read_file")},
		{"AX-07 errored call counts", CalledToolAssertion{ToolPattern: tp("send_email")}, pass("calledTool", "send_email")},
		{"AX-07 control tool counts", CalledToolAssertion{ToolPattern: tp("archmax_advance")}, pass("calledTool", "archmax_advance")},
		{"AX-07 reference form (MT-11)", CalledToolAssertion{ToolPattern: ToolPattern{Name: "archmax_advance", Input: Fields{{"reason", str("${{order_id}}")}}}}, pass("calledTool", "archmax_advance")},
		{"AX-07 earlier turn not seen", CalledToolAssertion{ToolPattern: tp("old_tool")}, miss("calledTool", "old_tool")},
		{"AX-07 archmax_note is never a call", CalledToolAssertion{ToolPattern: tp("archmax_note")}, miss("calledTool", "archmax_note")},
		{"AX-08 not called", NotCalledToolAssertion{ToolPattern: tp("delete_all")}, pass("notCalledTool", "delete_all")},
		{"AX-08 refused call is a call", NotCalledToolAssertion{ToolPattern: tp("read_file")}, miss("notCalledTool", "read_file")},
		{"AX-08 other input", NotCalledToolAssertion{ToolPattern: in(Field{"id", str("B-2")})}, pass("notCalledTool", "lookup_order")},
		{"AX-08 matching input", NotCalledToolAssertion{ToolPattern: in(Field{"id", str("A-1")})}, miss("notCalledTool", "lookup_order")},
		{"AX-09 governance marker", BlockedToolAssertion{ToolPattern: tp("read_file")}, pass("blockedTool", "read_file")},
		{"AX-09 marker with input", BlockedToolAssertion{ToolPattern: ToolPattern{Name: "read_file", Input: Fields{{"path", str("/secret/")}}}}, pass("blockedTool", "read_file")},
		{"AX-09 blocked call id", BlockedToolAssertion{ToolPattern: tp("write_file")}, pass("blockedTool", "write_file")},
		{"AX-09 errored is not blocked", BlockedToolAssertion{ToolPattern: tp("send_email")}, miss("blockedTool", "send_email")},
		{"AX-09 completed is not blocked", BlockedToolAssertion{ToolPattern: tp("lookup_order")}, miss("blockedTool", "lookup_order")},
		{"AX-09 uncalled", BlockedToolAssertion{ToolPattern: tp("delete_all")}, miss("blockedTool", "delete_all")},
		{"AX-10 calls made", UsedNoToolsAssertion{}, miss("usedNoTools", "")},
	}
	for _, c := range cases {
		axCheck(t, c.name, axEval(c.a, v), 3, c.want)
	}

	// AX-10: runtime notes and archmax_note calls are never tool calls; earlier turns
	// do not count.
	quiet := &View{
		TurnMessages: []transcript.Message{
			{Role: "runtime", Note: transcript.NoteDecision, Text: "approved"},
			{Role: "assistant", ToolCalls: []transcript.ToolCall{{ID: "n", Name: "archmax_note"}}},
			{Role: "assistant", Text: "Done."},
		},
		SessionMessages: earlier,
	}
	axCheck(t, "AX-10 no calls", axEval(UsedNoToolsAssertion{}, quiet), 3, pass("usedNoTools", ""))

	// Pairing by name when a result carries no call id (REF session-view.ts).
	noIDs := &View{TurnMessages: []transcript.Message{
		{Role: "assistant", ToolCalls: []transcript.ToolCall{{Name: "read_file", Args: map[string]any{"path": "a"}}}},
		{Role: "tool", Tool: "read_file", Text: "refused", Blocked: true},
	}}
	axCheck(t, "AX-09 paired by name", axEval(BlockedToolAssertion{ToolPattern: tp("read_file")}, noIDs), 3, pass("blockedTool", "read_file"))
}

// AX-07/AX-08 with an aborted regex in `input`: unknown is never a pass.
func TestEvaluateToolAbortedRegex(t *testing.T) {
	old := regexMatchTimeout
	regexMatchTimeout = 30 * time.Millisecond
	resetRegexCache()
	t.Cleanup(func() { regexMatchTimeout = old; resetRegexCache() })

	hostile := `/^(\w+\s?)*$/`
	v := &View{TurnMessages: []transcript.Message{
		{Role: "assistant", ToolCalls: []transcript.ToolCall{{ID: "c", Name: "search", Args: map[string]any{"q": strings.Repeat("a", 64) + "!"}}}},
	}}
	p := ToolPattern{Name: "search", Input: Fields{{"q", StringValue(hostile)}}}
	wantDetail := `search (regex "/^(\\w+\\s?)*$/": match aborted (timed out after 30ms))`
	axCheck(t, "AX-07 aborted", axEval(CalledToolAssertion{ToolPattern: p}, v), 3, miss("calledTool", wantDetail))
	axCheck(t, "AX-08 aborted", axEval(NotCalledToolAssertion{ToolPattern: p}, v), 3, miss("notCalledTool", wantDetail))
	if got := axEval(RaisedAssertion{Reason: hostile}, &View{Outcome: Outcome{Kind: "failed", Exit: &Exit{Code: "c", Reason: strings.Repeat("a", 64) + "!"}}}); got[0].Status != AssertionFailed ||
		!strings.Contains(got[0].Detail, "match aborted") {
		t.Errorf("AX-03 aborted reason regex = %+v; want a failure naming the abort", got)
	}
}

func trailView() *View {
	return &View{Trail: []transcript.TrailStep{
		{To: "start", Kind: "trigger", Reason: "manual"},
		{To: "refund-review", Kind: "agent", Reason: "needs review"},
		{To: "refund-review", Kind: "human", Reason: "vetoed by policy"},
		{To: "refund-review", Kind: "code", Reason: "retry"},
		{To: "start", Kind: "trigger", Reason: "email"},
		{To: "start", Kind: "sub-workflow", Workflow: "billing"},
		{To: "start", Kind: "sub-workflow", Workflow: "billing", Status: "error"},
		{To: "start", Kind: "sub-workflow", Workflow: "billing", Status: "ok"},
	}}
}

// AX-11
func TestEvaluateTrail(t *testing.T) {
	v := trailView()
	cases := []struct {
		name string
		a    TrailAssertion
		want axWant
	}{
		{"count 0", TrailAssertion{TrailKind: "code", To: "lookup", Count: 0}, pass("trail", "to=lookup kind=code expected 0, saw 0")},
		{"count mismatch", TrailAssertion{To: "refund-review", Count: 2}, miss("trail", "to=refund-review expected 2, saw 3")},
		{"all fields", TrailAssertion{To: "refund-review", TrailKind: "human", Reason: "vetoed by policy", Count: 1},
			pass("trail", "to=refund-review kind=human reason=vetoed by policy expected 1, saw 1")},
		{"reason is exact", TrailAssertion{Reason: "vetoed", Count: 1}, miss("trail", "reason=vetoed expected 1, saw 0")},
		{"triggers across turns", TrailAssertion{TrailKind: "trigger", Count: 2}, pass("trail", "kind=trigger expected 2, saw 2")},
	}
	for _, c := range cases {
		axCheck(t, "AX-11 "+c.name, axEval(c.a, v), 3, c.want)
	}
}

// AX-12
func TestEvaluateNoTraversal(t *testing.T) {
	only := &View{Trail: []transcript.TrailStep{{To: "start", Kind: "trigger", Reason: "manual"}, {To: "start", Kind: "trigger", Reason: "email"}}}
	axCheck(t, "AX-12 triggers only", axEval(NoTraversalAssertion{}, only), 3, pass("noTraversal", "no committed transitions"))
	axCheck(t, "AX-12 empty trail", axEval(NoTraversalAssertion{}, &View{}), 3, pass("noTraversal", "no committed transitions"))
	deleg := &View{Trail: append(only.Trail, transcript.TrailStep{To: "start", Kind: "sub-workflow", Workflow: "billing"})}
	axCheck(t, "AX-12 a delegation is a traversal", axEval(NoTraversalAssertion{}, deleg), 3, miss("noTraversal", "no committed transitions"))
	axCheck(t, "AX-12 moves", axEval(NoTraversalAssertion{}, trailView()), 3, miss("noTraversal", "no committed transitions"))
}

// AX-13
func TestEvaluateTriggerArrival(t *testing.T) {
	v := trailView()
	axCheck(t, "AX-13 second turn's trigger", axEval(TriggerArrivalAssertion{Trigger: "email"}, v), 3, pass("triggerArrival", "email"))
	axCheck(t, "AX-13 never arrived", axEval(TriggerArrivalAssertion{Trigger: "webhook"}, v), 3, miss("triggerArrival", "webhook"))
	// A non-trigger step's reason does not count.
	axCheck(t, "AX-13 reason of another kind", axEval(TriggerArrivalAssertion{Trigger: "retry"}, v), 3, miss("triggerArrival", "retry"))
}

// AX-14
func TestEvaluateRanWorkflow(t *testing.T) {
	v := trailView()
	n := func(i int) *int { return &i }
	cases := []struct {
		name string
		a    RanWorkflowAssertion
		want axWant
	}{
		{"at least one ok (absent status reads ok)", RanWorkflowAssertion{Workflow: "billing", Status: "ok"}, pass("ranWorkflow", "billing (ok)")},
		{"default status", RanWorkflowAssertion{Workflow: "billing"}, pass("ranWorkflow", "billing (ok)")},
		{"count ok", RanWorkflowAssertion{Workflow: "billing", Status: "ok", Count: n(2)}, pass("ranWorkflow", "billing (ok, 2/2)")},
		{"count mismatch", RanWorkflowAssertion{Workflow: "billing", Status: "ok", Count: n(3)}, miss("ranWorkflow", "billing (ok, 2/3)")},
		{"error status", RanWorkflowAssertion{Workflow: "billing", Status: "error", Count: n(1)}, pass("ranWorkflow", "billing (error, 1/1)")},
		{"never ran", RanWorkflowAssertion{Workflow: "shipping", Status: "ok"}, miss("ranWorkflow", "shipping (ok)")},
		{"count 0", RanWorkflowAssertion{Workflow: "shipping", Status: "error", Count: n(0)}, pass("ranWorkflow", "shipping (error, 0/0)")},
	}
	for _, c := range cases {
		axCheck(t, "AX-14 "+c.name, axEval(c.a, v), 3, c.want)
	}
}

// RV-02: a multi-record assertion stamps every record with its own step; a pointer is
// read as its value.
func TestEvaluateStepStamping(t *testing.T) {
	v := replyView()
	got := Evaluate(context.Background(), 7, &ReplyAssertion{Includes: []string{"A-1", "B"}, Excludes: []string{"C"}}, v, nil)
	axCheck(t, "RV-02", got, 7, pass("reply.includes", "A-1"), miss("reply.includes", "B"), pass("reply.excludes", "C"))
	// A nil view reads as empty.
	axCheck(t, "nil view", Evaluate(context.Background(), 1, SucceededAssertion{}, nil, nil), 1, miss("succeeded", "the turn did not complete"))
}

// Structural kinds (§7.1) are what the runner halts on; Evaluate only reports.
func TestEvaluateStructuralSet(t *testing.T) {
	structural := map[StepKind]bool{
		StepSucceeded: true, StepParked: true, StepRaised: true, StepVariables: true, StepReachedState: true,
		StepTrail: true, StepNoTraversal: true, StepTriggerArrival: true,
	}
	for _, k := range AssertionKinds {
		if k.Structural() != structural[k] {
			t.Errorf("%s.Structural() = %v", k, k.Structural())
		}
	}
}
