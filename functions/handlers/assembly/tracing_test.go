package assembly

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func tracingEnv(extra map[string]string) map[string]string {
	m := map[string]string{EnvTable: "archmax", EnvBucket: "archmax-data", EnvModel: "m"}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// Off unless an OTLP endpoint is set; the ADOT layer's endpoint turns it on with the
// function's name as the service; an endpoint that cannot work stops the function at init.
func TestTracingFromEnv(t *testing.T) {
	cfg, err := ConfigFromEnv(env(tracingEnv(nil)))
	if err != nil || cfg.Tracing != nil {
		t.Fatalf("without OTEL_* variables: %v, %v; want tracing off", cfg.Tracing, err)
	}
	a := &Assembly{}
	h := Traced(a, nil, func(_ context.Context, in int) (int, error) { return in + 1, nil })
	if out, err := h(context.Background(), 1); out != 2 || err != nil {
		t.Errorf("Traced without tracing answered %d, %v", out, err)
	}
	cfg, err = ConfigFromEnv(env(tracingEnv(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://localhost:4318",
		"AWS_LAMBDA_FUNCTION_NAME": "archmax-dev-turn"})))
	if err != nil || cfg.Tracing == nil {
		t.Fatalf("with the collector's endpoint: %v, %v", cfg.Tracing, err)
	}
	defer func() { _ = cfg.Tracing.Shutdown(context.Background()) }()
	if cfg.Tracing.Endpoint != "http://localhost:4318/v1/traces" || cfg.Tracing.TracerProvider() == nil {
		t.Errorf("endpoint %s", cfg.Tracing.Endpoint)
	}
	_, err = ConfigFromEnv(env(tracingEnv(map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "localhost:4318"})))
	var ce *ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
		t.Errorf("a bad endpoint: %v", err)
	}
}

// A collector that refuses the spans is one slog warning (scope tracing) however many
// invocations fail to flush, and the answers stay the handler's.
func TestTracedWarnsOnceInTheLog(t *testing.T) {
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "3600000") // only the flushes send
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusBadRequest) }))
	defer srv.Close()
	cfg, err := ConfigFromEnv(env(tracingEnv(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL})))
	if err != nil || cfg.Tracing == nil {
		t.Fatalf("%v, %v", cfg.Tracing, err)
	}
	defer func() { _ = cfg.Tracing.Shutdown(context.Background()) }()
	var logged bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logged, nil))
	h := Traced(&Assembly{Tracing: cfg.Tracing}, log, func(ctx context.Context, in int) (int, error) {
		_, s := cfg.Tracing.TracerProvider().Tracer("test").Start(ctx, "work")
		s.End()
		return in + 1, nil
	})
	for i := range 3 {
		if out, err := h(context.Background(), i); out != i+1 || err != nil {
			t.Fatalf("answered %d, %v", out, err)
		}
	}
	lines := strings.Split(strings.TrimSpace(logged.String()), "\n")
	var rec map[string]any
	if len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &rec) != nil || rec["level"] != "WARN" || rec["scope"] != "tracing" ||
		!strings.HasPrefix(rec["msg"].(string), "spans not exported: ") {
		t.Errorf("log = %s, want one WARN line of scope tracing", logged.String())
	}
}
