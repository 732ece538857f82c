package session

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/events"
	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/spec"
)

// Regression tests from the review of sub-workflows (issue 8): each names the failure it
// guards against.

func failing(code string) reply {
	return func(*model.Request) (*model.Response, error) {
		return nil, &model.CallError{Code: code, Status: 503, Message: "try later", Retryable: true}
	}
}

func (h *harness) queue(replies ...reply) {
	h.model.mu.Lock()
	defer h.model.mu.Unlock()
	h.model.replies = append(h.model.replies, replies...)
}

// A child that parks beside a sibling still owed (its model failed) is presented once the
// sibling settles in the next invocation — never lost while the parent completes.
func TestParkedChildBesideAPendingSiblingIsPresented(t *testing.T) {
	h := delegateHarness(t)
	h.script(calls("", delegateCall("review-item", map[string]any{"item": "A"}), delegateCall("check-item", map[string]any{"item": "B", "qty": 1})))
	h.child("x~1", calls("", advance("approve", "ready")), says("Handed over."))
	h.child("x~2", failing("ServiceUnavailableException"))
	if _, err := h.engine().Send(context.Background(), "x", SendInput{Message: "go"}); err == nil {
		t.Fatal("expected the child's model failure")
	}
	h.child("x~2", says("fine"))
	h.queue(says("One is with a reviewer."))
	out, skipped, err := h.engine().Continue(context.Background(), "x", "")
	must(t, err)
	if skipped != nil || out.Kind != KindParked || out.Delegation == nil || out.Delegation.SessionID != "x~1" {
		t.Fatalf("parent %s %+v (child %s)", out.Kind, out.Delegation, h.summary("x~1").Status)
	}
}

// A yield inside a message, then a new turn: every unanswered call is answered before the
// person's new message, so the next model request is one Bedrock accepts.
func TestNewTurnAfterAYieldAnswersEveryOpenCall(t *testing.T) {
	h := delegateHarness(t)
	var now atomic.Int64
	now.Store(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC).UnixMilli())
	h.cfg.Clock = func() time.Time { return time.UnixMilli(now.Load()) }
	h.model.hook = func(*model.Request) { now.Add(int64(time.Minute / time.Millisecond)) }
	h.script(calls("", delegateCall("check-item", map[string]any{"item": "A", "qty": 1}), call{"read_file", map[string]any{"file_path": "scratchpad/none.md"}}))
	h.child("y~1", calls("", setVars(map[string]any{"verdict": "ok"})), says("fine"))
	out, err := h.engine().Send(WithStepDeadline(context.Background(), time.UnixMilli(now.Load()).Add(30*time.Second)), "y", SendInput{Message: "go"})
	must(t, err)
	if out.Kind != KindRunning {
		t.Fatalf("first invocation %s", out.Kind)
	}
	h.queue(says("New topic."))
	out2, err := h.engine().Send(context.Background(), "y", SendInput{Message: "forget that"})
	must(t, err)
	var roles []string
	for _, m := range out2.Messages {
		roles = append(roles, m.Role+":"+m.Tool)
	}
	if got := strings.Join(roles, " "); got != "user: assistant: tool:archmax_workflow_check-item tool:read_file user: assistant:" {
		t.Errorf("history %s", got)
	}
	if m := toolMessage(t, out2, "archmax_workflow_check-item", 0); !strings.Contains(m.Text, "abandoned") {
		t.Errorf("delegation answer %q", m.Text)
	}
	if s := h.summary("y~1"); s.Status != StatusRejected || s.Rejected != childAbandoned {
		t.Errorf("the abandoned child is %s %q", s.Status, s.Rejected)
	}
}

// A decision the child's current spec refuses is refused before anything is written: the
// parent stays parked on the same park.
func TestDelegatedDecisionCheckedAgainstTheChildsCurrentSpec(t *testing.T) {
	h := delegateHarness(t)
	h.script(calls("", delegateCall("review-item", map[string]any{"item": "A"})), says("With a reviewer."))
	h.child("w~1", calls("", advance("approve", "ready")), says("Handed over."))
	out := h.send("w", "go", nil)
	must(t, h.authored.Write(context.Background(), "workflows/review-item/workflow.yaml", []byte(strings.ReplaceAll(reviewItemFlow, "accepted", "approved"))))
	_, err := h.engine().Decide(context.Background(), "w", Decision{To: "accepted", ParkID: out.Pending.ParkID})
	var bad *InvalidDecisionTargetError
	// the park's own transitions that the child's spec still declares: what the child accepts
	if !errors.As(err, &bad) || strings.Join(bad.ValidTargets, ",") != "prepare" || bad.SessionID != "w" {
		t.Fatalf("Decide: %v", err)
	}
	if s := h.summary("w"); s.Status != StatusAwaitingDecision || s.Pending == nil || s.Pending.ParkID != out.Pending.ParkID {
		t.Errorf("parent after a refused decision: %s %+v", s.Status, s.Pending)
	}
	must(t, h.authored.Write(context.Background(), "workflows/review-item/workflow.yaml", []byte("states: [broken]\n")))
	_, err = h.engine().Decide(context.Background(), "w", Decision{To: "accepted", ParkID: out.Pending.ParkID})
	var load *spec.WorkflowLoadError
	if !errors.As(err, &load) || h.summary("w").Status != StatusAwaitingDecision {
		t.Errorf("a broken child spec: %v, parent %s", err, h.summary("w").Status)
	}
}

// The calling state removed from the parent's spec while parked: the decision still routes
// to the child and the parent goes on where an edited park continues (no panic).
func TestDelegatedDecisionWhenTheCallingStateIsGone(t *testing.T) {
	h := delegateHarness(t)
	h.script(calls("", delegateCall("review-item", map[string]any{"item": "A"})), says("With a reviewer."))
	h.child("g~1", calls("", advance("approve", "ready")), says("Handed over."))
	out := h.send("g", "go", nil)
	must(t, h.authored.Write(context.Background(), "workflows/wf/workflow.yaml", []byte(strings.ReplaceAll(delegateFlow, "  intake:\n", "  intake2:\n"))))
	h.child("g~1", says("Accepted."))
	h.queue(says("Accepted by the reviewer."))
	out2, err := h.engine().Decide(context.Background(), "g", Decision{To: "accepted", ParkID: out.Pending.ParkID})
	must(t, err)
	if out2.Kind != KindCompleted || out2.State != "intake2" {
		t.Errorf("%s in %s", out2.Kind, out2.State)
	}
}

// An argument guard judges the resolved value: a forbidden value cannot reach the child
// through a ${{ }} reference (02 §8.1: references resolve before governance).
func TestDelegationArgumentGuardSeesResolvedValues(t *testing.T) {
	flow := strings.Replace(delegateFlow, "      allow: [archmax_workflow_check-item,",
		"      forbid: [{ tool: archmax_workflow_check-item, args: { item: 'internal-*' } }]\n      allow: [archmax_workflow_check-item,", 1)
	h := delegateHarness(t)
	must(t, h.authored.Write(context.Background(), "workflows/wf/workflow.yaml", []byte(flow)))
	h.script(calls("", delegateCall("check-item", map[string]any{"item": "internal-42", "qty": 1})),
		calls("", delegateCall("check-item", map[string]any{"item": "${{code}}", "qty": 1})), says("done"))
	out := h.send("gb", "go", map[string]any{"code": "internal-42"})
	for i := 0; i < 2; i++ {
		if m := toolMessage(t, out, "archmax_workflow_check-item", i); !m.Blocked {
			t.Errorf("call %d ran: %q", i, m.Text)
		}
	}
}

// A failure and a success of one model message: the success never recovers its sibling,
// whether or not a continuation splits their answers.
func TestSiblingNeverRecoversAFailureAcrossAContinuation(t *testing.T) {
	flow := strings.Replace(delegateFlow, "    instructions: Check the order.\n", "    instructions: Check the order.\n    on_error: done\n", 1)
	run := func(t *testing.T, cut bool) string {
		h := delegateHarness(t)
		must(t, h.authored.Write(context.Background(), "workflows/wf/workflow.yaml", []byte(flow)))
		h.script(calls("", delegateCall("check-item", map[string]any{"item": "A", "qty": 1}), delegateCall("check-item", map[string]any{"item": "B", "qty": 1})))
		h.child("sr~1", calls("", call{"archmax_raise", map[string]any{"code": "busy", "reason": "catalogue busy"}}))
		if cut {
			h.child("sr~2", failing("ServiceUnavailableException"))
		}
		h.child("sr~2", says("fine"))
		h.queue(says("One failed."), says("Sorry."))
		out, err := h.engine().Send(context.Background(), "sr", SendInput{Message: "go"})
		if cut {
			if err == nil {
				t.Fatal("no cut")
			}
			out, _, err = h.engine().Continue(context.Background(), "sr", "")
		}
		must(t, err)
		return trailOf(out)
	}
	if a, b := run(t, false), run(t, true); a != b || !strings.HasSuffix(a, "on_error:done") {
		t.Errorf("uncut %s, cut %s", a, b)
	}
}

// ctxModel holds one child's model call until its call is cancelled, as Bedrock's client
// gives up on a cancelled call; the other children's calls wait until that one has begun.
type ctxModel struct {
	*queueModel
	held    string // the archmax.session value whose call is held
	started chan struct{}
}

func (m ctxModel) Converse(ctx context.Context, req *model.Request) (*model.Response, error) {
	switch sid := req.Metadata["archmax.session"]; {
	case sid == m.held:
		close(m.started)
		<-ctx.Done()
		return nil, ctx.Err()
	case strings.Contains(sid, "/"):
		<-m.started
	}
	return m.queueModel.Converse(ctx, req)
}

// A script that does not wait for its delegation: the child is cancelled when the script
// ends and is settled rejected — never left running with nothing to carry it on — and the
// dispatch is settled in the parent (result event, trail step).
func TestAScriptsAbandonedChildIsSettled(t *testing.T) {
	h := delegateHarness(t)
	// an un-awaited call keeps the script's event loop alive until its timeoutMs (real time:
	// the sandbox's own budget), which must outlast B's child — by far, on any machine
	must(t, h.authored.Write(context.Background(), "workflows/wf/workflow.yaml", []byte("settings:\n  timeoutMs: 2000\n"+delegateFlow)))
	h.cfg.Model = ctxModel{queueModel: h.model, held: "sa/1", started: make(chan struct{})}
	script := `tools["archmax_workflow_check-item"]({ item: "A", qty: 1 }).catch(() => {});
await tools["archmax_workflow_check-item"]({ item: "B", qty: 1 });
"left A running"`
	h.script(calls("", call{"archmax_eval", map[string]any{"code": script}}), says("ok"))
	h.child("sa~2", says("fine"))
	out := h.send("sa", "go", nil)
	if s := h.summary("sa~1"); s.Status != StatusRejected || s.Rejected != childAbandoned {
		t.Errorf("child %s %q", s.Status, s.Rejected)
	}
	var statuses []string
	for _, e := range h.eventsOf(events.SubWorkflowResult) {
		statuses = append(statuses, e.Str("childSessionId")+":"+e.Str("status"))
	}
	slices.Sort(statuses)
	if strings.Join(statuses, " ") != "sa~1:error sa~2:ok" || strings.Count(trailOf(out), "sub-workflow:intake") != 2 {
		t.Errorf("results %v, trail %s", statuses, trailOf(out))
	}
}

// The request's acceptance hook fires once, for the caller's session — never for its
// children (their commits run under the same context).
func TestTurnOpenedIsTheCallersOnly(t *testing.T) {
	h := delegateHarness(t)
	h.script(calls("", delegateCall("check-item", map[string]any{"item": "A", "qty": 1}), delegateCall("check-item", map[string]any{"item": "B", "qty": 1})), says("ok"))
	h.child("to~1", says("a"))
	h.child("to~2", says("b"))
	var mu sync.Mutex
	var got []string
	ctx := WithTurnOpened(context.Background(), func(sid, _ string) { mu.Lock(); got = append(got, sid); mu.Unlock() })
	_, err := h.engine().Send(ctx, "to", SendInput{Message: "go"})
	must(t, err)
	if strings.Join(got, ",") != "to" {
		t.Errorf("reported %v", got)
	}
}

// Past the step deadline a continuation drives one child (its progress) and leaves the
// others for the next invocation, rather than each taking a step after the deadline.
func TestChildrenWaitingForASlotDoNotStepPastTheDeadline(t *testing.T) {
	h := delegateHarness(t)
	h.cfg.MaxConcurrentDelegations = 1
	var now atomic.Int64
	now.Store(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC).UnixMilli())
	h.cfg.Clock = func() time.Time { return time.UnixMilli(now.Load()) }
	deadline := time.UnixMilli(now.Load()).Add(30 * time.Second)
	var past atomic.Int32
	h.model.hook = func(req *model.Request) {
		if !time.UnixMilli(now.Load()).Before(deadline) && strings.Contains(req.Metadata["archmax.session"], "/") {
			past.Add(1)
		}
	}
	h.script(func(req *model.Request) (*model.Response, error) {
		now.Add(int64(time.Minute / time.Millisecond)) // the parent's call crosses the deadline
		return calls("", delegateCall("check-item", map[string]any{"item": "A", "qty": 1}),
			delegateCall("check-item", map[string]any{"item": "B", "qty": 1}), delegateCall("check-item", map[string]any{"item": "C", "qty": 1}))(req)
	})
	for _, id := range []string{"wv~1", "wv~2", "wv~3"} {
		h.child(id, says("fine"))
	}
	ctx := WithStepDeadline(context.Background(), deadline)
	out, err := h.engine().Send(ctx, "wv", SendInput{Message: "go"})
	must(t, err)
	if out.Kind != KindRunning {
		t.Fatalf("%s", out.Kind)
	}
	past.Store(0)
	out, _, err = h.engine().Continue(ctx, "wv", out.TurnID)
	must(t, err)
	// one child is driven (a fresh one only commits its opening, a started one takes its one
	// step), the others wait: at most one model call past the deadline
	if out.Kind != KindRunning || past.Load() > 1 {
		t.Errorf("continuation %s with %d child steps past the deadline, want running and at most 1", out.Kind, past.Load())
	}
	h.queue(says("All three fine."))
	for out.Kind == KindRunning {
		out, _, err = h.engine().Continue(context.Background(), "wv", out.TurnID)
		must(t, err)
	}
	if out.Kind != KindCompleted || strings.Count(trailOf(out), "sub-workflow") != 3 {
		t.Errorf("%s %s", out.Kind, trailOf(out))
	}
}

// 02 §12.1: seq increases strictly across one handler, the children's events included.
func TestSeqIncreasesAcrossChildren(t *testing.T) {
	h := delegateHarness(t)
	h.script(calls("", delegateCall("check-item", map[string]any{"item": "A", "qty": 1}), delegateCall("check-item", map[string]any{"item": "B", "qty": 1})), says("ok"))
	h.child("sq~1", says("fine"))
	h.child("sq~2", says("fine"))
	h.send("sq", "go", nil)
	var last uint64
	for _, e := range h.events {
		if e.Seq <= last {
			t.Fatalf("seq %d (%s of %s) after %d", e.Seq, e.Type, e.SessionID, last)
		}
		last = e.Seq
	}
}

// A park presented through two levels (root → mid → review-item's human state): the root's
// delegation names mid and, inside it, the child that holds the decision; the decision sent
// to the root reaches it; a write to the grandchild names the root to address.
func TestNestedDelegatedParkIsDecidedThroughTheRoot(t *testing.T) {
	h := delegateHarness(t)
	mid := "states:\n  relay:\n    triggers:\n      manual:\n    instructions: Relay.\n    tools:\n      allow: [archmax_workflow_review-item]\n"
	must(t, h.authored.Write(context.Background(), "workflows/mid/workflow.yaml", []byte(mid)))
	must(t, h.authored.Write(context.Background(), "workflows/wf/workflow.yaml", []byte(strings.Replace(delegateFlow, "archmax_workflow_wf,", "archmax_workflow_wf, archmax_workflow_mid,", 1))))
	h.script(calls("", delegateCall("mid", nil)), says("With a reviewer, two levels down."))
	h.child("nr~1", calls("", delegateCall("review-item", map[string]any{"item": "A"})), says("Waiting on review."))
	h.child("nr~1~1", calls("", advance("approve", "ready")), says("Handed over."))
	out := h.send("nr", "go", nil)
	dp := out.Delegation
	if out.Kind != KindParked || dp == nil || dp.SessionID != "nr~1" || dp.Inner == nil || dp.Inner.SessionID != "nr~1~1" || out.Pending.Decision.State != "approve" {
		t.Fatalf("%s %+v", out.Kind, dp)
	}
	if m := toolMessage(t, out, "archmax_workflow_mid", 0); !strings.Contains(m.Text, "stopped for a person at 'approve'") {
		t.Errorf("answer %q", m.Text)
	}
	_, err := h.engine().Decide(context.Background(), "nr~1~1", Decision{To: "accepted"})
	var child *ChildSessionError
	if !errors.As(err, &child) || child.RootID != "nr" || !strings.Contains(err.Error(), "Address 'nr' instead") {
		t.Errorf("a decision on the grandchild: %v", err)
	}
	h.child("nr~1~1", says("Accepted."))
	h.child("nr~1", says("Review accepted."))
	h.queue(says("All accepted."))
	out2, err := h.engine().Decide(context.Background(), "nr", Decision{To: "accepted", ParkID: out.Pending.ParkID})
	must(t, err)
	if out2.Kind != KindCompleted || h.summary("nr~1").Status != StatusCompleted || h.summary("nr~1~1").Status != StatusCompleted {
		t.Errorf("%s; mid %s, grandchild %s", out2.Kind, h.summary("nr~1").Status, h.summary("nr~1~1").Status)
	}
}

// A refused dispatch creates no child: its events carry no child id.
func TestRefusedDispatchEventsNameNoChild(t *testing.T) {
	h := delegateHarness(t)
	h.script(calls("", delegateCall("off", nil)), says("Could not."))
	h.send("rf", "go", nil)
	for _, e := range append(h.eventsOf(events.SubWorkflowStart), h.eventsOf(events.SubWorkflowResult)...) {
		if _, ok := e.Data["childSessionId"]; ok {
			t.Errorf("%s names a child: %v", e.Type, e.Data)
		}
	}
}

// The position removed from the spec while a turn was interrupted: the continuation goes on
// where an edited park does (no panic), and a batch whose state is gone is closed.
func TestContinueWhenTheStateIsGone(t *testing.T) {
	h := delegateHarness(t)
	h.script(calls("", delegateCall("check-item", map[string]any{"item": "A", "qty": 1})))
	h.child("sg~1", failing("ServiceUnavailableException"))
	if _, err := h.engine().Send(context.Background(), "sg", SendInput{Message: "go"}); err == nil {
		t.Fatal("expected the child's failure")
	}
	must(t, h.authored.Write(context.Background(), "workflows/wf/workflow.yaml", []byte(strings.ReplaceAll(delegateFlow, "  intake:\n", "  intake2:\n"))))
	h.queue(says("Starting over here."))
	out, _, err := h.engine().Continue(context.Background(), "sg", "")
	must(t, err)
	if out.Kind != KindCompleted || out.State != "intake2" {
		t.Errorf("%s in %s", out.Kind, out.State)
	}
	if m := toolMessage(t, out, "archmax_workflow_check-item", 0); !strings.Contains(m.Text, "abandoned") {
		t.Errorf("the open call: %q", m.Text)
	}
	if s := h.summary("sg~1"); s.Status != StatusRejected {
		t.Errorf("the child is %s", s.Status)
	}
}

// A script's child stopped by a transient failure cannot be carried on by the script: it is
// settled rejected, and the call fails with the cause.
func TestAScriptsFailedChildIsSettled(t *testing.T) {
	h := delegateHarness(t)
	script := `await tools["archmax_workflow_check-item"]({ item: "A", qty: 1 }).then(() => "ran", (e) => String(e.message || e))`
	h.script(calls("", call{"archmax_eval", map[string]any{"code": script}}), says("It failed."))
	h.child("sf~1", failing("ServiceUnavailableException"))
	out := h.send("sf", "go", nil)
	if res := toolMessage(t, out, "archmax_eval", 0).Text; !strings.Contains(res, "Sub-workflow 'check-item' failed: ") || !strings.Contains(res, "ServiceUnavailableException") {
		t.Errorf("script saw %q", res)
	}
	if s := h.summary("sf~1"); s.Status != StatusRejected || s.Rejected != childAbandoned {
		t.Errorf("child %s %q", s.Status, s.Rejected)
	}
}

// A file delivered to a park presented through two levels lands with the sub-workflow that
// waits for it.
func TestNestedDeliveryFilesReachTheWaitingChild(t *testing.T) {
	h := newHarness(t, chainFlow("mid"), map[string]string{
		"workflows/mid/workflow.yaml":   chainFlow("stock"),
		"workflows/stock/workflow.yaml": waitChildFlow,
	})
	h.model.bySession = map[string][]reply{}
	h.script(calls("", delegateCall("mid", nil)), says("Waiting two levels down."))
	h.child("nd~1", calls("", delegateCall("stock", nil)), says("Waiting."))
	h.child("nd~1~1", calls("", call{"archmax_wait", map[string]any{"reason": "the stock report"}}), says("Waiting for the report."))
	h.send("nd", "go", nil)
	h.child("nd~1~1", calls("", call{"read_file", map[string]any{"file_path": "${{report}}"}}), says("Read it."))
	h.child("nd~1", says("Stock read."))
	h.queue(says("Done."))
	_, err := h.engine().Deliver(context.Background(), "nd", Delivery{Trigger: "report", Files: map[string]TurnFile{"report": {Name: "r.txt", Content: []byte("12 in stock")}}})
	must(t, err)
	for _, m := range h.transcriptOf("nd~1~1") {
		if m.Tool == "read_file" && m.Role == "tool" {
			if !strings.Contains(m.Text, "12 in stock") {
				t.Errorf("the waiting child read %q", m.Text)
			}
			return
		}
	}
	t.Error("no read_file answer in the waiting child")
}
