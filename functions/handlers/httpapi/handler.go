// Package httpapi is the HTTP face of the turn, decide, deliver and sessions Lambdas (DESIGN.md §1): it routes API Gateway
// HTTP API (payload format 2.0) requests to the engine, answers 200 with the outcome
// summary, and maps every failure onto {"error": {"code", "message", "details"}} with the
// status the contract gives it (see errorResponse).
//
// Routes:
//
//	POST /v1/workflows/{workflow}/sessions                      start: the trigger's session: path, else a minted id
//	POST /v1/workflows/{workflow}/sessions/{sessionId}/turns    a message to a session (Engine.Send decides)
//	POST /v1/sessions/{sessionId}/decision                      {to, comment?, parkId?}: Engine.Decide
//	POST /v1/sessions/{sessionId}/deliveries                    {trigger, variables?, message?, files?, parkId?}: Engine.Deliver
//	GET  /v1/sessions?workflow=&status=&limit=&cursor=&includeChildren=   SessionPage
//	GET  /v1/sessions/{sessionId}                               the session summary (pending park included)
//	GET  /v1/sessions/{sessionId}/messages?after=N&limit=       MessagePage
//	GET  /v1/sessions/{sessionId}/events?after=N&limit=         EventPage
//
// A decision or delivery names only the session; its workflow is the one the session's
// head records (an unknown session is 404 SessionNotFoundError).
//
// Every request is answered synchronously, as if it carried `Prefer: wait` (the
// asynchronous path is later work).
package httpapi

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/store"
)

// Engines hands out the engine of a workflow. An unknown workflow is a
// *session.UnknownWorkflowError (404); SessionWorkflow names the workflow a committed
// session belongs to, or fails with *session.SessionNotFoundError (404).
type Engines interface {
	Engine(ctx context.Context, workflow string) (*session.Engine, error)
	SessionWorkflow(ctx context.Context, sessionID string) (string, error)
	// Sessions reads stored sessions (the GET routes).
	Sessions() *session.Sessions
	// Log records Idempotency-Key answers (RememberIdempotent, PutIdempotent).
	Log() store.Log
}

// Handler serves the turn routes over Engines. Safe for concurrent use.
type Handler struct {
	engines Engines
	log     *slog.Logger
}

// New returns a Handler; log receives one record per failed request (nil discards).
func New(engines Engines, log *slog.Logger) *Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Handler{engines: engines, log: log}
}

// Time limits of a synchronous answer (DESIGN.md §4): API Gateway ends an HTTP API
// integration at ~29 s and Lambda stops at its deadline; the turn is cut early enough that
// the engine commits what ran, releases the lease and the answer (504) still gets out.
const (
	gatewayLimit = 28 * time.Second // API Gateway's ~29 s integration timeout, minus a margin
	commitMargin = 3 * time.Second  // time kept for the last commit, the lease release and the answer
)

// workContext bounds a request's work: min(Lambda deadline, start + gatewayLimit) minus
// commitMargin.
func workContext(ctx context.Context) (context.Context, context.CancelFunc) {
	deadline := time.Now().Add(gatewayLimit)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	return context.WithDeadline(ctx, deadline.Add(-commitMargin))
}

// Handle answers one API Gateway request. It never returns a Go error: every failure is
// an HTTP answer in the contract's error shape. The work is cut before API Gateway's or
// Lambda's deadline (TurnAbortedError, 504) so the answer is ours and committed steps stay.
func (h *Handler) Handle(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	if t, ok := readRoute(req); ok {
		return h.answer(ctx, req, func(work context.Context) (any, error) { return h.read(work, req, t) }), nil
	}
	serve := func(work context.Context) (any, error) { return h.serve(work, req) }
	if key := idempotencyKey(req); key != "" {
		return h.idempotent(ctx, req, key, serve), nil
	}
	return h.answer(ctx, req, serve), nil
}

// answer runs do within the request's time bound and renders its result or error.
func (h *Handler) answer(ctx context.Context, req events.APIGatewayV2HTTPRequest, do func(context.Context) (any, error)) events.APIGatewayV2HTTPResponse {
	work, cancel := workContext(ctx)
	defer cancel()
	answer, err := do(work)
	if err != nil {
		return h.failure(ctx, req, err)
	}
	body, err := json.Marshal(answer)
	if err != nil {
		return h.failure(ctx, req, err)
	}
	return respond(http.StatusOK, body)
}

// serve runs a request; every check that can refuse it runs before anything is written
// (spec 02 §1.3): route, body, variable names, workflow, session id, message, and for a
// start the trigger's requires signature (DESIGN.md §1: 422 before any write).
func (h *Handler) serve(ctx context.Context, req events.APIGatewayV2HTTPRequest) (*session.OutcomeSummary, error) {
	t, err := route(req)
	if err != nil {
		return nil, err
	}
	var out *session.Outcome
	switch t.act {
	case actStart, actTurn:
		out, err = h.turn(ctx, req, t)
	case actDecision:
		var d session.Decision
		if d, err = decodeDecision(req); err == nil {
			var eng *session.Engine
			if eng, _, err = SessionEngine(ctx, h.engines, t.sessionID); err == nil {
				out, err = eng.Decide(ctx, t.sessionID, d)
			}
		}
	case actDelivery:
		var d session.Delivery
		if d, err = decodeDelivery(req, t.sessionID); err == nil {
			d.ID = idempotencyKey(req)
			var eng *session.Engine
			if eng, _, err = SessionEngine(ctx, h.engines, t.sessionID); err == nil {
				out, err = eng.Deliver(ctx, t.sessionID, d)
			}
		}
	}
	if err != nil {
		return nil, err
	}
	s := out.Summary()
	return &s, nil
}

// turn serves a start or a turn (Engine.Send).
func (h *Handler) turn(ctx context.Context, req events.APIGatewayV2HTTPRequest, t target) (*session.Outcome, error) {
	in, err := decodeTurn(req)
	if err != nil {
		return nil, err
	}
	eng, err := h.engines.Engine(ctx, t.workflow)
	if err != nil {
		return nil, err
	}
	id := t.sessionID
	if t.act == actStart {
		id, _, err = eng.ResolveSessionID(ctx, in.Trigger, in.Variables)
	} else {
		id, err = spec.CheckSessionID(id)
	}
	if err != nil {
		return nil, err
	}
	if t.act == actStart {
		if strings.TrimSpace(in.Message) == "" {
			return nil, &session.EmptyMessageError{SessionID: id}
		}
		if err := eng.CheckStart(ctx, in.Trigger, in.Variables); err != nil {
			return nil, err
		}
	}
	// a turn's blank message is refused by the engine, which words it by disposition (a
	// reply to a human park, or a new turn) before anything is written
	return eng.Send(ctx, id, in)
}

// SessionEngines is what SessionEngine needs of the assembly.
type SessionEngines interface {
	Engine(ctx context.Context, workflow string) (*session.Engine, error)
	SessionWorkflow(ctx context.Context, sessionID string) (string, error)
}

// SessionEngine is the engine of the workflow a committed session belongs to (its head
// names it) and the session's store id. Errors: *spec.SessionStoreIdError,
// *session.SessionNotFoundError, *session.UnknownWorkflowError, store errors.
func SessionEngine(ctx context.Context, e SessionEngines, sessionID string) (*session.Engine, string, error) {
	id, err := spec.CheckSessionID(sessionID)
	if err != nil {
		return nil, "", err
	}
	wf, err := e.SessionWorkflow(ctx, id)
	if err != nil {
		return nil, id, err
	}
	eng, err := e.Engine(ctx, wf)
	return eng, id, err
}

// failure renders err as the contract's error answer and logs it: unexpected errors in
// full (the answer names nothing of them), other 5xx answers as warnings.
func (h *Handler) failure(ctx context.Context, req events.APIGatewayV2HTTPRequest, err error) events.APIGatewayV2HTTPResponse {
	status, body, internal := errorResponse(err)
	attrs := []any{"status", status, "code", body.Error.Code, "method", req.RequestContext.HTTP.Method,
		"path", req.RawPath, "apiRequestId", req.RequestContext.RequestID, "error", err.Error()}
	switch {
	case internal:
		h.log.ErrorContext(ctx, "request failed", attrs...)
	case status >= http.StatusInternalServerError:
		h.log.WarnContext(ctx, "request failed", attrs...)
	}
	b, mErr := json.Marshal(body)
	if mErr != nil { // details hold only plain values; this is a last resort
		b = []byte(`{"error":{"code":"` + CodeInternal + `","message":"The request failed unexpectedly."}}`)
		status = http.StatusInternalServerError
	}
	return respond(status, b)
}

func respond(status int, body []byte) events.APIGatewayV2HTTPResponse {
	return events.APIGatewayV2HTTPResponse{
		StatusCode: status,
		Headers:    map[string]string{"Content-Type": "application/json", "Cache-Control": "no-store"},
		Body:       string(body),
	}
}

// idempotencyKey is the request's Idempotency-Key header ("" when absent). API Gateway
// lower-cases header names in payload format 2.0.
func idempotencyKey(req events.APIGatewayV2HTTPRequest) string {
	return strings.TrimSpace(req.Headers["idempotency-key"])
}
