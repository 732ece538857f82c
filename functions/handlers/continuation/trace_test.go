package continuation

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/archmax-ai/archmax/core/session"
)

// screened: a code state (one tool call of its script) hands to the counting agent state.
const screened = `
title: Screened counter
states:
  screen:
    type: code
    script: scripts/screen.js
    triggers:
      manual:
    transitions:
      - to: count
        description: Screened.
  count:
    instructions: Count, one step at a time.
`

func childNames(spans tracetest.SpanStubs, parent tracetest.SpanStub) []string {
	var kids tracetest.SpanStubs
	for _, s := range spans {
		if s.Parent.SpanID() == parent.SpanContext.SpanID() {
			kids = append(kids, s)
		}
	}
	slices.SortStableFunc(kids, func(a, b tracetest.SpanStub) int { return a.StartTime.Compare(b.StartTime) })
	var out []string
	for _, k := range kids {
		out = append(out, k.Name)
	}
	return out
}

// The acceptance test of tracing across a continuation: a turn with a code state and tool
// calls that runs out of its invocation and is continued by an asynchronous invocation
// (in-process, on virtual time, as Lambda would) is ONE trace: the continuation's turn
// span is the first invocation's turn span's child, through the payload's traceparent,
// and each has the documented tree (turn → step → code → tool; turn → step → chat, tool).
func TestContinuationContinuesTheTrace(t *testing.T) {
	// 20 ms model calls, no step in the last 80 ms of a 200 ms invocation: the first
	// invocation runs the code step and six model calls, the second the last three
	const steps = 8
	w := newWorld(t, &slowModel{steps: steps, delay: 20 * time.Millisecond})
	ctx := context.Background()
	if err := w.authored.Write(ctx, "workflows/screened/workflow.yaml", []byte(screened)); err != nil {
		t.Fatal(err)
	}
	if err := w.authored.Write(ctx, "workflows/screened/scripts/screen.js", []byte(`tools.archmax_advance({ to: "count", reason: "screened" });`)); err != nil {
		t.Fatal(err)
	}
	clk := w.onClock()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	engines := session.NewEngines(session.Config{Authored: w.authored, Log: w.log, Files: w.files, Model: w.model, ModelID: "test-model",
		Clock: clk.Now, TracerProvider: tp})
	rec := &recordingStarter{}
	async := &InProcess{Timeout: 200 * time.Millisecond, RetryDelays: []time.Duration{}, Clock: clk}
	run := NewRunner(engines, startBoth{rec, async}, Budget{ModelTimeout: 60 * time.Millisecond, Margin: 20 * time.Millisecond, Commit: 10 * time.Millisecond}, nil, WithClock(clk))
	async.Bind(run)
	eng, err := engines.Engine(ctx, "screened")
	if err != nil {
		t.Fatal(err)
	}
	out, err := run.Run(invocation(clk, 200*time.Millisecond), Options{}, func(ctx context.Context) (*session.Outcome, error) {
		return eng.Send(ctx, "c1", session.SendInput{Message: "count"})
	})
	if err != nil || out.Kind != session.KindRunning {
		t.Fatalf("first invocation: %v %+v", err, out)
	}
	async.Wait()
	if sum := w.summary("c1"); sum.Status != session.StatusCompleted {
		t.Fatalf("after the continuation: %s", sum.Status)
	}
	if got := 1 + async.Started(); got != 2 {
		t.Fatalf("%d invocations, want 2", got)
	}
	spans := exp.GetSpans()
	var turns tracetest.SpanStubs
	for _, s := range spans {
		if s.Name == "turn screened" {
			turns = append(turns, s)
		}
	}
	slices.SortFunc(turns, func(a, b tracetest.SpanStub) int { return a.StartTime.Compare(b.StartTime) })
	if len(turns) != 2 {
		t.Fatalf("%d turn spans, want one per invocation", len(turns))
	}
	first, second := turns[0], turns[1]
	// the payload carried the first turn span's context
	if len(rec.refs) != 1 || rec.refs[0].TraceParent != session.TraceParent(first.SpanContext) {
		t.Fatalf("continuation refs %+v, want the first turn's traceparent %s", rec.refs, session.TraceParent(first.SpanContext))
	}
	if !strings.HasPrefix(rec.refs[0].TraceParent, "00-"+first.SpanContext.TraceID().String()+"-") {
		t.Errorf("traceparent %s", rec.refs[0].TraceParent)
	}
	trace := first.SpanContext.TraceID()
	for _, s := range spans {
		if s.SpanContext.TraceID() != trace {
			t.Errorf("span %q is in trace %s, want %s", s.Name, s.SpanContext.TraceID(), trace)
		}
	}
	if first.Parent.IsValid() {
		t.Errorf("the opening turn has a parent %v", first.Parent)
	}
	if second.Parent.SpanID() != first.SpanContext.SpanID() || !second.Parent.IsRemote() {
		t.Errorf("the continuation's turn span has parent %v, want the first turn span %v (remote)", second.Parent, first.SpanContext.SpanID())
	}
	if got := strings.Join(childNames(spans, first), ","); got != "step screen"+strings.Repeat(",step count", 6)+",turn screened" {
		t.Errorf("first invocation's steps (and the continuation's turn): %s", got)
	}
	if got := strings.Join(childNames(spans, second), ","); got != "step count,step count,step count" {
		t.Errorf("continuation's steps: %s", got)
	}
	for _, s := range spans {
		switch s.Name {
		case "step screen":
			if got := strings.Join(childNames(spans, s), ","); got != "code screen" {
				t.Errorf("code step's children: %s", got)
			}
		case "code screen":
			if got := strings.Join(childNames(spans, s), ","); got != "execute_tool archmax_advance" {
				t.Errorf("code span's children: %s", got)
			}
		}
	}
	var counted []string
	for _, s := range spans {
		if s.Name == "step count" {
			counted = append(counted, strings.Join(childNames(spans, s), ","))
		}
	}
	slices.Sort(counted)
	want := append([]string{"chat test-model"}, slices.Repeat([]string{"chat test-model,execute_tool archmax_set_variables"}, steps)...)
	if strings.Join(counted, "|") != strings.Join(want, "|") {
		t.Errorf("agent steps' children:\n%s\nwant\n%s", strings.Join(counted, "\n"), strings.Join(want, "\n"))
	}
}

// startBoth records a continuation and starts it.
type startBoth struct {
	rec   *recordingStarter
	async *InProcess
}

func (s startBoth) Start(ctx context.Context, ref Ref) error {
	if err := s.rec.Start(ctx, ref); err != nil {
		return err
	}
	return s.async.Start(ctx, ref)
}

// A continuation payload's traceparent survives the wire format, and an old payload
// without one still parses.
func TestRefTraceParentOnTheWire(t *testing.T) {
	ref, ok, err := Parse([]byte(`{"archmaxContinue":{"sessionId":"s","turnId":"t","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}`))
	if err != nil || !ok || ref.TraceParent != "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" {
		t.Fatalf("parsed %+v %v %v", ref, ok, err)
	}
	ref, ok, err = Parse([]byte(`{"archmaxContinue":{"sessionId":"s","turnId":"t"}}`))
	if err != nil || !ok || ref.TraceParent != "" {
		t.Fatalf("parsed %+v %v %v", ref, ok, err)
	}
}
