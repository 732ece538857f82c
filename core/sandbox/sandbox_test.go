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

const advanceArgs = `{"to":"next","reason":"ok"}`

func TestCS24_AuthoringForms(t *testing.T) {
	body := `async ({ state, variables, tools }) => {
  await tools.archmax_advance({ to: "next", reason: "ok" });
}`
	cases := map[string]string{
		"typed import + defineCodeState": `import { defineCodeState } from "@archmax-ai/harness/sandbox";
export default defineCodeState(` + body + `);`,
		"bare defineCodeState":           `export default defineCodeState(` + body + `);`,
		"defineCodeState without export": `defineCodeState(` + body + `);`,
		"export default async function": `export default async function (input) {
  await input.tools.archmax_advance({ to: "next", reason: "ok" });
}`,
		"named default function, hoisted": `if (typeof run !== "function") throw new Error("not hoisted");
export default async function run({ tools }) { await tools.archmax_advance({ to: "next", reason: "ok" }); }`,
		"plain script with top-level await": `const v = args.variables;
await tools.archmax_advance({ to: "next", reason: "ok" });`,
		"export const + export {x as default}": `export const main = ` + body + `;
export { main as default };`,
		"type import and side-effect import": `import type { CodeStateInput } from "@archmax-ai/harness/sandbox";
import "@archmax-ai/harness/sandbox";
export default ` + body + `;`,
		"aliased import": `import { defineCodeState as define } from "@archmax-ai/harness/sandbox";
export default define(` + body + `);`,
		"namespace import": `import * as harness from "@archmax-ai/harness";
if (harness.SANDBOX_CONTRACT.context !== "code") throw new Error("contract");
export default harness.defineCodeState(` + body + `);`,
		"default import, multi-line, no semicolon": `import harness
  from '@archmax-ai/harness/sandbox'
export default harness.defineCodeState(` + body + `)`,
		"export default on its own line": `export default
  defineCodeState(` + body + `);`,
	}
	for name, src := range cases {
		t.Run(name, func(t *testing.T) {
			r := runScript(t, src)
			mustSucceed(t, r)
			calls := r.host.calls()
			if len(calls) != 1 || calls[0].tool != "archmax_advance" || calls[0].args != advanceArgs || !calls[0].control {
				t.Fatalf("host calls = %+v", calls)
			}
		})
	}
}

func TestCS22_ModuleIsStrictPlainScriptIsNot(t *testing.T) {
	r := runScript(t, "export default async () => { undeclared = 1 };")
	if se := as[*ScriptError](t, r.err); se.Message != "ReferenceError: undeclared is not defined" || se.Line != 1 {
		t.Fatalf("got %+v", se)
	}
	mustSucceed(t, runScript(t, "undeclared = 1; if (this !== globalThis) throw new Error('this');"))
}

func TestCS20_ModuleSyntaxInStringsAndCommentsIsUntouched(t *testing.T) {
	r := runScript(t, `// import fs from "fs"
/* export default 1 */
const s = 'export default 2', u = "import x from 'fs'", tpl = `+"`export ${1}`"+`, re = /import/;
const o = { import: 1, export: 2 }; const importantThing = o.import + o.export;
console.log(s, u, tpl, re.source, importantThing);`)
	mustSucceed(t, r)
	if got := joinLogs(r); got != "export default 2 import x from 'fs' export 1 import 3" {
		t.Fatalf("logs = %q", got)
	}
}

func TestCS30_CS32_InputObjectAndArgs(t *testing.T) {
	src := `export default async (input) => {
  console.log(JSON.stringify(Object.keys(input)), JSON.stringify(Object.keys(args)));
  console.log(input.state, input.trigger, input.variables.order.id, input.tools === tools, "tools" in args);
}`
	r := runWith(t, context.Background(), &testHost{}, src, func(c *CodeStateRun) { c.Trigger = "on-order" })
	mustSucceed(t, r)
	want := []string{`["state","trigger","variables","tools"] ["state","trigger","variables"]`, "screen on-order o-1 true false"}
	if !reflect.DeepEqual(r.logs, want) {
		t.Fatalf("logs = %q", r.logs)
	}
	r = runScript(t, `console.log("trigger" in args, JSON.stringify(args))`)
	mustSucceed(t, r)
	if got := joinLogs(r); got != `false {"state":"screen","variables":{"order":{"amount":12.5,"id":"o-1"}}}` {
		t.Fatalf("logs = %q", got)
	}
}

func TestCS31_VariablesAreADeepCopy(t *testing.T) {
	vars := map[string]any{"order": map[string]any{"id": "o-1", "lines": []any{"a"}}}
	src := `export default async ({ variables }) => {
  variables.order.id = "changed"; variables.order.lines.push("b"); variables.added = true; delete variables.order;
  args.variables.x = 1;
}`
	r := runWith(t, context.Background(), &testHost{}, src, func(c *CodeStateRun) { c.Variables = vars })
	mustSucceed(t, r)
	want := map[string]any{"order": map[string]any{"id": "o-1", "lines": []any{"a"}}}
	if !reflect.DeepEqual(vars, want) {
		t.Fatalf("variables changed: %v", vars)
	}
}

func TestCS21_ForeignImportsAreRefused(t *testing.T) {
	cases := []struct {
		src, spec string
		line, col int
	}{
		{`import fs from "fs";`, "fs", 1, 1},
		{"// reads\nconst a = 1; import { readFile } from 'node:fs'", "node:fs", 2, 14},
		{"export default 1;\n  import helper from \"./helper.js\";", "./helper.js", 2, 3},
		{`import "lodash";`, "lodash", 1, 1},
		{"const é = 1;  import x from \"@archmax-ai/harnessX\"", "@archmax-ai/harnessX", 1, 15},
	}
	for _, c := range cases {
		t.Run(c.spec, func(t *testing.T) {
			err := runScript(t, c.src).err
			ie := as[*ImportError](t, err)
			want := `sandbox scripts may import only from '@archmax-ai/harness/*' type-carrier entry points; found 'import ... from "` +
				c.spec + `"' in scripts/test.js. Sandbox scripts are self-contained — inline the logic or use the tools bridge.`
			if ie.Error() != want || ie.Name() != "ForbiddenSandboxImportError" {
				t.Fatalf("message = %q", ie.Error())
			}
			if ie.Specifier != c.spec || ie.File != "scripts/test.js" || ie.Line != c.line || ie.Column != c.col {
				t.Fatalf("got %+v, want %s at %d:%d", ie, c.spec, c.line, c.col)
			}
			if perr := Prepare("scripts/test.js", []byte(c.src)); perr == nil || perr.Error() != want {
				t.Fatalf("Prepare = %v", perr)
			}
		})
	}
	if msg := (&ImportError{Specifier: "fs"}).Error(); strings.Contains(msg, " in ") {
		t.Fatalf("file-less message = %q", msg)
	}
}

func TestSB06_UnsupportedModuleSyntaxIsASyntaxError(t *testing.T) {
	cases := []struct {
		name, src string
		line, col int
		msg       string
	}{
		{"dynamic import", "const m = await import('fs');", 1, 17, "dynamic import() is not available in the sandbox"},
		{"import.meta", "\nconsole.log(import.meta.url)", 2, 13, "import.meta is not available in the sandbox"},
		{"nested export", "if (true) {\n  export default 1;\n}", 2, 3, "'import' and 'export' may only appear at the top level"},
		{"import in a function", "function f() { import x from '@archmax-ai/harness' }", 1, 16, "'import' and 'export' may only appear at the top level"},
		{"re-export all", `export * from "@archmax-ai/harness";`, 1, 1, "re-exports (export * from) are not available in the sandbox"},
		{"re-export list", `const a = 1; export { a } from "x";`, 1, 14, "re-exports (export … from) are not available in the sandbox"},
		{"duplicate default", "export default 1;\nexport default 2;", 2, 1, "Duplicate export of 'default'"},
		{"import attributes", `import d from "@archmax-ai/harness" with { type: "json" };`, 1, 37, "import attributes are not supported in the sandbox"},
		{"reserved wrapper name", "const x = 1;\nlet __cs = 2;", 2, 5, "'__cs' is reserved in sandbox scripts"},
		{"top-level return", "const a = 1;\nif (a) return 5;", 2, 8, "Illegal return statement"},
		{"escaping the wrapper", "})(); (function(){", 1, 1, "Unexpected token }"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			se := as[*SyntaxError](t, Prepare("scripts/test.js", []byte(c.src)))
			if se.Line != c.line || se.Column != c.col || se.Message != c.msg || se.File != "scripts/test.js" {
				t.Fatalf("got %+v, want %d:%d %q", se, c.line, c.col, c.msg)
			}
		})
	}
}

func TestSB06_ReturnInsideFunctionsIsFine(t *testing.T) {
	mustSucceed(t, runScript(t, "function f() { return 1 }\nconst g = () => { return 2 };\nclass C { m() { return 3 } }\nconsole.log(f() + g() + new C().m());"))
}

func TestCS23_SyntaxErrorPositions(t *testing.T) {
	cases := []struct {
		name, src string
		line, col int
		msg       string
	}{
		{"first line, wrapper prefix removed", "let x = ;", 1, 9, "Unexpected token ;"},
		{"later line", "const a = 1;\n\n  foo(;", 3, 7, "Unexpected token ;"},
		{"CRLF", "const a = 1;\r\nconst b = 2;\r\nlet x = ;", 3, 9, "Unexpected token ;"},
		{"UTF-16 columns", "const s = \"😀é\"; let x = ;", 1, 26, "Unexpected token ;"},
		{"after a module rewrite", "import { defineCodeState } from \"@archmax-ai/harness/sandbox\";\nexport default defineCodeState(async () => { foo(; });", 2, 50, "Unexpected token ;"},
		{"compile-time redeclaration", "let a = 1;\nlet a = 2;", 2, 5, "Identifier 'a' has already been declared"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := runScript(t, c.src).err
			se := as[*SyntaxError](t, err)
			if se.Line != c.line || se.Column != c.col || se.Message != c.msg {
				t.Fatalf("got %+v, want %d:%d %q", se, c.line, c.col, c.msg)
			}
			if want := fmt.Sprintf("SyntaxError: scripts/test.js:%d:%d: %s", c.line, c.col, c.msg); se.Error() != want {
				t.Fatalf("Error() = %q, want %q", se.Error(), want)
			}
		})
	}
}

func TestCS43_ThrownValues(t *testing.T) {
	cases := []struct {
		name, src, msg string
		line, col      int
	}{
		{"TypeError", "const x = {};\nx.f();", "TypeError: Object has no member 'f'", 2, 4},
		{"Error after module import", "import { defineCodeState } from \"@archmax-ai/harness/sandbox\";\nexport default defineCodeState(async () => {\n  throw new RangeError(\"bad \" + 1);\n});", "RangeError: bad 1", 3, 9},
		{"require is not available", "const fs = require(\"fs\");", "ReferenceError: require is not defined", 1, 19},
		{"defineCodeState of a non-function", "defineCodeState(5);", "TypeError: defineCodeState expects a function", 1, 16},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			se := as[*ScriptError](t, runScript(t, c.src).err)
			if se.Message != c.msg || se.Line != c.line || se.Column != c.col || se.File != "scripts/test.js" {
				t.Fatalf("got %+v, want %q at %d:%d", se, c.msg, c.line, c.col)
			}
		})
	}
	// Values that are not Errors carry no stack: their JSON text, no position.
	for src, msg := range map[string]string{
		`throw { code: 1, why: "x" };`: `{"code":1,"why":"x"}`,
		`throw "boom";`:                `"boom"`,
		`throw undefined;`:             "undefined",
		`await Promise.reject(42);`:    "42",
	} {
		se := as[*ScriptError](t, runScript(t, src).err)
		if *se != (ScriptError{Message: msg}) {
			t.Fatalf("%s: got %+v", src, se)
		}
	}
}

func TestCS43_RejectionAfterAwaitHasItsPosition(t *testing.T) {
	src := `export default async ({ tools }) => {
  const doc = await tools.fetch_doc({ id: 1 });
  if (doc) {
    throw new Error("late: " + doc);
  }
};`
	se := as[*ScriptError](t, runScript(t, src).err)
	if se.Message != `Error: late: fetch_doc {"id":1}` || se.Line != 4 || se.Column != 11 {
		t.Fatalf("got %+v", se)
	}
}

func TestBR13_HostRefusalRejectsWithItsMessageAtTheCallSite(t *testing.T) {
	host := &testHost{call: func(context.Context, string, string) (string, error) {
		return "", errors.New("'fetch_doc' is not allowed in state 'screen'.")
	}}
	src := `try { await tools.fetch_doc({}) } catch (e) { console.log(e instanceof Error, e.message) }
await tools.read_file({});
`
	r := runWith(t, context.Background(), host, src, nil)
	se := as[*ScriptError](t, r.err)
	if se.Message != "Error: 'fetch_doc' is not allowed in state 'screen'." || se.Line != 2 || se.Column != 22 {
		t.Fatalf("got %+v", se)
	}
	if got := joinLogs(r); got != "true 'fetch_doc' is not allowed in state 'screen'." {
		t.Fatalf("logs = %q", got)
	}
}

func TestCS25_DefinitionErrors(t *testing.T) {
	cases := map[string]string{
		"export default 42": "the default export is not a function",
		"export default defineCodeState(async () => {}); defineCodeState(async () => {});": "two different state functions were registered",
		"defineCodeState(async () => {}); defineCodeState(async () => {});":                "two different state functions were registered",
	}
	for src, msg := range cases {
		de := as[*DefinitionError](t, runScript(t, src).err)
		if de.Message != msg {
			t.Fatalf("%s: got %q", src, de.Message)
		}
	}
	// The same function registered twice is fine.
	mustSucceed(t, runScript(t, "const f = async () => {}; defineCodeState(f); export default defineCodeState(f);"))
}

func TestCS41_ReturnValueIsIgnored(t *testing.T) {
	for _, src := range []string{
		"export default async () => false;",
		"export default () => ({ to: 'x' });",
		"export default () => Promise.resolve('done');",
		"42",
	} {
		mustSucceed(t, runScript(t, src))
	}
}

func TestCS26_NoVariableSubstitution(t *testing.T) {
	r := runScript(t, "await tools.fetch_doc({ q: '${{ order.id }}' }); console.log('${{ order.id }}');")
	mustSucceed(t, r)
	if calls := r.host.calls(); calls[0].args != `{"q":"${{ order.id }}"}` || r.logs[0] != "${{ order.id }}" {
		t.Fatalf("calls %+v logs %q", calls, r.logs)
	}
}

func TestCS34_Globals(t *testing.T) {
	r := runScript(t, `"use strict";
console.log(typeof setTimeout, typeof setInterval, typeof require, typeof process, typeof fetch);
console.log(JSON.stringify(SANDBOX_CONTRACT), Object.isFrozen(SANDBOX_CONTRACT));
try { SANDBOX_CONTRACT.version = 4 } catch (e) { console.log(e.name) }`)
	mustSucceed(t, r)
	want := []string{"undefined undefined undefined undefined undefined", `{"context":"code","version":3} true`, "TypeError"}
	if !reflect.DeepEqual(r.logs, want) {
		t.Fatalf("logs = %q", r.logs)
	}
}

func TestCS60_EachRunHasAFreshRuntime(t *testing.T) {
	mustSucceed(t, runScript(t, "globalThis.leak = 1; Array.prototype.evil = 1;"))
	r := runScript(t, "console.log(typeof leak, [].evil);")
	mustSucceed(t, r)
	if r.logs[0] != "undefined undefined" {
		t.Fatalf("logs = %q", r.logs)
	}
}

func TestBR01_BR05_ToolsObject(t *testing.T) {
	tools := []Tool{{Name: "read_file"}, {Name: "archmax_workflow_enrich-order"}, {Name: "readFile"}, {Name: "copy-file"}, {Name: "archmax_advance", Control: true}}
	src := `"use strict";
console.log(JSON.stringify(Object.keys(tools)));
console.log(tools.read_file === tools.readFile, typeof tools["archmax_workflow_enrich-order"], tools.archmaxWorkflowEnrichOrder === tools["archmax_workflow_enrich-order"]);
console.log(tools.write_file, "write_file" in tools, Object.isFrozen(tools));
try { tools.readFile = 1 } catch (e) { console.log(e.name) }
await tools.readFile({ a: 1 }); await tools.copyFile(); await tools.archmaxAdvance({ to: "x", reason: "y" });`
	r := runWith(t, context.Background(), &testHost{}, src, func(c *CodeStateRun) { c.Tools = tools })
	mustSucceed(t, r)
	want := []string{`["readFile","archmaxWorkflowEnrichOrder","copyFile","archmaxAdvance"]`, "true function true", "undefined false true", "TypeError"}
	if !reflect.DeepEqual(r.logs, want) {
		t.Fatalf("logs = %q", r.logs)
	}
	calls := r.host.calls()
	got := []string{calls[0].tool + calls[0].args, calls[1].tool + calls[1].args, calls[2].tool}
	if !reflect.DeepEqual(got, []string{`read_file{"a":1}`, "copy-file{}", "archmax_advance"}) || !calls[2].control {
		t.Fatalf("calls = %+v", calls)
	}
}

func TestBR03_CamelCase(t *testing.T) {
	for in, want := range map[string]string{
		"read_file":                     "readFile",
		"archmax_workflow_enrich-order": "archmaxWorkflowEnrichOrder",
		"ls":                            "ls",
		"a__b":                          "aB",
		"_private":                      "Private",
		"x-ünicode":                     "xÜnicode",
	} {
		if got := camelCase(in); got != want {
			t.Errorf("camelCase(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestBR30_CallIDs(t *testing.T) {
	n := 40
	next := func() string { n++; return fmt.Sprintf("ptc:%d", n) }
	r := runWith(t, context.Background(), &testHost{}, "await tools.fetch_doc(); tools.archmax_advance({to:'a', reason:'b'});",
		func(c *CodeStateRun) { c.NextCallID = next })
	mustSucceed(t, r)
	if calls := r.host.calls(); calls[0].id != "ptc:41" || calls[1].id != "ptc:42" {
		t.Fatalf("calls = %+v", calls)
	}
	r = runScript(t, "await tools.fetch_doc(); await tools.read_file();")
	if calls := r.host.calls(); calls[0].id != "ptc:1" || calls[1].id != "ptc:2" {
		t.Fatalf("default ids = %+v", calls)
	}
}

func TestCS39_ControlsAreSynchronous(t *testing.T) {
	var order []string
	var mu sync.Mutex
	note := func(s string) { mu.Lock(); defer mu.Unlock(); order = append(order, s) }
	host := &testHost{control: func(tool, _ string) (string, error) { note("control " + tool); return "Recorded: moves.", nil }}
	src := `export default async ({ tools }) => {
  const p = tools.archmax_advance({ to: "next", reason: "ok" });
  console.log("after the call");
};`
	r := runWith(t, context.Background(), host, src, func(c *CodeStateRun) { c.OnLog = note })
	mustSucceed(t, r)
	if !reflect.DeepEqual(order, []string{"control archmax_advance", "after the call"}) {
		t.Fatalf("order = %q", order)
	}
	// A control's rejection is an Error carrying the host's message; its result is text.
	host = &testHost{control: func(tool, _ string) (string, error) {
		if tool == "archmax_advance" {
			return "", errors.New("cannot advance from 'screen' to 'nowhere'. Valid target slugs: next.")
		}
		return `{"a":1}`, nil
	}}
	r = runWith(t, context.Background(), host, `try { await tools.archmax_advance({to:"nowhere", reason:"r"}) } catch (e) { console.log(e.message) }
console.log(typeof await tools.archmax_get_variables({ name: "a" }));`, nil)
	mustSucceed(t, r)
	if want := []string{"cannot advance from 'screen' to 'nowhere'. Valid target slugs: next.", "string"}; !reflect.DeepEqual(r.logs, want) {
		t.Fatalf("logs = %q", r.logs)
	}
}

func TestBR11_PromiseAllRunsHostCallsConcurrently(t *testing.T) {
	var inFlight, peak atomic.Int32
	all := make(chan struct{})
	var once sync.Once
	host := &testHost{call: func(ctx context.Context, tool, args string) (string, error) {
		n := inFlight.Add(1)
		if n > peak.Load() {
			peak.Store(n)
		}
		if n == 5 {
			once.Do(func() { close(all) })
		}
		select { // serial calls would never see five in flight and give up here
		case <-all:
		case <-time.After(2 * time.Second):
		}
		time.Sleep(100 * time.Millisecond)
		inFlight.Add(-1)
		return args, nil
	}}
	src := `const out = await Promise.all([1, 2, 3, 4, 5].map((i) => tools.fetch_doc({ i })));
console.log(out.join(","));`
	r := runWith(t, context.Background(), host, src, nil)
	mustSucceed(t, r)
	if peak.Load() != 5 {
		t.Fatalf("peak in flight = %d, want 5", peak.Load())
	}
	if got := joinLogs(r); got != `{"i":1},{"i":2},{"i":3},{"i":4},{"i":5}` {
		t.Fatalf("logs = %q", got)
	}
}

func TestCS50_Console(t *testing.T) {
	r := runScript(t, `const cyc = {}; cyc.self = cyc;
console.log("a", 1, { b: [2] }, undefined, null, "multi\nline");
console.info("info"); console.warn("warn"); console.error(cyc, 10n, Symbol("s"));`)
	mustSucceed(t, r)
	want := []string{`a 1 {"b":[2]} undefined null multi`, "line", "info", "warn", "[object Object] 10 Symbol(s)"}
	if !reflect.DeepEqual(r.logs, want) {
		t.Fatalf("logs = %q", r.logs)
	}
}

func TestCS50_ConsoleOutputIsCapped(t *testing.T) {
	r := runScript(t, `const line = "x".repeat(1000); for (let i = 0; i < 100; i++) console.log(line);`)
	mustSucceed(t, r)
	// 65 whole lines (65,000 bytes), the 536 bytes of the 66th that fit, then the cut line
	if len(r.logs) != 67 || r.logs[65] != strings.Repeat("x", 536) || r.logs[66] != logCutLine {
		t.Fatalf("%d lines, last %q", len(r.logs), r.logs[len(r.logs)-1])
	}
	// one line over the whole budget keeps its first 64 KiB, cut between runes
	r = runScript(t, `console.log("é".repeat(40000));`)
	mustSucceed(t, r)
	if len(r.logs) != 2 || r.logs[0] != strings.Repeat("é", 32768) || r.logs[1] != logCutLine {
		t.Fatalf("%d lines, first of %d bytes", len(r.logs), len(r.logs[0]))
	}
}

func TestSB04_Timeouts(t *testing.T) {
	hang := &testHost{call: func(ctx context.Context, _, _ string) (string, error) { <-ctx.Done(); return "", ctx.Err() }}
	cases := map[string]string{
		"busy loop":                "while (true) {}",
		"never-settling host call": "await tools.fetch_doc();",
		"microtask loop":           "const spin = () => Promise.resolve().then(spin); spin(); await new Promise(() => {}).then(() => tools.fetch_doc());",
		"busy loop after a call":   "await tools.read_file(); for (;;) {}",
	}
	for name, src := range cases {
		t.Run(name, func(t *testing.T) {
			host := hang
			if name == "busy loop after a call" || name == "microtask loop" {
				host = &testHost{}
			}
			r := runWith(t, context.Background(), host, src, func(c *CodeStateRun) { c.Quotas.TimeoutMs = 100 })
			if te := as[*TimeoutError](t, r.err); te.TimeoutMs != 100 || te.Error() != "timed out after 100 ms" {
				t.Fatalf("got %+v", te)
			}
		})
	}
}

// A deadlock is found when nothing is left to run (the deadlock error, not the run's timeout,
// answers).
func TestSB03_DeadlockFailsFast(t *testing.T) {
	se := as[*ScriptError](t, runScript(t, "await new Promise(() => {});").err)
	if se.Message != deadlockMessage {
		t.Fatalf("got %+v", se)
	}
}

func TestCS62_CancellationMidHostCall(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	cause := make(chan string, 1)
	host := &testHost{call: func(c context.Context, tool, _ string) (string, error) {
		if tool == "fetch_doc" {
			close(started)
			<-c.Done()
			cause <- context.Cause(c).Error()
			return "", c.Err()
		}
		return "late", nil
	}}
	go func() { <-started; cancel() }()
	src := `try { await tools.fetch_doc({}) } catch (e) { await tools.read_file({ retry: true }) }`
	r := runWith(t, ctx, host, src, nil)
	ae := as[*AbortError](t, r.err)
	if !errors.Is(ae, context.Canceled) {
		t.Fatalf("cause = %v", ae.Cause)
	}
	if got := <-cause; got != "Tool 'fetch_doc' failed: the turn was aborted" {
		t.Fatalf("host call's cause = %q", got)
	}
	if calls := r.host.calls(); len(calls) != 1 {
		t.Fatalf("host calls after the abort: %+v", calls)
	}
}

func TestCS62_CallsAfterAbortNeverReachTheHost(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	host := &testHost{control: func(string, string) (string, error) { cancel(); return "Recorded.", nil }}
	src := `tools.archmax_advance({ to: "next", reason: "r" });
tools.fetch_doc({}).catch(() => {}); tools.archmax_raise({ code: "c", reason: "r" });`
	r := runWith(t, ctx, host, src, nil)
	as[*AbortError](t, r.err)
	if calls := r.host.calls(); len(calls) != 1 || calls[0].tool != "archmax_advance" {
		t.Fatalf("host calls = %+v", calls)
	}
	// A context cancelled before the run starts runs nothing.
	r = runWith(t, ctx, &testHost{}, "tools.archmax_advance({})", nil)
	as[*AbortError](t, r.err)
	if len(r.host.calls()) != 0 {
		t.Fatalf("host calls = %+v", r.host.calls())
	}
}

func TestSB05_PendingCallsAreCancelledWhenTheRunEnds(t *testing.T) {
	cause := make(chan string, 1)
	host := &testHost{call: func(c context.Context, _, _ string) (string, error) {
		<-c.Done()
		cause <- context.Cause(c).Error()
		return "too late", nil
	}}
	r := runWith(t, context.Background(), host, `tools.fetch_doc({}); tools.archmax_advance({ to: "next", reason: "r" });`, nil)
	mustSucceed(t, r)
	if got := <-cause; got != errRunEnded.Error() {
		t.Fatalf("cause = %q", got)
	}
}

func TestOQ4_UnhandledRejectionsDoNotFailTheRun(t *testing.T) {
	host := &testHost{call: func(context.Context, string, string) (string, error) { return "", errors.New("denied") }}
	r := runWith(t, context.Background(), host, `Promise.reject(new Error("ignored")); tools.fetch_doc({});
await tools.archmax_advance({ to: "next", reason: "r" });`, nil)
	mustSucceed(t, r)
}

func TestCS61_MaxPtcCalls(t *testing.T) {
	max := 2
	src := `for (let i = 0; i < 5; i++) { try { await tools.fetch_doc({ i }) } catch (e) { console.log(e.message) } }`
	r := runWith(t, context.Background(), &testHost{}, src, func(c *CodeStateRun) { c.Quotas.MaxPtcCalls = &max })
	if qe := as[*QuotaError](t, r.err); qe.Message != "script exceeded maxPtcCalls (2)" {
		t.Fatalf("got %q", qe.Message)
	}
	if n := len(r.host.calls()); n != 2 {
		t.Fatalf("host calls = %d", n)
	}
	// Controls count too.
	r = runWith(t, context.Background(), &testHost{}, `await tools.fetch_doc(); await tools.archmax_get_history(); tools.archmax_advance({})`,
		func(c *CodeStateRun) { c.Quotas.MaxPtcCalls = &max })
	as[*QuotaError](t, r.err)
	if n := len(r.host.calls()); n != 2 {
		t.Fatalf("host calls = %d", n)
	}
}

func TestCS61_MaxResultChars(t *testing.T) {
	for _, c := range []struct {
		result string
		tool   string
		msg    string
	}{
		{"12345678901", "fetch_doc", "tool result of 11 characters exceeds maxResultChars (10)"},
		{"123456789😀", "fetch_doc", "tool result of 11 characters exceeds maxResultChars (10)"},
		{"😀😀😀😀😀😀", "archmax_get_history", "tool result of 12 characters exceeds maxResultChars (10)"},
	} {
		host := &testHost{
			call:    func(context.Context, string, string) (string, error) { return c.result, nil },
			control: func(string, string) (string, error) { return c.result, nil },
		}
		src := "try { await tools." + c.tool + "() } catch (e) { console.log('caught') }"
		r := runWith(t, context.Background(), host, src, func(cr *CodeStateRun) { cr.Quotas.MaxResultChars = 10 })
		if qe := as[*QuotaError](t, r.err); qe.Message != c.msg {
			t.Fatalf("got %q, want %q", qe.Message, c.msg)
		}
	}
	// Exactly at the limit, counted in UTF-16 units, passes.
	host := &testHost{call: func(context.Context, string, string) (string, error) { return "1234😀😀😀", nil }}
	mustSucceed(t, runWith(t, context.Background(), host, "await tools.fetch_doc()", func(c *CodeStateRun) { c.Quotas.MaxResultChars = 10 }))
}

func TestOQ3_MemoryAccountingOfInboundBytes(t *testing.T) {
	host := &testHost{call: func(context.Context, string, string) (string, error) { return strings.Repeat("x", 600), nil }}
	quota := func(c *CodeStateRun) { c.Quotas.MemoryLimitBytes = 1000; c.Variables = nil }
	r := runWith(t, context.Background(), host, "await tools.fetch_doc(); try { await tools.fetch_doc() } catch {}", quota)
	if qe := as[*QuotaError](t, r.err); qe.Message != "script exceeded memoryLimitBytes (1000)" {
		t.Fatalf("got %q", qe.Message)
	}
	r = runWith(t, context.Background(), host, "", func(c *CodeStateRun) {
		c.Quotas.MemoryLimitBytes = 1000
		c.Variables = map[string]any{"big": strings.Repeat("y", 1000)}
	})
	as[*QuotaError](t, r.err)
}

func TestMaxArgBytesIsATypeError(t *testing.T) {
	src := `try { await tools.fetch_doc({ s: "x".repeat(100) }) } catch (e) { console.log(e.name, e.message) }
try { const c = {}; c.c = c; await tools.fetch_doc(c) } catch (e) { console.log(e.name) }`
	r := runWith(t, context.Background(), &testHost{}, src, func(c *CodeStateRun) { c.Quotas.MaxArgBytes = 50 })
	mustSucceed(t, r)
	want := []string{"TypeError the argument of tool 'fetch_doc' is 108 bytes of JSON, over the limit of 50", "TypeError"}
	if !reflect.DeepEqual(r.logs, want) || len(r.host.calls()) != 0 {
		t.Fatalf("logs = %q, calls = %+v", r.logs, r.host.calls())
	}
}

func TestOQ2_RunawayRecursionIsAQuotaError(t *testing.T) {
	qe := as[*QuotaError](t, runScript(t, "const f = (n) => f(n + 1) + 1; f(0);").err)
	if !strings.Contains(qe.Message, "call stack") {
		t.Fatalf("got %q", qe.Message)
	}
}

func TestPreludePolyfills(t *testing.T) {
	src := `const out = [];
const src = { d: new Date(0), m: new Map([[1, { a: 1 }]]), s: new Set([1]) }; src.self = src;
const c = structuredClone(src);
out.push(c !== src && c.self === c && c.d.getTime() === 0 && c.m.get(1).a === 1 && c.m.get(1) !== src.m.get(1) && c.s.has(1));
out.push(JSON.stringify(Object.groupBy([1, 2, 3], (n) => (n % 2 ? "odd" : "even"))));
out.push(JSON.stringify([...Map.groupBy([1, 2, 3], (n) => n > 1)]));
const { promise, resolve } = Promise.withResolvers(); resolve(7); out.push(await promise);
out.push(JSON.stringify(await Array.fromAsync([Promise.resolve(1), 2], (x) => x * 2)));
out.push("ab".isWellFormed(), "a\uD800".isWellFormed(), "a\uD800".toWellFormed() === "a\uFFFD");
let queued = false; queueMicrotask(() => { queued = true }); await null; out.push(queued);
out.push((1234.5).toLocaleString("en-US"), (1234567.891).toLocaleString(), (-0.5).toLocaleString(), (12).toLocaleString("en-US", { minimumFractionDigits: 2 }));
out.push(/\p{L}/u.test("é"), /^\p{L}$/u.test("p{L}"), /^\p{Lu}+$/u.test("ÉA"));
for (const f of [() => "x".repeat(2e7), () => "x".padStart(2e7), () => new Array(2e7).join(), () => Array.from({ length: 2e7 })]) {
  try { f(); out.push("no guard") } catch (e) { out.push(e.name) }
}
console.log(out.join(" "));`
	r := runScript(t, src)
	mustSucceed(t, r)
	want := `true {"odd":[1,3],"even":[2]} [[false,[1]],[true,[2,3]]] 7 [2,4] true false true true 1,234.5 1,234,567.891 -0.5 12.00 true false true RangeError RangeError RangeError RangeError`
	if got := joinLogs(r); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestPreparedProgramsAreCached(t *testing.T) {
	src := []byte("export default async () => {};")
	a, b := prepareCached("scripts/c.js", src), prepareCached("scripts/c.js", src)
	if a != b || a.err != nil {
		t.Fatalf("not cached: %p %p %v", a, b, a.err)
	}
	if c := prepareCached("scripts/other.js", src); c == a {
		t.Fatal("the file name is part of the key")
	}
	c := newLRU(2)
	k := func(b byte) [32]byte { return [32]byte{b} }
	p1, p2, p3 := &prepared{}, &prepared{}, &prepared{}
	c.put(k(1), p1)
	c.put(k(2), p2)
	c.get(k(1))
	c.put(k(3), p3)
	if _, ok := c.get(k(2)); ok {
		t.Fatal("least recently used entry survived")
	}
	if got, ok := c.get(k(1)); !ok || got != p1 {
		t.Fatal("recently used entry evicted")
	}
}

func TestOQ3_HeapWatchdogTripsRunsOverBudget(t *testing.T) {
	var heap atomic.Uint64
	heap.Store(1000)
	w := &watchdog{read: heap.Load, interval: time.Millisecond}
	tripped := make(chan string, 2)
	defer w.register(100, func() { tripped <- "small" })()
	defer w.register(10_000, func() { tripped <- "large" })()
	heap.Store(1000 + 201) // over 2 x 100, under 2 x 10000
	select {
	case got := <-tripped:
		if got != "small" {
			t.Fatalf("tripped %q", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("watchdog never tripped")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.runs) != 1 {
		t.Fatalf("%d runs still watched, want 1", len(w.runs))
	}
}

func TestMemoryQuotaFromTheWatchdogFailsTheRun(t *testing.T) {
	// A run's watchdog trip cancels it with the memory QuotaError, like any quota.
	r := runWith(t, context.Background(), &testHost{}, `const a = []; while (true) a.push("x".repeat(1e5) + a.length);`,
		func(c *CodeStateRun) {
			c.Quotas.MemoryLimitBytes = 1 << 20
			c.Variables = nil
			c.Quotas.TimeoutMs = 10_000
		})
	if qe := as[*QuotaError](t, r.err); qe.Message != "script exceeded memoryLimitBytes (1048576)" {
		t.Fatalf("got %q", qe.Message)
	}
}

func TestUnicodePropertyEscapeFixKeepsColumns(t *testing.T) {
	se := as[*ScriptError](t, runScript(t, "const ok = /\\p{L}/u.test(\"é\"); if (ok) throw new Error(\"after\");").err)
	if se.Message != "Error: after" || se.Line != 1 || se.Column != 46 {
		t.Fatalf("got %+v", se)
	}
}
