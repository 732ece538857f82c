package session

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/archmax-ai/archmax/core/kernel"
)

// hostCalls tracks a script's host calls between their tool-called and tool-result events,
// so every call is settled exactly once (spec 02 §12.6) — also one the script stopped waiting
// for: when a script ends with calls in flight the sandbox cancels them and the script never
// sees their completion (03 SB-05), but the audit records how each ended. Its methods run
// under the owning host's mutex unless said otherwise.
type hostCalls struct {
	wg   sync.WaitGroup
	open map[string]*hostCall
	next int // the order calls were made in (settle reports in it)
}

type hostCall struct {
	tool  string
	start time.Time
	seq   int
	done  bool // completed after the script ended: its result waits for settle
	text  string
	isErr bool
}

// abandonWait bounds how long a script's end waits for its cancelled host calls to return.
const abandonWait = 5 * time.Second

// add records a call that passed governance and emitted tool-called.
func (c *hostCalls) add(callID, tool string, start time.Time) {
	if c.open == nil {
		c.open = map[string]*hostCall{}
	}
	c.next++
	c.open[callID] = &hostCall{tool: tool, start: start, seq: c.next}
	c.wg.Add(1)
}

// finish records a call's completion. While the script runs (closed false) the caller
// emits the result itself (emit true); after it ended the result is kept for settle.
func (c *hostCalls) finish(callID, text string, isErr, closed bool) (emit bool) {
	defer c.wg.Done()
	hc := c.open[callID]
	if hc == nil {
		return false
	}
	if !closed {
		delete(c.open, callID)
		return true
	}
	hc.done, hc.text, hc.isErr = true, text, isErr
	return false
}

// settle runs on the run's goroutine after the script ended and the host was closed: it
// waits (bounded) for the cancelled calls to return — unlocking mu meanwhile — and emits the
// tool-result of every call still open: its real outcome, or "abandoned" for one that never
// returned.
func (c *hostCalls) settle(mu *sync.Mutex, r *run, state string, origin kernel.Origin) {
	mu.Unlock()
	done := make(chan struct{})
	go func() { c.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(abandonWait):
	}
	mu.Lock()
	ids := make([]string, 0, len(c.open))
	for id := range c.open {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int { return c.open[a].seq - c.open[b].seq })
	for _, id := range ids {
		hc := c.open[id]
		text, isErr := hc.text, hc.isErr
		if !hc.done {
			text, isErr = fmt.Sprintf("Tool '%s' was abandoned: the script ended before it returned.", hc.tool), true
		}
		r.emitResult(state, origin, id, hc.tool, text, isErr, hc.start)
	}
	c.open = nil
}
