package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/transcript"
)

const seedWorkspace = "../../fixtures/customer-support"

// orderStatusEngine assembles the order-status workflow of the seed-script workspace with the
// host tool its look-up state grants: get_order answers an order's record as JSON.
func orderStatusEngine(t *testing.T, script string, calls *[]string) *session.Engine {
	t.Helper()
	env, err := Open(context.Background(), Options{Workspace: seedWorkspace, MemoryStore: true,
		ModelScript: seedWorkspace + "/model-scripts/" + script})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Close() })
	cfg, err := env.Config()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Workflow = "order-status"
	cfg.Tools = []session.HostTool{{
		Name:        "get_order",
		Description: "Look an order up by id; answers its record as JSON.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`),
		Handler: func(_ context.Context, c session.HostCall) (string, error) {
			*calls = append(*calls, fmt.Sprint(c.Args["id"]))
			return `{"id":"ORD-1002","customer":"Acme Corp","status":"shipped"}`, nil
		},
	}}
	eng, err := session.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return eng
}

func trailString(out *session.Outcome) string {
	var parts []string
	for _, s := range out.AuditTrail {
		parts = append(parts, string(s.Kind)+":"+s.To)
	}
	return strings.Join(parts, " ")
}

func stepReasons(out *session.Outcome, kind transcript.TrailKind) []string {
	var rs []string
	for _, s := range out.AuditTrail {
		if s.Kind == kind {
			rs = append(rs, s.Reason)
		}
	}
	return rs
}

// The 1.0 documents' status check, as written, reads get_order's result from the history: a
// status recorded without a lookup is sent back to look the order up, a status that differs
// from the tool's is sent back naming it, and the returned one goes through. The requester
// screen before it passes a known address.
func TestSeedStatusCheckReadsTheToolResultFromTheHistory(t *testing.T) {
	var calls []string
	eng := orderStatusEngine(t, "order-status.model.yaml", &calls)
	out, err := eng.Send(context.Background(), "st-1", session.SendInput{Message: "support@acmecorp.com here: what is the status of ORD-1002?"})
	if err != nil {
		t.Fatal(err)
	}
	if out.Kind != session.KindCompleted || out.State != "notify-customer" || out.Reply != "ORD-1002 has shipped." {
		t.Fatalf("outcome %s in %s: %q (trail %s)", out.Kind, out.State, out.Reply, trailString(out))
	}
	want := "trigger:screen-requester code:identify-case agent:look-up-order agent:check-status code:look-up-order " +
		"agent:check-status code:look-up-order agent:check-status code:notify-customer"
	if got := trailString(out); got != want {
		t.Errorf("trail = %s\nwant    %s", got, want)
	}
	reasons := stepReasons(out, transcript.TrailCode)
	wantReasons := []string{
		"support@acmecorp.com is a known requester.",
		"Look the order up with get_order first.",
		"Order ORD-1002 is shipped: record that status exactly.",
		"The recorded status shipped is get_order's.",
	}
	if strings.Join(reasons, "|") != strings.Join(wantReasons, "|") {
		t.Errorf("code reasons = %q", reasons)
	}
	if strings.Join(calls, ",") != "ORD-1002" {
		t.Errorf("get_order ran for %v, want once for ORD-1002", calls)
	}
}

// The requester screen, as written, declines a request with no email address before any
// model call routes it.
func TestSeedRequesterScreenDeclines(t *testing.T) {
	var calls []string
	eng := orderStatusEngine(t, "order-status-declined.model.yaml", &calls)
	out, err := eng.Send(context.Background(), "st-2", session.SendInput{Message: "What is the status of my order?"})
	if err != nil {
		t.Fatal(err)
	}
	if got := trailString(out); got != "trigger:screen-requester code:decline" {
		t.Errorf("trail = %s", got)
	}
	if r := stepReasons(out, transcript.TrailCode); len(r) != 1 || r[0] != "No email address found in the request." {
		t.Errorf("reasons = %q", r)
	}
	if out.Kind != session.KindCompleted || len(calls) != 0 {
		t.Errorf("outcome %s, get_order calls %v", out.Kind, calls)
	}
}
