package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/local/apigw"
	"github.com/archmax-ai/archmax/local/runner"
)

// `archmax serve` answers Accept: text/event-stream on a start and on …/events with
// Server-Sent Events (the streaming function's answer), behind the same guard.
func TestServeStreamsEvents(t *testing.T) {
	_, base, _ := serveOn(t, time.Now().Add(time.Hour))
	sse := func(method, path, body string, header map[string]string) (*http.Response, []string) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept", "text/event-stream")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var events []string
		id := ""
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			line := sc.Text()
			if v, ok := strings.CutPrefix(line, "id: "); ok {
				id = v
			}
			if ev, ok := strings.CutPrefix(line, "event: "); ok {
				if ev == "agent-text-delta" && id != "" {
					t.Errorf("a text delta with id %s: deltas are live only", id)
				}
				events = append(events, ev)
			}
			if line == "" {
				id = ""
			}
		}
		return resp, events
	}
	resp, evs := sse("POST", "/v1/workflows/desk/sessions/d1/turns", `{"message":"file it"}`, nil)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" || len(evs) < 3 ||
		evs[0] != "workflow-reset" || evs[len(evs)-1] != "outcome" {
		t.Fatalf("streamed turn: %d %s %v", resp.StatusCode, resp.Header.Get("Content-Type"), evs)
	}
	if !slices.Contains(evs, "agent-text-delta") || !slices.Contains(evs, "agent-text") {
		t.Errorf("the model's text, as it arrived and whole: %v", evs)
	}
	resp, again := sse("GET", "/v1/sessions/d1/events", "", map[string]string{"Last-Event-ID": "2"})
	if resp.StatusCode != 200 || len(again) == 0 || again[len(again)-1] != "outcome" || again[0] != evs[2] {
		t.Fatalf("follow after id 2: %d %v (the turn streamed %v)", resp.StatusCode, again, evs)
	}
	if resp, _ := sse("GET", "/v1/sessions/d1/events", "", map[string]string{"Origin": "http://evil.example"}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a cross-site stream: %d", resp.StatusCode)
	}
	if resp, _ := sse("GET", "/v1/sessions/nobody/events", "", nil); resp.StatusCode != http.StatusNotFound || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("an unknown session's stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}

// A start whose model call fails after the session opened names the session in its error —
// details.sessionId and Location, on the stream's error event, on a buffered answer and on
// its Idempotency-Key repeat — so the client can follow or poll it (SS21-11).
func TestServeFailedStartNamesItsSession(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "throttled.model.yaml")
	if err := os.WriteFile(script, []byte("agent:\n  - text: Here is a long answer that breaks off.\n"+
		"errors:\n  - { role: agent, call: 0, error: ThrottlingException, afterChunks: 2, times: 50 }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, base, _ := serveWith(t, runner.Options{Workspace: ws, StoreDir: filepath.Join(dir, "store"), ModelScript: script}, "127.0.0.1:0", apigw.Policy{})
	const msg = `{"message":"Hi, I'm Dana from the platform team. I need badge access to the east lab, please."}`
	do := func(header map[string]string, key string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest("POST", base+"/v1/workflows/access-request/sessions", strings.NewReader(msg))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	sessionOf := func(what, body string) string {
		t.Helper()
		var eb struct {
			Error struct {
				Code    string
				Details map[string]any
			}
		}
		if err := json.Unmarshal([]byte(body), &eb); err != nil || eb.Error.Code != "ModelCallError" {
			t.Fatalf("%s: %s (%v)", what, body, err)
		}
		id, _ := eb.Error.Details["sessionId"].(string)
		if id == "" {
			t.Fatalf("%s names no session: %s", what, body)
		}
		return id
	}
	// streamed: the error event's data is the error body
	resp, body := do(map[string]string{"Accept": "text/event-stream"}, "k-sse")
	data := ""
	for _, frame := range strings.Split(body, "\n\n") {
		if strings.HasPrefix(frame, "event: error\n") {
			for _, line := range strings.Split(frame, "\n") {
				if v, ok := strings.CutPrefix(line, "data: "); ok {
					data = v
				}
			}
		}
	}
	if resp.StatusCode != 200 || data == "" {
		t.Fatalf("streamed start: %d %s", resp.StatusCode, body)
	}
	id := sessionOf("the error event", data)
	got, err := http.Get(base + "/v1/sessions/" + id)
	if err != nil {
		t.Fatal(err)
	}
	got.Body.Close()
	if got.StatusCode != 200 {
		t.Errorf("the session the error names: %d", got.StatusCode)
	}
	// buffered, and its repeat
	for _, what := range []string{"buffered", "its repeat"} {
		resp, body := do(map[string]string{"Prefer": "wait=5"}, "k-wait")
		id := sessionOf(what, body)
		if resp.StatusCode != http.StatusBadGateway || resp.Header.Get("Location") != "/v1/sessions/"+id {
			t.Errorf("%s: %d Location %q %s", what, resp.StatusCode, resp.Header.Get("Location"), body)
		}
	}
}
