package bedrock

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/model/scripted"
	"github.com/archmax-ai/archmax/local/conversefake"
)

const streamScript = `
agent:
  - text: "Let me check the grants file."
    toolCalls:
      - {name: read_file, input: {file_path: a.json, limit: 10, ratio: 0.25, big: 9007199254740993, note: "été ✓ — ok"}}
      - {name: read_file, id: tu-b, input: {file_path: b.json}}
    usage: {inputTokens: 50, outputTokens: 40, cacheReadInputTokens: 1000, cacheWriteInputTokens: 200}
`

// The streamed answer is the Converse answer: the same text, tool calls (ids, names, inputs
// rendered alike), stop reason, usage and latency; the text arrives in pieces, in order.
func TestConverseStreamMatchesConverse(t *testing.T) {
	whole, _ := fakeClient(t, streamScript, 1)
	want, err := whole.Converse(context.Background(), ask("check", nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{0, 1, 3} {
		s, err := scripted.Parse("t.model.yaml", []byte(streamScript))
		if err != nil {
			t.Fatal(err)
		}
		fake := conversefake.New(s, conversefake.WithLatencyMs(321), conversefake.WithChunkSize(size))
		hs := httptest.NewServer(fake)
		defer hs.Close()
		c, err := New(context.Background(), Config{Region: "us-east-1", Endpoint: hs.URL, AccessKeyID: "AKIDTEST", SecretAccessKey: "secret", MaxAttempts: 1})
		if err != nil {
			t.Fatal(err)
		}
		var pieces []string
		got, err := c.ConverseStream(context.Background(), ask("check", nil), func(d model.Delta) { pieces = append(pieces, d.Text) })
		if err != nil {
			t.Fatalf("chunk %d: %v", size, err)
		}
		if strings.Join(pieces, "") != "Let me check the grants file." || len(pieces) < 2 {
			t.Errorf("chunk %d: pieces = %q", size, pieces)
		}
		if got.StopReason != want.StopReason || got.ModelID != want.ModelID || got.LatencyMs != want.LatencyMs || *got.Usage != *want.Usage ||
			len(got.Message.Content) != len(want.Message.Content) {
			t.Fatalf("chunk %d: streamed %+v, want %+v", size, got, want)
		}
		for i, b := range got.Message.Content {
			w := want.Message.Content[i]
			if b.Kind != w.Kind || b.Text != w.Text || (b.ToolUse != nil && (b.ToolUse.ID != w.ToolUse.ID || b.ToolUse.Name != w.ToolUse.Name || string(b.ToolUse.Input) != string(w.ToolUse.Input))) {
				t.Errorf("chunk %d: block %d = %+v %+v, want %+v %+v", size, i, b, b.ToolUse, w, w.ToolUse)
			}
		}
		if r := fake.Requests(); len(r) != 1 || !r[0].Stream || r[0].Status != 200 {
			t.Errorf("chunk %d: requests = %+v", size, r)
		}
	}
}

// A refused request is refused before anything is sent, as for Converse.
func TestConverseStreamValidatesFirst(t *testing.T) {
	c, fake := fakeClient(t, streamScript, 1)
	req := ask("check", nil)
	req.Messages = append(req.Messages, req.Messages[0])
	_, err := c.ConverseStream(context.Background(), req, func(model.Delta) {})
	var inv *model.InvalidRequestError
	if !errors.As(err, &inv) || len(fake.Requests()) != 0 {
		t.Errorf("err = %v, requests %d", err, len(fake.Requests()))
	}
}

// A fault before the answer is retried; a fault after the stream began is not: the call
// fails with the exception, after the pieces that arrived.
func TestConverseStreamRetriesOnlyBeforeTheFirstEvent(t *testing.T) {
	c, fake := fakeClient(t, streamScript+`
errors:
  - {role: agent, call: 0, error: ThrottlingException, times: 1}
`, 3)
	if _, err := c.ConverseStream(context.Background(), ask("check", nil), func(model.Delta) {}); err != nil {
		t.Fatalf("a throttle before the stream is retried: %v", err)
	}
	if r := fake.Requests(); len(r) != 2 || r[0].Status != 429 || r[1].Status != 200 {
		t.Errorf("requests = %+v", r)
	}

	c, fake = fakeClient(t, streamScript+`
errors:
  - {role: agent, call: 0, error: ThrottlingException, times: 1, afterChunks: 2, message: "Too many tokens."}
`, 3)
	var pieces []string
	_, err := c.ConverseStream(context.Background(), ask("check", nil), func(d model.Delta) { pieces = append(pieces, d.Text) })
	var ce *model.CallError
	if !errors.As(err, &ce) || ce.Code != "ThrottlingException" || ce.Status != 429 || !ce.Retryable || ce.Attempts != 1 || ce.Message != "Too many tokens." {
		t.Fatalf("err = %#v", err)
	}
	if strings.Join(pieces, "") != "Let me " || len(fake.Requests()) != 1 || fake.Requests()[0].ErrorType != "ThrottlingException" {
		t.Errorf("pieces %q, requests %+v", pieces, fake.Requests())
	}
	// the faulted answer was not consumed: the next call gets it whole
	resp, err := c.ConverseStream(context.Background(), ask("check", nil), func(model.Delta) {})
	if err != nil || len(resp.Message.Content) != 3 {
		t.Errorf("after the fault: %+v, %v", resp, err)
	}

	// a mid-stream error on the first frame after messageStart: the model began, no retry
	c, fake = fakeClient(t, streamScript+`
errors:
  - {role: agent, call: 0, error: ModelStreamErrorException, times: 1, afterChunks: 0}
`, 3)
	_, err = c.ConverseStream(context.Background(), ask("check", nil), func(model.Delta) {})
	if !errors.As(err, &ce) || ce.Code != "ModelStreamErrorException" || ce.Status != 424 || len(fake.Requests()) != 1 {
		t.Errorf("err = %#v, requests %d", err, len(fake.Requests()))
	}
}

// The Gate holds each frame: a piece reaches onDelta while the call is still open.
func TestConverseStreamDeltasBeforeTheCallReturns(t *testing.T) {
	s, err := scripted.Parse("t.model.yaml", []byte("agent:\n  - text: one two three\n"))
	if err != nil {
		t.Fatal(err)
	}
	gate := conversefake.NewGate()
	hs := httptest.NewServer(conversefake.New(s, conversefake.WithGate(gate)))
	defer hs.Close()
	c, err := New(context.Background(), Config{Region: "us-east-1", Endpoint: hs.URL, AccessKeyID: "AKIDTEST", SecretAccessKey: "secret", MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	deltas := make(chan string)
	done := make(chan error, 1)
	go func() {
		_, err := c.ConverseStream(context.Background(), ask("hi", nil), func(d model.Delta) { deltas <- d.Text })
		done <- err
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard, not a timing assertion
	defer cancel()
	var got []string
	for {
		f, err := gate.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if f.Event == "contentBlockDelta" {
			select {
			case d := <-deltas:
				got = append(got, d)
			case err := <-done:
				t.Fatalf("the call returned (%v) before its delta %q was handed over", err, f.Text)
			}
		}
		if f.Event == "metadata" {
			break
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, "|") != "one |two |three" {
		t.Errorf("deltas = %q", got)
	}
}

func TestStreamingFromEnv(t *testing.T) {
	for v, want := range map[string]bool{"": true, "1": true, "true": true, " TRUE ": true, "0": false, "false": false} {
		if on, err := StreamingFromEnv(func(string) string { return v }); on != want || err != nil {
			t.Errorf("%q: %v %v", v, on, err)
		}
	}
	if _, err := StreamingFromEnv(func(string) string { return "yes" }); err == nil {
		t.Error("yes accepted")
	}
}
