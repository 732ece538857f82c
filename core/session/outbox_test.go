package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/archmax-ai/archmax/core/events"
	"github.com/archmax-ai/archmax/core/internal/schematest"
	"github.com/archmax-ai/archmax/core/outbound"
	"github.com/archmax-ai/archmax/core/store"
)

// sinkFake records what is published, and fails while failing is set.
type sinkFake struct {
	t       *testing.T
	schema  *jsonschema.Schema
	mu      sync.Mutex
	got     []outbound.Notification
	failing bool
}

func (s *sinkFake) Publish(_ context.Context, ns []outbound.Notification) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failing {
		return errors.New("bus unavailable")
	}
	for _, n := range ns { // every notification is one the documented schema takes
		var detail any
		if err := json.Unmarshal(n.Detail, &detail); err != nil {
			s.t.Errorf("detail of %s: %v", n.EventID, err)
		}
		ev := map[string]any{"source": outbound.Source, "detail-type": n.DetailType, "detail": detail}
		if err := s.schema.Validate(ev); err != nil {
			s.t.Errorf("%s %s does not conform to session-events.schema.json: %v\n%s", n.DetailType, n.EventID, err, n.Detail)
		}
	}
	s.got = append(s.got, ns...)
	return nil
}

func newSink(t *testing.T) *sinkFake {
	sch, _ := schematest.Compile(t, "../../docs/schema/session-events.schema.json")
	return &sinkFake{t: t, schema: sch}
}

func (s *sinkFake) types() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var t []string
	for _, n := range s.got {
		t = append(t, n.DetailType)
	}
	return strings.Join(t, ",")
}

func outDetail(t *testing.T, n outbound.Notification) map[string]any {
	t.Helper()
	var d map[string]any
	must(t, json.Unmarshal(n.Detail, &d))
	return d
}

// One Session Parked per park, with the park's targets, evidence and the session's API path;
// the decision's settle is a Session Completed; the record owes nothing afterwards.
func TestOutboxParkAndComplete(t *testing.T) {
	h := newHarness(t, reviewFlow, nil)
	sink := newSink(t)
	var logBuf bytes.Buffer
	h.cfg.Outbound = &outbound.Config{Sink: sink}
	h.cfg.EventLog = &events.Log{Logger: slog.New(slog.NewJSONHandler(&logBuf, nil)), Info: true, Warn: true}
	h.script(
		calls("", call{"archmax_advance", map[string]any{"to": "review", "reason": "ready", "evidence": []any{"scratchpad/notes.md"}}}),
		says("Over to finance."),
	)
	out := h.send("s1", "write the report", nil)
	if got := sink.types(); got != outbound.SessionParked {
		t.Fatalf("published %s", got)
	}
	d := outDetail(t, sink.got[0])
	parked := h.eventsOf(events.Parked)[0]
	wantID := "s1:" + itoa(parked.SessionSeq)
	if sink.got[0].EventID != wantID || d["eventId"] != wantID || d["parkId"] != out.Pending.ParkID || d["state"] != "review" ||
		d["apiPath"] != "/v1/sessions/s1" || d["status"] != "awaiting_decision" || d["workflow"] != "wf" || d["stateTitle"] != "Finance sign-off" {
		t.Errorf("detail = %v", d)
	}
	if tg, _ := json.Marshal(d["targets"]); string(tg) != `[{"description":"Approved.","to":"publish","type":"approve"},{"description":"Needs another pass.","to":"draft","type":"refine"}]` {
		t.Errorf("targets = %s", tg)
	}
	if ev, _ := json.Marshal(d["evidence"]); string(ev) != `["scratchpad/draft.md","scratchpad/notes.md"]` {
		t.Errorf("evidence = %s", ev)
	}
	h.assertOwesNothing("s1")

	h.script(says("Published."))
	if _, err := h.engine().Decide(context.Background(), "s1", Decision{To: "publish"}); err != nil {
		t.Fatal(err)
	}
	if got := sink.types(); got != outbound.SessionParked+","+outbound.SessionCompleted {
		t.Fatalf("published %s", got)
	}
	if c := outDetail(t, sink.got[1]); c["status"] != "completed" || c["state"] != "publish" || c["turnId"] == "" {
		t.Errorf("completed detail = %v", c)
	}
	h.assertOwesNothing("s1")
	// lifecycle events are logged with the session, turn and state
	if s := logBuf.String(); !strings.Contains(s, `"msg":"parked"`) || !strings.Contains(s, `"sessionId":"s1"`) || !strings.Contains(s, `"state":"review"`) || !strings.Contains(s, `"turnId":`) {
		t.Errorf("log = %s", s)
	}
}

// A failing sink never fails the turn: the notifications stay owed in the record (and the
// hint); the next writer of the session publishes them first, and the sweep publishes
// those of an idle session.
func TestOutboxFailingSinkThenSweep(t *testing.T) {
	h := newHarness(t, reviewFlow, nil)
	sink := newSink(t)
	sink.failing = true
	h.cfg.Outbound = &outbound.Config{Sink: sink, Logger: slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))}
	h.script(calls("", call{"archmax_advance", map[string]any{"to": "review", "reason": "ready"}}), says("Over to finance."))
	out := h.send("s1", "write the report", nil)
	if out.Status != StatusAwaitingDecision || sink.types() != "" || h.cfg.Outbound.Failures() == 0 {
		t.Fatalf("status %s, published %q, failures %d", out.Status, sink.types(), h.cfg.Outbound.Failures())
	}
	if rec := h.record("s1"); len(rec.Outbox) != 1 || rec.Outbox[0].DetailType != outbound.SessionParked {
		t.Fatalf("owed = %+v", rec.Outbox)
	}
	// still failing: the sweep leaves it owed
	n, _ := SweepOutbox(context.Background(), h.files, h.engineFor, 0)
	if n != 0 || len(h.record("s1").Outbox) != 1 {
		t.Fatalf("swept %d while failing", n)
	}
	sink.failing = false
	n, err := SweepOutbox(context.Background(), h.files, h.engineFor, 0)
	if err != nil || n != 1 || sink.types() != outbound.SessionParked || sink.got[0].EventID != "s1:"+itoa(h.eventsOf(events.Parked)[0].SessionSeq) {
		t.Fatalf("sweep %d, %v; published %s", n, err, sink.types())
	}
	h.assertOwesNothing("s1")
	if n, _ := SweepOutbox(context.Background(), h.files, h.engineFor, 0); n != 0 || sink.types() != outbound.SessionParked {
		t.Errorf("a second sweep published again: %d, %s", n, sink.types())
	}
}

// Raised and failed; Session Event publishes every stored event under its own sessionSeq.
func TestOutboxRaiseAndEveryEvent(t *testing.T) {
	h := newHarness(t, reviewFlow, nil)
	sink := newSink(t)
	h.cfg.Outbound = &outbound.Config{Sink: sink, Types: []string{outbound.SessionRaised, outbound.SessionFailed, outbound.SessionEvent}}
	h.script(calls("", call{"archmax_raise", map[string]any{"code": "blocked", "reason": "no data"}}))
	out := h.send("s1", "write the report", nil)
	if out.Status != StatusFailed {
		t.Fatalf("status %s", out.Status)
	}
	var named []string
	seen := map[string]bool{}
	stored, err := h.log.Events(context.Background(), "s1", 0, 1<<30)
	must(t, err)
	for _, n := range sink.got {
		if n.DetailType != outbound.SessionEvent {
			named = append(named, n.DetailType)
			continue
		}
		if seen[n.EventID] {
			t.Errorf("Session Event %s twice", n.EventID)
		}
		seen[n.EventID] = true
	}
	if strings.Join(named, ",") != outbound.SessionRaised+","+outbound.SessionFailed || len(seen) != len(stored) {
		t.Errorf("named %v; %d Session Events for %d stored events", named, len(seen), len(stored))
	}
	for _, n := range sink.got {
		if n.DetailType == outbound.SessionFailed {
			if d := outDetail(t, n); d["code"] != "blocked" || d["reason"] != "no data" {
				t.Errorf("failed detail = %v", d)
			}
		}
	}
}

func (h *harness) engineFor(context.Context, string) (*Engine, error) { return h.engine(), nil }

func (h *harness) record(id string) *record {
	h.t.Helper()
	head, err := h.log.Get(context.Background(), id)
	must(h.t, err)
	rec, err := decodeRecord(context.Background(), head.Body, nil, id, map[string]bool{})
	must(h.t, err)
	return rec
}

func (h *harness) assertOwesNothing(id string) {
	h.t.Helper()
	if rec := h.record(id); len(rec.Outbox) != 0 {
		h.t.Errorf("the record still owes %+v", rec.Outbox)
	}
	if _, err := h.files.Read(context.Background(), OutboxPrefix+id); !errors.Is(err, store.ErrNotFound) {
		h.t.Errorf("hint left: %v", err)
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// A rejected settle is a Session Rejected with the reason.
func TestOutboxRejected(t *testing.T) {
	wf := strings.Replace(codeFlow, "    on_error: explain\n", "", 1)
	h := newHarness(t, wf, map[string]string{"workflows/wf/scripts/screen.js": `console.log("thinking")`})
	sink := newSink(t)
	h.cfg.Outbound = &outbound.Config{Sink: sink}
	out := h.send("s1", "please", nil)
	if out.Kind != KindRejected || sink.types() != outbound.SessionRejected {
		t.Fatalf("%s: published %s", out.Kind, sink.types())
	}
	if d := outDetail(t, sink.got[0]); d["reason"] != out.Rejected || d["status"] != "rejected" {
		t.Errorf("detail = %v", d)
	}
}

// A sub-workflow's park is one Session Parked: the parent's, naming the child; the child
// itself notifies nothing, and the decision through the parent completes it.
func TestOutboxDelegatedPark(t *testing.T) {
	h := delegateHarness(t)
	sink := newSink(t)
	h.cfg.Outbound = &outbound.Config{Sink: sink}
	h.script(calls("", delegateCall("review-item", map[string]any{"item": "A"})), says("It is with a reviewer."))
	h.child("p~1", calls("", advance("approve", "ready")), says("Handed to a reviewer."))
	out := h.send("p", "review A", nil)
	if sink.types() != outbound.SessionParked || sink.got[0].EventID[:2] != "p:" {
		t.Fatalf("published %s (%v)", sink.types(), sink.got)
	}
	d := outDetail(t, sink.got[0])
	if del, _ := d["delegation"].(map[string]any); del["sessionId"] != "p~1" || del["workflow"] != "review-item" || d["parkId"] != out.Pending.ParkID {
		t.Errorf("detail = %v", d)
	}
	if tg, _ := d["targets"].([]any); len(tg) != 2 {
		t.Errorf("targets = %v", d["targets"])
	}
	h.child("p~1", says("Accepted."))
	h.script(says("The reviewer accepted it."))
	if _, err := h.engine().Decide(context.Background(), "p", Decision{To: "accepted", ParkID: out.Pending.ParkID}); err != nil {
		t.Fatal(err)
	}
	if sink.types() != outbound.SessionParked+","+outbound.SessionCompleted || sink.got[1].EventID[:2] != "p:" {
		t.Errorf("published %s", sink.types())
	}
}

// At the lowest cap, a long session id (JSON- and path-escaped: '<' is 6 bytes in JSON, 3 in
// the API path), a long reason and reply: every published detail keeps what the schema
// requires (the sink validates each), Session Event's event at most replaced by omitted.
func TestOutboxAtTheLowestCapWithALongSessionID(t *testing.T) {
	for _, reply := range []int{3000, 16000} { // the second's agent-text is over the cap
		h := newHarness(t, reviewFlow, nil)
		sink := newSink(t)
		h.cfg.Outbound = &outbound.Config{Sink: sink, Types: []string{outbound.SessionEvent, outbound.SessionParked}, MaxDetailBytes: outbound.MinDetailBytes}
		id := strings.Repeat("<a", 200)
		h.script(
			calls("", call{"archmax_advance", map[string]any{"to": "review", "reason": strings.Repeat("r", 1500)}}),
			says(strings.Repeat("Over to finance. ", reply/17+1)),
		)
		out := h.send(id, "write the report", nil)
		if out.Status != StatusAwaitingDecision {
			t.Fatalf("status %s", out.Status)
		}
		parked, eventOmitted := 0, false
		for _, n := range sink.got {
			if len(n.Detail) > outbound.MinDetailBytes {
				t.Errorf("%s %d bytes", n.DetailType, len(n.Detail))
			}
			d := outDetail(t, n)
			if n.DetailType == outbound.SessionParked {
				parked++
				if d["parkId"] != out.Pending.ParkID || d["sessionId"] != id || d["state"] != "review" {
					t.Errorf("parked detail = %v", d)
				}
			}
			if o, _ := json.Marshal(d["omitted"]); strings.Contains(string(o), `"event"`) {
				eventOmitted = true
			}
		}
		if parked != 1 || len(sink.got) < 3 || eventOmitted != (reply > outbound.MinDetailBytes) {
			t.Errorf("reply of %d: published %s, event omitted %v", reply, sink.types(), eventOmitted)
		}
	}
}
