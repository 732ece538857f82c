package assembly

import (
	"context"
	"errors"
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
