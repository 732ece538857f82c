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
//	DELETE /v1/sessions/{sessionId}                             the session and everything of it (delete.go): 204
//	GET  /v1/sessions?workflow=&status=&limit=&cursor=&includeChildren=   SessionPage
//	GET  /v1/sessions/{sessionId}                               the session summary (pending park included)
//	GET  /v1/sessions/{sessionId}/messages?after=N&limit=       MessagePage
//	GET  /v1/sessions/{sessionId}/events?after=N&limit=         EventPage
//	GET  /v1/sessions/{sessionId}/artifacts/{name}              a session artifact (core/artifacts), rendered on read
//	GET  /v1/sessions/{sessionId}/files/{path+}                 a session-zone file, read-only, ranged (files.go)
//
// A decision or delivery names only the session; its workflow is the one the session's
// head records (an unknown session is 404 SessionNotFoundError).
//
// A mutating request answers 200 with the outcome summary when its call settled, or 202
// (kind "running") when the turn goes on in a continuation (functions/handlers/continuation):
// at once, or after `Prefer: wait=N` seconds. The outcome is then read from
// GET /v1/sessions/{sessionId}: its lastTurn carries the outcome once lastTurn.turnId is the
// turn the 202 named.
//
// Every refusal of the request itself comes before any of the session it names: route
// (404, 405 with Allow), the caller's identity (403), body (400, 413), then the session
// (400 id; 404 — also for a session the caller may not see —; 403 for an action on it the
// caller may not take; 409), then the engine's (422).
//
// Who may do what is functions/handlers/access: every request is identified from its
// authorizer context (or is `archmax serve`'s one local principal), checked against the
// session's owner and status before the engine runs, and checked again by the engine under
// the session's lease (session.WithGuard); the engine records the caller
// (session.WithCaller). Idempotency-Keys are scoped to the caller.
package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/store"
	"github.com/archmax-ai/archmax/functions/handlers/access"
	"github.com/archmax-ai/archmax/functions/handlers/continuation"
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
	run     *continuation.Runner
	log     *slog.Logger
	policy  access.Policy
	local   *access.Caller // every request's caller (archmax serve), instead of the request's authorizer
}

// Option configures a Handler.
type Option func(*Handler)

// WithPolicy sets the access settings (default: the zero access.Policy — JWT scopes with
// the default prefix, no IAM principal holding a role, four-eyes off).
func WithPolicy(p access.Policy) Option { return func(h *Handler) { h.policy = p } }

// WithLocalCaller makes c the caller of every request, whatever its authorizer context
// says: `archmax serve`'s one local principal. Never for a deployed API.
func WithLocalCaller(c access.Caller) Option { return func(h *Handler) { h.local = &c } }

// New returns a Handler whose mutating requests run under run (nil: a Runner without a
// Starter, which answers every request when its work has settled); log receives one record
// per failed request (nil discards).
func New(engines Engines, run *continuation.Runner, log *slog.Logger, opts ...Option) *Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if run == nil {
		run = continuation.NewRunner(engines, nil, continuation.Budget{}, log)
	}
	h := &Handler{engines: engines, run: run, log: log}
	for _, o := range opts {
		o(h)
	}
	return h
}

// identify is the caller of req: the local caller, else the request's authorizer's
// (*access.DeniedError when it names nobody).
func (h *Handler) identify(req events.APIGatewayV2HTTPRequest) (access.Caller, error) {
	if h.local != nil {
		return *h.local, nil
	}
	return h.policy.Identify(req)
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
// an HTTP answer in the contract's error shape.
//
// A mutating request runs under the Runner (DESIGN.md §1, §4): it answers 200 with the
// outcome summary when the call settled, or 202 with kind "running" (and a Location of
// the session summary to poll) when the turn goes on in a continuation — at once without
// `Prefer: wait=N`, else once N seconds (at most MaxWait) have passed between two steps.
// A fresh turn's opening, or a resume (decision, delivery), is committed before the answer. Work
// still running near API Gateway's or Lambda's limit is cut so the answer is ours and
// committed steps stay.
func (h *Handler) Handle(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	if t, ok := readRoute(req); ok {
		if t.view == "artifact" || t.view == "file" {
			return h.content(ctx, req, t), nil
		}
		return h.answer(ctx, req, func(ctx context.Context) (any, error) {
			caller, err := h.identify(req)
			if err != nil {
				return nil, err
			}
			work, cancel := workContext(ctx)
			defer cancel()
			return h.read(work, req, t, caller)
		}), nil
	}
	t, err := route(req)
	if err != nil { // no route, or another method: nothing to run or remember
		return h.failure(ctx, req, err), nil
	}
	caller, err := h.identify(req)
	if err != nil { // nobody to run it for, nor to remember it for
		return h.failure(ctx, req, err), nil
	}
	if t.act == actDelete { // idempotent by itself: no Idempotency-Key record (delete.go)
		return h.deleteSession(ctx, req, t, caller), nil
	}
	serve := func(ctx context.Context) (any, error) { return h.serve(ctx, req, t, caller) }
	if key := idempotencyKey(req); key != "" {
		return h.idempotent(ctx, req, key, t.sessionID, caller, serve), nil
	}
	return h.answer(ctx, req, serve), nil
}

// HandleRead answers only the read routes (the read-only sessions function): any other
// request is 405 MethodNotAllowed when it is one of the mutating routes, else 404 NotFound,
// and nothing is ever written.
func (h *Handler) HandleRead(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	if _, ok := readRoute(req); ok {
		return h.Handle(ctx, req)
	}
	if _, err := route(withMethod(req, http.MethodPost)); err == nil {
		return h.failure(ctx, req, &requestError{code: CodeMethodNotAllowed, allow: http.MethodPost,
			message: "This function serves only the read routes (GET); send " + req.RequestContext.HTTP.Method + " " + req.RawPath + " to the API's write routes."}), nil
	}
	return h.failure(ctx, req, notRouted(req)), nil
}

// answer runs do and renders its result (200; 202 for an outcome still running) or error.
func (h *Handler) answer(ctx context.Context, req events.APIGatewayV2HTTPRequest, do func(context.Context) (any, error)) events.APIGatewayV2HTTPResponse {
	answer, err := do(ctx)
	if err != nil {
		return h.failure(ctx, req, err)
	}
	body, err := json.Marshal(answer)
	if err != nil {
		return h.failure(ctx, req, err)
	}
	if sum, ok := answer.(*session.OutcomeSummary); ok && sum.Kind == session.KindRunning {
		resp := respond(http.StatusAccepted, body)
		resp.Headers["Location"] = sessionLocation(sum.SessionID)
		return resp
	}
	return respond(http.StatusOK, body)
}

// sessionLocation is the summary route of a session, the Location of a 202.
func sessionLocation(sessionID string) string { return "/v1/sessions/" + url.PathEscape(sessionID) }

// MaxWait is the longest `Prefer: wait=N` honoured: 25 s (DESIGN.md §1), within API
// Gateway's ~29 s.
const MaxWait = 25 * time.Second

// runOptions bound a mutating request's engine call: no step starts after the request's
// `Prefer: wait` (RFC 7240; absent or unreadable = 0, over MaxWait = MaxWait), and a step
// still running at API Gateway's limit is cut. now is the Runner's (Runner.Now).
func runOptions(ctx context.Context, req events.APIGatewayV2HTTPRequest, now time.Time) continuation.Options {
	if streamed(ctx) { // no gateway limit: the call runs within the invocation's own budget
		return continuation.Options{}
	}
	return continuation.Options{YieldBy: now.Add(preferWait(req.Headers["prefer"])), CutBy: now.Add(gatewayLimit)}
}

type streamedKey struct{}

// Streamed marks ctx as serving a request whose answer is a response stream (Server-Sent
// Events, functions/handlers/stream): no API Gateway integration limit bounds it, so a
// mutating request's call runs until it settles or the invocation's budget hands it to a
// continuation, whatever its Prefer header says.
func Streamed(ctx context.Context) context.Context {
	return context.WithValue(ctx, streamedKey{}, true)
}

func streamed(ctx context.Context) bool { v, _ := ctx.Value(streamedKey{}).(bool); return v }

// preferWait reads the wait preference of a Prefer header value ("respond-async, wait=10"):
// RFC 7240's delta-seconds (digits only; anything else is ignored, as 0), capped at MaxWait
// before it becomes a Duration, so no value overflows past the cap.
func preferWait(prefer string) time.Duration {
	for _, pref := range strings.Split(prefer, ",") {
		name, value, _ := strings.Cut(strings.TrimSpace(pref), "=")
		if !strings.EqualFold(strings.TrimSpace(name), "wait") {
			continue
		}
		digits := strings.Trim(strings.TrimSpace(value), `"`)
		if digits == "" || strings.Trim(digits, "0123456789") != "" {
			return 0
		}
		n, err := strconv.ParseUint(digits, 10, 64)
		if err != nil || n >= uint64(MaxWait/time.Second) { // err: more digits than any uint64
			return MaxWait
		}
		return time.Duration(n) * time.Second
	}
	return 0
}

// serve runs a request routed to t for caller; every check that can refuse it runs before
// anything is written (spec 02 §1.3): body, variable names, workflow, session id, the
// caller's access to the session, message, and for a start the trigger's requires
// signature (DESIGN.md §1: 422 before any write). The engine call runs as the caller
// (session.WithCaller) under the same access check on the leased session
// (session.WithGuard), so two callers racing to start one new id, or a decision after the
// session moved on, cannot pass a check made before the lease.
func (h *Handler) serve(ctx context.Context, req events.APIGatewayV2HTTPRequest, t target, caller access.Caller) (*session.OutcomeSummary, error) {
	var err error
	// every check that can refuse the request runs here, before the call is run
	var call func(context.Context) (*session.Outcome, error)
	act := access.Send
	switch t.act {
	case actStart, actTurn:
		call, err = h.turn(ctx, req, t, caller)
	case actDecision:
		act = access.Decide
		var d session.Decision
		if d, err = decodeDecision(req); err == nil {
			var eng *session.Engine
			if eng, err = h.engineFor(ctx, caller, act, t.sessionID); err == nil {
				call = func(ctx context.Context) (*session.Outcome, error) { return eng.Decide(ctx, t.sessionID, d) }
			}
		}
	case actDelivery:
		act = access.Deliver
		var d session.Delivery
		if d, err = decodeDelivery(req, t.sessionID); err == nil {
			// the body is refused (400) before the session is read (404, 409), as a decision's is
			err = session.CheckDelivery(t.sessionID, d)
		}
		if err == nil {
			d.ID = deliveryID(caller, idempotencyKey(req))
			var eng *session.Engine
			if eng, err = h.engineFor(ctx, caller, act, t.sessionID); err == nil {
				call = func(ctx context.Context) (*session.Outcome, error) { return eng.Deliver(ctx, t.sessionID, d) }
			}
		}
	}
	if err != nil {
		return nil, err
	}
	ctx = session.WithGuard(session.WithCaller(ctx, caller.Principal), h.policy.Guard(caller, act))
	if turn := requestTurn(ctx); turn != "" {
		ctx = session.WithTurnID(ctx, turn) // a repeat of the request names the same turn
	}
	out, err := h.run.Run(ctx, runOptions(ctx, req, h.run.Now()), call)
	if err != nil {
		return nil, err
	}
	s := out.Summary()
	s.Pending = linkEvidence(s.Pending, s.SessionID)
	return &s, nil
}

// engineFor checks that caller may take act on session id (404 when it may not see it, 403
// when it may not do this) and returns the engine of the session's workflow.
func (h *Handler) engineFor(ctx context.Context, caller access.Caller, act access.Action, id string) (*session.Engine, error) {
	a, err := h.engines.Sessions().Access(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := h.check(ctx, caller, act, a); err != nil {
		return nil, err
	}
	return h.engines.Engine(ctx, a.Workflow)
}

// check is the access check of caller taking act on a session — passed too by a repeat of
// the caller's own request that the session has applied (its turn id, derived from the
// caller's Idempotency-Key, is the session's): a decider repeating a decision the session
// has since moved past gets the decision's answer, not a 404. The engine recognises the
// repeat under the lease and applies nothing.
func (h *Handler) check(ctx context.Context, caller access.Caller, act access.Action, a session.SessionAccess) error {
	err := h.policy.Check(caller, act, a)
	if err == nil || !a.Exists {
		return err
	}
	if turn := requestTurn(ctx); turn != "" {
		if applied, aerr := h.engines.Sessions().TurnApplied(ctx, a.SessionID, turn); aerr == nil && applied {
			return nil
		}
	}
	return err
}

// turn checks a start or a turn and returns its Engine.Send call.
func (h *Handler) turn(ctx context.Context, req events.APIGatewayV2HTTPRequest, t target, caller access.Caller) (func(context.Context) (*session.Outcome, error), error) {
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
		var minted bool
		id, minted, err = eng.ResolveSessionID(ctx, in.Trigger, in.Variables)
		if k := requestOf(ctx); minted && k != "" {
			id = session.SessionIDFor(k) // a repeat of the start names the same session
		}
	} else {
		id, err = spec.CheckSessionID(id)
	}
	if err != nil {
		return nil, err
	}
	// a turn on a session that never ran is a start too: the same checks before any write;
	// a start whose id resolves to a session that exists is a message to it (the owner's)
	a, err := h.engines.Sessions().Access(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := h.check(ctx, caller, access.Send, a); err != nil {
		return nil, err
	}
	start := t.act == actStart || !a.Exists
	if start {
		if strings.TrimSpace(in.Message) == "" {
			return nil, &session.EmptyMessageError{SessionID: id}
		}
		if err := eng.CheckStart(ctx, in.Trigger, in.Variables); err != nil {
			return nil, err
		}
	}
	// a turn's blank message is refused by the engine, which words it by disposition (a
	// reply to a human park, or a new turn) before anything is written
	return func(ctx context.Context) (*session.Outcome, error) {
		out, err := eng.Send(ctx, id, in)
		if err != nil && StatusOf(err) >= http.StatusInternalServerError {
			// a failure, not a refusal: the turn may have opened (a start's session exists,
			// interrupted), so the answer names the session to follow or poll (SS21-11)
			err = &sessionFailure{err: err, sessionID: id}
		}
		return out, err
	}, nil
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
	resp := respond(status, b)
	var reqErr *requestError
	if status == http.StatusMethodNotAllowed && errors.As(err, &reqErr) {
		resp.Headers["Allow"] = reqErr.allow // RFC 9110 §15.5.6: a 405 names the methods the target takes
	}
	var sf *sessionFailure
	if errors.As(err, &sf) {
		resp.Headers["Location"] = sessionLocation(sf.sessionID)
	}
	var cErr *contentError
	if errors.As(err, &cErr) {
		for k, v := range cErr.headers {
			resp.Headers[k] = v
		}
	}
	return resp
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
