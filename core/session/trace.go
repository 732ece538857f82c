package session

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/archmax-ai/archmax/core/kernel"
	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/spec"
)

// Tracing (docs/operations.md "Traces"; docs/DECISIONS.md TR22-*). With Config.TracerProvider
// set, every call of the engine that runs steps is one span, and under it:
//
//	turn <workflow>                    one call: Send, Decide, Reply, Deliver, Wake, Continue,
//	│                                  or a sub-workflow child driven by its parent
//	├─ step <state>                    one iteration of the state loop (one state's execution)
//	│  ├─ chat <model>                 a model call (GenAI semantic conventions, kind client)
//	│  ├─ execute_tool <tool>          a tool call that passed governance
//	│  │  └─ execute_tool <tool>       a call an agent script (archmax_eval/archmax_run) made
//	│  ├─ code <state>                 a code state's script run, with its tool calls under it
//	│  └─ delegate <workflow>          a sub-workflow dispatch; the child's turn spans under it
//	│     └─ turn <child workflow> …
//	└─ chat <model>                    a reply-only call (outside the loop)
//
// Attributes never carry message contents, tool arguments or results, script sources,
// variable values or error texts (any of them can hold a secret): only ids, names, counts,
// statuses and error names (TR22-3). Without a provider (or with the noop one) nothing of
// this runs: every hook below returns at its first nil check (TR22-1).

// TracerName is the instrumentation scope of the engine's spans.
const TracerName = "github.com/archmax-ai/archmax/core/session"

// The engine's span attributes beside the OpenTelemetry semantic conventions' own.
const (
	AttrSessionID   = "archmax.session.id"  // the session the span worked on
	AttrWorkflow    = "archmax.workflow"    // its workflow slug
	AttrState       = "archmax.state"       // the state (step, tool, model, code spans); a turn's: where it ended
	AttrStateType   = "archmax.state.type"  // agent, code, grader, human
	AttrStep        = "archmax.step"        // the turn's step count at this step (1-based, across invocations)
	AttrStepResult  = "archmax.step.result" // moved, settled, failed (routed through on_error), yielded, stayed
	AttrTurnID      = "archmax.turn.id"     // the turn's id (a continuation keeps it)
	AttrDisposition = "archmax.disposition" // turn, reply, decide, deliver (a wake is a delivery)
	AttrContinued   = "archmax.turn.continued"
	AttrOutcome     = "archmax.outcome" // the Outcome's kind: completed, parked, running, …
	AttrStatus      = "archmax.status"  // the session's status after the call
	AttrSteps       = "archmax.steps"   // steps this invocation took
	AttrOrigin      = "archmax.tool.origin"
	AttrRole        = "archmax.model.role" // agent or grader
	AttrScript      = "archmax.script"     // a code state's script path (never its source)
	AttrChild       = "archmax.delegation.child"
	AttrResumed     = "archmax.delegation.resumed" // the dispatch was recorded by an earlier call
	AttrUnfinished  = "archmax.unfinished"         // ended with its turn, not answered in this call
)

// GenAI semantic convention keys (gen-ai-spans; aws-bedrock).
const (
	genAIOperation      = "gen_ai.operation.name"
	genAIProvider       = "gen_ai.provider.name"
	genAISystem         = "gen_ai.system" // the older name of the provider attribute, kept for backends that read it
	genAIRequestModel   = "gen_ai.request.model"
	genAIResponseModel  = "gen_ai.response.model"
	genAIMaxTokens      = "gen_ai.request.max_tokens"
	genAITemperature    = "gen_ai.request.temperature"
	genAIInputTokens    = "gen_ai.usage.input_tokens"
	genAIOutputTokens   = "gen_ai.usage.output_tokens"
	genAICacheRead      = "gen_ai.usage.cache_read.input_tokens"
	genAICacheWrite     = "gen_ai.usage.cache_creation.input_tokens"
	genAIFinishReasons  = "gen_ai.response.finish_reasons"
	genAIConversationID = "gen_ai.conversation.id"
	genAIToolName       = "gen_ai.tool.name"
	genAIToolCallID     = "gen_ai.tool.call.id"
	errorType           = "error.type"
	// ProviderBedrock is the gen_ai.provider.name of every model span: the engine's model
	// client is Bedrock Converse (a local scripted client stands in for it).
	ProviderBedrock = "aws.bedrock"
)

// tracerOf is the engine's tracer, nil when tracing is off (no provider, or a noop one).
func tracerOf(tp trace.TracerProvider) trace.Tracer {
	switch tp.(type) {
	case nil, noop.TracerProvider, *noop.TracerProvider:
		return nil
	}
	return tp.Tracer(TracerName)
}

// runTrace is one call's open spans. Tool calls of scripts run on other goroutines, so the
// current parent and the open tool spans are under mu.
type runTrace struct {
	tracer   trace.Tracer
	session  string
	workflow string
	turn     trace.Span
	mu       sync.Mutex
	step     trace.Span
	parent   trace.Span            // where model and tool spans nest: the turn, a step, a script
	open     map[string]trace.Span // tool and delegation spans by call id, until their result
	outer    map[string]trace.Span // an agent script's call id → the parent it replaced
	// disposition is what the call started on (traceDisposition), on the call's goroutine
	disposition Disposition
}

type runTraceKey struct{}

// spanCtx is a context carrying span alone (the start of a child span).
func spanCtx(s trace.Span) context.Context { return trace.ContextWithSpan(context.Background(), s) }

func (t *runTrace) current() trace.Span {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.parent
}

func (t *runTrace) base() []attribute.KeyValue {
	return []attribute.KeyValue{attribute.String(AttrSessionID, t.session), attribute.String(AttrWorkflow, t.workflow)}
}

func noTurnEnd(**Outcome, *error) {}

// traceTurn opens the call's turn span once its session is loaded (withSessionOf) and
// returns what ends it. The parent is the context's span — a delegation's for a child, the
// previous invocation's turn for a continuation whose payload carried a traceparent
// (ContextWithTraceParent), the host's request span — else, for a continuation without
// one (the sweep's), the turn span the checkpoint recorded (record.Trace): one trace id
// across the invocations of a turn (TR22-4). The span's context is recorded on the record
// (committed with the call's next commit) and handed to WithTurnTrace's hook.
func (r *run) traceTurn(newTurn bool) func(**Outcome, *error) {
	tracer := tracerOf(r.e.cfg.TracerProvider)
	if tracer == nil {
		return noTurnEnd
	}
	ctx := r.ctx
	_, child := spec.ParentSessionIDOf(r.id)
	if !newTurn && !child && !trace.SpanContextFromContext(ctx).IsValid() && r.rec.Trace != "" {
		ctx = ContextWithTraceParent(ctx, r.rec.Trace)
	}
	rt := &runTrace{tracer: tracer, session: r.id, workflow: r.e.cfg.Workflow}
	ctx, rt.turn = tracer.Start(ctx, "turn "+r.e.cfg.Workflow, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(rt.base()...))
	rt.parent = rt.turn
	r.tr = rt
	r.ctx = context.WithValue(ctx, runTraceKey{}, rt)
	sc := rt.turn.SpanContext()
	r.rec.Trace = TraceParent(sc)
	if fn, ok := r.ctx.Value(turnTraceKey{}).(func(string, trace.SpanContext)); ok && fn != nil && !child {
		fn(r.id, sc)
	}
	return func(out **Outcome, err *error) { r.endTurnSpan(*out, *err) }
}

// endTurnSpan ends what the call left open (a delegation still running, a step cut by an
// error), then the turn span, with the call's result.
func (r *run) endTurnSpan(out *Outcome, err error) {
	rt := r.tr
	rt.mu.Lock()
	for _, s := range rt.open {
		s.SetAttributes(attribute.Bool(AttrUnfinished, true))
		s.End()
	}
	rt.open = nil
	if rt.step != nil {
		rt.step.End()
		rt.step = nil
	}
	rt.parent = rt.turn
	rt.mu.Unlock()
	s := rt.turn
	s.SetAttributes(attribute.String(AttrTurnID, r.turnID()), attribute.String(AttrState, r.rec.State),
		attribute.Bool(AttrContinued, r.continuing), attribute.Int(AttrSteps, r.callSteps))
	if d := r.spanDisposition(out); d != "" {
		s.SetAttributes(attribute.String(AttrDisposition, string(d)))
	}
	if out != nil {
		s.SetAttributes(attribute.String(AttrOutcome, string(out.Kind)), attribute.String(AttrStatus, string(out.Status)))
	}
	failSpan(s, err)
	s.End()
}

// traceDisposition records what the call is — a turn, a reply, a decision, a delivery — as
// it starts on it: the turn span carries it even when the call is refused or fails before
// it settles (r.disposition is set only as a call settles, and never for a plain turn).
func (r *run) traceDisposition(d Disposition) {
	if r.tr != nil {
		r.tr.disposition = d
	}
}

// spanDisposition is the turn span's archmax.disposition: the outcome's, else what the
// call was classified as (a continuation without one carries on a turn); "" for a call
// that never got to one (a wake or a continuation skipped, a call refused before it
// loaded the session's state).
func (r *run) spanDisposition(out *Outcome) Disposition {
	switch {
	case out != nil && out.Disposition != "":
		return out.Disposition
	case r.disposition != "":
		return r.disposition
	case r.tr.disposition != "":
		return r.tr.disposition
	case r.continuing:
		return DispositionTurn
	}
	return ""
}

// failSpan marks s failed by err's name (never its text, TR22-3).
func failSpan(s trace.Span, err error) {
	if err == nil {
		return
	}
	name := errName(err)
	s.SetAttributes(attribute.String(errorType, name))
	s.SetStatus(codes.Error, name)
}

// errName is an error's name: its Name() (the engine's typed errors), a model call's
// provider code, a context's cancellation, else its Go type.
func errName(err error) string {
	var ce *model.CallError
	var named interface{ Name() string }
	switch {
	case errors.As(err, &ce):
		return ce.Code
	case errors.Is(err, context.DeadlineExceeded):
		return "DeadlineExceeded"
	case errors.Is(err, context.Canceled):
		return "Canceled"
	case errors.As(err, &named):
		return named.Name()
	}
	return reflect.TypeOf(err).String()
}

func noStepEnd(stepResult, error) {}

// traceStep opens the span of one loop step in st; the returned func ends it with the
// step's result.
func (r *run) traceStep(st *spec.State) func(stepResult, error) {
	rt := r.tr
	if rt == nil {
		return noStepEnd
	}
	_, s := rt.tracer.Start(spanCtx(rt.turn), "step "+st.Slug, trace.WithAttributes(append(rt.base(),
		attribute.String(AttrState, st.Slug), attribute.String(AttrStateType, st.Type), attribute.Int(AttrStep, r.steps))...))
	rt.mu.Lock()
	rt.step, rt.parent = s, s
	rt.mu.Unlock()
	return func(res stepResult, err error) {
		result := "stayed"
		switch {
		case err != nil:
			result = "error"
		case res.yielded:
			result = "yielded"
		case res.settled != nil:
			result = "settled"
		case res.failure != "":
			result = "failed"
			s.SetStatus(codes.Error, "the state failed")
		case res.moved:
			result = "moved"
		}
		s.SetAttributes(attribute.String(AttrStepResult, result))
		failSpan(s, err)
		rt.mu.Lock()
		if rt.step == s {
			rt.step, rt.parent = nil, rt.turn
		}
		rt.mu.Unlock()
		s.End()
	}
}

// traceCode runs a code state's script under its span (tool calls the script makes nest
// under it) and returns run's error.
func (r *run) traceCode(st *spec.State, run func() error) error {
	rt := r.tr
	if rt == nil {
		return run()
	}
	rt.mu.Lock()
	outer := rt.parent
	rt.mu.Unlock()
	_, s := rt.tracer.Start(spanCtx(outer), "code "+st.Slug, trace.WithAttributes(append(rt.base(),
		attribute.String(AttrState, st.Slug), attribute.String(AttrScript, st.Script))...))
	rt.mu.Lock()
	rt.parent = s
	rt.mu.Unlock()
	err := run()
	rt.mu.Lock()
	rt.parent = outer
	rt.mu.Unlock()
	failSpan(s, err)
	s.End()
	return err
}

// traceToolStart opens the span of a tool call that passed governance (emitCalled): a
// delegation's `delegate <workflow>`, any other `execute_tool <tool>`. An agent script's
// span (archmax_eval, archmax_run) is the parent of the calls it makes until its result.
func (r *run) traceToolStart(state string, origin kernel.Origin, callID, tool string) {
	rt := r.tr
	if rt == nil {
		return
	}
	attrs := append(rt.base(), attribute.String(AttrState, state), attribute.String(genAIToolName, tool),
		attribute.String(genAIToolCallID, callID), attribute.String(AttrOrigin, string(origin)))
	name := "execute_tool " + tool
	if slug, ok := spec.WorkflowSlugFromToolName(tool); ok {
		name = "delegate " + slug
	} else {
		attrs = append(attrs, attribute.String(genAIOperation, "execute_tool"))
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	_, s := rt.tracer.Start(spanCtx(rt.parent), name, trace.WithAttributes(attrs...))
	if rt.open == nil {
		rt.open = map[string]trace.Span{}
	}
	if prev := rt.open[callID]; prev != nil {
		prev.End()
	}
	rt.open[callID] = s
	if tool == spec.EvalTool || tool == spec.RunTool {
		if rt.outer == nil {
			rt.outer = map[string]trace.Span{}
		}
		rt.outer[callID], rt.parent = rt.parent, s
	}
}

// traceToolEnd ends a tool call's span with its result (emitResult): an error result is
// the span's error status.
func (r *run) traceToolEnd(callID string, isErr bool) {
	rt := r.tr
	if rt == nil {
		return
	}
	rt.mu.Lock()
	s := rt.open[callID]
	delete(rt.open, callID)
	if outer, ok := rt.outer[callID]; ok {
		delete(rt.outer, callID)
		if rt.parent == s {
			rt.parent = outer
		}
	}
	rt.mu.Unlock()
	if s == nil {
		return
	}
	if isErr {
		s.SetAttributes(attribute.String(errorType, "tool_error"))
		s.SetStatus(codes.Error, "the tool answered an error")
	}
	s.End()
}

// traceDelegation is ctx carrying the span of dispatch d — opened by its tool call in this
// call, or, for a dispatch an earlier call recorded and this one drives on, opened now
// (resumed) — so the child's turn span is its child (TR22-5).
func (r *run) traceDelegation(ctx context.Context, d *delegation) context.Context {
	rt := r.tr
	if rt == nil {
		return ctx
	}
	callID := d.mark.ToolCallID
	rt.mu.Lock()
	defer rt.mu.Unlock()
	s := rt.open[callID]
	if s == nil {
		_, s = rt.tracer.Start(spanCtx(rt.parent), "delegate "+d.mark.Workflow, trace.WithAttributes(append(rt.base(),
			attribute.String(AttrState, d.mark.State), attribute.String(genAIToolName, spec.WorkflowToolPrefix+d.mark.Workflow),
			attribute.String(genAIToolCallID, callID), attribute.Bool(AttrResumed, true))...))
		if rt.open == nil {
			rt.open = map[string]trace.Span{}
		}
		rt.open[callID] = s
	}
	s.SetAttributes(attribute.String(AttrChild, d.childID))
	return trace.ContextWithSpan(ctx, s)
}

// tracedModel wraps the engine's model client: each call is a `chat <model>` span of kind
// client under the call's current step (GenAI semantic conventions; TR22-2).
type tracedModel struct {
	next   model.Client
	tracer trace.Tracer
}

// tracedStreamModel is tracedModel over a client that streams.
type tracedStreamModel struct {
	tracedModel
	stream model.StreamClient
}

// traceModel is c wrapped for tracing under tp, or c itself when tracing is off or c is
// already wrapped.
func traceModel(c model.Client, tp trace.TracerProvider) model.Client {
	tracer := tracerOf(tp)
	switch c.(type) {
	case nil, *tracedModel, *tracedStreamModel:
		return c
	}
	if tracer == nil {
		return c
	}
	if sc, ok := c.(model.StreamClient); ok {
		return &tracedStreamModel{tracedModel: tracedModel{next: c, tracer: tracer}, stream: sc}
	}
	return &tracedModel{next: c, tracer: tracer}
}

func (m *tracedModel) Converse(ctx context.Context, req *model.Request) (*model.Response, error) {
	ctx, s := m.start(ctx, req)
	resp, err := m.next.Converse(ctx, req)
	endModelSpan(s, req, resp, err)
	return resp, err
}

func (m *tracedStreamModel) ConverseStream(ctx context.Context, req *model.Request, onDelta func(model.Delta)) (*model.Response, error) {
	ctx, s := m.start(ctx, req)
	resp, err := m.stream.ConverseStream(ctx, req, onDelta)
	endModelSpan(s, req, resp, err)
	return resp, err
}

func (m *tracedModel) start(ctx context.Context, req *model.Request) (context.Context, trace.Span) {
	parent := ctx
	attrs := []attribute.KeyValue{attribute.String(genAIOperation, "chat"), attribute.String(genAIProvider, ProviderBedrock),
		attribute.String(genAISystem, ProviderBedrock), attribute.String(genAIRequestModel, req.ModelID)}
	if rt, ok := ctx.Value(runTraceKey{}).(*runTrace); ok && rt != nil {
		parent = trace.ContextWithSpan(ctx, rt.current())
		attrs = append(attrs, attribute.String(genAIConversationID, rt.session))
		attrs = append(attrs, rt.base()...)
	}
	if st := req.Metadata["archmax.state"]; st != "" {
		attrs = append(attrs, attribute.String(AttrState, st))
	}
	if role := req.Metadata["archmax.role"]; role != "" {
		attrs = append(attrs, attribute.String(AttrRole, role))
	}
	if req.MaxTokens > 0 {
		attrs = append(attrs, attribute.Int(genAIMaxTokens, req.MaxTokens))
	}
	if req.Temperature != nil {
		attrs = append(attrs, attribute.Float64(genAITemperature, *req.Temperature))
	}
	return m.tracer.Start(parent, "chat "+req.ModelID, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
}

func endModelSpan(s trace.Span, req *model.Request, resp *model.Response, err error) {
	if err != nil {
		name := errName(err)
		var ce *model.CallError
		if errors.As(err, &ce) {
			name = fmt.Sprintf("%s (HTTP %d)", ce.Code, ce.Status)
			s.SetAttributes(attribute.String(errorType, ce.Code))
		} else {
			s.SetAttributes(attribute.String(errorType, name))
		}
		s.SetStatus(codes.Error, name)
		s.End()
		return
	}
	if resp != nil {
		id := resp.ModelID
		if id == "" {
			id = req.ModelID
		}
		s.SetAttributes(attribute.String(genAIResponseModel, id))
		if resp.StopReason != "" {
			s.SetAttributes(attribute.StringSlice(genAIFinishReasons, []string{resp.StopReason}))
		}
		if u := resp.Usage; u != nil {
			s.SetAttributes(attribute.Int64(genAIInputTokens, u.InputTokens), attribute.Int64(genAIOutputTokens, u.OutputTokens))
			if u.CacheReadTokens > 0 {
				s.SetAttributes(attribute.Int64(genAICacheRead, u.CacheReadTokens))
			}
			if u.CacheWriteTokens > 0 {
				s.SetAttributes(attribute.Int64(genAICacheWrite, u.CacheWriteTokens))
			}
		}
	}
	s.End()
}

type turnTraceKey struct{}

// WithTurnTrace returns a context under which a call on a root session reports its turn
// span's context — once, when the span starts, on the call's goroutine — to fn with the
// session id (sub-workflow children never call it). A host uses it to hand the trace on:
// the continuation payload's traceparent (TraceParent). Without tracing fn is never called.
func WithTurnTrace(ctx context.Context, fn func(sessionID string, sc trace.SpanContext)) context.Context {
	return context.WithValue(ctx, turnTraceKey{}, fn)
}

// TraceParent is sc as a W3C traceparent header value ("00-<trace id>-<span id>-<flags>"),
// "" for an invalid one.
func TraceParent(sc trace.SpanContext) string {
	if !sc.IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(trace.ContextWithSpanContext(context.Background(), sc), c)
	return c.Get("traceparent")
}

// ContextWithTraceParent returns ctx carrying the remote span context a W3C traceparent
// names, so the next span started under it continues that trace as its child; a malformed
// or empty value leaves ctx as it is.
func ContextWithTraceParent(ctx context.Context, traceparent string) context.Context {
	if traceparent == "" {
		return ctx
	}
	return propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent})
}
