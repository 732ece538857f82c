package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/store/memory"
)

// desk: an agent that hands to a human sign-off or waits for an outside event.
const desk = `
title: Desk
states:
  intake:
    triggers:
      manual:
    instructions: Hand the request to sign-off, or wait for the courier.
    transitions:
      - to: signoff
        description: The request is complete and needs sign-off.
  signoff:
    type: human
    title: Sign-off
    transitions:
      - to: done
        description: Approved.
        type: approve
      - to: intake
        description: Needs more work.
        type: refine
  done:
    instructions: Say it is done.
`

// queueModel answers each call with the next scripted response; past the end, "OK.".
type queueModel struct {
	mu    sync.Mutex
	queue []model.Response
}

func (m *queueModel) push(r ...model.Response) {
	m.mu.Lock()
	m.queue = append(m.queue, r...)
	m.mu.Unlock()
}

func (m *queueModel) Converse(ctx context.Context, req *model.Request) (*model.Response, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.queue) == 0 {
		return text("OK."), nil
	}
	r := m.queue[0]
	m.queue = m.queue[1:]
	return &r, nil
}

func text(s string) *model.Response {
	return &model.Response{Message: model.Message{Role: model.RoleAssistant, Content: []model.Block{{Kind: model.BlockText, Text: s}}},
		StopReason: model.StopEndTurn, Usage: &model.Usage{InputTokens: 5, OutputTokens: 1}}
}

func tool(name string, input map[string]any) model.Response {
	raw, _ := json.Marshal(input)
	return model.Response{Message: model.Message{Role: model.RoleAssistant, Content: []model.Block{{Kind: model.BlockToolUse,
		ToolUse: &model.ToolUse{ID: "t-" + name, Name: name, Input: raw}}}},
		StopReason: model.StopToolUse, Usage: &model.Usage{InputTokens: 5, OutputTokens: 1}}
}

// parkEngines serves the desk workflow over memory stores with a queueModel.
type parkEngines struct {
	engines
	qm *queueModel
}

func (e *parkEngines) Engine(ctx context.Context, workflow string) (*session.Engine, error) {
	if _, err := e.authored.Stat(ctx, "workflows/"+workflow+"/workflow.yaml"); err != nil {
		return nil, &session.UnknownWorkflowError{Workflow: workflow}
	}
	return session.New(session.Config{Workflow: workflow, Authored: e.authored, Log: e.log,
		Files: memory.NewFiles(), Model: e.qm, ModelID: "test-model"})
}

func newParkFixture(t *testing.T) (*Handler, *queueModel) {
	t.Helper()
	authored := memory.NewFiles()
	if err := authored.Write(context.Background(), "workflows/desk/workflow.yaml", []byte(desk)); err != nil {
		t.Fatal(err)
	}
	qm := &queueModel{}
	return New(&parkEngines{engines: engines{authored: authored, log: memory.New()}, qm: qm}, nil, nil, WithPolicy(testPolicy)), qm
}

func decision(id, body string) events.APIGatewayV2HTTPRequest {
	return request(RouteDecision, "POST", "/v1/sessions/"+id+"/decision", body)
}

func delivery(id, body string) events.APIGatewayV2HTTPRequest {
	return request(RouteDelivery, "POST", "/v1/sessions/"+id+"/deliveries", body)
}

// DESIGN §1/§5: a park shows its parkId on the summary; POST …/decision resumes it; a
// stale parkId, a second decision, an unknown target and an unknown session get their
// typed answers.
func TestDecisionRoute(t *testing.T) {
	h, qm := newParkFixture(t)
	qm.push(tool("archmax_advance", map[string]any{"to": "signoff", "reason": "ready"}), *text("Sent to sign-off."))
	status, body := call(t, h, turn("desk", "d1", `{"message":"please file it"}`))
	if status != http.StatusOK || body["kind"] != "parked" || body["status"] != "awaiting_decision" || body["state"] != "signoff" {
		t.Fatalf("park: %d %v", status, body)
	}
	pending, _ := body["pending"].(map[string]any)
	parkID, _ := pending["parkId"].(string)
	if parkID == "" || pending["channel"] != "decision" {
		t.Fatalf("pending = %v", body["pending"])
	}

	if status, body := call(t, h, turn("desk", "d1", `{"message":"   "}`)); status != http.StatusBadRequest || errCode(body) != "EmptyMessageError" ||
		!strings.Contains(body["error"].(map[string]any)["message"].(string), "reply") {
		t.Errorf("blank reply: %d %v", status, body)
	}
	for _, c := range []struct {
		name, id, body string
		status         int
		code           string
	}{
		{"unknown target", "d1", `{"to":"nowhere"}`, http.StatusUnprocessableEntity, "InvalidDecisionTargetError"},
		{"stale park", "d1", `{"to":"done","parkId":"p-old"}`, http.StatusConflict, "ParkNotLiveError"},
		{"no target", "d1", `{"comment":"hm"}`, http.StatusBadRequest, CodeInvalidRequest},
		{"unknown field", "d1", `{"to":"done","verdict":"yes"}`, http.StatusBadRequest, CodeInvalidRequest},
		{"unknown session", "nobody", `{"to":"done"}`, http.StatusNotFound, "SessionNotFoundError"},
		{"bad session id", "..", `{"to":"done"}`, http.StatusBadRequest, "SessionStoreIdError"},
	} {
		status, body := call(t, h, decision(c.id, c.body))
		if status != c.status || errCode(body) != c.code {
			t.Errorf("%s: %d %v, want %d %s", c.name, status, body, c.status, c.code)
		}
	}
	if _, d := call(t, h, decision("d1", `{"to":"nowhere"}`)); len(d) == 0 || details(d)["validTargets"] == nil {
		t.Errorf("validTargets missing: %v", d)
	}

	qm.push(*text("Done."))
	status, body = call(t, h, decision("d1", `{"to":"done","comment":"fine","parkId":"`+parkID+`"}`))
	if status != http.StatusOK || body["kind"] != "completed" || body["state"] != "done" || body["disposition"] != "decide" || body["pending"] != nil {
		t.Fatalf("decide: %d %v", status, body)
	}
	status, body = call(t, h, decision("d1", `{"to":"done","parkId":"`+parkID+`"}`))
	if status != http.StatusConflict || (errCode(body) != "SessionNotParkedError" && errCode(body) != "ParkNotLiveError") {
		t.Errorf("second decision: %d %v", status, body)
	}
	if status, body := call(t, h, request("$default", "GET", "/v1/sessions/d1/decision", "")); status != http.StatusMethodNotAllowed || errCode(body) != CodeMethodNotAllowed {
		t.Errorf("GET on the decision route: %d %v", status, body)
	}
	if status, _ := call(t, h, request("$default", "GET", "/v1/elsewhere", "")); status != http.StatusNotFound {
		t.Errorf("GET elsewhere: %d", status)
	}
	// the $default route reaches the same handler by path
	status, body = call(t, h, request("$default", "POST", "/v1/sessions/d1/decision", `{"to":"done"}`))
	if status != http.StatusConflict {
		t.Errorf("$default decision: %d %v", status, body)
	}
}

// DESIGN §1/§5: POST …/deliveries resumes an archmax_wait park with the trigger and its
// variables; deliveries to a session not awaiting input, or without a trigger, are refused.
func TestDeliveryRoute(t *testing.T) {
	h, qm := newParkFixture(t)
	qm.push(tool("archmax_wait", map[string]any{"reason": "the courier's scan"}), *text("Waiting."))
	status, body := call(t, h, turn("desk", "w1", `{"message":"track it"}`))
	if status != http.StatusOK || body["kind"] != "parked" || body["status"] != "awaiting_input" {
		t.Fatalf("wait: %d %v", status, body)
	}
	pending, _ := body["pending"].(map[string]any)
	input, _ := pending["input"].(map[string]any)
	if input["reason"] != "the courier's scan" {
		t.Errorf("pending input = %v", pending)
	}
	if status, body := call(t, h, delivery("w1", `{"variables":{"scan":"in"}}`)); status != http.StatusBadRequest || errCode(body) != "MissingDeliveryTriggerError" {
		t.Errorf("no trigger: %d %v", status, body)
	}
	if status, body := call(t, h, delivery("w1", `{"trigger":"courier","variables":{"bad name":1}}`)); status != http.StatusBadRequest || errCode(body) != "InvalidVariableNameError" {
		t.Errorf("bad variable: %d %v", status, body)
	}
	qm.push(*text("It arrived."))
	req := delivery("w1", `{"trigger":"courier","variables":{"scan":"delivered"},"message":"here it is"}`)
	req.Headers["idempotency-key"] = "scan-42"
	status, body = call(t, h, req)
	if status != http.StatusOK || body["kind"] != "completed" || body["disposition"] != "deliver" || body["reply"] != "It arrived." {
		t.Fatalf("deliver: %d %v", status, body)
	}
	// a repeat with the same Idempotency-Key gets the first answer, and applies nothing
	if again, err := h.Handle(context.Background(), req); err != nil || again.StatusCode != http.StatusOK ||
		again.Headers["Idempotent-Replayed"] != "true" || !strings.Contains(again.Body, `"reply":"It arrived."`) {
		t.Errorf("repeated Idempotency-Key: %+v %v", again, err)
	}
	if status, body := call(t, h, delivery("w1", `{"trigger":"courier"}`)); status != http.StatusConflict || errCode(body) != "SessionNotAwaitingInputError" {
		t.Errorf("not awaiting: %d %v", status, body)
	}
}
