package session

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/core/events"
	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/transcript"
)

// raw answers with exactly these blocks (a hostile or broken model), stop reason stop.
func raw(stop string, blocks ...model.Block) reply {
	return func(*model.Request) (*model.Response, error) {
		return &model.Response{StopReason: stop, Message: model.Message{Role: model.RoleAssistant, Content: blocks}}, nil
	}
}

func use(id, name, input string) model.Block {
	return model.Block{Kind: model.BlockToolUse, ToolUse: &model.ToolUse{ID: id, Name: name, Input: json.RawMessage(input)}}
}

func text(s string) model.Block { return model.Block{Kind: model.BlockText, Text: s} }

const poisonFlow = `
states:
  work:
    triggers:
      manual:
    instructions: Work.
    transitions:
      - to: review
        description: Ready.
  review:
    type: human
    instructions: Decide.
    transitions:
      - to: done
        description: Done.
  done:
    instructions: Finish.
`

// storedHistoryValid fails the test when the session's committed transcript would make a
// later request fail Bedrock's rules.
func storedHistoryValid(t *testing.T, h *harness, id string) {
	t.Helper()
	head, err := h.log.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	raws, err := h.log.Messages(context.Background(), id, 0, head.Messages)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []transcript.Message
	for _, r := range raws {
		var m transcript.Message
		must(t, json.Unmarshal(r, &m))
		msgs = append(msgs, m)
	}
	if err := model.ValidateHistory(transcript.ToModel(msgs), 0); err != nil {
		t.Errorf("the stored history would poison the session: %v", err)
	}
}

// R18-1: a model answer with two toolUse blocks sharing an id — or reusing one of an earlier
// answer — runs each call under a fresh id, so the session is not poisoned: the next turn's
// request passes Bedrock's rules (the harness model checks every request).
func TestRepeatedToolUseIDsAreRenumbered(t *testing.T) {
	h := newHarness(t, poisonFlow, nil)
	h.script(
		raw(model.StopToolUse, use("dup", "write_todos", `{"todos":[]}`), use("dup", "ls", `{}`)),
		raw(model.StopToolUse, use("dup", "ls", `{"path":"scratchpad"}`)),
		says("Done."),
	)
	out := h.send("s1", "go", nil)
	if out.Kind != KindCompleted {
		t.Fatalf("outcome %s: %q", out.Kind, out.Rejected)
	}
	var ids []string
	for _, m := range out.Messages {
		for _, c := range m.ToolCalls {
			ids = append(ids, c.ID)
		}
	}
	if strings.Join(ids, ",") != "dup,dup_2,dup_3" {
		t.Errorf("call ids = %v", ids)
	}
	if w := h.eventsOf(events.Warning); len(w) != 2 || w[0].Str("message") != repeatedToolCallID {
		t.Errorf("warnings = %+v", w)
	}
	storedHistoryValid(t, h, "s1")
	h.script(says("Still here."))
	if out := h.send("s1", "again", nil); out.Kind != KindCompleted || out.Reply != "Still here." {
		t.Errorf("the next turn: %s %q", out.Kind, out.Reply)
	}
}

// R18-1: every class of refusal a model's answer can cause in Bedrock's request rules, fed
// through the engine: each is made valid (or dropped) before it is stored, the stored history
// passes the validator, and the session takes its next turn.
func TestNoModelAnswerPoisonsTheHistory(t *testing.T) {
	long := strings.Repeat("x", 70)
	rows := []struct {
		name   string
		answer []reply
	}{
		{"repeated id in one answer", []reply{raw(model.StopToolUse, use("a", "ls", `{}`), use("a", "ls", `{}`)), says("ok")}},
		{"id of an earlier answer", []reply{raw(model.StopToolUse, use("a", "ls", `{}`)), raw(model.StopToolUse, use("a", "ls", `{}`)), says("ok")}},
		{"id with a space", []reply{raw(model.StopToolUse, text("calling"), use("tu 1", "ls", `{}`)), says("ok")}},
		{"id too long", []reply{raw(model.StopToolUse, text("calling"), use(long, "ls", `{}`)), says("ok")}},
		{"empty id", []reply{raw(model.StopToolUse, text("calling"), use("", "ls", `{}`)), says("ok")}},
		{"tool name with a space", []reply{raw(model.StopToolUse, text("calling"), use("t1", "read file", `{}`)), says("ok")}},
		{"tool name too long", []reply{raw(model.StopToolUse, text("calling"), use("t1", long, `{}`)), says("ok")}},
		{"empty tool name", []reply{raw(model.StopToolUse, text("calling"), use("t1", "", `{}`)), says("ok")}},
		{"input an array", []reply{raw(model.StopToolUse, use("t1", "ls", `[1,2]`)), says("ok")}},
		{"input a string", []reply{raw(model.StopToolUse, use("t1", "ls", `"x"`)), says("ok")}},
		{"input null", []reply{raw(model.StopToolUse, use("t1", "ls", `null`)), says("ok")}},
		{"input not JSON", []reply{raw(model.StopToolUse, use("t1", "ls", `{nope`)), says("ok")}},
		{"blank text only", []reply{raw(model.StopEndTurn, text("   \n\t"))}},
		{"no content at all", []reply{raw(model.StopEndTurn)}},
		{"blank text beside a call", []reply{raw(model.StopToolUse, text(" "), use("t1", "ls", `{}`), text("")), says("ok")}},
		{"a toolResult block in the answer", []reply{raw(model.StopEndTurn, text("hi"),
			model.Block{Kind: model.BlockToolResult, ToolResult: &model.ToolResult{ToolUseID: "zz", Content: "forged"}})}},
		{"a cachePoint block in the answer", []reply{raw(model.StopEndTurn, text("hi"), model.Block{Kind: model.BlockCachePoint})}},
		{"a call cut off at max_tokens", []reply{raw(model.StopMaxTokens, text("Let me"), use("t1", "ls", `{"pa`)), says("ok")}},
		{"a call into the human state, then a tool call in the reply-only handoff", []reply{
			raw(model.StopToolUse, use("t1", "archmax_advance", `{"to":"review","reason":"ready"}`)),
			raw(model.StopToolUse, use("t1", "ls", `{}`), use("t1", "ls", `{}`)),
		}},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			h := newHarness(t, poisonFlow, nil)
			h.script(r.answer...)
			out, err := h.engine().Send(context.Background(), "p1", SendInput{Message: "go"})
			if err != nil {
				t.Fatalf("Send: %v", err)
			}
			storedHistoryValid(t, h, "p1")
			h.script(says("next"))
			if out.Kind == KindParked {
				h.model.replies = nil
				h.script(says("still parked"))
			}
			if _, err := h.engine().Send(context.Background(), "p1", SendInput{Message: "again"}); err != nil {
				t.Errorf("the next call: %v", err)
			}
			storedHistoryValid(t, h, "p1")
		})
	}
}

// R18-1's net: were a refused history ever built (here: the renumbering taken away), the
// commit check keeps it out of the store — the step is dropped, the session keeps its last
// valid checkpoint with a non-retryable lastError (the sweep leaves it), and the next message
// goes on from there.
func TestARefusedHistoryIsNeverCommitted(t *testing.T) {
	renumberIDs = func([]transcript.ToolCall, map[string]bool) bool { return false }
	t.Cleanup(func() { renumberIDs = renumberCallIDs })
	h := newHarness(t, poisonFlow, nil)
	h.script(says("First answer."))
	h.send("s1", "hello", nil)
	before, _ := h.log.Get(context.Background(), "s1")

	h.script(raw(model.StopToolUse, use("dup", "ls", `{}`), use("dup", "ls", `{}`)))
	_, err := h.engine().Send(context.Background(), "s1", SendInput{Message: "list twice"})
	var ih *InvalidHistoryError
	if !errors.As(err, &ih) {
		t.Fatalf("Send: %v, want *InvalidHistoryError", err)
	}
	after, _ := h.log.Get(context.Background(), "s1")
	// the turn's opening (the person's message) was committed before the model answered;
	// nothing of the refused step was
	if after.Messages != before.Messages+1 {
		t.Errorf("messages %d → %d, want only the opening message added", before.Messages, after.Messages)
	}
	storedHistoryValid(t, h, "s1")
	sum, err := NewSessions(h.log, h.files, nil).Get(context.Background(), "s1")
	if err != nil {
		t.Fatal(err)
	}
	if sum.LastError == nil || sum.LastError.Code != "InvalidHistoryError" || sum.LastError.Retryable || after.ParkDue != "" {
		t.Errorf("lastError = %+v, parkDue %q", sum.LastError, after.ParkDue)
	}
	h.script(says("Back on track."))
	if out := h.send("s1", "once more", nil); out.Kind != KindCompleted || out.Reply != "Back on track." {
		t.Errorf("the next message: %s %q", out.Kind, out.Reply)
	}
}
