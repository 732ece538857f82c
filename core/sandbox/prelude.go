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
// "en-US"), and size guards (MAX: 1e7 elements or UTF-16 units) in front of builtins that
// could allocate without bound, since native builtins cannot be interrupted (goja.md §4, §5).
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

const guard = (o, name, size) => {
  const orig = o[name];
  hide(o, name, {
    [name](...args) {
      const n = size.apply(this, args);
      if (n > MAX) throw new RangeError(name + ": result too large (" + n + " > " + MAX + ")");
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
	_, err = call(goja.Undefined(), vm.GlobalObject(), vm.ToValue(context))
	return err
}
