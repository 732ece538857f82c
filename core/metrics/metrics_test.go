package metrics

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/events"
)

// CloudWatch's StandardUnit values (the EMF specification's Unit).
var standardUnits = []string{"Seconds", "Microseconds", "Milliseconds", "Bytes", "Kilobytes", "Megabytes", "Gigabytes",
	"Terabytes", "Bits", "Kilobits", "Megabits", "Gigabits", "Terabits", "Percent", "Count", "Bytes/Second",
	"Kilobytes/Second", "Megabytes/Second", "Gigabytes/Second", "Terabytes/Second", "Bits/Second", "Kilobits/Second",
	"Megabits/Second", "Gigabits/Second", "Terabits/Second", "Count/Second", "None"}

// CheckEMF holds one decoded log line to the embedded metric format specification: a root
// `_aws` object with a numeric Timestamp (epoch ms) and a CloudWatchMetrics array of
// directives, each with a Namespace (1–255 characters), Dimensions (an array of dimension
// sets of at most 30 names, each naming a top-level string member) and Metrics (1–100
// {Name, Unit} with a standard unit, each naming a top-level member that is a number or an
// array of at most 100 numbers), and no member the specification does not define. It
// returns the metric values by name.
func CheckEMF(line map[string]any) (map[string]any, error) {
	aws, ok := line["_aws"].(map[string]any)
	if !ok {
		return nil, errors.New("no _aws object")
	}
	for k := range aws {
		if k != "Timestamp" && k != "CloudWatchMetrics" {
			return nil, fmt.Errorf("_aws has a member %q the specification does not define", k)
		}
	}
	if ts, ok := aws["Timestamp"].(float64); !ok || ts <= 0 || ts != float64(int64(ts)) {
		return nil, fmt.Errorf("_aws.Timestamp %v is not epoch milliseconds", aws["Timestamp"])
	}
	dirs, ok := aws["CloudWatchMetrics"].([]any)
	if !ok || len(dirs) == 0 {
		return nil, errors.New("_aws.CloudWatchMetrics is not a non-empty array")
	}
	values := map[string]any{}
	for _, d := range dirs {
		dir, ok := d.(map[string]any)
		if !ok {
			return nil, errors.New("a directive is not an object")
		}
		for k := range dir {
			if k != "Namespace" && k != "Dimensions" && k != "Metrics" {
				return nil, fmt.Errorf("a directive has a member %q", k)
			}
		}
		if ns, ok := dir["Namespace"].(string); !ok || ns == "" || len(ns) > 255 {
			return nil, fmt.Errorf("namespace %v", dir["Namespace"])
		}
		sets, ok := dir["Dimensions"].([]any)
		if !ok {
			return nil, errors.New("Dimensions is not an array")
		}
		for _, s := range sets {
			set, ok := s.([]any)
			if !ok || len(set) > 30 {
				return nil, fmt.Errorf("dimension set %v", s)
			}
			for _, n := range set {
				name, _ := n.(string)
				if v, ok := line[name].(string); !ok || v == "" {
					return nil, fmt.Errorf("dimension %v has no top-level string value", n)
				}
			}
		}
		ms, ok := dir["Metrics"].([]any)
		if !ok || len(ms) == 0 || len(ms) > 100 {
			return nil, fmt.Errorf("Metrics has %d entries", len(ms))
		}
		for _, m := range ms {
			def, ok := m.(map[string]any)
			name, _ := def["Name"].(string)
			unit, _ := def["Unit"].(string)
			if !ok || name == "" || len(name) > 1024 || !slices.Contains(standardUnits, unit) || len(def) != 2 {
				return nil, fmt.Errorf("metric definition %v", m)
			}
			switch v := line[name].(type) {
			case float64:
			case []any:
				if len(v) == 0 || len(v) > 100 {
					return nil, fmt.Errorf("%s has %d values", name, len(v))
				}
				for _, x := range v {
					if _, ok := x.(float64); !ok {
						return nil, fmt.Errorf("%s holds %v", name, x)
					}
				}
			default:
				return nil, fmt.Errorf("metric %s has no top-level numeric value (%v)", name, line[name])
			}
			values[name] = line[name]
		}
	}
	return values, nil
}

// flushed runs Flush through the JSON handler the functions log with and decodes the lines.
func flushed(t *testing.T, r *Recorder) []map[string]any {
	t.Helper()
	var buf bytes.Buffer
	// a log set to warnings still gets the metrics
	r.log = slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	Flush(With(context.Background(), r))
	var out []map[string]any
	for _, l := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatalf("not a JSON line: %s", l)
		}
		if _, err := CheckEMF(m); err != nil {
			t.Fatalf("not EMF: %v\n%s", err, l)
		}
		if m["msg"] != "metrics" || m["level"] != "INFO" {
			t.Errorf("line %s: want the message metrics at INFO", l)
		}
		out = append(out, m)
	}
	return out
}

var at = time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)

func TestLinesAreEmbeddedMetricFormat(t *testing.T) {
	r := New("turn", nil, func() time.Time { return at })
	r.Workflow("parcel")
	r.Observe(events.Event{Type: events.StateEnter, SessionID: "s-1"})
	r.Observe(events.Event{Type: events.StateEnter, SessionID: "s-1"})
	r.Observe(events.Event{Type: events.ToolCalled, SessionID: "s-1"})
	r.Observe(events.Event{Type: events.ToolBlocked, SessionID: "s-1"})
	r.Observe(events.Event{Type: events.Parked, SessionID: "s-1"})
	r.Observe(events.Event{Type: events.Delivered, SessionID: "s-1", Data: map[string]any{"trigger": "timer"}})
	r.Observe(events.Event{Type: events.Delivered, SessionID: "s-1", Data: map[string]any{"trigger": "scan"}})
	r.Observe(events.Event{Type: events.Warning, SessionID: "s-1", Data: map[string]any{"scope": "budget", "code": BudgetExceeded}})
	r.Observe(events.Event{Type: events.Warning, SessionID: "s-1", Data: map[string]any{"scope": "workflow"}})
	r.Observe(events.Event{Type: events.ModelUsage, SessionID: "s-1", Data: map[string]any{"inputTokens": 120, "outputTokens": int64(30),
		"cacheReadTokens": 100, "cacheCreationTokens": 0, "costUsd": 0.0012}})
	ctx := With(context.Background(), r)
	ModelCall(ctx, 1500*time.Microsecond, nil)
	ModelThrottle(ctx)
	r.Add(Turns, 1)
	r.Latency(TurnLatency, 2*time.Second)
	r.Error("InvalidRequestError")
	r.Error(BudgetExceeded)
	r.Workflow("")
	r.Add(SweepFinds, 0)

	lines := flushed(t, r)
	if len(lines) != 4 {
		t.Fatalf("%d lines, want the unknown workflow's, parcel's and two error codes': %v", len(lines), lines)
	}
	if fn := lines[0]["function"]; fn != "turn" || lines[0]["workflow"] != nil || lines[0]["SweepFinds"] != 0.0 {
		t.Errorf("the line of no workflow: %v", lines[0])
	}
	p := lines[1]
	want := map[string]float64{Steps: 2, ToolCalls: 1, ToolBlocks: 1, Parks: 1, Deliveries: 1, InputTokens: 120, OutputTokens: 30,
		CacheReadTokens: 100, CacheWriteTokens: 0, CostUsd: 0.0012, ModelCalls: 1, ModelThrottles: 1, ModelLatency: 1.5,
		Turns: 1, TurnLatency: 2000, BudgetBreaches: 2} // the warning's, the error's
	got, _ := CheckEMF(p)
	if len(got) != len(want) {
		t.Errorf("parcel's metrics %v, want %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}
	for n, v := range want {
		if got[n] != v {
			t.Errorf("%s = %v, want %v", n, got[n], v)
		}
	}
	aws := p["_aws"].(map[string]any)
	dir := aws["CloudWatchMetrics"].([]any)[0].(map[string]any)
	if aws["Timestamp"] != float64(at.UnixMilli()) || dir["Namespace"] != Namespace || p["workflow"] != "parcel" || p["sessionId"] != "s-1" ||
		fmt.Sprint(dir["Dimensions"]) != "[[workflow function] [function]]" {
		t.Errorf("parcel's line: %v", p)
	}
	for _, m := range dir["Metrics"].([]any) {
		def := m.(map[string]any)
		if def["Unit"] != string(Catalog[def["Name"].(string)]) {
			t.Errorf("%v: want unit %s", def, Catalog[def["Name"].(string)])
		}
	}
	for i, code := range []string{"InvalidRequestError", BudgetExceeded} {
		l := lines[2+i]
		dir := l["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)
		if l["code"] != code || l["Errors"] != 1.0 || fmt.Sprint(dir["Dimensions"]) != "[[function code]]" || l["sessionId"] != "s-1" {
			t.Errorf("error line %d: %v", i, l)
		}
	}
	// drained: a second flush writes nothing
	if again := flushed(t, r); len(again) != 0 {
		t.Errorf("a second flush wrote %v", again)
	}
}

// Bounds: at most MaxValues samples a line (the rest on further lines), error codes that are
// not plain names or past MaxCodes as "other", at most MaxSessionIDs session ids, and no
// session id anywhere but the properties.
func TestBounds(t *testing.T) {
	r := New("wake", nil, func() time.Time { return at })
	r.Workflow("w")
	for i := range 250 {
		r.Latency(ModelLatency, time.Duration(i)*time.Millisecond)
		r.Session(fmt.Sprintf("session-%d", i))
	}
	r.Add(ModelCalls, 250)
	r.Error("has space")
	for i := range MaxCodes + 3 {
		r.Error(fmt.Sprintf("E%02d", i))
	}
	lines := flushed(t, r)
	var samples []float64
	codes := map[string]float64{}
	for _, l := range lines {
		if c, ok := l["code"].(string); ok {
			codes[c] += l["Errors"].(float64)
			continue
		}
		switch v := l[ModelLatency].(type) {
		case []any:
			for _, x := range v {
				samples = append(samples, x.(float64))
			}
		case float64:
			samples = append(samples, v)
		}
		if len(l["sessionIds"].([]any)) != MaxSessionIDs || l["sessionId"] != "session-0" {
			t.Errorf("session properties: %v", l["sessionIds"])
		}
		raw, _ := json.Marshal(l["_aws"])
		if strings.Contains(string(raw), "session") {
			t.Errorf("a session is in the metadata: %s", raw)
		}
	}
	if len(lines) < 3+MaxCodes || len(samples) != 250 || samples[249] != 249 {
		t.Errorf("%d lines, %d samples", len(lines), len(samples))
	}
	if len(codes) != MaxCodes || codes[OtherCode] != 5 || codes["E08"] != 1 {
		// "other" takes a slot when the bad code comes first: E00…E08, then E09…E12 past the cap
		t.Errorf("codes %v, want %d codes with other = 5", codes, MaxCodes)
	}
}

// A context without a Recorder counts nothing and fails nothing.
func TestNoRecorderIsANoOp(t *testing.T) {
	ctx := context.Background()
	var r *Recorder
	r.Add(Turns, 1)
	r.Observe(events.Event{Type: events.StateEnter})
	r.Error("x")
	ModelCall(ctx, time.Second, nil)
	ModelThrottle(ctx)
	Flush(ctx)
	called := false
	Also(ctx, func(events.Event) { called = true })(events.Event{})
	if !called || r.Lines() != nil {
		t.Error("a nil Recorder")
	}
}

type named struct{}

func (named) Error() string { return "x" }
func (named) Name() string  { return "SessionBusyError" }

func TestFailNamesTheError(t *testing.T) {
	r := New("decide", nil, func() time.Time { return at })
	r.Fail(fmt.Errorf("wrapped: %w", named{}))
	r.Fail(errors.New("plain"))
	lines := flushed(t, r)
	if len(lines) != 2 || lines[0]["code"] != "InternalError" || lines[1]["code"] != "SessionBusyError" {
		t.Errorf("%v", lines)
	}
}
