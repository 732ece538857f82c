package sandbox

import (
	"fmt"
	"testing"
)

// ScanVariableWrites reads the literal archmax_set_variables calls of a script; any other
// write is not seen.
func TestScanVariableWrites(t *testing.T) {
	src := `/** Screen. */
import { defineCodeState } from "@archmax-ai/harness/sandbox";

export default defineCodeState(async ({ tools }) => {
  const t = tools;
  if (Math.random() > 2) {
    await tools.archmax_set_variables({ variables: { area: "x", "zone": 1 }, lock: true });
  }
  await t.archmax_set_variables({ lock: false, variables: { note: "n" } });
  await tools["archmax_set_variables"]({ variables: { level: 1 } });
  const owner = "o";
  await tools.archmax_set_variables({ variables: { owner }, lock: true });
  await tools.archmax_set_variables({ variables: { area: "y" } });
  await tools.archmax_set_variables({ variables: { [owner]: 1, ...{ spread: 1 } }, lock: true });
  const vars = { hidden: 1 };
  await tools.archmax_set_variables({ variables: vars, lock: true });
  await tools.archmax_set_variables({ variables: { maybe: 1 }, lock: Math.random() > 0.5 });
  const f = tools.archmax_set_variables;
  await f({ variables: { aliased: 1 }, lock: true });
  return tools.archmax_advance({ to: "next", reason: "done" });
});
`
	w, err := ScanVariableWrites("scripts/screen.js", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(w.Locked), "[area owner zone]"; got != want {
		t.Errorf("Locked = %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(w.Unlocked), "[area level maybe note]"; got != want {
		t.Errorf("Unlocked = %s, want %s", got, want)
	}
	if _, err := ScanVariableWrites("scripts/bad.js", []byte(`import fs from "node:fs";`)); err == nil {
		t.Error("a foreign import scanned without Prepare's error")
	}
}
