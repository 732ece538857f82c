package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"

	"github.com/dop251/goja"
)

// ErrREPLClosed is Run's error once the REPL was closed (AS-03: the agent invocation ended).
var ErrREPLClosed = errors.New("sandbox: the REPL is closed")

// ScriptCall is one archmax_eval or archmax_run call (spec 03 §4.1).
type ScriptCall struct {
	// File is "" for archmax_eval (positions then name "<eval>") and the workspace-relative path
	// for archmax_run, e.g. "skills/orders/scripts/check.js".
	File string
	// Source is the code: the model's `code` argument, or the file as read.
	Source []byte
	// Args, when non-nil (archmax_run), becomes the global `args` as a deep JSON copy (AS-10,
	// AS-11; the host has already merged args.variables). archmax_eval passes nil and injects no
	// args (AS-12): an `args` an earlier run left stays visible.
	Args map[string]any
	// Tools is the calling state's surface for scripts, in surface order (AS-30, BR-01). It is
	// the listing of the global `tools` for this call only (BR-02, BR-05). Tools marked Control,
	// and the names AS-30/AS-31 exclude, never appear.
	Tools []Tool
	// Bridged are the other tools on the script bridge — the agent's tools beyond this state's
	// surface (BR-02, the reference's agent-script rule): `tools` resolves them (a function)
	// without listing them (Object.keys, `in`, for…in), and a call reaches the host, which
	// governs it as any call (a refusal, tool-blocked). Controls and the AS-30/AS-31 names
	// never resolve.
	Bridged []Tool
	// Quotas bound this call alone (CS-61); MaxResultChars also cuts the result text (AS-05).
	Quotas Quotas
	// NextCallID mints the "ptc:<n>" id of each host call (BR-30); nil => a counter of the REPL.
	NextCallID func() string
}

// ScriptResult is what an agent-script call answers (AS-05).
type ScriptResult struct {
	// Text is the tool answer: the captured console output, one line per line written, then the
	// completion value (strings verbatim, undefined => nothing, other values as JSON); on failure
	// the error ("Error: <message>", then "    at <file>:<line>:<col>" when a script position is
	// known, then a reset note when the REPL lost its state). It is cut to MaxResultChars UTF-16
	// units, followed by truncationMarker's text.
	Text string
	// Error marks an uncaught error, a refused source, a quota, a timeout or an abort: the host
	// answers Text as a tool error; it never ends the turn.
	Error bool
	// Err is the failure behind Error: *ScriptError, *SyntaxError, *ImportError, *TimeoutError,
	// *QuotaError or *AbortError; nil when Error is false.
	Err error
	// Reset reports that the REPL lost its state with this call (SB-04): a timeout, an abort, or
	// a quota that stopped the script (maxPtcCalls, a host result over maxResultChars, the heap
	// watchdog, runaway recursion) ended the runtime, so the next call starts on a fresh one; or
	// this call itself had to start afresh because an earlier script pinned a global the REPL
	// installs per call (tools, console) as unconfigurable.
	Reset bool
}

// REPL is one agent-script context (spec 03 AS-03): a goja runtime that persists across the
// archmax_eval and archmax_run calls of one scope. The host keeps one per session per agent
// invocation (namespace "<scope>:agent") and closes it when the invocation ends. It never shares
// a runtime with a code state (CS-60).
//
// What persists between calls: every global property, and every top-level declaration of a
// call's source (var, let, const, function, class, destructured names), exported as a live
// accessor on the global object; see repl_prepare.go. Limits: a later declaration of the same
// name makes a new binding, which functions defined by earlier calls do not see (they keep
// reading the binding they closed over, whereas a plain assignment updates the shared one);
// function declarations inside blocks and the names eval, arguments and sloppy-only reserved
// words stay local to their call; redeclaring a name is allowed (no "already declared" error
// across calls). A call that a timeout, quota or abort interrupts ends the runtime (SB-04): the
// next call starts on a fresh one, and the earlier state is lost (ScriptResult.Reset). An
// uncaught error, a syntax error or a refused import keeps it.
//
// Host calls a call leaves pending when it returns are cancelled (SB-05); a promise of such a
// call kept in a global never settles, and awaiting it later fails at once with the "can never
// settle" error. Memory is bounded per REPL: the heap watchdog measures the growth since the
// REPL's runtime was created against twice memoryLimitBytes, during every call, so state kept
// across calls counts (exact while the process serves one session, as a Lambda invocation does).
//
// Calls are serialised; Run and Close may be called from any goroutine.
type REPL struct {
	run sync.Mutex // serialises Run

	mu     sync.Mutex // guards the fields below
	closed bool
	active bool                    // a Run is evaluating: rt belongs to it
	cancel context.CancelCauseFunc // the active Run's
	rt     *replRuntime            // nil before the first call and after a reset

	seq int // default call ids (under run)
}

// NewREPL returns an empty REPL; its runtime is created by the first call.
func NewREPL() *REPL { return &REPL{} }

// Close ends the REPL (AS-03, AS-51): a call in progress is stopped as an abort (its host calls
// fail with "Tool '<name>' failed: the turn was aborted"), later calls return ErrREPLClosed,
// and the runtime is dropped once no call uses it. Close is idempotent.
func (r *REPL) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.closed = true
	if r.active {
		r.cancel(ErrREPLClosed)
		return
	}
	r.rt = nil
}

// Run evaluates one call (AS-01, AS-05): the source is prepared as an agent script (top-level
// await, CS-20/CS-21 imports, no defineCodeState), evaluated in the REPL's runtime under the
// call's quotas (CS-61; timeout, maxPtcCalls and memory per call), and rendered. Script
// failures are results with Error set; the error is non-nil only when the REPL cannot run the
// call at all: ErrREPLClosed, a nil call or host, Args that are not JSON values, or a runtime
// that cannot be started. A cancelled ctx stops the script at once (CS-62, AS-50): host calls in
// flight see the context cause "Tool '<name>' failed: the turn was aborted", later ones are
// refused with it before reaching the host, and the result is an *AbortError. The completion
// value is awaited when it is a thenable (so `tools.x()` without await answers the tool's text).
func (r *REPL) Run(ctx context.Context, call *ScriptCall, host Host) (ScriptResult, error) {
	if call == nil || host == nil {
		return ScriptResult{}, errors.New("sandbox: REPL.Run needs a call and a host")
	}
	var args []byte
	if call.Args != nil {
		var err error
		if args, err = json.Marshal(call.Args); err != nil {
			return ScriptResult{}, fmt.Errorf("sandbox: args are not JSON values: %w", err)
		}
	}
	r.run.Lock()
	defer r.run.Unlock()
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return ScriptResult{}, ErrREPLClosed
	}
	callCtx, cancel := context.WithCancelCause(ctx)
	r.active, r.cancel = true, cancel
	rt := r.rt
	r.mu.Unlock()

	res, keep, err := r.evaluate(callCtx, rt, call, args, host)

	r.mu.Lock()
	r.active, r.cancel = false, nil
	r.rt = nil
	if keep && !r.closed {
		r.rt = res.rt
	}
	r.mu.Unlock()
	cancel(nil)
	return res.ScriptResult, err
}

type evaluation struct {
	ScriptResult
	rt *replRuntime // the runtime the call ran on
}

// evaluate runs one call on rt (nil: a fresh runtime) and reports whether the runtime may serve
// the next call.
func (r *REPL) evaluate(ctx context.Context, rt *replRuntime, call *ScriptCall, args []byte, host Host) (evaluation, bool, error) {
	file := call.File
	if file == "" {
		file = evalFile
	}
	limits := resolveQuotas(call.Quotas)
	prep := prepareKindCached(kindPTC, file, call.Source)
	if prep.err != nil {
		return evaluation{ScriptResult: failure(nil, prep.err, false, limits.maxResultChars), rt: rt}, true, nil
	}
	nextID := call.NextCallID
	if nextID == nil {
		nextID = func() string { r.seq++; return "ptc:" + strconv.Itoa(r.seq) }
	}
	var logs []string
	rn := &runner{
		run: &CodeStateRun{File: file, Source: call.Source, Quotas: call.Quotas, NextCallID: nextID,
			OnLog: func(line string) { logs = append(logs, line) }},
		host: host, prep: prep, file: file, limits: limits,
	}
	reset := false
	if rt == nil || rt.begin(rn, call.Tools, call.Bridged) != nil {
		// No runtime yet, or a script made the globals a call installs unconfigurable: start afresh.
		fresh, err := newREPLRuntime()
		if err == nil {
			err = fresh.begin(rn, call.Tools, call.Bridged)
		}
		if err != nil {
			return evaluation{rt: rt}, false, fmt.Errorf("sandbox: cannot start a REPL runtime: %w", err)
		}
		reset = rt != nil
		rt = fresh
	}
	var text string
	err := rn.bounded(ctx, rt.vm, func() error { return rt.evaluate(rn, args, &text) })
	rt.cur = nil
	// SB-04: a runtime the call's timeout, quota or abort stopped is never reused; one a stack
	// overflow unwound goes as well.
	discard := rn.stopped || rn.interrupted || rn.overflowed
	reset = reset || discard
	ev := evaluation{rt: rt}
	if err != nil {
		ev.ScriptResult = failure(logs, err, reset, limits.maxResultChars)
	} else {
		ev.ScriptResult = ScriptResult{Text: truncateResult(joinOutput(logs, text), limits.maxResultChars), Reset: reset}
	}
	return ev, !discard, nil
}

// failure renders a failed call (AS-05): the console output, "Error: <message>", the script
// position when known, and the reset note.
func failure(logs []string, err error, reset bool, maxChars int) ScriptResult {
	msg := err.Error()
	where := ""
	var se *ScriptError
	var ie *ImportError
	var qe *QuotaError
	switch {
	case errors.As(err, &qe) && qe.File != "":
		where = "    at " + qe.File + ":" + strconv.Itoa(qe.Line) + ":" + strconv.Itoa(qe.Column)
	case errors.As(err, &se):
		msg = strings.TrimPrefix(se.Message, errorPrefix) // "Error: boom", not "Error: Error: boom"
		if se.File != "" {
			where = "    at " + se.File + ":" + strconv.Itoa(se.Line) + ":" + strconv.Itoa(se.Column)
		}
	case errors.As(err, &ie):
		file := ie.File
		if file == evalFile {
			file = "" // CS-21: " in <file>" only when there is a file
		}
		msg = importRefusal(ie.Specifier, file)
		where = "    at " + ie.File + ":" + strconv.Itoa(ie.Line) + ":" + strconv.Itoa(ie.Column)
	}
	lines := append(append([]string(nil), logs...), errorPrefix+msg)
	if where != "" {
		lines = append(lines, where)
	}
	if reset {
		lines = append(lines, replResetNote)
	}
	return ScriptResult{Text: truncateResult(strings.Join(lines, "\n"), maxChars), Error: true, Err: err, Reset: reset}
}

// joinOutput puts the console lines first, then the rendered value when there is one (AS-05).
func joinOutput(logs []string, value string) string {
	if value == "" {
		return strings.Join(logs, "\n")
	}
	if len(logs) == 0 {
		return value
	}
	return strings.Join(logs, "\n") + "\n" + value
}

// truncateResult cuts text to max UTF-16 units (never inside a surrogate pair) and appends
// truncationMarker (AS-05).
func truncateResult(text string, limit int) string {
	head, total, units := cutUTF16(text, limit)
	if units == total {
		return text
	}
	return head + truncationMarker(total-units, limit)
}

// truncateUTF16 cuts text to limit UTF-16 units (never inside a surrogate pair), marking a cut
// with failureTruncated.
func truncateUTF16(text string, limit int) string {
	head, total, units := cutUTF16(text, limit)
	if units == total {
		return text
	}
	return head + failureTruncated(total-units)
}

// cutUTF16 returns the longest prefix of text within limit UTF-16 units, text's length and
// the prefix's, in units.
func cutUTF16(text string, limit int) (head string, total, units int) {
	if len(text) <= limit { // UTF-16 units never outnumber UTF-8 bytes
		n := utf16Len(text)
		return text, n, n
	}
	total = utf16Len(text)
	if total <= limit {
		return text, total, total
	}
	cut := len(text)
	for i, c := range text {
		n := max(utf16.RuneLen(c), 1)
		if units+n > limit {
			cut = i
			break
		}
		units += n
	}
	return text[:cut], total, units
}

// ptcExcluded are the tools an agent script's bridge never carries, whatever the host passes
// (AS-30: the controls, the read-only variable and history tools, the script tools themselves
// and a bare eval; AS-31: task).
var ptcExcluded = map[string]bool{
	"archmax_advance": true, "archmax_raise": true, "archmax_wait": true, "archmax_reset": true,
	"archmax_get_variables": true, "archmax_set_variables": true, "archmax_get_history": true,
	"archmax_eval": true, "archmax_run": true, "eval": true, "task": true,
}

// replRuntime is the goja runtime of a REPL and the objects it keeps for its life. It is used
// by one Run at a time, on that Run's goroutine.
type replRuntime struct {
	vm       *goja.Runtime
	guards   *guards // quotas.go: the guard helpers and the quota errors of this runtime
	heapBase uint64  // the heap before the runtime existed: the REPL's memory bound counts growth from it
	cur      *runner // the call in progress
	tools    *toolsView
	toolsObj *goja.Object
	console  *goja.Object
	harness  *goja.Object // what a namespace or default harness import binds (CS-20): no defineCodeState
	export   goja.Value   // __cs.x: installs the accessor of a top-level binding (repl_prepare.go)

	errorCtor, promiseCtor                  *goja.Object
	resolveFn, stringify, toString, parseFn goja.Callable
}

// newREPLRuntime creates a runtime with the prelude of the ptc context (AS-01: SANDBOX_CONTRACT
// {context: "ptc", version: 3}, no defineCodeState).
func newREPLRuntime() (*replRuntime, error) {
	base := heapObjectBytes()
	vm := goja.New()
	vm.SetMaxCallStackSize(maxCallStackSize)
	guards, err := installPrelude(vm, contextPTC)
	if err != nil {
		return nil, err
	}
	rt := &replRuntime{vm: vm, guards: guards, heapBase: base}
	g := vm.GlobalObject()
	b := lookupBuiltins(vm)
	rt.errorCtor, rt.promiseCtor, rt.resolveFn, rt.stringify, rt.parseFn, rt.toString = b.errorCtor, b.promiseCtor, b.resolveFn, b.stringify, b.parseFn, b.toString
	freeze := b.freeze

	rt.tools = &toolsView{rt: rt, names: make(map[string]string), listed: make(map[string]bool), fns: make(map[string]goja.Value)}
	rt.toolsObj = vm.NewDynamicObject(rt.tools)
	rt.console = vm.NewObject()
	log := vm.ToValue(func(call goja.FunctionCall) goja.Value {
		if rt.cur == nil {
			return goja.Undefined()
		}
		return rt.cur.consoleLog(call)
	})
	for _, name := range []string{"log", "info", "warn", "error"} {
		_ = rt.console.Set(name, log)
	}
	rt.harness = vm.NewObject()
	_ = rt.harness.Set("SANDBOX_CONTRACT", g.Get("SANDBOX_CONTRACT"))
	if _, err := freeze(goja.Undefined(), rt.harness); err != nil {
		return nil, err
	}
	rt.export = vm.ToValue(func(call goja.FunctionCall) goja.Value {
		// A non-configurable global (undefined, NaN, …) keeps its value; the binding stays local.
		_ = g.DefineAccessorProperty(call.Argument(0).String(), call.Argument(1), call.Argument(2), goja.FLAG_TRUE, goja.FLAG_TRUE)
		return goja.Undefined()
	})
	return rt, nil
}

// begin makes r the runtime's current call and (re)installs the per-call globals: `tools`, the
// one view of the REPL (BR-05) scoped to this call's surface, and `console`, capturing into r.
func (rt *replRuntime) begin(r *runner, tools, bridged []Tool) error {
	r.heapBase, r.guards = rt.heapBase, rt.guards
	r.errorCtor, r.promiseCtor = rt.errorCtor, rt.promiseCtor
	r.resolveFn, r.stringify, r.toString = rt.resolveFn, rt.stringify, rt.toString
	g := rt.vm.GlobalObject()
	if err := g.DefineDataProperty("tools", rt.toolsObj, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE); err != nil {
		return err
	}
	if err := g.DefineDataProperty("console", rt.console, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE); err != nil {
		return err
	}
	rt.tools.scope(tools, bridged)
	rt.cur = r
	return nil
}

// evaluate is the body of one call: `args` (archmax_run), the program, its completion value
// awaited (a thenable completion value is adopted) and rendered into *text.
func (rt *replRuntime) evaluate(r *runner, args []byte, text *string) error {
	vm := rt.vm
	if args != nil {
		if err := r.account(len(args)); err != nil {
			return err
		}
		v, err := rt.parseFn(goja.Undefined(), vm.ToValue(string(args))) // AS-11: a copy
		if err != nil {
			return r.jsError(err)
		}
		if err := vm.GlobalObject().DefineDataProperty("args", v, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE); err != nil {
			return r.jsError(err)
		}
	}
	wrapper, err := vm.RunProgram(r.prep.program)
	if err != nil {
		return r.jsError(err)
	}
	rt.guards.cover(wrapper, r.prep.generators)
	call, _ := goja.AssertFunction(wrapper)
	cs := rt.guards.newCS(map[string]goja.Value{"h": rt.harness, "x": rt.export, "v": nil})
	done, err := call(vm.GlobalObject(), cs)
	if err != nil {
		return r.jsError(err)
	}
	if err := r.await(done); err != nil || r.ctx.Err() != nil {
		return err
	}
	p, _ := done.Export().(*goja.Promise)
	if p == nil {
		return nil
	}
	*text, err = r.render(p.Result())
	return err
}

// render is AS-05's rendering of a completion value: undefined => "", strings verbatim, other
// values as JSON text, String(value) when JSON has none (functions, symbols, cycles, BigInt).
// A value JSON.stringify's guard refuses (too large, too deep) fails the call with that refusal.
func (r *runner) render(v goja.Value) (string, error) {
	if v == nil || goja.IsUndefined(v) {
		return "", nil
	}
	if goja.IsString(v) {
		return v.String(), nil
	}
	var text string
	var err error
	// toJSON, toString and getters are the script's own code, run inside the call: its own
	// timeout bounds them (a large value may take longer than describeBudget to write)
	r.guardedWithin(0, func() {
		s, e := r.stringify(goja.Undefined(), v)
		if e == nil && !goja.IsUndefined(s) {
			text = s.String()
			return
		}
		var ex *goja.Exception
		if e != nil && !errors.As(e, &ex) {
			err = r.jsError(e) // an interrupt or a stack overflow, not a throw
			return
		}
		if ex != nil {
			if _, quota := r.guards.quotaMessage(ex.Value()); quota {
				err = r.failure(ex.Value(), ex)
				return
			}
		}
		if s, e = r.toString(goja.Undefined(), v); e != nil {
			err = r.jsError(e)
			return
		}
		text = s.String()
	})
	return text, err
}

// toolsView is the REPL's one `tools` object (BR-05): it lists the current call's surface under
// camelCase keys (BR-03, BR-04), resolves each tool's original name too (non-enumerable), and
// answers undefined for any other name (BR-02 as the host scopes it). Assignments have no
// effect (a TypeError in strict code). A tool function fetched in an earlier call stays
// callable; its calls go to the host, which governs them against the current state.
type toolsView struct {
	rt    *replRuntime
	keys  []string          // enumerable camelCase keys, in surface order
	names map[string]string // camelCase key or original name -> tool name; the first tool wins
	// listed marks the names of the surface: what Object.keys, `in` and for…in see (BR-02)
	listed map[string]bool
	fns    map[string]goja.Value // one function per tool name for the runtime's life
}

// scope sets the surface of the current call (listed and resolved) and the rest of the bridge
// (resolved only), without controls and AS-30/AS-31 exclusions.
func (v *toolsView) scope(tools, bridged []Tool) {
	v.keys = v.keys[:0]
	clear(v.names)
	clear(v.listed)
	add := func(list []Tool, listed bool) {
		for _, t := range list {
			if t.Control || ptcExcluded[t.Name] {
				continue
			}
			if key := camelCase(t.Name); v.names[key] == "" {
				v.names[key] = t.Name
				if listed {
					v.keys = append(v.keys, key)
					v.listed[key] = true
				}
			}
			if v.names[t.Name] == "" {
				v.names[t.Name] = t.Name
				v.listed[t.Name] = listed
			}
		}
	}
	add(tools, true) // the surface first: its names win a camelCase collision (BR-03)
	add(bridged, false)
}

func (v *toolsView) Get(key string) goja.Value {
	name, ok := v.names[key]
	if !ok {
		return nil
	}
	fn, ok := v.fns[name]
	if !ok {
		fn = v.rt.vm.ToValue(func(call goja.FunctionCall) goja.Value {
			if v.rt.cur == nil {
				return goja.Undefined()
			}
			return v.rt.cur.hostCall(Tool{Name: name}, call.Argument(0))
		})
		v.fns[name] = fn
	}
	return fn
}

func (v *toolsView) Set(string, goja.Value) bool { return false }

func (v *toolsView) Has(key string) bool { return v.listed[key] }

func (v *toolsView) Delete(key string) bool { return !v.Has(key) }

func (v *toolsView) Keys() []string { return append([]string(nil), v.keys...) }
