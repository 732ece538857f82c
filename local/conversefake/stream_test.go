package conversefake

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
)

// postStream sends b to ConverseStream and decodes the frames of the answer.
func postStream(t *testing.T, url, b string) (int, http.Header, []eventstream.Message) {
	t.Helper()
	resp, err := http.Post(url+"/model/us.anthropic.claude-x-v1%3A0/converse-stream", "application/json", strings.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var msgs []eventstream.Message
	if resp.StatusCode != 200 {
		return resp.StatusCode, resp.Header, nil
	}
	dec := eventstream.NewDecoder()
	r := bytes.NewReader(raw)
	for r.Len() > 0 {
		m, err := dec.Decode(r, nil)
		if err != nil {
			t.Fatalf("decode frame: %v", err)
		}
		msgs = append(msgs, m)
	}
	return resp.StatusCode, resp.Header, msgs
}

func header(m eventstream.Message, name string) string {
	if v := m.Headers.Get(name); v != nil {
		return v.String()
	}
	return ""
}

// The stream's frames: the event types in Bedrock's order, JSON payloads; the rules and the
// script's refusals answer before any stream, as for Converse.
func TestStreamFrames(t *testing.T) {
	fake, hs := newServer(t, `
agent:
  - text: "Hi there"
    toolCalls: [{name: read_file, id: tu-9, input: {file_path: a.json}}]
    usage: {inputTokens: 7, outputTokens: 3}
`)
	status, hdr, msgs := postStream(t, hs.URL, body(u1, ","+tools))
	if status != 200 || hdr.Get("Content-Type") != "application/vnd.amazon.eventstream" {
		t.Fatalf("status %d %v", status, hdr)
	}
	var types []string
	var input, text string
	for _, m := range msgs {
		if header(m, ":message-type") != "event" || header(m, ":content-type") != "application/json" {
			t.Errorf("headers %v", m.Headers)
		}
		types = append(types, header(m, ":event-type"))
		var p struct {
			Delta struct {
				Text    string
				ToolUse struct{ Input string }
			}
		}
		_ = json.Unmarshal(m.Payload, &p)
		text += p.Delta.Text
		input += p.Delta.ToolUse.Input
	}
	want := "messageStart contentBlockDelta contentBlockDelta contentBlockStop contentBlockStart contentBlockDelta contentBlockDelta contentBlockStop messageStop metadata"
	if strings.Join(types, " ") != want || text != "Hi there" || input != `{"file_path":"a.json"}` {
		t.Errorf("frames %v, text %q, input %q", types, text, input)
	}
	if string(msgs[len(msgs)-1].Payload) != `{"metrics":{"latencyMs":42},"usage":{"inputTokens":7,"outputTokens":3,"totalTokens":10,"cacheReadInputTokens":0,"cacheWriteInputTokens":0}}` {
		t.Errorf("metadata %s", msgs[len(msgs)-1].Payload)
	}
	if r := fake.Requests(); len(r) != 1 || !r[0].Stream || r[0].Status != 200 {
		t.Errorf("recorded %+v", r)
	}
	if status, hdr, _ := postStream(t, hs.URL, body(u1+","+u1, ","+tools)); status != 400 || hdr.Get("X-Amzn-Errortype") != "ValidationException" {
		t.Errorf("a refused history streamed: %d", status)
	}
}

// A mid-stream fault: the answer's first chunks, then an exception frame; the entry is
// not consumed.
func TestStreamMidStreamFault(t *testing.T) {
	fake, hs := newServer(t, `
agent:
  - text: "one two three"
errors:
  - {role: agent, call: 0, error: ThrottlingException, afterChunks: 2, message: "Too many tokens."}
`)
	_, _, msgs := postStream(t, hs.URL, body(u1))
	last := msgs[len(msgs)-1]
	if len(msgs) != 4 || header(last, ":message-type") != "exception" || header(last, ":exception-type") != "throttlingException" ||
		string(last.Payload) != `{"message":"Too many tokens."}` {
		t.Errorf("frames %d, last %v %s", len(msgs), last.Headers, last.Payload)
	}
	if r := fake.Requests(); r[0].ErrorType != "ThrottlingException" {
		t.Errorf("recorded %+v", r)
	}
	if _, _, msgs := postStream(t, hs.URL, body(u1)); len(msgs) != 7 {
		t.Errorf("the retry streams the whole answer: %d frames", len(msgs))
	}
}
