package main

import (
	"bufio"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
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
