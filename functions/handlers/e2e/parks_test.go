package e2e

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/core/transcript"
)

// parkAtSignoff starts a review session through the turn Lambda and returns its id and the
// parked answer (DESIGN.md §5: the summary's pending carries the parkId).
func parkAtSignoff(t *testing.T, l *lambdas) (string, answer) {
	t.Helper()
	a := call(t, l.turn, startReq("review", `{"message":"Please draft the Q3 summary."}`))
	if a.status != http.StatusOK || a.body["kind"] != "parked" || a.body["status"] != "awaiting_decision" ||
		a.body["state"] != "review" || a.body["reply"] != "I've handed the draft to finance." {
		t.Fatalf("park at sign-off: %d %v", a.status, a.body)
	}
	pending, _ := a.body["pending"].(map[string]any)
	if a.parkID() == "" || pending["channel"] != "decision" {
		t.Fatalf("pending = %v, want a decision park with a parkId", a.body["pending"])
	}
	id, _ := a.body["sessionId"].(string)
	return id, a
}

// DESIGN.md §5, spec 02 §3.1/§3.4: an agent hands over to a human state (turn Lambda), and
// the parkId on the summary is what the decide Lambda resumes; the session completes and
// the trail shows the person's step.
func TestHumanParkThenDecideOverHTTP(t *testing.T) {
	s := newStack(t, "approve.model.yaml")
	l := s.boot(t)
	id, parked := parkAtSignoff(t, l)
	if sum := s.summary(t, id); sum.Pending == nil || sum.Pending.ParkID != parked.parkID() {
		t.Errorf("the stored summary's pending = %+v, want parkId %s", sum.Pending, parked.parkID())
	}

	a := call(t, l.decide, decisionReq(id, jsonText(t, map[string]string{"to": "publish", "comment": "Looks right", "parkId": parked.parkID()})))
	if a.status != http.StatusOK || a.body["kind"] != "completed" || a.body["status"] != "completed" || a.body["state"] != "publish" ||
		a.body["disposition"] != "decide" || a.body["reply"] != "Published." || a.body["pending"] != nil {
		t.Fatalf("decide: %d %v", a.status, a.body)
	}
	if got := s.trail(t, id); got != "trigger:draft agent:review human:publish" {
		t.Errorf("trail = %s", got)
	}
	steps := s.trailSteps(t, id)
	if human := steps[len(steps)-1]; human.Kind != transcript.TrailHuman || human.Reason != "Looks right" {
		t.Errorf("the human step = %+v, want the comment as its reason", human)
	}
	if h := s.head(t, id); h.Status != "completed" || h.Lease != nil || len(s.parkRecord(t, id)) != 0 {
		t.Errorf("after the decision: status %s, lease %+v, park %s", h.Status, h.Lease, s.parkRecord(t, id))
	}
}

// Spec 02 §3.4 (a refine decision routes back to the agent, which re-parks on a fresh
// record) and DESIGN.md §5 (a park that is no longer live is refused with 409): the refine
// mints a new parkId, the old one is refused ParkNotLiveError naming the live one, and the
// new one is decided.
func TestRefineReparksWithANewParkID(t *testing.T) {
	s := newStack(t, "refine.model.yaml")
	l := s.boot(t)
	id, first := parkAtSignoff(t, l)
	oldPark := first.parkID()

	a := call(t, l.decide, decisionReq(id, jsonText(t, map[string]string{"to": "draft", "comment": "tighten it", "parkId": oldPark})))
	if a.status != http.StatusOK || a.body["kind"] != "parked" || a.body["state"] != "review" || a.body["reply"] != "Handed over again." {
		t.Fatalf("refine: %d %v", a.status, a.body)
	}
	newPark := a.parkID()
	if newPark == "" || newPark == oldPark {
		t.Fatalf("the re-park's parkId = %q, want a new one (old %q)", newPark, oldPark)
	}
	before := s.head(t, id)

	stale := call(t, l.decide, decisionReq(id, jsonText(t, map[string]string{"to": "publish", "parkId": oldPark})))
	if stale.status != http.StatusConflict || stale.code() != "ParkNotLiveError" ||
		stale.detail("parkId") != oldPark || stale.detail("liveParkId") != newPark {
		t.Fatalf("a decision on the old park: %d %v", stale.status, stale.body)
	}
	if after := s.head(t, id); after.Version != before.Version || after.Messages != before.Messages {
		t.Errorf("a refused decision wrote: version %d → %d, messages %d → %d", before.Version, after.Version, before.Messages, after.Messages)
	}

	a = call(t, l.decide, decisionReq(id, jsonText(t, map[string]string{"to": "publish", "parkId": newPark})))
	if a.status != http.StatusOK || a.body["kind"] != "completed" || a.body["state"] != "publish" {
		t.Fatalf("decide the new park: %d %v", a.status, a.body)
	}
	if got := s.trail(t, id); got != "trigger:draft agent:review human:draft agent:review human:publish" {
		t.Errorf("trail = %s", got)
	}
}

// Spec 02 §3.6: a message to a session parked at a human state is a reply (structurally: a
// message, no trigger, no target); one reply-only call answers it, and the session parks
// again on the unchanged record — byte for byte in the stored head — with no trail step.
func TestReplyWhileParkedKeepsTheStoredPark(t *testing.T) {
	s := newStack(t, "reply.model.yaml")
	l := s.boot(t)
	id, parked := parkAtSignoff(t, l)
	before := s.parkRecord(t, id)
	trail := s.trail(t, id)
	if len(before) == 0 {
		t.Fatal("the stored head has no park record")
	}

	a := call(t, l.turn, turnReq("review", id, `{"message":"Any news from finance?"}`))
	if a.status != http.StatusOK || a.body["disposition"] != "reply" || a.body["kind"] != "parked" ||
		a.body["status"] != "awaiting_decision" || a.body["state"] != "review" ||
		a.body["reply"] != "Still with finance; you will hear when they decide." {
		t.Fatalf("reply: %d %v", a.status, a.body)
	}
	if a.parkID() != parked.parkID() {
		t.Errorf("the reply's parkId = %s, want the original %s", a.parkID(), parked.parkID())
	}
	if after := s.parkRecord(t, id); !bytes.Equal(after, before) {
		t.Errorf("the stored park record changed:\nbefore %s\nafter  %s", before, after)
	}
	if got := s.trail(t, id); got != trail {
		t.Errorf("a reply added trail steps: %s → %s", trail, got)
	}
	msgs := s.messages(t, id, 0, 100)
	last := msgs[len(msgs)-2:]
	if last[0].Role != transcript.RoleUser || last[0].Text != "Any news from finance?" || last[0].State != "review" ||
		last[1].Role != transcript.RoleAssistant || !strings.HasPrefix(last[1].Text, "Still with finance") {
		t.Errorf("the reply's messages = %+v", last)
	}
}

// DESIGN.md §5 (parks across Lambdas): a session parked by one set of cold-started Lambdas
// is decided by another that shares no memory with the first; the first set, asked again,
// reads the new checkpoint and refuses.
func TestParkInOneProcessDecideInAnother(t *testing.T) {
	s := newStack(t, "approve.model.yaml")
	first := s.boot(t)
	id, parked := parkAtSignoff(t, first)

	second := s.boot(t)
	a := call(t, second.decide, decisionReq(id, jsonText(t, map[string]string{"to": "publish", "parkId": parked.parkID()})))
	if a.status != http.StatusOK || a.body["kind"] != "completed" || a.body["state"] != "publish" || a.body["turn"] != 2.0 {
		t.Fatalf("decide in the second process: %d %v", a.status, a.body)
	}
	again := call(t, first.decide, decisionReq(id, jsonText(t, map[string]string{"to": "publish", "parkId": parked.parkID()})))
	if again.status != http.StatusConflict || again.code() != "SessionNotParkedError" {
		t.Errorf("the first process deciding again: %d %v", again.status, again.body)
	}
	if got := s.trail(t, id); got != "trigger:draft agent:review human:publish" {
		t.Errorf("trail = %s", got)
	}
}

// DESIGN.md §1 on DynamoDB: a decision retried with the same Idempotency-Key — say, by a
// client that lost the first answer — gets the first answer again, even from another
// instance of the decide Lambda, and nothing is applied twice.
func TestDecisionIdempotencyKeyReplaysTheFirstAnswer(t *testing.T) {
	s := newStack(t, "approve.model.yaml")
	l := s.boot(t)
	id, parked := parkAtSignoff(t, l)
	req := decisionReq(id, jsonText(t, map[string]string{"to": "publish", "parkId": parked.parkID()}))
	req.Headers["idempotency-key"] = "decide-42"
	first := call(t, l.decide, req)
	if first.status != http.StatusOK || first.body["kind"] != "completed" {
		t.Fatalf("decide: %d %v", first.status, first.body)
	}
	after := s.head(t, id)
	other := s.boot(t) // a cold container: no memory shared with the first
	resp, err := other.decide.Handle(context.Background(), req)
	if err != nil || resp.StatusCode != http.StatusOK || resp.Headers["Idempotent-Replayed"] != "true" || decodeAnswer(t, resp).body["reply"] != first.body["reply"] {
		t.Fatalf("replay: %+v %v", resp, err)
	}
	if h := s.head(t, id); h.Version != after.Version {
		t.Errorf("the replay wrote: v%d → v%d", after.Version, h.Version)
	}
}
