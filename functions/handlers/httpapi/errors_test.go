package httpapi

import (
	"errors"
	"fmt"
	"testing"

	"github.com/archmax-ai/archmax/core/hostconfig"
	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/spec"
)

// Every row of the error → status table (DESIGN.md §1), each also wrapped once: the
// mapping must see through fmt.Errorf("…: %w").
func TestErrorResponseTable(t *testing.T) {
	rows := []struct {
		err      error
		status   int
		code     string
		detail   string // a details key that must be present ("" = none)
		internal bool
	}{
		{&requestError{code: CodeInvalidRequest, message: "bad"}, 400, CodeInvalidRequest, "", false},
		{&requestError{code: CodeInvalidTriggerInput, message: "args"}, 400, CodeInvalidTriggerInput, "", false},
		{&session.InvalidTurnFileError{Variable: "doc", Cause: "bad"}, 400, "InvalidTurnFileError", "variable", false},
		{&requestError{code: CodeNotFound, message: "route"}, 404, CodeNotFound, "", false},
		{&requestError{code: CodePayloadTooLarge, message: "big"}, 413, CodePayloadTooLarge, "", false},
		{&spec.SessionStoreIdError{ID: "a/b", Reason: "it contains '/'"}, 400, "SessionStoreIdError", "sessionId", false},
		{&session.EmptyMessageError{SessionID: "s1"}, 400, "EmptyMessageError", "sessionId", false},
		{&spec.InvalidVariableNameError{Variable: "Bad"}, 400, "InvalidVariableNameError", "variable", false},
		{&spec.InvalidTitleError{Detail: "too long"}, 400, "InvalidTitleError", "", false},
		{&session.UnknownWorkflowError{Workflow: "nope"}, 404, "UnknownWorkflowError", "workflow", false},
		{&session.WorkflowMismatchError{SessionID: "s", Workflow: "a", Requested: "b"}, 409, "WorkflowMismatchError", "requested", false},
		{&session.SessionNotResumableError{SessionID: "s", Status: "running", LeaseExpiresAt: "2026-01-01T00:00:00.000Z"}, 409, "SessionNotResumableError", "leaseExpiresAt", false},
		{&session.ChildSessionError{SessionID: "s~1", ParentID: "s"}, 409, "ChildSessionError", "parentSessionId", false},
		{&session.StartRefusedError{Trigger: "order", Reason: "Refusing to start: …", Issues: []spec.SignatureValueIssue{{Kind: "missing", Name: "qty"}}}, 422, "SignatureIssuesError", "issues", false},
		{&spec.UnknownTriggerError{TriggerID: "x", Available: []string{"manual"}}, 422, "UnknownTriggerError", "available", false},
		{&spec.WorkflowLoadError{Workflow: "w", File: "workflows/w/workflow.yaml", Diagnostics: []spec.Diagnostic{{Severity: "error", Message: "m"}}}, 500, "WorkflowLoadError", "diagnostics", false},
		{&spec.UnsupportedRuntimeContractError{Workflow: "w", Requested: "archmax-harness@3", Supported: []string{"archmax-harness@1"}}, 500, "UnsupportedRuntimeContractError", "requested", false},
		{&model.CallError{Code: "ValidationException", Status: 400}, 502, "ModelCallError", "providerCode", false},
		{&session.BudgetExceededError{SessionID: "s", Workflow: "w", Kind: session.BudgetDaily, Unit: session.BudgetUSD, Scope: session.BudgetWorkflow,
			Limit: 50, Used: 50.2, Day: "2026-12-02", Field: "budgets.workflows.w.daily.usd"}, 429, "budget_exceeded", "day", false},
		{&session.BudgetPricingError{Workflow: "w", Problem: &hostconfig.Problem{Code: hostconfig.CodeBudget, Field: "budgets.session", Message: "m", Hint: "h"}}, 500, "BudgetPricingError", "field", false},
		{errors.New("s3: connection reset"), 500, CodeInternal, "", true},
		{&session.TurnAbortedError{SessionID: "s", Cause: errors.New("deadline")}, 504, "TurnAbortedError", "sessionId", false},
	}
	for _, r := range rows {
		for _, err := range []error{r.err, fmt.Errorf("outer: %w", r.err)} {
			t.Run(fmt.Sprintf("%T/%v", r.err, err != r.err), func(t *testing.T) {
				status, body, internal := errorResponse(err)
				if status != r.status || body.Error.Code != r.code || internal != r.internal {
					t.Fatalf("errorResponse(%v) = %d %s internal=%v, want %d %s internal=%v",
						err, status, body.Error.Code, internal, r.status, r.code, r.internal)
				}
				if body.Error.Message == "" {
					t.Error("empty message")
				}
				if r.detail != "" {
					if _, ok := body.Error.Details[r.detail]; !ok {
						t.Errorf("details %v lack %q", body.Error.Details, r.detail)
					}
				} else if len(body.Error.Details) != 0 {
					t.Errorf("unexpected details %v", body.Error.Details)
				}
			})
		}
	}
}
