package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/archmax-ai/archmax/core/store"
	"github.com/archmax-ai/archmax/core/transcript"
)

// Spec 02 §4.3: a delivery with a message, sent to the deliver Lambda's HTTP route, resumes
// the wait in place; the [event] note and the person's message are committed atomically —
// nothing is stored while the first step's model call runs, and that step's commit holds
// both, next to each other on the messages page. DESIGN.md §5: the earlier event also cancels the
// park's schedule.
func TestDeliveryCommitsNoteAndMessageTogether(t *testing.T) {
	s := newStack(t, "deliver.model.yaml")
	l := s.boot(t)
	id, parkID, _ := parkWaiting(t, l, "Where is parcel 7?")
	if n := len(s.sched.Schedules()); n != 1 {
		t.Fatalf("%d schedules for a park with until, want 1", n)
	}
	parked := s.head(t, id)

	var seen atomic.Pointer[store.Head] // the head while the resumed turn's first model call is made
	s.onModelCall(func() {
		if seen.Load() != nil {
			return
		}
		h, err := s.log.Get(context.Background(), id)
		if err != nil {
			t.Errorf("head at the model call: %v", err)
			return
		}
		seen.CompareAndSwap(nil, h)
	})
	body := jsonText(t, map[string]any{"trigger": "courier", "variables": map[string]any{"scan": "delivered"},
		"message": "It's at the front desk.", "parkId": parkID})
	a := l.deliverHTTP(t, deliveryReq(id, body))
	s.onModelCall(nil)
	if a.status != http.StatusOK || a.body["disposition"] != "deliver" || a.body["kind"] != "completed" ||
		a.body["state"] != "watch" || a.body["reply"] != "The parcel is at the front desk." {
		t.Fatalf("deliver: %d %v", a.status, a.body)
	}

	// The resume is committed with its first step (DECISIONS K5-11): while that step's model
	// call runs nothing of the delivery is stored yet, and its one commit holds the note and
	// the message together with the step.
	if h := seen.Load(); h == nil || h.Version != parked.Version || h.Messages != parked.Messages || h.Status != "awaiting_input" {
		t.Fatalf("the head during the resumed turn's first model call: %+v, want the parked head v%d", h, parked.Version)
	}
	page := s.messages(t, id, parked.Messages, 2)
	const note = `[event] 'courier' arrived while the run waited in 'watch': scan="delivered" (also readable as run variables) You are still in 'watch'; continue from here. The person's message that came with it follows.`
	if len(page) != 2 || page[0].Role != transcript.RoleRuntime || page[0].Note != transcript.NoteEvent || page[0].Text != note ||
		page[1].Role != transcript.RoleUser || page[1].Text != "It's at the front desk." || page[1].State != "watch" {
		t.Errorf("messages after the park = %+v", page)
	}
	if v := s.summary(t, id).Variables; v["scan"].Value != "delivered" || !v["scan"].Locked || v["trigger"].Value != "courier" {
		t.Errorf("variables = %+v", v)
	}
	if got := s.trail(t, id); got != "trigger:watch trigger:watch" {
		t.Errorf("trail = %s", got)
	}
	if left := s.sched.Schedules(); len(left) != 0 {
		t.Errorf("the delivered park's schedule was not cancelled: %+v", left)
	}
}

// Spec 02 §4.3 (duplicate firings are safe): an EventBridge event delivered twice — the
// same event id, as EventBridge's at-least-once delivery does — has one effect, even though
// the session has parked awaiting input again in between.
func TestEventBridgeRedeliveryHasOneEffect(t *testing.T) {
	s := newStack(t, "redelivery.model.yaml")
	l := s.boot(t)
	a := call(t, l.turn, startReq("parcel", `{"message":"Track parcel 9, please."}`))
	id, _ := a.body["sessionId"].(string)
	if a.status != http.StatusOK || a.body["status"] != "awaiting_input" {
		t.Fatalf("wait: %d %v", a.status, a.body)
	}
	ev := events.EventBridgeEvent{Version: "0", ID: "7c1f0a52-9d0e-4b8e-8a51-3e6f4f0c2d11", DetailType: "courier", Source: "parcels.scans",
		AccountID: "123456789012", Region: "us-east-1", Detail: json.RawMessage(jsonText(t, map[string]any{"sessionId": id, "variables": map[string]any{"scan": "delivered"}}))}

	first, err := l.deliverEvent(ev)
	if err != nil || first.Outcome != "parked" || first.Duplicate || first.SessionID != id {
		t.Fatalf("first delivery = %+v, %v", first, err)
	}
	parked := s.head(t, id)
	park := s.parkRecord(t, id)
	if parked.Status != "awaiting_input" || len(park) == 0 {
		t.Fatalf("after the first delivery: status %s, park %s", parked.Status, park)
	}

	again, err := l.deliverEvent(ev)
	if err != nil || !again.Duplicate || again.Outcome != "" {
		t.Fatalf("redelivery = %+v, %v", again, err)
	}
	if after := s.head(t, id); after.Version != parked.Version || after.Messages != parked.Messages || after.Trail != parked.Trail {
		t.Errorf("the redelivery wrote: %+v → %+v", parked, after)
	}
	if got := s.trail(t, id); got != "trigger:watch trigger:watch" {
		t.Errorf("trail = %s, want one trigger step for the one delivery", got)
	}
	if sum := s.summary(t, id); sum.Status != "awaiting_input" || sum.Variables["trigger"].Value != "courier" {
		t.Errorf("summary = %+v", sum)
	}
	// Issue 17: the HTTP caller started (and owns) it; the event's source delivered
	sum := s.summary(t, id)
	if sum.Owner == nil || sum.Owner.Key() != "iam:"+clientRole || sum.TurnBy == nil || sum.TurnBy.Key() != "event:123456789012#parcels.scans" {
		t.Errorf("owner %+v, turnBy %+v", sum.Owner, sum.TurnBy)
	}
	if got := s.callers(t, id); got != "trigger:iam:"+clientRole+" trigger:event:123456789012#parcels.scans" {
		t.Errorf("trail callers = %s", got)
	}
}
