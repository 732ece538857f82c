package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/functions/handlers/access"
	"github.com/archmax-ai/archmax/functions/handlers/continuation"
	"github.com/archmax-ai/archmax/functions/handlers/httpapi"
	"github.com/archmax-ai/archmax/local/apigw"
	"github.com/archmax-ai/archmax/local/runner"
)

// principalServer serves serveDesk, whose model hands every request to sign-off, with
// httpOpts; it stops with t.
func principalServer(t *testing.T, httpOpts ...httpapi.Option) string {
	t.Helper()
	dir := t.TempDir()
	for name, src := range map[string]string{
		"workflows/desk/workflow.yaml": serveDesk,
		"desk.model.yaml": `
agent:
  - toolCalls:
      - name: archmax_advance
        input: { to: signoff, reason: ready }
  - text: Sent to sign-off.
  - text: Done.
`,
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := newServer(context.Background(), runner.Options{Workspace: dir, StoreDir: t.TempDir(), ModelScript: filepath.Join(dir, "desk.model.yaml")},
		continuation.Budget{}, 15*time.Minute, slog.New(slog.DiscardHandler), httpOpts...)
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
	go func() { done <- srv.Serve(ctx, ln, time.Hour, apigw.Policy{}) }()
	t.Cleanup(func() { cancel(); <-done })
	return "http://" + ln.Addr().String()
}

func getSummary(t *testing.T, base, id string) map[string]any {
	t.Helper()
	resp, err := http.Get(base + "/v1/sessions/" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("summary of %s: %d %v", id, resp.StatusCode, err)
	}
	return out
}

// Issue 17: `archmax serve` has one principal — "local" unless --principal names another —
// holding the admin role: it starts, reads and decides every session, and is recorded as
// the sessions' owner and decider.
func TestServeHasOneLocalPrincipal(t *testing.T) {
	base := principalServer(t) // as newServer defaults: the "local" principal
	if status, body := post(t, base, "/v1/workflows/desk/sessions/p1/turns", `{"message":"file it"}`); status != http.StatusOK || body["status"] != "awaiting_decision" {
		t.Fatalf("park: %d %v", status, body)
	}
	if owner, _ := getSummary(t, base, "p1")["owner"].(map[string]any); owner["kind"] != "local" || owner["id"] != "local" {
		t.Fatalf("owner = %v, want the local principal", owner)
	}
	if status, body := post(t, base, "/v1/sessions/p1/decision", `{"to":"done"}`); status != http.StatusOK || body["kind"] != "completed" {
		t.Fatalf("the local principal decides: %d %v", status, body)
	}

	named := principalServer(t, httpapi.WithLocalCaller(localCaller("dana")))
	if status, _ := post(t, named, "/v1/workflows/desk/sessions/p2/turns", `{"message":"file it"}`); status != http.StatusOK {
		t.Fatal("park")
	}
	sum := getSummary(t, named, "p2")
	if owner, _ := sum["owner"].(map[string]any); owner["id"] != "dana" {
		t.Fatalf("owner = %v, want dana", sum["owner"])
	}
}

// --four-eyes with one principal: its own sessions cannot be decided (403 FourEyesError).
func TestServeFourEyes(t *testing.T) {
	base := principalServer(t, httpapi.WithLocalCaller(localCaller("")), httpapi.WithPolicy(access.Policy{FourEyes: true}))
	if status, _ := post(t, base, "/v1/workflows/desk/sessions/f1/turns", `{"message":"file it"}`); status != http.StatusOK {
		t.Fatal("park")
	}
	status, body := post(t, base, "/v1/sessions/f1/decision", `{"to":"done"}`)
	if e, _ := body["error"].(map[string]any); status != http.StatusForbidden || e["code"] != access.CodeFourEyes {
		t.Fatalf("decision under four-eyes: %d %v", status, body)
	}
	if getSummary(t, base, "f1")["status"] != "awaiting_decision" {
		t.Fatal("the refused decision changed the session")
	}
}

// The --principal flag names the caller; its default is "local".
func TestServePrincipalFlag(t *testing.T) {
	cmd := newServeCommand()
	if f := cmd.Flags().Lookup("principal"); f == nil || f.DefValue != "local" {
		t.Fatalf("--principal = %+v", f)
	}
	if f := cmd.Flags().Lookup("four-eyes"); f == nil || f.DefValue != "false" {
		t.Fatalf("--four-eyes = %+v", f)
	}
}
