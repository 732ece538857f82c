package stream_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/store/memory"
	"github.com/archmax-ai/archmax/functions/handlers/metering"
	"github.com/archmax-ai/archmax/functions/handlers/stream"
)

// lockedBuffer is a log written from several goroutines (the handler's, the stream's).
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// MT22-2: a streamed turn runs after the handler has returned its response stream; its
// metrics — from the events the stream observes itself too — are written when the stream
// ends, as the function `stream`.
func TestStreamedTurnIsMetered(t *testing.T) {
	f := newFixture(t, memory.New(), memory.NewFiles())
	close(f.model.gate)
	var logged lockedBuffer
	log := slog.New(slog.NewJSONHandler(&logged, nil))
	f.register(metering.Handler("stream", log, stream.Function(stream.New(f.api, nil, stream.WithPoll(5*time.Millisecond)), nil, nil)))

	s := f.invoke(urlRequest("POST", "/v1/workflows/desk/sessions", "", `{"message":"Where is my order?"}`, owner, nil))
	if s.status != http.StatusOK {
		t.Fatalf("status %d: %s", s.status, s.body)
	}
	all := s.rest()
	sum := outcomeOf(t, all[len(all)-1])
	if sum.Kind != session.KindCompleted {
		t.Fatalf("outcome %+v", sum)
	}
	streamed := map[string]float64{}
	for _, fr := range all {
		streamed[fr.Event]++
	}
	got := map[string]float64{}
	for _, line := range strings.Split(strings.TrimSpace(logged.String()), "\n") {
		var l map[string]any
		if json.Unmarshal([]byte(line), &l) != nil || l["_aws"] == nil {
			continue
		}
		if l["function"] != "stream" || l["sessionId"] != sum.SessionID {
			t.Errorf("a metrics line of %v for %v", l["function"], l["sessionId"])
		}
		for _, k := range []string{"Turns", "Steps", "ToolCalls", "InputTokens", "OutputTokens"} {
			if v, ok := l[k].(float64); ok {
				got[k] += v
			}
		}
	}
	want := map[string]float64{"Turns": 1, "Steps": streamed["state-enter"], "ToolCalls": streamed["tool-called"], "InputTokens": 20, "OutputTokens": 4}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v (the stream showed %v)", k, got[k], v, streamed)
		}
	}
	if streamed["tool-called"] != 1 || streamed["state-enter"] < 1 {
		t.Errorf("the stream showed %v", streamed)
	}
}

// A streamed request the HTTP API refuses counts an error of its code, as a returned answer does.
func TestStreamedRefusalIsCounted(t *testing.T) {
	f := newFixture(t, memory.New(), memory.NewFiles())
	var logged lockedBuffer
	log := slog.New(slog.NewJSONHandler(&logged, nil))
	f.register(metering.Handler("stream", log, stream.Function(stream.New(f.api, nil, stream.WithPoll(5*time.Millisecond)), nil, nil)))
	s := f.invoke(urlRequest("POST", "/v1/workflows/no-such-workflow/sessions", "", `{"message":"hi"}`, owner, nil))
	var body []byte
	if s.body != nil {
		body = s.body
	} else {
		for _, fr := range s.rest() {
			body = append(body, fr.Data...)
		}
	}
	codes := map[string]float64{}
	for _, line := range strings.Split(strings.TrimSpace(logged.String()), "\n") {
		var l map[string]any
		if json.Unmarshal([]byte(line), &l) == nil && l["code"] != nil && l["function"] == "stream" {
			codes[l["code"].(string)] += l["Errors"].(float64)
		}
	}
	if len(codes) != 1 {
		t.Fatalf("errors %v for the answer %d %s", codes, s.status, body)
	}
	for code, n := range codes {
		if n != 1 || !strings.Contains(string(body), `"`+code+`"`) {
			t.Errorf("errors %v for the answer %d %s", codes, s.status, body)
		}
	}
}
