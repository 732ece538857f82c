package httpapi

import (
	"context"
	"encoding/json"

	"github.com/aws/aws-lambda-go/events"

	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/functions/handlers/continuation"
)

// EventError is a Lambda event no retry can help: not one of the accepted shapes, or
// malformed. Its Prefix names the function ("deliver", "start").
type EventError struct{ Prefix, Reason string }

func (e *EventError) Error() string { return e.Prefix + ": " + e.Reason }

// EventResult answers an EventBridge event (a delivery, a start): the session, the outcome
// kind and state, or Duplicate when the event had been applied already.
type EventResult struct {
	SessionID string              `json:"sessionId"`
	Outcome   session.OutcomeKind `json:"outcome,omitempty"`
	State     string              `json:"state,omitempty"`
	Duplicate bool                `json:"duplicate,omitempty"`
}

// HandleOrEvent serves a function that takes both API Gateway HTTP API requests and
// EventBridge events (deliver, turn): a request is answered by Handle (an
// APIGatewayV2HTTPResponse, never a Go error); an event is decoded and given to onEvent.
// Anything else is an *EventError with prefix.
//
// A continuation event (continuation.Event, the function invoking itself) is served by the
// Handler's Runner; onEvent nil refuses EventBridge events.
func (h *Handler) HandleOrEvent(ctx context.Context, raw json.RawMessage, prefix string,
	onEvent func(context.Context, events.EventBridgeEvent) (any, error)) (any, error) {
	if ref, ok, err := continuation.Parse(raw); ok {
		if err != nil {
			return nil, err
		}
		return h.run.Handle(ctx, ref)
	}
	var shape struct {
		RouteKey   string `json:"routeKey"`
		DetailType string `json:"detail-type"`
	}
	if err := json.Unmarshal(raw, &shape); err != nil {
		return nil, &EventError{Prefix: prefix, Reason: "the event is not a JSON object"}
	}
	switch {
	case shape.RouteKey != "":
		var req events.APIGatewayV2HTTPRequest
		if err := json.Unmarshal(raw, &req); err != nil {
			return nil, &EventError{Prefix: prefix, Reason: "malformed API Gateway request"}
		}
		return h.Handle(ctx, req)
	case shape.DetailType != "" && onEvent != nil:
		var ev events.EventBridgeEvent
		if err := json.Unmarshal(raw, &ev); err != nil || ev.ID == "" {
			return nil, &EventError{Prefix: prefix, Reason: "malformed EventBridge event"}
		}
		return onEvent(ctx, ev)
	}
	return nil, &EventError{Prefix: prefix, Reason: "want an API Gateway HTTP API request or an EventBridge event"}
}
