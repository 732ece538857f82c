package sandbox

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dlclark/regexp2/v2"
	"github.com/dop251/goja"
)

// hostileNative is a script that makes one native builtin — which no interrupt reaches — work
// far past the run's quotas, and the start of the QuotaError message of the guard that must
// refuse it first (CS-61; goja.md §4–§5).
type hostileNative struct {
	name, src, want string
}

// codeOnly are variants whose guard runs the same script code in either context; they run as
// code states only (each takes seconds under -race).
var codeOnly = map[string]bool{
	"array spread of an iterator": true, "Array.from of an iterator": true, "Array.from of matchAll": true, "global match": true,
	"JSON.stringify 1e6 strings": true, "JSON.stringify omitted properties": true,
}

// hostileNatives are the payloads of the security issue "Native builtins outrun the sandbox's
// quotas" (the first eight as the issue gives them), then one variant per guard.
var hostileNatives = []hostileNative{
	{"matchAll spread", `[..."x".repeat(9e6).matchAll(/x/g)].length`, "matchAll: too many matches (more than the sandbox's limit of 250,000)"},
	{"BigInt power", `(2n ** 100000000n).toString()`, "BigInt exponentiation: result too large (100000001 bits, over the sandbox's limit of 1,048,576)"},
	{"fromCharCode.apply", `String.fromCharCode.apply(null, new Array(1e7).fill(65))`, "fill: array length 10000000 exceeds the sandbox's limit of 1,048,576"},
	{"Math.max spread", `Math.max(...new Array(1e7).fill(1))`, "fill: array length 10000000 exceeds the sandbox's limit of 1,048,576"},
	{"join", `new Array(1e7).join("x".repeat(32))`, "join: result too large (319999968 characters, over the sandbox's limit of 10,000,000)"},
	{"JSON.parse depth", `JSON.parse("[".repeat(1e6) + "]".repeat(1e6))`, "JSON.parse: nesting depth 1000000 exceeds the sandbox's limit of 10,000"},
	{"BigInt squaring loop", `let x = 3n; for (;;) x *= x;`, "BigInt multiplication: result too large ("},
	{"unshift loop", `const a = []; a.length = 1048570; for (;;) a.unshift(0, 0, 0, 0);`, "unshift: array length 1048578 exceeds the sandbox's limit of 1,048,576"},

	{"apply of an array-like", `String.fromCharCode.apply(null, { length: 1e7 })`, "apply: argument count 10000000 exceeds the sandbox's limit of 65,535"},
	{"call spread", `Math.max(...new Array(1e7))`, "spread: argument count 10000000 exceeds the sandbox's limit of 65,535"},
	{"new spread", `new Date(...new Array(7e4))`, "spread: argument count 70000 exceeds the sandbox's limit of 65,535"},
	{"Reflect.apply", `Reflect.apply(Math.max, null, { length: 1e7 })`, "Reflect.apply: argument count 10000000 exceeds the sandbox's limit of 65,535"},
	{"Reflect.construct", `Reflect.construct(Array, { length: 1e7 })`, "Reflect.construct: argument count 10000000 exceeds the sandbox's limit of 65,535"},
	{"array spread of an iterator", "[..." + endless + "].length", "spread: too many elements (more than the sandbox's limit of 1,048,576)"},
	{"call spread of an iterator", `Math.max(...new Set(Array.from({ length: 7e4 }, (_, i) => i)))`, "spread: too many elements (more than the sandbox's limit of 65,535)"},
	{"keys of a long array", `new Set(new Array(1e9).keys()).size`, "keys: array length 1000000000 exceeds the sandbox's limit of 1,048,576"},
	{"array spread of an array", `[...new Array(3e6)].length`, "spread: result too large (3000000 elements, over the sandbox's limit of 1,048,576)"},
	{"object spread of a string", `Object.keys({ ..."x".repeat(9e6) }).length`, "spread: result too large (9000000 elements, over the sandbox's limit of 1,048,576)"},
	{"Array.from of an iterator", "Array.from(" + endless + ").length", "Array.from: too many elements (more than the sandbox's limit of 1,048,576)"},
	{"Array.from of an array-like", `Array.from({ length: 1e7 }).length`, "Array.from: result too large (10000000 elements, over the sandbox's limit of 1,048,576)"},
	{"Array.from of matchAll", `Array.from("x".repeat(9e6).matchAll(/x/g)).length`, "matchAll: too many matches (more than the sandbox's limit of 250,000)"},
	{"global match", `"x".repeat(9e6).match(/x/g).length`, "match: too many matches (more than the sandbox's limit of 250,000)"},
	{"join of long elements", `new Array(1000).fill("x".repeat(1e6)).join("")`, "join: result too large (1000000000 characters, over the sandbox's limit of 10,000,000)"},
	{"JSON.parse objects", `JSON.parse('{"a":'.repeat(2e4) + "1" + "}".repeat(2e4))`, "JSON.parse: nesting depth 20000 exceeds the sandbox's limit of 10,000"},
	{"BigInt left shift", `1n << 100000000n`, "BigInt left shift: result too large (100000001 bits, over the sandbox's limit of 1,048,576)"},
	{"BigInt member squaring", `const o = { x: 3n }; for (;;) o.x *= o.x;`, "BigInt multiplication: result too large ("},
	{"BigInt keyed squaring", `const o = [3n]; for (;;) o[0] **= 2n;`, "BigInt exponentiation: result too large ("},
	{"BigInt private squaring", `class C { #x = 3n; grow() { for (;;) this.#x *= this.#x; } } new C().grow();`, "BigInt multiplication: result too large ("},
	{"BigInt of an object", `let x = Object(3n); for (;;) x = Object(x * x);`, "BigInt multiplication: result too large ("},
	{"BigInt from a string", `BigInt("9".repeat(1e6))`, "BigInt: result too large (3321929 bits, over the sandbox's limit of 1,048,576)"},
	{"BigInt.asUintN", `BigInt.asUintN(2 ** 30, -1n)`, "BigInt.asUintN: result too large (1073741824 bits, over the sandbox's limit of 1,048,576)"},
	{"Function constructor", `Function("return 2n ** 100000000n")()`, "BigInt exponentiation: result too large (100000001 bits"},
	{"eval", `eval("Math.max(...new Array(1e7))")`, "spread: argument count 10000000 exceeds the sandbox's limit of 65,535"},
	{"constructor of a function", `(function () {}).constructor("return Math.max(...new Array(1e7))")()`, "spread: argument count 10000000"},
	{"GeneratorFunction constructor", "(function* () {}).constructor(\"yield 2n ** 100000000n\")().next()", "BigInt exponentiation: result too large (100000001 bits"},
	{"AsyncFunction constructor", "await (async function () {}).constructor(\"return 2n ** 100000000n\")()", "BigInt exponentiation: result too large (100000001 bits"},
	{"typed array join", `new Int8Array(16e6).join()`, "join: result too large (79999999 characters, over the sandbox's limit of 10,000,000)"},
	{"fill of an array-like", `Array.prototype.fill.call({ length: 1e9 }, 0)`, "fill: array length 1000000000 exceeds the sandbox's limit of 1,048,576"},
	{"indexOf of an array-like", `Array.prototype.indexOf.call({ length: 1e9 }, 1)`, "indexOf: array length 1000000000 exceeds the sandbox's limit of 1,048,576"},
	{"forEach over holes", `const a = []; a.length = 4e9; a.forEach(() => {});`, "forEach: array length 4000000000 exceeds the sandbox's limit of 1,048,576"},
	{"unshift of a long array", `const a = []; a.length = 4e9; a.unshift(1);`, "unshift: array length 4000000001 exceeds the sandbox's limit of 1,048,576"},
	{"concat", `const a = []; a.length = 4e9; [].concat(a).length`, "concat: array length 4000000000 exceeds the sandbox's limit of 1,048,576"},
	{"Object.keys of a string", `Object.keys("x".repeat(1e7)).length`, "Object.keys: result too large (10000000 elements, over the sandbox's limit of 1,048,576)"},
	{"Object.assign of a string", `Object.assign({}, "x".repeat(1e7))`, "Object.assign: result too large (10000000 elements, over the sandbox's limit of 1,048,576)"},
	{"Object.entries of a typed array", `Object.entries(new Int8Array(16e6)).length`, "Object.entries: result too large (16000000 elements, over the sandbox's limit of 1,048,576)"},
	{"repeat", `"x".repeat(2 ** 30)`, "repeat: result too large (1073741824 characters, over the sandbox's limit of 10,000,000)"},
	{"split", `"x".repeat(9e6).split("")`, "split: too many pieces (9000000, over the sandbox's limit of 250,000)"},
	{"typed array", `new Float64Array(3e6)`, "Float64Array: result too large (24000000 bytes, over the sandbox's limit of 16,000,000)"},

	// JSON.stringify: the two payloads of "JSON.stringify is not bounded", then its variants.
	{"JSON.stringify depth", `let o = {}; for (let i = 0; i < 200000; i++) o = { a: o }; JSON.stringify(o)`, "JSON.stringify: nesting deeper than the sandbox's limit of 10,000"},
	{"JSON.stringify shared subtrees", `let o = "x".repeat(1000); for (let i = 0; i < 40; i++) o = [o, o]; JSON.stringify(o)`, jsonTooLarge},
	{"JSON.stringify deep arrays", `let a = []; for (let i = 0; i < 10000; i++) a = [a]; JSON.stringify(a)`, "JSON.stringify: nesting deeper than the sandbox's limit of 10,000"},
	{"JSON.stringify gap and depth", `let a = [1]; for (let i = 0; i < 9000; i++) a = [a]; JSON.stringify(a, null, 10)`, jsonTooLarge},
	{"JSON.stringify string gap and objects", `let o = {}; for (let i = 0; i < 9000; i++) o = { k: o }; JSON.stringify(o, null, "\t".repeat(10))`, jsonTooLarge},
	{"JSON.stringify shared objects", `let o = { k: "v".repeat(100) }; for (let i = 0; i < 40; i++) o = { a: o, b: o }; JSON.stringify(o)`, jsonTooLarge},
	{"JSON.stringify toJSON of a shared giant", `const giant = new Array(1000).fill("y".repeat(1000)); const o = { toJSON: () => giant }; JSON.stringify(new Array(1000).fill(o))`, jsonTooLarge},
	{"JSON.stringify replacer of giant strings", `const s = "z".repeat(1e6); JSON.stringify(new Array(1000).fill(0), (k, v) => (k === "" ? v : s))`, jsonTooLarge},
	{"JSON.stringify 1e6 strings", `JSON.stringify(new Array(1e6).fill("x".repeat(20)))`, jsonTooLarge},
	{"JSON.stringify escapes", `JSON.stringify("\u0001".repeat(5e6))`, jsonTooLarge},
	{"JSON.stringify holes", `const a = []; a.length = 4e9; JSON.stringify(a)`, jsonTooLarge},
	{"JSON.stringify boxed strings", `const s = new String("w".repeat(1e6)); JSON.stringify(new Array(100).fill(s))`, jsonTooLarge},
	{"JSON.stringify typed array", `JSON.stringify(new Int8Array(16e6))`, "JSON.stringify: array length 16000000 exceeds the sandbox's limit of 1,048,576"},
	{"JSON.stringify replacer array", `const a = []; a.length = 4e9; JSON.stringify({}, a)`, "JSON.stringify: array length 4000000000 exceeds the sandbox's limit of 1,048,576"},
	{"JSON.stringify omitted properties", `const o = {}; for (let i = 0; i < 1e5; i++) o["k" + i] = undefined; JSON.stringify(new Array(1e4).fill(o))`, "JSON.stringify: too many omitted properties (more than the sandbox's limit of 1,048,576)"},
	{"flat", `Array(65535).fill(Array(65535).fill(0)).flat()`, "flat: too many elements (more than the sandbox's limit of 1,048,576)"},
	{"flat to a depth", `let a = [0]; for (let i = 0; i < 21; i++) a = [a, a]; a.flat(Infinity)`, "flat: too many elements (more than the sandbox's limit of 1,048,576)"},
	{"flat of a cycle", `const a = [1]; a.push(a); a.flat(Infinity)`, "flat: too many elements (more than the sandbox's limit of 1,048,576)"},
	{"flat of holes", `const a = []; a.length = 1e6; [a, a].flat()`, "flat: too many elements (more than the sandbox's limit of 1,048,576)"},
	{"flatMap", `const big = Array(65535).fill(0); Array(65535).fill(0).flatMap(() => big)`, "flatMap: too many elements (more than the sandbox's limit of 1,048,576)"},
	{"flatMap of holes", `const h = []; h.length = 4e9; [1].flatMap(() => h)`, "flatMap: too many elements (more than the sandbox's limit of 1,048,576)"},
	{"JSON.stringify filled arrays", `JSON.stringify(Array(1048576).fill(Array(1048576).fill(null)))`, jsonTooLarge},
	{"JSON.stringify shared empty objects", `let o = {}; for (let i = 0; i < 40; i++) o = [o, o]; JSON.stringify(o)`, jsonTooLarge},
	// Walks that re-enter one another through script code share one budget of native levels
	// (each level is Go stack): without it these overflowed the Go stack and killed the process.
	{"JSON.stringify re-entered by toJSON", `let deep = null; const o = { toJSON() { return JSON.stringify(deep); } }; deep = [o]; for (let i = 0; i < 9990; i++) deep = [deep]; JSON.stringify(deep)`, "JSON.stringify: nesting deeper than the sandbox's limit of 10,000"},
	{"JSON.parse re-entered by its reviver", `const t = "[".repeat(9000) + "]".repeat(9000); const r = function (k, v) { if (Array.isArray(v) && v.length === 0) JSON.parse(t, r); return v; }; JSON.parse(t, r)`, "JSON.parse: nesting depth 18000 exceeds the sandbox's limit of 10,000"},
	{"join of nested arrays", `let a = []; for (let i = 0; i < 2e4; i++) a = [a]; String(a)`, "join: nesting deeper than the sandbox's limit of 10,000"},
	{"toLocaleString of nested arrays", `let a = []; for (let i = 0; i < 2e4; i++) a = [a]; a.toLocaleString()`, "toLocaleString: nesting deeper than the sandbox's limit of 10,000"},
	{"JSON.stringify of a tool argument", `let o = "x".repeat(1000); for (let i = 0; i < 40; i++) o = [o, o]; await tools.read_file(o)`, jsonTooLarge},
}

// jsonTooLarge is the refusal of a JSON.stringify result over maxStringUnits.
const jsonTooLarge = "JSON.stringify: result too large (over the sandbox's limit of 10,000,000 characters)"

// endless is an iterable that never ends and allocates nothing per step.
const endless = `({ [Symbol.iterator]() { const r = { value: 1, done: false }; return { next: () => r }; } })`

// natives runs every payload (both kinds of context) with a time quota the guard, not the
// clock, must beat.
const nativesTimeoutMs = 60000

// CS-61: every payload ends in the QuotaError of the guard that refused it — never a timeout,
// the heap watchdog or a crash — in a code state (RunCodeState) and in an agent script (REPL).
// The guards refuse before the native runs, so the check is the error, not the clock.
func TestCS61_HostileNativesAreRefusedByTheirGuard(t *testing.T) {
	for _, p := range hostileNatives {
		t.Run("code/"+p.name, func(t *testing.T) {
			r := runWith(t, context.Background(), &testHost{}, p.src, func(c *CodeStateRun) { c.Quotas.TimeoutMs = nativesTimeoutMs })
			wantQuota(t, r.err, p.want)
		})
		if codeOnly[p.name] {
			continue
		}
		t.Run("repl/"+p.name, func(t *testing.T) {
			repl := newTestREPL(t)
			res := replCall(t, repl, &testHost{}, p.src, func(c *ScriptCall) { c.Quotas.TimeoutMs = nativesTimeoutMs })
			if !res.Error {
				t.Fatalf("got %+v", res)
			}
			wantQuota(t, res.Err, p.want)
			if !strings.HasPrefix(res.Text, errorPrefix+p.want) {
				t.Errorf("answer %q", res.Text)
			}
			if res.Reset {
				t.Error("a guard's refusal reset the REPL: nothing ran past a quota")
			}
		})
	}
}

func wantQuota(t *testing.T, err error, want string) {
	t.Helper()
	var qe *QuotaError
	if !errors.As(err, &qe) {
		t.Fatalf("error %T %v, want the QuotaError %q", err, err, want)
	}
	if !strings.HasPrefix(qe.Message, want) {
		t.Fatalf("quota error %q, want %q", qe.Message, want)
	}
}

// The guards throw a RangeError the script may catch (the work was refused before it was
// done); uncaught, it fails the run as a QuotaError. A script cannot forge one: an Error it
// throws itself with the same text stays a ScriptError.
func TestCS61_GuardErrorsAreCatchableRangeErrors(t *testing.T) {
	src := `let caught = [];
let deep = {}; for (let i = 0; i < 2e4; i++) deep = { a: deep };
let shared = "x".repeat(1000); for (let i = 0; i < 40; i++) shared = [shared, shared];
for (const f of [() => Math.max(...new Array(1e7)), () => 2n ** 100000000n, () => JSON.parse("[".repeat(2e4)), () => JSON.stringify(deep), () => JSON.stringify(shared)]) {
  try { f(); } catch (e) { caught.push(e instanceof RangeError && e.name === "RangeError" ? e.message.split(":")[0] : String(e)); }
}
if (caught.join() !== "spread,BigInt exponentiation,JSON.parse,JSON.stringify,JSON.stringify") throw new Error("caught " + caught.join());
if (JSON.stringify({ after: [1, "two"] }) !== '{"after":[1,"two"]}') throw new Error("JSON.stringify broken after a refusal");
`
	mustSucceed(t, runScript(t, src))
	forged := `throw new RangeError("apply: argument count 10000000 exceeds the sandbox's limit of 65,535");`
	if se := as[*ScriptError](t, runScript(t, forged).err); !strings.HasPrefix(se.Message, "RangeError: apply") {
		t.Fatalf("got %q", se.Message)
	}
	// A guard error caught, altered and rethrown still names its guard.
	altered := `try { Math.max(...new Array(1e7)); } catch (e) { e.message = "nothing to see"; throw e; }`
	wantQuota(t, runScript(t, altered).err, "spread: argument count 10000000")
}

// The rewritten operators, spreads and exec calls keep JavaScript's semantics below the limits,
// in code states, agent scripts and dynamic code alike.
func TestCS61_GuardedOperatorsKeepTheirSemantics(t *testing.T) {
	src := `
const checks = {
  mul: 6 * 7 === 42 && Object.is(0 * -1, -0) && Number.isNaN("x" * 2) && "3" * "4" === 12 && null * 5 === 0 && true * 2 === 2,
  mulObj: ({ valueOf: () => 6 }) * 7 === 42 && [5] * 2 === 10 && new Date(3) * 1 === 3,
  pow: 2 ** 10 === 1024 && Number.isNaN(1 ** NaN) && Number.isNaN(1 ** Infinity) && 2 ** -1 === 0.5 && (-8) ** (1 / 3) !== -2,
  shl: 1 << 31 === -2147483648 && 1 << 32 === 1 && -1 << 3 === -8 && 2.9 << 1 === 4 && (2 ** 32 + 5) << 0 === 5 && "1" << "2" === 4,
  big: 3n * 4n === 12n && 2n ** 64n === 18446744073709551616n && 1n << 70n === 1180591620717411303424n && -5n << -1n === -3n && (2n ** 1000000n) > 0n,
  bigObj: Object(3n) * Object(4n) === 12n && 2n ** Object(3n) === 8n,
  compound: (() => { let a = 3; a *= 4; a **= 2; a <<= 1; const o = { v: 2n, w: [1] }; o.v *= 5n; o.w[0] <<= 4; o["v"] **= 2n;
    class K { #p = 3; run() { this.#p *= 2; return this.#p; } } return a === 288 && o.v === 100n && o.w[0] === 16 && new K().run() === 6; })(),
  order: (() => { const log = []; const f = (n) => (log.push(n), n); f(2) * f(3); f(2) ** f(1); f(1) << f(1); return log.join() === "2,3,2,1,1,1"; })(),
  mixErr: (() => { try { 1n * 1; return false; } catch (e) { return e instanceof TypeError; } })(),
  negExp: (() => { try { 2n ** -1n; return false; } catch (e) { return e instanceof RangeError; } })(),
  spread: Math.max(...[1, 5, 3]) === 5 && [...new Set([1, 1, 2])].length === 2 && [..."héllo"].length === 5 && [...(function* () { yield 1; yield 2; })()].join() === "1,2"
    && [...new Map([[1, 2]])][0][1] === 2 && String.fromCharCode(...[104, 105]) === "hi" && [0, ...[1, 2], 3].join() === "0,1,2,3",
  objSpread: Object.keys({ ...{ a: 1 }, ..."ab", ...null }).sort().join() === "0,1,a",
  apply: Math.max.apply(null, [1, 9, 2]) === 9 && Math.max.apply(null) === -Infinity && Reflect.apply(Math.min, null, [4, 2]) === 2 && Reflect.construct(Date, [5]).getTime() === 5,
  exec: /b(c)/.exec("abc")[1] === "c" && /x/.exec("abc") === null && { exec: () => 7 }.exec() === 7 && null?.exec("x") === undefined
    && /a/?.exec("a")[0] === "a" && (() => { try { undefined.exec(); return false; } catch (e) { return e instanceof TypeError; } })(),
  superCompound: (() => { class A { get v() { return this._v; } set v(x) { this._v = x; } }
    class B extends A { run() { this._v = 2; super.v *= 3; super["v"] **= 2; return this._v; } } return new B().run() === 36; })(),
  yieldCompound: (() => { function* g() { const o = { x: 2 }; o.x *= yield 1; return o.x; } const it = g(); it.next(); return it.next(5).value === 10; })(),
  join: [1, [2, 3], null, "a"].join("-") === "1-2,3--a" && new Array(3).join("ab") === "abab" && [].join() === "",
  json: JSON.parse('{"a":[1,{"b":[]}],"s":"[[[["}').a[1].b.length === 0 && JSON.parse(' "x" ') === "x",
  dynamic: Function("a", "b", "return a * b")(6, 7) === 42 && eval("2n ** 3n") === 8n && typeof new Function("return this")() === "object"
    && (function () {}).constructor === Function && Function.prototype.constructor === Function && Function("") instanceof Function
    && Object.getPrototypeOf(async function () {}).constructor("return 1") instanceof Function && eval(5) === 5,
  objectKeys: Object.keys("ab").join() === "0,1" && Object.entries({ a: 1 })[0][1] === 1 && Object.assign({}, "ab")[1] === "b"
    && Reflect.ownKeys([1]).length === 2 && Object.values(new Uint8Array(2)).length === 2 && Object.getOwnPropertyNames("a").length === 2,
  bigint: BigInt("0x" + "f".repeat(1000)) > 0n && BigInt.asUintN(64, -1n) === 18446744073709551615n && BigInt(2 ** 60) === 1152921504606846976n,
};
const bad = Object.keys(checks).filter((k) => checks[k] !== true);
if (bad.length) throw new Error("broken: " + bad.join(", "));
"ok"
`
	mustSucceed(t, runScript(t, src))
	wantOK(t, replCall(t, newTestREPL(t), &testHost{}, src, nil), "ok")
	mustSucceed(t, runScript(t, `Function(`+"`"+strings.ReplaceAll(src, "`", "\\`")+"`"+`)();`))
}

// A REPL keeps its functions across calls; one using a guarded operator or spread, defined by an
// earlier call, still works in a later one (the guards belong to the runtime, not to a call).
func TestCS61_GuardsPersistAcrossREPLCalls(t *testing.T) {
	repl := newTestREPL(t)
	wantOK(t, replCall(t, repl, &testHost{}, `function sq(x) { return x * x; } const top = (...a) => Math.max(...a); "ok"`, nil), "ok")
	wantOK(t, replCall(t, repl, &testHost{}, `sq(12) + top(1, 2)`, nil), "146")
	res := replCall(t, repl, &testHost{}, `let v = 3n; for (;;) v = sq(v);`, nil)
	wantQuota(t, res.Err, "BigInt multiplication: result too large (")
	wantOK(t, replCall(t, repl, &testHost{}, `sq(5)`, nil), "25")
}

// Scripts cannot reach around the rewrite: '__cs' stays reserved in dynamic code too, and
// `with` (which could shadow it) is refused.
func TestCS61_TheGuardHelpersCannotBeReplaced(t *testing.T) {
	for src, want := range map[string]string{
		`with ({}) {}`:                              "'with' statements are not available in the sandbox",
		`arguments[0].m = (a, b) => a * b;`:         "",
		`Function("__cs", "return 1")`:              "'__cs' is reserved in sandbox scripts",
		`eval("var __cs = {}; 1")`:                  "'__cs' is reserved in sandbox scripts",
		`Object.setPrototypeOf(arguments[0], null)`: "",
		`Function("}); (function () {")`:            "SyntaxError",
	} {
		t.Run(src, func(t *testing.T) {
			r := runScript(t, src+"\nlet x = 3n; for (;;) x *= x;")
			if want == "" {
				var se *ScriptError
				if errors.As(r.err, &se) && strings.Contains(se.Message, "TypeError") {
					return // the helpers' holder is frozen: the attempt threw
				}
				wantQuota(t, r.err, "BigInt multiplication")
				return
			}
			if r.err == nil || !strings.Contains(r.err.Error(), want) {
				t.Fatalf("got %v, want %q", r.err, want)
			}
		})
	}
}

// withRegexTimeout lowers the backtracking engine's match timeout for one test.
func withRegexTimeout(t *testing.T, d time.Duration) {
	t.Helper()
	prev, prevEngine := regexMatchTimeout, regexp2.DefaultMatchTimeout
	regexMatchTimeout, regexp2.DefaultMatchTimeout = d, d
	t.Cleanup(func() { regexMatchTimeout, regexp2.DefaultMatchTimeout = prev, prevEngine })
}

// A backtracking (regexp2) match that runs out its time fails closed: the operation throws the
// quota's RangeError instead of reading as "no match" (goja reports a timed-out match as none).
func TestCS61_RegexTimeoutsFailClosed(t *testing.T) {
	withRegexTimeout(t, 30*time.Millisecond)
	const subject = `("a".repeat(40) + "!")`
	const re = `/^(?=.)(a+)+$/`
	for src, want := range map[string]string{
		re + `.test(` + subject + `)`:                   "test: ",
		re + `.exec(` + subject + `)`:                   "exec: ",
		subject + `.match(` + re + `)`:                  "match: ",
		subject + `.replace(` + re + `, "")`:            "replace: ",
		subject + `.search(` + re + `)`:                 "search: ",
		subject + `.split(` + re + `)`:                  "split: ",
		`[...` + subject + `.matchAll(/(?=.)(a+)+$/g)]`: "matchAll: ",
	} {
		t.Run(src, func(t *testing.T) {
			wantQuota(t, runScript(t, src).err, want+"the regular expression ran past the sandbox's match timeout of 30 ms")
		})
	}
	mustSucceed(t, runScript(t, `if (!/^(?=.)(a+)+$/.test("aaa") || "aXb".replace(/(?<=a)X/, "-") !== "a-b") throw new Error("broken");`))
}

// flat and flatMap under the limit give what goja's natives give: depths (default, 0, 2,
// Infinity, NaN, negative, a string), holes, array-likes, nested proxies, flatMap's thisArg and
// arguments, and a mapper returning non-arrays.
func TestFlatResultsAreUnchanged(t *testing.T) {
	src := `const h = [1, , [2, , [3, [4]]]];
const p = new Proxy([5, [6]], {});
const cases = [h.flat(), h.flat(0), h.flat(2), h.flat(Infinity), h.flat(NaN), h.flat(-1), h.flat("2"), [[p]].flat(2),
  Array.prototype.flat.call({ length: 2, 0: [1, 2], 1: 3 }), [].flat(), [[]].flat(),
  [1, 2, 3].flatMap(function (x, i, a) { return [x * this.k, i, a.length]; }, { k: 10 }),
  [1, [2], , 3].flatMap((x) => x), ["a b", "c"].flatMap((s) => s.split(" ")), [1, 2].flatMap((x) => [[x]])];
JSON.stringify(cases)`
	native := goja.New()
	want := must(native.RunString(src)).String()
	wantOK(t, replCall(t, newTestREPL(t), &testHost{}, src, nil), want)
}
