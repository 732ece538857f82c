package session

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/archmax-ai/archmax/core/model"
)

// traceFlow: a code state that sets a variable and moves on, then an agent state that
// writes a file and delegates to a child workflow.
const traceFlow = `
states:
  screen:
    type: code
    script: scripts/screen.js
    triggers:
      manual:
    transitions:
      - to: work
        description: Screened.
  work:
    instructions: Do the work.
    tools:
      allow: [write_file, archmax_workflow_helper]
`

const traceHelperFlow = `
states:
  help:
    triggers:
      manual:
    instructions: Help.
`

// secrets are values the test puts in messages, tool arguments, variables and scripts: no
// span attribute may carry them (TR22-3).
var traceSecrets = []string{"hunter2-message", "hunter2-content", "hunter2-variable", "hunter2-child"}

func traceHarness(t *testing.T) (*harness, *tracetest.InMemoryExporter) {
	t.Helper()
	h := newHarness(t, traceFlow, map[string]string{
		"workflows/wf/scripts/screen.js": `await tools.archmax_set_variables({ variables: { token: "hunter2-variable" } });
tools.archmax_advance({ to: "work", reason: "screened" });`,
		"workflows/helper/workflow.yaml": traceHelperFlow,
	})
	h.model.bySession = map[string][]reply{}
	exp := tracetest.NewInMemoryExporter()
	h.cfg.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	return h, exp
}

// spanTree indexes finished spans by span id.
type spanTree struct {
	t     *testing.T
	spans tracetest.SpanStubs
}

func (s spanTree) named(name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, sp := range s.spans {
		if sp.Name == name {
			out = append(out, sp)
		}
	}
	return out
}

func (s spanTree) one(name string) tracetest.SpanStub {
	s.t.Helper()
	got := s.named(name)
	if len(got) != 1 {
		s.t.Fatalf("%d spans named %q, want 1; spans: %s", len(got), name, s.names())
	}
	return got[0]
}

func (s spanTree) names() string {
	var out []string
	for _, sp := range s.spans {
		out = append(out, sp.Name)
	}
	return strings.Join(out, ", ")
}

// childrenOf are the names of parent's direct children, in start order.
func (s spanTree) childrenOf(parent tracetest.SpanStub) []string {
	var kids []tracetest.SpanStub
	for _, sp := range s.spans {
		if sp.Parent.SpanID() == parent.SpanContext.SpanID() && sp.Parent.TraceID() == parent.SpanContext.TraceID() {
			kids = append(kids, sp)
		}
	}
	slices.SortStableFunc(kids, func(a, b tracetest.SpanStub) int { return a.StartTime.Compare(b.StartTime) })
	var out []string
	for _, k := range kids {
		out = append(out, k.Name)
	}
	return out
}

func attrOf(sp tracetest.SpanStub, key string) (attribute.Value, bool) {
	for _, kv := range sp.Attributes {
		if string(kv.Key) == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

func strAttr(t *testing.T, sp tracetest.SpanStub, key string) string {
	t.Helper()
	v, ok := attrOf(sp, key)
	if !ok {
		t.Fatalf("span %q has no %s (attributes %v)", sp.Name, key, sp.Attributes)
	}
	return v.Emit()
}

func isChildOf(child, parent tracetest.SpanStub) bool {
	return child.Parent.SpanID() == parent.SpanContext.SpanID() && child.SpanContext.TraceID() == parent.SpanContext.TraceID()
}

// The documented span tree of one turn: turn → step → code state → its tool calls; step →
// model call and tool call; step → delegation → the child's turn → its step → its model
// call — one trace, model spans with the GenAI attributes, no secret in any attribute.
func TestTraceSpanTreeOfATurn(t *testing.T) {
	h, exp := traceHarness(t)
	h.script(
		calls("", call{"write_file", map[string]any{"file_path": "scratchpad/a.md", "content": "hunter2-content"}}),
		calls("", delegateCall("helper", nil)),
		says("All done."),
	)
	h.child("s1~1", says("hunter2-child"))
	out := h.send("s1", "hunter2-message", nil)
	if out.Kind != KindCompleted {
		t.Fatalf("outcome %s (%s)", out.Kind, out.Rejected)
	}
	tr := spanTree{t: t, spans: exp.GetSpans()}

	turns := tr.named("turn wf")
	if len(turns) != 1 {
		t.Fatalf("%d parent turn spans; spans: %s", len(turns), tr.names())
	}
	turn := turns[0]
	if turn.Parent.IsValid() {
		t.Errorf("the turn of a fresh Send has a parent %v", turn.Parent)
	}
	for _, sp := range tr.spans {
		if sp.SpanContext.TraceID() != turn.SpanContext.TraceID() {
			t.Errorf("span %q is in trace %s, want the turn's %s", sp.Name, sp.SpanContext.TraceID(), turn.SpanContext.TraceID())
		}
	}
	if got := strAttr(t, turn, AttrSessionID); got != "s1" {
		t.Errorf("turn session = %s", got)
	}
	if got := strAttr(t, turn, AttrOutcome); got != string(KindCompleted) {
		t.Errorf("turn outcome = %s", got)
	}
	if got := strAttr(t, turn, AttrTurnID); got != out.TurnID {
		t.Errorf("turn id = %s, want %s", got, out.TurnID)
	}
	if got := strings.Join(tr.childrenOf(turn), ","); got != "step screen,step work,step work,step work" {
		t.Errorf("turn's children = %s", got)
	}
	screen := tr.one("step screen")
	if got := strAttr(t, screen, AttrStateType); got != "code" {
		t.Errorf("screen state type = %s", got)
	}
	if got := strings.Join(tr.childrenOf(screen), ","); got != "code screen" {
		t.Errorf("screen step's children = %s", got)
	}
	code := tr.one("code screen")
	if got := strings.Join(tr.childrenOf(code), ","); got != "execute_tool archmax_set_variables,execute_tool archmax_advance" {
		t.Errorf("code span's children = %s", got)
	}
	if got := strAttr(t, code, AttrScript); got != "scripts/screen.js" {
		t.Errorf("code span script = %s", got)
	}
	var work []tracetest.SpanStub
	for _, sp := range tr.named("step work") {
		work = append(work, sp)
	}
	slices.SortFunc(work, func(a, b tracetest.SpanStub) int { return a.StartTime.Compare(b.StartTime) })
	if got := strings.Join(tr.childrenOf(work[0]), ","); got != "chat test-model,execute_tool write_file" {
		t.Errorf("first work step's children = %s", got)
	}
	if got := strings.Join(tr.childrenOf(work[1]), ","); got != "chat test-model,delegate helper" {
		t.Errorf("second work step's children = %s", got)
	}
	if got := strings.Join(tr.childrenOf(work[2]), ","); got != "chat test-model" {
		t.Errorf("last work step's children = %s", got)
	}
	// the tool span
	wf := tr.one("execute_tool write_file")
	if strAttr(t, wf, "gen_ai.tool.name") != "write_file" || strAttr(t, wf, "gen_ai.operation.name") != "execute_tool" ||
		strAttr(t, wf, AttrState) != "work" || strAttr(t, wf, "gen_ai.tool.call.id") == "" {
		t.Errorf("tool span attributes %v", wf.Attributes)
	}
	// the child: its turn under the delegation span, in the parent's trace
	del := tr.one("delegate helper")
	if strAttr(t, del, AttrChild) != "s1~1" {
		t.Errorf("delegation child = %s", strAttr(t, del, AttrChild))
	}
	child := tr.one("turn helper")
	if !isChildOf(child, del) {
		t.Errorf("the child's turn span is not under the delegation span: parent %v", child.Parent)
	}
	if strAttr(t, turn, AttrDisposition) != "turn" || strAttr(t, child, AttrDisposition) != "turn" {
		t.Errorf("dispositions: the turn's %s, the child's %s; want turn", strAttr(t, turn, AttrDisposition), strAttr(t, child, AttrDisposition))
	}
	if strAttr(t, child, AttrSessionID) != "s1~1" || strAttr(t, child, AttrWorkflow) != "helper" {
		t.Errorf("child turn attributes %v", child.Attributes)
	}
	childStep := tr.one("step help")
	if !isChildOf(childStep, child) || strings.Join(tr.childrenOf(childStep), ",") != "chat test-model" {
		t.Errorf("child step under %v with children %v", childStep.Parent, tr.childrenOf(childStep))
	}
	// a model span: GenAI semantic conventions
	var chat tracetest.SpanStub
	for _, sp := range tr.named("chat test-model") {
		if isChildOf(sp, work[0]) {
			chat = sp
		}
	}
	if chat.SpanKind != trace.SpanKindClient {
		t.Errorf("model span kind %v, want client", chat.SpanKind)
	}
	want := map[string]string{
		"gen_ai.operation.name": "chat", "gen_ai.provider.name": "aws.bedrock", "gen_ai.system": "aws.bedrock",
		"gen_ai.request.model": "test-model", "gen_ai.response.model": "test-model",
		"gen_ai.usage.input_tokens": "200", "gen_ai.usage.output_tokens": "20",
		"gen_ai.usage.cache_read.input_tokens": "50", "gen_ai.response.finish_reasons": `["tool_use"]`,
		"gen_ai.conversation.id": "s1", AttrSessionID: "s1", AttrWorkflow: "wf", AttrState: "work", AttrRole: "agent",
	}
	for k, v := range want {
		if got := strAttr(t, chat, k); got != v {
			t.Errorf("model span %s = %s, want %s", k, got, v)
		}
	}
	// nothing the session carried is in an attribute
	for _, sp := range tr.spans {
		for _, kv := range sp.Attributes {
			for _, s := range traceSecrets {
				if strings.Contains(kv.Value.Emit(), s) {
					t.Errorf("span %q attribute %s carries %q", sp.Name, kv.Key, s)
				}
			}
		}
	}
}

// A turn that stops at its step deadline and is continued without a traceparent (the
// sweep's continuation) continues the trace its checkpoint recorded: same trace id, the
// first invocation's turn span as parent. A model failure is the model span's error status.
func TestTraceContinuationFromTheCheckpoint(t *testing.T) {
	h, exp := traceHarness(t)
	h.model.replies = []reply{calls("", call{"write_file", map[string]any{"file_path": "scratchpad/a.md", "content": "x"}}), says("Done.")}
	eng := h.engine()
	// the code step runs, then the deadline has passed: the turn yields before the agent step
	past := time.Now().Add(-time.Hour)
	var handed trace.SpanContext
	ctx := WithTurnTrace(WithStepDeadline(context.Background(), past), func(id string, sc trace.SpanContext) {
		if id == "s1" {
			handed = sc
		}
	})
	out, err := eng.Send(ctx, "s1", SendInput{Message: "go"})
	if err != nil || out.Kind != KindRunning {
		t.Fatalf("first invocation: %v %+v", err, out)
	}
	first := spanTree{t: t, spans: exp.GetSpans()}.one("turn wf")
	if !handed.Equal(first.SpanContext) {
		t.Errorf("WithTurnTrace handed %v, the turn span is %v", handed, first.SpanContext)
	}
	if got := strAttr(t, first, AttrOutcome); got != string(KindRunning) {
		t.Errorf("first turn outcome %s", got)
	}
	exp.Reset()
	out2, skipped, err := eng.Continue(context.Background(), "s1", "")
	if err != nil || skipped != nil || out2.Kind != KindCompleted {
		t.Fatalf("continuation: %v %+v %+v", err, skipped, out2)
	}
	tr := spanTree{t: t, spans: exp.GetSpans()}
	second := tr.one("turn wf")
	if second.SpanContext.TraceID() != first.SpanContext.TraceID() || second.Parent.SpanID() != first.SpanContext.SpanID() {
		t.Errorf("continued turn: trace %s parent %s, want trace %s parent %s", second.SpanContext.TraceID(), second.Parent.SpanID(),
			first.SpanContext.TraceID(), first.SpanContext.SpanID())
	}
	if !second.Parent.IsRemote() {
		t.Error("the continued turn's parent is not the stored (remote) context")
	}
	if strAttr(t, first, AttrDisposition) != "turn" || strAttr(t, second, AttrDisposition) != "turn" {
		t.Errorf("a continued turn's dispositions %s, %s; want turn", strAttr(t, first, AttrDisposition), strAttr(t, second, AttrDisposition))
	}
	if got := strAttr(t, second, AttrContinued); got != "true" {
		t.Errorf("continued = %s", got)
	}
	if got := strAttr(t, second, AttrTurnID); got != out.TurnID {
		t.Errorf("turn id %s, want %s", got, out.TurnID)
	}
}

// A failed model call: the model span and the turn carry its provider code as error type
// and error status; its message is not in the span.
func TestTraceModelFailureStatus(t *testing.T) {
	h, exp := traceHarness(t)
	h.model.replies = []reply{func(*model.Request) (*model.Response, error) {
		return nil, &model.CallError{Code: "AccessDeniedException", Status: 403, Message: "hunter2-message denied"}
	}}
	_, err := h.engine().Send(context.Background(), "s1", SendInput{Message: "go"})
	if err == nil {
		t.Fatal("the call did not fail")
	}
	tr := spanTree{t: t, spans: exp.GetSpans()}
	chat := tr.one("chat test-model")
	if chat.Status.Code != codes.Error || strAttr(t, chat, "error.type") != "AccessDeniedException" {
		t.Errorf("model span status %+v, attributes %v", chat.Status, chat.Attributes)
	}
	turn := tr.one("turn wf")
	if turn.Status.Code != codes.Error || strAttr(t, turn, "error.type") != "AccessDeniedException" {
		t.Errorf("turn span status %+v", turn.Status)
	}
	for _, sp := range tr.spans {
		if strings.Contains(sp.Status.Description, "hunter2") {
			t.Errorf("span %q status carries the provider's message: %q", sp.Name, sp.Status.Description)
		}
	}
}

// Off by default: no provider (or the noop one) wraps nothing and records no trace
// context on the session.
func TestTraceOffByDefault(t *testing.T) {
	for name, tp := range map[string]trace.TracerProvider{"nil": nil, "noop": noop.NewTracerProvider()} {
		h := newHarness(t, "states:\n  a:\n    triggers:\n      manual:\n    instructions: x\n", nil)
		h.cfg.TracerProvider = tp
		h.script(says("hi"))
		e := h.engine()
		if e.cfg.Model != h.model {
			t.Errorf("%s: the model client was wrapped", name)
		}
		h.send("s1", "hello", nil)
		head, err := h.log.Get(context.Background(), "s1")
		must(t, err)
		if strings.Contains(string(head.Body), `"trace"`) {
			t.Errorf("%s: the record stores a trace context: %s", name, head.Body)
		}
	}
}

func TestTraceParentRoundTrip(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	sc := trace.SpanContextFromContext(ContextWithTraceParent(context.Background(), tp))
	if !sc.IsValid() || !sc.IsRemote() || sc.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Fatalf("extracted %v", sc)
	}
	if got := TraceParent(sc); got != tp {
		t.Errorf("TraceParent = %s", got)
	}
	if ctx := ContextWithTraceParent(context.Background(), "garbage"); trace.SpanContextFromContext(ctx).IsValid() {
		t.Error("a malformed traceparent gave a span context")
	}
	if TraceParent(trace.SpanContext{}) != "" {
		t.Error("an invalid span context has a traceparent")
	}
}

// A child interrupted at its parent's step deadline is driven on by the parent's
// continuation in a later invocation: that invocation's turn span continues the trace, its
// step opens a resumed `delegate` span, and the child's continued turn is under it — the
// child's spans of both invocations in the parent's one trace.
func TestTraceChildAcrossInvocations(t *testing.T) {
	h, exp := traceHarness(t)
	var now atomic.Int64
	start := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	now.Store(start.UnixNano())
	h.cfg.Clock = func() time.Time { return time.Unix(0, now.Load()).UTC() }
	deadline := start.Add(time.Minute)
	h.script(calls("", delegateCall("helper", nil)), says("All done."))
	h.child("s1~1",
		func(req *model.Request) (*model.Response, error) {
			now.Store(deadline.Add(time.Second).UnixNano()) // the child's first call ends past the deadline
			return calls("", setVars(map[string]any{"k": "v"}))(req)
		},
		says("Helped."))
	eng := h.engine()
	out, err := eng.Send(WithStepDeadline(context.Background(), deadline), "s1", SendInput{Message: "go"})
	if err != nil || out.Kind != KindRunning {
		t.Fatalf("first invocation: %v %+v", err, out)
	}
	if sum := h.summary("s1~1"); sum.Status != StatusRunning {
		t.Fatalf("the child is %s, want running (interrupted)", sum.Status)
	}
	out, skipped, err := eng.Continue(context.Background(), "s1", "")
	if err != nil || skipped != nil || out.Kind != KindCompleted {
		t.Fatalf("continuation: %v %+v %+v", err, skipped, out)
	}
	tr := spanTree{t: t, spans: exp.GetSpans()}
	parents := tr.named("turn wf")
	slices.SortFunc(parents, func(a, b tracetest.SpanStub) int { return a.StartTime.Compare(b.StartTime) })
	if len(parents) != 2 {
		t.Fatalf("%d parent turns; spans: %s", len(parents), tr.names())
	}
	for _, sp := range tr.spans {
		if sp.SpanContext.TraceID() != parents[0].SpanContext.TraceID() {
			t.Errorf("span %q is in another trace", sp.Name)
		}
	}
	if parents[1].Parent.SpanID() != parents[0].SpanContext.SpanID() {
		t.Errorf("the continuation's turn is not under the first invocation's")
	}
	children := tr.named("turn helper")
	if len(children) != 2 {
		t.Fatalf("%d child turns, want one per invocation; spans: %s", len(children), tr.names())
	}
	for _, c := range children {
		var del tracetest.SpanStub
		for _, d := range tr.named("delegate helper") {
			if isChildOf(c, d) {
				del = d
			}
		}
		if !del.SpanContext.IsValid() {
			t.Fatalf("child turn %v is under no delegate span", c.SpanContext.SpanID())
		}
		_, resumed := attrOf(del, AttrResumed)
		continued := strAttr(t, c, AttrContinued) == "true"
		if resumed != continued {
			t.Errorf("child turn continued=%v under a delegate span resumed=%v", continued, resumed)
		}
		if unfinished, _ := attrOf(del, AttrUnfinished); !resumed && !unfinished.AsBool() {
			t.Error("the first invocation's delegation, still running when it yielded, is not marked unfinished")
		}
	}
}

// Every call's turn span says what the call was — archmax.disposition turn, reply,
// decide or deliver (a wake is a delivery) — also when the call is refused or fails part
// way; a wake that finds nothing due ran nothing and has none.
func TestTraceDispositionOfEveryCall(t *testing.T) {
	traced := func(flow string) (*harness, *tracetest.InMemoryExporter) {
		h := newHarness(t, flow, nil)
		exp := tracetest.NewInMemoryExporter()
		h.cfg.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
		return h, exp
	}
	// turnOf runs fn and returns its one turn span's disposition ("" none) and status
	turnOf := func(exp *tracetest.InMemoryExporter, fn func()) (string, codes.Code) {
		t.Helper()
		exp.Reset()
		fn()
		turn := spanTree{t: t, spans: exp.GetSpans()}.one("turn wf")
		d, _ := attrOf(turn, AttrDisposition)
		return d.AsString(), turn.Status.Code
	}
	check := func(what, got, want string, code, wantCode codes.Code) {
		t.Helper()
		if got != want || code != wantCode {
			t.Errorf("%s: disposition %q status %v, want %q %v", what, got, code, want, wantCode)
		}
	}
	ctx := context.Background()
	failing := func(*model.Request) (*model.Response, error) {
		return nil, &model.CallError{Code: "AccessDeniedException", Status: 403, Message: "denied"}
	}

	// a human park: a turn, replies, a refused and an accepted decision
	h, exp := traced(reviewFlow)
	var parked *Outcome
	d, c := turnOf(exp, func() {
		h.script(calls("", advance("review", "ready")), says("Handed over."))
		parked = h.send("s1", "go", nil)
	})
	check("a message that starts the session", d, "turn", c, codes.Unset)
	d, c = turnOf(exp, func() { h.script(says("Still with finance.")); h.send("s1", "Any news?", nil) })
	check("a message to a decision park", d, "reply", c, codes.Unset)
	d, c = turnOf(exp, func() {
		if _, err := h.engine().Reply(ctx, "s1", "  "); err == nil {
			t.Error("an empty reply was accepted")
		}
	})
	check("a refused reply", d, "reply", c, codes.Error)
	d, c = turnOf(exp, func() {
		if _, err := h.engine().Decide(ctx, "s1", Decision{To: "nowhere"}); err == nil {
			t.Error("a decision for no transition was accepted")
		}
	})
	check("a refused decision", d, "decide", c, codes.Error)
	d, c = turnOf(exp, func() {
		h.script(says("Published."))
		if _, err := h.engine().Decide(ctx, "s1", Decision{To: "publish", ParkID: parked.Pending.ParkID}); err != nil {
			t.Error(err)
		}
	})
	check("a decision", d, "decide", c, codes.Unset)
	d, c = turnOf(exp, func() {
		h.script(failing)
		if _, err := h.engine().Send(ctx, "s1", SendInput{Message: "one more thing"}); err == nil {
			t.Error("the turn's model call did not fail")
		}
	})
	check("a turn whose model call fails", d, "turn", c, codes.Error)

	// an input park: a delivery, a wake too early, a wake when due
	h, exp = traced(strings.Replace(waitFlow, "    budget: { maxParks: 1 }\n", "", 1))
	var mu sync.Mutex
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	h.cfg.Clock = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	d, c = turnOf(exp, func() {
		h.script(calls("", call{"archmax_wait", map[string]any{"reason": "the courier", "until": "30m"}}), says("Waiting."))
		parked = h.send("s1", "track it", nil)
	})
	check("a message that parks", d, "turn", c, codes.Unset)
	d, c = turnOf(exp, func() {
		_, skipped, err := h.engine().Wake(ctx, "s1", parked.Pending.ParkID)
		if err != nil || skipped == nil {
			t.Errorf("early wake: %v %+v", err, skipped)
		}
	})
	check("a wake not yet due", d, "", c, codes.Unset)
	mu.Lock()
	now = now.Add(31 * time.Minute)
	mu.Unlock()
	d, c = turnOf(exp, func() {
		h.script(calls("", call{"archmax_wait", map[string]any{"reason": "again", "until": "30m"}}), says("Waiting again."))
		if _, skipped, err := h.engine().Wake(ctx, "s1", parked.Pending.ParkID); err != nil || skipped != nil {
			t.Errorf("wake: %v %+v", err, skipped)
		}
	})
	check("a wake when due", d, "deliver", c, codes.Unset)
	d, c = turnOf(exp, func() {
		h.script(says("Got it."))
		if _, err := h.engine().Deliver(ctx, "s1", Delivery{Trigger: "courier", Variables: map[string]any{"scan": "in"}}); err != nil {
			t.Error(err)
		}
	})
	check("a delivery", d, "deliver", c, codes.Unset)
	d, c = turnOf(exp, func() {
		if _, err := h.engine().Deliver(ctx, "s1", Delivery{Trigger: "courier"}); err == nil {
			t.Error("a delivery to a session not waiting was accepted")
		}
	})
	check("a refused delivery", d, "deliver", c, codes.Error)
}
