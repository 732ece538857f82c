package tracing

import (
	"strings"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel"
)

// What the OpenTelemetry SDK cannot do — a batch it could not export, in the background
// or at a flush — it hands to the process's global error handler, whose default writes a
// raw line to the standard logger. FromEnv replaces that handler (once per process) with
// one that hands each error to the provider built last and not yet shut down, which passes
// it on through ReportErrors: a `tracing` warning event locally, a slog warning in the
// functions. Each distinct message is reported once — an unreachable collector is one
// warning, not one per batch.

var (
	installHandler sync.Once
	reporting      atomic.Pointer[Provider] // the provider the SDK's errors go to; nil: dropped
)

// routeErrors makes p the provider the SDK's errors go to, the handler installed the first time.
func routeErrors(p *Provider) {
	reporting.Store(p)
	installHandler.Do(func() {
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
			if p := reporting.Load(); p != nil {
				p.Report(err)
			}
		}))
	})
}

// ReportErrors sends p's export problems to warn from now on, each distinct message
// once: the SDK's errors and what Report is given (a failed flush). Until it is called
// they are dropped. With p nil it does nothing.
func (p *Provider) ReportErrors(warn func(message string)) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.warn = warn
}

// Report passes err on to the ReportErrors function as a message — "spans not exported:
// …" for a failed export — unless the same message was reported already. A nil err, or p
// nil, does nothing.
func (p *Provider) Report(err error) {
	if p == nil || err == nil {
		return
	}
	msg := Message(err)
	p.mu.Lock()
	warn := p.warn
	if warn == nil || p.seen[msg] {
		p.mu.Unlock()
		return
	}
	if p.seen == nil {
		p.seen = map[string]bool{}
	}
	p.seen[msg] = true
	p.mu.Unlock()
	warn(msg)
}

// Message is how an error of the trace export is reported: the exporter's "traces export:
// …" (and a flush that ran out of time) as "spans not exported: …", another as it is.
func Message(err error) string {
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "traces export: "); ok {
		return "spans not exported: " + rest
	}
	if strings.HasPrefix(msg, "context deadline exceeded") || strings.HasPrefix(msg, "context canceled") {
		return "spans not exported: " + msg
	}
	return msg
}
