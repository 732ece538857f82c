package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
)

// record is one call the test host received, in arrival order.
type record struct {
	tool, id, args string
	control        bool
}

// testHost answers controls with a confirmation and other tools through call (or echoes).
type testHost struct {
	mu      sync.Mutex
	records []record
	call    func(ctx context.Context, tool, args string) (string, error)
	control func(tool, args string) (string, error)
}

func (h *testHost) add(r record) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r)
}

func (h *testHost) Call(ctx context.Context, tool, id string, args json.RawMessage) (string, error) {
	h.add(record{tool: tool, id: id, args: string(args)})
	if h.call != nil {
		return h.call(ctx, tool, string(args))
	}
	return tool + " " + string(args), nil
}

func (h *testHost) Control(tool, id string, args json.RawMessage) (string, error) {
	h.add(record{tool: tool, id: id, args: string(args), control: true})
	if h.control != nil {
		return h.control(tool, string(args))
	}
	return "Recorded.", nil
}

func (h *testHost) calls() []record {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]record(nil), h.records...)
}

// surface is a typical code-state surface: two granted tools and the controls.
var surface = []Tool{
	{Name: "read_file"},
	{Name: "fetch_doc"},
	{Name: "archmax_advance", Control: true},
	{Name: "archmax_raise", Control: true},
	{Name: "archmax_get_variables", Control: true},
	{Name: "archmax_get_history", Control: true},
}

type result struct {
	err  error
	logs []string
	host *testHost
}

// runWith runs src as scripts/test.js on the given host after letting configure adjust the run.
func runWith(t *testing.T, ctx context.Context, host *testHost, src string, configure func(*CodeStateRun)) result {
	t.Helper()
	res := result{host: host}
	var mu sync.Mutex
	run := &CodeStateRun{
		File:      "scripts/test.js",
		Source:    []byte(src),
		State:     "screen",
		Variables: map[string]any{"order": map[string]any{"id": "o-1", "amount": 12.5}},
		Tools:     surface,
		OnLog: func(line string) {
			mu.Lock()
			defer mu.Unlock()
			res.logs = append(res.logs, line)
		},
	}
	if configure != nil {
		configure(run)
	}
	res.err = RunCodeState(ctx, run, host)
	return res
}

func runScript(t *testing.T, src string) result {
	t.Helper()
	return runWith(t, context.Background(), &testHost{}, src, nil)
}

func mustSucceed(t *testing.T, r result) {
	t.Helper()
	if r.err != nil {
		t.Fatalf("run failed: %#v (%v); logs %q", r.err, r.err, r.logs)
	}
}

func as[T error](t *testing.T, err error) T {
	t.Helper()
	var target T
	if !errors.As(err, &target) {
		t.Fatalf("error %#v (%v) is not a %T", err, err, target)
	}
	return target
}

func joinLogs(r result) string { return strings.Join(r.logs, "\n") }
