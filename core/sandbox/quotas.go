package sandbox

import (
	"crypto/sha256"
	"math"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/dop251/goja"
	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/parser"
)

// Guards of the natives no interrupt reaches (CS-61; research/goja.md §4–§5; DECISIONS "Issue 17
// — sandbox quotas"). goja checks for an interrupt between bytecode instructions only, so one
// native call — a builtin, a spread, a BigInt operator — runs to its end however long it takes
// and however much it allocates. Each guard checks, before the native runs, the size of what it
// would build or walk, and refuses past the limit: it throws a RangeError (the script may catch
// it; the work was never done) whose message names the builtin and the limit, and an uncaught
// one fails the run as a *QuotaError with that message. The limits are the sandbox's, not the
// run's: they are sized for the default memoryLimitBytes (64 MiB), so a single native step stays
// within the quota plus 64 MiB and a few hundred milliseconds.
const (
	// maxArguments bounds the arguments of one call built from a list (apply, Reflect.apply,
	// Reflect.construct, spread arguments): QuickJS's own limit (the reference's engine).
	maxArguments = 65535
	// maxElements bounds the elements a native makes or walks in one step: an array's length for
	// the Array.prototype methods that walk it, a spread, Array.from, fill, unshift, concat; 2^20
	// slots are 16 MiB (32 MiB while an array grows), and goja walks them in ~60 ms.
	maxElements = 1 << 20
	// maxStringUnits bounds a string a native builds in one step (repeat, padStart, padEnd, join,
	// concat, replace), in UTF-16 units; the prelude's MAX.
	maxStringUnits = 10_000_000
	// maxPieces bounds the pieces of split, replace and replaceAll and the matches of match and
	// matchAll (each piece costs far more than its characters).
	maxPieces = 250_000
	// maxTypedBytes bounds typed arrays and ArrayBuffers (A7-13).
	maxTypedBytes = 16_000_000
	// maxBigIntBits bounds a BigInt result of *, ** and <<, BigInt() and BigInt.asIntN/asUintN:
	// QuickJS's JS_BIGINT_MAX_SIZE (1 Mibit). At the limit a multiplication takes ~2 ms and
	// toString ~30 ms.
	maxBigIntBits = 1 << 20
	// maxJSONDepth bounds the nesting of a JSON.parse text (goja's parser recurses in Go); Go's
	// encoding/json uses the same bound.
	maxJSONDepth = 10_000
)

// guards is one runtime's guard state: the originals it wraps, the helpers of the guard
// rewrite (guardrewrite.go) and the errors it threw. It belongs to the runtime's goroutine.
type guards struct {
	vm      *goja.Runtime
	quota   map[*goja.Object]string // the guard errors thrown, by identity: their message
	helpers *goja.Object            // frozen: the prototype of every __cs (and the dynamic-code global)

	rangeError, syntaxError *goja.Object
	numeric                 goja.Callable // (v) => -(-v): ToNumeric, one ToPrimitive of an object
	preventExtensions       goja.Callable
	objectKeys, reflectGet  goja.Callable // Object.keys and Reflect.get as goja made them
	// done is the current run's context's Done (nil outside a run): natives that walk without
	// calling script code check it, so the run's stop reaches them (checkStop).
	done <-chan struct{}
	// nest is the native recursion the guarded walks hold at this moment (JSON.stringify's
	// levels, nested joins and toLocaleStrings, a JSON.parse with a reviver), summed over walks
	// that re-enter one another through script code (a toJSON, a reviver, an element's
	// toString): each level is Go stack no interrupt or call-stack limit reaches (enterNative).
	nest              int
	exec              goja.Value // RegExp.prototype.exec as installed
	joining           []*goja.Object
	dynamicGlobal     bool // the global __cs exists (dynamic code needs it)
	asyncCovered      bool // AsyncFunction.prototype.constructor is guarded
	generatorsCovered bool // GeneratorFunction.prototype.constructor is guarded
	typedJoin         bool // %TypedArray%.prototype.join is guarded
	iteratorTimed     bool // matchAll's iterator prototype has a timed next
}

// refusal creates the RangeError of a guard and records it as a quota error.
func (g *guards) refusal(msg string) *goja.Object {
	e, err := g.vm.New(g.rangeError, g.vm.ToValue(msg))
	if err != nil {
		panic(err)
	}
	if g.quota == nil {
		g.quota = make(map[*goja.Object]string)
	}
	g.quota[e] = msg
	return e
}

// refuse throws the guard's RangeError.
func (g *guards) refuse(msg string) { panic(g.refusal(msg)) }

// enterNative takes n levels of the run's native recursion budget (maxJSONDepth levels in all,
// however the walks nest) for builtin, refusing past it; the caller gives them back with
// g.nest = before, deferred, so a throw cannot leak them.
func (g *guards) enterNative(builtin string, n int) (before int) {
	before = g.nest
	if g.nest+n > maxJSONDepth {
		g.refuse(guardTooDeep(builtin))
	}
	g.nest += n
	return before
}

// failJS is the prelude's fail(kind, builtin, x, y): the refusal of a guard written in
// JavaScript, built from the same texts as the Go guards'.
func (g *guards) failJS(call goja.FunctionCall) goja.Value {
	builtin := call.Argument(1).String()
	n := call.Argument(2).ToInteger()
	var msg string
	switch call.Argument(0).String() {
	case "args":
		msg = guardArgCount(builtin, n)
	case "chars":
		msg = guardTooLarge(builtin, n, "characters", maxStringUnits)
	case "elements":
		msg = guardTooLarge(builtin, n, "elements", maxElements)
	case "bytes":
		msg = guardTooLarge(builtin, n, "bytes", maxTypedBytes)
	case "pieces":
		msg = guardTooManyCounted(builtin, "pieces", n, maxPieces)
	default: // "many": (what, limit)
		msg = guardTooMany(builtin, call.Argument(2).String(), call.Argument(3).ToInteger())
	}
	return g.refusal(msg)
}

// quotaMessage reports whether v is an error a guard threw, and its message as thrown (a script
// may alter the object, not what it said).
func (g *guards) quotaMessage(v goja.Value) (string, bool) {
	if g == nil {
		return "", false
	}
	o, ok := v.(*goja.Object)
	if !ok {
		return "", false
	}
	msg, ok := g.quota[o]
	return msg, ok
}

// newCS returns a fresh __cs for one program run: the helpers as prototype, the given slots
// (writable, so the program can fill them) and nothing else — it is not extensible, so a
// script that reaches it (a plain script's `arguments[0]`) cannot shadow a helper.
func (g *guards) newCS(slots map[string]goja.Value) *goja.Object {
	cs := g.vm.CreateObject(g.helpers)
	for name, v := range slots {
		if v == nil {
			v = goja.Undefined()
		}
		_ = cs.DefineDataProperty(name, v, goja.FLAG_TRUE, goja.FLAG_FALSE, goja.FLAG_TRUE)
	}
	if _, err := g.preventExtensions(goja.Undefined(), cs); err != nil {
		panic(err)
	}
	return cs
}

// toLength is ECMAScript's ToLength of an already numeric value.
func toLength(v goja.Value) int64 {
	if v == nil {
		return 0
	}
	f := v.ToFloat()
	switch {
	case math.IsNaN(f) || f <= 0:
		return 0
	case f >= 1<<53-1:
		return 1<<53 - 1
	}
	return int64(f)
}

// str is ECMAScript's ToString: an object's ToPrimitive (hint string) once, then the text.
func (g *guards) str(v goja.Value) goja.String {
	p := v.ToString()
	if s, ok := p.(goja.String); ok {
		return s
	}
	if _, ok := p.(*goja.Symbol); ok {
		panic(g.vm.NewTypeError("Cannot convert a Symbol value to a string"))
	}
	return g.vm.ToValue(p.String()).(goja.String)
}

// lengthOf reads ToLength(ToObject(v).length).
func (g *guards) lengthOf(v goja.Value) (*goja.Object, int64) {
	o := v.ToObject(g.vm)
	return o, toLength(o.Get("length"))
}

// fn makes the native function standing in for a builtin. Its name and length stay goja's
// defaults ("" and 0): setting them would cost each fresh runtime ~100 allocations for what no
// script is expected to read (Issue 17 decisions).
func (g *guards) fn(_ string, _ int, f func(goja.FunctionCall) goja.Value) goja.Value {
	return g.vm.ToValue(f)
}

// wrap replaces o[name] (a builtin method: writable, configurable, not enumerable) with check
// followed by the original; check may return replacement arguments (nil keeps the call's).
func (g *guards) wrap(o *goja.Object, name string, length int, check func(call goja.FunctionCall) []goja.Value) {
	orig, ok := goja.AssertFunction(o.Get(name))
	if !ok {
		return
	}
	g.define(o, name, g.fn(name, length, func(call goja.FunctionCall) goja.Value {
		args := check(call)
		if args == nil {
			args = call.Arguments
		}
		return must(orig(call.This, args...))
	}))
}

func (g *guards) define(o *goja.Object, name string, v goja.Value) {
	_ = o.DefineDataProperty(name, v, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
}

// must rethrows what a call out of Go threw (an exception, or an interrupt unwinding the VM).
func must(v goja.Value, err error) goja.Value {
	if err != nil {
		panic(err)
	}
	return v
}

func (g *guards) object(path ...string) *goja.Object {
	v := goja.Value(g.vm.GlobalObject())
	for _, p := range path {
		v = v.ToObject(g.vm).Get(p)
	}
	o, _ := v.(*goja.Object)
	return o
}

// installGuards puts the Go guards in front of the builtins of vm (before the prelude's, which
// wrap some of the same methods). hooks are objects the prelude found: the async and generator
// function prototypes and the regexp string iterator's prototype.
func installGuards(vm *goja.Runtime) *guards {
	g := &guards{vm: vm}
	g.rangeError, g.syntaxError = g.object("RangeError"), g.object("SyntaxError")
	g.preventExtensions, _ = goja.AssertFunction(g.object("Object").Get("preventExtensions"))
	g.objectKeys, _ = goja.AssertFunction(g.object("Object").Get("keys"))
	g.reflectGet, _ = goja.AssertFunction(g.object("Reflect").Get("get"))
	g.installCallGuards()
	g.installArrayGuards()
	g.installObjectGuards()
	g.installStringGuards()
	g.installJSONGuard()
	g.installBigIntGuards()
	g.installRegExpGuards()
	return g
}

// finish completes the guards with what the prelude made in JavaScript (the spread helpers,
// ToNumeric, the prototypes of async and generator functions and of the regexp string
// iterator) and freezes the helpers.
func (g *guards) finish(api *goja.Object) {
	vm := g.vm
	g.numeric, _ = goja.AssertFunction(api.Get("numeric"))
	h := vm.NewObject()
	for name, v := range map[string]goja.Value{
		helperSpreadArgs: api.Get("spreadArgs"), helperSpreadArray: api.Get("spreadArray"), helperSpreadObject: api.Get("spreadObject"),
		helperMul: g.fn("mul", 2, g.mul), helperPow: g.fn("pow", 2, g.pow), helperShl: g.fn("shl", 2, g.shl), helperExec: g.fn("exec", 1, g.execCall),
	} {
		_ = h.DefineDataProperty(name, v, goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_FALSE)
	}
	freeze, _ := goja.AssertFunction(g.object("Object").Get("freeze"))
	must(freeze(goja.Undefined(), h))
	g.helpers = h
	matches, _ := goja.AssertFunction(api.Get("matches"))
	g.installPieceGuards(matches)
	g.installDynamicCode()
}

// --- argument lists --------------------------------------------------------------------------

// installCallGuards bounds the argument lists natives build from array-likes.
func (g *guards) installCallGuards() {
	argsOf := func(builtin string, v goja.Value) {
		if goja.IsUndefined(v) || goja.IsNull(v) {
			return
		}
		if _, ok := v.(*goja.Object); !ok {
			return // the native throws its own TypeError
		}
		if _, n := g.lengthOf(v); n > maxArguments {
			g.refuse(guardArgCount(builtin, n))
		}
	}
	g.wrap(g.object("Function", "prototype"), "apply", 2, func(call goja.FunctionCall) []goja.Value {
		argsOf("apply", call.Argument(1))
		return nil
	})
	reflect := g.object("Reflect")
	g.wrap(reflect, "apply", 3, func(call goja.FunctionCall) []goja.Value {
		argsOf("Reflect.apply", call.Argument(2))
		return nil
	})
	g.wrap(reflect, "construct", 2, func(call goja.FunctionCall) []goja.Value {
		argsOf("Reflect.construct", call.Argument(1))
		return nil
	})
}

// --- arrays ----------------------------------------------------------------------------------

// walkingMethods are the Array.prototype methods that walk (or copy) every index up to the
// length natively, holes included, calling no script code for a hole.
var walkingMethods = []struct {
	name   string
	length int
}{
	{"copyWithin", 2}, {"entries", 0}, {"every", 1}, {"filter", 1}, {"flat", 0}, {"flatMap", 1}, {"forEach", 1},
	{"includes", 1}, {"indexOf", 1}, {"keys", 0}, {"lastIndexOf", 1}, {"map", 1}, {"reduce", 1}, {"reduceRight", 1},
	{"reverse", 0}, {"shift", 0}, {"slice", 2}, {"some", 1}, {"sort", 1}, {"splice", 2}, {"toLocaleString", 0},
	{"toReversed", 0}, {"toSorted", 1}, {"toSpliced", 2}, {"values", 0}, {"with", 2},
}

// installArrayGuards bounds the Array.prototype methods by the length they walk (maxElements),
// unshift and concat by the length they make, fill by what it fills, and join by its result.
func (g *guards) installArrayGuards() {
	proto := g.object("Array", "prototype")
	values := proto.Get("values")
	for _, m := range walkingMethods {
		name := m.name
		g.wrap(proto, name, m.length, func(call goja.FunctionCall) []goja.Value {
			if _, n := g.lengthOf(call.This); n > maxElements {
				g.refuse(guardArrayLength(name, n))
			}
			return nil
		})
	}
	// toLocaleString calls each element's own, natively: nested arrays recurse in Go per level.
	if orig, ok := goja.AssertFunction(proto.Get("toLocaleString")); ok {
		g.define(proto, "toLocaleString", g.fn("toLocaleString", 0, func(call goja.FunctionCall) goja.Value {
			before := g.enterNative("toLocaleString", 1)
			defer func() { g.nest = before }()
			return must(orig(call.This, call.Arguments...))
		}))
	}
	if v := proto.Get("values"); v != values { // [Symbol.iterator] is the same function as values
		_ = proto.DefineDataPropertySymbol(goja.SymIterator, v, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	}
	g.wrap(proto, "unshift", 1, func(call goja.FunctionCall) []goja.Value {
		if len(call.Arguments) > 0 {
			if _, n := g.lengthOf(call.This); n+int64(len(call.Arguments)) > maxElements {
				g.refuse(guardArrayLength("unshift", n+int64(len(call.Arguments))))
			}
		}
		return nil
	})
	g.wrap(proto, "concat", 1, func(call goja.FunctionCall) []goja.Value {
		n := g.spreadableLength(call.This.ToObject(g.vm))
		for _, a := range call.Arguments {
			n += g.spreadableLength(a)
		}
		if n > maxElements {
			g.refuse(guardArrayLength("concat", n))
		}
		return nil
	})
	g.wrap(proto, "fill", 1, func(call goja.FunctionCall) []goja.Value {
		_, n := g.lengthOf(call.This)
		start, end := call.Argument(1), call.Argument(2)
		k, final := relativeIndex(start, n, 0), relativeIndex(end, n, n)
		if count := final - k; count > maxElements {
			g.refuse(guardArrayLength("fill", count))
		}
		return []goja.Value{call.Argument(0), g.vm.ToValue(k), g.vm.ToValue(final)}
	})
	g.define(proto, "join", g.fn("join", 1, g.join))
	g.installFlatGuards(proto)
}

// installFlatGuards bounds the arrays flat and flatMap build (goja's natives append every
// element of every nested array without a check: Array(65535).fill(Array(65535).fill(0)).flat()
// asked for 4e9). flat counts its result first, walking the nested arrays it would flatten (to
// its depth) without building anything, and refuses past maxElements elements or indices
// walked; flatMap counts as the callback returns, before the native appends what it returned.
func (g *guards) installFlatGuards(proto *goja.Object) {
	g.wrap(proto, "flat", 0, func(call goja.FunctionCall) []goja.Value {
		o, n := g.lengthOf(call.This)
		if n > maxElements {
			g.refuse(guardArrayLength("flat", n))
		}
		depth := 1.0
		if d := call.Argument(0); !goja.IsUndefined(d) {
			if depth = d.ToNumber().ToFloat(); math.IsNaN(depth) || depth < 0 {
				depth = 0
			}
		}
		g.countFlat(o, n, math.Trunc(depth))
		return []goja.Value{g.vm.ToValue(depth)}
	})
	g.wrap(proto, "flatMap", 1, func(call goja.FunctionCall) []goja.Value {
		cb, ok := goja.AssertFunction(call.Argument(0))
		if !ok {
			return nil // the native throws its TypeError
		}
		var total int64
		counted := g.vm.ToValue(func(c goja.FunctionCall) goja.Value {
			v := must(cb(c.This, c.Arguments...))
			add := int64(1)
			if a, ok := v.(*goja.Object); ok && isArray(g.vm, a) {
				add = toLength(a.Get("length"))
			}
			if total += add; total > maxElements {
				g.refuse(guardTooMany("flatMap", "elements", maxElements))
			}
			return v
		})
		return []goja.Value{counted, call.Argument(1)}
	})
}

// countFlat walks what flat(depth) would flatten — o's n indices, and those of each array
// element while depth lasts — and refuses once the walk passes maxElements (the result's
// elements, holes of nested arrays included: the native walks them too).
func (g *guards) countFlat(o *goja.Object, n int64, depth float64) {
	type level struct {
		o     *goja.Object
		i, n  int64
		depth float64
	}
	var walked int64
	stack := []level{{o, 0, n, depth}}
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		if top.i >= top.n {
			stack = stack[:len(stack)-1]
			continue
		}
		if walked++; walked > maxElements {
			g.refuse(guardTooMany("flat", "elements", maxElements))
		}
		i := top.i
		top.i++
		if top.depth < 1 {
			continue
		}
		e, ok := top.o.Get(strconv.FormatInt(i, 10)).(*goja.Object)
		if !ok || e.ExportType() == proxyType || e.ClassName() != "Array" {
			continue
		}
		stack = append(stack, level{e, 0, toLength(e.Get("length")), top.depth - 1})
	}
}

// guardTypedJoin bounds %TypedArray%.prototype.join (its elements are numbers of at most
// typedDigits characters). A typed array is made only through a typed-array global, so the
// prelude's front getter calls this when a script first reads one (ctor), once per runtime.
func (g *guards) guardTypedJoin(ctor goja.Value) {
	if g.typedJoin {
		return
	}
	g.typedJoin = true
	c, ok := ctor.(*goja.Object)
	if !ok || c.Prototype() == nil {
		return
	}
	tproto, ok := c.Prototype().Get("prototype").(*goja.Object)
	if !ok {
		return
	}
	g.wrap(tproto, "join", 1, func(call goja.FunctionCall) []goja.Value {
		o, n := g.lengthOf(call.This)
		var sep goja.Value = g.vm.ToValue(",")
		if s := call.Argument(0); !goja.IsUndefined(s) {
			sep = g.str(s)
		}
		digits := typedDigits[toLength(o.Get("BYTES_PER_ELEMENT"))]
		if total := (n-1)*int64(sep.(goja.String).Length()) + n*digits; n > 1 && total > maxStringUnits {
			g.refuse(guardTooLarge("join", total, "characters", maxStringUnits))
		}
		return []goja.Value{sep}
	})
}

// typedDigits bounds the characters of one typed-array element by its size in bytes
// (Int8 "-128", Int16 "-32768", Float32, Float64 and BigInt64 as the longest number texts).
var typedDigits = map[int64]int64{1: 4, 2: 6, 4: 15, 8: 24}

// installObjectGuards bounds the key lists Object.keys, values, entries, getOwnPropertyNames
// and Reflect.ownKeys make, and the properties Object.assign copies, for the sources whose
// indices are their length (strings, arrays, typed arrays): one property per character or slot
// (Object.keys of a 1e7-character string made 623 MiB natively). Other objects hold their keys
// already.
func (g *guards) installObjectGuards() {
	indexed := func(builtin string, v goja.Value) {
		n := int64(-1)
		switch o := v.(type) {
		case goja.String:
			n = int64(o.Length())
		case *goja.Object:
			switch o.ClassName() {
			case "String", "Array", "Arguments":
				n = toLength(o.Get("length"))
			default:
				if o.Get("BYTES_PER_ELEMENT") != nil && o.Get("byteLength") != nil {
					n = toLength(o.Get("length"))
				}
			}
		}
		if n > maxElements {
			g.refuse(guardTooLarge(builtin, n, "elements", maxElements))
		}
	}
	object := g.object("Object")
	for _, name := range []string{"keys", "values", "entries", "getOwnPropertyNames"} {
		builtin := "Object." + name
		g.wrap(object, name, 1, func(call goja.FunctionCall) []goja.Value {
			indexed(builtin, call.Argument(0))
			return nil
		})
	}
	g.wrap(object, "assign", 2, func(call goja.FunctionCall) []goja.Value {
		for _, src := range call.Arguments[min(1, len(call.Arguments)):] {
			indexed("Object.assign", src)
		}
		return nil
	})
	g.wrap(g.object("Reflect"), "ownKeys", 1, func(call goja.FunctionCall) []goja.Value {
		indexed("Reflect.ownKeys", call.Argument(0))
		return nil
	})
}

// spreadableLength is how many elements concat takes from v: its length when it is an array
// (or marks itself spreadable), else one.
func (g *guards) spreadableLength(v goja.Value) int64 {
	o, ok := v.(*goja.Object)
	if !ok {
		return 1
	}
	spreadable := o.ClassName() == "Array"
	if s := o.GetSymbol(goja.SymIsConcatSpreadable); s != nil && !goja.IsUndefined(s) {
		spreadable = s.ToBoolean()
	}
	if !spreadable {
		return 1
	}
	return toLength(o.Get("length"))
}

// relativeIndex is the spec's relative index of fill/copyWithin: arg (undefined => def) counted
// from the end when negative, clamped to [0, n].
func relativeIndex(arg goja.Value, n, def int64) int64 {
	if goja.IsUndefined(arg) {
		return def
	}
	f := arg.ToFloat()
	switch {
	case math.IsNaN(f):
		return 0
	case f < 0:
		return int64(math.Max(float64(n)+math.Trunc(f), 0))
	}
	return int64(math.Min(math.Trunc(f), float64(n)))
}

// join is Array.prototype.join (ECMAScript 23.1.3.18) with its result bounded by
// maxStringUnits: the separators alone are checked first, then the array's length, then each
// element as it is converted — so an element whose own toString is native (a nested array, a
// RegExp) cannot multiply a large string either. A cyclic reference joins as "" (as goja's and
// the mainstream engines' join).
func (g *guards) join(call goja.FunctionCall) goja.Value {
	vm := g.vm
	o := call.This.ToObject(vm)
	for _, seen := range g.joining {
		if seen == o {
			return vm.ToValue("")
		}
	}
	before := g.enterNative("join", 1) // an element's toString may join a nested array
	g.joining = append(g.joining, o)
	defer func() { g.joining, g.nest = g.joining[:len(g.joining)-1], before }()
	n := toLength(o.Get("length"))
	sep, _ := vm.ToValue(",").(goja.String)
	if s := call.Argument(0); !goja.IsUndefined(s) {
		sep = g.str(s)
	}
	if n == 0 {
		return vm.ToValue("")
	}
	total := (n - 1) * int64(sep.Length())
	if total > maxStringUnits {
		g.refuse(guardTooLarge("join", total, "characters", maxStringUnits))
	}
	if n > maxElements {
		g.refuse(guardArrayLength("join", n))
	}
	var b goja.StringBuilder
	for i := int64(0); i < n; i++ {
		if i > 0 {
			b.WriteString(sep)
		}
		e := o.Get(strconv.FormatInt(i, 10))
		if e == nil || goja.IsUndefined(e) || goja.IsNull(e) {
			continue
		}
		s := g.str(e)
		if total += int64(s.Length()); total > maxStringUnits {
			g.refuse(guardTooLarge("join", total+g.restLength(o, i+1, n), "characters", maxStringUnits))
		}
		b.WriteString(s)
	}
	return b.String()
}

// restLength sums the lengths of the string elements of o from i on, for the refusal's message
// (other elements are not converted again: their toString may be script code).
func (g *guards) restLength(o *goja.Object, i, n int64) int64 {
	var sum int64
	for ; i < n && i < maxElements; i++ {
		if s, ok := o.Get(strconv.FormatInt(i, 10)).(goja.String); ok {
			sum += int64(s.Length())
		}
	}
	return sum
}

// --- strings ---------------------------------------------------------------------------------

// installStringGuards bounds the strings repeat, padStart, padEnd and concat build. Each
// converts its arguments once and hands the converted values to the original.
func (g *guards) installStringGuards() {
	proto := g.object("String", "prototype")
	this := func(name string, call goja.FunctionCall) goja.String {
		if goja.IsUndefined(call.This) || goja.IsNull(call.This) {
			panic(g.vm.NewTypeError("String.prototype." + name + " called on null or undefined"))
		}
		return g.str(call.This)
	}
	wrapString := func(name string, length int, check func(s goja.String, call goja.FunctionCall) []goja.Value) {
		orig, _ := goja.AssertFunction(proto.Get(name))
		g.define(proto, name, g.fn(name, length, func(call goja.FunctionCall) goja.Value {
			s := this(name, call)
			return must(orig(s, check(s, call)...))
		}))
	}
	wrapString("repeat", 1, func(s goja.String, call goja.FunctionCall) []goja.Value {
		count := call.Argument(0).ToNumber()
		if f := count.ToFloat(); f > 0 && !math.IsInf(f, 1) && s.Length() > 0 {
			if n := float64(s.Length()) * math.Trunc(f); n > maxStringUnits {
				g.refuse(guardTooLarge("repeat", int64(math.Min(n, math.MaxInt64)), "characters", maxStringUnits))
			}
		}
		return []goja.Value{count}
	})
	pad := func(name string) func(s goja.String, call goja.FunctionCall) []goja.Value {
		return func(s goja.String, call goja.FunctionCall) []goja.Value {
			maxLength := call.Argument(0).ToNumber()
			args := []goja.Value{maxLength}
			fill := call.Argument(1)
			if !goja.IsUndefined(fill) {
				fill = g.str(fill)
				args = append(args, fill)
			}
			n := toLength(maxLength)
			if n > int64(s.Length()) && n > maxStringUnits && (goja.IsUndefined(fill) || fill.(goja.String).Length() > 0) {
				g.refuse(guardTooLarge(name, n, "characters", maxStringUnits))
			}
			return args
		}
	}
	wrapString("padStart", 1, pad("padStart"))
	wrapString("padEnd", 1, pad("padEnd"))
	wrapString("concat", 1, func(s goja.String, call goja.FunctionCall) []goja.Value {
		args := make([]goja.Value, len(call.Arguments))
		total := int64(s.Length())
		for i, a := range call.Arguments {
			args[i] = g.str(a)
			total += int64(args[i].(goja.String).Length())
		}
		if total > maxStringUnits {
			g.refuse(guardTooLarge("concat", total, "characters", maxStringUnits))
		}
		return args
	})
}

// installPieceGuards bounds the pieces split, replace and replaceAll make and the matches of
// match and matchAll: for a string of maxPieces units or more, matches (the prelude's counter,
// script code the run's stop reaches) counts them first. replace and replaceAll with a string
// replacement also bound their result (each "$" pattern may insert the whole string again).
func (g *guards) installPieceGuards(matches goja.Callable) {
	proto := g.object("String", "prototype")
	vm := g.vm
	count := func(s goja.String, pat goja.Value, all bool, limit int) int64 {
		return must(matches(goja.Undefined(), s, pat, vm.ToValue(all), vm.ToValue(limit))).ToInteger()
	}
	// wrap guards String.prototype[name]: check may refuse or convert the arguments; the native
	// is timed, and a result none says is "nothing" after regexMatchTimeout fails closed.
	wrap := func(name string, check func(s goja.String, call goja.FunctionCall) []goja.Value, none func(v goja.Value, s goja.String) bool) {
		orig, ok := goja.AssertFunction(proto.Get(name))
		if !ok {
			return
		}
		g.define(proto, name, g.fn(name, 2, func(call goja.FunctionCall) goja.Value {
			if goja.IsUndefined(call.This) || goja.IsNull(call.This) {
				panic(vm.NewTypeError("String.prototype." + name + " called on null or undefined"))
			}
			s := g.str(call.This)
			args := call.Arguments
			if check != nil {
				if a := check(s, call); a != nil {
					args = a
				}
			}
			start := time.Now()
			v := must(orig(s, args...))
			if name == "matchAll" {
				g.timeIterator(v) // matchAll matches as its iterator steps
			}
			if time.Since(start) >= regexMatchTimeout && none(v, s) {
				g.refuse(guardRegexTimeout(name, regexMatchTimeout))
			}
			return v
		}))
	}
	unchanged := func(v goja.Value, s goja.String) bool { return v.StrictEquals(s) }
	for _, r := range []struct {
		name string
		all  bool
	}{{"replace", false}, {"replaceAll", true}} {
		name, all := r.name, r.all
		wrap(name, func(s goja.String, call goja.FunctionCall) []goja.Value {
			pat, rep := call.Argument(0), call.Argument(1)
			if _, fn := goja.AssertFunction(rep); fn {
				return nil
			}
			rs := g.str(rep)
			n := int64(s.Length())
			per := int64(rs.Length()) + int64(strings.Count(rs.String(), "$"))*n
			if n >= maxPieces || n+(n+1)*per > maxStringUnits {
				m := count(s, pat, all, int(min(maxPieces, (maxStringUnits+per-1)/max(per, 1)))+1)
				if m > maxPieces {
					g.refuse(guardTooMany(name, "replacements", maxPieces))
				}
				if size := n + m*per; size > maxStringUnits {
					g.refuse(guardTooLarge(name, size, "characters", maxStringUnits))
				}
			}
			return append([]goja.Value{pat, rs}, call.Arguments[min(2, len(call.Arguments)):]...)
		}, unchanged)
	}
	wrap("split", func(s goja.String, call goja.FunctionCall) []goja.Value {
		sep, limit := call.Argument(0), call.Argument(1)
		if goja.IsUndefined(sep) || goja.IsNull(sep) || s.Length() < maxPieces {
			return nil
		}
		cap := int64(math.MaxInt64)
		if !goja.IsUndefined(limit) {
			limit = vm.ToValue(uint32(toInt32(limit.ToFloat())))
			cap = limit.ToInteger()
		}
		n := int64(s.Length())
		if str, ok := sep.(goja.String); !ok || str.Length() > 0 {
			n = count(s, sep, true, maxPieces) + 1
		}
		if n = min(n, cap); n > maxPieces {
			g.refuse(guardTooManyCounted("split", "pieces", n, maxPieces))
		}
		if goja.IsUndefined(limit) {
			return nil
		}
		return []goja.Value{sep, limit}
	}, func(v goja.Value, _ goja.String) bool {
		o, ok := v.(*goja.Object)
		return ok && toLength(o.Get("length")) == 1
	})
	for _, r := range []struct {
		name string
		all  bool
	}{{"match", false}, {"matchAll", true}} {
		name, all := r.name, r.all
		wrap(name, func(s goja.String, call goja.FunctionCall) []goja.Value {
			pat, ok := call.Argument(0).(*goja.Object)
			if !ok || s.Length() < maxPieces || pat.ClassName() != "RegExp" || !(all || pat.Get("global").ToBoolean()) {
				return nil
			}
			if count(s, pat, true, maxPieces) > maxPieces {
				g.refuse(guardTooMany(name, "matches", maxPieces))
			}
			return nil
		}, func(v goja.Value, _ goja.String) bool { return !all && goja.IsNull(v) })
	}
	wrap("search", nil, func(v goja.Value, _ goja.String) bool { return v.ToFloat() == -1 })
}

// --- JSON ------------------------------------------------------------------------------------

// installJSONGuard bounds the nesting of the text JSON.parse reads (goja's parser recurses once
// per level, in Go) and replaces JSON.stringify with the bounded one of stringify.go.
func (g *guards) installJSONGuard() {
	g.define(g.object("JSON"), "stringify", g.fn("stringify", 3, g.stringify))
	g.wrap(g.object("JSON"), "parse", 2, func(call goja.FunctionCall) []goja.Value {
		text := g.str(call.Argument(0))
		if d := jsonDepth(text.String()); d > maxJSONDepth {
			g.refuse(guardDepth("JSON.parse", d))
		}
		return append([]goja.Value{text}, call.Arguments[min(1, len(call.Arguments)):]...)
	})
	// Inside another walk (a toJSON, a reviver), or with a reviver (which may parse again at
	// the bottom of goja's recursive walk of the result), the text's levels count against the
	// run's native recursion budget (enterNative).
	parse, _ := goja.AssertFunction(g.object("JSON").Get("parse"))
	g.define(g.object("JSON"), "parse", g.fn("parse", 2, func(call goja.FunctionCall) goja.Value {
		_, reviver := goja.AssertFunction(call.Argument(1))
		if g.nest == 0 && !reviver {
			return must(parse(call.This, call.Arguments...))
		}
		text := g.str(call.Argument(0))
		d := jsonNesting(text.String())
		if g.nest+int(d) > maxJSONDepth {
			g.refuse(guardDepth("JSON.parse", int64(g.nest)+d))
		}
		before := g.nest
		if reviver {
			g.nest += int(d)
		}
		defer func() { g.nest = before }()
		return must(parse(call.This, append([]goja.Value{text}, call.Arguments[min(1, len(call.Arguments)):]...)...))
	}))
}

// jsonDepth is the deepest nesting of arrays and objects in a JSON text (brackets inside
// strings skipped); a text that is not JSON gets some depth the parser then refuses anyway.
func jsonDepth(s string) int64 {
	if len(s) <= maxJSONDepth || strings.Count(s, "[")+strings.Count(s, "{") <= maxJSONDepth {
		return 0 // fewer brackets than the limit (strings.Count is vectorised: no scan needed)
	}
	return jsonNesting(s)
}

// jsonNesting is jsonDepth without the shortcut: the text's deepest nesting, however shallow.
func jsonNesting(s string) int64 {
	var depth, deepest int64
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[', '{':
			if depth++; depth > deepest {
				deepest = depth
			}
		case ']', '}':
			depth--
		case '"':
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' {
					i++
				}
			}
		}
	}
	return deepest
}

// --- BigInt ----------------------------------------------------------------------------------

// installBigIntGuards bounds the BigInts BigInt() parses and BigInt.asIntN/asUintN make; the
// operators are the rewrite's helpers (mul, pow, shl).
func (g *guards) installBigIntGuards() {
	bi := g.object("BigInt")
	orig, _ := goja.AssertFunction(bi)
	// BigInt is called as a function (new BigInt throws): a plain native stands in for it.
	w := g.fn("BigInt", 1, func(call goja.FunctionCall) goja.Value {
		if s, ok := call.Argument(0).(goja.String); ok {
			if bits := stringBits(s.String()); bits > maxBigIntBits {
				g.refuse(guardTooLarge("BigInt", bits, "bits", maxBigIntBits))
			}
		}
		return must(orig(goja.Undefined(), call.Arguments...))
	}).(*goja.Object)
	proto := bi.Get("prototype").(*goja.Object)
	_ = w.DefineDataProperty("prototype", proto, goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_FALSE)
	_ = proto.DefineDataProperty("constructor", w, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	for _, name := range []string{"asIntN", "asUintN"} {
		name := name
		m, _ := goja.AssertFunction(bi.Get(name))
		g.define(w, name, g.fn(name, 2, func(call goja.FunctionCall) goja.Value {
			bits := call.Argument(0).ToNumber()
			if n := toLength(bits); n > maxBigIntBits {
				g.refuse(guardTooLarge("BigInt."+name, n, "bits", maxBigIntBits))
			}
			return must(m(goja.Undefined(), bits, call.Argument(1)))
		}))
	}
	g.define(g.vm.GlobalObject(), "BigInt", w)
}

// stringBits estimates the bits of the BigInt a string of digits denotes (whitespace, sign and a
// 0x/0o/0b prefix aside), for BigInt(string): parsing is quadratic in the digits.
func stringBits(s string) int64 {
	if len(s) < maxBigIntBits/4 {
		return 0
	}
	s = strings.TrimSpace(s)
	s = strings.TrimLeft(s, "+-")
	perDigit := math.Log2(10)
	if len(s) > 1 && s[0] == '0' {
		switch s[1] {
		case 'x', 'X':
			perDigit, s = 4, s[2:]
		case 'o', 'O':
			perDigit, s = 3, s[2:]
		case 'b', 'B':
			perDigit, s = 1, s[2:]
		}
	}
	s = strings.TrimLeft(s, "0")
	return int64(math.Ceil(float64(len(s)) * perDigit))
}

// bigOf returns v's value when it is a BigInt.
func bigOf(v goja.Value) (*big.Int, bool) {
	if !goja.IsBigInt(v) {
		return nil, false
	}
	b, ok := v.Export().(*big.Int)
	return b, ok
}

// operands applies ToNumeric to both operands, left first, as the operators do; objects go
// through the script's own conversion once (Symbol.toPrimitive, valueOf, toString).
func (g *guards) operands(call goja.FunctionCall) (a, b goja.Value) {
	a, b = call.Argument(0), call.Argument(1)
	if _, ok := a.(*goja.Object); ok {
		a = must(g.numeric(goja.Undefined(), a))
	}
	if _, ok := b.(*goja.Object); ok {
		b = must(g.numeric(goja.Undefined(), b))
	}
	return a, b
}

var errMixBigInt = "Cannot mix BigInt and other types, use explicit conversions"

// mul is `a * b`: numbers as JavaScript multiplies them; BigInts whose product could exceed
// maxBigIntBits are refused.
func (g *guards) mul(call goja.FunctionCall) goja.Value {
	a, b := call.Argument(0), call.Argument(1)
	if goja.IsNumber(a) && goja.IsNumber(b) {
		return g.vm.ToValue(a.ToFloat() * b.ToFloat())
	}
	a, b = g.operands(call)
	x, xb := bigOf(a)
	y, yb := bigOf(b)
	switch {
	case xb && yb:
		if x.Sign() != 0 && y.Sign() != 0 {
			if bits := int64(x.BitLen()) + int64(y.BitLen()); bits > maxBigIntBits {
				g.refuse(guardTooLarge("BigInt multiplication", bits, "bits", maxBigIntBits))
			}
		}
		return g.vm.ToValue(x.Mul(x, y))
	case xb || yb:
		panic(g.vm.NewTypeError(errMixBigInt))
	}
	return g.vm.ToValue(a.ToFloat() * b.ToFloat())
}

// pow is `a ** b`: numbers as Number::exponentiate; a BigInt power whose result would exceed
// maxBigIntBits is refused before it is computed.
func (g *guards) pow(call goja.FunctionCall) goja.Value {
	a, b := call.Argument(0), call.Argument(1)
	if goja.IsNumber(a) && goja.IsNumber(b) {
		return g.vm.ToValue(jsPow(a.ToFloat(), b.ToFloat()))
	}
	a, b = g.operands(call)
	x, xb := bigOf(a)
	y, yb := bigOf(b)
	switch {
	case xb && yb:
		if y.Sign() < 0 {
			panic(g.refusalOf(g.rangeError, "exponent must be positive"))
		}
		if bits := powBits(x, y); bits > maxBigIntBits {
			g.refuse(guardTooLarge("BigInt exponentiation", bits, "bits", maxBigIntBits))
		}
		return g.vm.ToValue(x.Exp(x, y, nil))
	case xb || yb:
		panic(g.vm.NewTypeError(errMixBigInt))
	}
	return g.vm.ToValue(jsPow(a.ToFloat(), b.ToFloat()))
}

// jsPow is Number::exponentiate: Go's Pow but for a base of ±1 with an infinite exponent and
// 1 ** NaN, which are NaN in JavaScript.
func jsPow(x, y float64) float64 {
	if (math.Abs(x) == 1 && math.IsInf(y, 0)) || (x == 1 && math.IsNaN(y)) {
		return math.NaN()
	}
	return math.Pow(x, y)
}

// refusalOf is a plain error of ctor (not a quota error): the operator's own.
func (g *guards) refusalOf(ctor *goja.Object, msg string) *goja.Object {
	e, err := g.vm.New(ctor, g.vm.ToValue(msg))
	if err != nil {
		panic(err)
	}
	return e
}

// powBits is the bit length of x**y (y >= 0): floor(y*log2|x|) + 1, saturating.
func powBits(x, y *big.Int) int64 {
	if y.Sign() == 0 || x.CmpAbs(big.NewInt(1)) <= 0 {
		return 1
	}
	if y.BitLen() > 62 {
		return math.MaxInt64
	}
	bits := x.BitLen()
	top := new(big.Int).Abs(x)
	shift := 0
	if bits > 53 {
		shift = bits - 53
		top.Rsh(top, uint(shift))
	}
	f, _ := new(big.Float).SetInt(top).Float64()
	est := float64(y.Int64()) * (float64(shift) + math.Log2(f))
	if est >= math.MaxInt64/2 {
		return math.MaxInt64
	}
	return int64(math.Floor(est)) + 1
}

// shl is `a << b`: numbers as ToInt32(a) << (ToUint32(b) & 31); a BigInt shifted left past
// maxBigIntBits is refused (a negative count shifts right).
func (g *guards) shl(call goja.FunctionCall) goja.Value {
	a, b := call.Argument(0), call.Argument(1)
	if !(goja.IsNumber(a) && goja.IsNumber(b)) {
		a, b = g.operands(call)
		x, xb := bigOf(a)
		y, yb := bigOf(b)
		switch {
		case xb && yb:
			if y.Sign() < 0 {
				n := new(big.Int).Neg(y)
				if n.BitLen() > 32 || n.Int64() > int64(x.BitLen()) {
					n.SetInt64(int64(x.BitLen()) + 1)
				}
				return g.vm.ToValue(x.Rsh(x, uint(n.Int64())))
			}
			if x.Sign() != 0 {
				if y.BitLen() > 40 || int64(x.BitLen())+y.Int64() > maxBigIntBits {
					bits := int64(math.MaxInt64)
					if y.BitLen() <= 62 {
						bits = int64(x.BitLen()) + y.Int64()
					}
					g.refuse(guardTooLarge("BigInt left shift", bits, "bits", maxBigIntBits))
				}
			}
			return g.vm.ToValue(x.Lsh(x, uint(y.Int64())))
		case xb || yb:
			panic(g.vm.NewTypeError(errMixBigInt))
		}
	}
	return g.vm.ToValue(int64(toInt32(a.ToFloat()) << (uint32(toInt32(b.ToFloat())) & 31)))
}

// toInt32 is ECMAScript's ToInt32 of a number.
func toInt32(f float64) int32 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return int32(uint32(int64(math.Mod(math.Trunc(f), 1<<32))))
}

// --- regular expressions ---------------------------------------------------------------------

// installRegExpGuards makes a backtracking match that ran out regexMatchTimeout throw: goja
// reads a timed-out regexp2 match as "no match", so the entry points scripts use are timed, and
// one that found nothing after the timeout fails closed: RegExp.prototype.test here, the String
// methods that take a pattern in installPieceGuards (their RegExp delegates run inside them),
// matchAll's iterator when the first one is made, and direct exec calls through the rewrite's
// helper (execCall). RegExp.prototype.exec itself is not replaced — that would turn off goja's
// fast paths for every regular expression (16x slower in a measurement) — nor are the
// RegExp.prototype[Symbol.*] methods (their materialisation is most of this guard's cost in every
// runtime); calling those directly (call/apply, a computed key) is not timed.
func (g *guards) installRegExpGuards() {
	proto := g.object("RegExp", "prototype")
	g.exec = proto.Get("exec")
	g.wrapTimed(proto, "test", "test", 1, func(v goja.Value, _ goja.FunctionCall) bool { return !v.ToBoolean() })
}

// timeIterator times the next of the prototype of matchAll's iterator it, once per runtime.
func (g *guards) timeIterator(it goja.Value) {
	o, ok := it.(*goja.Object)
	if !ok || g.iteratorTimed || o.Prototype() == nil {
		return
	}
	g.iteratorTimed = true
	g.wrapTimed(o.Prototype(), "next", "matchAll", 0, func(v goja.Value, _ goja.FunctionCall) bool {
		r, ok := v.(*goja.Object)
		return ok && r.Get("done").ToBoolean()
	})
}

// wrapTimed replaces o[name] with its timed form: a call that answered "nothing" (none) after
// running regexMatchTimeout or longer throws instead.
func (g *guards) wrapTimed(o *goja.Object, name, op string, length int, none func(goja.Value, goja.FunctionCall) bool) {
	orig, ok := goja.AssertFunction(o.Get(name))
	if !ok {
		return
	}
	g.define(o, name, g.fn(name, length, func(call goja.FunctionCall) goja.Value {
		start := time.Now()
		v := must(orig(call.This, call.Arguments...))
		if time.Since(start) >= regexMatchTimeout && none(v, call) {
			g.refuse(guardRegexTimeout(op, regexMatchTimeout))
		}
		return v
	}))
}

// execCall is the rewrite's `o.exec(...args)`: the method is looked up and called as the call
// would; when it is RegExp.prototype.exec the call is timed.
func (g *guards) execCall(call goja.FunctionCall) goja.Value {
	recv := call.Argument(0)
	if goja.IsUndefined(recv) || goja.IsNull(recv) {
		panic(g.vm.NewTypeError("Cannot read property 'exec' of " + recv.String()))
	}
	f := recv.ToObject(g.vm).Get("exec")
	fn, ok := goja.AssertFunction(f)
	if !ok {
		panic(g.vm.NewTypeError("exec is not a function"))
	}
	args := call.Arguments[1:]
	if f != g.exec {
		return must(fn(recv, args...))
	}
	start := time.Now()
	v := must(fn(recv, args...))
	if goja.IsNull(v) && time.Since(start) >= regexMatchTimeout {
		g.refuse(guardRegexTimeout("exec", regexMatchTimeout))
	}
	return v
}

// --- dynamic code ----------------------------------------------------------------------------

// installDynamicCode routes the code eval and the Function constructors compile through the
// guard rewrite, as prepared programs are. eval becomes an indirect eval (the global scope):
// goja recognises a direct eval only by its own eval function. The constructors of async and
// generator functions are reached only through such a function's prototype chain, so they are
// covered when the first program that can make one runs (cover), not in every runtime.
func (g *guards) installDynamicCode() {
	vm := g.vm
	g.define(vm.GlobalObject(), "eval", g.fn("eval", 1, func(call goja.FunctionCall) goja.Value {
		src, ok := call.Argument(0).(goja.String)
		if !ok {
			return call.Argument(0)
		}
		return must(vm.RunProgram(g.compileDynamic("eval", "<eval>", src.String(), false)))
	}))
	g.dynamicConstructor("Function", "function", g.object("Function", "prototype"))
}

// dynamicConstructor replaces proto.constructor (Function, AsyncFunction, GeneratorFunction)
// with one compiling `(<prefix> anonymous(<params>\n) {\n<body>\n})` through compileDynamic.
func (g *guards) dynamicConstructor(name, prefix string, proto *goja.Object) {
	vm := g.vm
	w := vm.ToValue(func(call goja.ConstructorCall) *goja.Object {
		var params []string
		body := ""
		if n := len(call.Arguments); n > 0 {
			for _, a := range call.Arguments[:n-1] {
				params = append(params, a.String())
			}
			body = call.Arguments[n-1].String()
		}
		src := "(" + prefix + " anonymous(" + strings.Join(params, ",") + "\n) {\n" + body + "\n})"
		return must(vm.RunProgram(g.compileDynamic(name, "anonymous", src, true))).(*goja.Object)
	}).(*goja.Object)
	_ = w.DefineDataProperty("name", vm.ToValue(name), goja.FLAG_FALSE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	_ = w.DefineDataProperty("length", vm.ToValue(1), goja.FLAG_FALSE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	_ = w.DefineDataProperty("prototype", proto, goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_FALSE)
	_ = proto.DefineDataProperty("constructor", w, goja.FLAG_FALSE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	if name == "Function" {
		g.define(vm.GlobalObject(), "Function", w)
	}
}

// cover guards the AsyncFunction constructor (through the prototype of fn, a prepared program's
// async wrapper) and, when the program defines generator functions, the GeneratorFunction
// constructor; each once per runtime, before the program's code runs.
func (g *guards) cover(fn goja.Value, generators bool) {
	if !g.asyncCovered {
		if o, ok := fn.(*goja.Object); ok && o.Prototype() != nil {
			g.asyncCovered = true
			g.dynamicConstructor("AsyncFunction", "async function", o.Prototype())
		}
	}
	if generators {
		g.coverGenerators()
	}
}

var generatorProgram = goja.MustCompile("<prelude>", "(function* () {})", true)

func (g *guards) coverGenerators() {
	if g.generatorsCovered {
		return
	}
	g.generatorsCovered = true
	if fn, ok := must(g.vm.RunProgram(generatorProgram)).(*goja.Object); ok && fn.Prototype() != nil {
		g.dynamicConstructor("GeneratorFunction", "function*", fn.Prototype())
	}
}

// dynamicCache holds compiled dynamic code by source (a loop of `new Function(src)` compiles
// once); programs are immutable and shared by runtimes.
var dynamicCache = newLRU(prepCacheEntries)

// compileDynamic parses, checks and rewrites dynamic code; fn requires the source to be one
// function expression (the Function constructors' shape). Failures throw a SyntaxError; a source
// over the scan's limits (checkSource) the guard's RangeError of builtin.
func (g *guards) compileDynamic(builtin, name, src string, fn bool) *goja.Program {
	if !g.dynamicGlobal {
		// dynamic code runs in the global scope, where __cs is this frozen global
		_ = g.vm.GlobalObject().DefineDataProperty(csName, g.helpers, goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_FALSE)
		g.dynamicGlobal = true
	}
	key := sha256.Sum256([]byte(name + "\x00" + src))
	p, ok := dynamicCache.get(key)
	if !ok {
		p = prepareDynamic(name, src, fn)
		dynamicCache.put(key, p)
	}
	if le, ok := p.err.(*sourceLimitError); ok {
		panic(g.refusal(builtin + ": " + le.msg))
	}
	if p.err != nil {
		panic(g.refusalOf(g.syntaxError, p.err.Error()))
	}
	if p.generators {
		g.coverGenerators()
	}
	return p.program
}

// prepareDynamic is compileDynamic's preparation, cached.
func prepareDynamic(name, src string, fn bool) *prepared {
	if e := checkSource(src); e != nil { // before goja's parser recurses through it
		return &prepared{err: e}
	}
	prg, err := parser.ParseFile(nil, name, src, 0, parser.WithDisableSourceMaps)
	if err != nil {
		return &prepared{err: err}
	}
	if fn {
		if _, exact := wrapperFunction(prg); !exact {
			return &prepared{err: errString("the function's parameters or body end it early")}
		}
	}
	var fail error
	inspectValue(reflect.ValueOf(prg), false, func(n ast.Node, _ bool) {
		switch n := n.(type) {
		case *ast.Identifier:
			if n.Name == csName && fail == nil {
				fail = errString(reservedName(csName))
			}
		case *ast.WithStatement:
			if fail == nil {
				fail = errString(msgWithStatement)
			}
		}
	})
	if fail != nil {
		return &prepared{err: fail}
	}
	generators := guardRewrite(prg)
	program, err := goja.CompileAST(prg, false)
	if err != nil {
		return &prepared{err: err}
	}
	return &prepared{program: program, generators: generators}
}

type errString string

func (e errString) Error() string { return string(e) }
