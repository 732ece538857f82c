package sandbox

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// replCall runs src on repl as an archmax_eval (configure may turn it into a run) with the
// typical surface (controls included: the REPL must drop them).
func replCall(t *testing.T, repl *REPL, host Host, src string, configure func(*ScriptCall)) ScriptResult {
	t.Helper()
	call := &ScriptCall{Source: []byte(src), Tools: surface}
	if configure != nil {
		configure(call)
	}
	res, err := repl.Run(context.Background(), call, host)
	if err != nil {
		t.Fatalf("Run(%q): %v", src, err)
	}
	return res
}

func wantOK(t *testing.T, res ScriptResult, text string) {
	t.Helper()
	if res.Error || res.Err != nil || res.Text != text {
		t.Fatalf("got %+v, want text %q", res, text)
	}
}

func wantFailure(t *testing.T, res ScriptResult, text string) {
	t.Helper()
	if !res.Error || res.Err == nil || res.Text != text {
		t.Fatalf("got %+v\nwant failure %q", res, text)
	}
}

func newTestREPL(t *testing.T) *REPL {
	t.Helper()
	repl := NewREPL()
	t.Cleanup(repl.Close)
	return repl
}

func asRun(file string, args map[string]any) func(*ScriptCall) {
	return func(c *ScriptCall) { c.File, c.Args = file, args }
}

func TestAS05_CompletionValues(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"expression", "1 + 1", "2"},
		{"awaited expression", "await Promise.resolve(5)", "5"},
		{"awaited host call", "const doc = await tools.fetch_doc({ id: 1 });\ndoc.toUpperCase()", `FETCH_DOC {"ID":1}`},
		{"top-level return", "const x = 3;\nreturn x * 2;\n'not reached'", "6"},
		{"return inside if", "if (true) return 'early';\n'late'", "early"},
		{"undefined renders nothing", "undefined", ""},
		{"declaration only", "let a = 1;", ""},
		{"last expression statement, declarations after it", "1; const y = 2;", "1"},
		{"object as JSON", "({ a: [1, 'b'], n: null })", `{"a":[1,"b"],"n":null}`},
		{"string verbatim", "'multi\\nline \"quoted\"'", "multi\nline \"quoted\""},
		{"number", "0.5", "0.5"},
		{"null", "null", "null"},
		{"assignment", "let z; z = 7", "7"},
		{"thenable completion is adopted", "tools.fetch_doc({})", "fetch_doc {}"},
		{"function without JSON", "(x) => x", "(x) => x"},
		{"BigInt", "10n ** 3n", "1000"},
		{"block statements are not top-level expression statements", "if (true) { 5 }", ""},
		{"empty source", "", ""},
		{"comment only", "// nothing", ""},
		{"strict directive kept", "'use strict';\nconst s = 1;\n(function () { return this })() === undefined", "true"},
		{"strict directive kept without declarations", "\"use strict\"; (function () { return this })() === undefined", "true"},
		{"sloppy by default", "(function () { return this })() === globalThis && this === globalThis", "true"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantOK(t, replCall(t, newTestREPL(t), &testHost{}, c.src, nil), c.want)
		})
	}
}

func TestAS05_ConsoleFirstThenValue(t *testing.T) {
	repl := newTestREPL(t)
	res := replCall(t, repl, &testHost{}, `console.log("a");
const v = await tools.fetch_doc({});
console.info("b", { c: 1 }, [2]); console.error("two\nlines");
v`, nil)
	wantOK(t, res, "a\nb {\"c\":1} [2]\ntwo\nlines\nfetch_doc {}")
	// Console capture is per call: the next call starts with none.
	wantOK(t, replCall(t, repl, &testHost{}, "'only the value'", nil), "only the value")
	wantOK(t, replCall(t, repl, &testHost{}, "console.log('only the log')", nil), "only the log")
}

func TestAS03_DefinitionsPersistAcrossCalls(t *testing.T) {
	repl := newTestREPL(t)
	host := &testHost{}
	// An archmax_run file defines helpers, with top-level await.
	file := `/** Helpers for orders. */
const fetched = await tools.fetch_doc({ id: 7 });
function double(x) { return x * 2 }
let counter = 0;
const inc = () => ++counter;
var { p, q: [r] = [] } = { p: 1, q: [2] };
class Box { constructor(v) { this.v = v } }
if (p) { var nested = "n" }
globalThis.direct = "g";
"loaded"`
	wantOK(t, replCall(t, repl, host, file, asRun("skills/orders/scripts/helpers.js", map[string]any{})), "loaded")
	// A later eval uses them.
	wantOK(t, replCall(t, repl, host, "[double(p + r), inc(), inc(), counter, new Box(4).v, nested, direct, fetched]", nil),
		`[6,1,2,2,4,"n","g","fetch_doc {\"id\":7}"]`)
	// Bindings are live: an assignment from a later call is what the earlier closure sees.
	wantOK(t, replCall(t, repl, host, "counter = 100; inc()", nil), "101")
	// A const stays constant.
	wantFailure(t, replCall(t, repl, host, "fetched = 1", nil), "Error: TypeError: Assignment to constant variable.\n    at <eval>:1:1")
	// Without top-level await too, and a name may be declared again by a later call.
	wantOK(t, replCall(t, repl, host, "const limit = 3; function cap(x) { return Math.min(x, limit) }", nil), "")
	wantOK(t, replCall(t, repl, host, "cap(10)", nil), "3")
	wantOK(t, replCall(t, repl, host, "const limit = 5; [limit, cap(10)]", nil), "[5,3]") // cap keeps its own binding
	// A call failing before its declaration leaves the earlier value in place.
	wantFailure(t, replCall(t, repl, host, "const limit = await Promise.reject(new Error('nope'));", nil), "Error: nope\n    at <eval>:1:36")
	wantOK(t, replCall(t, repl, host, "limit", nil), "5")
	// The same names do not leak into another REPL.
	wantOK(t, replCall(t, newTestREPL(t), host, "typeof double + typeof counter + typeof direct", nil), "undefinedundefinedundefined")
}

func TestAS10_AS12_Args(t *testing.T) {
	repl := newTestREPL(t)
	args := map[string]any{"n": 2, "variables": map[string]any{"order": map[string]any{"id": "o-1"}}}
	// archmax_eval injects no args.
	wantOK(t, replCall(t, repl, &testHost{}, "typeof args", nil), "undefined")
	wantOK(t, replCall(t, repl, &testHost{}, "args.variables.order.id = 'changed'; [args.n, args.variables.order.id]",
		asRun("skills/orders/scripts/check.js", args)), `[2,"changed"]`)
	if got := args["variables"].(map[string]any)["order"].(map[string]any)["id"]; got != "o-1" {
		t.Fatalf("the host's args changed: %v", got)
	}
	// A later eval still sees the run's args (AS-12).
	wantOK(t, replCall(t, repl, &testHost{}, "args.n", nil), "2")
	// The next run replaces them.
	wantOK(t, replCall(t, repl, &testHost{}, "JSON.stringify(args)", asRun("skills/orders/scripts/check.js", map[string]any{"variables": map[string]any{}})), `{"variables":{}}`)
	// Args are counted against memoryLimitBytes like any inbound bytes (OQ-3); nothing ran, so
	// the REPL keeps its state.
	res := replCall(t, repl, &testHost{}, "1", func(c *ScriptCall) {
		asRun("skills/x/scripts/a.js", map[string]any{"big": strings.Repeat("x", 200)})(c)
		c.Quotas.MemoryLimitBytes = 100
	})
	wantFailure(t, res, "Error: script exceeded memoryLimitBytes (100)")
	wantOK(t, replCall(t, repl, &testHost{}, "args.variables", nil), "{}")
	if _, err := repl.Run(context.Background(), &ScriptCall{Source: []byte("1"), Args: map[string]any{"f": func() {}}}, &testHost{}); err == nil {
		t.Fatal("non-JSON args were accepted")
	}
}

func TestAS01_PtcContext(t *testing.T) {
	repl := newTestREPL(t)
	wantOK(t, replCall(t, repl, &testHost{}, "[typeof defineCodeState, JSON.stringify(SANDBOX_CONTRACT), Object.isFrozen(SANDBOX_CONTRACT), typeof setTimeout, typeof require]", nil),
		`["undefined","{\"context\":\"ptc\",\"version\":3}",true,"undefined","undefined"]`)
	// Harness imports are stripped; they bind nothing like defineCodeState here.
	wantOK(t, replCall(t, repl, &testHost{}, `import { defineCodeState } from "@archmax-ai/harness/sandbox";
import * as harness from "@archmax-ai/harness";
[typeof defineCodeState, Object.keys(harness), harness.SANDBOX_CONTRACT.context]`, nil), `["undefined",["SANDBOX_CONTRACT"],"ptc"]`)
	// A code state's default export has no meaning here.
	res := replCall(t, repl, &testHost{}, "const a = 1;\nexport default async () => {};", nil)
	wantFailure(t, res, "Error: SyntaxError: <eval>:2:1: export default is not available in agent scripts: the last expression statement (or a top-level return) is the result")
	// Other export forms are dropped and the declaration stays.
	wantOK(t, replCall(t, repl, &testHost{}, "export const exported = 4; export { exported as alias };", nil), "")
	wantOK(t, replCall(t, repl, &testHost{}, "exported", nil), "4")
}

func TestAS01_CS21_ForeignImportsAreRefused(t *testing.T) {
	repl := newTestREPL(t)
	wantOK(t, replCall(t, repl, &testHost{}, "var kept = 1", nil), "")
	res := replCall(t, repl, &testHost{}, "const a = 1;\nimport fs from \"fs\";", nil)
	wantFailure(t, res, `Error: sandbox scripts may import only from '@archmax-ai/harness/*' type-carrier entry points; found 'import ... from "fs"'. Sandbox scripts are self-contained — inline the logic or use the tools bridge.`+"\n    at <eval>:2:1")
	if ie := as[*ImportError](t, res.Err); ie.Specifier != "fs" || ie.Line != 2 {
		t.Fatalf("got %+v", ie)
	}
	res = replCall(t, repl, &testHost{}, `import { readFile } from 'node:fs'`, asRun("skills/a/scripts/b.js", map[string]any{}))
	wantFailure(t, res, `Error: sandbox scripts may import only from '@archmax-ai/harness/*' type-carrier entry points; found 'import ... from "node:fs"' in skills/a/scripts/b.js. Sandbox scripts are self-contained — inline the logic or use the tools bridge.`+"\n    at skills/a/scripts/b.js:1:1")
	// Nothing ran, nothing was lost.
	wantOK(t, replCall(t, repl, &testHost{}, "kept", nil), "1")
}

func TestAS05_UncaughtErrors(t *testing.T) {
	repl := newTestREPL(t)
	host := &testHost{call: func(_ context.Context, tool, _ string) (string, error) {
		if tool == "fetch_doc" {
			return "", errors.New("'fetch_doc' is not allowed in state 'screen'.")
		}
		return "ok", nil
	}}
	wantOK(t, replCall(t, repl, host, "function boom() {\n  throw new Error('deep');\n}", nil), "")
	cases := []struct{ src, want string }{
		{"console.log('before');\nthrow new Error('boom');", "before\nError: boom\n    at <eval>:2:7"},
		{"const o = null;\no.x", "Error: TypeError: Cannot read property 'x' of undefined\n    at <eval>:2:3"},
		{"throw 'plain'", `Error: "plain"`},
		{"throw { code: 1 }", `Error: {"code":1}`},
		{"await tools.read_file({});\nawait tools.fetch_doc({});", "Error: 'fetch_doc' is not allowed in state 'screen'.\n    at <eval>:2:22"},
		// A helper an earlier call defined: the position is this call's, not a line of the other source.
		{"\n\nboom();", "Error: deep\n    at <eval>:3:5"},
		{"let x = ;", "Error: SyntaxError: <eval>:1:9: Unexpected token ;"},
		{"await new Promise(() => {});", "Error: " + deadlockMessage},
	}
	for _, c := range cases {
		res := replCall(t, repl, host, c.src, nil)
		wantFailure(t, res, c.want)
		if res.Reset {
			t.Fatalf("%q reset the REPL", c.src)
		}
	}
	// The position names the file of a run.
	res := replCall(t, repl, host, "const a = 1;\n  throw new RangeError('bad');", asRun("skills/orders/scripts/check.js", map[string]any{}))
	wantFailure(t, res, "Error: RangeError: bad\n    at skills/orders/scripts/check.js:2:9")
	wantOK(t, replCall(t, repl, host, "typeof boom", nil), "function")
}

func TestAS05_ResultIsCutToMaxResultChars(t *testing.T) {
	repl := newTestREPL(t)
	limit := func(n int) func(*ScriptCall) { return func(c *ScriptCall) { c.Quotas.MaxResultChars = n } }
	wantOK(t, replCall(t, repl, &testHost{}, "'x'.repeat(100)", limit(100)), strings.Repeat("x", 100))
	wantOK(t, replCall(t, repl, &testHost{}, "console.log('y'.repeat(60)); 'x'.repeat(90)", limit(100)),
		strings.Repeat("y", 60)+"\n"+strings.Repeat("x", 39)+"\n… [truncated: 51 characters over maxResultChars 100]")
	// UTF-16 units; a surrogate pair is never split.
	wantOK(t, replCall(t, repl, &testHost{}, "'a' + '😀'.repeat(60)", limit(100)),
		"a"+strings.Repeat("😀", 49)+"\n… [truncated: 22 characters over maxResultChars 100]")
	// A 1 MB JSON value under the default quota (100000).
	res := replCall(t, repl, &testHost{}, "Array.from({ length: 20000 }, (_, i) => ({ i, s: 'v'.repeat(40) }))", nil)
	full := replCall(t, repl, &testHost{}, "JSON.stringify(Array.from({ length: 20000 }, (_, i) => ({ i, s: 'v'.repeat(40) }))).length", limit(1<<30))
	var total int
	fmt.Sscan(full.Text, &total)
	if total < 1_000_000 {
		t.Fatalf("the value is only %d characters", total)
	}
	marker := fmt.Sprintf("\n… [truncated: %d characters over maxResultChars 100000]", total-100000)
	if res.Error || !strings.HasSuffix(res.Text, marker) || len(res.Text) != 100000+len(marker) || !strings.HasPrefix(res.Text, `[{"i":0,"s":"vvv`) {
		t.Fatalf("got %d bytes ending %q", len(res.Text), res.Text[max(0, len(res.Text)-120):])
	}
	// Errors are cut too.
	res = replCall(t, repl, &testHost{}, "throw new Error('e'.repeat(200))", limit(50))
	wantFailure(t, res, "Error: "+strings.Repeat("e", 43)+"\n… [truncated: 175 characters over maxResultChars 50]")
}

func TestSB04_TimeoutResetsTheREPL(t *testing.T) {
	repl := newTestREPL(t)
	wantOK(t, replCall(t, repl, &testHost{}, "function helper() { return 1 }\nglobalThis.g = 1;", nil), "1")
	res := replCall(t, repl, &testHost{}, "console.log('spinning'); while (true) {}", func(c *ScriptCall) { c.Quotas.TimeoutMs = 100 })
	wantFailure(t, res, "spinning\nError: timed out after 100 ms\n"+replResetNote)
	if te := as[*TimeoutError](t, res.Err); te.TimeoutMs != 100 || !res.Reset {
		t.Fatalf("got %+v reset=%v", te, res.Reset)
	}
	// The next call runs on a fresh runtime: it works, and the earlier definitions are gone.
	wantOK(t, replCall(t, repl, &testHost{}, "[1 + 1, typeof helper, typeof g, SANDBOX_CONTRACT.context]", nil), `[2,"undefined","undefined","ptc"]`)
	// A timeout while awaiting a host call resets it too.
	hang := &testHost{call: func(ctx context.Context, _, _ string) (string, error) { <-ctx.Done(); return "", ctx.Err() }}
	res = replCall(t, repl, hang, "await tools.fetch_doc()", func(c *ScriptCall) { c.Quotas.TimeoutMs = 50 })
	wantFailure(t, res, "Error: timed out after 50 ms\n"+replResetNote)
}

func TestQuotasApplyPerCall(t *testing.T) {
	repl := newTestREPL(t)
	// The prelude's size guard refuses a huge string before it is built (its refusal, not the
	// timeout, answers); the REPL survives.
	res := replCall(t, repl, &testHost{}, "var survivor = 1;\n'x'.repeat(2 ** 30)", nil)
	wantFailure(t, res, "Error: repeat: result too large (1073741824 characters, over the sandbox's limit of 10,000,000)\n    at <eval>:2:11")
	if res.Reset {
		t.Fatal("the refusal reset the REPL")
	}
	wantOK(t, replCall(t, repl, &testHost{}, "survivor", nil), "1")
	// Runaway recursion is a quota; the unwound runtime is replaced.
	res = replCall(t, repl, &testHost{}, "const f = (n) => f(n + 1) + 1; f(0);", nil)
	wantFailure(t, res, "Error: script exceeded the maximum call stack size (4096 frames)\n"+replResetNote)
	as[*QuotaError](t, res.Err)
	wantOK(t, replCall(t, repl, &testHost{}, "typeof survivor", nil), "undefined")
	// maxPtcCalls counts per call.
	two := 2
	host := &testHost{}
	quota := func(c *ScriptCall) { c.Quotas.MaxPtcCalls = &two }
	for range 2 {
		wantOK(t, replCall(t, repl, host, "await tools.fetch_doc({}); await tools.read_file({}); 'ok'", quota), "ok")
	}
	res = replCall(t, repl, host, "for (let i = 0; i < 3; i++) { try { await tools.fetch_doc({ i }) } catch (e) {} }", quota)
	wantFailure(t, res, "Error: script exceeded maxPtcCalls (2)\n"+replResetNote)
	if n := len(host.calls()); n != 6 {
		t.Fatalf("host calls = %d, want 6", n)
	}
	// A host result over maxResultChars rejects, as in code states (CS-61).
	big := &testHost{call: func(context.Context, string, string) (string, error) { return strings.Repeat("r", 201), nil }}
	res = replCall(t, repl, big, "await tools.fetch_doc()", func(c *ScriptCall) { c.Quotas.MaxResultChars = 200 })
	wantFailure(t, res, "Error: tool result of 201 characters exceeds maxResultChars (200)\n"+replResetNote)
}

func TestCS62_AS50_CancellationMidAwait(t *testing.T) {
	repl := newTestREPL(t)
	wantOK(t, replCall(t, repl, &testHost{}, "var before = 1", nil), "")
	ctx, cancel := context.WithCancel(context.Background())
	var started sync.WaitGroup
	started.Add(2)
	causes := make(chan string, 2)
	host := &testHost{call: func(c context.Context, tool, _ string) (string, error) {
		started.Done()
		<-c.Done()
		causes <- context.Cause(c).Error()
		return "late", nil
	}}
	go func() { started.Wait(); cancel() }()
	res, err := repl.Run(ctx, &ScriptCall{Source: []byte(`try { await Promise.all([tools.fetch_doc({}), tools.read_file({})]) }
catch (e) { await tools.read_file({ retry: true }) }`), Tools: surface}, host)
	if err != nil {
		t.Fatal(err)
	}
	ae := as[*AbortError](t, res.Err)
	if !errors.Is(ae, context.Canceled) || !res.Error || !res.Reset || res.Text != "Error: the turn was aborted: context canceled\n"+replResetNote {
		t.Fatalf("got %+v", res)
	}
	got := []string{<-causes, <-causes}
	for _, c := range got {
		if c != "Tool 'fetch_doc' failed: the turn was aborted" && c != "Tool 'read_file' failed: the turn was aborted" {
			t.Fatalf("host call causes = %q", got)
		}
	}
	if got[0] == got[1] {
		t.Fatalf("host call causes = %q", got)
	}
	if calls := host.calls(); len(calls) != 2 {
		t.Fatalf("host calls after the abort: %+v", calls)
	}
	// A context cancelled before the call runs nothing and keeps the REPL.
	res, err = repl.Run(ctx, &ScriptCall{Source: []byte("tools.fetch_doc({})"), Tools: surface}, host)
	if err != nil || !res.Error || res.Reset || len(host.calls()) != 2 {
		t.Fatalf("got %+v, %v, calls %d", res, err, len(host.calls()))
	}
	wantOK(t, replCall(t, repl, &testHost{}, "typeof before", nil), "undefined") // reset by the abort
}

// The three host calls are in flight at once: each waits until all three have started, so a
// serial bridge would never see a third (it gives up after a minute and the peak tells).
func TestBR11_AS40_PromiseAllRunsHostCallsConcurrently(t *testing.T) {
	var inFlight, peak atomic.Int32
	all := make(chan struct{})
	var once sync.Once
	host := &testHost{call: func(_ context.Context, tool, args string) (string, error) {
		n := inFlight.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		if n == 3 {
			once.Do(func() { close(all) })
		}
		select { // hang guard: serial calls never see three in flight
		case <-all:
		case <-time.After(time.Minute):
		}
		inFlight.Add(-1)
		return tool + args, nil
	}}
	res := replCall(t, newTestREPL(t), host, `const [a, b, c] = await Promise.all([
  tools.archmaxWorkflowEnrichOrder({ n: 1 }), tools["archmax_workflow_enrich-order"]({ n: 2 }), tools.fetchDoc({ n: 3 }),
]);
[a, b, c]`, func(c *ScriptCall) {
		c.Tools = []Tool{{Name: "archmax_workflow_enrich-order"}, {Name: "fetch_doc"}}
		c.Quotas.TimeoutMs = 120_000
	})
	wantOK(t, res, `["archmax_workflow_enrich-order{\"n\":1}","archmax_workflow_enrich-order{\"n\":2}","fetch_doc{\"n\":3}"]`)
	if peak.Load() != 3 {
		t.Fatalf("at most %d host calls were in flight at once, want 3", peak.Load())
	}
}

func TestBR05_ToolsIsOneViewScopedPerCall(t *testing.T) {
	repl := newTestREPL(t)
	first := []Tool{{Name: "read_file"}, {Name: "fetch_doc"}, {Name: "archmax_advance", Control: true},
		{Name: "archmax_eval"}, {Name: "archmax_get_variables"}, {Name: "task"}}
	host := &testHost{}
	res := replCall(t, repl, host, `globalThis.saved = tools;
const f = tools.fetchDoc;
[Object.keys(tools), "fetch_doc" in tools, tools.read_file === tools.readFile, typeof tools.archmaxAdvance, typeof tools.archmax_eval,
 typeof tools.archmaxGetVariables, typeof tools.task, typeof tools.write_file]`, func(c *ScriptCall) { c.Tools = first })
	wantOK(t, res, `[["readFile","fetchDoc"],true,true,"undefined","undefined","undefined","undefined","undefined"]`)
	// The second call's surface lacks fetch_doc: absent, also through a reference kept earlier.
	res = replCall(t, repl, host, `"use strict";
let assigned = "no error";
try { tools.fetchDoc = () => 1 } catch (e) { assigned = e.name }
[typeof tools.fetch_doc, typeof tools.fetchDoc, saved === tools, Object.keys(saved), assigned]`, func(c *ScriptCall) { c.Tools = first[:1] })
	wantOK(t, res, `["undefined","undefined",true,["readFile"],"TypeError"]`)
	// A script that overwrites the global gets the view back at its next call.
	wantOK(t, replCall(t, repl, host, "tools = 5; const tools2 = 1; typeof tools", func(c *ScriptCall) { c.Tools = first[:1] }), "number")
	wantOK(t, replCall(t, repl, host, "const tools = 'shadow'; typeof tools", func(c *ScriptCall) { c.Tools = first[:1] }), "string")
	wantOK(t, replCall(t, repl, host, "await tools.readFile({ a: 1 })", func(c *ScriptCall) { c.Tools = first[:1] }), `read_file {"a":1}`)
	// A function fetched earlier still reaches the host, which governs it (BR-02).
	wantOK(t, replCall(t, repl, host, "await f({})", func(c *ScriptCall) { c.Tools = first[:1] }), "fetch_doc {}")
	for _, c := range host.calls() {
		if c.control || c.tool == "archmax_advance" {
			t.Fatalf("a control reached the host: %+v", c)
		}
	}
	// A script that pins the global unconfigurable cannot keep it: the REPL starts afresh.
	wantOK(t, replCall(t, repl, host, "void Object.defineProperty(globalThis, 'tools', { value: 1, configurable: false }); var lost = 1", nil), "")
	res = replCall(t, repl, host, "[typeof tools.readFile, typeof lost]", nil)
	if res.Text != `["function","undefined"]` || !res.Reset || res.Error {
		t.Fatalf("got %+v", res)
	}
}

func TestBR30_REPLCallIDs(t *testing.T) {
	repl := newTestREPL(t)
	host := &testHost{}
	replCall(t, repl, host, "await tools.fetch_doc(); await tools.read_file();", nil)
	replCall(t, repl, host, "await tools.fetch_doc();", nil)
	n := 40
	replCall(t, repl, host, "await tools.fetch_doc();", func(c *ScriptCall) {
		c.NextCallID = func() string { n++; return fmt.Sprintf("ptc:%d", n) }
	})
	var ids []string
	for _, c := range host.calls() {
		ids = append(ids, c.id)
	}
	if !reflect.DeepEqual(ids, []string{"ptc:1", "ptc:2", "ptc:3", "ptc:41"}) {
		t.Fatalf("ids = %q", ids)
	}
}

func TestAS03_AS51_Close(t *testing.T) {
	repl := NewREPL()
	wantOK(t, replCall(t, repl, &testHost{}, "1", nil), "1")
	repl.Close()
	repl.Close() // idempotent
	if _, err := repl.Run(context.Background(), &ScriptCall{Source: []byte("1")}, &testHost{}); !errors.Is(err, ErrREPLClosed) {
		t.Fatalf("err = %v", err)
	}
	// Closing during a call aborts it; the late result of its host call reaches nothing.
	repl = NewREPL()
	started := make(chan struct{})
	release := make(chan struct{})
	cause := make(chan string, 1)
	host := &testHost{call: func(c context.Context, _, _ string) (string, error) {
		close(started)
		<-c.Done()
		cause <- context.Cause(c).Error()
		<-release // settles after the call returned
		return "late", nil
	}}
	go func() { <-started; repl.Close() }()
	res, err := repl.Run(context.Background(), &ScriptCall{Source: []byte("await tools.fetch_doc()"), Tools: surface}, host)
	close(release)
	if err != nil {
		t.Fatal(err)
	}
	if ae := as[*AbortError](t, res.Err); !errors.Is(ae, ErrREPLClosed) {
		t.Fatalf("got %+v", res)
	}
	if got := <-cause; got != "Tool 'fetch_doc' failed: the turn was aborted" {
		t.Fatalf("cause = %q", got)
	}
	if _, err := repl.Run(context.Background(), &ScriptCall{Source: []byte("1")}, &testHost{}); !errors.Is(err, ErrREPLClosed) {
		t.Fatalf("err = %v", err)
	}
}

func TestREPLsAreRaceClean(t *testing.T) {
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			repl := NewREPL()
			defer repl.Close()
			host := &testHost{}
			for j := range 5 {
				src := fmt.Sprintf("var total = (globalThis.total ?? 0) + %d;\nconst got = await Promise.all([tools.fetch_doc({ j: %d }), tools.read_file({})]);\n[total, got.length]", j, j)
				res, err := repl.Run(context.Background(), &ScriptCall{Source: []byte(src), Tools: surface}, host)
				if want := fmt.Sprintf("[%d,2]", j*(j+1)/2); err != nil || res.Text != want {
					errs <- fmt.Sprintf("repl %d call %d: %q %v, want %s", i, j, res.Text, err, want)
				}
			}
		}()
	}
	// Calls on one REPL from several goroutines are serialised.
	shared := newTestREPL(t)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				res, err := shared.Run(context.Background(), &ScriptCall{Source: []byte("var n = (globalThis.n ?? 0) + 1; await tools.fetch_doc(); n"), Tools: surface}, &testHost{})
				if err != nil || res.Error {
					errs <- fmt.Sprintf("shared: %+v %v", res, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	wantOK(t, replCall(t, shared, &testHost{}, "n", nil), "40")
}

// CS-61 for a REPL: the memory bound covers what the whole REPL holds, not one call's growth —
// calls that each add a little to a global hoard are stopped once the REPL's heap growth
// passes the budget, and the next call starts on a fresh runtime.
func TestREPLMemoryBoundSpansCalls(t *testing.T) {
	repl := NewREPL()
	defer repl.Close()
	const limitBytes = 4 << 20 // the watchdog trips at twice this growth
	src := `globalThis.hoard = globalThis.hoard || [];
for (let i = 0; i < 40; i++) hoard.push(Array.from({ length: 100 }, (_, j) => ({ i, j })));
const until = Date.now() + 25; while (Date.now() < until) {} // long enough for the watchdog to sample
hoard.length`
	tripped := 0
	for call := 1; call <= 30 && tripped == 0; call++ {
		res := replCall(t, repl, &testHost{}, src, func(c *ScriptCall) { c.Quotas.MemoryLimitBytes = limitBytes })
		if res.Error {
			if !strings.Contains(res.Text, "memoryLimitBytes") || !res.Reset {
				t.Fatalf("call %d failed otherwise: %+v", call, res)
			}
			tripped = call
		}
	}
	if tripped < 2 {
		t.Fatalf("the bound tripped at call %d; want a later call, after the hoard outgrew one call's budget", tripped)
	}
	res := replCall(t, repl, &testHost{}, "typeof hoard", nil)
	if res.Error || res.Text != "undefined" {
		t.Errorf("after the trip: %+v, want a fresh runtime", res)
	}
}

// BR-02 for agent scripts: `tools` lists the surface only, yet resolves every bridged tool —
// a call reaches the host, which governs it; controls and the AS-30/AS-31 names never resolve.
func TestBR02_BridgedToolsResolveUnlisted(t *testing.T) {
	repl := newTestREPL(t)
	host := &testHost{}
	bridged := []Tool{{Name: "remove_file"}, {Name: "archmax_advance"}, {Name: "task"}, {Name: "read_file"}}
	res := replCall(t, repl, host, `const r = await tools.removeFile({ file_path: "x" });
[typeof tools.remove_file, typeof tools.removeFile, "removeFile" in tools, Object.keys(tools).includes("removeFile"),
 typeof tools.archmax_advance, typeof tools.task, Object.keys(tools).filter((k) => k === "readFile").length, r]`,
		func(c *ScriptCall) { c.Bridged = bridged })
	wantOK(t, res, `["function","function",false,false,"undefined","undefined",1,"remove_file {\"file_path\":\"x\"}"]`)
	if calls := host.calls(); len(calls) != 1 || calls[0].tool != "remove_file" || calls[0].control {
		t.Errorf("host calls %+v", calls)
	}
}
