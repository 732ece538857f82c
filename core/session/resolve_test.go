package session

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/core/events"
	"github.com/archmax-ai/archmax/core/spec"
)

const resolveFlow = `
states:
  intake:
    triggers:
      manual:
      order:
        session: order.id
    instructions: Take the request.
    transitions:
      - to: review
        description: Ready for review.
  review:
    type: human
    transitions:
      - to: intake
        description: Again.
  watch:
    triggers:
      parcel:
    instructions: Watch the parcel.
`

// 02 §4.5: ResolveSession picks the id (explicit, path, minted) and classifies the firing
// from the checkpoint without running anything.
func TestResolveSession(t *testing.T) {
	h := newHarness(t, resolveFlow, nil)
	h.script(calls("", advance("review", "ready")), says("Handed over."))
	h.send("parked-decision", "go", nil)
	h.script(calls("", call{"archmax_wait", map[string]any{"reason": "scan"}}), says("Waiting."))
	h.send("parked-input", "go", nil)
	h.script(says("Nothing to do."))
	h.cfg.Workflow = "wf"
	e := h.engine()
	ctx := context.Background()
	before := len(h.model.requests)

	for _, c := range []struct {
		name string
		in   ResolveInput
		want ResolvedSession
	}{
		{"explicit id, awaiting a decision", ResolveInput{SessionID: " parked-decision "}, ResolvedSession{SessionID: "parked-decision", Disposition: ResolveReply, State: "review"}},
		{"explicit id, awaiting input", ResolveInput{SessionID: "parked-input", Trigger: "courier"}, ResolvedSession{SessionID: "parked-input", Disposition: ResolveResume, State: "intake"}},
		{"explicit id, no checkpoint", ResolveInput{SessionID: "fresh", Trigger: "parcel"}, ResolvedSession{SessionID: "fresh", Disposition: ResolveTurn, StartState: "watch"}},
		{"the trigger's session path", ResolveInput{Trigger: "order", Variables: map[string]any{"order": map[string]any{"id": "o-17"}}}, ResolvedSession{SessionID: "o-17", Disposition: ResolveTurn, StartState: "intake"}},
		{"a per-firing path wins over the trigger's", ResolveInput{Trigger: "order", SessionPath: "ref", Variables: map[string]any{"ref": "parked-input", "order": map[string]any{"id": "o-17"}}}, ResolvedSession{SessionID: "parked-input", Disposition: ResolveResume, State: "intake"}},
	} {
		got, err := e.ResolveSession(ctx, c.in)
		if err != nil || *got != c.want {
			t.Errorf("%s: %+v, %v; want %+v", c.name, got, err, c.want)
		}
	}
	minted, err := e.ResolveSession(ctx, ResolveInput{})
	if err != nil || !minted.Native || !strings.HasPrefix(minted.SessionID, "session-") || minted.Disposition != ResolveTurn || minted.StartState != "intake" {
		t.Errorf("minted: %+v %v", minted, err)
	}
	// an unresolved path mints (no fall-through) and warns
	got, err := e.ResolveSession(ctx, ResolveInput{Trigger: "order", Variables: map[string]any{"order": map[string]any{}}})
	if err != nil || !got.Native {
		t.Fatalf("unresolved path: %+v %v", got, err)
	}
	if w := h.eventsOf(events.Warning); len(w) == 0 || !strings.Contains(w[len(w)-1].Str("message"), "session path 'order.id' did not resolve") {
		t.Errorf("warning events = %+v", w)
	}
	var unknown *UnknownSessionTriggerError
	if _, err := e.ResolveSession(ctx, ResolveInput{Trigger: "nobody-declares-me"}); !errors.As(err, &unknown) || !strings.HasPrefix(err.Error(), "No state declares trigger 'nobody-declares-me', and no parked session") {
		t.Errorf("undeclared trigger: %v", err)
	}
	// a parked session takes any trigger: only an opening needs a declared one
	if got, err := e.ResolveSession(ctx, ResolveInput{SessionID: "parked-input", Trigger: "nobody-declares-me"}); err != nil || got.Disposition != ResolveResume {
		t.Errorf("undeclared trigger to a parked session: %+v %v", got, err)
	}
	var badPath *spec.InvalidSessionPathError
	if _, err := e.ResolveSession(ctx, ResolveInput{SessionPath: "a..b"}); !errors.As(err, &badPath) {
		t.Errorf("malformed path: %v", err)
	}
	var badID *spec.SessionStoreIdError
	if _, err := e.ResolveSession(ctx, ResolveInput{SessionID: ".."}); !errors.As(err, &badID) {
		t.Errorf("bad id: %v", err)
	}
	if len(h.model.requests) != before {
		t.Errorf("ResolveSession called the model")
	}
}

// 02 §4.5: a finished session reopens at its retained position, whatever the trigger.
func TestResolveFinishedSession(t *testing.T) {
	h := newHarness(t, resolveFlow, nil)
	h.script(says("Watched."))
	out, err := h.engine().Send(context.Background(), "done", SendInput{Message: "watch it", Trigger: "parcel"})
	if err != nil || out.Status != StatusCompleted || out.State != "watch" {
		t.Fatalf("setup: %v %+v", err, out)
	}
	got, err := h.engine().ResolveSession(context.Background(), ResolveInput{SessionID: "done", Trigger: "undeclared"})
	if err != nil || got.Disposition != ResolveTurn || got.StartState != "watch" || got.Native {
		t.Errorf("finished: %+v %v", got, err)
	}
}
