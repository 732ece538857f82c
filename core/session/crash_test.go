package session

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/store"
	"github.com/archmax-ai/archmax/core/store/storetest"
)

// The crash-injecting store is storetest.CrashLog: the process dies at its k-th write
// (Acquire, Release, Commit, RememberIdempotent, PutIdempotent, Delete) — before it, or
// after it, the write landed and its caller never learns it did — and every later call
// fails, as nothing more runs in a dead process.

// chargeFlow: an agent state that may call the host tool `charge`.
const chargeFlow = `
states:
  pay:
    triggers:
      manual:
    instructions: Charge the card once.
    tools:
      allow: [charge]
`

// charger is the host tool `charge`, counting its runs by idempotency key.
type charger struct {
	mu   sync.Mutex
	runs map[string]int
	keys []string
}

func (c *charger) tool() HostTool {
	return HostTool{Name: "charge", Description: "Charges the card.", InputSchema: json.RawMessage(`{"type":"object"}`),
		Handler: func(_ context.Context, call HostCall) (string, error) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.runs[call.IdempotencyKey]++
			c.keys = append(c.keys, call.IdempotencyKey)
			return `{"charged": true}`, nil
		}}
}

// R18-7: a host tool's call runs once even when the commit of its result is lost. The
// model's answer is committed before the tool runs; the process dying at any later write
// leaves the call to the continuation, which runs it under the same idempotency key
// `<session>/<turn>/<toolUseId>` (a host tool deduplicating on it charges once) — the model
// is never asked again, so no new call id appears.
func TestAHostToolCallKeepsItsKeyAcrossALostCommit(t *testing.T) {
	for _, after := range []bool{false, true} {
		hostToolCrashes(t, after)
	}
}

func hostToolCrashes(t *testing.T, after bool) {
	for k := 1; ; k++ {
		now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
		h := newHarness(t, chargeFlow, nil)
		h.log.Clock = func() time.Time { return now }
		h.cfg.Clock = func() time.Time { return now }
		ch := &charger{runs: map[string]int{}}
		h.cfg.Tools = []HostTool{ch.tool()}
		// the model, asked any number of times: charge until a charge result is in the
		// conversation, then say so
		var asked []reply
		for range 8 {
			asked = append(asked, func(req *model.Request) (*model.Response, error) {
				for _, m := range req.Messages {
					for _, b := range m.Content {
						if b.Kind == model.BlockToolResult {
							return says("Charged.")(req)
						}
					}
				}
				return calls("", call{"charge", map[string]any{"amount": 10}})(req)
			})
		}
		h.script(asked...)
		dying := storetest.NewCrashLog(h.log, k, after)
		cfg := h.cfg
		cfg.Log = dying
		eng, err := New(cfg)
		must(t, err)
		out, err := eng.Send(context.Background(), "c1", SendInput{Message: "pay"})
		if !dying.P.Dead() {
			if err != nil || out.Kind != KindCompleted {
				t.Fatalf("clean run: %v %+v", err, out)
			}
			if k < 4 {
				t.Fatalf("a clean run made only %d writes", dying.P.Writes())
			}
			return // every write of the turn was a kill point
		}
		// the process died at write k: a fresh one continues the turn once the lease lapses
		now = now.Add(time.Hour)
		head, gerr := h.log.Get(context.Background(), "c1")
		if errors.Is(gerr, store.ErrNotFound) || head == nil || head.Status != string(StatusRunning) {
			continue // it died before the turn was stored, or after it settled: nothing to continue
		}
		rec, derr := decodeRecord(context.Background(), head.Body, nil, "c1", nil)
		must(t, derr)
		if rec.CurrentTurn == nil {
			continue
		}
		out, _, err = h.engine().Continue(context.Background(), "c1", rec.CurrentTurn.ID)
		if err != nil || out == nil || out.Kind != KindCompleted || out.Reply != "Charged." {
			t.Fatalf("kill at write %d (after %v): the continuation: %v %+v", k, after, err, out)
		}
		// one call id, one key, whatever was lost: at most a repeat under the same key
		if len(ch.runs) != 1 || len(ch.keys) > 2 {
			t.Errorf("kill at write %d (after %v): the charge ran as %v, want one key", k, after, ch.keys)
		}
		h.model.replies = nil
	}
}
