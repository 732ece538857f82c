package conversefake_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/events"
	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/model/bedrock"
	"github.com/archmax-ai/archmax/core/model/scripted"
	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/store/memory"
	"github.com/archmax-ai/archmax/core/transcript"
	"github.com/archmax-ai/archmax/local/conversefake"
)

// The acceptance test of streamed model calls: a three-step turn (write a note, read it
// back, answer) through the engine, the real Bedrock client and the fake's ConverseStream.

const noteDesk = `
title: Note desk
states:
  desk:
    instructions: Write the note, read it back, then say what it says.
    triggers:
      manual:
`

const noteContent = "été ✓ — hello from the desk"

const noteScript = `
agent:
  - text: "I will write the note first."
    toolCalls: [{name: write_file, id: tu-write, input: {file_path: scratchpad/note.md, content: "` + noteContent + `"}}]
    usage: {inputTokens: 100, outputTokens: 20, cacheReadInputTokens: 30, cacheWriteInputTokens: 5}
  - text: "Now I read it back."
    toolCalls: [{name: read_file, id: tu-read, input: {file_path: scratchpad/note.md, offset: 1, limit: 40}}]
    usage: {inputTokens: 140, outputTokens: 15, cacheReadInputTokens: 30}
  - text: "The note says hello from the desk."
    usage: {inputTokens: 180, outputTokens: 9, cacheReadInputTokens: 30}
`

type desk struct {
	engine *session.Engine
	fake   *conversefake.Server
	log    *memory.Store
	files  *memory.Files
}

func newDesk(t *testing.T, script string, streaming bool, opts ...conversefake.Option) *desk {
	t.Helper()
	ctx := context.Background()
	s, err := scripted.Parse("note.model.yaml", []byte(script))
	if err != nil {
		t.Fatal(err)
	}
	fake := conversefake.New(s, opts...)
	hs := httptest.NewServer(fake)
	t.Cleanup(hs.Close)
	mdl, err := bedrock.New(ctx, bedrock.Config{Region: "us-east-1", Endpoint: hs.URL, AccessKeyID: "local", SecretAccessKey: "local",
		MaxAttempts: 2, MaxBackoff: time.Millisecond, NoStreaming: !streaming})
	if err != nil {
		t.Fatal(err)
	}
	authored := memory.NewFiles()
	if err := authored.Write(ctx, "workflows/notes/workflow.yaml", []byte(noteDesk)); err != nil {
		t.Fatal(err)
	}
	d := &desk{fake: fake, log: memory.New(), files: memory.NewFiles()}
	d.engine, err = session.New(session.Config{Workflow: "notes", Authored: authored, Log: d.log, Files: d.files, Model: mdl, ModelID: "test-model"})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// stored is the session's stored transcript.
func (d *desk) stored(t *testing.T, id string) []transcript.Message {
	t.Helper()
	msgs, _, err := session.NewSessions(d.log, d.files, nil).Messages(context.Background(), id, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

// checkHistory asserts that the stored history is one Bedrock accepts: the request the
// next call would carry passes the request rules.
func checkHistory(t *testing.T, msgs []transcript.Message) {
	t.Helper()
	req := &model.Request{ModelID: "test-model", Messages: transcript.ToModel(msgs),
		Tools: []model.ToolSpec{{Name: "read_file", InputSchema: json.RawMessage(`{"type":"object"}`)}}}
	if err := model.ValidateRequest(req); err != nil {
		t.Errorf("the stored history is refused: %v", err)
	}
}

func toolCalls(msgs []transcript.Message) []transcript.ToolCall {
	var out []transcript.ToolCall
	for _, m := range msgs {
		out = append(out, m.ToolCalls...)
	}
	return out
}

func TestStreamedTurnThroughTheEngine(t *testing.T) {
	gate := conversefake.NewGate()
	d := newDesk(t, noteScript, true, conversefake.WithGate(gate))
	seen := make(chan events.Event, 4096) // never blocks the engine: the test reads at its pace
	ctx := session.WithEventObserver(context.Background(), func(ev events.Event) { seen <- ev })
	type result struct {
		out *session.Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := d.engine.Send(ctx, "notes-1", session.SendInput{Message: "Please take a note."})
		done <- result{out, err}
	}()

	guard, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard, not a timing assertion
	defer cancel()
	var all []events.Event
	var deltas []events.Event
	texts := map[string]bool{} // messageIds whose agent-text has been seen
	for calls := 0; calls < 3; {
		f, err := gate.Next(guard)
		if err != nil {
			t.Fatalf("waiting for the fake's next frame: %v", err)
		}
		switch {
		case f.Event == "metadata":
			calls++
		case f.Event == "contentBlockDelta" && f.Text != "":
			// the delta of this frame reaches the session's handlers while the fake still
			// holds the rest of the answer: the call has not completed
			for {
				var ev events.Event
				select {
				case ev = <-seen:
				case r := <-done:
					t.Fatalf("the turn ended (%v) before the delta %q arrived", r.err, f.Text)
				case <-guard.Done():
					t.Fatalf("no delta for the frame %q", f.Text)
				}
				all = append(all, ev)
				if ev.Type == events.AgentText {
					texts[ev.Str("messageId")] = true
				}
				if ev.Type != events.AgentTextDelta {
					continue
				}
				if ev.Str("text") != f.Text {
					t.Fatalf("delta %q, want the frame's %q", ev.Str("text"), f.Text)
				}
				if texts[ev.Str("messageId")] {
					t.Fatalf("delta %q after its message's agent-text", f.Text)
				}
				deltas = append(deltas, ev)
				break
			}
		}
	}
	r := <-done
	if r.err != nil || r.out.Kind != session.KindCompleted || r.out.Reply != "The note says hello from the desk." {
		t.Fatalf("outcome %+v, %v", r.out, r.err)
	}
	for len(seen) > 0 {
		all = append(all, <-seen)
	}

	// the deltas, concatenated per message, are each stored message's text, under its id,
	// in order, each message's deltas before its agent-text; none takes a sessionSeq
	msgs := d.stored(t, "notes-1")
	var assistant []transcript.Message
	for _, m := range msgs {
		if m.Role == transcript.RoleAssistant {
			assistant = append(assistant, m)
		}
	}
	if len(assistant) != 3 {
		t.Fatalf("assistant messages %d", len(assistant))
	}
	byID := map[string]string{}
	var order []string
	lastSeq := uint64(0)
	for _, ev := range deltas {
		id := ev.Str("messageId")
		if _, ok := byID[id]; !ok {
			order = append(order, id)
		}
		byID[id] += ev.Str("text")
		if ev.Seq <= lastSeq || ev.SessionSeq != 0 || ev.Str("state") != "desk" {
			t.Errorf("delta %+v (seq after %d)", ev, lastSeq)
		}
		lastSeq = ev.Seq
	}
	for i, m := range assistant {
		if i >= len(order) || order[i] != m.ID || byID[m.ID] != m.Text {
			t.Errorf("message %d %s %q: deltas %q under %v", i, m.ID, m.Text, byID[m.ID], order)
		}
	}
	for _, ev := range all {
		if ev.Type == events.AgentText && ev.Data["partial"] != nil {
			t.Errorf("a partial agent-text on a call that did not fail: %+v", ev)
		}
	}
	if len(deltas) < 12 {
		t.Errorf("%d deltas: the text did not arrive in pieces", len(deltas))
	}

	// the tool inputs were reassembled from their fragments: the calls ran with them
	calls := toolCalls(msgs)
	if len(calls) != 2 || calls[0].Args["content"] != noteContent || calls[1].Args["file_path"] != "scratchpad/note.md" {
		t.Errorf("tool calls %+v", calls)
	}
	if b, err := d.files.Read(context.Background(), "notes-1/scratchpad/note.md"); err != nil || string(b) != noteContent {
		t.Errorf("the note: %q, %v", b, err)
	}
	for _, rec := range d.fake.Requests() {
		if !rec.Stream {
			t.Errorf("a call went through Converse: %s", rec.ModelID)
		}
	}
	checkHistory(t, msgs)

	// the same turn without streaming: the same usage, the same stored calls, one delta per message
	whole := newDesk(t, noteScript, false)
	var wholeDeltas int
	wctx := session.WithEventObserver(context.Background(), func(ev events.Event) {
		if ev.Type == events.AgentTextDelta {
			wholeDeltas++
		}
	})
	out, err := whole.engine.Send(wctx, "notes-1", session.SendInput{Message: "Please take a note."})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out.Usage, r.out.Usage) || out.Usage == nil || out.Usage.InputTokens != 100+30+5+140+30+180+30 {
		t.Errorf("usage streamed %+v, whole %+v", r.out.Usage, out.Usage)
	}
	if wc := toolCalls(whole.stored(t, "notes-1")); !reflect.DeepEqual(wc, calls) {
		t.Errorf("tool calls whole %+v, streamed %+v", wc, calls)
	}
	if wholeDeltas != 3 {
		t.Errorf("%d deltas without streaming, want one per message", wholeDeltas)
	}
	for _, rec := range whole.fake.Requests() {
		if rec.Stream {
			t.Error("a call streamed with streaming off")
		}
	}
}

// A throttle in the middle of the second answer: the turn fails like a failed call — the
// text that arrived settles as a partial agent-text, nothing of the answer is stored, the
// stored history is one Bedrock accepts — and carrying the turn on completes it.
func TestMidStreamFaultLeavesAValidHistory(t *testing.T) {
	d := newDesk(t, noteScript+`
errors:
  - {role: agent, call: 1, error: ThrottlingException, afterChunks: 2, message: "Too many tokens, please wait before trying again."}
`, true)
	var evs []events.Event
	ctx := session.WithEventObserver(context.Background(), func(ev events.Event) { evs = append(evs, ev) })
	_, err := d.engine.Send(ctx, "notes-2", session.SendInput{Message: "Please take a note."})
	var ce *model.CallError
	if !errors.As(err, &ce) || ce.Code != "ThrottlingException" || ce.Attempts != 1 {
		t.Fatalf("err = %v", err)
	}
	var partial []events.Event
	var pieces []string
	for _, ev := range evs {
		if ev.Type == events.AgentText && ev.Data["partial"] == true {
			partial = append(partial, ev)
		}
		if ev.Type == events.AgentTextDelta {
			pieces = append(pieces, ev.Str("text"))
		}
	}
	if len(partial) != 1 || partial[0].Str("text") != "Now I " || strings.Join(pieces, "") != "I will write the note first.Now I " {
		t.Fatalf("partial %+v, deltas %q", partial, pieces)
	}
	msgs := d.stored(t, "notes-2")
	for _, m := range msgs {
		if m.ID == partial[0].Str("messageId") || strings.Contains(m.Text, "Now I") {
			t.Errorf("the broken answer was stored: %+v", m)
		}
	}
	if calls := toolCalls(msgs); len(calls) != 1 || calls[0].ID != "tu-write" {
		t.Errorf("stored calls %+v", calls)
	}
	checkHistory(t, msgs)
	stored, _, err := session.NewSessions(d.log, d.files, nil).Events(context.Background(), "notes-2", 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, raw := range stored {
		var ev events.Event
		if json.Unmarshal(raw, &ev) == nil && ev.Type == events.AgentText && ev.Data["partial"] == true {
			found = true
		}
		if ev.Type == events.AgentTextDelta {
			t.Errorf("a delta was stored: %s", raw)
		}
	}
	if !found {
		t.Error("the partial agent-text is not in the stored events")
	}

	// the history the fake receives next passes its own rules: the turn carries on and ends
	out, skipped, err := d.engine.Continue(context.Background(), "notes-2", "")
	if err != nil || skipped != nil || out.Kind != session.KindCompleted || out.Reply != "The note says hello from the desk." {
		t.Fatalf("continue: %+v %+v %v", out, skipped, err)
	}
	checkHistory(t, d.stored(t, "notes-2"))
	if recs := d.fake.Requests(); len(recs) != 4 || recs[1].ErrorType != "ThrottlingException" || recs[2].ErrorType != "" {
		t.Errorf("requests %+v", recs)
	}
}
