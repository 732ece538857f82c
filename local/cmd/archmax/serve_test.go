package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/functions/handlers/continuation"
	"github.com/archmax-ai/archmax/local/runner"
)

const serveDesk = `
title: Desk
states:
  intake:
    triggers:
      manual:
    instructions: Hand the request to sign-off.
    transitions:
      - to: signoff
        description: The request is ready for sign-off.
  signoff:
    type: human
    title: Sign-off
    transitions:
      - to: done
        description: Approved.
        type: approve
  done:
    instructions: Say it is done.
`

const serveCourier = `
title: Courier
states:
  watch:
    triggers:
      manual:
    instructions: Wait for the courier.
`

// serveWorkspace writes a workspace with the two workflows and a model script whose wait
// ends at until; it returns the workspace and the script path.
func serveWorkspace(t *testing.T, until time.Time) (string, string) {
	t.Helper()
	dir := t.TempDir()
	for name, src := range map[string]string{
		"workflows/desk/workflow.yaml":    serveDesk,
		"workflows/courier/workflow.yaml": serveCourier,
		"serve.model.yaml": fmt.Sprintf(`
agent:
  - toolCalls:
      - name: archmax_wait
        input: { reason: "the courier's scan", until: "%s" }
  - text: Waiting for the scan.
  - text: The timer fired.
  - toolCalls:
      - name: archmax_advance
        input: { to: signoff, reason: ready }
  - text: Sent to sign-off.
  - text: Done.
`, until.UTC().Format(time.RFC3339Nano)),
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, filepath.Join(dir, "serve.model.yaml")
}

// post sends a request that waits for its outcome (Prefer: wait=20).
func post(t *testing.T, base, path, body string) (int, map[string]any) {
	t.Helper()
	return postWith(t, base, path, body, "wait=20")
}

// postWith sends a request with the Prefer header prefer ("" = none).
func postWith(t *testing.T, base, path, body, prefer string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if prefer != "" {
		req.Header.Set("Prefer", prefer)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s: not JSON: %s", path, raw)
	}
	return resp.StatusCode, out
}

// `archmax serve`: the HTTP routes of the Lambdas over the local store; a timed park is
// woken by the in-process timer; a human park is decided through the decision route.
func TestServeWakesTimedParksAndTakesDecisions(t *testing.T) {
	srv, base, stop := serveOn(t, time.Now().Add(1500*time.Millisecond))

	status, body := post(t, base, "/v1/workflows/courier/sessions/c1/turns", `{"message":"track parcel 7"}`)
	if status != 200 || body["status"] != "awaiting_input" {
		t.Fatalf("wait: %d %v", status, body)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		h, err := srv.engines.Log().Get(context.Background(), "c1")
		if err == nil && h.Status == "completed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the timed park was not woken: %+v %v", h, err)
		}
		time.Sleep(50 * time.Millisecond)
	}

	status, body = post(t, base, "/v1/workflows/desk/sessions/d1/turns", `{"message":"file it"}`)
	pending, _ := body["pending"].(map[string]any)
	if status != 200 || body["status"] != "awaiting_decision" || pending["parkId"] == nil {
		t.Fatalf("human park: %d %v", status, body)
	}
	status, body = post(t, base, "/v1/sessions/d1/decision", fmt.Sprintf(`{"to":"done","parkId":%q}`, pending["parkId"]))
	if status != 200 || body["kind"] != "completed" || body["reply"] != "Done." {
		t.Fatalf("decision: %d %v", status, body)
	}
	if status, body := post(t, base, "/v1/sessions/d1/decision", `{"to":"done"}`); status != 409 {
		t.Errorf("second decision: %d %v", status, body)
	}
	resp, err := http.Get(base + "/v1/sessions/d1/messages?after=0&limit=500")
	if err != nil {
		t.Fatal(err)
	}
	var page struct {
		Messages []struct{ Text, Note string }
		Next     int
	}
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil || resp.StatusCode != 200 || page.Next != len(page.Messages) ||
		page.Messages[len(page.Messages)-1].Text != "Done." {
		t.Errorf("messages read back: %d %+v %v", resp.StatusCode, page, err)
	}
	resp.Body.Close()
	if err := stop(); err != nil {
		t.Errorf("Serve: %v", err)
	}
}

// serveOn starts `archmax serve` on a free port over serveWorkspace(until) and a fresh
// store; stop ends Serve and returns its error. The server closes with t.
func serveOn(t *testing.T, until time.Time) (srv *server, base string, stop func() error) {
	t.Helper()
	workspace, script := serveWorkspace(t, until)
	srv, err := newServer(context.Background(), runner.Options{Workspace: workspace, StoreDir: t.TempDir(), ModelScript: script},
		continuation.Budget{}, 15*time.Minute, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln, time.Hour) }()
	t.Cleanup(cancel)
	return srv, "http://" + ln.Addr().String(), func() error { cancel(); return <-done }
}

// A timer lost with its process is caught by the next server's sweep at start.
func TestServeSweepsParksOfAnEarlierProcess(t *testing.T) {
	workspace, script := serveWorkspace(t, time.Now().Add(300*time.Millisecond))
	store := t.TempDir()
	opts := runner.Options{Workspace: workspace, StoreDir: store, ModelScript: script}
	first, err := newServer(context.Background(), opts, continuation.Budget{}, 15*time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := first.engines.Engine(context.Background(), "courier")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Send(context.Background(), "c2", session.SendInput{Message: "track"}); err != nil {
		t.Fatal(err)
	}
	first.Close() // the timer dies with the process
	time.Sleep(400 * time.Millisecond)

	// a new process: the model script restarts, so its next answer is the first entry's
	second, err := newServer(context.Background(), opts, continuation.Budget{}, 15*time.Minute, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	second.sweep(context.Background())
	sum, err := session.NewSessions(second.engines.Log(), nil, nil).Get(context.Background(), "c2")
	if err != nil || sum.Variables["trigger"].Value != session.TimerTrigger || sum.Variables["now"].Value == nil {
		t.Errorf("after the sweep the timer trigger was not delivered: %+v %v", sum, err)
	}
}

// A timed park of an earlier process, due later, is re-armed at start and wakes on time.
func TestServeRearmsTimersOfAnEarlierProcess(t *testing.T) {
	resumeAt := time.Now().Add(1200 * time.Millisecond)
	workspace, script := serveWorkspace(t, resumeAt)
	opts := runner.Options{Workspace: workspace, StoreDir: t.TempDir(), ModelScript: script}
	first, err := newServer(context.Background(), opts, continuation.Budget{}, 15*time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := first.engines.Engine(context.Background(), "courier")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Send(context.Background(), "c3", session.SendInput{Message: "track"}); err != nil {
		t.Fatal(err)
	}
	first.Close()

	second := restart(t, opts)
	sessions := session.NewSessions(second.engines.Log(), nil, nil)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		sum, err := sessions.Get(context.Background(), "c3")
		if err == nil && sum.Variables["trigger"].Value == session.TimerTrigger {
			if time.Now().Before(resumeAt) {
				t.Errorf("woken before resumeAt")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the re-armed park was not woken: %+v %v", sum, err)
		}
	}
}

// A park due at once (until in the past) is woken even though its timer fires while the
// parking call still holds the session: the busy wake is re-armed.
func TestServeWakesAParkDueAtOnce(t *testing.T) {
	workspace, script := serveWorkspace(t, time.Now().Add(-time.Hour))
	srv, err := newServer(context.Background(), runner.Options{Workspace: workspace, StoreDir: t.TempDir(), ModelScript: script}, continuation.Budget{}, 15*time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	eng, err := srv.engines.Engine(context.Background(), "courier")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Send(context.Background(), "c4", session.SendInput{Message: "track"}); err != nil {
		t.Fatal(err)
	}
	sessions := session.NewSessions(srv.engines.Log(), nil, nil)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		sum, err := sessions.Get(context.Background(), "c4")
		if err == nil && sum.Variables["trigger"].Value == session.TimerTrigger {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the park due at once was not woken: %+v %v", sum, err)
		}
	}
}

// The asynchronous path of `archmax serve`: without Prefer a turn is answered 202 (kind
// running, its turnId, a Location) once its opening is committed; it goes on in process, and
// polling the Location shows the same turn settle.
func TestServeAnswers202AndTheTurnSettles(t *testing.T) {
	srv, base, _ := serveOn(t, time.Now().Add(time.Hour))

	status, body := postWith(t, base, "/v1/workflows/desk/sessions/a1/turns", `{"message":"file it"}`, "")
	if status != http.StatusAccepted || body["kind"] != "running" || body["turnId"] == "" {
		t.Fatalf("turn without Prefer: %d %v, want 202 running", status, body)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(base + "/v1/sessions/a1")
		if err != nil {
			t.Fatal(err)
		}
		var sum map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&sum)
		resp.Body.Close()
		if sum["turnId"] != body["turnId"] {
			t.Fatalf("the summary names turn %v, the 202 named %v", sum["turnId"], body["turnId"])
		}
		// settled: the outcome is read back from the summary, as a 200 would have carried it
		// (the shared script parks the session awaiting input)
		if lt, _ := sum["lastTurn"].(map[string]any); lt["turnId"] == body["turnId"] {
			if sum["status"] != "awaiting_input" || lt["kind"] != "parked" || lt["status"] != "awaiting_input" ||
				lt["state"] != "intake" || lt["reply"] != "Waiting for the scan." {
				t.Errorf("settled summary %v: lastTurn = %v, want the 202's turn parked with its reply", sum["status"], lt)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the turn did not settle: %v", sum)
		}
		time.Sleep(20 * time.Millisecond)
	}
	srv.async.Wait()
}

// A turn an earlier process left interrupted (it stopped between two steps) is continued
// when the next `archmax serve` starts, without a new message.
func TestServeContinuesInterruptedTurnsAtStart(t *testing.T) {
	workspace, script := serveWorkspace(t, time.Now().Add(time.Hour))
	opts := runner.Options{Workspace: workspace, StoreDir: t.TempDir(), ModelScript: script}
	first, err := newServer(context.Background(), opts, continuation.Budget{}, 15*time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := first.engines.Engine(context.Background(), "desk")
	if err != nil {
		t.Fatal(err)
	}
	stop := session.WithStepDeadline(context.Background(), time.Now().Add(-time.Second))
	out, err := eng.Send(stop, "i1", session.SendInput{Message: "file it"})
	if err != nil || out.Kind != session.KindRunning {
		t.Fatalf("setup: %v %+v", err, out)
	}
	first.Close()

	second := restart(t, opts)
	second.async.Wait()
	sum, err := session.NewSessions(second.engines.Log(), nil, nil).Get(context.Background(), "i1")
	if err != nil || sum.Status == session.StatusRunning || sum.TurnID != out.TurnID {
		t.Fatalf("after the restart: %+v %v, want turn %s settled", sum, err, out.TurnID)
	}
}

// restart starts the next process on the same store and re-arms it as Serve does; it
// closes with t.
func restart(t *testing.T, opts runner.Options) *server {
	t.Helper()
	srv, err := newServer(context.Background(), opts, continuation.Budget{}, 15*time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	if err := srv.rearm(context.Background()); err != nil {
		t.Fatal(err)
	}
	return srv
}
