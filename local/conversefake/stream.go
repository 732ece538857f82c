package conversefake

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"unicode"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/archmax-ai/archmax/core/model/scripted"
)

// Frame is one event-stream message of a streamed answer, as a Gate shows it: Event is the
// ConverseStream event type (messageStart, contentBlockStart, contentBlockDelta,
// contentBlockStop, messageStop, metadata) or, for a mid-stream fault, the exception's name
// (e.g. "ThrottlingException") with Exception set; Text is a text delta's text and Input a
// toolUse delta's JSON fragment.
type Frame struct {
	Event     string
	Text      string
	Input     string
	Exception bool
}

// Gate holds the frames of streamed answers until a test lets each go, so it can observe
// what a client does with part of an answer while the call is still open. The zero Gate is
// not usable: NewGate.
type Gate struct{ c chan Frame }

// NewGate returns a Gate for WithGate.
func NewGate() *Gate { return &Gate{c: make(chan Frame)} }

// Next lets the next held frame go — it is written and flushed once Next returns — and
// returns it. It waits until a stream holds one, or ctx ends.
func (g *Gate) Next(ctx context.Context) (Frame, error) {
	select {
	case f := <-g.c:
		return f, nil
	case <-ctx.Done():
		return Frame{}, ctx.Err()
	}
}

// streamFrame is a Frame with its wire payload.
type streamFrame struct {
	Frame
	payload any
}

// stream answers a ConverseStream call with entry on Bedrock's event-stream encoding
// (application/vnd.amazon.eventstream, the SDK's own encoder): messageStart; the text as
// contentBlockDelta chunks of block 0 and its contentBlockStop; per tool call a
// contentBlockStart (id, name), its input as JSON fragments and a contentBlockStop;
// messageStop with the stop reason; metadata with usage and metrics, as Converse reports
// them. Each frame is flushed (after the Gate let it go, with one). With a fault, an
// exception frame replaces the frame after the fault's AfterChunks content chunks (a delta
// or the messageStop) and the stream ends there.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, e *scripted.Entry, fault *scripted.Fault, writes []CacheWrite) {
	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	enc := eventstream.NewEncoder()
	chunks := 0
	for _, f := range s.frames(e, writes) {
		if fault != nil && chunks == fault.AfterChunks && (f.Event == "contentBlockDelta" || f.Event == "messageStop") {
			ex := streamFrame{Frame: Frame{Event: fault.Error, Exception: true}, payload: map[string]string{"message": fault.Message}}
			if s.hold(r, ex.Frame) {
				_ = write(enc, w, flusher, ex)
			}
			return
		}
		if !s.hold(r, f.Frame) || write(enc, w, flusher, f) != nil {
			return
		}
		if f.Event == "contentBlockDelta" {
			chunks++
		}
	}
}

// hold waits for the Gate to let f go (at once without one); false when the client left.
func (s *Server) hold(r *http.Request, f Frame) bool {
	if s.gate == nil {
		return true
	}
	select {
	case s.gate.c <- f:
		return true
	case <-r.Context().Done():
		return false
	}
}

func write(enc *eventstream.Encoder, w http.ResponseWriter, flusher http.Flusher, f streamFrame) error {
	payload, err := json.Marshal(f.payload)
	if err != nil {
		return err
	}
	var msg eventstream.Message
	if f.Exception {
		msg.Headers.Set(":message-type", eventstream.StringValue("exception"))
		msg.Headers.Set(":exception-type", eventstream.StringValue(lowerFirst(f.Event)))
	} else {
		msg.Headers.Set(":message-type", eventstream.StringValue("event"))
		msg.Headers.Set(":event-type", eventstream.StringValue(f.Event))
	}
	msg.Headers.Set(":content-type", eventstream.StringValue("application/json"))
	msg.Payload = payload
	var buf bytes.Buffer
	if err := enc.Encode(&buf, msg); err != nil {
		return err
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return err
	}
	if flusher != nil {
		flusher.Flush()
	}
	return nil
}

// lowerFirst is an exception's name as the stream's :exception-type spells it
// (ThrottlingException → throttlingException).
func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// frames is the whole streamed answer of e (writes: its cache writes by TTL, for the usage).
func (s *Server) frames(e *scripted.Entry, writes []CacheWrite) []streamFrame {
	fs := []streamFrame{{Frame: Frame{Event: "messageStart"}, payload: map[string]any{"role": "assistant"}}}
	index := 0
	if e.Text != "" {
		for _, c := range s.textChunks(e.Text) {
			fs = append(fs, streamFrame{Frame: Frame{Event: "contentBlockDelta", Text: c},
				payload: map[string]any{"contentBlockIndex": index, "delta": map[string]any{"text": c}}})
		}
		fs = append(fs, streamFrame{Frame: Frame{Event: "contentBlockStop"}, payload: map[string]any{"contentBlockIndex": index}})
		index++
	}
	for _, tc := range e.ToolCalls {
		fs = append(fs, streamFrame{Frame: Frame{Event: "contentBlockStart"}, payload: map[string]any{"contentBlockIndex": index,
			"start": map[string]any{"toolUse": map[string]any{"toolUseId": tc.ID, "name": tc.Name}}}})
		for _, c := range s.inputChunks(string(tc.Input)) {
			fs = append(fs, streamFrame{Frame: Frame{Event: "contentBlockDelta", Input: c},
				payload: map[string]any{"contentBlockIndex": index, "delta": map[string]any{"toolUse": map[string]any{"input": c}}}})
		}
		fs = append(fs, streamFrame{Frame: Frame{Event: "contentBlockStop"}, payload: map[string]any{"contentBlockIndex": index}})
		index++
	}
	resp := s.response(e, writes)
	fs = append(fs,
		streamFrame{Frame: Frame{Event: "messageStop"}, payload: map[string]any{"stopReason": e.StopReason}},
		streamFrame{Frame: Frame{Event: "metadata"}, payload: map[string]any{"usage": resp.Usage, "metrics": resp.Metrics}})
	return fs
}

// textChunks cuts text into the chunks it streams in: n runes each with WithChunkSize, else
// word by word (each word with the spaces after it).
func (s *Server) textChunks(text string) []string {
	if s.chunk > 0 {
		return runeChunks(text, s.chunk)
	}
	var out []string
	start, inSpace := 0, false
	for i, r := range text {
		sp := unicode.IsSpace(r)
		if !sp && inSpace {
			out = append(out, text[start:i])
			start = i
		}
		inSpace = sp
	}
	return append(out, text[start:])
}

// inputChunks cuts a tool input's JSON into fragments (16 runes, or WithChunkSize's).
func (s *Server) inputChunks(input string) []string {
	if input == "" {
		input = "{}"
	}
	n := s.chunk
	if n <= 0 {
		n = 16
	}
	return runeChunks(input, n)
}

func runeChunks(s string, n int) []string {
	var out []string
	count, start := 0, 0
	for i := range s {
		if count == n {
			out = append(out, s[start:i])
			start, count = i, 0
		}
		count++
	}
	return append(out, s[start:])
}
