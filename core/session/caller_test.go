package session

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/core/events"
	"github.com/archmax-ai/archmax/core/identity"
	"github.com/archmax-ai/archmax/core/transcript"
)

var (
	dana = identity.Principal{Kind: identity.JWT, ID: "dana", Issuer: "https://issuer.example/"}
	eve  = identity.Principal{Kind: identity.JWT, ID: "eve", Issuer: "https://issuer.example/"}
)

func as(p identity.Principal) context.Context { return WithCaller(context.Background(), p) }

func stepBy(s transcript.TrailStep) string {
	if s.By == nil {
		return "-"
	}
	return s.By.Key()
}

func eventBy(e events.Event) string {
	p, ok := e.Data["by"].(identity.Principal)
	if !ok {
		return "-"
	}
	return p.Key()
}

// Issue 17: the principal that starts a session owns it (head, record, summary); the trail
// step and the event that open each call carry its caller; a later call never changes the
// owner, and the summary's turnBy is the latest call's caller.
func TestCallerIsRecorded(t *testing.T) {
	h := newHarness(t, reviewFlow, nil)
	h.script(calls("", call{"archmax_advance", map[string]any{"to": "review", "reason": "ready"}}), says("With finance."))
	out, err := h.engine().Send(as(dana), "s1", SendInput{Message: "write the report"})
	if err != nil || out.Kind != KindParked {
		t.Fatalf("start: %v %+v", err, out)
	}
	head, _ := h.log.Get(context.Background(), "s1")
	if head.Owner != dana.Key() {
		t.Fatalf("head owner %q, want %q", head.Owner, dana.Key())
	}
	sum := h.summary("s1")
	if sum.Owner == nil || !sum.Owner.Same(dana) || sum.TurnBy == nil || !sum.TurnBy.Same(dana) {
		t.Fatalf("summary owner %+v turnBy %+v", sum.Owner, sum.TurnBy)
	}
	if s := out.AuditTrail[0]; s.Kind != transcript.TrailTrigger || stepBy(s) != dana.Key() || stepBy(out.AuditTrail[1]) != "-" {
		t.Fatalf("trail %+v: the trigger step carries the starter, the loop's steps nobody", out.AuditTrail)
	}
	if adv := h.eventsOf(events.Advance); eventBy(adv[0]) != dana.Key() || eventBy(adv[1]) != "-" {
		t.Fatalf("advance events by %s, %s", eventBy(adv[0]), eventBy(adv[1]))
	}
	// the stored events and trail carry it too, as JSON
	evs, _, err := h.sessions().Events(context.Background(), "s1", 0, 100)
	must(t, err)
	if !containsJSON(evs, `"by":{"id":"dana","issuer":"https://issuer.example/","kind":"jwt"}`) {
		t.Fatalf("stored events carry no caller")
	}

	// eve decides: her identity on the human step and the decided event; dana stays the owner
	h.script(says("Published."))
	out, err = h.engine().Decide(as(eve), "s1", Decision{To: "publish"})
	if err != nil || out.Kind != KindCompleted {
		t.Fatalf("decide: %v %+v", err, out)
	}
	last := out.AuditTrail[len(out.AuditTrail)-1]
	if last.Kind != transcript.TrailHuman || stepBy(last) != eve.Key() {
		t.Fatalf("human step %+v", last)
	}
	if d := h.eventsOf(events.Decided); len(d) != 1 || eventBy(d[0]) != eve.Key() {
		t.Fatalf("decided events %+v", d)
	}
	sum = h.summary("s1")
	if !sum.Owner.Same(dana) || !sum.TurnBy.Same(eve) {
		t.Fatalf("after the decision: owner %+v turnBy %+v", sum.Owner, sum.TurnBy)
	}
	if head, _ := h.log.Get(context.Background(), "s1"); head.Owner != dana.Key() {
		t.Fatalf("owner changed to %q", head.Owner)
	}
	// eve's turn on the finished session: still dana's
	h.script(says("Anything else?"))
	if _, err := h.engine().Send(as(eve), "s1", SendInput{Message: "thanks"}); err != nil {
		t.Fatal(err)
	}
	if sum := h.summary("s1"); !sum.Owner.Same(dana) || !sum.TurnBy.Same(eve) {
		t.Fatalf("after eve's turn: owner %+v turnBy %+v", sum.Owner, sum.TurnBy)
	}
}

// A delivery records its caller on the trigger step and the delivered event; a call with
// no caller records nobody and owns nothing.
func TestDeliveryCallerAndNoCaller(t *testing.T) {
	h := newHarness(t, waitFlow, nil)
	h.script(calls("", call{"archmax_wait", map[string]any{"reason": "the courier"}}), says("Waiting."))
	h.send("s1", "track parcel 7", nil) // no caller
	if sum := h.summary("s1"); sum.Owner != nil || sum.TurnBy != nil {
		t.Fatalf("no caller: owner %+v turnBy %+v", sum.Owner, sum.TurnBy)
	}
	if head, _ := h.log.Get(context.Background(), "s1"); head.Owner != "" {
		t.Fatalf("no caller: head owner %q", head.Owner)
	}
	courier := identity.EventSource("courier.app", "123456789012")
	h.script(says("It arrived."))
	out, err := h.engine().Deliver(as(courier), "s1", Delivery{Trigger: "courier"})
	if err != nil {
		t.Fatal(err)
	}
	var trig *transcript.TrailStep
	for i := range out.AuditTrail {
		if s := &out.AuditTrail[i]; s.Kind == transcript.TrailTrigger && s.Reason == "courier" {
			trig = s
		}
	}
	if trig == nil || stepBy(*trig) != courier.Key() {
		t.Fatalf("delivery trigger step %+v", trig)
	}
	if d := h.eventsOf(events.Delivered); len(d) != 1 || eventBy(d[0]) != courier.Key() {
		t.Fatalf("delivered events %+v", d)
	}
	if sum := h.summary("s1"); sum.Owner != nil || !sum.TurnBy.Same(courier) {
		t.Fatalf("a delivery makes nobody the owner: owner %+v turnBy %+v", sum.Owner, sum.TurnBy)
	}
}

// WithGuard runs the host's check under the lease on the session as stored — a new id
// shows Exists false — and a refusal writes nothing.
func TestGuardRunsUnderTheLease(t *testing.T) {
	h := newHarness(t, reviewFlow, nil)
	var seen []SessionAccess
	refuse := errors.New("refused by the host")
	guard := func(allow bool) Guard {
		return func(a SessionAccess) error {
			seen = append(seen, a)
			if !allow {
				return refuse
			}
			return nil
		}
	}
	ctx := WithGuard(as(dana), guard(false))
	if _, err := h.engine().Send(ctx, "s1", SendInput{Message: "hello"}); !errors.Is(err, refuse) {
		t.Fatalf("refused start: %v", err)
	}
	if _, err := h.log.Get(context.Background(), "s1"); err == nil {
		t.Fatal("a refused start committed")
	}
	if len(seen) != 1 || seen[0].Exists || seen[0].SessionID != "s1" {
		t.Fatalf("guard saw %+v", seen)
	}
	h.script(calls("", call{"archmax_advance", map[string]any{"to": "review", "reason": "ready"}}), says("With finance."))
	if _, err := h.engine().Send(WithGuard(as(dana), guard(true)), "s1", SendInput{Message: "hello"}); err != nil {
		t.Fatal(err)
	}
	before, _ := h.log.Get(context.Background(), "s1")
	seen = nil
	if _, err := h.engine().Decide(WithGuard(as(eve), guard(false)), "s1", Decision{To: "publish"}); !errors.Is(err, refuse) {
		t.Fatalf("refused decision: %v", err)
	}
	want := SessionAccess{SessionID: "s1", Exists: true, Workflow: "wf", Status: StatusAwaitingDecision, Owner: dana.Key()}
	if len(seen) != 1 || seen[0] != want {
		t.Fatalf("guard saw %+v, want %+v", seen, want)
	}
	after, _ := h.log.Get(context.Background(), "s1")
	if after.Version != before.Version || after.Status != string(StatusAwaitingDecision) {
		t.Fatalf("a refused decision wrote: v%d → v%d, %s", before.Version, after.Version, after.Status)
	}
	// the lease was released: an allowed decision goes through at once
	h.script(says("Published."))
	if out, err := h.engine().Decide(WithGuard(as(eve), guard(true)), "s1", Decision{To: "publish"}); err != nil || out.Kind != KindCompleted {
		t.Fatalf("allowed decision: %v", err)
	}
	if a, err := h.sessions().Access(context.Background(), "s1"); err != nil || a.Owner != dana.Key() || a.Status != StatusCompleted || !a.Exists {
		t.Fatalf("Access = %+v, %v", a, err)
	}
	if a, err := h.sessions().Access(context.Background(), "nobody"); err != nil || a.Exists {
		t.Fatalf("Access of an unknown session = %+v, %v", a, err)
	}
}

// A sub-workflow child is owned by its root's owner, and is not guarded again: the host
// authorized the parent's call. A decision routed to it is recorded as its caller's.
func TestChildInheritsTheOwner(t *testing.T) {
	h := delegateHarness(t)
	h.script(calls("", delegateCall("review-item", map[string]any{"item": "A"})), says("It is with a reviewer."))
	h.child("p~1", calls("", advance("approve", "ready")), says("Handed to a reviewer."))
	guarded := 0
	g := func(SessionAccess) error { guarded++; return nil }
	out, err := h.engine().Send(WithGuard(as(dana), g), "p", SendInput{Message: "review A"})
	if err != nil || out.Delegation == nil {
		t.Fatalf("start: %v %+v", err, out)
	}
	if guarded != 1 {
		t.Fatalf("guard ran %d times, want once (the root)", guarded)
	}
	child := h.summary("p~1")
	if child.Owner == nil || !child.Owner.Same(dana) {
		t.Fatalf("child owner %+v", child.Owner)
	}
	if head, _ := h.log.Get(context.Background(), "p~1"); head.Owner != dana.Key() {
		t.Fatalf("child head owner %q", head.Owner)
	}
	h.child("p~1", says("Accepted."))
	h.script(says("The reviewer accepted it."))
	if _, err := h.engine().Decide(WithGuard(as(eve), g), "p", Decision{To: "accepted", ParkID: out.Pending.ParkID}); err != nil {
		t.Fatal(err)
	}
	trail, err := h.sessions().Trail(context.Background(), "p~1")
	must(t, err)
	var human *transcript.TrailStep
	for i := range trail {
		if trail[i].Kind == transcript.TrailHuman {
			human = &trail[i]
		}
	}
	if human == nil || stepBy(*human) != eve.Key() {
		t.Fatalf("the child's human step %+v, want eve's", human)
	}
	for _, e := range h.eventsOf(events.Decided) {
		if eventBy(e) != eve.Key() {
			t.Errorf("decided event of %s by %s", e.SessionID, eventBy(e))
		}
	}
}

func (h *harness) sessions() *Sessions { return NewSessions(h.log, h.files, nil) }

func containsJSON(raws []json.RawMessage, fragment string) bool {
	for _, r := range raws {
		if strings.Contains(string(r), fragment) {
			return true
		}
	}
	return false
}
