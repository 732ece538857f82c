package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/archmax-ai/archmax/functions/handlers/httpapi"
	"github.com/archmax-ai/archmax/functions/handlers/stream"
)

// sseFrame is one Server-Sent Event of a streamed answer.
type sseFrame struct{ id, event, data string }

// streamCall invokes the streaming function's handler with a function URL request signed by
// the tests' client and reads its Lambda response stream: the prelude's status, the frames.
func streamCall(t *testing.T, fn func(context.Context, json.RawMessage) (any, error), method, path, body string, header map[string]string) (int, []sseFrame) {
	t.Helper()
	h := map[string]string{"accept": "text/event-stream", "content-type": "application/json"}
	for k, v := range header {
		h[k] = v
	}
	raw, _ := json.Marshal(events.LambdaFunctionURLRequest{Version: "2.0", RawPath: path, Headers: h, Body: body,
		RequestContext: events.LambdaFunctionURLRequestContext{RequestID: "e2e", HTTP: events.LambdaFunctionURLRequestContextHTTPDescription{Method: method, Path: path},
			Authorizer: &events.LambdaFunctionURLRequestContextAuthorizerDescription{IAM: &events.LambdaFunctionURLRequestContextAuthorizerIAMDescription{UserARN: clientARN, AccountID: "123456789012"}}}})
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute) // the invocation's deadline
	defer cancel()
	out, err := fn(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	resp, ok := out.(*stream.Response)
	if !ok || resp.ContentType() != "application/vnd.awslambda.http-integration-response" {
		t.Fatalf("answer %T, want a Lambda response stream", out)
	}
	r := bufio.NewReader(resp)
	var prelude []byte
	for !bytes.HasSuffix(prelude, make([]byte, 8)) {
		b, err := r.ReadByte()
		if err != nil {
			t.Fatalf("prelude: %v", err)
		}
		prelude = append(prelude, b)
	}
	var p struct {
		StatusCode int `json:"statusCode"`
	}
	if err := json.Unmarshal(bytes.TrimRight(prelude, "\x00"), &p); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(r)
	var frames []sseFrame
	for _, block := range strings.Split(string(rest), "\n\n") {
		var f sseFrame
		for _, line := range strings.Split(block, "\n") {
			switch {
			case strings.HasPrefix(line, "id: "):
				f.id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "event: "):
				f.event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				f.data += strings.TrimPrefix(line, "data: ")
			}
		}
		if f.event != "" {
			frames = append(frames, f)
		}
	}
	return p.StatusCode, frames
}

// The streaming function as functions/stream starts it — its own assembly on DynamoDB Local,
// S3 and the Bedrock client streaming from the Converse fake's ConverseStream: a start
// streams its events, the model's text in pieces (no id) before the whole agent-text, and
// ends with the park's outcome; a reconnect after one of its ids replays the stored events
// after it, none twice, none missed.
func TestStreamFunction(t *testing.T) {
	s := newStack(t, "approve.model.yaml")
	a := s.assemble(t)
	fn := stream.Function(stream.New(httpapi.New(a.Engines, a.Runner, nil, httpapi.WithPolicy(a.Access)), nil, stream.WithPoll(10*time.Millisecond)), a.Runner, nil)

	status, frames := streamCall(t, fn, "POST", "/v1/workflows/review/sessions", `{"message":"Draft the refund answer."}`, nil)
	if status != http.StatusOK || len(frames) == 0 || frames[len(frames)-1].event != stream.OutcomeEvent {
		t.Fatalf("%d %v", status, frames)
	}
	var out struct {
		SessionID, Kind, State string
	}
	if err := json.Unmarshal([]byte(frames[len(frames)-1].data), &out); err != nil || out.Kind != "parked" || out.State != "review" {
		t.Fatalf("outcome %s", frames[len(frames)-1].data)
	}
	var deltas, pieces []string
	var ids []string
	for _, f := range frames {
		switch {
		case f.event == "agent-text-delta":
			if f.id != "" {
				t.Errorf("a delta with id %s", f.id)
			}
			var d struct{ Text string }
			_ = json.Unmarshal([]byte(f.data), &d)
			deltas = append(deltas, d.Text)
		case f.event == "agent-text":
			var d struct{ Text string }
			_ = json.Unmarshal([]byte(f.data), &d)
			pieces = append(pieces, d.Text)
		}
		if f.id != "" {
			ids = append(ids, f.id)
		}
	}
	if len(deltas) < 2 || len(pieces) != 1 || strings.Join(deltas, "") != pieces[0] {
		t.Errorf("the text arrived as %q, whole %q: want it in pieces that make the whole", deltas, pieces)
	}
	stored, _, err := s.sessions.Events(context.Background(), out.SessionID, 0, 500)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, raw := range stored {
		var e struct{ SessionSeq int64 }
		_ = json.Unmarshal(raw, &e)
		want = append(want, strconv.FormatInt(e.SessionSeq, 10))
	}
	if strings.Join(ids, ",") != strings.Join(want, ",") {
		t.Fatalf("streamed ids %v, stored %v", ids, want)
	}

	status, replay := streamCall(t, fn, "GET", "/v1/sessions/"+out.SessionID+"/events", "", map[string]string{"last-event-id": ids[1]})
	if status != http.StatusOK || replay[len(replay)-1].event != stream.OutcomeEvent || !strings.Contains(replay[len(replay)-1].data, `"kind":"parked"`) {
		t.Fatalf("reconnect: %d %v", status, replay)
	}
	var again []string
	for _, f := range replay {
		if f.id != "" {
			again = append(again, f.id)
		}
	}
	if got := append(ids[:2:2], again...); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("ids to %s then the replay: %v, want %v", ids[1], got, want)
	}
}
