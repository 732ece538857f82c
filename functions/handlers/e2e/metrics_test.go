package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/archmax-ai/archmax/core/hostconfig"
	"github.com/archmax-ai/archmax/core/metrics"
	"github.com/archmax-ai/archmax/core/pricing"
	"github.com/archmax-ai/archmax/functions/handlers/assembly"
	"github.com/archmax-ai/archmax/functions/handlers/deliveries"
	"github.com/archmax-ai/archmax/functions/handlers/httpapi"
	"github.com/archmax-ai/archmax/functions/handlers/metering"
	"github.com/archmax-ai/archmax/functions/handlers/starts"
	"github.com/archmax-ai/archmax/functions/handlers/wakes"
)

// logGroup is one function's log as Lambda captures it: every line the function writes.
// Safe for concurrent use.
type logGroup struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (g *logGroup) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.buf.Write(p)
}

// take returns the JSON lines written since the last take.
func (g *logGroup) take(t *testing.T) []map[string]any {
	t.Helper()
	g.mu.Lock()
	raw := g.buf.String()
	g.buf.Reset()
	g.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(raw), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("a log line that is not JSON: %s", l)
		}
		out = append(out, m)
	}
	return out
}

// emitted is what one stretch of a function's log says as metrics: each metric's values
// (every sample of a latency), the dimension values of each, the error codes and the
// sessionId properties.
type emitted struct {
	values   map[string][]float64
	dims     map[string][]map[string]string // metric → the dimension values of each line
	codes    map[string]float64
	sessions []string
}

func (e emitted) sum(name string) float64 {
	var s float64
	for _, v := range e.values[name] {
		s += v
	}
	return s
}

// metricsIn reads the embedded-metric-format lines among lines as CloudWatch would: each
// metric of a directive is the top-level member of its name (a number or an array of
// numbers), each dimension a top-level string member. A line whose directive names a
// member that is not there, or a session id as a dimension, fails the test.
func metricsIn(t *testing.T, fn string, lines []map[string]any) emitted {
	t.Helper()
	e := emitted{values: map[string][]float64{}, dims: map[string][]map[string]string{}, codes: map[string]float64{}}
	for _, l := range lines {
		aws, ok := l["_aws"].(map[string]any)
		if !ok {
			continue
		}
		if _, ok := aws["Timestamp"].(float64); !ok {
			t.Errorf("%s: an EMF line without a Timestamp: %v", fn, l)
		}
		dirs, _ := aws["CloudWatchMetrics"].([]any)
		for _, d := range dirs {
			dir, _ := d.(map[string]any)
			if dir["Namespace"] != metrics.Namespace {
				t.Errorf("%s: namespace %v", fn, dir["Namespace"])
			}
			dimValues := map[string]string{}
			sets, _ := dir["Dimensions"].([]any)
			for _, s := range sets {
				for _, n := range s.([]any) {
					name := n.(string)
					v, ok := l[name].(string)
					if !ok || name == metrics.PropSession || name == metrics.PropSessions {
						t.Errorf("%s: dimension %q (value %v)", fn, name, l[name])
					}
					dimValues[name] = v
				}
			}
			ms, _ := dir["Metrics"].([]any)
			for _, m := range ms {
				def := m.(map[string]any)
				name := def["Name"].(string)
				if def["Unit"] != string(metrics.Catalog[name]) {
					t.Errorf("%s: %s in %v, want %s", fn, name, def["Unit"], metrics.Catalog[name])
				}
				switch v := l[name].(type) {
				case float64:
					e.values[name] = append(e.values[name], v)
				case []any:
					for _, x := range v {
						e.values[name] = append(e.values[name], x.(float64))
					}
				default:
					t.Errorf("%s: metric %s has no value in %v", fn, name, l)
				}
				e.dims[name] = append(e.dims[name], dimValues)
				if name == metrics.Errors {
					e.codes[dimValues[metrics.DimCode]] += l[name].(float64)
				}
			}
		}
		if id, ok := l[metrics.PropSession].(string); ok && !slices.Contains(e.sessions, id) {
			e.sessions = append(e.sessions, id)
		}
	}
	return e
}

// meteredFunctions are the turn, deliver, wake and sessions functions as their mains build
// them — metering.Handler around the handler, the function's JSON log (here its logGroup)
// given to both — each on its own assembly.
type meteredFunctions struct {
	turn, deliver, wake, sessions func(context.Context, json.RawMessage) (any, error)
	logs                          map[string]*logGroup
}

func (s *stack) meteredBoot(t *testing.T) *meteredFunctions {
	t.Helper()
	f := &meteredFunctions{logs: map[string]*logGroup{}}
	logOf := func(fn string) *slog.Logger {
		f.logs[fn] = &logGroup{}
		return slog.New(slog.NewJSONHandler(f.logs[fn], nil))
	}
	raw := func(h func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)) func(context.Context, json.RawMessage) (any, error) {
		return func(ctx context.Context, in json.RawMessage) (any, error) {
			var req events.APIGatewayV2HTTPRequest
			if err := json.Unmarshal(in, &req); err != nil {
				return nil, err
			}
			return h(ctx, req)
		}
	}
	// assembly.FromEnv with the function's log, on the stack's clock (stack.assemble)
	assemble := func(log *slog.Logger) *assembly.Assembly {
		cfg, err := assembly.ConfigFromEnv(func(k string) string { return s.env[k] })
		if err != nil {
			t.Fatal(err)
		}
		cfg.Clock = s.clock
		a, err := assembly.Open(context.Background(), cfg, log)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	log := logOf("turn")
	a := assemble(log)
	f.turn = metering.Handler("turn", log, starts.New(a.Engines, a.Runner, nil, log, httpapi.WithPolicy(a.Access)).Handle)
	log = logOf("deliver")
	a = assemble(log)
	f.deliver = metering.Handler("deliver", log, deliveries.New(a.Engines, a.Runner, log, httpapi.WithPolicy(a.Access)).Handle)
	log = logOf("wake")
	a = assemble(log)
	f.wake = metering.Handler("wake", log, wakes.New(a.Engines, a.Runner, log, s.now()).Handle)
	log = logOf("sessions")
	a = assemble(log)
	f.sessions = raw(metering.Handler("sessions", log, httpapi.New(a.Engines, nil, log, httpapi.WithPolicy(a.Access)).HandleRead))
	return f
}

// run invokes fn with event as the Lambda runtime does (JSON in, JSON out) and returns the
// answer and the metrics the invocation wrote on the function's log.
func (f *meteredFunctions) run(t *testing.T, fn string, event any) (json.RawMessage, emitted) {
	t.Helper()
	h := map[string]func(context.Context, json.RawMessage) (any, error){"turn": f.turn, "deliver": f.deliver, "wake": f.wake, "sessions": f.sessions}[fn]
	in, err := json.Marshal(event)
	if err != nil {
		t.Fatal(err)
	}
	out, err := h(context.Background(), in)
	if err != nil {
		t.Fatalf("%s: %v", fn, err)
	}
	raw, _ := json.Marshal(out)
	for other, g := range f.logs {
		if other != fn && len(g.take(t)) > 0 {
			t.Errorf("invoking %s wrote on %s's log", fn, other)
		}
	}
	return raw, metricsIn(t, fn, f.logs[fn].take(t))
}

// httpAnswer decodes an API Gateway response.
func httpAnswer(t *testing.T, raw json.RawMessage) answer {
	t.Helper()
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(raw, &resp); err != nil {
		t.Fatalf("not an API Gateway response: %s", raw)
	}
	return decodeAnswer(t, resp)
}

// eventCounts counts a session's stored lifecycle events by type, and sums the model-usage
// events' counts and cost.
func (s *stack) eventCounts(t *testing.T, id string) map[string]float64 {
	t.Helper()
	c := map[string]float64{}
	for _, ev := range s.storedEvents(t, id) {
		typ, _ := ev["type"].(string)
		c[typ]++
		if typ == "model-usage" {
			for k, name := range map[string]string{"inputTokens": metrics.InputTokens, "outputTokens": metrics.OutputTokens,
				"cacheReadTokens": metrics.CacheReadTokens, "cacheCreationTokens": metrics.CacheWriteTokens, "costUsd": metrics.CostUsd} {
				n, _ := ev[k].(float64)
				c[name] += n
			}
		}
	}
	return c
}

// The metering acceptance (MT22-1…MT22-6): the functions, built as their mains build them,
// write embedded-metric-format lines on their logs, and across one flow — a start that is
// throttled once, blocks a tool and parks on a timer; an early wake; a delivery; a wake on
// time; a stale continuation; a park the sweep wakes late; a turn that spends its budget;
// refused requests; notifications the bus refuses — every metric of
// metrics.Catalog is written at least once, under its function and workflow, with the
// value the flow determines: the scripted counts, and the stored events' counts and sums.
func TestEveryMetricIsEmitted(t *testing.T) {
	s := newStack(t, "metrics.model.yaml")
	s.virtualTime()
	// a bus that refuses every PutEvents (not retried: a 400), so each publish fails
	bus := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"__type":"AccessDeniedException","message":"the bus refuses"}`)
	}))
	t.Cleanup(bus.Close)
	t.Setenv("AWS_ENDPOINT_URL_EVENTBRIDGE", bus.URL) // the SDK's own setting, as locally
	s3c := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(s.env[assembly.EnvS3Endpoint]), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
	if _, err := s3c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("specs/" + hostconfig.File),
		Body: strings.NewReader("events:\n  eventBridge: { bus: archmax-e2e }\nbudgets:\n  workflows:\n    meter-budget:\n      lifetime: { tokens: 100 }\n")}); err != nil {
		t.Fatal(err)
	}
	s.env[pricing.EnvInput], s.env[pricing.EnvOutput], s.env[pricing.EnvCacheRead], s.env[pricing.EnvCacheWrite] = "3", "15", "0.3", "3.75"
	f := s.meteredBoot(t)
	seen := map[string]bool{}
	note := func(e emitted) {
		for n := range e.values {
			seen[n] = true
		}
	}
	want := func(what string, e emitted, name string, v float64) {
		t.Helper()
		if got := e.sum(name); len(e.values[name]) == 0 || math.Abs(got-v) > 1e-9 {
			t.Errorf("%s: %s = %v (%d values), want %v", what, name, got, len(e.values[name]), v)
		}
	}
	wantWorkflow := func(what string, e emitted, wf string) {
		t.Helper()
		for name, ds := range e.dims {
			for _, d := range ds {
				if name != metrics.Errors && name != metrics.NotificationPublishFailures && d[metrics.DimWorkflow] != wf {
					t.Errorf("%s: %s under workflow %q, want %q", what, name, d[metrics.DimWorkflow], wf)
				}
			}
		}
	}

	// A, turn 1: a start on the turn function
	raw, e := f.run(t, "turn", startReq("meter", `{"message":"Where is parcel 7?"}`))
	a := httpAnswer(t, raw)
	idA, _ := a.body["sessionId"].(string)
	if a.status != http.StatusOK || a.body["kind"] != "parked" || idA == "" {
		t.Fatalf("A's start: %d %v", a.status, a.body)
	}
	ev := s.eventCounts(t, idA)
	if ev["tool-blocked"] != 1 || ev["tool-called"] < 2 || ev["model-usage"] != 4 {
		t.Fatalf("A's stored events: %v", ev)
	}
	for _, m := range []struct {
		name string
		v    float64
	}{
		{metrics.Turns, 1}, {metrics.Parks, 1}, {metrics.ToolBlocks, 1}, {metrics.ToolCalls, ev["tool-called"]},
		{metrics.Steps, ev["state-enter"]}, {metrics.ModelCalls, 4}, {metrics.ModelThrottles, 1},
		{metrics.InputTokens, ev[metrics.InputTokens]}, {metrics.OutputTokens, ev[metrics.OutputTokens]},
		{metrics.CacheReadTokens, 700}, {metrics.CacheWriteTokens, 100}, {metrics.CostUsd, ev[metrics.CostUsd]},
	} {
		want("A's start", e, m.name, m.v)
	}
	if ev[metrics.CostUsd] <= 0 || len(e.values[metrics.ModelLatency]) != 4 || len(e.values[metrics.TurnLatency]) != 1 ||
		e.sum(metrics.NotificationPublishFailures) < 1 || !slices.Equal(e.sessions, []string{idA}) {
		t.Errorf("A's start: cost %v, model latencies %v, turn latencies %v, publish failures %v, sessions %v",
			ev[metrics.CostUsd], e.values[metrics.ModelLatency], e.values[metrics.TurnLatency], e.values[metrics.NotificationPublishFailures], e.sessions)
	}
	wantWorkflow("A's start", e, "meter")
	if d := e.dims[metrics.Turns]; len(d) != 1 || d[0][metrics.DimFunction] != "turn" {
		t.Errorf("Turns dimensions %v", d)
	}
	note(e)
	schedule := s.sched.Schedules()
	if len(schedule) != 1 {
		t.Fatalf("schedules %+v", schedule)
	}

	// a refused start: no workflow ran, one error by its code
	_, e = f.run(t, "turn", startReq("meter", `{not json`))
	if e.codes["InvalidRequestError"] != 1 || len(e.codes) != 1 {
		t.Errorf("a bad request's errors: %v", e.codes)
	}
	note(e)

	// the early wake (its schedule, fired before the park is due): skipped
	_, e = f.run(t, "wake", json.RawMessage(schedule[0].Target.Input))
	want("early wake", e, metrics.WakesSkipped, 1)
	note(e)

	// A, turn 2: the courier's delivery through the deliver function; A waits again
	raw, e = f.run(t, "deliver", deliveryReq(idA, jsonText(t, map[string]any{"trigger": "courier", "parkId": a.parkID(),
		"variables": map[string]any{"scan": "delivered"}})))
	if d := httpAnswer(t, raw); d.status != http.StatusOK || d.body["kind"] != "parked" {
		t.Fatalf("delivery: %d %v", d.status, d.body)
	}
	want("delivery", e, metrics.Deliveries, 1)
	want("delivery", e, metrics.Turns, 1)
	want("delivery", e, metrics.Parks, 1)
	want("delivery", e, metrics.ModelCalls, 2)
	wantWorkflow("delivery", e, "meter")
	note(e)

	// A, turn 3: its timer, fired when due — on time
	schedule = s.sched.Schedules()
	if len(schedule) != 1 {
		t.Fatalf("schedules after the delivery %+v", schedule)
	}
	s.advanceTo(schedule[0].At)
	raw, e = f.run(t, "wake", json.RawMessage(schedule[0].Target.Input))
	var woke wakes.Result
	if err := json.Unmarshal(raw, &woke); err != nil || woke.Outcome != "completed" {
		t.Fatalf("A's wake: %s", raw)
	}
	want("wake on time", e, metrics.WakesOnTime, 1)
	want("wake on time", e, metrics.Turns, 1)
	if _, ok := e.values[metrics.Deliveries]; ok {
		t.Errorf("a timer's wake counted as a delivery: %v", e.values[metrics.Deliveries])
	}
	wantWorkflow("wake on time", e, "meter")
	note(e)

	// a continuation of a turn that is no longer A's: served, skipped
	_, e = f.run(t, "turn", json.RawMessage(`{"archmaxContinue":{"sessionId":"`+idA+`","turnId":"tq3kz7m2x4c6v8b1n"}}`))
	want("stale continuation", e, metrics.Continuations, 1)
	wantWorkflow("stale continuation", e, "meter")
	if _, ok := e.values[metrics.Turns]; ok {
		t.Errorf("a skipped continuation counted a turn")
	}
	note(e)

	// B: waits; its schedule never fires, the sweep finds it overdue and wakes it — late
	raw, _ = f.run(t, "turn", startReq("meter", `{"message":"Where is parcel 8?"}`))
	b := httpAnswer(t, raw)
	at, err := time.Parse(time.RFC3339Nano, b.resumeAt())
	if err != nil || b.body["kind"] != "parked" {
		t.Fatalf("B's start: %v %v", b.body, err)
	}
	s.advanceTo(at.Add(time.Second))
	_, e = f.run(t, "wake", map[string]any{"detail-type": "Scheduled Event", "source": "aws.events", "detail": map[string]any{}})
	want("sweep", e, metrics.SweepFinds, 1)
	want("sweep", e, metrics.WakesLate, 1)
	want("sweep", e, metrics.Turns, 1)
	wantWorkflow("sweep", e, "meter")
	note(e)

	// C: its first step spends more than its session's budget; the turn stops, rejected
	raw, e = f.run(t, "turn", startReq("meter-budget", `{"message":"Order 40 more parcels."}`))
	c := httpAnswer(t, raw)
	if c.status != http.StatusOK || c.body["kind"] != "rejected" {
		t.Fatalf("C's start: %d %v", c.status, c.body)
	}
	want("budget", e, metrics.BudgetBreaches, 1)
	wantWorkflow("budget", e, "meter-budget")
	note(e)
	// a new turn on C is refused for the spent budget: 429 budget_exceeded, a breach too
	idC, _ := c.body["sessionId"].(string)
	raw, e = f.run(t, "turn", turnReq("meter-budget", idC, `{"message":"And 40 more."}`))
	if r := httpAnswer(t, raw); r.status != http.StatusTooManyRequests || r.code() != metrics.BudgetExceeded || e.codes[metrics.BudgetExceeded] != 1 {
		t.Errorf("a new turn on C: %d %v, errors %v", r.status, r.body, e.codes)
	}
	want("refused for the budget", e, metrics.BudgetBreaches, 1)
	note(e)
	// the sessions function: a session that is not there is a refusal, counted by code
	_, e = f.run(t, "sessions", sessionGet("no-such-session"))
	if e.codes["SessionNotFoundError"] != 1 {
		t.Errorf("the sessions function's errors: %v", e.codes)
	}
	note(e)

	for name := range metrics.Catalog {
		if !seen[name] {
			t.Errorf("metric %s was never emitted", name)
		}
	}
}
