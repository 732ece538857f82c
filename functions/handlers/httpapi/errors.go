package httpapi

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/functions/handlers/access"
	"github.com/archmax-ai/archmax/functions/handlers/continuation"
)

// ErrorBody is the answer to a failed request (DESIGN.md §1):
// {"error": {"code": "<spec error name>", "message": "…", "details": {…}}}.
type ErrorBody struct {
	Error ErrorInfo `json:"error"`
}

// ErrorInfo is the inside of an ErrorBody. Code is the spec's error name (e.g.
// "SessionNotResumableError"), or one of this package's own codes for failures the spec
// does not name (CodeNotFound, CodeInvalidRequest, CodePayloadTooLarge, CodeInternal, …).
type ErrorInfo struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

// The codes of failures that have no spec error name.
const (
	CodeNotFound             = "NotFound"                  // no such route
	CodeMethodNotAllowed     = "MethodNotAllowed"          // a route of ours, another method
	CodeIdempotencyKeyInUse  = "IdempotencyKeyInUseError"  // the key's first request still runs (409)
	CodeIdempotencyKeyReused = "IdempotencyKeyReusedError" // the key came with another request (422)
	CodeInvalidRequest       = "InvalidRequestError"       // the body is not a well-formed turn request
	CodePayloadTooLarge      = "PayloadTooLargeError"      // the body exceeds MaxBodyBytes
	CodeInvalidTriggerInput  = "InvalidTriggerInputError"  // spec 02 §1.2: a trigger is an id only
	CodeInternal             = "InternalError"             // anything unexpected; details are only logged
)

// sessionFailure is a failure (a 5xx, not a refusal) of a call on sessionID — a start's
// session included, which may exist by then (interrupted): its answer names the session in
// details.sessionId and its Location, so the client can follow or poll it (SS21-11).
type sessionFailure struct {
	err       error
	sessionID string
}

func (e *sessionFailure) Error() string { return e.err.Error() }
func (e *sessionFailure) Unwrap() error { return e.err }

// requestError is a request this layer refuses before the engine sees it.
type requestError struct {
	code    string
	message string
	allow   string // MethodNotAllowed: the methods the route takes (the Allow header)
}

func (e *requestError) Error() string { return e.message }

func invalidRequest(format string, args ...any) error {
	return &requestError{code: CodeInvalidRequest, message: fmt.Sprintf(format, args...)}
}

// errorResponse is the whole error → status table (DESIGN.md §1); errors are matched
// with errors.As, so wrapping does not change the answer:
//
//	400 InvalidRequestError, InvalidTriggerInputError, InvalidTurnFileError,
//	    SessionStoreIdError, EmptyMessageError, InvalidVariableNameError, InvalidTitleError
//	    MissingDeliveryTriggerError
//	403 AccessDeniedError (no caller identity; or details.sessionId, action: an action on a
//	    visible session the caller may not take), FourEyesError (the decider started it)
//	404 NotFound (route), UnknownWorkflowError, SessionNotFoundError (also a session the
//	    caller may not see)
//	405 MethodNotAllowed (a route of ours with another method; header Allow names its method)
//	409 WorkflowMismatchError, SessionNotResumableError, SessionNotParkedError,
//	    SessionNotAwaitingInputError, ParkNotLiveError (details.liveParkId),
//	    DuplicateDeliveryError, IdempotencyKeyInUseError, ChildSessionError
//	    (details.parentSessionId, rootSessionId: a sub-workflow child is addressed through
//	    its root session), TurnSupersededError (details.turnId, currentTurnId: a repeated
//	    request the session applied and has moved past), SessionDeletingError (a deletion
//	    began: repeat the DELETE to finish it)
//	400 WorkspacePathEscapeError (the content routes: a file path out of the session's folder)
//	404 ArtifactNotFoundError (details.available), FileNotFoundError (details.path)
//	413 PayloadTooLargeError, ContentTooLargeError (details.size, maxBytes: ask for a Range)
//	416 RangeNotSatisfiableError (header Content-Range: bytes */size)
//	422 SignatureIssuesError (details.issues), UnknownTriggerError (details.available),
//	    InvalidDecisionTargetError (details.validTargets), IdempotencyKeyReusedError
//	429 budget_exceeded (session.BudgetExceededError: details.kind turn|lifetime|daily,
//	    unit tokens|usd, limit, used, scope session|workflow, field, sessionId, workflow,
//	    day for a daily budget — the budget is spent; raise it in archmax.host.yaml)
//	500 WorkflowLoadError (details.diagnostics), UnsupportedRuntimeContractError
//	    (details.requested, supported), BudgetPricingError (details.workflow, field: a USD
//	    budget on an unpriced model), InternalError (anything else)
//	502 ModelCallError (details.providerCode)
//	5xx of a call on a session (a start's included): details.sessionId and header Location
//	    name the session (sessionFailure)
//	503 ContinuationStartError (details.turnId, state: the session is interrupted)
//	504 TurnAbortedError
//
// internal reports that err is unexpected: the caller logs it, and the answer names
// nothing of it.
func errorResponse(err error) (status int, body ErrorBody, internal bool) {
	var (
		reqErr     *requestError
		idErr      *spec.SessionStoreIdError
		emptyErr   *session.EmptyMessageError
		nameErr    *spec.InvalidVariableNameError
		titleErr   *spec.InvalidTitleError
		unknownWf  *session.UnknownWorkflowError
		mismatch   *session.WorkflowMismatchError
		busy       *session.SessionNotResumableError
		deleting   *session.SessionDeletingError
		refused    *session.StartRefusedError
		unknownTrg *spec.UnknownTriggerError
		loadErr    *spec.WorkflowLoadError
		contract   *spec.UnsupportedRuntimeContractError
		callErr    *model.CallError
		aborted    *session.TurnAbortedError
		fileErr    *session.InvalidTurnFileError
		noSession  *session.SessionNotFoundError
		notParked  *session.SessionNotParkedError
		childErr   *session.ChildSessionError
		notInput   *session.SessionNotAwaitingInputError
		noTrigger  *session.MissingDeliveryTriggerError
		stalePark  *session.ParkNotLiveError
		badTarget  *session.InvalidDecisionTargetError
		duplicate  *session.DuplicateDeliveryError
		superseded *session.TurnSupersededError
		contErr    *continuation.ContinuationStartError
		denied     *access.DeniedError
		budget     *session.BudgetExceededError
		unpriced   *session.BudgetPricingError
	)
	var contentErr *contentError
	var sf *sessionFailure
	switch {
	case errors.As(err, &sf):
		status, body, internal = errorResponse(sf.err)
		if body.Error.Details == nil {
			body.Error.Details = map[string]any{}
		}
		if _, ok := body.Error.Details["sessionId"]; !ok {
			body.Error.Details["sessionId"] = sf.sessionID
		}
		return status, body, internal
	case errors.As(err, &contentErr):
		return contentErr.status, errBody(contentErr.code, contentErr.message, contentErr.details), false
	case errors.As(err, &reqErr):
		status = http.StatusBadRequest
		switch reqErr.code {
		case CodeNotFound:
			status = http.StatusNotFound
		case CodeMethodNotAllowed:
			status = http.StatusMethodNotAllowed
		case CodeIdempotencyKeyInUse:
			status = http.StatusConflict
		case CodeIdempotencyKeyReused:
			status = http.StatusUnprocessableEntity
		case CodePayloadTooLarge:
			status = http.StatusRequestEntityTooLarge
		}
		return status, errBody(reqErr.code, reqErr.message, nil), false
	case errors.As(err, &idErr):
		return http.StatusBadRequest, errBody(idErr.Name(), idErr.Error(), map[string]any{"sessionId": idErr.ID}), false
	case errors.As(err, &emptyErr):
		return http.StatusBadRequest, errBody(emptyErr.Name(), emptyErr.Error(), map[string]any{"sessionId": emptyErr.SessionID}), false
	case errors.As(err, &nameErr):
		return http.StatusBadRequest, errBody(nameErr.Name(), nameErr.Error(), map[string]any{"variable": nameErr.Variable}), false
	case errors.As(err, &fileErr):
		return http.StatusBadRequest, errBody(fileErr.Name(), fileErr.Error(), map[string]any{"variable": fileErr.Variable}), false
	case errors.As(err, &titleErr):
		return http.StatusBadRequest, errBody(titleErr.Name(), titleErr.Error(), nil), false
	case errors.As(err, &noTrigger):
		return http.StatusBadRequest, errBody(noTrigger.Name(), noTrigger.Error(), map[string]any{"sessionId": noTrigger.SessionID}), false
	case errors.As(err, &denied):
		d := map[string]any{}
		if denied.SessionID != "" {
			d["sessionId"], d["action"] = denied.SessionID, string(denied.Action)
		}
		return http.StatusForbidden, errBody(denied.Name(), denied.Error(), d), false
	case errors.As(err, &noSession):
		return http.StatusNotFound, errBody(noSession.Name(), noSession.Error(), map[string]any{"sessionId": noSession.SessionID}), false
	case errors.As(err, &childErr):
		return http.StatusConflict, errBody(childErr.Name(), childErr.Error(), map[string]any{"sessionId": childErr.SessionID,
			"parentSessionId": childErr.ParentID, "rootSessionId": childErr.RootID}), false
	case errors.As(err, &notParked):
		return http.StatusConflict, errBody(notParked.Name(), notParked.Error(), map[string]any{"sessionId": notParked.SessionID}), false
	case errors.As(err, &notInput):
		return http.StatusConflict, errBody(notInput.Name(), notInput.Error(), map[string]any{"sessionId": notInput.SessionID}), false
	case errors.As(err, &duplicate):
		return http.StatusConflict, errBody(duplicate.Name(), duplicate.Error(), map[string]any{
			"sessionId": duplicate.SessionID, "idempotencyKey": duplicate.ID}), false
	case errors.As(err, &superseded):
		d := map[string]any{"sessionId": superseded.SessionID, "turnId": superseded.TurnID}
		if superseded.CurrentTurnID != "" {
			d["currentTurnId"] = superseded.CurrentTurnID
		}
		return http.StatusConflict, errBody(superseded.Name(), superseded.Error(), d), false
	case errors.As(err, &stalePark):
		return http.StatusConflict, errBody(stalePark.Name(), stalePark.Error(), map[string]any{
			"sessionId": stalePark.SessionID, "parkId": stalePark.ParkID, "liveParkId": stalePark.LiveParkID}), false
	case errors.As(err, &badTarget):
		return http.StatusUnprocessableEntity, errBody(badTarget.Name(), badTarget.Error(), map[string]any{
			"sessionId": badTarget.SessionID, "to": badTarget.Target, "validTargets": nonNil(badTarget.ValidTargets)}), false
	case errors.As(err, &unknownWf):
		return http.StatusNotFound, errBody(unknownWf.Name(), unknownWf.Error(), map[string]any{"workflow": unknownWf.Workflow}), false
	case errors.As(err, &mismatch):
		return http.StatusConflict, errBody(mismatch.Name(), mismatch.Error(), map[string]any{
			"sessionId": mismatch.SessionID, "workflow": mismatch.Workflow, "requested": mismatch.Requested}), false
	case errors.As(err, &deleting):
		d := map[string]any{"sessionId": deleting.SessionID}
		if deleting.LeaseExpiresAt != "" {
			d["leaseExpiresAt"] = deleting.LeaseExpiresAt
		}
		return http.StatusConflict, errBody(deleting.Name(), deleting.Error(), d), false
	case errors.As(err, &busy):
		d := map[string]any{"sessionId": busy.SessionID}
		if busy.Status != "" {
			d["status"] = busy.Status
		}
		if busy.LeaseExpiresAt != "" {
			d["leaseExpiresAt"] = busy.LeaseExpiresAt
		}
		return http.StatusConflict, errBody(busy.Name(), busy.Error(), d), false
	case errors.As(err, &refused):
		return http.StatusUnprocessableEntity, errBody(refused.Name(), refused.Error(), map[string]any{
			"trigger": refused.Trigger, "issues": refused.Issues}), false
	case errors.As(err, &unknownTrg):
		return http.StatusUnprocessableEntity, errBody(unknownTrg.Name(), unknownTrg.Error(), map[string]any{
			"trigger": unknownTrg.TriggerID, "available": nonNil(unknownTrg.Available)}), false
	case errors.As(err, &budget):
		d := map[string]any{"kind": string(budget.Kind), "unit": string(budget.Unit), "limit": budget.Limit, "used": budget.Used,
			"scope": string(budget.Scope), "field": budget.Field, "sessionId": budget.SessionID, "workflow": budget.Workflow}
		if budget.Day != "" {
			d["day"] = budget.Day
		}
		return http.StatusTooManyRequests, errBody(budget.Code(), budget.Error(), d), false
	case errors.As(err, &unpriced):
		return http.StatusInternalServerError, errBody(unpriced.Name(), unpriced.Error(), map[string]any{
			"workflow": unpriced.Workflow, "field": unpriced.Problem.Field}), false
	case errors.As(err, &loadErr):
		// The deployed spec is broken: the server cannot serve the workflow (a 5xx), but the
		// operator needs every diagnostic, and nothing ran ungoverned.
		return http.StatusInternalServerError, errBody(loadErr.Name(), loadErr.Error(), map[string]any{
			"workflow": loadErr.Workflow, "file": loadErr.File, "diagnostics": nonNil(loadErr.Diagnostics)}), false
	case errors.As(err, &contract):
		return http.StatusInternalServerError, errBody(contract.Name(), contract.Error(), map[string]any{
			"workflow": contract.Workflow, "requested": contract.Requested, "supported": contract.Supported}), false
	case errors.As(err, &callErr):
		return http.StatusBadGateway, errBody(callErr.Name(), "The model provider failed: "+callErr.Code+".", map[string]any{
			"providerCode": callErr.Code, "providerStatus": callErr.Status, "retryable": callErr.Retryable}), false
	case errors.As(err, &contErr):
		return http.StatusServiceUnavailable, errBody(contErr.Name(), contErr.Error(), map[string]any{
			"sessionId": contErr.SessionID, "turnId": contErr.TurnID, "state": contErr.State}), false
	case errors.As(err, &aborted):
		// The invocation's deadline stopped the turn where no continuation could carry it (a
		// resume before its first commit, whose park is still live, or a host that cannot
		// start continuations); every committed step stays, and a retry applies the call.
		d := map[string]any{"sessionId": aborted.SessionID}
		if aborted.TurnID != "" {
			d["turnId"] = aborted.TurnID
		}
		return http.StatusGatewayTimeout, errBody(aborted.Name(), aborted.Error(), d), false
	default:
		return http.StatusInternalServerError, errBody(CodeInternal, "The request failed unexpectedly. It has been logged.", nil), true
	}
}

func errBody(code, message string, details map[string]any) ErrorBody {
	return ErrorBody{Error: ErrorInfo{Code: code, Message: message, Details: details}}
}

// nonNil makes an empty list encode as [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// StatusOf is the HTTP status the contract gives err (errorResponse's table): 4xx for a
// refusal, 5xx for a failure.
func StatusOf(err error) int {
	status, _, _ := errorResponse(err)
	return status
}
