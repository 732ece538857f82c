package continuation

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel/trace"

	"github.com/archmax-ai/archmax/core/session"
)

// traceHandOff returns ctx under which the engine reports the turn spans of the root
// sessions it runs (session.WithTurnTrace), and the traceparent of a session's latest one:
// a continuation's Ref carries it, so the next invocation's turn span is that span's child
// and the turn stays one trace across invocations (docs/DECISIONS.md TR22-4). Without
// tracing the engine reports nothing and the traceparent is "".
func traceHandOff(ctx context.Context) (context.Context, func(sessionID string) string) {
	var mu sync.Mutex
	var spans map[string]trace.SpanContext
	ctx = session.WithTurnTrace(ctx, func(id string, sc trace.SpanContext) {
		mu.Lock()
		defer mu.Unlock()
		if spans == nil {
			spans = map[string]trace.SpanContext{}
		}
		spans[id] = sc
	})
	return ctx, func(id string) string {
		mu.Lock()
		defer mu.Unlock()
		return session.TraceParent(spans[id])
	}
}
