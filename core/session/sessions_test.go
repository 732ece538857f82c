package session

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/store"
)

// 02 §9.6/§9.7: summaries, listing, message cursor, pages, delete.
func TestSessionsReadAndDelete(t *testing.T) {
	h := newHarness(t, strings.Replace(twoAgents, "    requires: [topic]\n", "", 1), nil)
	var tick atomic.Int64 // a clock that moves one second per reading: s2 is strictly newer than s1
	h.cfg.Clock = func() time.Time { return time.Date(2026, 11, 30, 9, 0, int(tick.Add(1)), 0, time.UTC) }
	h.script(calls("", call{"archmax_set_variables", map[string]any{"variables": map[string]any{"title": "Badge request"}}}, advance("answer", "go")), says("done"))
	h.send("s1", "hi", nil)
	h.script(says("other"))
	h.send("s2", "hi", nil)
	ctx := context.Background()
	must(t, h.files.Write(ctx, "s1/scratchpad/notes/a.md", []byte("x")))
	s := NewSessions(h.log, h.files, nil)

	sum, err := s.Get(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if sum.Status != StatusCompleted || sum.Classification != "finished" || sum.WorkflowState != "answer" ||
		sum.Title != "Badge request" || sum.Turn != 1 || sum.MessageCount != 5 || sum.Usage == nil || sum.SpecHash == "" || sum.Exit == nil || !sum.Exit.Success {
		t.Errorf("summary = %+v", sum)
	}
	var nf *SessionNotFoundError
	if _, err := s.Get(ctx, "nope"); !errors.As(err, &nf) {
		t.Errorf("missing session: %v", err)
	}
	if n, err := s.MessageCount(ctx, "nope"); err != nil || n != 0 {
		t.Errorf("MessageCount of a session that never ran = %d, %v", n, err)
	}

	list, next, err := s.List(ctx, ListOptions{Limit: 1})
	if err != nil || len(list) != 1 || next == "" || list[0].SessionID != "s2" {
		t.Fatalf("page 1 = %+v next %q err %v", list, next, err)
	}
	list, next, err = s.List(ctx, ListOptions{Limit: 1, Cursor: next})
	if err != nil || len(list) != 1 || list[0].SessionID != "s1" || next != "" {
		t.Fatalf("page 2 = %+v next %q err %v", list, next, err)
	}

	msgs, cur, err := s.Messages(ctx, "s1", 3, 10)
	if err != nil || len(msgs) != 2 || cur != 5 || msgs[1].Text != "done" {
		t.Errorf("messages after 3 = %+v cursor %d err %v", msgs, cur, err)
	}
	evs, _, err := s.Events(ctx, "s1", 0, 1000)
	if err != nil || len(evs) == 0 {
		t.Fatalf("events = %d, %v", len(evs), err)
	}
	var first map[string]any
	must(t, json.Unmarshal(evs[0], &first))
	if first["sessionSeq"] != float64(1) || first["sessionId"] != "s1" {
		t.Errorf("first stored event = %v", first)
	}
	trail, err := s.Trail(ctx, "s1")
	if err != nil || len(trail) != 2 {
		t.Errorf("trail = %+v, %v", trail, err)
	}

	existed, err := s.Delete(ctx, "s1")
	if err != nil || !existed {
		t.Fatalf("delete = %v, %v", existed, err)
	}
	if _, err := s.Get(ctx, "s1"); !errors.As(err, &nf) {
		t.Errorf("after delete: %v", err)
	}
	if _, err := h.files.Read(ctx, "s1/scratchpad/notes/a.md"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("session files survive delete: %v", err)
	}
	if _, err := s.Get(ctx, "s2"); err != nil {
		t.Errorf("delete touched another session: %v", err)
	}
}

func TestSessionsDeleteRefusedWhileRunning(t *testing.T) {
	h := newHarness(t, twoAgents, nil)
	ctx := context.Background()
	if _, err := h.log.Acquire(ctx, "busy", "writer", time.Minute); err != nil {
		t.Fatal(err)
	}
	var busy *SessionNotResumableError
	if _, err := NewSessions(h.log, h.files, nil).Delete(ctx, "busy"); !errors.As(err, &busy) {
		t.Errorf("delete of a leased session: %v", err)
	}
}

// 02 §2.2, §13: a stored running status without a live lease reads as interrupted.
func TestSessionsInterruptedAndChildren(t *testing.T) {
	h := newHarness(t, twoAgents, nil)
	ctx := context.Background()
	commit := func(id string) {
		head, err := h.log.Acquire(ctx, id, "w", time.Minute)
		must(t, err)
		body, _ := json.Marshal(record{Workflow: "wf", Status: StatusRunning, State: "intake"})
		_, err = h.log.Commit(ctx, id, "w", &store.Commit{ExpectedVersion: head.Version, Head: store.Head{Workflow: "wf", Status: "running", UpdatedAt: "2026-01-01T00:00:00.000Z", Body: body}})
		must(t, err)
		must(t, h.log.Release(ctx, id, "w"))
	}
	commit("root")
	commit("root~1")
	s := NewSessions(h.log, h.files, nil)
	sum, err := s.Get(ctx, "root")
	if err != nil || !sum.Interrupted || sum.Classification != "open" {
		t.Errorf("summary = %+v, %v", sum, err)
	}
	list, _, err := s.List(ctx, ListOptions{})
	if err != nil || len(list) != 1 || list[0].SessionID != "root" {
		t.Errorf("roots only = %+v", list)
	}
	list, _, _ = s.List(ctx, ListOptions{IncludeChildren: true})
	if len(list) != 2 {
		t.Errorf("with children = %d", len(list))
	}
	child, _ := s.Get(ctx, "root~1")
	if child == nil || child.ParentID != "root" {
		t.Errorf("child summary = %+v", child)
	}
}
