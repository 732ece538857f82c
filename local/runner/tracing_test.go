package runner

import (
	"bytes"
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/archmax-ai/archmax/core/events"
	"github.com/archmax-ai/archmax/core/session"
)

// Locally tracing is off unless an OTLP endpoint is set; with one, the spans of a run
// reach the collector by the time the environment closes (the end of `archmax run`).
func TestTracingExportsOnClose(t *testing.T) {
	var mu sync.Mutex
	var posts []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		posts = append(posts, r.URL.Path)
		mu.Unlock()
		if len(body) == 0 {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "3600000") // no timed export: only the close sends

	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	off, err := Open(context.Background(), Options{Workspace: workspace, StoreDir: t.TempDir(), ModelScript: script("happy")})
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err := off.Config(); err != nil || cfg.TracerProvider != nil {
		t.Errorf("without an endpoint: provider %v, %v", cfg.TracerProvider, err)
	}
	_ = off.Close()

	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	env, err := Open(context.Background(), Options{Workspace: workspace, StoreDir: t.TempDir(), ModelScript: script("happy")})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := env.Engine("access-request")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Send(context.Background(), "s1", session.SendInput{Message: dana}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	before := len(posts)
	mu.Unlock()
	if err := env.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if before != 0 || len(posts) != 1 || posts[0] != "/v1/traces" {
		t.Errorf("exports before close %d, after %v; want one POST /v1/traces at close", before, posts)
	}

	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "localhost:4318")
	if _, err := Open(context.Background(), Options{Workspace: workspace, StoreDir: t.TempDir(), ModelScript: script("happy")}); err == nil {
		t.Error("an endpoint that is not a URL was accepted")
	}
}

// A collector that cannot be reached is one warning event (scope tracing) to the
// environment's handler — however many batches fail — and nothing on the standard logger;
// the run itself is unaffected.
func TestTracingUnreachableCollectorWarnsOnce(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // nothing listens there now: every export is refused
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+addr)
	t.Setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "1") // a batch per span: many failed exports
	var std bytes.Buffer
	orig := log.Writer()
	log.SetOutput(&std)
	defer log.SetOutput(orig)
	var mu sync.Mutex
	var warnings []string
	onEvent := func(e events.Event) {
		if e.Type == events.Warning && e.Str("scope") == "tracing" {
			mu.Lock()
			warnings = append(warnings, e.Str("message"))
			mu.Unlock()
		}
	}
	env, err := Open(context.Background(), Options{Workspace: workspace, StoreDir: t.TempDir(), ModelScript: script("happy"), Events: onEvent})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := env.Engine("access-request")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := eng.Send(context.Background(), "s1", session.SendInput{Message: dana}); err != nil || out.Kind != session.KindCompleted {
		t.Fatalf("the run: %v %v", out, err)
	}
	if err := env.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(warnings) != 1 || !strings.HasPrefix(warnings[0], "spans not exported: ") || !strings.Contains(warnings[0], addr) {
		t.Errorf("tracing warnings = %q, want one naming the collector", warnings)
	}
	if std.Len() != 0 {
		t.Errorf("the standard logger got %q", std.String())
	}
}
