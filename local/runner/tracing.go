package runner

import (
	"context"
	"os"
	"time"

	"github.com/archmax-ai/archmax/core/events"
	"github.com/archmax-ai/archmax/functions/handlers/tracing"
)

// openTracing sets up the trace export the OTEL_* variables ask for (tracing.FromEnv: off
// unless OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set), the
// service named archmax; a setting that cannot work is a *SettingError. What the export
// cannot do later — a collector that cannot be reached — is a warning event (scope
// tracing) to the environment's handler, each distinct message once, never a failed
// command and never a line of the standard logger.
func (env *Env) openTracing(ctx context.Context) error {
	p, err := tracing.FromEnv(ctx, os.Getenv, "archmax")
	if err != nil {
		return &SettingError{Msg: err.Error()}
	}
	if h := env.opts.Events; h != nil {
		p.ReportErrors(func(msg string) {
			h(events.Event{Type: events.Warning, Level: "warn", TS: time.Now().UnixMilli(),
				Data: map[string]any{"scope": "tracing", "message": msg}})
		})
	}
	env.tracing = p
	return nil
}

// closeTracing exports the spans not yet sent and stops the export (bounded by
// tracing.DefaultFlushTimeout); what could not be sent is reported as above.
func (env *Env) closeTracing() error {
	p := env.tracing
	env.tracing = nil
	p.Report(p.Shutdown(context.Background()))
	return nil
}

// TracingWarnings sends the trace export's warnings to warn instead (`archmax serve`: its
// log), each distinct message once. Without tracing it does nothing.
func (env *Env) TracingWarnings(warn func(message string)) { env.tracing.ReportErrors(warn) }
