//go:build linux

package rie

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/functions/handlers/wakes"
)

// metricLines are the embedded-metric-format lines among an emulator's output (the
// function's own JSON lines among the emulator's START/END/REPORT lines), as CloudWatch Logs
// would read them from the function's log stream: every metric a directive names, with its
// top-level value, by the line's function and workflow.
func metricLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, l := range strings.Split(out, "\n") {
		var m map[string]any
		if !strings.HasPrefix(l, "{") || json.Unmarshal([]byte(l), &m) != nil {
			continue
		}
		aws, ok := m["_aws"].(map[string]any)
		if !ok {
			continue
		}
		for _, d := range aws["CloudWatchMetrics"].([]any) {
			for _, def := range d.(map[string]any)["Metrics"].([]any) {
				name := def.(map[string]any)["Name"].(string)
				switch m[name].(type) {
				case float64, []any:
				default:
					t.Errorf("metric %s has no value in %s", name, l)
				}
			}
		}
		lines = append(lines, m)
	}
	return lines
}

// sum adds metric name's values over the lines of function fn.
func sum(lines []map[string]any, fn, name string) (float64, bool) {
	var total float64
	seen := false
	for _, l := range lines {
		if l["function"] != fn {
			continue
		}
		switch v := l[name].(type) {
		case float64:
			total, seen = total+v, true
		case []any:
			for _, x := range v {
				total += x.(float64)
			}
			seen = true
		}
	}
	return total, seen
}

// MT22-6 under the emulator: the bootstraps built as `make build` builds them write their
// metrics on their own output, where Lambda's log stream takes them. A start answered 202
// counts no turn in its invocation; its continuation, in a fresh emulator, counts the turn
// and its steps and model calls under the workflow; a sweep that finds nothing
// reports SweepFinds 0; a refused read counts an error by its code.
func TestMetricsUnderEmulator(t *testing.T) {
	s := newStack(t)
	start := accepted(t, "turn-start.json", s.http(t, "turn", fixture(t, "turn-start.json")))
	s.settle(t)
	if sum := s.summary(t, start.SessionID); sum.Status != session.StatusCompleted {
		t.Fatalf("the start did not complete: %+v", sum)
	}
	sweep := decode[wakes.Result](t, "wake-sweep.json", s.invoke(t, "wake", fixture(t, "wake-sweep.json")))
	if sweep.Sweep == nil || sweep.Sweep.Due != 0 {
		t.Fatalf("sweep: %+v", sweep)
	}
	if a := s.http(t, "sessions", fixture(t, "sessions-get.json", fixtureSession, "no-such-session")); a.status != http.StatusNotFound {
		t.Fatalf("a missing session: %d %s", a.status, a.body)
	}

	first := metricLines(t, s.emus["turn"].Output())
	if n, _ := sum(first, "turn", "Turns"); n != 0 {
		t.Errorf("the invocation that answered 202 counted %v turns", n)
	}
	s.mu.Lock()
	var cont []map[string]any
	for _, e := range s.more["turn"] {
		cont = append(cont, metricLines(t, e.Output())...)
	}
	s.mu.Unlock()
	if n, ok := sum(cont, "turn", "Turns"); !ok || n != 1 {
		t.Errorf("the continuation counted %v turns (%v)", n, ok)
	}
	for _, name := range []string{"Steps", "ModelCalls", "TurnLatency", "ModelLatency"} {
		if n, ok := sum(cont, "turn", name); !ok || n <= 0 && name != "TurnLatency" && name != "ModelLatency" {
			t.Errorf("the continuation's %s = %v (%v)", name, n, ok)
		}
	}
	if n, ok := sum(cont, "turn", "Continuations"); !ok || n != 1 {
		t.Errorf("Continuations = %v (%v)", n, ok)
	}
	for _, l := range cont {
		if _, isErr := l["code"]; !isErr && l["workflow"] != "access-request" {
			t.Errorf("a continuation line of workflow %v: %v", l["workflow"], l)
		}
		if l["sessionId"] != start.SessionID {
			t.Errorf("a continuation line names session %v", l["sessionId"])
		}
	}
	wake := metricLines(t, s.emus["wake"].Output())
	if n, ok := sum(wake, "wake", "SweepFinds"); !ok || n != 0 {
		t.Errorf("the sweep's SweepFinds = %v (%v)", n, ok)
	}
	read := metricLines(t, s.emus["sessions"].Output())
	var refused bool
	for _, l := range read {
		if l["code"] == "SessionNotFoundError" && l["Errors"] == 1.0 && l["function"] == "sessions" {
			refused = true
		}
	}
	if !refused {
		t.Errorf("the sessions function's metrics lines: %v", read)
	}
}
