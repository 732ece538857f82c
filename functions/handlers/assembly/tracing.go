package assembly

import (
	"cmp"
	"context"
	"log/slog"
	"strings"

	"go.opentelemetry.io/otel/attribute"

	"github.com/archmax-ai/archmax/functions/handlers/tracing"
)

// tracingFromEnv is the functions' trace export (tracing.FromEnv) with the function's name
// as the service name and its FaaS resource attributes; a setting that cannot work is added
// to invalid (the function stops at init).
func tracingFromEnv(getenv func(string) string, invalid []string) (*tracing.Provider, []string) {
	get := func(k string) string { return strings.TrimSpace(getenv(k)) }
	fn := get("AWS_LAMBDA_FUNCTION_NAME")
	var attrs []attribute.KeyValue
	if fn != "" {
		attrs = append(attrs, attribute.String("faas.name", fn), attribute.String("cloud.provider", "aws"))
		if v := get("AWS_LAMBDA_FUNCTION_VERSION"); v != "" {
			attrs = append(attrs, attribute.String("faas.version", v))
		}
		if r := cmp.Or(get("AWS_REGION"), get("AWS_DEFAULT_REGION")); r != "" {
			attrs = append(attrs, attribute.String("cloud.region", r))
		}
	}
	p, err := tracing.FromEnv(context.Background(), getenv, cmp.Or(fn, "archmax"), attrs...)
	if err != nil {
		return nil, append(invalid, err.Error())
	}
	return p, invalid
}

// Traced is h flushing the assembly's spans at the end of every invocation, bounded by its
// remaining deadline (tracing.Handler). What the export cannot do — a failed flush, a
// batch the SDK could not send — is a warning in log (scope tracing), each distinct
// message once; never the standard logger. Without tracing it is h itself.
func Traced[In, Out any](a *Assembly, log *slog.Logger, h func(context.Context, In) (Out, error)) func(context.Context, In) (Out, error) {
	var p *tracing.Provider
	if a != nil {
		p = a.Tracing
	}
	if log != nil {
		p.ReportErrors(func(msg string) { log.Warn(msg, "scope", "tracing") })
	}
	return tracing.Handler(p, p.Report, h)
}
