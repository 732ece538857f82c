package metering

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/archmax-ai/archmax/core/metrics"
	"github.com/archmax-ai/archmax/core/session"
)

type named struct{}

func (named) Error() string { return "busy" }
func (named) Name() string  { return "SessionNotResumableError" }

// lines decodes the metrics lines of log.
func lines(t *testing.T, log *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(log.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not JSON: %s", l)
		}
		if m["_aws"] != nil {
			out = append(out, m)
		}
	}
	return out
}

// Handler: each invocation has its own Recorder in its context; a returned error counts by
// its name, an answer of 400 or more by its error.code (HTTP<status> without one), a 2xx
// nothing; a settled turn counts, a turn handed on does not; the lines are written when the
// handler returns.
func TestHandler(t *testing.T) {
	var log bytes.Buffer
	h := Handler("decide", slog.New(slog.NewJSONHandler(&log, nil)), func(ctx context.Context, in string) (any, error) {
		switch in {
		case "error":
			return nil, errors.Join(errors.New("wrapped"), named{})
		case "refused":
			return events.APIGatewayV2HTTPResponse{StatusCode: 409, Body: `{"error":{"code":"SessionNotResumableError"}}`}, nil
		case "bare":
			return &events.APIGatewayV2HTTPResponse{StatusCode: 502, Body: "Bad Gateway"}, nil
		case "ok":
			return events.APIGatewayV2HTTPResponse{StatusCode: 200, Body: `{"error":{"code":"NotAnError"}}`}, nil
		}
		metrics.From(ctx).Workflow("review") // as the engine lookup names it
		Turn(ctx, &session.Outcome{SessionID: "s-1", Kind: session.KindParked}, 0)
		Turn(ctx, &session.Outcome{SessionID: "s-1", Kind: session.KindRunning}, 0)
		return nil, nil
	})
	for _, in := range []string{"error", "refused", "bare", "ok", "turn"} {
		if _, err := h(context.Background(), in); (err != nil) != (in == "error") {
			t.Fatalf("%s: %v", in, err)
		}
	}
	got := map[string]float64{}
	for _, l := range lines(t, &log) {
		if l["function"] != "decide" {
			t.Errorf("function %v", l["function"])
		}
		if c, ok := l["code"].(string); ok {
			got["code:"+c] += l["Errors"].(float64)
		}
		if n, ok := l["Turns"].(float64); ok && l["workflow"] == "review" && l["sessionId"] == "s-1" {
			got["turns"] += n
		}
	}
	want := map[string]float64{"code:SessionNotResumableError": 2, "code:HTTP502": 1, "turns": 1}
	if len(got) != len(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
}
