package sandbox

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"testing"
)

// benchHost serves the controls from memory and answers tools at once.
type benchHost struct{ history string }

func (h *benchHost) Call(_ context.Context, tool, _ string, args json.RawMessage) (string, error) {
	return `{"ok":true}`, nil
}

func (h *benchHost) Control(tool, _ string, _ json.RawMessage) (string, error) {
	switch tool {
	case "archmax_get_history":
		return h.history, nil
	case "archmax_get_variables":
		return `{"maxResultChars":100000}`, nil
	}
	return "Recorded: the session moves when the script finishes.", nil
}

var benchTools = []Tool{
	{Name: "fetch_doc"}, {Name: "read_file"},
	{Name: "archmax_advance", Control: true}, {Name: "archmax_get_variables", Control: true}, {Name: "archmax_get_history", Control: true},
}

func benchRun(b *testing.B, src []byte, host Host) {
	b.Helper()
	run := &CodeStateRun{
		File: "scripts/bench.js", Source: src, State: "check",
		Variables: map[string]any{"watchTool": "fetch_doc", "limits": map[string]any{"maxResultChars": 100000}},
		Tools:     benchTools,
		Quotas:    Quotas{MaxResultChars: 1 << 20}, // the history is ~212 K characters
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := RunCodeState(context.Background(), run, host); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCodeStateRun: a fresh runtime, the history read through a control, two tool calls
// and an advance.
func BenchmarkCodeStateRun(b *testing.B) {
	src := []byte(`import { defineCodeState } from "@archmax-ai/harness/sandbox";
export default defineCodeState(async ({ variables, tools }) => {
  const history = JSON.parse(await tools.archmax_get_history());
  const [a, c] = await Promise.all([tools.fetch_doc({ n: history.messages.length }), tools.readFile({ file_path: "notes.md" })]);
  await tools.archmax_advance({ to: "next", reason: "read " + history.messages.length + " messages " + a + c });
});`)
	benchRun(b, src, &benchHost{history: `{"messages":[{"role":"user","text":"hi"}],"trail":[]}`})
}

// BenchmarkCodeStateHistory200 runs the shared benchmark workload (bench/code-state): the
// module-form script over a 200-message, ~212 KB history (goal: median <= 7 ms).
func BenchmarkCodeStateHistory200(b *testing.B) {
	src, err := os.ReadFile("testdata/code-state.js")
	if err != nil {
		b.Fatal(err)
	}
	history, err := os.ReadFile("testdata/history-200.json")
	if err != nil {
		b.Fatal(err)
	}
	benchRun(b, src, &benchHost{history: string(history)})
}

// BenchmarkCodeStateRunUncompiled is BenchmarkCodeStateRun with a source the cache has never
// seen each time (a trailing comment with the iteration): source preparation and goja
// compilation on every run — the cost a warm container saves per content hash.
func BenchmarkCodeStateRunUncompiled(b *testing.B) {
	base := `import { defineCodeState } from "@archmax-ai/harness/sandbox";
export default defineCodeState(async ({ variables, tools }) => {
  const history = JSON.parse(await tools.archmax_get_history());
  const [a, c] = await Promise.all([tools.fetch_doc({ n: history.messages.length }), tools.readFile({ file_path: "notes.md" })]);
  await tools.archmax_advance({ to: "next", reason: "read " + history.messages.length + " messages " + a + c });
});
// `
	host := &benchHost{history: `{"messages":[{"role":"user","text":"hi"}],"trail":[]}`}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		run := &CodeStateRun{File: "scripts/bench.js", Source: []byte(base + strconv.Itoa(i)), State: "check",
			Variables: map[string]any{"watchTool": "fetch_doc"}, Tools: benchTools}
		if err := RunCodeState(context.Background(), run, host); err != nil {
			b.Fatal(err)
		}
	}
}
