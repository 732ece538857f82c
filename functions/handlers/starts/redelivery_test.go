package starts

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/store"
	"github.com/archmax-ai/archmax/core/store/memory"
)

// unrecorded is a log whose claim records after the first are never written (throttled):
// the pending claim lands, the done record does not.
type unrecorded struct{ store.Log }

func (unrecorded) PutIdempotent(context.Context, string, []byte, time.Duration) error {
	return errors.New("ProvisionedThroughputExceededException: throttled")
}

// packing names its session by order_id on `order`, and mints one on `placed`.
const packing = `
title: Packing
states:
  pack:
    triggers:
      order:
        session: order_id
      placed:
    instructions: Pack the order.
`

type packs struct{ calls int }

func (p *packs) Converse(context.Context, *model.Request) (*model.Response, error) {
	p.calls++
	return &model.Response{Message: model.Message{Role: model.RoleAssistant, Content: []model.Block{{Kind: model.BlockText, Text: "Packed."}}},
		StopReason: model.StopEndTurn, Usage: &model.Usage{InputTokens: 5, OutputTokens: 1}}, nil
}

// Issue 18: an event whose start committed but whose claim never became done (the record's
// write failed, or the process died first) is redelivered after the claim lapsed: it finds
// the turn its first delivery opened — named by the event id, as is a session the trigger
// does not name — and starts nothing twice.
func TestARedeliveryAfterALostClaimStartsNothingTwice(t *testing.T) {
	offset := time.Duration(0)
	mem := memory.New()
	mem.Clock = func() time.Time { return time.Now().Add(offset) }
	authored := memory.NewFiles()
	if err := authored.Write(context.Background(), "workflows/packing/workflow.yaml", []byte(packing)); err != nil {
		t.Fatal(err)
	}
	m := &packs{}
	engines := session.NewEngines(session.Config{Authored: authored, Log: unrecorded{mem}, Files: memory.NewFiles(), Model: m, ModelID: "test"})
	for name, trigger := range map[string]string{"session path": "order", "minted id": "placed"} {
		rs := []Route{{Source: "orders.app", DetailType: "Order Placed", Workflow: "packing", Trigger: trigger}}
		t.Run(name, func(t *testing.T) {
			h := New(engines, nil, rs, nil)
			ev := event("e-lost-"+name[:1], `{"order_id":"o-lost","qty":1}`)
			if _, err := h.Handle(context.Background(), ev); err != nil {
				t.Fatal(err)
			}
			calls := m.calls
			offset += eventClaimTTL + time.Second
			if _, err := h.Handle(context.Background(), ev); err != nil {
				t.Fatalf("redelivery: %v", err)
			}
			heads, _, _ := mem.List(context.Background(), store.ListOptions{})
			turns := 0
			for _, hd := range heads {
				sum, err := engines.Sessions().Get(context.Background(), hd.SessionID)
				if err != nil {
					t.Fatal(err)
				}
				turns += sum.Turn
			}
			if m.calls != calls || turns != len(heads) {
				t.Errorf("the redelivery ran again: %d model calls (first %d), %d turns over %d sessions", m.calls, calls, turns, len(heads))
			}
		})
	}
}
