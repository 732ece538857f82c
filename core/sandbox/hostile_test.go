package sandbox

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dop251/goja"
)

// hostileThrows are values a script can throw (or a REPL call can leave) whose description
// runs the script's own code again — a getter, a proxy trap, toJSON, toString — outside any
// JavaScript call of the run.
var hostileThrows = map[string]string{
	"looping message getter": `const e = new Error("x"); Object.defineProperty(e, "message", { get() { while (true) {} } }); throw e;`,
	"looping stack getter":   `const e = new Error("x"); Object.defineProperty(e, "stack", { get() { while (true) {} } }); throw e;`,
	"looping proxy trap":     `throw new Proxy({}, { get() { while (true) {} } });`,
	"looping toJSON":         `throw { toJSON() { while (true) {} } };`,
	"recursing toString":     `const o = { toString() { return String(o) } }; throw o;`,
}

// CS-61, CS-62, SB-04: describing a thrown value never escapes the run's quotas — no hang, no
// Go panic — whether the run's own timeout or the description's budget stops it; the run
// ends as a timeout or a described failure, within its bound.
func TestSB04_ThrownValuesCannotEscapeTheQuotas(t *testing.T) {
	for name, src := range hostileThrows {
		for _, timeoutMs := range []int{100, 15000} {
			t.Run(name, func(t *testing.T) {
				done := make(chan result, 1)
				go func() {
					done <- runWith(t, context.Background(), &testHost{}, src, func(c *CodeStateRun) { c.Quotas.TimeoutMs = timeoutMs })
				}()
				select {
				case r := <-done:
					switch err := r.err.(type) {
					case *TimeoutError:
						if timeoutMs != 100 {
							t.Errorf("timed out under %d ms: %v", timeoutMs, err)
						}
					case *ScriptError, *QuotaError:
					default:
						t.Errorf("%T %v", r.err, r.err)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("the run did not end")
				}
			})
		}
	}
}

// The same values as an agent script's completion value or thrown error: the REPL call ends
// with an error and the next call runs on a fresh runtime.
func TestSB04_REPLSurvivesHostileValues(t *testing.T) {
	repl := newTestREPL(t)
	for name, src := range hostileThrows {
		t.Run(name, func(t *testing.T) {
			res := replCall(t, repl, &testHost{}, src, func(c *ScriptCall) { c.Quotas.TimeoutMs = 200 })
			if !res.Error {
				t.Errorf("got %+v", res)
			}
			completion := strings.Replace(src, "throw ", "", 1) // the value left as the completion value
			_ = replCall(t, repl, &testHost{}, completion, func(c *ScriptCall) { c.Quotas.TimeoutMs = 200 })
			wantOK(t, replCall(t, repl, &testHost{}, "1 + 1", nil), "2")
		})
	}
}

// A failure carries at most maxFailureMessage UTF-16 units of the thrown value's description
// into the note, the trail and the events.
func TestFailureMessageIsCapped(t *testing.T) {
	se := as[*ScriptError](t, runScript(t, `throw new Error("x".repeat(900000));`).err)
	want := "Error: " + strings.Repeat("x", maxFailureMessage-len("Error: ")) + failureTruncated(900000+len("Error: ")-maxFailureMessage)
	if se.Message != want {
		t.Fatalf("message of %d bytes ends %q", len(se.Message), se.Message[len(se.Message)-40:])
	}
	if se = as[*ScriptError](t, runScript(t, `throw new Error("short");`).err); se.Message != "Error: short" {
		t.Fatalf("got %q", se.Message)
	}
}

// CS-61 (goja.md §4–§5): builtins that allocate natively, where no interrupt reaches, refuse
// sizes past their guard at once, with the QuotaError that names it (Issue 17: the A7-13 guards
// now fail like the others); the same builtins keep working below it, with their identities
// (instanceof, constructor, statics, subclassing) intact.
func TestCS61_NativeAllocationsAreGuarded(t *testing.T) {
	for src, want := range map[string]string{
		`new Uint8Array(2**31 - 1).fill(1);`:               "Uint8Array: result too large (2147483647 bytes, over the sandbox's limit of 16,000,000)",
		`new Float64Array(3e6);`:                           "Float64Array: result too large (24000000 bytes, over the sandbox's limit of 16,000,000)",
		`new ArrayBuffer(2**30);`:                          "ArrayBuffer: result too large (1073741824 bytes, over the sandbox's limit of 16,000,000)",
		`new Int32Array({ length: 1e8 });`:                 "Int32Array: result too large (400000000 bytes, over the sandbox's limit of 16,000,000)",
		`"x".repeat(9e6).replaceAll("x", "x".repeat(30));`: "replaceAll: too many replacements (more than the sandbox's limit of 250,000)",
		`"ab".repeat(4e6).replace(/a/g, "$&$&$&");`:        "replace: result too large (80000018 characters, over the sandbox's limit of 10,000,000)",
		`"x".repeat(9e6).split("");`:                       "split: too many pieces (9000000, over the sandbox's limit of 250,000)",
		`"x,".repeat(2e6).split(",");`:                     "split: too many pieces (250002, over the sandbox's limit of 250,000)",
	} {
		t.Run(src, func(t *testing.T) {
			wantQuota(t, runWith(t, context.Background(), &testHost{}, src, func(c *CodeStateRun) { c.Quotas.TimeoutMs = 10000 }).err, want)
		})
	}
	ok := `
const b = Uint8Array.from([1, 2, 3]);
class X extends Uint8Array {}
const x = new X(2);
const checks = [
  b instanceof Uint8Array, b.length === 3, b.constructor === Uint8Array, Uint8Array.name === "Uint8Array",
  Uint8Array.BYTES_PER_ELEMENT === 1, x instanceof X, x instanceof Uint8Array, x.constructor === X,
  new Float64Array(new ArrayBuffer(16)).length === 2, Uint8Array.of(1, 2).length === 2, new Uint8Array(1e6).length === 1e6,
  "a-b-c".split("-").length === 3, "aaa".replaceAll("a", "bb") === "bbbbbb", "abc".replace(/b/, "$&$&") === "abbc",
  "x".repeat(1e5).replaceAll("x", "yy").length === 2e5, "a,b".split(",", 1).length === 1,
];
let typeErr = false;
try { Uint8Array(2); } catch (e) { typeErr = e instanceof TypeError; }
if (checks.some((c) => !c) || !typeErr) throw new Error("broken: " + JSON.stringify(checks) + " " + typeErr);
`
	if r := runScript(t, ok); r.err != nil {
		t.Fatal(r.err)
	}
}

// The last net under the run: an interrupt or a stack overflow that escapes as a Go panic
// from script code run outside any guard fails the run (never the process); other panics
// are bugs and propagate.
func TestContainedRunsNeverCrashTheProcess(t *testing.T) {
	r := &runner{}
	if se := as[*ScriptError](t, r.contained(func() error { panic(&goja.InterruptedError{}) })); se.Message != uncaughtException {
		t.Errorf("got %+v", se)
	}
	if qe := as[*QuotaError](t, r.contained(func() error { panic(&goja.StackOverflowError{}) })); !r.overflowed || qe.Message != callStackExceeded(maxCallStackSize) {
		t.Errorf("got %+v", qe)
	}
	if !r.interrupted {
		t.Error("a runtime that was interrupted is not marked for replacement")
	}
	defer func() {
		if x := recover(); x != "bug" {
			t.Errorf("recovered %v", x)
		}
	}()
	_ = r.contained(func() error { panic("bug") })
}
