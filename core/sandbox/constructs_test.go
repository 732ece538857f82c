package sandbox

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// Issue 7: scripts of our own using every construct the seeds' example scripts use — a typed
// import, defineCodeState, a plain default export, a plain script reading args, optional
// chaining, findLast, a regex with named groups, Promise.all over tool calls, try/catch of a
// refused call — run in the sandbox (code states and the agent-script REPL).
func TestSeedConstructsRun(t *testing.T) {
	host := &testHost{call: func(_ context.Context, tool, args string) (string, error) {
		if tool == "fetch_doc" && strings.Contains(args, "secret") {
			return "", errors.New("[workflow] BLOCKED: fetch_doc may not read secret documents")
		}
		return `{"tool":"` + tool + `","ok":true}`, nil
	}}
	codeStates := map[string]string{
		"typed import + defineCodeState + optional chaining + findLast": `
import type { CodeStateInput } from "@archmax-ai/harness/sandbox";
import { defineCodeState } from "@archmax-ai/harness/sandbox";
/** @param {CodeStateInput} input */
export default defineCodeState(async ({ variables, tools }) => {
  const last = [1, 2, 3, 4].findLast((n) => n % 2 === 1);
  const amount = variables.order?.amount ?? 0;
  const missing = variables.customer?.address?.city ?? "none";
  console.log(last, amount, missing);
  tools.archmax_advance({ to: "next", reason: "ok" });
});`,
		"plain default export + named groups + Promise.all + try/catch": `
export default async ({ tools }) => {
  const m = "order o-17 for 3 units".match(/order (?<id>o-\d+) for (?<qty>\d+)/);
  const [a, b, c] = await Promise.all([tools.fetch_doc({ id: 1 }), tools.read_file({ file_path: "x" }), tools.fetchDoc({ id: 2 })]);
  let refused = "";
  try { await tools.fetch_doc({ id: "secret" }); } catch (e) { refused = e.message; }
  console.log(m.groups.id, m.groups.qty, JSON.parse(a).ok && JSON.parse(b).ok && JSON.parse(c).ok, refused);
  tools.archmax_advance({ to: "next", reason: "ok" });
};`,
	}
	for name, src := range codeStates {
		t.Run(name, func(t *testing.T) {
			r := runWith(t, context.Background(), host, src, nil)
			mustSucceed(t, r)
			if len(r.logs) != 1 {
				t.Fatalf("logs = %q", r.logs)
			}
			switch {
			case strings.HasPrefix(name, "typed"):
				if r.logs[0] != "3 12.5 none" {
					t.Errorf("log = %q", r.logs[0])
				}
			default:
				if r.logs[0] != "o-17 3 true [workflow] BLOCKED: fetch_doc may not read secret documents" {
					t.Errorf("log = %q", r.logs[0])
				}
			}
		})
	}
	t.Run("plain script with args (archmax_run)", func(t *testing.T) {
		repl := NewREPL()
		defer repl.Close()
		res, err := repl.Run(context.Background(), &ScriptCall{File: "skills/orders/scripts/sum.js",
			Source: []byte("const total = args.items.reduce((s, i) => s + (i?.qty ?? 0), 0);\n({ total, customer: args.variables?.customer })"),
			Args:   map[string]any{"items": []any{map[string]any{"qty": 2}, map[string]any{}}, "variables": map[string]any{"customer": "acme"}},
			Tools:  surface}, host)
		if err != nil || res.Error || res.Text != `{"total":2,"customer":"acme"}` {
			t.Fatalf("run = %+v, %v", res, err)
		}
	})
}
