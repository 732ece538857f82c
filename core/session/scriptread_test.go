package session

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/core/events"
)

// readFlow: a code state and an agent state, both enabling the `data` skill, whose assets
// the scripts read.
const readFlow = `
states:
  read:
    type: code
    script: scripts/read.js
    triggers:
      manual:
    skills:
      allow: [data]
    transitions:
      - to: agent
        description: Read.
  agent:
    instructions: Read with a script.
    skills:
      allow: [data]
    tools:
      allow: [archmax_eval]
`

// readFiles are the assets the BR-12a tests read: a JSON file, a 150-line file, an empty
// and a whitespace-only file, and one line longer than the 80,000-character page cap.
func readFiles(readJS string) map[string]string {
	var lines []string
	for i := 1; i <= 150; i++ {
		lines = append(lines, fmt.Sprintf("row %d", i))
	}
	return map[string]string{
		"skills/data/SKILL.md":            "---\nname: data\n---\nData.",
		"skills/data/assets/orders.json":  "[\n  {\"id\": \"ORD-1\", \"status\": \"delayed\"},\n  {\"id\": \"ORD-2\", \"status\": \"shipped\"}\n]\n",
		"skills/data/assets/rows.txt":     strings.Join(lines, "\n") + "\n",
		"skills/data/assets/empty.txt":    "",
		"skills/data/assets/blank.txt":    " \n\t\n",
		"skills/data/assets/wide.txt":     "first " + strings.Repeat("x", 90_000) + "\nsecond\n",
		"skills/data/assets/two-wide.txt": strings.Repeat("a", 50_000) + "\n" + strings.Repeat("b", 50_000) + "\n",
		"workflows/wf/scripts/read.js":    readJS,
	}
}

// 03 BR-12a: a code state's read_file resolves to the file text — the header and the notices
// above it dropped; Error answers unchanged; offset/limit keep their meaning — while the
// tool-result event keeps the page the tool answered.
func TestScriptReadFileGetsTheFileText(t *testing.T) {
	h := newHarness(t, readFlow, readFiles(`export default async ({ tools }) => {
  const read = (a) => tools.read_file(a);
  const orders = JSON.parse(await read({ file_path: "skills/data/assets/orders.json" }));
  const rows = await read({ file_path: "skills/data/assets/rows.txt" });
  const page2 = await read({ file_path: "skills/data/assets/rows.txt", offset: 100, limit: 100 });
  const all = await read({ file_path: "skills/data/assets/rows.txt", limit: 1000 });
  const negative = await read({ file_path: "skills/data/assets/rows.txt", offset: -5, limit: 2 });
  const zero = await read({ file_path: "skills/data/assets/rows.txt", limit: 0 });
  const beyond = await read({ file_path: "skills/data/assets/rows.txt", offset: 500 });
  const missing = await read({ file_path: "skills/data/assets/nope.json" });
  const empty = await read({ file_path: "skills/data/assets/empty.txt" });
  const blank = await read({ file_path: "skills/data/assets/blank.txt" });
  const wide = await read({ file_path: "skills/data/assets/wide.txt" });
  const twoWide = await read({ file_path: "skills/data/assets/two-wide.txt" });
  await tools.archmax_set_variables({ variables: { result: {
    orders: orders.map((o) => o.id + ":" + o.status),
    rows: [rows.split("\n").length, rows.split("\n")[0], rows.split("\n").at(-1)],
    page2: [page2.split("\n").length, page2.split("\n")[0], page2.split("\n").at(-1)],
    all: all.split("\n").length,
    negative, zero, beyond, missing, empty, blank,
    wide: [wide.length, wide.slice(0, 8)],
    twoWide: [twoWide.length, twoWide.slice(0, 2), twoWide.includes("\n")],
  } } });
  await tools.archmax_advance({ to: "agent", reason: "read" });
};`))
	h.script(says("Read."))
	out := h.send("s1", "go", nil)
	if out.State != "agent" {
		t.Fatalf("outcome %s in %s: %q %+v", out.Kind, out.State, out.Rejected, h.eventsOf(events.StateErrorRouted))
	}
	got, _ := json.Marshal(out.Variables["result"].Value)
	var res map[string]any
	must(t, json.Unmarshal(got, &res))
	want := map[string]string{
		"orders":   `["ORD-1:delayed","ORD-2:shipped"]`,
		"rows":     `[100,"row 1","row 100"]`,
		"page2":    `[50,"row 101","row 150"]`,
		"all":      `150`,
		"negative": `"row 1\nrow 2"`,
		"zero":     `""`,
		"beyond":   `"Error: Line offset 500 exceeds file length (150 lines)"`,
		"missing":  `"Error: File 'skills/data/assets/nope.json' not found"`,
		"empty":    `""`,
		"blank":    `""`,
		// the page cap: a first line too long for the page gives the part of it that fits —
		// 80,000 characters less the size notice (327) and the mid-line header (79) — and the
		// header saying so is dropped
		"wide": `[79594,"first xx"]`,
		// whole lines first: only the first 50,000-character line fits
		"twoWide": `[50000,"aa",false]`,
	}
	for k, w := range want {
		b, _ := json.Marshal(res[k])
		if string(b) != w {
			t.Errorf("%s = %s, want %s", k, b, w)
		}
	}
	// the audit keeps the tool's own answer: the page with its header
	for _, e := range h.eventsOf(events.ToolResult) {
		if e.Str("tool") == "read_file" && e.Str("origin") == "code" && strings.Contains(e.Str("output"), "ORD-1") {
			if !strings.HasPrefix(e.Str("output"), "@@ lines 1-4 of 4 @@\n[") {
				t.Errorf("tool-result output = %q", e.Str("output"))
			}
			return
		}
	}
	t.Error("no tool-result event for the JSON read")
}

// 03 BR-12a for agent scripts: archmax_eval's tools.read_file resolves to the file text too,
// while the model's own read_file still answers the page (BR-43).
func TestAgentScriptReadFileGetsTheFileText(t *testing.T) {
	h := newHarness(t, readFlow, readFiles(`export default async ({ tools }) => {
  await tools.archmax_advance({ to: "agent", reason: "go" });
};`))
	// the 1.0 documents' check before parsing what a script read, as written
	const uploadCheck = `const text = await tools.read_file({ file_path: "scratchpad/upload.json" });
const upload = text.startsWith("Error:") ? null : JSON.parse(text);
upload`
	h.script(
		calls("",
			call{"archmax_eval", map[string]any{"code": uploadCheck}},
			call{"write_file", map[string]any{"file_path": "scratchpad/upload.json", "content": `{"order_id": "ORD-7"}`}},
			call{"archmax_eval", map[string]any{"code": uploadCheck + ".order_id"}},
			call{"archmax_eval", map[string]any{"code": `const o = JSON.parse(await tools.read_file({ file_path: "skills/data/assets/orders.json" }));
const r = await tools.readFile({ file_path: "skills/data/assets/rows.txt", offset: 148 });
[o.length, o[1].status, r]`}},
			call{"read_file", map[string]any{"file_path": "skills/data/assets/orders.json", "limit": 1}},
		),
		says("Done."),
	)
	out := h.send("s1", "go", nil)
	if m := toolMessage(t, out, "archmax_eval", 0); m.Error || m.Text != "null" {
		t.Errorf("upload check of a missing file = %q (error %v)", m.Text, m.Error)
	}
	if m := toolMessage(t, out, "archmax_eval", 1); m.Error || m.Text != "ORD-7" {
		t.Errorf("upload check = %q (error %v)", m.Text, m.Error)
	}
	if m := toolMessage(t, out, "archmax_eval", 2); m.Error || m.Text != `[2,"shipped","row 149\nrow 150"]` {
		t.Errorf("archmax_eval = %q (error %v)", m.Text, m.Error)
	}
	if m := toolMessage(t, out, "read_file", 0); m.Text != "@@ lines 1-1 of 4 | next offset 1 @@\n[" {
		t.Errorf("the model's read_file = %q", m.Text)
	}
}
