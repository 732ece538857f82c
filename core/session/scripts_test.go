package session

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/archmax-ai/archmax/core/events"
)

const scriptFlow = `
states:
  work:
    triggers:
      manual:
    instructions: Do the work.
    skills:
      allow: [orders]
    tools:
      forbid: [remove_file]
`

func scriptHarness(t *testing.T) *harness {
	return newHarness(t, scriptFlow, map[string]string{
		"skills/orders/SKILL.md": "---\nname: orders\n---\nOrder helpers.",
		"skills/orders/scripts/total.js": `/**
 * Total the order
 *
 * Sums the quantities it is given.
 */
function total(items) { return items.reduce((s, i) => s + i.qty, 0); }
const result = { total: total(args.items), customer: args.variables.customer, who: args.variables.trigger };
result;`,
		"skills/other/SKILL.md":          "---\nname: other\n---\nNot enabled.",
		"skills/other/scripts/x.js":      "1",
		"workflows/wf/scripts/inside.js": "1",
	})
}

// 03 AS-02/AS-05/AS-10/AS-03: archmax_run runs a skill script with the model's args plus
// args.variables and answers its completion value as JSON; a helper it defines stays in the
// REPL for a later archmax_eval in the same call; archmax_eval answers its last expression.
func TestAgentScriptsRunAndEval(t *testing.T) {
	h := scriptHarness(t)
	h.script(
		calls("", call{"archmax_run", map[string]any{"file_path": "skills/orders/scripts/total.js",
			"args": map[string]any{"items": []any{map[string]any{"qty": 2}, map[string]any{"qty": 3}}, "variables": "ignored"}}}),
		calls("", call{"archmax_eval", map[string]any{"code": "console.log('two', 1 + 1); total([{qty: 7}])"}}),
		says("Done."),
	)
	out := h.send("s1", "total it", map[string]any{"customer": "acme"})
	if m := toolMessage(t, out, "archmax_run", 0); m.Error || m.Text != `{"total":5,"customer":"acme","who":"manual"}` {
		t.Errorf("archmax_run = %q (error %v)", m.Text, m.Error)
	}
	if m := toolMessage(t, out, "archmax_eval", 0); m.Error || m.Text != "two 2\n7" {
		t.Errorf("archmax_eval = %q (error %v)", m.Text, m.Error)
	}
	// the tool specs are the verbatim model-facing descriptions (03 §4.7)
	var evalDesc, runDesc string
	for _, ts := range h.model.requests[0].Tools {
		switch ts.Name {
		case "archmax_eval":
			evalDesc = ts.Description
		case "archmax_run":
			runDesc = ts.Description
		}
	}
	if evalDesc != evalDescription || runDesc != runDescription {
		t.Errorf("descriptions: eval %q, run %q", evalDesc, runDesc)
	}
}

// 03 AS-30, GOV-01: a script's tools are the state's surface without controls, governed
// against the state with origin "script"; a refused call rejects (catchable), and an
// uncaught error answers the call as an error.
func TestAgentScriptToolsAreGoverned(t *testing.T) {
	h := scriptHarness(t)
	code := `
const kinds = [typeof tools.archmax_advance, typeof tools.archmaxSetVariables, typeof tools.archmax_eval, typeof tools.remove_file, typeof tools.ls];
const listed = ["remove_file" in tools, "removeFile" in tools, Object.keys(tools).includes("removeFile"), "ls" in tools];
await tools.write_file({ file_path: "scratchpad/n.md", content: "x" });
let refused = "", forbidden = "";
try { await tools.write_file({ file_path: "workflows/wf/scripts/inside.js", content: "x" }); } catch (e) { refused = e.message; }
try { await tools.removeFile({ file_path: "scratchpad/n.md" }); } catch (e) { forbidden = e.message; }
({ kinds, listed, refused: refused.length > 0, forbidden: forbidden.includes("remove_file") })`
	h.script(
		calls("", call{"archmax_eval", map[string]any{"code": code}}),
		calls("", call{"archmax_eval", map[string]any{"code": "throw new Error('boom')"}}),
		says("Done."),
	)
	out := h.send("s1", "go", nil)
	// BR-02 for agent scripts: controls and eval never resolve; remove_file, forbidden here,
	// resolves but is not listed, and calling it is the kernel's refusal.
	if m := toolMessage(t, out, "archmax_eval", 0); m.Error || m.Text != `{"kinds":["undefined","undefined","undefined","function","function"],"listed":[false,false,false,true],"refused":true,"forbidden":true}` {
		t.Errorf("governed eval = %q (error %v)", m.Text, m.Error)
	}
	if m := toolMessage(t, out, "archmax_eval", 1); !m.Error || !strings.HasPrefix(m.Text, "Error: boom") {
		t.Errorf("throwing eval = %q (error %v)", m.Text, m.Error)
	}
	var scriptCalls []events.Event
	for _, ev := range h.eventsOf(events.ToolCalled) {
		if ev.Data["origin"] == "script" {
			scriptCalls = append(scriptCalls, ev)
		}
	}
	if len(scriptCalls) != 1 || scriptCalls[0].Data["tool"] != "write_file" || scriptCalls[0].Data["detail"] != "scratchpad/n.md" || !strings.HasPrefix(scriptCalls[0].Str("callId"), "ptc:") {
		t.Errorf("script tool-called events = %+v", scriptCalls)
	}
	blocked := h.eventsOf(events.ToolBlocked)
	if len(blocked) != 2 || blocked[0].Data["tool"] != "write_file" || blocked[1].Data["tool"] != "remove_file" || blocked[1].Data["origin"] != "script" {
		t.Errorf("tool-blocked events %+v, want the script's write into workflows/ and its forbidden remove_file", blocked)
	}
}

// 03 AS-04 (GOV-22): archmax_run runs only files inside an enabled skill bundle; an
// unreadable file answers the exact AS-05 text.
func TestArchmaxRunConfinedToSkills(t *testing.T) {
	h := scriptHarness(t)
	h.script(
		calls("", call{"archmax_run", map[string]any{"file_path": "scratchpad/evil.js"}}),
		calls("", call{"archmax_run", map[string]any{"file_path": "skills/other/scripts/x.js"}}),
		calls("", call{"archmax_run", map[string]any{"file_path": "skills/orders/scripts/missing.js"}}),
		says("Done."),
	)
	out := h.send("s1", "go", nil)
	if m := toolMessage(t, out, "archmax_run", 0); !m.Blocked || !strings.Contains(m.Text, "skill bundle") {
		t.Errorf("outside skills = %q (blocked %v)", m.Text, m.Blocked)
	}
	if m := toolMessage(t, out, "archmax_run", 1); !m.Blocked {
		t.Errorf("a bundle the state does not enable = %q (blocked %v)", m.Text, m.Blocked)
	}
	if m := toolMessage(t, out, "archmax_run", 2); !m.Error || m.Text != "error: cannot read script 'skills/orders/scripts/missing.js' from the agent workspace." {
		t.Errorf("missing script = %q", m.Text)
	}
}

// DESIGN.md §4, AS-03: REPL state lives for the calls of one invocation of a turn; the next
// call starts a fresh REPL.
func TestREPLLivesForOneCall(t *testing.T) {
	h := scriptHarness(t)
	h.script(calls("", call{"archmax_eval", map[string]any{"code": "var kept = 41; kept + 1"}}), says("Done."))
	h.send("s1", "go", nil)
	h.script(calls("", call{"archmax_eval", map[string]any{"code": "typeof kept"}}), says("Done."))
	out := h.send("s1", "again", nil)
	if m := toolMessage(t, out, "archmax_eval", 1); m.Text != "undefined" {
		t.Errorf("a later call still sees the REPL: %q", m.Text)
	}
}

// 02 §12.6 with 03 SB-05: when a script ends with host calls in flight (here it throws
// once both slow calls have started), the sandbox cancels them and the script never sees
// them — but each one's tool-called is still settled by a tool-result.
func TestAbandonedScriptCallsAreSettled(t *testing.T) {
	h := scriptHarness(t)
	release := make(chan struct{})
	var started sync.WaitGroup
	started.Add(2)
	schema := []byte(`{"type":"object","properties":{"n":{"type":"number"}}}`)
	h.cfg.Tools = []HostTool{
		{Name: "slow_lookup", Description: "Looks slowly.", Essential: true, InputSchema: schema,
			Handler: func(ctx context.Context, _ HostCall) (string, error) {
				started.Done()
				select {
				case <-release:
					return "late", nil
				case <-ctx.Done():
					return "", ctx.Err()
				}
			}},
		{Name: "gate", Description: "Opens when both lookups run.", Essential: true, InputSchema: schema,
			Handler: func(context.Context, HostCall) (string, error) { started.Wait(); return "open", nil }},
	}
	code := `await Promise.all([tools.slow_lookup({ n: 1 }), tools.slow_lookup({ n: 2 }),
  tools.gate().then(() => { throw new Error("gave up") })]);`
	h.script(calls("", call{"archmax_eval", map[string]any{"code": code}}), says("Done."))
	out := h.send("s1", "go", nil)
	close(release)
	if m := toolMessage(t, out, "archmax_eval", 0); !m.Error || !strings.Contains(m.Text, "gave up") {
		t.Fatalf("eval = %q, want the script's error", m.Text)
	}
	called, settled := map[string]bool{}, map[string]string{}
	for _, ev := range h.eventsOf(events.ToolCalled) {
		if ev.Data["origin"] == "script" {
			called[ev.Str("callId")] = true
		}
	}
	for _, ev := range h.eventsOf(events.ToolResult) {
		if ev.Data["origin"] == "script" {
			settled[ev.Str("callId")] = ev.Str("status")
		}
	}
	if len(called) != 3 {
		t.Fatalf("script tool-called = %v, want the two slow lookups and the gate", called)
	}
	errs := 0
	for id := range called {
		switch settled[id] {
		case "error":
			errs++
		case "ok":
		default:
			t.Errorf("call %s has no tool-result", id)
		}
	}
	if errs != 2 {
		t.Errorf("%d calls settled as errors, want the two abandoned lookups", errs)
	}
}
