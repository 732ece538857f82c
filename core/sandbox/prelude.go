package sandbox

import (
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dlclark/regexp2/v2"
	"github.com/dop251/goja"
)

// regexMatchTimeout bounds one backtracking (regexp2) match: goja cannot interrupt a native
// match, so a ReDoS pattern would otherwise outlive the run's timeout (research/goja.md §4).
// goja treats a timed-out match as "no match".
var regexMatchTimeout = time.Second

func init() {
	regexp2.DefaultMatchTimeout = regexMatchTimeout
}

// preludeSource runs first in every runtime (CS-34, AS-01, goja.md §1): SANDBOX_CONTRACT (its
// context, "code" or "ptc", is the second argument), the ES2024
// library pieces goja lacks, queueMicrotask, an en-US Number#toLocaleString (goja's throws for
// "en-US"), and the guards that are easier in JavaScript than in Go (quotas.go has the rest),
// since native builtins cannot be interrupted (goja.md §4, §5): the result of replace/replaceAll
// with a string replacement (at most @MAX_UNITS@ UTF-16 units); the pieces of split, replace and
// replaceAll and the matches of match and matchAll (@MAX_PIECES@); Array.from and the spread
// helpers of the guard rewrite (@MAX_ELEMENTS@ elements, @MAX_ARGUMENTS@ arguments), which
// iterate what they cannot bound up front in script code, where the run's stop reaches; typed
// arrays and ArrayBuffer (@MAX_BYTES@ bytes). Refusals are the RangeErrors fail (quotas.go)
// makes. The prelude returns what installPrelude needs from it.
const preludeSource = `(function (g, context, fail, ITER) {
"use strict";
const MAX = @MAX_UNITS@, MAX_ELEMENTS = @MAX_ELEMENTS@, MAX_ARGUMENTS = @MAX_ARGUMENTS@;
const apply = Reflect.apply, isArray = Array.isArray;
const hide = (o, name, value) => Object.defineProperty(o, name, { value, writable: true, configurable: true, enumerable: false });
Object.defineProperty(g, "SANDBOX_CONTRACT", { value: Object.freeze({ context, version: 3 }), enumerable: false });

hide(g, "structuredClone", function structuredClone(value) {
  const seen = new Map();
  const clone = (v) => {
    if (v === null || typeof v !== "object") {
      if (typeof v === "function" || typeof v === "symbol") throw new TypeError(String(typeof v) + " could not be cloned");
      return v;
    }
    if (seen.has(v)) return seen.get(v);
    let out;
    if (v instanceof Date) { out = new Date(v.getTime()); seen.set(v, out); return out; }
    if (v instanceof RegExp) { out = new RegExp(v.source, v.flags); seen.set(v, out); return out; }
    if (v instanceof Map) { out = new Map(); seen.set(v, out); v.forEach((x, k) => out.set(clone(k), clone(x))); return out; }
    if (v instanceof Set) { out = new Set(); seen.set(v, out); v.forEach((x) => out.add(clone(x))); return out; }
    if (v instanceof Error) { out = new Error(v.message); out.name = v.name; seen.set(v, out); return out; }
    out = Array.isArray(v) ? [] : {};
    seen.set(v, out);
    for (const k of Object.keys(v)) out[k] = clone(v[k]);
    return out;
  };
  return clone(value);
});

const groupInto = (items, fn, add) => {
  let i = 0;
  for (const item of items) add(fn(item, i++), item);
};
hide(Object, "groupBy", function groupBy(items, fn) {
  const out = Object.create(null);
  groupInto(items, fn, (k, v) => { k = typeof k === "symbol" ? k : String(k); (out[k] || (out[k] = [])).push(v); });
  return out;
});
hide(Map, "groupBy", function groupBy(items, fn) {
  const out = new Map();
  groupInto(items, fn, (k, v) => { if (!out.has(k)) out.set(k, []); out.get(k).push(v); });
  return out;
});
hide(Promise, "withResolvers", function withResolvers() {
  let resolve, reject;
  const promise = new this((a, b) => { resolve = a; reject = b; });
  return { promise, resolve, reject };
});
hide(Array, "fromAsync", async function fromAsync(items, mapFn, thisArg) {
  const out = [];
  let i = 0;
  const source = items != null && typeof items[Symbol.iterator] === "function" ? items : Array.from(items);
  for (const item of source) {
    const v = await item;
    out.push(mapFn === undefined ? v : await mapFn.call(thisArg, v, i));
    i++;
  }
  return out;
});
const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
hide(String.prototype, "isWellFormed", function isWellFormed() { loneSurrogate.lastIndex = 0; return !loneSurrogate.test(String(this)); });
hide(String.prototype, "toWellFormed", function toWellFormed() { return String(this).replace(loneSurrogate, "\uFFFD"); });
hide(g, "queueMicrotask", function queueMicrotask(fn) {
  if (typeof fn !== "function") throw new TypeError("queueMicrotask: the callback is not a function");
  Promise.resolve().then(() => fn());
});

hide(Number.prototype, "toLocaleString", function toLocaleString(locales, options) {
  const n = Number(this);
  if (Number.isNaN(n)) return "NaN";
  if (!Number.isFinite(n)) return n < 0 ? "-∞" : "∞";
  const o = options || {};
  const minFrac = o.minimumFractionDigits === undefined ? 0 : Number(o.minimumFractionDigits);
  const maxFrac = o.maximumFractionDigits === undefined ? Math.max(minFrac, 3) : Number(o.maximumFractionDigits);
  let [int, frac = ""] = Math.abs(n).toFixed(maxFrac).split(".");
  while (frac.length > minFrac && frac.endsWith("0")) frac = frac.slice(0, -1);
  if (o.useGrouping !== false) int = int.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  const sign = n < 0 && (int !== "0" || /[1-9]/.test(frac)) ? "-" : "";
  return sign + int + (frac ? "." + frac : "");
});

const count = (v) => Math.max(0, Math.trunc(Number(v)) || 0);

// known is how many elements iterating x yields, when its own iterator (an array's, a string's,
// as the runtime installed them) says so without running: -1 otherwise. (An iterator whose next
// a script replaced steps in script code, where the run's stop reaches.)
const arrayValues = Array.prototype[ITER], stringValues = String.prototype[ITER];
const known = (x) => {
  if (typeof x === "string") return stringValues === String.prototype[ITER] ? x.length : -1;
  return isArray(x) && x[ITER] === arrayValues ? x.length : -1;
};
// collect iterates x in script code (each step can be stopped), refusing past limit elements.
const collect = (x, limit, builtin) => {
  const out = [];
  let n = 0;
  for (const v of x) {
    if (n === limit) throw fail("many", builtin, "elements", limit);
    out[n++] = v;
  }
  return out;
};
// The spread helpers of the guard rewrite: f(...x) takes at most MAX_ARGUMENTS arguments,
// [...x] and {...x} at most MAX_ELEMENTS elements.
const spreadArgs = (x) => {
  const n = known(x);
  if (n < 0) return collect(x, MAX_ARGUMENTS, "spread");
  if (n > MAX_ARGUMENTS) throw fail("args", "spread", n);
  return x;
};
const spreadArray = (x) => {
  const n = known(x);
  if (n < 0) return collect(x, MAX_ELEMENTS, "spread");
  if (n > MAX_ELEMENTS) throw fail("elements", "spread", n);
  return x;
};
const spreadObject = (x) => {
  const n = typeof x === "string" || isArray(x) || (ArrayBuffer.isView(x) && !(x instanceof DataView)) ? x.length : 0;
  if (n > MAX_ELEMENTS) throw fail("elements", "spread", n);
  return x;
};
const from = Array.from;
hide(Array, "from", {
  from(items, mapFn, thisArg) {
    if (items !== null && items !== undefined) {
      const it = items[ITER];
      let n = it === undefined || it === null ? count(Object(items).length) : known(items);
      if (n < 0) items = collect(items, MAX_ELEMENTS, "Array.from"), n = 0;
      if (n > MAX_ELEMENTS) throw fail("elements", "Array.from", n);
    }
    return apply(from, this, [items, mapFn, thisArg]);
  },
}.from);

// matches counts pat's matches in str (every one when all or a global RegExp, else the first)
// with a loop of script steps the timeout can interrupt, stopping once past limit; the piece
// guards of split, replace, replaceAll, match and matchAll (quotas.go) call it for long strings.
const matches = (str, pat, all, limit) => {
  if (pat instanceof RegExp) {
    if (!all && !pat.global) return 1;
    const re = new RegExp(pat.source, pat.flags.includes("g") ? pat.flags : pat.flags + "g");
    let n = 0; // test (timed: a timeout throws) makes no match arrays
    for (let at = 0; n <= limit && re.test(str); n++) {
      if (re.lastIndex === at) re.lastIndex++; // an empty match
      at = re.lastIndex;
    }
    return n;
  }
  const p = String(pat);
  if (!all) return str.includes(p) ? 1 : 0;
  if (p === "") return str.length + 1;
  let n = 0;
  for (let i = str.indexOf(p); n <= limit && i >= 0; i = str.indexOf(p, i + p.length)) n++;
  return n;
};
// Typed arrays and buffers allocate their whole size natively: each constructor is fronted by
// one of the same name, prototype, statics and instanceof, refusing more than MAX_BYTES. The
// prelude returns front; installPrelude makes each front when a script first reads the global
// (most never do).
const MAX_BYTES = @MAX_BYTES@;
const front = (C, name, per) => {
  const W = function (...args) {
    if (new.target === undefined) return C(...args); // throws C's own TypeError
    const a = args[0];
    const n = typeof a === "number" ? count(a) * per
      : a !== null && typeof a === "object" && !(a instanceof ArrayBuffer) && typeof a.length === "number" ? count(a.length) * per : 0;
    if (n > MAX_BYTES) throw fail("bytes", name, n);
    return Reflect.construct(C, args, new.target === W ? C : new.target);
  };
  Object.setPrototypeOf(W, C);
  Object.defineProperties(W, { name: { value: name }, length: { value: C.length }, prototype: { value: C.prototype },
    [Symbol.hasInstance]: { value: (x) => x instanceof C } });
  hide(C.prototype, "constructor", W);
  return W;
};
return {
  front, spreadArgs, spreadArray, spreadObject, matches, numeric: (v) => -(-v),
};
})
`

var (
	preludeOnce    sync.Once
	preludeProgram *goja.Program
)

// Sandbox contexts, SANDBOX_CONTRACT.context (CS-34, AS-01).
const (
	contextCode = "code" // code and grader states
	contextPTC  = "ptc"  // agent scripts: archmax_eval and archmax_run
)

// prelude returns the compiled prelude; a *goja.Program is immutable and shared by runtimes.
func prelude() *goja.Program {
	preludeOnce.Do(func() {
		src := strings.NewReplacer(
			"@MAX_UNITS@", strconv.Itoa(maxStringUnits), "@MAX_ELEMENTS@", strconv.Itoa(maxElements),
			"@MAX_ARGUMENTS@", strconv.Itoa(maxArguments), "@MAX_PIECES@", strconv.Itoa(maxPieces),
			"@MAX_BYTES@", strconv.Itoa(maxTypedBytes),
		).Replace(preludeSource)
		preludeProgram = goja.MustCompile("<prelude>", src, true)
	})
	return preludeProgram
}

// installPrelude installs the Go guards (quotas.go) and runs the prelude in vm for the given
// context (contextCode or contextPTC); it returns the runtime's guards.
func installPrelude(vm *goja.Runtime, context string) (*guards, error) {
	g := installGuards(vm)
	fn, err := vm.RunProgram(prelude())
	if err != nil {
		return nil, err
	}
	call, _ := goja.AssertFunction(fn)
	ret, err := call(goja.Undefined(), vm.GlobalObject(), vm.ToValue(context), vm.ToValue(g.failJS), goja.SymIterator)
	if err != nil {
		return nil, err
	}
	api := ret.ToObject(vm)
	g.finish(api)
	front, _ := goja.AssertFunction(api.Get("front"))
	g2 := vm.GlobalObject()
	for _, s := range sizedConstructors {
		ctor := g2.Get(s.name)
		if ctor == nil || goja.IsUndefined(ctor) {
			continue
		}
		// the global is an accessor until first read, then the front itself (a plain value)
		getter := vm.ToValue(func(goja.FunctionCall) goja.Value {
			g.guardTypedJoin(ctor)
			w, err := front(goja.Undefined(), ctor, vm.ToValue(s.name), vm.ToValue(s.bytes))
			if err != nil {
				panic(err)
			}
			if err := g2.DefineDataProperty(s.name, w, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE); err != nil {
				panic(err)
			}
			return w
		})
		if err := g2.DefineAccessorProperty(s.name, getter, nil, goja.FLAG_TRUE, goja.FLAG_FALSE); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// sizedConstructors are the allocating constructors the prelude's front guards, with their
// bytes per element (goja.md §5).
var sizedConstructors = []struct {
	name  string
	bytes int
}{
	{"ArrayBuffer", 1}, {"Int8Array", 1}, {"Uint8Array", 1}, {"Uint8ClampedArray", 1}, {"Int16Array", 2}, {"Uint16Array", 2},
	{"Int32Array", 4}, {"Uint32Array", 4}, {"Float32Array", 4}, {"Float64Array", 8}, {"BigInt64Array", 8}, {"BigUint64Array", 8},
}
