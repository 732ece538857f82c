package sandbox

import (
	"context"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"
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
		return RunCodeState(context.Background(), &CodeStateRun{File: "scripts/hostile.js", Source: []byte(src), Quotas: benchQuota}, &testHost{})
	}
	repl := NewREPL()
	defer repl.Close()
	res, err := repl.Run(context.Background(), &ScriptCall{Source: []byte(src), Quotas: benchQuota}, &testHost{})
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
