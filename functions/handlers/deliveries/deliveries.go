// Package deliveries is the body of the deliver Lambda (DESIGN.md §1): it takes either an
// API Gateway HTTP API request (POST /v1/sessions/{sessionId}/deliveries, served by
// functions/handlers/httpapi) or an EventBridge event routed by a rule, whose detail is
//
//	{"sessionId": "…", "trigger"?: "…", "variables"?: {…}, "message"?: "…", "parkId"?: "…"}
//
// The trigger defaults to the event's detail-type; the event id makes the delivery
// idempotent (a redelivered event is a no-op). An event the engine refuses (not awaiting
// input, park no longer live, unknown session) or cannot take now (busy) is returned as
// an error, so Lambda's retries and the function's on-failure destination keep it.
package deliveries

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"

	"github.com/archmax-ai/archmax/core/identity"
	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/functions/handlers/continuation"
	"github.com/archmax-ai/archmax/functions/handlers/httpapi"
)

// Engines is what a delivery needs of the assembly.
type Engines = httpapi.Engines

// Handler serves deliver events of both shapes. Safe for concurrent use.
type Handler struct {
	http    *httpapi.Handler
	run     *continuation.Runner
	engines Engines
	log     *slog.Logger
}

// New returns a Handler whose engine calls run under run (a turn that outlives the
// invocation continues in another; nil runs each to its end); log may be nil (discarded);
// opts configure its HTTP handler (the access policy).
func New(engines Engines, run *continuation.Runner, log *slog.Logger, opts ...httpapi.Option) *Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if run == nil {
		run = continuation.NewRunner(engines, nil, continuation.Budget{}, log)
	}
	return &Handler{http: httpapi.New(engines, run, log, opts...), run: run, engines: engines, log: log}
}

// Detail is the detail of an EventBridge delivery event.
type Detail struct {
	SessionID string         `json:"sessionId"`
	Trigger   string         `json:"trigger"`
	Variables map[string]any `json:"variables"`
	Message   string         `json:"message"`
	ParkID    string         `json:"parkId"`
}

// Result answers an EventBridge event (httpapi.EventResult); EventError is an event no
// retry can help (httpapi.EventError).
type (
	Result     = httpapi.EventResult
	EventError = httpapi.EventError
)

// Handle serves one event: an API Gateway request is answered like every HTTP route (an
// APIGatewayV2HTTPResponse, never a Go error); an EventBridge event is delivered
// (Result, or the engine's error).
func (h *Handler) Handle(ctx context.Context, raw json.RawMessage) (any, error) {
	return h.http.HandleOrEvent(ctx, raw, "deliver", func(ctx context.Context, ev events.EventBridgeEvent) (any, error) { return h.event(ctx, ev) })
}

// event delivers one EventBridge event.
func (h *Handler) event(ctx context.Context, ev events.EventBridgeEvent) (Result, error) {
	var d Detail
	if err := json.Unmarshal(ev.Detail, &d); err != nil || d.SessionID == "" {
		return Result{}, &EventError{Prefix: "deliver", Reason: "the event's detail names no sessionId"}
	}
	res := Result{SessionID: d.SessionID}
	eng, id, err := session.EngineOf(ctx, h.engines, d.SessionID)
	if err != nil {
		return res, err
	}
	trigger := d.Trigger
	if trigger == "" {
		trigger = ev.DetailType
	}
	// the event's source delivers (the bus's resource policy decides who may send it)
	ctx = session.WithCaller(ctx, identity.EventSource(ev.Source, ev.AccountID))
	out, err := h.run.Run(ctx, continuation.Options{}, func(ctx context.Context) (*session.Outcome, error) {
		return eng.Deliver(ctx, id, session.Delivery{Trigger: trigger, Variables: d.Variables, Message: d.Message, ParkID: d.ParkID, ID: ev.ID})
	})
	var dup *session.DuplicateDeliveryError
	if errors.As(err, &dup) {
		res.Duplicate = true
		h.log.InfoContext(ctx, "delivery skipped: event already delivered", "sessionId", id, "eventId", ev.ID)
		return res, nil
	}
	if err != nil {
		h.log.WarnContext(ctx, "delivery refused", "sessionId", id, "eventId", ev.ID, "error", err.Error())
		return res, err
	}
	res.Outcome, res.State = out.Kind, out.State
	h.log.InfoContext(ctx, "delivered", "sessionId", id, "eventId", ev.ID, "trigger", trigger, "outcome", string(out.Kind))
	return res, nil
}
