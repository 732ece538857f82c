package session

import (
	"context"
	"strings"
	"testing"
)

// Every way into a human state parks (02 §3.1): a turn opening there, a code state's
// advance, an on_error route, and a decision whose target is another human state.
const entryFlow = `
states:
  gate:
    type: human
    title: Gate
    triggers:
      gate:
    transitions:
      - to: second
        description: Needs a second look.
      - to: finish
        description: Fine.
        type: approve
  second:
    type: human
    title: Second look
    transitions:
      - to: finish
        description: Fine.
  screen:
    type: code
    script: scripts/screen.js
    triggers:
      screen:
    transitions:
      - to: gate
        description: A person must decide.
  risky:
    type: code
    script: scripts/risky.js
    triggers:
      risky:
    on_error: gate
    transitions:
      - to: finish
        description: Done.
  finish:
    instructions: Close.
`

func entryHarness(t *testing.T) *harness {
	return newHarness(t, entryFlow, map[string]string{
		"workflows/wf/scripts/risky.js": `throw new Error("the ledger is locked");`,
		"workflows/wf/scripts/screen.js": `export default async ({ tools }) => {
  tools.archmax_advance({ to: "gate", reason: "needs a person" });
};`,
	})
}

func TestEveryEntryIntoAHumanStateParks(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name, trigger, trail string
		script               []reply
	}{
		{"a turn opening at a human state", "gate", "trigger:gate", []reply{says("A person decides next.")}},
		{"a code state's advance", "screen", "trigger:screen code:gate", []reply{says("Handed to the gate.")}},
		{"an on_error route", "risky", "trigger:risky on_error:gate", []reply{says("A person will look at it.")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := entryHarness(t)
			h.script(c.script...)
			out, err := h.engine().Send(ctx, "s1", SendInput{Message: "go", Trigger: c.trigger})
			if err != nil {
				t.Fatal(err)
			}
			if out.Kind != KindParked || out.State != "gate" || out.Pending == nil || out.Pending.Decision.Seq != 1 || out.Pending.Decision.Title != "Gate" {
				t.Fatalf("outcome %s in %s (%s), pending %+v, trail %s, msgs %+v", out.Kind, out.State, out.Rejected, out.Pending, trailOf(out), out.Messages)
			}
			if got := trailOf(out); got != c.trail {
				t.Errorf("trail = %s, want %s", got, c.trail)
			}
		})
	}
	// a decision into another human state presents it at once: a fresh record, seq 2
	h := entryHarness(t)
	h.script(says("A person decides next."))
	first, err := h.engine().Send(ctx, "s1", SendInput{Message: "go", Trigger: "gate"})
	if err != nil {
		t.Fatal(err)
	}
	h.script(says("Over to the second look."))
	out, err := h.engine().Decide(ctx, "s1", Decision{To: "second", Comment: "look again"})
	if err != nil || out.Kind != KindParked || !out.Reparked || out.State != "second" || out.Pending.Decision.Seq != 2 || out.Pending.ParkID == first.Pending.ParkID {
		t.Fatalf("decision into a human state: %v %+v", err, out)
	}
	if ns := notes(out); len(ns) == 0 || !strings.Contains(ns[0].Text, "second") {
		t.Errorf("decision note = %+v", ns)
	}
}

// 02 §3.2: evidence is refused (the transition not taken) unless the target is a human
// state, and over 20 paths; state-declared evidence comes first, duplicates dropped.
func TestAdvanceEvidenceRules(t *testing.T) {
	h := newHarness(t, reviewFlow, nil)
	many := make([]any, 21)
	for i := range many {
		many[i] = "scratchpad/f" + strings.Repeat("x", i) + ".md"
	}
	h.script(
		calls("", call{"archmax_advance", map[string]any{"to": "review", "reason": "r", "evidence": many}}),
		calls("", call{"archmax_advance", map[string]any{"to": "review", "reason": "r", "evidence": []any{"../secret"}}}),
		calls("", call{"archmax_advance", map[string]any{"to": "review", "reason": "r", "evidence": []any{"scratchpad/draft.md", "scratchpad/a.md", "scratchpad/a.md"}}}),
		says("Handed over."),
	)
	out := h.send("s1", "write it", nil)
	if m := toolMessage(t, out, "archmax_advance", 0); !strings.Contains(m.Text, "21 evidence paths were attached; at most 20 may be.") {
		t.Errorf("over 20: %q", m.Text)
	}
	if m := toolMessage(t, out, "archmax_advance", 1); !strings.Contains(m.Text, "evidence path '../secret' points outside the workspace.") {
		t.Errorf("escape: %q", m.Text)
	}
	if out.Kind != KindParked || strings.Join(out.Pending.Decision.Evidence, ",") != "scratchpad/draft.md,scratchpad/a.md" {
		t.Errorf("evidence = %+v", out.Pending)
	}
}
