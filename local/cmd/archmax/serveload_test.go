package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/local/apigw"
	"github.com/archmax-ai/archmax/local/runner"
)

// `archmax serve` on a workspace one of whose workflows does not load: the findings at start,
// a request for that workflow answered 422 WorkflowLoadError with them, the others served.
func TestServeReportsAWorkflowThatDoesNotLoad(t *testing.T) {
	workspace, script := serveWorkspace(t, time.Now().Add(time.Hour))
	bad := filepath.Join(workspace, "workflows", "broken", "workflow.yaml")
	if err := os.MkdirAll(filepath.Dir(bad), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("statez:\n  a:\n    instructions: A.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	future := filepath.Join(workspace, "workflows", "future", "workflow.yaml")
	if err := os.MkdirAll(filepath.Dir(future), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(future, []byte("runtime: { version: \"99.0\" }\nstates:\n  a:\n    triggers:\n      manual:\n    instructions: A.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var said bytes.Buffer
	if got := reportUnloadable(t.Context(), workspace, &said); len(got) != 2 || got[0] != "broken" || got[1] != "future" {
		t.Errorf("unloadable = %v", got)
	}
	for _, want := range []string{
		"archmax serve: workflow 'broken' does not load; its requests are answered 422 until it is fixed ('archmax validate broken'):\n",
		`  workflows/broken/workflow.yaml:1:1: error schema.unknown-key: Unrecognized key: "statez"`,
		"      hint: did you mean 'states'?",
	} {
		if !strings.Contains(said.String(), want) {
			t.Errorf("start report lacks %q:\n%s", want, said.String())
		}
	}
	if strings.Contains(said.String(), "'desk'") || strings.Contains(said.String(), "'courier'") {
		t.Errorf("a workflow that loads is reported:\n%s", said.String())
	}

	_, base, _ := serveWith(t, runner.Options{Workspace: workspace, StoreDir: t.TempDir(), ModelScript: script}, "127.0.0.1:0", apigw.Policy{})
	status, body := post(t, base, "/v1/workflows/broken/sessions", `{"message":"hi"}`)
	e, _ := body["error"].(map[string]any)
	details, _ := e["details"].(map[string]any)
	diags, _ := details["diagnostics"].([]any)
	if status != http.StatusUnprocessableEntity || e["code"] != "WorkflowLoadError" || len(diags) == 0 {
		t.Errorf("broken workflow: %d %v", status, body)
	}
	if status, body := post(t, base, "/v1/workflows/desk/sessions/d1/turns", `{"message":"file it"}`); status != http.StatusOK {
		t.Errorf("a workflow that loads: %d %v", status, body)
	}
}

// Only an unloadable workflow's 500 becomes 422: another 500 and every other answer pass
// through as they were written.
func TestUnloadableIs422LeavesOtherAnswers(t *testing.T) {
	for _, c := range []struct {
		status int
		body   string
		want   int
	}{
		{500, `{"error":{"code":"WorkflowLoadError","message":"x"}}`, 422},
		{500, `{"error":{"code":"UnsupportedRuntimeContractError","message":"x"}}`, 422},
		{500, `{"error":{"code":"InternalError","message":"x"}}`, 500},
		{500, `not json`, 500},
		{404, `{"error":{"code":"WorkflowLoadError"}}`, 404},
		{200, `{}`, 200},
	} {
		h := unloadableIs422(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(c.status)
			_, _ = w.Write([]byte(c.body))
		}))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		if rec.Code != c.want || rec.Body.String() != c.body || rec.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%d %s: got %d %q", c.status, c.body, rec.Code, rec.Body.String())
		}
	}
}
