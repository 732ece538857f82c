package deliveries

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/functions/handlers/internal/handlertest"
)

const courier = `
title: Courier
states:
  watch:
    triggers:
      manual:
    instructions: Wait for the courier, then report.
`

const script = `
agent:
  - toolCalls:
      - name: archmax_wait
        input: { reason: "the courier's scan" }
  - text: Waiting for the scan.
  - text: The parcel arrived.
`

func newHandler(t *testing.T) (*Handler, *session.Engines) {
	t.Helper()
	engines := handlertest.Engines(t, map[string]string{"workflows/courier/workflow.yaml": courier}, script, nil)
	return New(engines, nil, nil), engines
}

// An EventBridge event resumes the awaiting session with its detail; the same event
// delivered again (EventBridge is at-least-once) is a no-op; a later event to a session no
// longer awaiting input is a typed error (kept by the on-failure destination).
func TestEventBridgeDelivery(t *testing.T) {
	h, engines := newHandler(t)
	eng, _ := engines.Engine(context.Background(), "courier")
	if out, err := eng.Send(context.Background(), "parcel-7", session.SendInput{Message: "track parcel 7"}); err != nil || out.Kind != session.KindParked {
		t.Fatalf("park: %v %+v", err, out)
	}
	ev := `{"version":"0","id":"7bf73129-1428-4cd3-a780-95db273d1602","detail-type":"Parcel Scanned","source":"courier.app",
	  "account":"123456789012","time":"2026-11-30T10:00:00Z","region":"eu-west-1","resources":[],
	  "detail":{"sessionId":"parcel-7","variables":{"scan":"delivered"}}}`
	got, err := h.Handle(context.Background(), json.RawMessage(ev))
	res, _ := got.(Result)
	if err != nil || res.Outcome != session.KindCompleted || res.Duplicate {
		t.Fatalf("delivery: %v %+v", err, got)
	}
	sum, err := session.NewSessions(engines.Log(), nil, nil).Get(context.Background(), "parcel-7")
	if err != nil || sum.Variables["trigger"].Value != "Parcel Scanned" || sum.Variables["scan"].Value != "delivered" || !sum.Variables["scan"].Locked {
		t.Errorf("variables after delivery: %+v %v", sum, err)
	}
	got, err = h.Handle(context.Background(), json.RawMessage(ev))
	if res, _ := got.(Result); err != nil || !res.Duplicate {
		t.Errorf("redelivered event: %v %+v", err, got)
	}
	other := `{"id":"e-2","detail-type":"Parcel Scanned","source":"courier.app","detail":{"sessionId":"parcel-7"}}`
	var notAwaiting *session.SessionNotAwaitingInputError
	if _, err := h.Handle(context.Background(), json.RawMessage(other)); !errors.As(err, &notAwaiting) {
		t.Errorf("event to a session not awaiting input: %v", err)
	}
	var bad *EventError
	if _, err := h.Handle(context.Background(), json.RawMessage(`{"id":"e-3","detail-type":"X","detail":{}}`)); !errors.As(err, &bad) {
		t.Errorf("event without a session id: %v", err)
	}
}

// An API Gateway request on the deliveries route is answered like every HTTP route.
func TestHTTPDeliveryThroughTheSameFunction(t *testing.T) {
	h, _ := newHandler(t)
	req := events.APIGatewayV2HTTPRequest{Version: "2.0", RouteKey: "POST /v1/sessions/{sessionId}/deliveries", RawPath: "/v1/sessions/nobody/deliveries",
		PathParameters: map[string]string{"sessionId": "nobody"}, Body: `{"trigger":"courier"}`,
		RequestContext: events.APIGatewayV2HTTPRequestContext{Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{
			UserARN: "arn:aws:sts::123456789012:assumed-role/client/s"}},
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "POST"}}}
	raw, _ := json.Marshal(req)
	got, err := h.Handle(context.Background(), raw)
	resp, ok := got.(events.APIGatewayV2HTTPResponse)
	if err != nil || !ok || resp.StatusCode != 404 {
		t.Fatalf("HTTP delivery to an unknown session: %v %+v", err, got)
	}
}

// The sample EventBridge delivery of fixtures/events reaches the engine (its session does
// not exist here: 404-class SessionNotFoundError, kept by the on-failure destination).
func TestFixtureEvent(t *testing.T) {
	h, _ := newHandler(t)
	data, err := os.ReadFile(filepath.Join("../../../fixtures/events", "deliver-eventbridge.json"))
	if err != nil {
		t.Fatal(err)
	}
	var nf *session.SessionNotFoundError
	if _, err := h.Handle(context.Background(), data); !errors.As(err, &nf) || nf.SessionID != "demo-1" {
		t.Errorf("fixture delivery: %v", err)
	}
}
