package tracing

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// Off unless an endpoint is named; disabled or exporter none wins over an endpoint.
func TestFromEnvOffUnlessConfigured(t *testing.T) {
	for name, vars := range map[string]map[string]string{
		"nothing":  {},
		"disabled": {EnvEndpoint: "http://localhost:4318", EnvDisabled: "true"},
		"none":     {EnvTracesEndpoint: "http://localhost:4318/v1/traces", EnvExporter: "none"},
	} {
		p, err := FromEnv(context.Background(), env(vars), "archmax")
		if err != nil || p != nil {
			t.Errorf("%s: %v, %v; want off", name, p, err)
		}
		// a nil provider is a no-op everywhere
		if p.TracerProvider() != nil || p.Flush(context.Background()) != nil || p.Shutdown(context.Background()) != nil {
			t.Errorf("%s: the nil provider did something", name)
		}
	}
}

func TestFromEnvRefusesWhatCannotWork(t *testing.T) {
	for name, vars := range map[string]map[string]string{
		"no scheme":    {EnvEndpoint: "localhost:4318"},
		"ftp":          {EnvTracesEndpoint: "ftp://collector/v1/traces"},
		"grpc":         {EnvEndpoint: "http://localhost:4317", EnvBaseProtocol: "grpc"},
		"zipkin":       {EnvEndpoint: "http://localhost:4318", EnvExporter: "zipkin"},
		"traces proto": {EnvEndpoint: "http://localhost:4318", EnvProtocol: "http/json"},
	} {
		_, err := FromEnv(context.Background(), env(vars), "archmax")
		var ce *ConfigError
		if !errors.As(err, &ce) {
			t.Errorf("%s: %v, want a *ConfigError", name, err)
		}
	}
}

// collector is an OTLP/HTTP receiver: it records the paths and sizes of the exports.
type collector struct {
	mu    sync.Mutex
	posts []string
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	c.mu.Lock()
	c.posts = append(c.posts, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type")+" "+map[bool]string{true: "body", false: "empty"}[len(body) > 0])
	c.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
}

// A span ended in an invocation is exported by the flush at its end: the base endpoint
// gets /v1/traces, the body is OTLP protobuf.
func TestHandlerFlushesEachInvocation(t *testing.T) {
	c := &collector{}
	srv := httptest.NewServer(c)
	defer srv.Close()
	p, err := FromEnv(context.Background(), env(map[string]string{EnvEndpoint: srv.URL + "/"}), "archmax-test")
	if err != nil || p == nil {
		t.Fatalf("FromEnv: %v, %v", p, err)
	}
	defer func() { _ = p.Shutdown(context.Background()) }()
	if p.Endpoint != srv.URL+"/v1/traces" {
		t.Errorf("endpoint %s", p.Endpoint)
	}
	var flushErr error
	h := Handler(p, func(err error) { flushErr = err }, func(ctx context.Context, in string) (string, error) {
		_, s := p.TracerProvider().Tracer("test").Start(ctx, "work "+in)
		s.End()
		return strings.ToUpper(in), nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // the invocation's deadline
	defer cancel()
	out, err := h(ctx, "a")
	if err != nil || out != "A" {
		t.Fatalf("handler answered %q, %v", out, err)
	}
	if flushErr != nil {
		t.Fatalf("flush: %v", flushErr)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.posts) != 1 || c.posts[0] != "POST /v1/traces application/x-protobuf body" {
		t.Errorf("exports = %q, want one POST of the span before the answer", c.posts)
	}
}

// A flush that cannot reach the collector is reported, and the answer stays the handler's.
func TestHandlerFlushFailureDoesNotFailTheCall(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusBadRequest) }))
	defer srv.Close()
	p, err := FromEnv(context.Background(), env(map[string]string{EnvTracesEndpoint: srv.URL + "/v1/traces"}), "archmax-test")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Shutdown(context.Background()) }()
	var flushErr error
	h := Handler(p, func(err error) { flushErr = err }, func(ctx context.Context, in string) (string, error) {
		_, s := p.TracerProvider().Tracer("test").Start(ctx, "work")
		s.End()
		return "ok", nil
	})
	if out, err := h(context.Background(), "x"); err != nil || out != "ok" {
		t.Fatalf("handler answered %q, %v", out, err)
	}
	if flushErr == nil {
		t.Error("a refused export was not reported")
	}
}

// streamBody is a response stream with a content type, as Lambda's response streaming reads.
type streamBody struct{ *strings.Reader }

func (streamBody) ContentType() string { return "text/event-stream" }

// A streamed answer is flushed when its stream ends, not when the handler returns: the
// spans of the work that feeds the stream end only then.
func TestHandlerFlushesAStreamAtItsEnd(t *testing.T) {
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "3600000") // no timed export: only a flush sends
	c := &collector{}
	srv := httptest.NewServer(c)
	defer srv.Close()
	p, err := FromEnv(context.Background(), env(map[string]string{EnvTracesEndpoint: srv.URL + "/v1/traces"}), "archmax-test")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Shutdown(context.Background()) }()
	h := Handler(p, nil, func(ctx context.Context, in string) (any, error) {
		_, s := p.TracerProvider().Tracer("test").Start(ctx, "streamed")
		s.End()
		return streamBody{strings.NewReader("data: x\n\n")}, nil
	})
	out, err := h(context.Background(), "x")
	if err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	before := len(c.posts)
	c.mu.Unlock()
	if before != 0 {
		t.Errorf("%d exports before the stream was read", before)
	}
	if ct, ok := out.(interface{ ContentType() string }); !ok || ct.ContentType() != "text/event-stream" {
		t.Errorf("the stream lost its content type: %T", out)
	}
	body, err := io.ReadAll(out.(io.Reader))
	if err != nil || string(body) != "data: x\n\n" {
		t.Fatalf("stream read %q, %v", body, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.posts) != 1 {
		t.Errorf("%d exports after the stream ended, want 1", len(c.posts))
	}
}
