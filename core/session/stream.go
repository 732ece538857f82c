package session

import (
	"context"
	"strings"

	"github.com/archmax-ai/archmax/core/events"
	"github.com/archmax-ai/archmax/core/model"
)

// textStream is the text of one agent model call on its way to the session's handlers
// (spec 02 §12.5): each piece the model client hands over is an agent-text-delta of the
// active state under the message id the answer will be stored with; a client that does not
// stream leaves the whole text to one delta after the call (whole).
type textStream struct {
	r         *run
	state     string
	messageID string
	text      strings.Builder
	pieces    int
}

// streamCall makes one model call in state, its text streamed as agent-text-delta events
// under messageID (the id the answer's message is then stored with).
func (r *run) streamCall(ctx context.Context, state, messageID string, req *model.Request) (*model.Response, *textStream, error) {
	ts := &textStream{r: r, state: state, messageID: messageID}
	resp, err := model.Stream(ctx, r.e.cfg.Model, req, ts.delta)
	return resp, ts, err
}

func (ts *textStream) delta(d model.Delta) {
	if d.Text == "" {
		return
	}
	ts.pieces++
	ts.text.WriteString(d.Text)
	ts.r.emitDelta(map[string]any{"state": ts.state, "text": d.Text, "messageId": ts.messageID})
}

// whole emits text as the call's one delta when nothing streamed (a client that does not
// stream, or streaming switched off).
func (ts *textStream) whole(text string) {
	if ts.pieces == 0 && text != "" {
		ts.r.emitDelta(map[string]any{"state": ts.state, "text": text, "messageId": ts.messageID})
	}
}

// partial settles text that streamed but will not be stored — the call failed after it
// arrived, or its answer is discarded — with an agent-text event marked partial: true
// under the deltas' message id (which names no stored message), so a live view can replace
// the pending deltas with what is final about them.
func (ts *textStream) partial() {
	if t := ts.text.String(); strings.TrimSpace(t) != "" {
		ts.r.emit(events.AgentText, map[string]any{"state": ts.state, "text": t, "messageId": ts.messageID, "partial": true})
	}
}

// emitDelta stamps and delivers a text delta. Deltas are live only: never stored, they take
// no sessionSeq (the durable counter numbers the stored events alone, so a reader of the
// stored log sees it without holes); their order is the envelope's seq.
func (r *run) emitDelta(data map[string]any) {
	ev := events.Event{Type: events.AgentTextDelta, SessionID: r.id, Data: data}
	if r.rec.Scope != nil {
		ev.DispatchID = r.rec.Scope.DispatchID // everything a child emits names its dispatch (02 §8.4)
	}
	observe(r.ctx, r.e.emitter.Stamp(ev))
}
