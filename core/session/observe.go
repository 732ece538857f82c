package session

import (
	"context"

	"github.com/archmax-ai/archmax/core/events"
)

type eventObserverKey struct{}

// WithEventObserver returns a context under which every lifecycle event a call emits — its
// sub-workflow children's included — is also passed to fn, stamped as Config.Events receives
// it, after that handler. fn runs on the emitting goroutine, possibly on several at once (a
// session and its children), so it must be safe for concurrent use and must not call the
// engine. A host uses it to watch one call's events without owning the engine's handler
// (the case runner's strict mode).
func WithEventObserver(ctx context.Context, fn func(events.Event)) context.Context {
	return context.WithValue(ctx, eventObserverKey{}, fn)
}

// observe passes ev to the observer of ctx, if any.
func observe(ctx context.Context, ev events.Event) {
	if fn, ok := ctx.Value(eventObserverKey{}).(func(events.Event)); ok && fn != nil {
		fn(ev)
	}
}
