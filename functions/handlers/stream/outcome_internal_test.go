package stream

import (
	"encoding/json"
	"testing"

	"github.com/archmax-ai/archmax/core/session"
)

// A follow that ends before the session settles reports the session's position: the
// summary's workflowState (its state field is a parked session's parked state only).
func TestRunningOutcomeCarriesTheWorkflowState(t *testing.T) {
	b, err := json.Marshal(session.SessionSummary{SessionID: "s-1", Status: session.StatusRunning, WorkflowState: "review", TurnID: "t-1"})
	if err != nil {
		t.Fatal(err)
	}
	var s summary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(s.outcome("t-1", false), &out); err != nil {
		t.Fatal(err)
	}
	if out["kind"] != string(session.KindRunning) || out["state"] != "review" || out["sessionId"] != "s-1" || out["turnId"] != "t-1" {
		t.Errorf("running outcome = %v", out)
	}
}
