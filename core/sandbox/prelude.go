package sandbox

import (
	"sync"
	"time"

	"github.com/dlclark/regexp2/v2"
	"github.com/dop251/goja"
)

// regexMatchTimeout bounds one backtracking (regexp2) match: goja cannot interrupt a native
// match, so a ReDoS pattern would otherwise outlive the run's timeout (research/goja.md §4).
// goja treats a timed-out match as "no match".
const regexMatchTimeout = time.Second

func init() {
	regexp2.DefaultMatchTimeout = regexMatchTimeout
}

// preludeSource runs first in every runtime (CS-34, AS-01, goja.md §1): SANDBOX_CONTRACT (its
// context, "code" or "ptc", is the second argument), the ES2024
// library pieces goja lacks, queueMicrotask, an en-US Number#toLocaleString (goja's throws for
// "en-US"), and size guards in front of builtins that could allocate without bound, since
// native builtins cannot be interrupted (goja.md §4, §5): MAX (1e7 elements or UTF-16 units) for
// repeat, padStart/padEnd, fill, join, Array.from and the result of replace/replaceAll with a
// string replacement; MAX_PIECES (250,000) for the pieces of split, replace and replaceAll; MAX_BYTES (16 MB) for typed arrays and
// ArrayBuffer.
const preludeSource = `(function (g, context) {
"use strict";
const MAX = 1e7;
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

const guard = (o, name, size, max = MAX) => {
  const orig = o[name];
  hide(o, name, {
    [name](...args) {
      const n = size.apply(this, args);
      if (n > max) throw new RangeError(name + ": result too large (" + n + " > " + max + ")");
      return orig.apply(this, args);
    },
  }[name]);
};
const count = (v) => Math.max(0, Math.trunc(Number(v)) || 0);
guard(String.prototype, "repeat", function (n) { return String(this).length * count(n); });
guard(String.prototype, "padStart", function (n) { return count(n); });
guard(String.prototype, "padEnd", function (n) { return count(n); });
guard(Array.prototype, "fill", function () { return this.length; });
guard(Array.prototype, "join", function () { return this.length; });
guard(Array, "from", function (items) { return items == null ? 0 : count(items.length); });

// matches counts pat's matches in str (every one when all or a global RegExp, else the first)
// with a loop of script steps the timeout can interrupt, stopping once past limit.
const matches = (str, pat, all, limit) => {
  if (pat instanceof RegExp) {
    if (!all && !pat.global) return 1;
    const re = new RegExp(pat.source, pat.flags.includes("g") ? pat.flags : pat.flags + "g");
    let n = 0;
    for (let m; n <= limit && (m = re.exec(str)) !== null; n++) if (m[0] === "") re.lastIndex++;
    return n;
  }
  const p = String(pat);
  if (!all) return str.includes(p) ? 1 : 0;
  if (p === "") return str.length + 1;
  let n = 0;
  for (let i = str.indexOf(p); n <= limit && i >= 0; i = str.indexOf(p, i + p.length)) n++;
  return n;
};
// split, replace and replaceAll make their pieces natively, each costing far more than its
// characters: at most MAX_PIECES of them.
const MAX_PIECES = 25e4;
// replace and replaceAll with a string replacement build their result natively; each "$"
// pattern may insert up to the whole string again. A function replacer runs as script code.
const replaced = (name, all) => function (pat, rep) {
  if (typeof rep === "function") return 0;
  const s = String(this), r = String(rep);
  const per = r.length + (r.split("$").length - 1) * s.length;
  if (s.length < MAX_PIECES && s.length + (s.length + 1) * per <= MAX) return 0;
  const n = matches(s, pat, all, Math.min(MAX_PIECES, Math.ceil(MAX / Math.max(per, 1))) + 1);
  if (n > MAX_PIECES) throw new RangeError(name + ": too many replacements (more than " + MAX_PIECES + ")");
  return s.length + n * per;
};
guard(String.prototype, "replace", replaced("replace", false));
guard(String.prototype, "replaceAll", replaced("replaceAll", true));
guard(String.prototype, "split", function (sep, limit) {
  const s = String(this);
  if (sep === undefined || sep === null || s.length < MAX_PIECES) return 0;
  const cap = limit === undefined ? Infinity : limit >>> 0;
  return Math.min(cap, sep === "" ? s.length : matches(s, sep, true, MAX_PIECES) + 1);
}, MAX_PIECES);

// Typed arrays and buffers allocate their whole size natively: each constructor is fronted by
// one of the same name, prototype, statics and instanceof, refusing more than MAX_BYTES. The
// prelude returns front; installPrelude makes each front when a script first reads the global
// (most never do).
const MAX_BYTES = 16e6;
const front = (C, name, per) => {
  const W = function (...args) {
    if (new.target === undefined) return C(...args); // throws C's own TypeError
    const a = args[0];
    const n = typeof a === "number" ? count(a) * per
      : a !== null && typeof a === "object" && !(a instanceof ArrayBuffer) && typeof a.length === "number" ? count(a.length) * per : 0;
    if (n > MAX_BYTES) throw new RangeError(name + ": too large (" + n + " bytes > " + MAX_BYTES + ")");
    return Reflect.construct(C, args, new.target === W ? C : new.target);
  };
  Object.setPrototypeOf(W, C);
  Object.defineProperties(W, { name: { value: name }, length: { value: C.length }, prototype: { value: C.prototype },
    [Symbol.hasInstance]: { value: (x) => x instanceof C } });
  hide(C.prototype, "constructor", W);
  return W;
};
return front;
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
		preludeProgram = goja.MustCompile("<prelude>", preludeSource, true)
	})
	return preludeProgram
}

// installPrelude runs the prelude in vm for the given context (contextCode or contextPTC).
func installPrelude(vm *goja.Runtime, context string) error {
	fn, err := vm.RunProgram(prelude())
	if err != nil {
		return err
	}
	call, _ := goja.AssertFunction(fn)
	ret, err := call(goja.Undefined(), vm.GlobalObject(), vm.ToValue(context))
	if err != nil {
		return err
	}
	front, _ := goja.AssertFunction(ret)
	g := vm.GlobalObject()
	for _, s := range sizedConstructors {
		ctor := g.Get(s.name)
		if ctor == nil || goja.IsUndefined(ctor) {
			continue
		}
		// the global is an accessor until first read, then the front itself (a plain value)
		getter := vm.ToValue(func(goja.FunctionCall) goja.Value {
			w, err := front(goja.Undefined(), ctor, vm.ToValue(s.name), vm.ToValue(s.bytes))
			if err != nil {
				panic(err)
			}
			if err := g.DefineDataProperty(s.name, w, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE); err != nil {
				panic(err)
			}
			return w
		})
		if err := g.DefineAccessorProperty(s.name, getter, nil, goja.FLAG_TRUE, goja.FLAG_FALSE); err != nil {
			return err
		}
	}
	return nil
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
