package sandbox

import (
	"runtime/metrics"
	"sync"
	"time"
)

// heapWatch is the process-wide heap watchdog of spec 03 OQ-3 (research/goja.md §5): goja has
// no per-runtime heap cap, so while runs are active it samples the Go heap every 5 ms and fails
// every run whose heap growth since its start exceeds twice its MemoryLimitBytes. The heap is
// shared by all runs of the process, so this is coarse and best-effort; hard bounds need an
// out-of-process sandbox with an OS memory limit.
var heapWatch = &watchdog{read: heapObjectBytes, interval: 5 * time.Millisecond}

const heapMetric = "/memory/classes/heap/objects:bytes"

// heapObjectBytes reads live-plus-unswept heap object bytes without stopping the world.
func heapObjectBytes() uint64 {
	s := []metrics.Sample{{Name: heapMetric}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

type watchdog struct {
	read     func() uint64
	interval time.Duration

	mu      sync.Mutex
	runs    map[*watchedRun]struct{}
	running bool // the sampling goroutine is alive
}

type watchedRun struct {
	baseline, budget uint64
	trip             func()
}

// register watches one run until the returned function is called; trip is called at most once,
// from the watchdog's goroutine, when the run's heap budget (2 x limit) is exceeded.
func (w *watchdog) register(limit int64, trip func()) (unregister func()) {
	return w.registerFrom(0, limit, trip)
}

// registerFrom is register with the growth measured from baseline (0: the heap now).
func (w *watchdog) registerFrom(baseline uint64, limit int64, trip func()) (unregister func()) {
	if baseline == 0 {
		baseline = w.read()
	}
	run := &watchedRun{baseline: baseline, budget: 2 * uint64(limit), trip: trip}
	w.mu.Lock()
	if w.runs == nil {
		w.runs = make(map[*watchedRun]struct{})
	}
	w.runs[run] = struct{}{}
	if !w.running {
		w.running = true
		go w.watch()
	}
	w.mu.Unlock()
	return func() {
		w.mu.Lock()
		delete(w.runs, run)
		w.mu.Unlock()
	}
}

func (w *watchdog) watch() {
	t := time.NewTicker(w.interval)
	defer t.Stop()
	for range t.C {
		if !w.check() {
			return
		}
	}
}

// check samples the heap once and trips the runs over budget; false once no run is watched.
func (w *watchdog) check() bool {
	heap := w.read()
	w.mu.Lock()
	defer w.mu.Unlock()
	for run := range w.runs {
		if heap > run.baseline && heap-run.baseline > run.budget {
			run.trip()
			delete(w.runs, run)
		}
	}
	if len(w.runs) == 0 {
		w.running = false
		return false
	}
	return true
}
