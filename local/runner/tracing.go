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
// service named archmax; a setting that cannot work is a *SettingError.
func (env *Env) openTracing(ctx context.Context) error {
	p, err := tracing.FromEnv(ctx, os.Getenv, "archmax")
	if err != nil {
		return &SettingError{Msg: err.Error()}
	}
	env.tracing = p
	return nil
}

// closeTracing exports the spans not yet sent and stops the export (bounded by
// tracing.DefaultFlushTimeout). A collector that cannot be reached loses them: a warning
// event (scope tracing) to the environment's handler, never a failed command.
func (env *Env) closeTracing() error {
	p := env.tracing
	env.tracing = nil
	if err := p.Shutdown(context.Background()); err != nil && env.opts.Events != nil {
		env.opts.Events(events.Event{Type: events.Warning, Level: "warn", TS: time.Now().UnixMilli(),
			Data: map[string]any{"scope": "tracing", "message": "spans not exported: " + err.Error()}})
	}
	return nil
}
