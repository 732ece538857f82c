package session

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/model"
)

// C6-23: the summary's lastTurn is the settled call's outcome as its answer says it. A call
// that parks commits the park together with its closing message (R18-8, superseding K5-2):
// while that message is written the session is still running, with no lastTurn for the
// call — had the writer died there, the session is an interrupted running one, which its
// continuation parks again (one park, with its message); once it settles, lastTurn is the
// answer's.
func TestLastTurnWaitsForTheParksClosingMessage(t *testing.T) {
	h := newHarness(t, reviewFlow, nil)
	inHandoff, release := make(chan struct{}), make(chan struct{})
	h.script(calls("", advance("review", "ready")), func(req *model.Request) (*model.Response, error) {
		close(inHandoff)
		<-release
		return says("Handed to finance.")(req)
	})
	type result struct {
		out *Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := h.engine().Send(context.Background(), "s1", SendInput{Message: "write the report"})
		done <- result{out, err}
	}()
	select {
	case <-inHandoff:
	case <-time.After(time.Minute):
		t.Fatal("the handoff call never came")
	}
	sessions := NewSessions(h.log, h.files, nil)
	sum, err := sessions.Get(context.Background(), "s1")
	must(t, err)
	if sum.Status != StatusRunning || sum.LastTurn != nil || sum.Pending != nil {
		t.Errorf("while the closing message is written: status %s, lastTurn %+v, pending %+v, want running with neither", sum.Status, sum.LastTurn, sum.Pending)
	}
	later := NewSessions(h.log, h.files, nil)
	later.clock = func() time.Time { return time.Now().Add(time.Hour) } // the writer died; its lease lapsed
	if sum, _ := later.Get(context.Background(), "s1"); sum.Status != StatusRunning || !sum.Interrupted || sum.LastTurn != nil {
		t.Errorf("after the writer died before the park: %+v, want an interrupted running session", sum)
	}
	close(release)
	var res result
	select {
	case res = <-done:
	case <-time.After(time.Minute):
		t.Fatal("the call never returned")
	}
	must(t, res.err)
	sum, err = sessions.Get(context.Background(), "s1")
	must(t, err)
	want := TurnOutcome{TurnID: res.out.TurnID, Kind: KindParked, Disposition: DispositionTurn, Status: StatusAwaitingDecision,
		State: "review", Reply: "Handed to finance.", Turn: 1}
	if sum.LastTurn == nil || *sum.LastTurn != want || res.out.Reply != want.Reply {
		t.Errorf("lastTurn = %+v, want %+v (the answer's reply %q)", sum.LastTurn, want, res.out.Reply)
	}
}

// A long reply is kept in the head's lastTurn only up to MaxLastTurnReply bytes (cut between
// runes, flagged), so a head never nears an item's size limit; the answer has it whole.
func TestLastTurnReplyIsBounded(t *testing.T) {
	h := newHarness(t, reviewFlow, nil)
	long := strings.Repeat("é", MaxLastTurnReply) // 2 bytes each
	h.script(says(long))
	out := h.send("s1", "write the report", nil)
	if out.Reply != long {
		t.Fatalf("the answer's reply is %d bytes", len(out.Reply))
	}
	lt := h.summary("s1").LastTurn
	if lt == nil || !lt.ReplyTruncated || len(lt.Reply) != MaxLastTurnReply || !strings.HasPrefix(long, lt.Reply) {
		t.Fatalf("lastTurn %+v", lt)
	}
}
