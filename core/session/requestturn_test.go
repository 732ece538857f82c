package session

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/store"
	"github.com/archmax-ai/archmax/core/store/storetest"
)

// Issue 18: a request names its turn (WithTurnID), so its repeat — after a crash, a lapsed
// claim or a lost record of the host's — is recognised under the lease and opens nothing.
func TestARequestTurnIsRecognisedWhenRepeated(t *testing.T) {
	h := newHarness(t, reviewFlow, nil)
	ctx := WithTurnID(context.Background(), TurnIDFor("request-1"))
	h.script(calls("", advance("review", "ready")), says("Handed over."))
	out, err := h.engine().Send(ctx, "s1", SendInput{Message: "write the report"})
	if err != nil || out.Kind != KindParked || out.TurnID != TurnIDFor("request-1") {
		t.Fatalf("first: %v %+v", err, out)
	}
	head, _ := h.log.Get(context.Background(), "s1")

	// the repeat: the outcome the turn settled with, nothing written, the model not asked
	again, err := h.engine().Send(ctx, "s1", SendInput{Message: "write the report"})
	if err != nil || again.Kind != KindParked || again.TurnID != out.TurnID || again.Reply != "Handed over." ||
		again.Pending == nil || again.Pending.ParkID != out.Pending.ParkID || again.Turn != out.Turn {
		t.Fatalf("repeat: %v %+v", err, again)
	}
	if now, _ := h.log.Get(context.Background(), "s1"); now.Version != head.Version {
		t.Errorf("the repeat wrote: version %d → %d", head.Version, now.Version)
	}

	// a decision under its own request id, and its repeat — the decision is not applied twice
	dctx := WithTurnID(context.Background(), TurnIDFor("decision-1"))
	h.script(says("Published."))
	dec, err := h.engine().Decide(dctx, "s1", Decision{To: "publish"})
	if err != nil || dec.Kind != KindCompleted || dec.Disposition != DispositionDecide {
		t.Fatalf("decide: %v %+v", err, dec)
	}
	if again, err := h.engine().Decide(dctx, "s1", Decision{To: "publish"}); err != nil || again.Kind != KindCompleted || again.TurnID != dec.TurnID || again.Disposition != DispositionDecide {
		t.Errorf("the decision's repeat: %v %+v, want its outcome", err, again)
	}

	// the first request's repeat now: applied once, the session has moved on
	var sup *TurnSupersededError
	if _, err := h.engine().Send(ctx, "s1", SendInput{Message: "write the report"}); !errors.As(err, &sup) ||
		sup.TurnID != out.TurnID || sup.CurrentTurnID != dec.TurnID {
		t.Errorf("a superseded request's repeat: %v", err)
	}
	if ok, err := NewSessions(h.log, nil, nil).TurnApplied(context.Background(), "s1", out.TurnID); err != nil || !ok {
		t.Errorf("TurnApplied of the first request: %v %v", ok, err)
	}
	if ok, _ := NewSessions(h.log, nil, nil).TurnApplied(context.Background(), "s1", TurnIDFor("never")); ok {
		t.Error("TurnApplied of a request never made")
	}
}

// A request whose process died after its turn opened: the repeat carries the interrupted
// turn on (as Continue would) instead of opening another, and a guard that would now refuse
// the caller (the session moved past what it may see) does not refuse its own request.
func TestARepeatCarriesAnInterruptedRequestTurnOn(t *testing.T) {
	h := newHarness(t, reviewFlow, nil)
	now := time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC)
	h.log.Clock = func() time.Time { return now }
	h.cfg.Clock = func() time.Time { return now }
	ctx := WithTurnID(context.Background(), TurnIDFor("request-2"))
	// the process dies at its third write: Acquire, the opening commit, then the next commit
	dying := storetest.NewCrashLog(h.log, 3, false)
	cfg := h.cfg
	cfg.Log = dying
	eng, err := New(cfg)
	must(t, err)
	h.script(calls("", advance("review", "ready")))
	if _, err := eng.Send(ctx, "s2", SendInput{Message: "write the report"}); !errors.Is(err, storetest.ErrKilled) {
		t.Fatalf("the dying call: %v", err)
	}
	now = now.Add(DefaultLeaseTTL + time.Second)
	refuse := func(SessionAccess) error { return errors.New("refused") }
	h.script(calls("", advance("review", "ready")), says("Handed over."))
	out, err := h.engine().Send(WithGuard(ctx, refuse), "s2", SendInput{Message: "write the report"})
	if err != nil || out.Kind != KindParked || out.TurnID != TurnIDFor("request-2") {
		t.Fatalf("the repeat: %v %+v", err, out)
	}
	people := 0
	for _, m := range out.Messages {
		if m.Role == "user" {
			people++
		}
	}
	if people != 1 || out.Turn != 1 {
		t.Errorf("the repeat opened a second turn: %d person messages, call %d", people, out.Turn)
	}
	// a request the session never saw is still guarded
	if _, err := h.engine().Send(WithGuard(WithTurnID(context.Background(), TurnIDFor("other")), refuse), "s2", SendInput{Message: "x"}); err == nil || err.Error() != "refused" {
		t.Errorf("another request past a refusing guard: %v", err)
	}
	if _, err := h.log.Get(context.Background(), "s2"); errors.Is(err, store.ErrNotFound) {
		t.Fatal("no session")
	}
}
