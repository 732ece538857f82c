package sandbox

import "sync"

// eventLoop hands host-call completions to the VM goroutine (spec 03 SB-02, SB-03; goja.md §3).
// Host goroutines only enqueue; the VM goroutine takes and runs the jobs, which settle goja
// promises. pending counts dispatched calls whose completion has not run yet: when it is zero
// and no job is queued, nothing can ever settle an awaited promise.
type eventLoop struct {
	mu      sync.Mutex
	queue   []func() error
	wake    chan struct{} // capacity 1: "the queue may be non-empty"
	pending int           // VM goroutine only
}

// enqueue is the only method called off the VM goroutine.
func (l *eventLoop) enqueue(job func() error) {
	l.mu.Lock()
	l.queue = append(l.queue, job)
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// take removes and returns the oldest job, nil when there is none.
func (l *eventLoop) take() func() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.queue) == 0 {
		return nil
	}
	job := l.queue[0]
	l.queue[0] = nil
	l.queue = l.queue[1:]
	return job
}
