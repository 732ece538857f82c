package httpapi

import (
	"context"
	"errors"
	"net/http"

	"github.com/aws/aws-lambda-go/events"

	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/functions/handlers/access"
)

// deleteSession answers DELETE /v1/sessions/{sessionId} (RD22-5): 204 No Content, empty
// body, once the session and everything of it is gone (session.Sessions.Delete: its
// sub-workflow children, timed parks' schedules, files, blobs and log) — and 204 too for a
// session that does not exist (never ran, already deleted) or that the caller may not see,
// so a repeated delete succeeds and the answer tells nobody that a session they may not
// see exists. The owner or an admin may delete a session (access.Delete); a visible
// session the caller may not delete (a decider's) is 403. Refusals: 400 (the id), 409
// SessionNotResumableError (a turn runs on it or one of its children: retry once it
// settles), 409 ChildSessionError (a child is deleted with its root), 409
// SessionDeletingError when the request's time ran out part-way. A deletion stopped
// part-way is finished by the repeat. An Idempotency-Key is not needed and not recorded:
// the delete is idempotent by itself. The Idempotency-Key records of the session's requests
// go with it (RD22-14): a retry after the delete runs anew, never replays the deleted answer.
func (h *Handler) deleteSession(ctx context.Context, req events.APIGatewayV2HTTPRequest, t target, caller access.Caller) events.APIGatewayV2HTTPResponse {
	work, cancel := workContext(ctx)
	defer cancel()
	sessions := h.engines.Sessions()
	a, err := sessions.Access(work, t.sessionID)
	if err != nil {
		return h.failure(ctx, req, err)
	}
	if !a.Exists {
		return noContent()
	}
	if err := h.policy.Check(caller, access.Delete, a); err != nil {
		var hidden *session.SessionNotFoundError
		if errors.As(err, &hidden) {
			return noContent()
		}
		return h.failure(ctx, req, err)
	}
	// the audit line of the delete (RD22-20) names the caller
	if _, err := sessions.WithAuditLog(h.log).Delete(session.WithCaller(work, caller.Principal), a.SessionID); err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			// the request's time ran out part-way (a very large session): what is deleted stays
			// deleted, and the repeat finishes it (RD22-3)
			err = &session.SessionDeletingError{SessionID: a.SessionID}
		}
		return h.failure(ctx, req, err)
	}
	return noContent()
}

// noContent is a 204 answer: no body, never cached.
func noContent() events.APIGatewayV2HTTPResponse {
	return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusNoContent, Headers: map[string]string{"Cache-Control": "no-store"}}
}
