package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/functions/handlers/continuation"
	"github.com/archmax-ai/archmax/local/apigw"
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
	deadline := time.Now().Add(time.Minute) // a hang guard
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

// serveOn starts `archmax serve` on a free loopback port over serveWorkspace(until) and a
// fresh store; stop ends Serve and returns its error. The server closes with t.
func serveOn(t *testing.T, until time.Time) (srv *server, base string, stop func() error) {
	t.Helper()
	workspace, script := serveWorkspace(t, until)
	return serveWith(t, runner.Options{Workspace: workspace, StoreDir: t.TempDir(), ModelScript: script}, "127.0.0.1:0", apigw.Policy{})
}

// serveWith starts `archmax serve` over opts on addr behind access.
func serveWith(t *testing.T, opts runner.Options, addr string, access apigw.Policy) (srv *server, base string, stop func() error) {
	t.Helper()
	srv, err := newServer(context.Background(), opts, continuation.Budget{}, 15*time.Minute, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln, time.Hour, access) }()
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
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) { // polls, with a hang guard
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
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) { // polls, with a hang guard
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

// call sends one request to the server at base with the given Host ("" = the URL's) and
// headers, and returns the status, the JSON answer (nil when not JSON) and the headers.
func call(t *testing.T, method, url, host string, header map[string]string, body string) (int, map[string]any, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return resp.StatusCode, out, resp.Header
}

// errorCode is the code of an {"error": {...}} answer ("" for any other).
func errorCode(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

// A web page on another site cannot drive or read `archmax serve`: its simple requests
// (text/plain, a form, Origin null) start nothing, its reads of a transcript are refused,
// its preflight grants nothing, and a DNS-rebinding name is not answered.
func TestServeRefusesCrossSiteBrowserRequests(t *testing.T) {
	srv, base, _ := serveOn(t, time.Now().Add(time.Hour))
	hostPort := strings.TrimPrefix(base, "http://")
	_, port, _ := net.SplitHostPort(hostPort)
	evil := map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors"}
	with := func(m map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			out[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	refused := func(name string, status int, body map[string]any, header http.Header, wantStatus int, wantCode string) {
		t.Helper()
		e, _ := body["error"].(map[string]any)
		if status != wantStatus || errorCode(body) != wantCode || e["message"] == "" {
			t.Errorf("%s: %d %v, want %d %s", name, status, body, wantStatus, wantCode)
		}
		for k := range header {
			if strings.HasPrefix(strings.ToLower(k), "access-control-") {
				t.Errorf("%s: answered %s: %v (no CORS is granted)", name, k, header[k])
			}
		}
	}

	// a form on evil.example posting text/plain or url-encoded JSON-looking bodies (no preflight)
	s, b, h := call(t, "POST", base+"/v1/workflows/desk/sessions", "", with(evil, "Content-Type", "text/plain"), `{"message":"file it"}`)
	refused("cross-origin text/plain start", s, b, h, 403, "ForbiddenOriginError")
	s, b, h = call(t, "POST", base+"/v1/workflows/desk/sessions/f1/turns", "", with(evil, "Content-Type", "application/x-www-form-urlencoded"), `{"message":"file it"}=`)
	refused("cross-origin form turn", s, b, h, 403, "ForbiddenOriginError")
	s, b, h = call(t, "POST", base+"/v1/workflows/desk/sessions/f2/turns", "", with(evil, "Content-Type", "multipart/form-data; boundary=x"), "--x\r\n\r\n--x--")
	refused("cross-origin multipart turn", s, b, h, 403, "ForbiddenOriginError")
	// a sandboxed frame, a file:// page or a redirect sends Origin: null
	s, b, h = call(t, "POST", base+"/v1/sessions/d1/decision", "", map[string]string{"Origin": "null", "Content-Type": "text/plain"}, `{"to":"done"}`)
	refused("Origin null decision", s, b, h, 403, "ForbiddenOriginError")
	// even a JSON body from a foreign page (it would need a preflight, which is refused too)
	s, b, h = call(t, "POST", base+"/v1/workflows/desk/sessions", "", with(evil, "Content-Type", "application/json"), `{"message":"file it"}`)
	refused("cross-origin JSON start", s, b, h, 403, "ForbiddenOriginError")
	// another local dev server (same host, another port) is another origin
	s, b, h = call(t, "POST", base+"/v1/workflows/desk/sessions", "", map[string]string{"Origin": "http://127.0.0.1:1", "Content-Type": "text/plain"}, `{"message":"file it"}`)
	refused("another port's page", s, b, h, 403, "ForbiddenOriginError")
	// no Origin but the browser says cross-site (e.g. a navigation or a no-cors load)
	s, b, h = call(t, "POST", base+"/v1/workflows/desk/sessions", "", map[string]string{"Sec-Fetch-Site": "cross-site", "Content-Type": "text/plain"}, `{"message":"file it"}`)
	refused("Sec-Fetch-Site cross-site", s, b, h, 403, "ForbiddenOriginError")
	if _, list, _ := call(t, "GET", base+"/v1/sessions", "", nil, ""); len(list["sessions"].([]any)) != 0 {
		t.Fatalf("a refused request started a session: %v", list)
	}

	// a session exists; a foreign page cannot read it
	if status, body := postWith(t, base, "/v1/workflows/desk/sessions/r1/turns", `{"message":"file it"}`, "wait=20"); status != 200 {
		t.Fatalf("setup: %d %v", status, body)
	}
	s, b, h = call(t, "GET", base+"/v1/sessions/r1/messages?after=0", "", map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}, "")
	refused("cross-origin transcript read", s, b, h, 403, "ForbiddenOriginError")
	s, b, h = call(t, "GET", base+"/v1/sessions/r1", "", map[string]string{"Sec-Fetch-Site": "same-site"}, "")
	refused("same-site read (another port of localhost)", s, b, h, 403, "ForbiddenOriginError")
	// the preflight a JSON fetch needs grants nothing
	s, b, h = call(t, "OPTIONS", base+"/v1/workflows/desk/sessions", "", map[string]string{"Origin": "http://evil.example",
		"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"}, "")
	refused("preflight", s, b, h, 403, "ForbiddenOriginError")

	// DNS rebinding: evil.example now resolves to 127.0.0.1, so the page is "same-origin"
	rebound := "evil.example:" + port
	s, b, h = call(t, "GET", base+"/v1/sessions/r1/messages?after=0", rebound, map[string]string{"Sec-Fetch-Site": "same-origin"}, "")
	refused("rebinding read", s, b, h, 421, "MisdirectedHostError")
	s, b, h = call(t, "POST", base+"/v1/workflows/desk/sessions", rebound, map[string]string{"Origin": "http://" + rebound, "Content-Type": "text/plain"}, `{"message":"x"}`)
	refused("rebinding start", s, b, h, 421, "MisdirectedHostError")
	for _, host := range []string{"localhost.:" + port, "localhost.evil.example:" + port, "127.0.0.1.nip.io:" + port, "0.0.0.0:" + port, "[::1]x"} {
		s, b, h = call(t, "GET", base+"/v1/sessions", host, nil, "")
		refused("Host "+host, s, b, h, 421, "MisdirectedHostError")
	}
	// the loopback names, in any case, with or without the port
	for _, host := range []string{hostPort, "localhost:" + port, "LocalHost:" + port, "[::1]:" + port, "localhost", "127.0.0.1"} {
		if s, b, _ := call(t, "GET", base+"/v1/sessions/r1", host, nil, ""); s != 200 {
			t.Errorf("Host %s: %d %v", host, s, b)
		}
	}

	// the server's own page may call it, with JSON only
	own := map[string]string{"Origin": base, "Sec-Fetch-Site": "same-origin"}
	s, b, h = call(t, "POST", base+"/v1/workflows/desk/sessions", "", with(own, "Content-Type", "text/plain;charset=UTF-8"), `{"message":"x"}`)
	refused("own origin, text/plain", s, b, h, 415, "UnsupportedMediaTypeError")
	s, b, h = call(t, "POST", base+"/v1/workflows/desk/sessions", "", own, `{"message":"x"}`)
	refused("own origin, no Content-Type", s, b, h, 415, "UnsupportedMediaTypeError")
	if s, b, _ := call(t, "GET", base+"/v1/sessions/r1", "", own, ""); s != 200 {
		t.Errorf("own origin read: %d %v", s, b)
	}
	if s, b, _ := call(t, "POST", base+"/v1/sessions/r1/decision", "", with(own, "Content-Type", "application/json; charset=utf-8"), `{"to":"done"}`); s != 409 || errorCode(b) != "SessionNotParkedError" {
		t.Errorf("own origin JSON decision: %d %v, want the handler's 409 (r1 waits for input)", s, b)
	}
	srv.async.Wait()
}

// With a bearer token every route wants it, in the Authorization header only.
func TestServeBearerToken(t *testing.T) {
	workspace, script := serveWorkspace(t, time.Now().Add(time.Hour))
	token := apigw.NewToken()
	srv, base, _ := serveWith(t, runner.Options{Workspace: workspace, StoreDir: t.TempDir(), ModelScript: script}, "127.0.0.1:0", apigw.Policy{Token: token})
	bearer := map[string]string{"Authorization": "Bearer " + token, "Content-Type": "application/json", "Prefer": "wait=20"}
	for _, c := range []struct {
		name, method, path string
		header             map[string]string
	}{
		{"no token, start", "POST", "/v1/workflows/desk/sessions", map[string]string{"Content-Type": "application/json"}},
		{"wrong token, turn", "POST", "/v1/workflows/desk/sessions/t1/turns", map[string]string{"Authorization": "Bearer " + apigw.NewToken()}},
		{"token in the query, read", "GET", "/v1/sessions?access_token=" + token, nil},
		{"token in the query, transcript", "GET", "/v1/sessions/t1/messages?after=0&token=" + token, nil},
		{"basic auth", "GET", "/v1/sessions", map[string]string{"Authorization": "Basic " + token}},
	} {
		s, b, h := call(t, c.method, base+c.path, "", c.header, `{"message":"file it"}`)
		if s != 401 || errorCode(b) != "UnauthorizedError" || !strings.HasPrefix(h.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s: %d %v %v", c.name, s, b, h)
		}
	}
	if _, list, _ := call(t, "GET", base+"/v1/sessions", "", bearer, ""); len(list["sessions"].([]any)) != 0 {
		t.Fatalf("a refused request started a session: %v", list)
	}
	if s, b, _ := call(t, "POST", base+"/v1/workflows/desk/sessions/t1/turns", "", bearer, `{"message":"file it"}`); s != 200 || b["status"] != "awaiting_input" {
		t.Errorf("with the token: %d %v", s, b)
	}
	if s, b, _ := call(t, "GET", base+"/v1/sessions/t1/messages?after=0", "", bearer, ""); s != 200 || b["messages"] == nil {
		t.Errorf("read with the token: %d %v", s, b)
	}
	srv.async.Wait()
}

// A server on the IPv6 loopback answers under its own [::1] origin.
func TestServeOnIPv6Loopback(t *testing.T) {
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	}
	ln.Close()
	workspace, script := serveWorkspace(t, time.Now().Add(time.Hour))
	srv, base, _ := serveWith(t, runner.Options{Workspace: workspace, StoreDir: t.TempDir(), ModelScript: script}, "[::1]:0", apigw.Policy{})
	if !strings.HasPrefix(base, "http://[::1]:") {
		t.Fatalf("base %s", base)
	}
	own := map[string]string{"Origin": base, "Content-Type": "application/json", "Prefer": "wait=20"}
	if s, b, _ := call(t, "POST", base+"/v1/workflows/desk/sessions/v6/turns", "", own, `{"message":"file it"}`); s != 200 {
		t.Errorf("own [::1] origin: %d %v", s, b)
	}
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(base, "http://"))
	if s, b, _ := call(t, "GET", base+"/v1/sessions/v6", "localhost:"+port, nil, ""); s != 200 {
		t.Errorf("Host localhost on [::1]: %d %v", s, b)
	}
	if s, b, _ := call(t, "GET", base+"/v1/sessions/v6", "", map[string]string{"Origin": "http://localhost:" + port}, ""); s != 403 {
		t.Errorf("Origin localhost on a [::1] request: %d %v", s, b)
	}
	srv.async.Wait()
}

// The README's curl lines (no Origin; -d sends form encoding) keep working against the
// example workspace, with the placeholders filled in; its line for another machine
// (devbox.lan, the token in ARCHMAX_SERVE_TOKEN) works against a server started as it says.
func TestServeREADMECurlLines(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl here")
	}
	readme, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	start := strings.Index(text, "\narchmax serve [")
	end := strings.Index(text[start:], "\n### ")
	if start < 0 || end < 0 {
		t.Fatal("no serve section in the README")
	}
	var lines []string
	inShell := false // inside a ```sh block
	for _, l := range strings.Split(strings.ReplaceAll(text[start:start+end], "\\\n", " "), "\n") {
		switch {
		case strings.HasPrefix(l, "```"):
			inShell = l == "```sh"
		case inShell && strings.HasPrefix(l, "curl "):
			lines = append(lines, l)
		}
	}
	if len(lines) < 8 {
		t.Fatalf("only %d curl lines found in the README's serve section", len(lines))
	}
	srv, base, _ := serveWith(t, runner.Options{Workspace: "../../../fixtures/access-desk", StoreDir: t.TempDir(),
		ModelScript: "../../../fixtures/access-desk/model-scripts/happy.model.yaml"}, "127.0.0.1:0", apigw.Policy{})
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(base, "http://"))
	token := apigw.NewToken()
	_, remote, _ := serveWith(t, runner.Options{Workspace: "../../../fixtures/access-desk", StoreDir: t.TempDir(),
		ModelScript: "../../../fixtures/access-desk/model-scripts/happy.model.yaml"}, "127.0.0.1:0", apigw.Policy{AllowHosts: []string{"devbox.lan"}, Token: token})
	id := ""
	placeholder := regexp.MustCompile(`\bID\b`)
	for i, l := range lines {
		// the status on its own line after the answer (-w), whatever the line's own flags print
		flags := `curl -w '\n%{http_code}' `
		switch {
		case strings.Contains(l, "localhost:8080"):
			l = strings.ReplaceAll(l, "localhost:8080", "localhost:"+port)
		case strings.Contains(l, "devbox.lan:8080"):
			// keep the Host the line sends; connect to the test's server
			flags += "--connect-to devbox.lan:8080:" + strings.TrimPrefix(remote, "http://") + " "
		default:
			t.Errorf("README curl line calls neither localhost:8080 nor devbox.lan:8080: %s", l)
			continue
		}
		l = strings.ReplaceAll(placeholder.ReplaceAllString(l, id), "WORKFLOW", "access-request")
		cmd := exec.Command("sh", "-c", strings.Replace(l, "curl ", flags, 1))
		cmd.Env = append(os.Environ(), envServeToken+"="+token)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		nl := bytes.LastIndexByte(out, '\n')
		answer, code := string(out[:max(nl, 0)]), string(out[nl+1:])
		t.Logf("%s → %s", l, code)
		switch {
		case i == 0:
			if code != "202" {
				t.Fatalf("the README's start: %s\n%s", code, answer)
			}
			body := answer[strings.Index(answer, "\r\n\r\n")+4:]
			var started map[string]any
			if err := json.Unmarshal([]byte(body), &started); err != nil || started["sessionId"] == nil {
				t.Fatalf("the README's start answered %s", answer)
			}
			id = started["sessionId"].(string)
		case !strings.Contains(l, " -d "): // a read
			if code != "200" {
				t.Errorf("%s: %s %s", l, code, answer)
			}
		default: // a write: whatever the handler says of it, never the guard's refusals
			if code == "401" || code == "403" || code == "415" || code == "421" || code == "000" {
				t.Errorf("%s: %s %s", l, code, answer)
			}
		}
	}
	srv.async.Wait()
}

// The command line: a non-loopback --addr makes a token and prints it with the listen line;
// --token and ARCHMAX_SERVE_TOKEN are checked before anything listens, as --allow-host is.
func TestServeCommandTokenAndHosts(t *testing.T) {
	workspace, script := serveWorkspace(t, time.Now().Add(time.Hour))
	args := []string{"serve", "--workspace", workspace, "--model-script", script, "--store", t.TempDir()}
	for _, c := range []struct {
		name  string
		env   string
		extra []string
		want  string
	}{
		{"short --token", "", []string{"--token", "short"}, "--token: the bearer token must be at least"},
		{"short env token", "short", nil, envServeToken + ": the bearer token must be at least"},
		{"a URL as a host", "", []string{"--allow-host", "http://devbox.lan:8080"}, "archmax: --allow-host \"http://devbox.lan:8080\": give the host name only"},
		{"a wildcard host", "", []string{"--allow-host", "*.lan"}, "archmax: --allow-host \"*.lan\": wildcards are not taken"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(envServeToken, c.env)
			code, _, stderr := run(t, append(append(args, "--addr", "127.0.0.1:0"), c.extra...)...)
			if code != exitUsage || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stderr %q, want %d and %q", code, stderr, exitUsage, c.want)
			}
		})
	}

	t.Setenv(envServeToken, "")
	base, lines, stop := serveCommand(t, 2, append(args, "--addr", "0.0.0.0:0")...)
	m := regexp.MustCompile(`'Authorization: Bearer ([A-Za-z0-9_-]{43})'`).FindStringSubmatch(lines[1])
	if !strings.Contains(lines[0], "listening on http://") || m == nil {
		t.Fatalf("no token printed at start: %q", lines)
	}
	if s, b, _ := call(t, "GET", base+"/v1/sessions", "", nil, ""); s != 401 {
		t.Errorf("without the printed token: %d %v", s, b)
	}
	if s, b, _ := call(t, "GET", base+"/v1/sessions", "", map[string]string{"Authorization": "Bearer " + m[1]}, ""); s != 200 {
		t.Errorf("with the printed token: %d %v", s, b)
	}
	stop()

	// a loopback bind opts in with --token (its value is not printed) and takes --allow-host
	token := apigw.NewToken()
	base, lines, stop = serveCommand(t, 2, append(args, "--addr", "127.0.0.1:0", "--token", token, "--allow-host", "devbox.lan")...)
	if strings.Contains(strings.Join(lines, "\n"), token) || !strings.Contains(lines[1], "<the --token token>") {
		t.Errorf("start lines %q", lines)
	}
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(base, "http://"))
	bearer := map[string]string{"Authorization": "Bearer " + token}
	if s, b, _ := call(t, "GET", base+"/v1/sessions", "devbox.lan:"+port, bearer, ""); s != 200 {
		t.Errorf("--allow-host devbox.lan: %d %v", s, b)
	}
	if s, b, _ := call(t, "GET", base+"/v1/sessions", "", nil, ""); s != 401 {
		t.Errorf("--token on loopback, none sent: %d %v", s, b)
	}
	stop()

	// without one, a loopback bind asks for none and prints no token line
	base, _, stop = serveCommand(t, 1, append(args, "--addr", "127.0.0.1:0")...)
	if s, b, _ := call(t, "GET", base+"/v1/sessions", "", nil, ""); s != 200 {
		t.Errorf("loopback, no token: %d %v", s, b)
	}
	stop()
}

// serveCommand runs `archmax <args>` until stop, and returns the URL that reaches it over
// loopback and the first want lines it printed on stdout; stop fails the test when it
// printed more.
func serveCommand(t *testing.T, want int, args ...string) (base string, lines []string, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() { done <- execute(ctx, args, pw, io.Discard); pw.Close() }()
	out := bufio.NewScanner(pr)
	for len(lines) < want && out.Scan() {
		lines = append(lines, out.Text())
	}
	if len(lines) < want {
		cancel()
		t.Fatalf("archmax %v printed %q (exit %d)", args, lines, <-done)
	}
	more := make(chan []string, 1)
	go func() {
		var rest []string
		for out.Scan() {
			rest = append(rest, out.Text())
		}
		more <- rest
	}()
	addr := regexp.MustCompile(`http://(\S+) `).FindStringSubmatch(lines[0])
	if addr == nil {
		cancel()
		t.Fatalf("no listen address in %q", lines[0])
	}
	_, port, _ := net.SplitHostPort(addr[1])
	return "http://127.0.0.1:" + port, lines, func() {
		t.Helper()
		cancel()
		if code := <-done; code != exitOK {
			t.Errorf("archmax %v exited %d", args, code)
		}
		if rest := <-more; len(rest) > 0 {
			t.Errorf("archmax %v printed more than %q: %q", args, lines, rest)
		}
	}
}
