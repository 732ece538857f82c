// Package sandbox runs code-state scripts in goja (spec 03 §1, §5.1–§5.2, §8; DESIGN §8;
// research/goja.md). A run prepares the source (module syntax rewritten, foreign imports
// refused, cached by content), evaluates it in a fresh goja.Runtime with the sandbox globals,
// calls the registered state function with the input object, and drives every promise to
// completion on its own goroutine while host calls run on theirs. It reports how the run
// ended; deciding the state's outcome (advanced, raised, completed, failed) is the session
// engine's job.
package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/dop251/goja"
)

// Tool is one entry of a state's tool surface (spec 03 BR-01), in surface order. Control marks
// the controls of §1.6 (archmax_advance, archmax_raise, archmax_get_variables,
// archmax_set_variables, archmax_get_history), serviced synchronously (CS-39).
type Tool struct {
	Name    string
	Control bool
}

// Host services a script's host calls (spec 03 §5.2). args is the JSON text of the call's one
// argument object ("{}" when the script passed none, BR-10); callID is the call's "ptc:<n>" id
// (BR-30). A returned error rejects the script's promise with an Error whose message is the
// error's text (governance refusals, BR-13 classes 1 and 3); a string result resolves it
// (operational failures are results beginning "Error: ", class 2).
type Host interface {
	// Call runs a non-control tool. It is called on its own goroutine, so Promise.all runs calls
	// concurrently (BR-11). ctx ends when the run ends; its context.Cause says why: the text
	// "Tool '<name>' failed: the turn was aborted" when the caller's context was cancelled
	// (CS-62), a *TimeoutError or *QuotaError when the run failed so, and otherwise a note that
	// the script finished first (SB-05). A result arriving after the run ended is dropped.
	Call(ctx context.Context, tool, callID string, args json.RawMessage) (string, error)
	// Control services a control tool synchronously on the VM goroutine during the script's
	// call (CS-39): a decision it records counts even when the script never awaits the promise.
	Control(tool, callID string, args json.RawMessage) (string, error)
}

// Quotas bound one run (spec 03 CS-61, OQ-3, OQ-5, OQ-6). Zero values take the defaults.
type Quotas struct {
	TimeoutMs        int   // wall clock of the whole run (program + state function + awaited host calls); 0 => 15000
	MaxPtcCalls      *int  // nil => unbounded; host calls incl. controls; the call over it rejects with "script exceeded maxPtcCalls (<n>)"
	MaxResultChars   int   // 0 => 100000; a host result over it (UTF-16 units) rejects with "tool result of <n> characters exceeds maxResultChars (<m>)"
	MemoryLimitBytes int64 // 0 => 64 MiB; best-effort: bytes entering the VM (variables JSON, results) are counted, plus a process-wide heap watchdog at 2x
	MaxArgBytes      int   // 0 => 1 MiB: cap on one call's argument JSON (a TypeError in JS when exceeded)
}

// CodeStateRun is one code-state run (spec 03 §1.3).
type CodeStateRun struct {
	File       string         // workflow-relative path for positions, e.g. "scripts/screen.js"
	Source     []byte         // the script as read (never rewritten on disk, CS-07)
	State      string         // the code state's slug (CS-30 input.state)
	Trigger    string         // "" => the field is absent on the input object
	Variables  map[string]any // JSON values; the script gets a deep copy (CS-31)
	Tools      []Tool         // the surface, in surface order (BR-01)
	Quotas     Quotas
	NextCallID func() string     // mints "ptc:<n>" ids, one per host call (BR-30); nil => a per-run counter
	OnLog      func(line string) // one call per console output line (CS-50); nil discards
}

const (
	defaultTimeoutMs      = 15000
	defaultMaxResultChars = 100000
	defaultMemoryLimit    = 64 << 20
	defaultMaxArgBytes    = 1 << 20
	// maxCallStackSize turns runaway recursion into a QuotaError (OQ-2; goja.md §4-§5: deep
	// recursion is super-linear in goja, so the bound stays well under 10000).
	maxCallStackSize = 4096
	maxLogBytes      = 64 << 10 // console output per run (goja.md §5)
)

// RunCodeState prepares and runs one code-state script (spec 03 §1.3 steps 5-11): the three
// authoring forms of CS-24, the globals of CS-30…CS-34, the tools bridge of BR-01…BR-13, the
// quotas of CS-61 and the cancellation of CS-62. It returns nil when the run finished cleanly;
// which control, if any, was accepted is for the Host to know. Otherwise the error is one of
// *ImportError, *SyntaxError, *ScriptError, *TimeoutError, *QuotaError, *AbortError or
// *DefinitionError. Host calls still pending on return are cancelled and their results
// dropped (SB-05); RunCodeState does not wait for them.
func RunCodeState(ctx context.Context, run *CodeStateRun, host Host) error {
	file := run.File
	if file == "" {
		file = "script.js"
	}
	prep := prepareCached(file, run.Source)
	if prep.err != nil {
		return prep.err
	}
	r := &runner{run: run, host: host, prep: prep, file: file, limits: resolveQuotas(run.Quotas)}
	return r.execute(ctx)
}

type limits struct {
	timeoutMs      int
	maxPtcCalls    *int
	maxResultChars int
	memoryLimit    int64
	maxArgBytes    int
}

func resolveQuotas(q Quotas) limits {
	l := limits{timeoutMs: q.TimeoutMs, maxPtcCalls: q.MaxPtcCalls, maxResultChars: q.MaxResultChars,
		memoryLimit: q.MemoryLimitBytes, maxArgBytes: q.MaxArgBytes}
	if l.timeoutMs <= 0 {
		l.timeoutMs = defaultTimeoutMs
	}
	if l.maxResultChars <= 0 {
		l.maxResultChars = defaultMaxResultChars
	}
	if l.memoryLimit <= 0 {
		l.memoryLimit = defaultMemoryLimit
	}
	if l.maxArgBytes <= 0 {
		l.maxArgBytes = defaultMaxArgBytes
	}
	return l
}

// runner is one run. Apart from parent, ctx and cancel (read-only after execute starts) and
// loop's queue, its fields belong to the VM goroutine.
type runner struct {
	run    *CodeStateRun
	host   Host
	prep   *prepared
	file   string
	limits limits
	// heapBase is the heap the watchdog measures growth from (0: the run's start); a REPL
	// passes its runtime's, so the memory bound covers what the whole REPL holds (CS-61).
	heapBase uint64

	parent context.Context
	ctx    context.Context
	cancel context.CancelCauseFunc

	vm     *goja.Runtime
	guards *guards // the runtime's (quotas.go): its quota errors fail the run as QuotaErrors
	loop   eventLoop
	cs     *goja.Object // the wrapper's argument {h, d}; its prototype holds the guard helpers
	input  *goja.Object // the state function's argument (CS-30)

	errorCtor   *goja.Object
	promiseCtor *goja.Object
	resolveFn   goja.Callable // Promise.resolve
	stringify   goja.Callable // JSON.stringify
	toString    goja.Callable // String

	// intMu guards live and interrupted: the VM may be interrupted only while the run's body
	// executes, so a runtime that outlives the run (the REPL's) knows whether it was (SB-04).
	intMu       sync.Mutex
	live        bool
	interrupted bool
	stopped     bool // the run's context ended before its body returned (timeout, quota, abort)
	overflowed  bool // a StackOverflowError unwound the VM

	calls      int
	callSeq    int
	inbound    int64
	logged     int
	logCut     bool
	registered goja.Value // the function given to defineCodeState
	conflict   bool       // defineCodeState got two different functions (CS-25)
	callSites  map[*goja.Object]callSite
}

// callSite is the script position (goja code coordinates) of an asynchronous host call, so a
// rejection created later, outside any JS frame, still points at the call.
type callSite struct{ line, col int }

func (r *runner) execute(parent context.Context) error {
	vm := goja.New()
	vm.SetMaxCallStackSize(maxCallStackSize)
	return r.bounded(parent, vm, r.evaluate)
}

// bounded runs body on vm under the run's quotas (CS-61, CS-62, OQ-2, OQ-3): the timeout and
// the caller's cancellation interrupt the VM (SB-04) and end the loop's waits, the heap watchdog
// watches the run, and host calls still pending when body returns are cancelled (SB-05). The
// result is the context's error when the context ended, else body's.
func (r *runner) bounded(parent context.Context, vm *goja.Runtime, body func() error) error {
	if parent.Err() != nil {
		return &AbortError{Cause: context.Cause(parent)}
	}
	base, cancel := context.WithCancelCause(parent)
	ctx, cancelTimeout := context.WithTimeoutCause(base, time.Duration(r.limits.timeoutMs)*time.Millisecond,
		&TimeoutError{TimeoutMs: r.limits.timeoutMs})
	r.parent, r.ctx, r.cancel = parent, ctx, cancel
	r.vm = vm
	if r.guards != nil { // a REPL's runtime (a code state's guards are made inside body)
		r.guards.done = ctx.Done()
	}
	r.loop.wake = make(chan struct{}, 1)
	r.intMu.Lock()
	r.live = true
	r.intMu.Unlock()
	stopInterrupt := context.AfterFunc(ctx, r.interrupt) // SB-04
	unwatch := heapWatch.registerFrom(r.heapBase, r.limits.memoryLimit, func() { cancel(r.memoryError()) })
	defer func() {
		unwatch()
		stopInterrupt()
		cancel(errRunEnded) // before cancelTimeout, so pending calls see errRunEnded (SB-05)
		cancelTimeout()
		if r.guards != nil {
			r.guards.done = nil
		}
	}()
	err := r.contained(body)
	r.intMu.Lock()
	r.live = false // from here on nothing interrupts vm
	r.intMu.Unlock()
	if ctx.Err() != nil {
		r.stopped = true
		return r.contextError()
	}
	return err
}

// contained runs body, turning an interrupt or a stack overflow that escaped as a Go panic
// (script code run from Go outside any guard) into the run's failure instead of a crash of
// the process; any other panic is a bug and propagates.
func (r *runner) contained(body func() error) (err error) {
	defer func() {
		if x := recover(); x != nil {
			if r.vmStopped(x) {
				r.overflowed = true
				err = &QuotaError{Message: callStackExceeded(maxCallStackSize)}
			} else {
				err = &ScriptError{Message: uncaughtException} // the context's cause wins when it ended
			}
		}
	}()
	return body()
}

// vmStopped takes a recovered panic that must be the VM's interrupt or stack overflow (any
// other panic is a bug and is re-raised), marks the runtime interrupted and reports whether
// it was an overflow.
func (r *runner) vmStopped(x any) (overflow bool) {
	switch x.(type) {
	case *goja.InterruptedError:
	case *goja.StackOverflowError:
		overflow = true
	default:
		panic(x)
	}
	r.markInterrupted()
	return overflow
}

// interrupt stops the JavaScript running on the VM (SB-04); it is a no-op once the run's body
// returned. It may be called from any goroutine.
func (r *runner) interrupt() {
	r.intMu.Lock()
	defer r.intMu.Unlock()
	if r.live {
		r.vm.Interrupt(errInterrupted)
		r.interrupted = true
	}
}

var errInterrupted = errors.New("sandbox: run stopped")

// contextError names why the run's context ended: the timeout, a quota, or the caller.
func (r *runner) contextError() error {
	cause := context.Cause(r.ctx)
	var te *TimeoutError
	var qe *QuotaError
	if errors.As(cause, &te) || errors.As(cause, &qe) {
		return cause
	}
	return &AbortError{Cause: context.Cause(r.parent)}
}

// evaluate runs CS-24's forms: the program to completion, then the registered state function.
func (r *runner) evaluate() error {
	vm := r.vm
	g, err := installPrelude(vm, contextCode)
	if err != nil {
		return r.jsError(err)
	}
	r.guards = g
	g.done = r.ctx.Done()
	if err := r.install(); err != nil {
		return err
	}
	wrapper, err := vm.RunProgram(r.prep.program)
	if err != nil {
		return r.jsError(err)
	}
	r.guards.cover(wrapper, r.prep.generators)
	call, _ := goja.AssertFunction(wrapper)
	this := goja.Undefined() // modules are strict and run with this = undefined
	if !r.prep.module {
		this = vm.GlobalObject()
	}
	done, err := call(this, r.cs)
	if err != nil {
		return r.jsError(err)
	}
	if err := r.await(done); err != nil {
		return err
	}
	fn, err := r.stateFunction()
	if fn == nil || err != nil {
		return err
	}
	ret, err := fn(goja.Undefined(), r.input)
	if err != nil {
		return r.jsError(err)
	}
	if done, err = r.resolveFn(r.promiseCtor, ret); err != nil {
		return r.jsError(err)
	}
	return r.await(done) // CS-41: the value is awaited, never consulted
}

// stateFunction returns the function registered by `export default` or defineCodeState
// (CS-22, CS-25), nil for a plain script.
func (r *runner) stateFunction() (goja.Callable, error) {
	fnValue := r.registered
	if r.prep.hasDefault {
		def := r.cs.Get("d")
		if _, ok := goja.AssertFunction(def); !ok {
			return nil, &DefinitionError{Message: defaultNotFunction}
		}
		if r.registered != nil && !def.StrictEquals(r.registered) {
			r.conflict = true
		}
		fnValue = def
	}
	if r.conflict {
		return nil, &DefinitionError{Message: twoStateFunctions}
	}
	if fnValue == nil {
		return nil, nil
	}
	fn, _ := goja.AssertFunction(fnValue)
	return fn, nil
}

// install sets the globals of CS-30…CS-34 and the wrapper's argument.
func (r *runner) install() error {
	vm := r.vm
	g := vm.GlobalObject()
	b := lookupBuiltins(vm)
	r.errorCtor, r.promiseCtor, r.resolveFn, r.stringify, r.toString = b.errorCtor, b.promiseCtor, b.resolveFn, b.stringify, b.toString
	freeze := b.freeze

	data := []byte("{}")
	if r.run.Variables != nil {
		var err error
		if data, err = json.Marshal(r.run.Variables); err != nil {
			return fmt.Errorf("sandbox: variables are not JSON values: %w", err)
		}
	}
	if err := r.account(len(data)); err != nil {
		return err
	}
	variables, err := b.parseFn(goja.Undefined(), vm.ToValue(string(data))) // CS-31: a deep copy
	if err != nil {
		return r.jsError(err)
	}
	tools, err := r.buildTools(freeze)
	if err != nil {
		return err
	}
	args, input := vm.NewObject(), vm.NewObject() // CS-30, CS-32: the same fields, tools only on input
	for _, o := range []*goja.Object{args, input} {
		_ = o.Set("state", r.run.State)
		if r.run.Trigger != "" {
			_ = o.Set("trigger", r.run.Trigger)
		}
		_ = o.Set("variables", variables)
	}
	_ = input.Set("tools", tools)
	r.input = input

	define := vm.ToValue(r.defineCodeState)
	console := vm.NewObject()
	log := vm.ToValue(r.consoleLog)
	for _, name := range []string{"log", "info", "warn", "error"} {
		_ = console.Set(name, log)
	}
	harness := vm.NewObject() // what a namespace or default harness import binds (CS-20)
	_ = harness.Set("defineCodeState", define)
	_ = harness.Set("SANDBOX_CONTRACT", g.Get("SANDBOX_CONTRACT"))
	if _, err := freeze(goja.Undefined(), harness); err != nil {
		return r.jsError(err)
	}
	r.cs = r.guards.newCS(map[string]goja.Value{"h": harness, "d": nil})
	for name, v := range map[string]any{"defineCodeState": define, "console": console, "args": args, "tools": tools} {
		_ = g.Set(name, v)
	}
	return nil
}

// buildTools builds the frozen tools object of BR-01…BR-05: each tool under its camelCase key
// (enumerable) and its original name (non-enumerable when different); the first tool in
// surface order wins a key.
func (r *runner) buildTools(freeze goja.Callable) (*goja.Object, error) {
	vm := r.vm
	tools := vm.NewObject()
	taken := make(map[string]bool, 2*len(r.run.Tools))
	for _, t := range r.run.Tools {
		fn := vm.ToValue(func(call goja.FunctionCall) goja.Value { return r.hostCall(t, call.Argument(0)) })
		key := camelCase(t.Name)
		for _, k := range []string{key, t.Name} {
			if taken[k] {
				continue
			}
			taken[k] = true
			flag := goja.FLAG_FALSE
			if k == key {
				flag = goja.FLAG_TRUE
			}
			if err := tools.DefineDataProperty(k, fn, goja.FLAG_FALSE, goja.FLAG_FALSE, flag); err != nil {
				return nil, err
			}
		}
	}
	if _, err := freeze(goja.Undefined(), tools); err != nil {
		return nil, r.jsError(err)
	}
	return tools, nil
}

// camelCase is BR-03's key: split on '_' and '-', keep the first segment, capitalise the first
// letter of every later non-empty segment.
func camelCase(name string) string {
	parts := strings.FieldsFunc(name, func(c rune) bool { return c == '_' || c == '-' })
	if len(parts) == 0 {
		return name
	}
	var b strings.Builder
	if c := name[0]; c == '_' || c == '-' {
		parts = append([]string{""}, parts...)
	}
	b.WriteString(parts[0])
	for _, p := range parts[1:] {
		first, size := utf8.DecodeRuneInString(p)
		b.WriteRune(unicode.ToUpper(first))
		b.WriteString(p[size:])
	}
	return b.String()
}

// defineCodeState registers its argument as the state function and returns it (CS-25).
func (r *runner) defineCodeState(call goja.FunctionCall) goja.Value {
	fn := call.Argument(0)
	if _, ok := goja.AssertFunction(fn); !ok {
		panic(r.vm.NewTypeError(defineNotFunction))
	}
	if r.registered == nil {
		r.registered = fn
	} else if !r.registered.StrictEquals(fn) {
		r.conflict = true
	}
	return fn
}

// consoleLog is console.log/info/warn/error (CS-50): strings verbatim, other values as JSON
// (String(v) when JSON has no text for them), space-joined, one OnLog call per line, at most
// maxLogBytes per run.
func (r *runner) consoleLog(call goja.FunctionCall) goja.Value {
	if r.run.OnLog == nil || r.logCut {
		return goja.Undefined()
	}
	parts := make([]string, len(call.Arguments))
	for i, v := range call.Arguments {
		parts[i] = r.format(v)
	}
	for _, line := range strings.Split(strings.Join(parts, " "), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if r.logged+len(line) > maxLogBytes {
			r.logCut = true
			if room := maxLogBytes - r.logged; room > 0 { // the part of the line that fits, whole runes
				if head := strings.ToValidUTF8(line[:room], ""); head != "" {
					r.run.OnLog(head)
				}
			}
			r.run.OnLog(logCutLine)
			break
		}
		r.logged += len(line)
		r.run.OnLog(line)
	}
	return goja.Undefined()
}

func (r *runner) format(v goja.Value) string {
	if goja.IsString(v) {
		return v.String()
	}
	if s, err := r.stringify(goja.Undefined(), v); err == nil && !goja.IsUndefined(s) {
		return s.String()
	}
	s, err := r.toString(goja.Undefined(), v)
	if err != nil {
		panic(err)
	}
	return s.String()
}

// hostCall is one tools.* call (BR-10…BR-13, CS-39, CS-61, CS-62). It always returns a promise.
func (r *runner) hostCall(t Tool, arg goja.Value) goja.Value {
	if r.ctx.Err() != nil {
		return r.rejected(r.newError(r.callCause(t.Name).Error()))
	}
	args, refusal := r.encodeArgs(t.Name, arg)
	if refusal != nil {
		return r.rejected(refusal)
	}
	r.calls++
	if max := r.limits.maxPtcCalls; max != nil && r.calls > *max {
		return r.fail(&QuotaError{Message: maxPtcCallsExceeded(*max)})
	}
	id := r.nextCallID()
	if t.Control {
		res, err := r.host.Control(t.Name, id, args)
		if err != nil {
			return r.rejected(r.newError(err.Error()))
		}
		v, qerr := r.admit(res)
		if qerr != nil {
			return r.fail(qerr)
		}
		p, resolve, _ := r.vm.NewPromise()
		if err := resolve(v); err != nil {
			panic(err)
		}
		return r.vm.ToValue(p)
	}
	return r.dispatch(t.Name, id, args)
}

// dispatch starts a non-control call on its own goroutine; its completion settles the promise
// on the VM goroutine through the loop.
func (r *runner) dispatch(tool, id string, args json.RawMessage) goja.Value {
	site := r.scriptPosition(r.vm.CaptureCallStack(0, nil))
	callCtx, cancelCall := context.WithCancelCause(context.WithoutCancel(r.ctx))
	stop := context.AfterFunc(r.ctx, func() { cancelCall(r.callCause(tool)) })
	p, resolve, reject := r.vm.NewPromise()
	r.loop.pending++
	go func() {
		res, err := r.host.Call(callCtx, tool, id, args)
		r.loop.enqueue(func() error {
			stop()
			cancelCall(nil)
			r.loop.pending--
			if err != nil {
				e := r.newError(err.Error())
				if site != nil {
					if r.callSites == nil {
						r.callSites = make(map[*goja.Object]callSite)
					}
					r.callSites[e] = *site
				}
				return reject(e)
			}
			v, qerr := r.admit(res)
			if qerr != nil {
				r.cancel(qerr) // the loop stops at its next check
				return nil
			}
			return resolve(v)
		})
	}()
	return r.vm.ToValue(p)
}

// callCause is why a call is refused or cancelled once the run's context ended.
// It is called from other goroutines too: it reads only the contexts.
func (r *runner) callCause(tool string) error {
	cause := context.Cause(r.ctx)
	var te *TimeoutError
	var qe *QuotaError
	if r.parent.Err() == nil || errors.Is(cause, errRunEnded) || errors.As(cause, &te) || errors.As(cause, &qe) {
		return cause
	}
	return &toolAbortedError{tool: tool, cause: context.Cause(r.parent)}
}

// encodeArgs serialises the call's one argument with the VM's JSON.stringify (BR-10), capped
// at MaxArgBytes. A refusal is the TypeError (or stringify's own error) the promise rejects with.
func (r *runner) encodeArgs(tool string, arg goja.Value) (json.RawMessage, goja.Value) {
	if goja.IsUndefined(arg) {
		return json.RawMessage("{}"), nil
	}
	s, err := r.stringify(goja.Undefined(), arg)
	if err != nil {
		var ex *goja.Exception
		if errors.As(err, &ex) {
			return nil, ex.Value()
		}
		panic(err) // uncatchable (interrupt): let it unwind the VM
	}
	if goja.IsUndefined(s) {
		return nil, r.vm.NewTypeError(argNotJSON(tool))
	}
	text := s.String()
	if len(text) > r.limits.maxArgBytes {
		return nil, r.vm.NewTypeError(argTooLarge(tool, len(text), r.limits.maxArgBytes))
	}
	return json.RawMessage(text), nil
}

// admit checks a host result against maxResultChars (OQ-5: reject, never truncate) and the
// inbound-bytes memory accounting (OQ-3) and converts it to a JS string.
func (r *runner) admit(res string) (goja.Value, *QuotaError) {
	// UTF-16 units never outnumber UTF-8 bytes, so counting is only needed for long results.
	if len(res) > r.limits.maxResultChars {
		if n := utf16Len(res); n > r.limits.maxResultChars {
			return nil, &QuotaError{Message: resultTooLong(n, r.limits.maxResultChars)}
		}
	}
	if err := r.account(len(res)); err != nil {
		return nil, err
	}
	return r.vm.ToValue(res), nil
}

// account adds n bytes to what entered the VM (OQ-3).
func (r *runner) account(n int) *QuotaError {
	r.inbound += int64(n)
	if r.inbound > r.limits.memoryLimit {
		return r.memoryError()
	}
	return nil
}

func (r *runner) memoryError() *QuotaError {
	return &QuotaError{Message: memoryExceeded(r.limits.memoryLimit)}
}

// fail ends the run with a quota error (CS-61: a breach fails the run even when the script
// catches the rejection) and returns the rejected promise the breaching call gets.
func (r *runner) fail(err *QuotaError) goja.Value {
	p := r.rejected(r.newError(err.Message))
	r.cancel(err)
	r.interrupt() // at once; the context's AfterFunc would land a little later
	return p
}

func (r *runner) nextCallID() string {
	if r.run.NextCallID != nil {
		return r.run.NextCallID()
	}
	r.callSeq++
	return "ptc:" + strconv.Itoa(r.callSeq)
}

func (r *runner) newError(msg string) *goja.Object {
	e, err := r.vm.New(r.errorCtor, r.vm.ToValue(msg))
	if err != nil {
		panic(err)
	}
	return e
}

func (r *runner) rejected(reason goja.Value) goja.Value {
	p, _, reject := r.vm.NewPromise()
	if err := reject(reason); err != nil {
		panic(err)
	}
	return r.vm.ToValue(p)
}

// await drives the loop until the promise settles (SB-03), the run's context ends (the caller
// then reports why), or nothing left could settle it.
func (r *runner) await(v goja.Value) error {
	p, ok := v.Export().(*goja.Promise)
	if !ok {
		return nil
	}
	for {
		if r.ctx.Err() != nil {
			return nil
		}
		switch p.State() {
		case goja.PromiseStateFulfilled:
			return nil
		case goja.PromiseStateRejected:
			return r.failure(p.Result(), nil)
		}
		job := r.loop.take()
		if job == nil {
			if r.loop.pending == 0 {
				return &ScriptError{Message: deadlockMessage}
			}
			select {
			case <-r.loop.wake:
			case <-r.ctx.Done():
			}
			continue
		}
		if err := job(); err != nil {
			return r.jsError(err)
		}
	}
}

// jsError converts an error out of goja: a throw becomes a ScriptError, a stack overflow a
// QuotaError; an interrupt is returned as is (execute reports the context's cause instead).
func (r *runner) jsError(err error) error {
	var so *goja.StackOverflowError
	var ex *goja.Exception
	switch {
	case errors.As(err, &so):
		r.overflowed = true
		return &QuotaError{Message: callStackExceeded(maxCallStackSize)}
	case errors.As(err, &ex):
		return r.failure(ex.Value(), ex)
	}
	return err
}

// failure is how a thrown or rejected value fails the run: a guard's refusal (quotas.go) as
// the QuotaError it names, anything else as a ScriptError.
func (r *runner) failure(v goja.Value, ex *goja.Exception) error {
	se := r.scriptError(v, ex)
	if msg, ok := r.guards.quotaMessage(v); ok {
		return &QuotaError{Message: msg, File: se.File, Line: se.Line, Column: se.Column}
	}
	return se
}

// scriptError describes a thrown or rejected value and finds its first position in the script.
func (r *runner) scriptError(v goja.Value, ex *goja.Exception) *ScriptError {
	se := &ScriptError{Message: r.describe(v)}
	var pos *callSite
	if obj, ok := v.(*goja.Object); ok {
		if site, ok := r.callSites[obj]; ok {
			pos = &site
		} else {
			r.guarded(func() { // an Error's stack is formatted lazily, reading its message (a getter)
				if stack := obj.Get("stack"); stack != nil && goja.IsString(stack) {
					pos = r.stackPosition(stack.String())
				}
			})
		}
	}
	if pos == nil && ex != nil {
		pos = r.scriptPosition(ex.Stack())
	}
	if pos != nil {
		se.File = r.file
		se.Line, se.Column = r.prep.layout.sourcePosition(pos.line, pos.col)
	}
	return se
}

// describe is ScriptError.Message: String(err) for Errors ("TypeError: …"), JSON otherwise,
// cut to maxFailureMessage UTF-16 units. It runs the script's own code (getters, proxy traps,
// toString, toJSON), so it runs guarded; a value that cannot be described in time is
// "uncaught exception".
func (r *runner) describe(v goja.Value) string {
	msg := uncaughtException
	r.guarded(func() {
		try := func(f goja.Callable) bool {
			s, err := f(goja.Undefined(), v)
			if err != nil {
				if _, thrown := err.(*goja.Exception); !thrown {
					panic(err) // an interrupt or a stack overflow: describe no further
				}
				return false
			}
			if goja.IsUndefined(s) {
				return false
			}
			msg = s.String()
			return true
		}
		if obj, ok := v.(*goja.Object); ok && r.vm.InstanceOf(obj, r.errorCtor) && try(r.toString) {
			return
		}
		_ = try(r.stringify) || try(r.toString)
	})
	return truncateUTF16(msg, maxFailureMessage)
}

// describeBudget bounds the script code one guarded call may run (a getter, a toString).
const describeBudget = 250 * time.Millisecond

// guarded runs f — Go reading script values, which may run the script's own code (getters,
// proxy traps, toString/toJSON) outside any JavaScript call — so the script cannot escape its
// quotas from there (CS-61, CS-62): f gets at most describeBudget, an interrupt or a stack
// overflow inside it ends f instead of escaping as a Go panic, and once the run's context has
// ended the VM stays interrupted for whatever runs next. It reports whether f completed.
func (r *runner) guarded(f func()) (ok bool) { return r.guardedWithin(describeBudget, f) }

// guardedWithin is guarded with a budget of its own (0: none — f is inside the run and its
// timeout, quotas and abort reach it, as for an agent script's completion value).
func (r *runner) guardedWithin(limit time.Duration, f func()) (ok bool) {
	var budget *time.Timer
	if limit > 0 {
		budget = time.AfterFunc(limit, func() { r.vm.Interrupt(errInterrupted) })
	}
	defer func() {
		if budget != nil && !budget.Stop() {
			r.vm.ClearInterrupt() // the budget's interrupt, even when it landed after f
			r.markInterrupted()
		}
		if x := recover(); x != nil {
			r.vmStopped(x)
			ok = false
		}
		if r.ctx != nil && r.ctx.Err() != nil {
			r.interrupt() // the run's own stop may have been spent inside f: keep it in force
		}
	}()
	if ex := r.vm.Try(f); ex != nil {
		return false
	}
	return true
}

// markInterrupted records that the VM was interrupted, so a runtime that outlives the run (the
// REPL's) is replaced (SB-04).
func (r *runner) markInterrupted() {
	r.intMu.Lock()
	r.interrupted = true
	r.intMu.Unlock()
}

// scriptPosition returns the first frame of the script itself (prelude frames skipped).
func (r *runner) scriptPosition(frames []goja.StackFrame) *callSite {
	for _, f := range frames {
		if f.SrcName() == r.prep.srcName {
			p := f.Position()
			return &callSite{line: p.Line, col: p.Column}
		}
	}
	return nil
}

// stackPosition parses the first "<file>:<line>:<col>" frame of an Error's stack text.
func (r *runner) stackPosition(stack string) *callSite {
	prefix := r.prep.srcName + ":"
	for _, line := range strings.Split(stack, "\n") {
		i := strings.Index(line, prefix)
		if i < 0 {
			continue
		}
		rest := line[i+len(prefix):]
		ln, rest, ok1 := leadingInt(rest)
		if !ok1 || !strings.HasPrefix(rest, ":") {
			continue
		}
		col, _, ok2 := leadingInt(rest[1:])
		if ok2 {
			return &callSite{line: ln, col: col}
		}
	}
	return nil
}

func leadingInt(s string) (int, string, bool) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	n, err := strconv.Atoi(s[:i])
	return n, s[i:], err == nil
}

// builtins are the runtime's own objects a run calls from Go, looked up once per runtime
// (before any script can replace them).
type builtins struct {
	errorCtor, promiseCtor                          *goja.Object
	resolveFn, stringify, parseFn, toString, freeze goja.Callable
}

func lookupBuiltins(vm *goja.Runtime) builtins {
	g := vm.GlobalObject()
	fn := func(o *goja.Object, name string) goja.Callable {
		f, _ := goja.AssertFunction(o.Get(name))
		return f
	}
	b := builtins{errorCtor: g.Get("Error").ToObject(vm), promiseCtor: g.Get("Promise").ToObject(vm)}
	b.resolveFn = fn(b.promiseCtor, "resolve")
	jsonObj := g.Get("JSON").ToObject(vm)
	b.stringify, b.parseFn = fn(jsonObj, "stringify"), fn(jsonObj, "parse")
	b.toString = fn(g, "String")
	b.freeze = fn(g.Get("Object").ToObject(vm), "freeze")
	return b
}
