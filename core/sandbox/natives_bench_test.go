package sandbox

import (
	"context"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dop251/goja"
)

// benchQuota is the quota: 2 s and 64 MiB (the goal is a payload stopped within twice
// the time and within the memory plus 64 MiB).
var benchQuota = Quotas{TimeoutMs: 2000, MemoryLimitBytes: 64 << 20}

// BenchmarkHostileNatives runs every payload of hostileNatives (and two that only the clock and
// the heap watchdog stop) as a code state and as an agent script under benchQuota, reporting
// the wall time (ns/op) and the peak heap growth while it ran (peak-MiB: live and unswept heap
// objects, sampled every millisecond, as the watchdog reads them). `make test` asserts the
// guard that refused each payload (TestCS61_HostileNativesAreRefusedByTheirGuard), never its
// time; this records the times and memory (docs/PERFORMANCE.md).
func BenchmarkHostileNatives(b *testing.B) {
	payloads := append(append([]hostileNative(nil), hostileNatives...),
		hostileNative{"unshift doubling", `const a = [0]; for (;;) a.unshift(...a);`, "spread: argument count 65536"},
		hostileNative{"unshift loop, growing", `const a = []; for (;;) a.unshift(...new Array(6e4).fill(0));`, "unshift: array length 1080000"},
		hostileNative{"unshift loop, one at a time", `const a = []; for (let i = 0; ; i++) a.unshift(i);`, "timed out"},
		hostileNative{"generator spread", `[...(function* () { for (;;) yield [1]; })()].length`, ""},
		hostileNative{"JSON.stringify of hidden keys", hiddenKeys, "timed out"},
	)
	for _, p := range payloads {
		for _, kind := range []string{"code", "repl"} {
			b.Run(kind+"/"+strings.ReplaceAll(p.name, " ", "_"), func(b *testing.B) {
				var peak uint64
				for b.Loop() {
					b.StopTimer()
					runtime.GC()
					b.StartTimer()
					stop := samplePeak(&peak)
					err := runHostile(kind, p.src)
					stop()
					if err == nil {
						b.Fatalf("%s ended without an error", p.name)
					}
				}
				b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
			})
		}
	}
}

// runHostile runs src once under benchQuota and returns how it failed.
func runHostile(kind, src string) error {
	if kind == "code" {
		return RunCodeState(context.Background(), &CodeStateRun{File: "scripts/hostile.js", Source: []byte(src), Quotas: benchQuota, Tools: surface}, &testHost{})
	}
	repl := NewREPL()
	defer repl.Close()
	res, err := repl.Run(context.Background(), &ScriptCall{Source: []byte(src), Quotas: benchQuota, Tools: surface}, &testHost{})
	if err != nil {
		return err
	}
	return res.Err
}

// samplePeak records into *peak the largest heap growth over its start seen until stop.
func samplePeak(peak *uint64) (stop func()) {
	base := heapObjectBytes()
	done := make(chan struct{})
	var high atomic.Uint64
	go func() {
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		s := []metrics.Sample{{Name: heapMetric}}
		for {
			select {
			case <-done:
				return
			case <-t.C:
				metrics.Read(s)
				if v := s[0].Value.Uint64(); v > base && v-base > high.Load() {
					high.Store(v - base)
				}
			}
		}
	}()
	return func() {
		close(done)
		if v := heapObjectBytes(); v > base && v-base > high.Load() {
			high.Store(v - base)
		}
		*peak = max(*peak, high.Load())
	}
}

// toolArgument builds a typical tool argument of about 10 KB: records with nested objects and
// arrays, numbers, booleans, nulls, a few escapes and non-ASCII characters, and one long text.
const toolArgument = `({ file_path: "src/components/orders/OrderTable.tsx", mode: "replace", dry_run: false, retries: 3,
  rows: Array.from({ length: 40 }, (_, i) => ({ id: "ord-" + (1000 + i), customer: { name: "Customer " + i, email: "c" + i + "@example.com", vip: i % 7 === 0 },
    amount: Math.round(i * 1234.567) / 100, currency: "EUR", items: [{ sku: "SKU-" + i, qty: (i % 3) + 1, price: 9.99 }], tags: ["new", "priority-" + (i % 4)],
    note: i % 5 ? null : "Café \"déjà vu\"\n" })),
  content: "lorem ipsum dolor sit amet, ".repeat(60) })`

// BenchmarkStringify serialises toolArgument with goja's native JSON.stringify and with the
// sandbox's guarded one (stringify.go), compact and indented.
func BenchmarkStringify(b *testing.B) {
	for _, impl := range []string{"native", "guarded"} {
		vm := goja.New()
		if impl == "guarded" {
			vm = newGuardedRuntime(b)
		}
		arg := must(vm.RunString(toolArgument))
		stringify, _ := goja.AssertFunction(vm.Get("JSON").ToObject(vm).Get("stringify"))
		for _, gap := range []goja.Value{goja.Undefined(), vm.ToValue(2)} {
			name := impl
			if !goja.IsUndefined(gap) {
				name += "/indented"
			}
			b.Run(name, func(b *testing.B) {
				text := must(stringify(goja.Undefined(), arg, goja.Undefined(), gap)).String()
				b.SetBytes(int64(len(text)))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := stringify(goja.Undefined(), arg, goja.Undefined(), gap); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
