package outbound

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// A detail over the cap loses its largest values first, named in omitted; the identity stays.
func TestFit(t *testing.T) {
	d := map[string]any{"eventId": "s:1", "sessionId": "s", "sessionSeq": 1, "state": "a", "reason": strings.Repeat("x", 5000), "code": "c"}
	if b := Fit(SessionRaised, d, 1<<20); len(b) < 5000 {
		t.Fatalf("fits, but cut: %s", b)
	}
	b := Fit(SessionRaised, d, 1024)
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil || len(b) > 1024 {
		t.Fatalf("%d bytes: %s", len(b), b)
	}
	if got["reason"] != nil || got["code"] != "c" || got["eventId"] != "s:1" || got["state"] != "a" {
		t.Errorf("fitted = %v", got)
	}
	if o, _ := json.Marshal(got["omitted"]); string(o) != `["reason"]` {
		t.Errorf("omitted = %s", o)
	}
	if EventID("a~1", 7) != "a~1:7" || APIPath("a b") != "/v1/sessions/a%20b" {
		t.Error("ids")
	}
}

type failing struct{}

func (failing) Publish(context.Context, []Notification) error { return errors.New("throttled") }

// A failed publish is a warning carrying an embedded-metric data point, and counted.
func TestPublishFailureIsAMetric(t *testing.T) {
	var buf bytes.Buffer
	c := &Config{Sink: failing{}, Logger: slog.New(slog.NewJSONHandler(&buf, nil))}
	if c.Publish(context.Background(), "s1", []Notification{{DetailType: SessionParked, EventID: "s1:3", Detail: json.RawMessage(`{}`)}}) || c.Failures() != 1 {
		t.Fatal("a failed publish reported published")
	}
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatal(err)
	}
	aws, _ := line["_aws"].(map[string]any)
	cw, _ := aws["CloudWatchMetrics"].([]any)
	if line["level"] != "WARN" || line[MetricPublishFailures] != float64(1) || len(cw) != 1 || aws["Timestamp"] == nil || line["sessionId"] != "s1" {
		t.Errorf("log line %s", buf.String())
	}
	if m := cw[0].(map[string]any); m["Namespace"] != MetricNamespace {
		t.Errorf("metric %v", m)
	}
}
