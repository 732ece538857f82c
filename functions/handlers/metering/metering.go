// Package metering is how a function meters its invocations (core/metrics; rules MT22-1…
// MT22-4): Handler wraps a function's Lambda handler so that every invocation has a
// metrics.Recorder in its context, observing the engine's lifecycle events, and writes its
// embedded-metric-format lines on the function's log when the invocation ends; Turn counts a
// settled engine call. The handlers add what the events do not carry through metrics.From;
// an API Gateway answer of 400 or more counts as an Error of its error.code.
package metering

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/archmax-ai/archmax/core/metrics"
	"github.com/archmax-ai/archmax/core/session"
)

// Handler returns h metered as function fn (the dimension `function`: turn, decide,
// deliver, wake, sessions, stream): each invocation runs under a fresh metrics.Recorder,
// which observes the engine's lifecycle events (session.WithEventObserver) and counts an
// error h returns by its name (metrics.CodeOf), or an API Gateway answer of status 400 or
// more by its error.code; its lines go to log (nil: slog.Default())
// when h returns — and again for what a response stream records after (metrics.Flush).
func Handler[In, Out any](fn string, log *slog.Logger, h func(context.Context, In) (Out, error)) func(context.Context, In) (Out, error) {
	return func(ctx context.Context, in In) (Out, error) {
		rec := metrics.New(fn, log, nil)
		ctx = session.WithEventObserver(metrics.With(ctx, rec), rec.Observe)
		out, err := h(ctx, in)
		rec.Fail(err)
		refused(rec, out)
		metrics.Flush(ctx)
		return out, err
	}
}

// Answered counts an API Gateway answer the handler does not return itself — the stream
// function's, whose call runs inside the stream — as Handler counts a returned one.
func Answered(ctx context.Context, resp events.APIGatewayV2HTTPResponse) {
	if r := metrics.From(ctx); r != nil {
		refused(r, resp)
	}
}

// refused counts an API Gateway answer of status 400 or more as an Error of its body's
// error.code (every error answer of functions/handlers/httpapi has one; "HTTP<status>"
// when it has none).
func refused(r *metrics.Recorder, out any) {
	var resp events.APIGatewayV2HTTPResponse
	switch o := out.(type) {
	case events.APIGatewayV2HTTPResponse:
		resp = o
	case *events.APIGatewayV2HTTPResponse:
		if o == nil {
			return
		}
		resp = *o
	default:
		return
	}
	if resp.StatusCode < 400 {
		return
	}
	var body struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(resp.Body), &body) != nil || body.Error.Code == "" {
		body.Error.Code = "HTTP" + strconv.Itoa(resp.StatusCode)
	}
	r.Error(body.Error.Code)
}

// Turn counts one engine call that ended (out, after took): a settled turn — any kind but
// running, which a continuation carries on — is one Turns and one TurnLatency sample. Its
// session is noted. A call that failed or was skipped (out nil) counts nothing here: its
// error is counted where it is answered.
func Turn(ctx context.Context, out *session.Outcome, took time.Duration) {
	r := metrics.From(ctx)
	if r == nil || out == nil {
		return
	}
	r.Session(out.SessionID)
	if out.Kind == session.KindRunning {
		return
	}
	r.Add(metrics.Turns, 1)
	r.Latency(metrics.TurnLatency, took)
}

// Sweep counts a sweep's result: SweepFinds, the overdue timed parks and stranded running
// sessions it found (0 included, so its alarm sees the sweep ran), and WakesLate, the parks
// it woke — a wake that came from the sweep and not from its schedule.
func Sweep(ctx context.Context, res session.SweepResult) {
	r := metrics.From(ctx)
	r.Add(metrics.SweepFinds, float64(res.Due+res.Continued))
	r.Add(metrics.WakesLate, float64(res.Woken))
}
