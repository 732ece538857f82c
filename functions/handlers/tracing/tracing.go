// Package tracing sets up the OpenTelemetry trace export of the functions and of
// `archmax run`/`archmax serve` from the standard OTEL_* environment variables, off unless
// an OTLP endpoint is named (docs/operations.md "Traces"; docs/DECISIONS.md TR22-*).
//
// With OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (used as given) or OTEL_EXPORTER_OTLP_ENDPOINT
// (with /v1/traces appended) set, spans are batched and exported over OTLP/HTTP
// (protobuf); on AWS the ADOT Lambda layer's collector listens on http://localhost:4318 and
// sends them on to X-Ray. The exporter reads the other OTEL_EXPORTER_OTLP_* variables itself
// (headers, timeout, compression, certificates), the provider OTEL_TRACES_SAMPLER(_ARG) and
// the resource OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES; FromEnv checks every one of
// them first (CheckEnv), so a setting that cannot work stops the process at its start
// instead of being dropped with a log line. OTEL_SDK_DISABLED=true or
// OTEL_TRACES_EXPORTER=none turns it off whatever the endpoint. The SDK's own errors go to
// the provider's ReportErrors (report.go).
package tracing

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// The environment variables FromEnv reads itself, beside the exporter's (Env*Exporter*)
// and the SDK's (EnvSampler*, EnvResourceAttributes) that it checks before they are used.
const (
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvProtocol       = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	EnvBaseProtocol   = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvExporter       = "OTEL_TRACES_EXPORTER"
	EnvDisabled       = "OTEL_SDK_DISABLED"
	EnvServiceName    = "OTEL_SERVICE_NAME"

	EnvResourceAttributes = "OTEL_RESOURCE_ATTRIBUTES"
	EnvSampler            = "OTEL_TRACES_SAMPLER"
	EnvSamplerArg         = "OTEL_TRACES_SAMPLER_ARG"
)

// DefaultFlushTimeout bounds a flush when the context has no deadline: 2 s.
const DefaultFlushTimeout = 2 * time.Second

// flushReserve is kept of an invocation's remaining time after a flush: Lambda needs a
// moment to take the answer.
const flushReserve = 100 * time.Millisecond

// Provider is the process's trace export: nil (a nil *Provider) when tracing is off, and
// then every method is a no-op.
type Provider struct {
	sdk      *sdktrace.TracerProvider
	Endpoint string // the OTLP/HTTP traces URL spans go to

	mu   sync.Mutex
	warn func(message string) // ReportErrors; nil: not yet told where
	seen map[string]bool      // the messages already reported
}

// ConfigError is an OTEL_* setting that cannot work (a function stops at init with it).
// Value is the setting as the user gave it, a URL's password masked; "" when the value
// itself is not shown (it can hold a secret: headers).
type ConfigError struct {
	Variable, Value, Reason string
}

func (e *ConfigError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("tracing: %s: %s", e.Variable, e.Reason)
	}
	return fmt.Sprintf("tracing: %s=%q: %s", e.Variable, e.Value, e.Reason)
}

// Name returns the error name.
func (e *ConfigError) Name() string { return "TracingConfigError" }

// FromEnv returns the trace export the environment asks for through getenv — nil when it
// names no OTLP endpoint (or disables the SDK or the traces exporter) — with service as the
// service name unless OTEL_SERVICE_NAME gives one. It makes no network call. Every OTEL_*
// setting it honours is checked first (CheckEnv): one that cannot work is a *ConfigError
// and nothing is built. From then on the OpenTelemetry SDK's own errors (a batch that
// could not be exported) go to the provider's ReportErrors, never to the standard logger.
func FromEnv(ctx context.Context, getenv func(string) string, service string, attrs ...attribute.KeyValue) (*Provider, error) {
	endpoint, on, err := CheckEnv(getenv)
	if err != nil || !on {
		return nil, err
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpoint))
	if err != nil {
		return nil, fmt.Errorf("tracing: the OTLP exporter: %w", err)
	}
	if name := strings.TrimSpace(getenv(EnvServiceName)); name != "" {
		service = name
	}
	res, err := resource.New(ctx, resource.WithFromEnv(), resource.WithTelemetrySDK(),
		resource.WithAttributes(append([]attribute.KeyValue{attribute.String("service.name", service)}, attrs...)...))
	if err != nil && res == nil {
		return nil, fmt.Errorf("tracing: the resource: %w", err)
	}
	p := &Provider{Endpoint: endpoint}
	routeErrors(p)
	p.sdk = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return p, nil
}

// TracerProvider is what the engine takes (session.Config.TracerProvider): nil when off.
func (p *Provider) TracerProvider() trace.TracerProvider {
	if p == nil {
		return nil
	}
	return p.sdk
}

// Flush exports every span ended so far (ForceFlush), bounded by ctx's deadline less a
// small reserve — an invocation's remaining time — or DefaultFlushTimeout without one. A
// failed export is returned, never retried: tracing never fails a call.
func (p *Provider) Flush(ctx context.Context) error {
	if p == nil {
		return nil
	}
	fctx, cancel := flushContext(ctx)
	defer cancel()
	return p.sdk.ForceFlush(fctx)
}

// Shutdown flushes and stops the export (a process that ends: `archmax run`, `archmax
// serve`), bounded like Flush.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p == nil {
		return nil
	}
	fctx, cancel := flushContext(ctx)
	defer cancel()
	err := p.sdk.Shutdown(fctx)
	reporting.CompareAndSwap(p, nil) // the SDK has stopped: nothing of it reports any more
	return err
}

func flushContext(ctx context.Context) (context.Context, context.CancelFunc) {
	base := context.WithoutCancel(ctx) // a flush runs after the invocation's work, even a cancelled one
	if d, ok := ctx.Deadline(); ok {
		return context.WithDeadline(base, d.Add(-flushReserve))
	}
	return context.WithTimeout(base, DefaultFlushTimeout)
}

// Handler returns h that flushes p's spans after each invocation (before its answer goes
// back: Lambda may freeze the process right after), bounded by the invocation's deadline.
// An answer that is a response stream (an io.Reader, Lambda's response streaming: the turn
// goes on while it is read) is flushed when the stream ends instead. A failed flush is
// passed to onErr (nil: ignored) and never changes h's answer. With p nil it returns h.
func Handler[In, Out any](p *Provider, onErr func(error), h func(context.Context, In) (Out, error)) func(context.Context, In) (Out, error) {
	if p == nil {
		return h
	}
	flush := func(ctx context.Context) {
		if err := p.Flush(ctx); err != nil && onErr != nil {
			onErr(err)
		}
	}
	return func(ctx context.Context, in In) (Out, error) {
		out, err := h(ctx, in)
		if r, ok := any(out).(io.Reader); ok && err == nil {
			fs := &flushingStream{r: r, flush: func() { flush(ctx) }}
			if o, ok := any(fs).(Out); ok {
				return o, nil
			}
		}
		flush(ctx)
		return out, err
	}
}

// flushingStream is a response stream that flushes the spans once it has been read to its
// end (or closed), keeping the stream's content type.
type flushingStream struct {
	r     io.Reader
	flush func()
	once  sync.Once
}

func (f *flushingStream) Read(b []byte) (int, error) {
	n, err := f.r.Read(b)
	if err != nil {
		f.once.Do(f.flush)
	}
	return n, err
}

// Close closes the stream (when it is a Closer) and flushes.
func (f *flushingStream) Close() error {
	var err error
	if c, ok := f.r.(io.Closer); ok {
		err = c.Close()
	}
	f.once.Do(f.flush)
	return err
}

// ContentType is the stream's own (Lambda's response streaming reads it).
func (f *flushingStream) ContentType() string {
	if c, ok := f.r.(interface{ ContentType() string }); ok {
		return c.ContentType()
	}
	return "application/octet-stream"
}

// MarshalJSON refuses, as the streams it wraps do: a stream is never a JSON value.
func (f *flushingStream) MarshalJSON() ([]byte, error) {
	if m, ok := f.r.(interface{ MarshalJSON() ([]byte, error) }); ok {
		return m.MarshalJSON()
	}
	return nil, errors.New("tracing: a response stream is not a JSON value")
}
