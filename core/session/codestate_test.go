package session

import (
	"context"
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/core/events"
	"github.com/archmax-ai/archmax/core/transcript"
)

// codeFlow: a code entry state that routes on a variable, a chain into a second code
// state, an agent state and a terminal code state. Its scripts' budget (settings.timeoutMs,
// real time) is generous, so a script that must finish never races the machine's speed; the
// tests of the timeout itself set 400 ms (timedOut) on scripts that never end.
const codeFlow = `
settings:
  timeoutMs: 60000
states:
  screen:
    type: code
    script: scripts/screen.js
    on_error: explain
    triggers:
      manual:
    transitions:
      - to: stamp
        description: Known request.
      - to: explain
        description: Anything else.
  stamp:
    type: code
    script: scripts/stamp.js
    transitions:
      - to: done
        description: Stamped.
  explain:
    instructions: Explain what went wrong.
  done:
    type: code
    script: scripts/done.js
`

func codeHarness(t *testing.T, screen string) *harness {
	return codeHarnessFlow(t, codeFlow, screen)
}

// timedOut is codeFlow with a 400 ms budget, for scripts that never end by themselves.
var timedOut = strings.Replace(codeFlow, "timeoutMs: 60000", "timeoutMs: 400", 1)

// codeHarnessFlow is codeHarness over a variant of codeFlow (e.g. another settings.timeoutMs).
func codeHarnessFlow(t *testing.T, flow, screen string) *harness {
	return newHarness(t, flow, map[string]string{
		"workflows/wf/scripts/screen.js": screen,
		"workflows/wf/scripts/stamp.js": `export default async ({ tools }) => {
  await tools.archmax_set_variables({ variables: { stamped: true } });
  tools.archmax_advance({ to: "done", reason: "stamped." });
};`,
		"workflows/wf/scripts/done.js": `console.log("finishing"); // plain script, terminal: completes`,
	})
}

// 03 CS-10/CS-11/CS-46: a chain of code states runs with no model call; each advance
// commits a code trail step and a [code] note; the terminal code state completes (CS-47).
func TestCodeStateChainMakesNoModelCall(t *testing.T) {
	h := codeHarness(t, `import { defineCodeState } from "@archmax-ai/harness/sandbox";
export default defineCodeState(async ({ state, trigger, variables, tools }) => {
  const h = JSON.parse(await tools.archmax_get_history());
  console.log(state, trigger, h.messages.length, h.trail.length);
  await tools.archmax_advance({ to: "stamp", reason: "known: " + variables.kind });
});`)
	out := h.send("s1", "please", map[string]any{"kind": "badge"})
	if out.Kind != KindCompleted || out.State != "done" {
		t.Fatalf("outcome %s in %s: %q", out.Kind, out.State, out.Rejected)
	}
	if len(h.model.requests) != 0 {
		t.Errorf("a code chain made %d model calls", len(h.model.requests))
	}
	if got := trailOf(out); got != "trigger:screen code:stamp code:done" {
		t.Errorf("trail = %s", got)
	}
	ns := notes(out)
	if len(ns) != 2 || ns[0].Text != "[code] 'screen' moved the run to 'stamp': known: badge. You are now in 'stamp'." ||
		ns[1].Text != "[code] 'stamp' moved the run to 'done': stamped. You are now in 'done'." || ns[0].Note != transcript.NoteCode {
		t.Errorf("notes = %+v", ns)
	}
	if v := out.Variables["stamped"]; v.Value != true {
		t.Errorf("stamped = %+v", v)
	}
	var lines []string
	for _, e := range h.eventsOf(events.CodeOutput) {
		lines = append(lines, e.Str("line"))
	}
	if strings.Join(lines, "|") != "screen manual 1 1|finishing" {
		t.Errorf("code-output lines = %q", lines)
	}
	adv := h.eventsOf(events.Advance)
	if len(adv) != 3 || adv[1].Str("kind") != "code" || !strings.HasPrefix(adv[1].Str("callId"), "ptc:") {
		t.Errorf("advance events = %+v", adv)
	}
}

// CS-37/CS-48: a raise ends the session failed; CS-43: a raise wins over a later error.
func TestCodeStateRaiseWinsOverLaterError(t *testing.T) {
	h := codeHarness(t, `await tools.archmax_raise({ code: "blocked", reason: "requester is blocked" });
throw new Error("after the raise");`)
	out := h.send("s1", "please", nil)
	if out.Kind != KindFailed || out.Exit.Code != "blocked" || out.Exit.Reason != "requester is blocked" {
		t.Fatalf("outcome %s exit %+v", out.Kind, out.Exit)
	}
	if got := trailOf(out); got != "trigger:screen" {
		t.Errorf("a raise adds no trail step: %s", got)
	}
}

// CS-43: an accepted advance followed by a throw is a failure; the session does not move.
func TestCodeStateAdvanceThenThrowFails(t *testing.T) {
	h := codeHarness(t, `tools.archmax_advance({ to: "stamp", reason: "x" });
throw new TypeError("boom");`)
	h.script(says("Something went wrong."))
	out := h.send("s1", "please", nil)
	if out.State != "explain" {
		t.Fatalf("state = %s", out.State)
	}
	ns := notes(out)
	if len(ns) != 1 || !strings.HasPrefix(ns[0].Text, "[error] The 'screen' state failed: code state 'screen' failed: TypeError: boom") {
		t.Errorf("notes = %+v", ns)
	}
	if got := trailOf(out); got != "trigger:screen on_error:explain" {
		t.Errorf("trail = %s", got)
	}
}

// CS-40: finishing undecided in a non-terminal state fails; without on_error → rejected.
func TestCodeStateUndecidedWithoutOnErrorRejects(t *testing.T) {
	wf := strings.Replace(codeFlow, "    on_error: explain\n", "", 1)
	h := newHarness(t, wf, map[string]string{"workflows/wf/scripts/screen.js": `console.log("thinking")`})
	out := h.send("s1", "please", nil)
	if out.Kind != KindRejected || out.Rejected != "code state 'screen' finished without calling archmax_advance or archmax_raise" {
		t.Fatalf("outcome %s %q", out.Kind, out.Rejected)
	}
}

// CS-21: a foreign import fails the state with the exact message and its position.
func TestCodeStateForeignImportRefused(t *testing.T) {
	wf := strings.Replace(codeFlow, "    on_error: explain\n", "", 1)
	h := newHarness(t, wf, map[string]string{"workflows/wf/scripts/screen.js": "// reads a file\nimport fs from \"fs\";\nexport default () => {};\n"})
	out := h.send("s1", "please", nil)
	if out.Kind != KindRejected {
		t.Fatalf("kind %s", out.Kind)
	}
	for _, want := range []string{"code state 'screen' failed: ", `found 'import ... from "fs"'`, "scripts/screen.js", ":2:"} {
		if !strings.Contains(out.Rejected, want) {
			t.Errorf("rejected = %q, missing %q", out.Rejected, want)
		}
	}
}

// CS-44: a script that runs past settings.timeoutMs fails with the timeout message.
func TestCodeStateTimeout(t *testing.T) {
	wf := strings.Replace(timedOut, "    on_error: explain\n", "", 1)
	h := newHarness(t, wf, map[string]string{"workflows/wf/scripts/screen.js": `while (true) {}`})
	out := h.send("s1", "please", nil)
	if out.Rejected != "code state 'screen' timed out after 400 ms" {
		t.Fatalf("rejected = %q", out.Rejected)
	}
}

// CS-07/CS-44: a missing script file is a failure of the state, not a skip.
func TestCodeStateMissingScript(t *testing.T) {
	wf := strings.Replace(codeFlow, "    on_error: explain\n", "", 1)
	h := newHarness(t, wf, nil)
	out := h.send("s1", "please", nil)
	if out.Rejected != "code state 'screen': script 'scripts/screen.js' could not be read: it does not exist" {
		t.Fatalf("rejected = %q", out.Rejected)
	}
}

// CS-35/CS-42: advance is checked at the call (catchable), and only the first decision counts.
func TestCodeStateAdvanceChecksAndSingleDecision(t *testing.T) {
	h := codeHarness(t, `let msg = "";
try { await tools.archmax_advance({ to: "nowhere", reason: "x" }); } catch (e) { msg = e.message; }
await tools.archmax_set_variables({ variables: { first_error: msg } });
await tools.archmax_advance({ to: "stamp", reason: "ok" });
try { await tools.archmax_raise({ code: "c", reason: "r" }); } catch (e) {
  await tools.archmax_set_variables({ variables: { second_error: e.message } });
}`)
	out := h.send("s1", "please", nil)
	if got := out.Variables["first_error"].Value; got != "cannot advance from 'screen' to 'nowhere'. Valid target slugs: stamp, explain." {
		t.Errorf("first_error = %v", got)
	}
	if got := out.Variables["second_error"].Value; got != "code state 'screen' has already decided this run" {
		t.Errorf("second_error = %v", got)
	}
	if out.State != "done" {
		t.Errorf("state = %s", out.State)
	}
}

// BR-01/BR-02 with GOV-01: a code state's tools are exactly its surface, governed against itself.
func TestCodeStateToolsAreItsSurface(t *testing.T) {
	h := codeHarness(t, `const keys = Object.keys(tools).sort().join(",");
let refused = "";
try { await tools.read_file({ file_path: "workflows/wf/workflow.yaml" }); } catch (e) { refused = e.message; }
await tools.archmax_set_variables({ variables: { keys, refused, reset: typeof tools.archmax_reset } });
await tools.archmax_advance({ to: "stamp", reason: "ok" });`)
	out := h.send("s1", "please", nil)
	keys, _ := out.Variables["keys"].Value.(string)
	for _, want := range []string{"archmaxAdvance", "archmaxGetHistory", "readFile", "writeFile"} {
		if !strings.Contains(keys, want) {
			t.Errorf("keys %q lack %s", keys, want)
		}
	}
	if out.Variables["reset"].Value != "undefined" {
		t.Errorf("archmax_reset must be absent from a code state's tools")
	}
	if r, _ := out.Variables["refused"].Value.(string); !strings.HasPrefix(r, "[workflow] BLOCKED: 'read_file' on 'workflows/wf/workflow.yaml' addresses the authoring plane") {
		t.Errorf("authoring-plane refusal = %q", r)
	}
}

// SB-05: a host call still running when the script finishes is abandoned; its late
// completion must not touch the session (run with -race).
func TestAbandonedHostCallDoesNotTouchTheRun(t *testing.T) {
	h := codeHarness(t, `tools.ls({ path: "scratchpad" }); // not awaited
tools.archmax_advance({ to: "stamp", reason: "go" });`)
	out := h.send("s1", "please", nil)
	if out.Kind != KindCompleted || out.State != "done" {
		t.Fatalf("outcome %s in %s: %q", out.Kind, out.State, out.Rejected)
	}
}

// entryFlow: every route into a code state (03 CS-10) — an agent's advance, a person's
// decision, an on_error, a turn opening there, a reset to it — runs its script at once.
const codeEntryFlow = `
states:
  screen:
    type: code
    script: scripts/count.js
    triggers:
      manual:
    transitions:
      - to: intake
        description: Screened.
  intake:
    instructions: Take the request.
    on_error: rescue
    budget: { maxTurns: 1 }
    transitions:
      - to: review
        description: Ready for a person.
      - to: stamp
        description: Ready to stamp.
  review:
    type: human
    transitions:
      - to: stamp
        description: Approved.
        type: approve
  stamp:
    type: code
    script: scripts/stamp.js
    transitions:
      - to: done
        description: Stamped.
  rescue:
    type: code
    script: scripts/stamp.js
    transitions:
      - to: done
        description: Rescued.
  done:
    instructions: Say it is done.
`

func codeEntryHarness(t *testing.T) *harness {
	return newHarness(t, codeEntryFlow, map[string]string{
		"workflows/wf/scripts/count.js": `export default async ({ tools, variables }) => {
  await tools.archmax_set_variables({ variables: { screened: (variables.screened ?? 0) + 1 } });
  tools.archmax_advance({ to: "intake", reason: "screened" });
};`,
		"workflows/wf/scripts/stamp.js": `export default async ({ tools, state }) => {
  tools.archmax_advance({ to: "done", reason: "stamped in " + state });
};`,
	})
}

func TestEveryEntryIntoACodeStateRunsIt(t *testing.T) {
	t.Run("turn opening and agent advance", func(t *testing.T) {
		h := codeEntryHarness(t)
		h.script(calls("", advance("stamp", "ready")), says("Done."))
		out := h.send("e1", "go", nil)
		if got := trailOf(out); got != "trigger:screen code:intake agent:stamp code:done" || out.Variables["screened"].Value != float64(1) {
			t.Fatalf("trail %s, screened %v", got, out.Variables["screened"].Value)
		}
	})
	t.Run("decision", func(t *testing.T) {
		h := codeEntryHarness(t)
		h.script(calls("", advance("review", "ready")), says("Handed to a person."))
		parked := h.send("e2", "go", nil)
		h.script(says("Done."))
		out, err := h.engine().Decide(context.Background(), "e2", Decision{To: "stamp", ParkID: parked.Pending.ParkID})
		must(t, err)
		if got := trailOf(out); !strings.HasSuffix(got, "human:stamp code:done") || out.Kind != KindCompleted {
			t.Fatalf("trail %s, %s", got, out.Kind)
		}
	})
	t.Run("on_error", func(t *testing.T) {
		h := codeEntryHarness(t)
		h.script(calls("", call{"archmax_get_variables", map[string]any{}}), says("Done."))
		out := h.send("e3", "go", nil)
		if got := trailOf(out); got != "trigger:screen code:intake on_error:rescue code:done" {
			t.Fatalf("trail %s", got)
		}
	})
	t.Run("reset to the entry", func(t *testing.T) {
		h := codeEntryHarness(t)
		h.script(calls("", call{"archmax_reset", map[string]any{"reason": "start over"}}), calls("", advance("stamp", "ready")), says("Done."))
		out := h.send("e4", "go", nil)
		if got := trailOf(out); !strings.Contains(got, "reset:screen code:intake") || out.Variables["screened"].Value != float64(2) {
			t.Fatalf("trail %s, screened %v", got, out.Variables["screened"].Value)
		}
	})
}

// 03 CS-61/CS-62, OQ-2, OQ-3: hostile code-state scripts stop within their bound and fail the
// state through its on_error with the reason the spec gives; the session never hangs.
func TestCodeStateQuotasRouteThroughOnError(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	for _, tc := range []struct {
		name, script, want string
		vars               map[string]any
		flow               string // codeFlow (a generous budget) or timedOut (400 ms)
	}{
		{"infinite loop", "while (true) {}", "code state 'screen' timed out after 400 ms", nil, timedOut},
		{"never-settling await", "await new Promise(() => {});", "code state 'screen' failed", nil, timedOut},
		// the cases below check a cap, not the clock: their budget never runs out first
		{"runaway recursion", "const f = (n) => f(n + 1) + 1; f(0);", "call stack", nil, codeFlow},
		{"huge repeat", `"x".repeat(2 ** 30);`, "result too large", nil, codeFlow},
		{"1 MB result", `await tools.archmax_get_variables();`, "exceeds maxResultChars", map[string]any{"big": big}, codeFlow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := codeHarnessFlow(t, tc.flow, tc.script)
			h.script(says("Something went wrong."))
			out := h.send("q1", "go", tc.vars) // a hang would be go test's timeout: nothing is timed here
			if out.State != "explain" || !strings.Contains(trailOf(out), "on_error:explain") {
				t.Fatalf("outcome in %s, trail %s", out.State, trailOf(out))
			}
			n := notes(out)
			if len(n) == 0 || !strings.Contains(n[len(n)-1].Text, tc.want) {
				t.Errorf("error note = %+v, want it to contain %q", n, tc.want)
			}
		})
	}
}
