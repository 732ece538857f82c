package starts

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/store"
	"github.com/archmax-ai/archmax/functions/handlers/internal/handlertest"
)

const fulfil = `
title: Fulfil
states:
  pack:
    triggers:
      order:
        session: order_id
        requires: [order_id, { name: qty, type: integer }]
    instructions: Pack the order.
`

const script = `
agent:
  - text: Packed.
  - text: Packed again.
`

func newHandler(t *testing.T, routes []Route) (*Handler, *session.Engines) {
	t.Helper()
	engines := handlertest.Engines(t, map[string]string{"workflows/fulfil/workflow.yaml": fulfil}, script, nil)
	return New(engines, nil, routes, nil), engines
}

func event(id, detail string) json.RawMessage {
	return json.RawMessage(`{"version":"0","id":"` + id + `","detail-type":"Order Placed","source":"orders.app",
	  "account":"123456789012","time":"2026-11-30T10:00:00Z","region":"eu-west-1","resources":[],"detail":` + detail + `}`)
}

var routes = []Route{{Source: "orders.app", DetailType: "Order Placed", Workflow: "fulfil", Trigger: "order"}}

// DESIGN §1: an EventBridge event starts a session of the routed trigger, its detail the
// opening variables and the session id from the trigger's `session:` path; the same event
// redelivered starts nothing.
func TestEventStartsASessionOnce(t *testing.T) {
	h, engines := newHandler(t, routes)
	ev := event("e-1", `{"order_id":"o-17","qty":3,"message":"New order o-17"}`)
	got, err := h.Handle(context.Background(), ev)
	res, _ := got.(Result)
	if err != nil || res.SessionID != "o-17" || res.Outcome != session.KindCompleted || res.Duplicate {
		t.Fatalf("start: %v %+v", err, got)
	}
	sum, err := engines.Sessions().Get(context.Background(), "o-17")
	if err != nil || sum.Variables["qty"].Value != float64(3) || sum.Variables["trigger"].Value != "order" || sum.Turn != 1 {
		t.Errorf("summary = %+v, %v", sum, err)
	}
	got, err = h.Handle(context.Background(), ev)
	if res, _ := got.(Result); err != nil || !res.Duplicate || res.SessionID != "o-17" {
		t.Fatalf("redelivery: %v %+v", err, got)
	}
	if sum, _ := engines.Sessions().Get(context.Background(), "o-17"); sum.Turn != 1 {
		t.Errorf("the redelivered event ran a second turn: turn %d", sum.Turn)
	}
}

// Refusals are errors the on-failure destination keeps; a redelivery of a refused event
// is refused again (never run twice, never a silent success).
func TestEventRefusals(t *testing.T) {
	h, _ := newHandler(t, routes)
	var refused *session.StartRefusedError
	if _, err := h.Handle(context.Background(), event("e-2", `{"order_id":"o-18","qty":"many"}`)); !errors.As(err, &refused) {
		t.Errorf("a detail failing requires: %v", err)
	}
	var bad *EventError
	unrouted := json.RawMessage(`{"id":"e-3","detail-type":"Order Cancelled","source":"orders.app","detail":{}}`)
	if _, err := h.Handle(context.Background(), unrouted); !errors.As(err, &bad) {
		t.Errorf("an unrouted event: %v", err)
	}
	if _, err := h.Handle(context.Background(), event("e-2", `{"order_id":"o-18","qty":"many"}`)); !errors.As(err, &bad) ||
		!strings.Contains(err.Error(), "failed when first run and is not run again") {
		t.Errorf("a refused event redelivered: %v", err)
	}
}

func TestParseRoutes(t *testing.T) {
	if r, err := ParseRoutes(`[{"source":"orders.app","workflow":"fulfil"}]`); err != nil || len(r) != 1 || r[0].Workflow != "fulfil" {
		t.Errorf("routes = %+v, %v", r, err)
	}
	for _, bad := range []string{`{}`, `[{"source":"x"}]`, `[{"workflow":"w","topic":"t"}]`} {
		if _, err := ParseRoutes(bad); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
	if r, err := ParseRoutes(""); err != nil || r != nil {
		t.Errorf("empty: %+v %v", r, err)
	}
}

// An API Gateway request reaching the turn function is answered like every HTTP route.
func TestHTTPThroughTheSameFunction(t *testing.T) {
	h, _ := newHandler(t, nil)
	req := events.APIGatewayV2HTTPRequest{Version: "2.0", RouteKey: "POST /v1/workflows/{workflow}/sessions", RawPath: "/v1/workflows/nope/sessions",
		PathParameters: map[string]string{"workflow": "nope"}, Body: `{"message":"hi"}`, Headers: map[string]string{},
		RequestContext: events.APIGatewayV2HTTPRequestContext{Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{
			UserARN: "arn:aws:sts::123456789012:assumed-role/client/s"}},
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "POST"}}}
	raw, _ := json.Marshal(req)
	got, err := h.Handle(context.Background(), raw)
	if resp, ok := got.(events.APIGatewayV2HTTPResponse); err != nil || !ok || resp.StatusCode != 404 {
		t.Fatalf("HTTP start on an unknown workflow: %v %+v", err, got)
	}
}

// The sample EventBridge start of fixtures/events is routed and checked against the
// trigger's requires before anything is written.
func TestFixtureEvent(t *testing.T) {
	h, _ := newHandler(t, []Route{{Source: "hr.portal", Workflow: "fulfil", Trigger: "order"}})
	data, err := os.ReadFile(filepath.Join("../../../fixtures/events", "start-eventbridge.json"))
	if err != nil {
		t.Fatal(err)
	}
	var refused *session.StartRefusedError
	if _, err := h.Handle(context.Background(), data); !errors.As(err, &refused) {
		t.Errorf("fixture start: %v", err)
	}
}

// firstPutOnly is a log whose process dies after its first PutIdempotent: the start's
// result is never recorded.
type firstPutOnly struct {
	store.Log
	puts *int
}

func (f firstPutOnly) PutIdempotent(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	*f.puts++
	if *f.puts > 1 {
		return errors.New("the process died")
	}
	return f.Log.PutIdempotent(ctx, key, value, ttl)
}

type dyingEngines struct {
	*session.Engines
	log store.Log
}

func (d dyingEngines) Log() store.Log { return d.log }

// An invocation that dies after the start's first commit, before recording its result,
// leaves the event done: the redelivery starts nothing.
func TestEventDoneAtTheStartsFirstCommit(t *testing.T) {
	_, engines := newHandler(t, routes)
	puts := 0
	h := New(dyingEngines{engines, firstPutOnly{engines.Log(), &puts}}, nil, routes, nil)
	ev := event("e-crash", `{"order_id":"o-9","qty":1}`)
	if _, err := h.Handle(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	if puts < 2 {
		t.Fatalf("the start recorded its claim %d times; the test needs the final record to be lost", puts)
	}
	got, err := New(engines, nil, routes, nil).Handle(context.Background(), ev)
	if res, _ := got.(Result); err != nil || !res.Duplicate || res.SessionID != "o-9" {
		t.Fatalf("redelivery after the crash: %v %+v, want a duplicate of o-9", err, got)
	}
	if sum, _ := engines.Sessions().Get(context.Background(), "o-9"); sum.Turn != 1 {
		t.Errorf("the redelivery ran a second turn: %d", sum.Turn)
	}
}
