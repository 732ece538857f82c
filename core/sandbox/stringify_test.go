package sandbox

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/dop251/goja"
)

// stringifyCorpus evaluates to an array of texts, one per case: "R" and JSON.stringify's
// result, "U" for undefined, or "E" and the error thrown; "|" and a log of the script code the
// case saw run (getters, toJSON, replacers, proxy traps), in order. Run in a guarded runtime and
// in a plain goja one, every text must be the same, unit for unit.
const stringifyCorpus = `(() => {
const out = [];
const show = (v) => typeof v === "string" ? v : typeof v === "symbol" ? v.toString() : typeof v === "bigint" ? v + "n" : typeof v === "object" && v !== null ? "obj" : String(v);
const run = (f, log) => {
  let r;
  try { const v = f(); r = v === undefined ? "U" : typeof v === "string" ? "R" + v : "?" + typeof v; }
  catch (e) { r = "E" + (e instanceof Error ? e.name + ": " + e.message : String(e)); }
  out.push(log && log.length ? r + "|" + log.join(",") : r);
};
const S = (...a) => () => JSON.stringify(...a);

// one PRNG for the generated cases (deterministic)
let seed = 0x2545f491;
const rnd = () => { seed ^= seed << 13; seed ^= seed >>> 17; seed ^= seed << 5; return (seed >>> 0) / 4294967296; };
const pick = (a) => a[Math.floor(rnd() * a.length)];

// primitives and numbers
for (const v of [undefined, null, true, false, 0, -0, 1, -1, 1.5, -2.75, 1e21, 1e-7, 1e-6, 123456789012345680000, 2 ** 53, 2 ** 53 + 2,
  2 ** 60, -(2 ** 31), 2 ** 31, 2 ** 32 + 1, 0.1 + 0.2, 5e-324, 1.7976931348623157e308, NaN, Infinity, -Infinity, 1 / 3, 100, 1e20, 1e300, -1e-300,
  "", "abc", "\"\\/", "\u007f\u0080\u00ff", "\u2028\u2029", "é", "日本", "😀", "\ud800", "\udc00", "a\ud800b", "\udc00\ud800", "\ud83d\ude00\ud83d",
  "x".repeat(100) + "é" + "y".repeat(100), Symbol("s"), function f() {}, class K {}, () => 1, async function a() {}, function* g() {}]) {
  run(S(v));
  run(S([v]));
  run(S({ k: v }));
}
run(S());
let controls = "";
for (let c = 0; c < 0x30; c++) controls += String.fromCharCode(c);
run(S(controls));
run(S({ [controls]: controls }));

// generated numbers: random bit patterns (NaNs, subnormals, huge and tiny values)
{
  const u = new Uint32Array(4000), f = new Float64Array(u.buffer);
  for (let i = 0; i < u.length; i++) u[i] = Math.floor(rnd() * 4294967296);
  run(S(Array.from(f)));
  run(S(Array.from(new Float32Array(u.buffer))));
  const ints = [];
  for (let i = 0; i < 500; i++) ints.push(Math.floor((rnd() - 0.5) * 2 ** Math.floor(rnd() * 64)), Math.round(rnd() * 1e6) / 1000, rnd() * 10 ** Math.floor(rnd() * 40 - 20));
  run(S(ints));
}

// generated strings: code units from every range, lone and paired surrogates, as values and keys
{
  const ranges = [[0, 0x20], [0x20, 0x7f], [0x7f, 0x800], [0x800, 0xd800], [0xd800, 0xdc00], [0xdc00, 0xe000], [0xe000, 0x10000]];
  for (let n = 0; n < 300; n++) {
    let s = "";
    const len = Math.floor(rnd() * 12);
    for (let i = 0; i < len; i++) { const [a, b] = pick(ranges); s += String.fromCharCode(a + Math.floor(rnd() * (b - a))); }
    run(S(s));
    run(S({ [s]: s, ["k" + s]: [s] }));
  }
}

// objects and arrays
run(S({ a: 1, b: [1, "2", { c: null }], d: { e: { f: [] } }, g: {} }));
run(S({ b: 1, 2: 1, a: 1, 1: 1, "-1": 1, "01": 1, 4294967295: 1, 4294967294: 1, 1.5: 1 }));
run(S([1, , 3]));
run(S(new Array(3)));
run(S(Object.assign([1, 2], { extra: 3 })));
run(S([undefined, function () {}, Symbol(), null]));
run(S({ u: undefined, f() {}, s: Symbol(), n: null, [Symbol("k")]: 1 }));
run(S(Object.create({ inherited: 1 }, { own: { value: 2, enumerable: true }, hidden: { value: 3 } })));
run(S(Object.create(null)));
run(S(Object.assign(Object.create(null), { a: [Object.create(null)] })));
{ class P { constructor() { this.x = 1; this.y = [2]; } get z() { return 3; } m() {} } run(S(new P())); run(S([new P()])); }
run(S([new Date(0), new Date(NaN), { d: new Date(1e12) }]));
run(S([new Map([[1, 2]]), new Set([1]), new WeakMap(), new WeakSet(), /re/g, new Error("boom"), new RangeError("r"), Math, JSON, Promise.resolve(1)]));
run(S([new Uint8Array([1, 2, 255]), new Int16Array([-1, 300]), new Float64Array([NaN, -0, 1.5, Infinity]), new Float32Array([0.1]), new BigInt64Array(0)]));
run(S([new ArrayBuffer(4), new DataView(new ArrayBuffer(2)), Object.assign(new Uint8Array(2), { extra: 1 })]));
run(S((function () { return arguments; })(1, "a", [2])));
run(S([new Number(3), new String("s"), new Boolean(false), Object(2), Object("x"), { n: new Number(-0), s: new String("é\ud800") }]));
run(S([Object(1n)]));
run(S(1n));
run(S({ a: [1n] }));
{ const n = new Number(5); n.valueOf = () => 7; n.toString = () => "t"; const s = new String("s"); s.toString = () => "T"; s.valueOf = () => "V"; run(S([n, s, { n, s }])); }
{ const b = new Boolean(true); b.valueOf = () => false; run(S([b])); }
run(S([JSON.rawJSON("1e999"), { r: JSON.rawJSON('"e"') }, JSON.rawJSON(null), JSON.rawJSON(true)]));
{ const a = {}; a.self = a; run(S(a)); run(S([1, [2, a]])); const b = []; b.push({ b }); run(S(b)); }
{ const shared = { x: 1 }; run(S([shared, shared, { shared }])); }
{ let deep = []; for (let i = 0; i < 500; i++) deep = [deep, { i }]; run(S(deep)); }
{ const o = {}; Object.defineProperty(o, "hidden", { value: 1 }); Object.defineProperty(o, "shown", { value: 2, enumerable: true }); run(S(o)); }
{ const a = [1, 2]; Object.defineProperty(a, "0", { get() { return "got"; } }); run(S(a)); }

// getters, toJSON and replacers, with the order they run in
{ const log = []; const o = { get a() { log.push("get a"); return 1; }, b: { toJSON(k) { log.push("toJSON " + k); return [k]; } }, get c() { log.push("get c"); return undefined; } };
  run(S(o, (k, v) => { log.push("rep " + k + " " + show(v) + " " + (typeof this)); return v; }), log); }
{ const log = []; run(S([{ toJSON(k) { log.push("a" + k + typeof k); return 1; } }, { toJSON: 5 }, { toJSON: null }, { toJSON() { return undefined; } }, { toJSON() { return () => 1; } }]), log); }
{ const log = []; run(S({ toJSON(k) { log.push("root:" + k); return { inner: { toJSON(k2) { log.push("inner:" + k2); return "i"; } } }; } }), log); }
{ const log = []; const holder = []; run(S({ x: [1, { y: 2 }] }, function (k, v) { holder.push(this); log.push(JSON.stringify(k) + ":" + show(v)); return v; }), log);
  out.push(String(holder.length) + ":" + Object.keys(holder[0]).join() + ":" + (holder[1] && holder[1].x ? "x" : "")); }
run(S({ a: 1, b: "two", c: [3] }, (k, v) => (typeof v === "number" ? v * 10 : v)));
run(S({ a: 1 }, () => undefined));
run(S([1, 2, 3], (k, v) => (k === "1" ? undefined : v)));
run(S({ a: 1, b: 2 }, (k, v) => (k === "a" ? { toJSON: () => "not called" } : v)));
run(S({ a: 1 }, (k, v) => (k === "" ? [new Number(4), new String("s")] : v)));
run(S({ a: 1 }, (k, v) => (k === "" ? 1n : v)));
run(S({ a: 1, b: 2, c: { a: 3, d: 4 }, e: [{ a: 5, b: 6 }] }, ["a", "c", "e"]));
run(S({ 1: "one", 2: "two", a: "a" }, [2, 1, 2, "1", new Number(2), new String("a"), "a", {}, null, true, Symbol()]));
run(S({ a: 1 }, []));
run(S([{ a: 1, b: 2 }], ["b"]));
run(S({ a: 1, b: 2 }, { a: true }));
run(S({ a: undefined, b: 2 }, ["a", "b", "missing"]));
{ const log = []; const list = ["b"]; list[1] = { toString() { log.push("toString"); return "a"; } }; run(S({ a: 1, b: 2 }, list), log); }
{ const log = []; const list = [new String("a")]; list[0].toString = () => { log.push("boxed toString"); return "b"; }; run(S({ a: 1, b: 2 }, list), log); }
{ const list = ["a"]; Object.defineProperty(list, "1", { get() { return "b"; } }); run(S({ a: 1, b: 2 }, list)); }
run(S({ "\ud800": 1, "\ud800x": [2], "\ufffd": 3, "é": 4 }));

// the gap: numbers, strings, boxed values (nested values without empty containers: see TestStringifyGapFollowsTheSpec)
const nested = { a: 1, b: [1, "two", { c: [3, { d: null }] }], e: { f: { g: "h" } } };
for (const gap of [0, 1, 2, 4, 9, 10, 11, 100, -1, 1.9, NaN, "", " ", "\t", "--", "abcdefghij", "abcdefghijk", new Number(3), new String("ab"), {}, [], true, null]) {
  run(S(nested, null, gap));
  run(S([nested, [nested]], ["a", "b", "c", "e", "f"], gap));
}
{ const n = new Number(1); n.valueOf = () => 4; run(S([1], null, n)); const s = new String("x"); s.toString = () => "yy"; run(S([1], null, s)); }

// proxies: the traps each walk triggers, in order
{ const log = [];
  const handler = { get(t, k, r) { log.push("get " + String(k)); return Reflect.get(t, k, r); },
    ownKeys(t) { log.push("ownKeys"); return Reflect.ownKeys(t); },
    getOwnPropertyDescriptor(t, k) { log.push("gopd " + String(k)); return Reflect.getOwnPropertyDescriptor(t, k); } };
  run(S(new Proxy({ a: 1, b: [2], [Symbol("s")]: 3 }, handler)), log);
  const log2 = log.splice(0);
  run(S(new Proxy([1, { x: 2 }], handler)), log);
  run(S({ p: new Proxy(new Number(3), handler), q: new Proxy(new String("s"), handler) }), log);
  run(S({ a: 1 }, new Proxy(["a"], handler)), log);
  out.push(log2.join());
}
{ const r = Proxy.revocable({}, {}); r.revoke(); run(S(r.proxy)); run(S([r.proxy])); run(S({}, r.proxy)); run(S({ a: [] }, new Proxy(new Proxy(["a"], {}), {}))); }
{ run(S(new Proxy(function () {}, {}))); run(S({ f: new Proxy(() => 1, {}) })); }

// errors thrown inside
run(S({ get a() { throw new Error("getter"); } }));
run(S({ toJSON() { throw new TypeError("toJSON"); } }));
run(S({ a: 1 }, () => { throw new RangeError("replacer"); }));
run(S([new Number(1)].map((n) => { n.valueOf = () => { throw new Error("valueOf"); }; return n; })));
run(S([1], null, { valueOf() { throw new Error("not called"); } }));

// BigInt with a toJSON of its own
BigInt.prototype.toJSON = function (k) { return "big:" + this.toString() + ":" + k; };
run(S([1n, { b: 2n }]));
run(S(3n));
delete BigInt.prototype.toJSON;

// generated trees (every leaf kind, shared and nested), without and with a replacer
{
  const leaves = [() => null, () => true, () => false, () => Math.floor(rnd() * 1000) - 500, () => rnd() * 1e10, () => "s" + Math.floor(rnd() * 100),
    () => "é\u0001\"", () => undefined, () => Symbol(), () => () => 1, () => new Date(Math.floor(rnd() * 1e12)), () => new Number(rnd()), () => new String("b"), () => NaN];
  const shared = { shared: true };
  const tree = (d) => {
    const r = rnd();
    if (d > 4 || r < 0.3) return pick(leaves)();
    if (r < 0.35) return shared;
    const n = Math.floor(rnd() * 5);
    if (r < 0.65) { const a = []; for (let i = 0; i < n; i++) a.push(tree(d + 1)); if (rnd() < 0.2) a.length += 2; return a; }
    const o = {};
    for (let i = 0; i < n; i++) o[pick(["a", "b", "c", "0", "10", "é", "key" + i, "2"])] = tree(d + 1);
    return o;
  };
  for (let i = 0; i < 200; i++) {
    const t = tree(0);
    run(S(t));
    run(S(t, (k, v) => (k === "a" ? undefined : typeof v === "number" ? -v : v)));
    run(S(t, ["a", "c", "10", "é"]));
  }
}
return out;
})()`

// newNativeRuntime is a plain goja runtime (its own JSON.stringify); newGuardedRuntime has the
// sandbox's guards and prelude.
func newGuardedRuntime(t testing.TB) *goja.Runtime {
	t.Helper()
	vm := goja.New()
	vm.SetMaxCallStackSize(maxCallStackSize)
	if _, err := installPrelude(vm, contextCode); err != nil {
		t.Fatal(err)
	}
	return vm
}

// units are a JavaScript string's UTF-16 code units.
func units(v goja.Value) []uint16 {
	s, ok := v.(goja.String)
	if !ok {
		return nil
	}
	u := make([]uint16, s.Length())
	for i := range u {
		u[i] = s.CharAt(i)
	}
	return u
}

func runCorpus(t *testing.T, vm *goja.Runtime) [][]uint16 {
	t.Helper()
	v, err := vm.RunString(stringifyCorpus)
	if err != nil {
		t.Fatal(err)
	}
	arr := v.ToObject(vm)
	n := int(arr.Get("length").ToInteger())
	out := make([][]uint16, n)
	for i := range out {
		out[i] = units(arr.Get(strconv.Itoa(i)))
	}
	return out
}

// The guarded JSON.stringify writes what goja's native one writes, unit for unit, and runs the
// same script code in the same order, for the corpus above (a few thousand values: every kind
// of value and key, generated numbers, strings and trees, replacers, gaps, proxies, errors).
func TestStringifyMatchesNative(t *testing.T) {
	native, guarded := runCorpus(t, goja.New()), runCorpus(t, newGuardedRuntime(t))
	if len(native) != len(guarded) {
		t.Fatalf("%d results natively, %d guarded", len(native), len(guarded))
	}
	if len(native) < 1400 {
		t.Fatalf("only %d cases", len(native))
	}
	bad := 0
	for i := range native {
		if !slices.Equal(native[i], guarded[i]) {
			if bad++; bad <= 10 {
				t.Errorf("case %d:\nnative  %q\nguarded %q", i, trimmed(native[i]), trimmed(guarded[i]))
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d cases differ", bad, len(native))
	}
}

func trimmed(u []uint16) string {
	s := string(utf16.Decode(u))
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// Where goja's native JSON.stringify departs from the language, the guarded one follows the
// language (these are V8's texts): the indentation after an empty array or object, a gap cut at
// 10 UTF-16 units (not bytes), a gap of Infinity, a gap with a lone surrogate, and a Symbol
// object (an object, not a symbol).
func TestStringifyGapFollowsTheSpec(t *testing.T) {
	vm := newGuardedRuntime(t)
	for src, want := range map[string]string{
		`JSON.stringify([[], [1]], null, 2)`:                                                        "[\n  [],\n  [\n    1\n  ]\n]",
		`JSON.stringify({ a: {}, b: { c: 1 } }, null, 2)`:                                           "{\n  \"a\": {},\n  \"b\": {\n    \"c\": 1\n  }\n}",
		`JSON.stringify({ a: [], b: [{}, { c: [] }, [2]] }, null, "--")`:                            "{\n--\"a\": [],\n--\"b\": [\n----{},\n----{\n------\"c\": []\n----},\n----[\n------2\n----]\n--]\n}",
		`JSON.stringify([1, { x: [2] }], null, "é")`:                                                "[\né1,\né{\néé\"x\": [\nééé2\néé]\né}\n]",
		`JSON.stringify({ a: [1] }, null, "日本語日本語日本語日本語")`:                                          "{\n日本語日本語日本語日\"a\": [\n日本語日本語日本語日日本語日本語日本語日1\n日本語日本語日本語日]\n}",
		`JSON.stringify([1], null, Infinity)`:                                                       "[\n          1\n]",
		`JSON.stringify([1], null, 1e9)`:                                                            "[\n          1\n]",
		`JSON.stringify({ r: JSON.rawJSON('"é"') })`:                                                `{"r":"é"}`,
		`JSON.stringify({ "\ud800": 1, a: 2 }, ["\ud800"])`:                                         `{"\ud800":1}`,
		`JSON.stringify(Object(Symbol("s")))`:                                                       "{}",
		`JSON.stringify([Object(Symbol()), { s: Object(Symbol()) }])`:                               `[{},{"s":{}}]`,
		`String(JSON.stringify([[1]], null, "\ud800") === "[\n\ud800[\n\ud800\ud8001\n\ud800]\n]")`: "true",
		`String(JSON.stringify([1], null, "a" + "😀".repeat(5)) === "[\na😀😀😀😀\ud83d1\n]")`:           "true",
	} {
		v, err := vm.RunString(src)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if got := units(v); !slices.Equal(got, utf16.Encode([]rune(want))) {
			t.Errorf("%s:\ngot  %q\nwant %q", src, trimmed(got), want)
		}
	}
}

// The limits are the sandbox's: what reaches them exactly still serialises (a 10,000-deep value,
// as JSON.parse reads it; a result of 10,000,000 UTF-16 units, whatever its bytes), one unit or
// level more is refused.
func TestStringifyLimitsAreExact(t *testing.T) {
	src := `
const deep = JSON.parse("[".repeat(10000) + "]".repeat(10000));
const wide = "é".repeat(4999996) + "😀".repeat(2500000); // 9,999,996 units, 17,499,992 bytes of UTF-8
const ok = [JSON.stringify(deep).length === 20000, JSON.stringify("x".repeat(9999998)).length === 10000000, JSON.stringify([wide]).length === 10000000];
const refused = (f) => { try { f(); return "none"; } catch (e) { return e instanceof RangeError ? e.message : String(e); } };
const why = [refused(() => JSON.stringify([deep])), refused(() => JSON.stringify("x".repeat(9999999))), refused(() => JSON.stringify([wide + "a"]))];
ok.join() + "|" + why.join("|")
`
	want := "true,true,true|JSON.stringify: nesting deeper than the sandbox's limit of 10,000|" + jsonTooLarge + "|" + jsonTooLarge
	res := replCall(t, newTestREPL(t), &testHost{}, src, func(c *ScriptCall) { c.Quotas.TimeoutMs, c.Quotas.MemoryLimitBytes = nativesTimeoutMs, 1<<30 })
	wantOK(t, res, want)
}

// hiddenKeys is an object no guard can size visited again and again: its 200,000 properties
// are not enumerable (nothing is written, no count grows), and reading its keys takes
// milliseconds each time. The run's own stop reaches the walk.
const hiddenKeys = `const o = {}; for (let i = 0; i < 2e5; i++) Object.defineProperty(o, "k" + i, { value: i }); JSON.stringify(new Array(1e5).fill(o))`

// The run's timeout stops a JSON.stringify no limit refuses (code states and agent scripts).
func TestStringifyIsStoppedByTheRunsTimeout(t *testing.T) {
	r := runWith(t, context.Background(), &testHost{}, hiddenKeys, func(c *CodeStateRun) { c.Quotas.TimeoutMs = 1500 })
	as[*TimeoutError](t, r.err)
	res := replCall(t, newTestREPL(t), &testHost{}, hiddenKeys, func(c *ScriptCall) { c.Quotas.TimeoutMs = 1500 })
	if !res.Error || !strings.Contains(res.Text, "timed out after 1500 ms") {
		t.Fatalf("got %+v", res)
	}
}

// What the sandbox serialises itself goes through the same guard: an agent script's completion
// value fails the call as the guard's QuotaError (not "[object Array]"), a tool argument's
// refusal rejects the call's promise (the script may catch it), console.log falls back to
// String(value).
func TestStringifyGuardsTheSandboxsOwnSerialising(t *testing.T) {
	const shared = `let o = "x".repeat(1000); for (let i = 0; i < 40; i++) o = [o, o];`
	// a generous memory quota: the text written up to the limit (10 MB and the builder's
	// growth) may otherwise meet the heap check first on a loaded machine — also a quota, but
	// one that resets the REPL, and what is under test here is the guard's refusal
	roomy := func(c *ScriptCall) { c.Quotas.MemoryLimitBytes = 1 << 30 }
	res := replCall(t, newTestREPL(t), &testHost{}, shared+" o", roomy)
	if !res.Error {
		t.Fatalf("got %+v", res)
	}
	wantQuota(t, res.Err, jsonTooLarge)
	if res.Reset {
		t.Errorf("the refusal reset the REPL: %+v", res)
	}
	src := shared + `
let caught = "";
try { await tools.read_file(o); } catch (e) { caught = e instanceof RangeError ? e.message : String(e); }
let deep = {}; for (let i = 0; i < 2e4; i++) deep = { a: deep };
console.log({ small: true }, deep);
caught`
	res = replCall(t, newTestREPL(t), &testHost{}, src, roomy)
	wantOK(t, res, "{\"small\":true} [object Object]\n"+jsonTooLarge)
}
