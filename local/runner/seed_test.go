package runner

import (
	"context"
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/transcript"
)

const seedWorkspace = "../../fixtures/customer-support"

// orderStatusEngine assembles the order-status workflow of the seed-script workspace with its
// host file: get_order (a lambda tool), track_parcel (http) and open_ticket (an MCP server's)
// answered by the file's local stand-ins, each over its kind's own protocol.
func orderStatusEngine(t *testing.T, script string) *session.Engine {
	t.Helper()
	env, err := Open(context.Background(), Options{Workspace: seedWorkspace, MemoryStore: true,
		ModelScript: seedWorkspace + "/model-scripts/" + script})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Close() })
	eng, err := env.Engine("order-status")
	if err != nil {
		t.Fatal(err)
	}
	return eng
}

// toolResults are the texts of the tool results in out, by tool call id.
func toolResults(out *session.Outcome) map[string]string {
	got := map[string]string{}
	for _, m := range out.Messages {
		if m.ToolCallID != "" {
			got[m.ToolCallID] = m.Text
		}
	}
	return got
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
	eng := orderStatusEngine(t, "order-status.model.yaml")
	out, err := eng.Send(context.Background(), "st-1", session.SendInput{Message: "support@acmecorp.com here: what is the status of ORD-1002?"})
	if err != nil {
		t.Fatal(err)
	}
	if out.Kind != session.KindCompleted || out.State != "notify-customer" || !strings.Contains(out.Reply, "your ticket is TCK-1042") {
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
	// the host tools' stand-ins answered through the kinds: the Lambda function's text, the
	// HTTPS API's JSON body, the MCP server's text result
	results := toolResults(out)
	for id, want := range map[string]string{
		"tu-order":  `{"id":"ORD-1002","customer":"Acme Corp","status":"shipped","carrier":"dhl","parcel":"JD014600"}`,
		"tu-track":  `{"parcel":"JD014600","location":"Leeds depot","expected":"2026-11-28"}`,
		"tu-ticket": "TCK-1042",
	} {
		if results[id] != want {
			t.Errorf("tool result %s = %q, want %q", id, results[id], want)
		}
	}
}

// The requester screen, as written, declines a request with no email address before any
// model call routes it.
func TestSeedRequesterScreenDeclines(t *testing.T) {
	eng := orderStatusEngine(t, "order-status-declined.model.yaml")
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
	if out.Kind != session.KindCompleted || len(toolResults(out)) != 0 {
		t.Errorf("outcome %s, tool results %v", out.Kind, toolResults(out))
	}
}
