// Package metrics counts what one function invocation did — turns, steps, parks, wakes,
// deliveries, tool and model calls, tokens, cost, errors — and writes it as CloudWatch
// embedded metric format (EMF) lines: JSON log lines that CloudWatch Logs turns into metrics
// of the namespace archmax, without an API call (rules MT22-1…MT22-4).
//
// A Recorder lives for one invocation: With puts it in the context, the engine's lifecycle
// events reach it through Observe, the handlers and the model adapter add what the events do
// not carry (Add, Latency, Error, ModelCall, ModelThrottle), and Flush writes the lines on
// the invocation's log. Every function of this package is a no-op on a context without a
// Recorder, so code that counts never checks for one.
//
// The lines: one per workflow the invocation touched (dimension sets [workflow, function]
// and [function]; a call whose workflow is not known has [function] only), and one per error
// code (dimension set [function, code]). A session id is never a dimension: the first one an
// invocation touched is the plain property sessionId, every one of them (up to MaxSessionIDs)
// sessionIds. The package is pure: it imports no AWS SDK and makes no I/O beyond the logger.
package metrics

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/archmax-ai/archmax/core/events"
)

// Namespace is the CloudWatch namespace of every metric.
const Namespace = "archmax"

// Unit is an EMF unit (CloudWatch's StandardUnit).
type Unit string

// The units the metrics use.
const (
	Count        Unit = "Count"
	Milliseconds Unit = "Milliseconds"
	None         Unit = "None"
)

// The metric names (docs/operations.md "Metrics" lists each with its unit and meaning;
// TestDocsListTheCatalog holds the two together).
const (
	Turns                       = "Turns"
	TurnLatency                 = "TurnLatency"
	Steps                       = "Steps"
	Parks                       = "Parks"
	WakesOnTime                 = "WakesOnTime"
	WakesLate                   = "WakesLate"
	WakesSkipped                = "WakesSkipped"
	Deliveries                  = "Deliveries"
	Continuations               = "Continuations"
	ToolCalls                   = "ToolCalls"
	ToolBlocks                  = "ToolBlocks"
	ModelCalls                  = "ModelCalls"
	ModelLatency                = "ModelLatency"
	ModelThrottles              = "ModelThrottles"
	InputTokens                 = "InputTokens"
	OutputTokens                = "OutputTokens"
	CacheReadTokens             = "CacheReadTokens"
	CacheWriteTokens            = "CacheWriteTokens"
	CostUsd                     = "CostUsd"
	SweepFinds                  = "SweepFinds"
	BudgetBreaches              = "BudgetBreaches"
	NotificationPublishFailures = "NotificationPublishFailures"
	Errors                      = "Errors"
)

// Catalog is every metric a function can emit, with its unit.
var Catalog = map[string]Unit{
	Turns: Count, TurnLatency: Milliseconds, Steps: Count, Parks: Count,
	WakesOnTime: Count, WakesLate: Count, WakesSkipped: Count, Deliveries: Count, Continuations: Count,
	ToolCalls: Count, ToolBlocks: Count,
	ModelCalls: Count, ModelLatency: Milliseconds, ModelThrottles: Count,
	InputTokens: Count, OutputTokens: Count, CacheReadTokens: Count, CacheWriteTokens: Count, CostUsd: None,
	SweepFinds: Count, BudgetBreaches: Count, NotificationPublishFailures: Count, Errors: Count,
}

// The dimension names, and the property that names a session.
const (
	DimFunction = "function"
	DimWorkflow = "workflow"
	DimCode     = "code"
	PropSession = "sessionId"
	// PropSessions lists every session an invocation touched (up to MaxSessionIDs).
	PropSessions = "sessionIds"
)

// BudgetExceeded is the code of a budget breach (session.BudgetExceededCode, matched as a
// string): a warning event with this code (a turn stopped on a spent budget) and an error
// of this code (a turn refused for one) each count one BudgetBreaches.
const BudgetExceeded = "budget_exceeded"

// Bounds: CloudWatch takes at most MaxMetricsPerDirective metrics per directive and
// MaxValues values per metric per line; an invocation reports at most MaxCodes distinct
// error codes (the rest as OtherCode) and names at most MaxSessionIDs sessions.
const (
	MaxMetricsPerDirective = 100
	MaxValues              = 100
	MaxCodes               = 10
	MaxCodeBytes           = 64
	MaxSessionIDs          = 20
	// OtherCode stands for an error code that is not a plain name or is past MaxCodes.
	OtherCode = "other"
)

// Recorder accumulates one invocation's metrics. Safe for concurrent use (the engine's
// events arrive on several goroutines when a session runs children).
type Recorder struct {
	function string
	log      *slog.Logger
	now      func() time.Time

	mu       sync.Mutex
	workflow string             // the workflow of the call running now ("" unknown)
	byWf     map[string]*bucket // by workflow
	codes    map[string]float64 // Errors by code
	sessions []string
}

type bucket struct {
	sums    map[string]float64
	samples map[string][]float64
}

// New returns a Recorder of function fn (the dimension function: turn, decide, deliver,
// wake, sessions, stream) that Flush writes to log (nil: slog.Default()), stamped by now
// (nil: time.Now).
func New(fn string, log *slog.Logger, now func() time.Time) *Recorder {
	if log == nil {
		log = slog.Default()
	}
	if now == nil {
		now = time.Now
	}
	return &Recorder{function: fn, log: log, now: now, byWf: map[string]*bucket{}, codes: map[string]float64{}}
}

type key struct{}

// With returns ctx carrying r.
func With(ctx context.Context, r *Recorder) context.Context { return context.WithValue(ctx, key{}, r) }

// From returns the Recorder of ctx, nil when there is none (every method of a nil Recorder
// is a no-op).
func From(ctx context.Context) *Recorder {
	r, _ := ctx.Value(key{}).(*Recorder)
	return r
}

// Workflow sets the workflow the metrics recorded from now on count under (the engine
// lookup of each call sets it).
func (r *Recorder) Workflow(wf string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.workflow = wf
}

// Session notes a session the invocation touched (the sessionId property).
func (r *Recorder) Session(id string) {
	if r == nil || id == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.session(id)
}

func (r *Recorder) session(id string) {
	if id != "" && len(r.sessions) < MaxSessionIDs && !slices.Contains(r.sessions, id) {
		r.sessions = append(r.sessions, id)
	}
}

func (r *Recorder) bucket() *bucket {
	b := r.byWf[r.workflow]
	if b == nil {
		b = &bucket{sums: map[string]float64{}, samples: map[string][]float64{}}
		r.byWf[r.workflow] = b
	}
	return b
}

// Add adds v to the counter name (a Catalog name; Errors goes through Error; any other
// name is ignored, so nothing outside Catalog is ever emitted). Adding 0 still reports the
// metric, so an alarm sees a 0 rather than no data.
func (r *Recorder) Add(name string, v float64) {
	if _, ok := Catalog[name]; r == nil || !ok || name == Errors {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bucket().sums[name] += v
}

// Latency records one sample of the latency metric name (a Catalog name in
// Milliseconds; any other is ignored).
func (r *Recorder) Latency(name string, d time.Duration) {
	if r == nil || Catalog[name] != Milliseconds {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.bucket()
	b.samples[name] = append(b.samples[name], float64(d.Microseconds())/1000)
}

// Error counts one error of code (an error name such as "InvalidRequestError"); a code that
// is not a plain name of at most MaxCodeBytes letters, digits, '_' or '.', or one past
// MaxCodes distinct codes, counts as OtherCode. The code BudgetExceeded also counts
// BudgetBreaches.
func (r *Recorder) Error(code string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if code == BudgetExceeded {
		r.bucket().sums[BudgetBreaches]++
	}
	if !plain(code) {
		code = OtherCode
	}
	if _, seen := r.codes[code]; !seen && len(r.codes) >= MaxCodes {
		code = OtherCode
	}
	r.codes[code]++
}

// Fail counts err as an Error of its name: the Name() of an error in its chain that has
// one, else "InternalError".
func (r *Recorder) Fail(err error) {
	if r == nil || err == nil {
		return
	}
	r.Error(CodeOf(err))
}

// CodeOf is err's code: the Name() of the first error in its chain that has one, else
// "InternalError".
func CodeOf(err error) string {
	var named interface{ Name() string }
	if errors.As(err, &named) {
		return named.Name()
	}
	return "InternalError"
}

func plain(code string) bool {
	if code == "" || len(code) > MaxCodeBytes {
		return false
	}
	for _, c := range code {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// Observe counts one lifecycle event (a session.WithEventObserver function): state-enter
// as Steps, tool-called as ToolCalls, tool-blocked as ToolBlocks, parked as Parks,
// delivered (but a timer's, which Wakes count) as Deliveries, a warning of code
// BudgetExceeded (a turn stopped on a spent budget) as BudgetBreaches, and model-usage's
// token counts and costUsd as InputTokens, OutputTokens, CacheReadTokens, CacheWriteTokens
// and CostUsd. Its session becomes a sessionId.
func (r *Recorder) Observe(ev events.Event) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.session(ev.SessionID)
	b := r.bucket()
	switch ev.Type {
	case events.StateEnter:
		b.sums[Steps]++
	case events.ToolCalled:
		b.sums[ToolCalls]++
	case events.ToolBlocked:
		b.sums[ToolBlocks]++
	case events.Parked:
		b.sums[Parks]++
	case events.Delivered:
		if ev.Str("trigger") != "timer" { // session.TimerTrigger: a wake, counted by the wake function
			b.sums[Deliveries]++
		}
	case events.Warning:
		if ev.Str("code") == BudgetExceeded { // the engine's stop on a spent budget (session.BudgetExceededCode)
			b.sums[BudgetBreaches]++
		}
	case events.ModelUsage:
		b.sums[InputTokens] += number(ev.Data["inputTokens"])
		b.sums[OutputTokens] += number(ev.Data["outputTokens"])
		b.sums[CacheReadTokens] += number(ev.Data["cacheReadTokens"])
		b.sums[CacheWriteTokens] += number(ev.Data["cacheCreationTokens"])
		if c, ok := ev.Data["costUsd"]; ok {
			b.sums[CostUsd] += number(c)
		}
	}
}

// Also returns an event observer that passes each event to the Recorder of ctx and then to
// fn: for a host that observes a call's events itself (the stream function) and must not
// hide them from the metrics.
func Also(ctx context.Context, fn func(events.Event)) func(events.Event) {
	r := From(ctx)
	if r == nil {
		return fn
	}
	return func(ev events.Event) {
		r.Observe(ev)
		fn(ev)
	}
}

func number(v any) float64 {
	switch n := v.(type) {
	case int:
		return float64(n)
	case int64:
		return float64(n)
	case int32:
		return float64(n)
	case float64:
		return n
	case json.Number:
		f, _ := n.Float64()
		return f
	}
	return 0
}

// ModelCall records one model call of the adapter (ModelCalls, and its latency, every
// attempt included, as ModelLatency); ModelThrottles is reported with it, 0 when none, so
// the throttling rate has a denominator and a numerator. It has the shape of the Bedrock
// adapter's OnCall hook.
func ModelCall(ctx context.Context, took time.Duration, _ error) {
	r := From(ctx)
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.bucket()
	b.sums[ModelCalls]++
	b.sums[ModelThrottles] += 0
	b.samples[ModelLatency] = append(b.samples[ModelLatency], float64(took.Microseconds())/1000)
}

// ModelThrottle counts one attempt the model provider refused for throttling
// (ThrottlingException or HTTP 429), retried or not: the Bedrock adapter's OnThrottle hook.
func ModelThrottle(ctx context.Context) { From(ctx).Add(ModelThrottles, 1) }

// Flush writes what was recorded since the last Flush as EMF lines on the Recorder's log
// (Lines), at level INFO with the message "metrics" whatever level the log is set to (a
// metric is not a message to filter), and forgets it. Safe to call more than once: a later
// call writes only what came after.
func Flush(ctx context.Context) {
	r := From(ctx)
	if r == nil {
		return
	}
	h := r.log.Handler()
	for _, line := range r.Lines() {
		rec := slog.NewRecord(r.now(), slog.LevelInfo, "metrics", 0)
		rec.Add(line...)
		_ = h.Handle(ctx, rec)
	}
}

// Lines drains the Recorder: each element is the attributes of one EMF log line — the
// `_aws` metadata (Timestamp in epoch milliseconds; CloudWatchMetrics, one directive of
// Namespace, Dimensions and Metrics [{Name, Unit}]), the dimension values and each metric's
// value (a number, or an array of at most MaxValues samples for a latency) as top-level
// members, and the session properties. Metrics are in name order; the workflow lines come in
// workflow order, then the error lines in code order. Nothing recorded: no lines.
func (r *Recorder) Lines() [][]any {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	byWf, codes, sessions := r.byWf, r.codes, r.sessions
	r.byWf, r.codes = map[string]*bucket{}, map[string]float64{}
	r.mu.Unlock()
	ts := r.now().UnixMilli()
	var props []any
	if len(sessions) > 0 {
		props = append(props, slog.String(PropSession, sessions[0]))
		if len(sessions) > 1 {
			props = append(props, slog.Any(PropSessions, sessions))
		}
	}
	var lines [][]any
	for _, wf := range slices.Sorted(maps.Keys(byWf)) {
		b := byWf[wf]
		dims := [][]string{{DimWorkflow, DimFunction}, {DimFunction}}
		base := []any{slog.String(DimFunction, r.function), slog.String(DimWorkflow, wf)}
		if wf == "" {
			dims, base = [][]string{{DimFunction}}, base[:1]
		}
		for _, round := range rounds(b) {
			for len(round) > 0 {
				n := min(len(round), MaxMetricsPerDirective)
				var metrics []map[string]string
				attrs := slices.Clone(base)
				for _, e := range round[:n] {
					metrics = append(metrics, map[string]string{"Name": e.name, "Unit": string(unitOf(e.name))})
					attrs = append(attrs, slog.Any(e.name, e.value))
				}
				lines = append(lines, emf(ts, dims, metrics, attrs, props))
				round = round[n:]
			}
		}
	}
	for _, code := range slices.Sorted(maps.Keys(codes)) {
		lines = append(lines, emf(ts, [][]string{{DimFunction, DimCode}},
			[]map[string]string{{"Name": Errors, "Unit": string(Count)}},
			[]any{slog.String(DimFunction, r.function), slog.String(DimCode, code), slog.Float64(Errors, codes[code])}, props))
	}
	return lines
}

type entry struct {
	name  string
	value any // float64, or []float64 samples
}

// rounds are a bucket's metric values in name order: the first round every counter and up
// to MaxValues samples of each latency, each later round the next MaxValues samples of the
// latencies that have more.
func rounds(b *bucket) [][]entry {
	var out [][]entry
	var first []entry
	for _, n := range slices.Sorted(maps.Keys(b.sums)) {
		if _, ok := b.samples[n]; !ok {
			first = append(first, entry{n, b.sums[n]})
		}
	}
	out = append(out, first)
	for i := 0; ; i++ {
		var round []entry
		for _, n := range slices.Sorted(maps.Keys(b.samples)) {
			s := b.samples[n]
			if lo := i * MaxValues; lo < len(s) {
				chunk := s[lo:min(len(s), lo+MaxValues)]
				if len(chunk) == 1 {
					round = append(round, entry{n, chunk[0]})
				} else {
					round = append(round, entry{n, chunk})
				}
			}
		}
		if len(round) == 0 {
			break
		}
		if i == 0 {
			out[0] = append(out[0], round...)
			slices.SortFunc(out[0], func(a, b entry) int { return strings.Compare(a.name, b.name) })
		} else {
			out = append(out, round)
		}
	}
	return out
}

func unitOf(name string) Unit {
	if u, ok := Catalog[name]; ok {
		return u
	}
	return None
}

func emf(ts int64, dims [][]string, metrics []map[string]string, attrs, props []any) []any {
	meta := slog.Group("_aws", slog.Int64("Timestamp", ts), slog.Any("CloudWatchMetrics", []map[string]any{{
		"Namespace": Namespace, "Dimensions": dims, "Metrics": metrics}}))
	return append(append([]any{meta}, attrs...), props...)
}
