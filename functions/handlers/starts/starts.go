// Package starts is the body of the turn Lambda (DESIGN.md §1): API Gateway HTTP API
// requests are served by functions/handlers/httpapi, and EventBridge events start sessions.
//
// An event is mapped to a workflow trigger by the first Route whose source and detail-type
// match (configured as JSON in ARCHMAX_EVENT_ROUTES, e.g.
// `[{"source":"orders.app","detailType":"Order Placed","workflow":"fulfil","trigger":"order"}]`).
// The event's detail object becomes the opening variables (each key must be a variable
// name), its "message" string the person's message (else "<detail-type> from <source>").
// The session id comes from the trigger's `session:` path over those variables, else it is
// minted. The event id is the idempotency key: a redelivered event starts nothing twice.
package starts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/archmax-ai/archmax/core/identity"
	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/functions/handlers/continuation"
	"github.com/archmax-ai/archmax/functions/handlers/httpapi"
)

// EnvEventRoutes names the environment variable holding the routes, a JSON array of Route.
const EnvEventRoutes = "ARCHMAX_EVENT_ROUTES"

// Route maps EventBridge events to a trigger of a workflow. An empty Source or DetailType
// matches any; an empty Trigger is the event's detail-type.
type Route struct {
	Source     string `json:"source"`
	DetailType string `json:"detailType"`
	Workflow   string `json:"workflow"`
	Trigger    string `json:"trigger"`
}

// ParseRoutes reads the routes' JSON ("" is none). Each route must name a workflow.
func ParseRoutes(s string) ([]Route, error) {
	if s == "" {
		return nil, nil
	}
	var routes []Route
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&routes); err != nil {
		return nil, fmt.Errorf("%s: not a JSON array of {source, detailType, workflow, trigger}: %w", EnvEventRoutes, err)
	}
	for i, r := range routes {
		if r.Workflow == "" {
			return nil, fmt.Errorf("%s: route %d names no workflow", EnvEventRoutes, i)
		}
	}
	return routes, nil
}

// Handler serves turn-function events of both shapes. Safe for concurrent use.
type Handler struct {
	http    *httpapi.Handler
	run     *continuation.Runner
	engines httpapi.Engines
	routes  []Route
	log     *slog.Logger
}

// New returns a Handler whose engine calls run under run (a turn that outlives the
// invocation continues in another; nil runs each to its end); log may be nil (discarded);
// opts configure its HTTP handler (the access policy).
func New(engines httpapi.Engines, run *continuation.Runner, routes []Route, log *slog.Logger, opts ...httpapi.Option) *Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if run == nil {
		run = continuation.NewRunner(engines, nil, continuation.Budget{}, log)
	}
	return &Handler{http: httpapi.New(engines, run, log, opts...), run: run, engines: engines, routes: routes, log: log}
}

// Result answers an EventBridge event (httpapi.EventResult); EventError is an event no
// retry can help (httpapi.EventError).
type (
	Result     = httpapi.EventResult
	EventError = httpapi.EventError
)

// Handle serves one event: an API Gateway request is answered like every HTTP route; an
// EventBridge event starts a session (Result, or an error Lambda retries — a busy session,
// a model failure — or keeps in the on-failure destination).
func (h *Handler) Handle(ctx context.Context, raw json.RawMessage) (any, error) {
	return h.http.HandleOrEvent(ctx, raw, "start", func(ctx context.Context, ev events.EventBridgeEvent) (any, error) { return h.start(ctx, ev) })
}

// claim records of an event id.
type claim struct {
	State     string `json:"state"`               // "pending" | "done" | "failed"
	SessionID string `json:"sessionId,omitempty"` // done: the session it started
	Error     string `json:"error,omitempty"`     // failed: why
}

// Claim lifetimes: a pending claim outlives the longest invocation (Lambda's 15 minutes),
// so a live start is never run twice; a busy session's claim is recorded already expired,
// releasing the event for Lambda's retry.
const (
	eventClaimTTL = 15 * time.Minute
	releasedTTL   = -time.Second
)

// start runs the event's start once per event id. The first run's result is recorded:
// a started session makes every redelivery a no-op (Duplicate); a failure is final too —
// the failed turn may have committed steps, so running it again would apply them twice —
// and every redelivery returns it as an *EventError, for the on-failure destination. Only a
// busy session (nothing written) releases the event for Lambda's retry.
func (h *Handler) start(ctx context.Context, ev events.EventBridgeEvent) (Result, error) {
	route, ok := h.route(ev)
	if !ok {
		return Result{}, &EventError{Prefix: "start", Reason: fmt.Sprintf("no route in %s for source %q, detail-type %q", EnvEventRoutes, ev.Source, ev.DetailType)}
	}
	vars := map[string]any{}
	if len(ev.Detail) > 0 && string(ev.Detail) != "null" {
		if err := json.Unmarshal(ev.Detail, &vars); err != nil {
			return Result{}, &EventError{Prefix: "start", Reason: "the event's detail is not a JSON object"}
		}
	}
	message := fmt.Sprintf("%s from %s", ev.DetailType, ev.Source)
	if m, ok := vars["message"].(string); ok && m != "" {
		message = m
		vars = maps.Clone(vars)
		delete(vars, "message")
	}
	trigger := route.Trigger
	if trigger == "" {
		trigger = ev.DetailType
	}
	log := h.engines.Log()
	key := "event " + ev.ID
	keep := context.WithoutCancel(ctx)
	pending, _ := json.Marshal(claim{State: "pending"})
	old, found, err := log.RememberIdempotent(keep, key, pending, eventClaimTTL)
	if err != nil {
		return Result{}, fmt.Errorf("claim event %s: %w", ev.ID, err)
	}
	if found {
		var c claim
		_ = json.Unmarshal(old, &c)
		switch c.State {
		case "done":
			h.log.InfoContext(ctx, "start skipped: the event already started its session", "eventId", ev.ID, "sessionId", c.SessionID)
			return Result{SessionID: c.SessionID, Duplicate: true}, nil
		case "failed":
			return Result{}, &EventError{Prefix: "start", Reason: fmt.Sprintf("event %s failed when first run and is not run again: %s", ev.ID, c.Error)}
		}
		return Result{}, fmt.Errorf("event %s is being started by another invocation; retry later", ev.ID)
	}
	// the start's first commit makes it done for every redelivery, even if this invocation
	// dies before it records the result
	wrote := false
	opened := func(sessionID, _ string) {
		wrote = true
		b, _ := json.Marshal(claim{State: "done", SessionID: sessionID})
		if err := log.PutIdempotent(keep, key, b, httpapi.IdempotencyTTL); err != nil {
			h.log.WarnContext(ctx, "event claim not recorded at the start's first commit", "eventId", ev.ID, "error", err.Error())
		}
	}
	// the event's source starts and owns the session (the bus's resource policy decides who may send it)
	ctx = session.WithCaller(ctx, identity.EventSource(ev.Source, ev.AccountID))
	res, err := h.open(session.WithTurnOpened(ctx, opened), key, route.Workflow, trigger, vars, message)
	final, ttl := claim{State: "done", SessionID: res.SessionID}, httpapi.IdempotencyTTL
	var busy *session.SessionNotResumableError
	var superseded *session.TurnSupersededError
	if errors.As(err, &superseded) { // its start was applied once, and the session has moved on
		res, err = Result{SessionID: superseded.SessionID, Duplicate: true}, nil
	}
	switch {
	case errors.As(err, &busy) && !wrote: // nothing written: Lambda's retry may run it
		final, ttl = claim{State: "pending"}, releasedTTL
	case err != nil:
		final = claim{State: "failed", SessionID: res.SessionID, Error: err.Error()}
	}
	b, _ := json.Marshal(final)
	if perr := log.PutIdempotent(keep, key, b, ttl); perr != nil {
		h.log.WarnContext(ctx, "event claim not recorded", "eventId", ev.ID, "error", perr.Error())
	}
	if err != nil {
		h.log.WarnContext(ctx, "event start failed", "eventId", ev.ID, "workflow", route.Workflow, "trigger", trigger, "error", err.Error())
		return res, err
	}
	h.log.InfoContext(ctx, "started", "eventId", ev.ID, "sessionId", res.SessionID, "outcome", string(res.Outcome))
	return res, nil
}

// open starts (or continues) the session the firing resolves to, under the Runner: a turn
// that outlives the invocation goes on in a continuation (the result's outcome "running").
// The event's claim key names its turn (session.WithTurnID) and, when the trigger names no
// session, its session (session.SessionIDFor): a redelivery after a claim that lapsed or
// was never recorded finds the turn the first delivery opened, never a second.
func (h *Handler) open(ctx context.Context, key, workflow, trigger string, vars map[string]any, message string) (Result, error) {
	eng, err := h.engines.Engine(ctx, workflow)
	if err != nil {
		return Result{}, err
	}
	if err := httpapi.CheckVariableNames(vars); err != nil {
		return Result{}, err
	}
	id, minted, err := eng.ResolveSessionID(ctx, trigger, vars)
	if err != nil {
		return Result{}, err
	}
	if minted {
		id = session.SessionIDFor(key)
	}
	ctx = session.WithTurnID(ctx, session.TurnIDFor(key))
	if err := eng.CheckStart(ctx, trigger, vars); err != nil {
		return Result{SessionID: id}, err
	}
	out, err := h.run.Run(ctx, continuation.Options{}, func(ctx context.Context) (*session.Outcome, error) {
		return eng.Send(ctx, id, session.SendInput{Message: message, Trigger: trigger, Variables: vars})
	})
	if err != nil {
		return Result{SessionID: id}, err
	}
	return Result{SessionID: id, Outcome: out.Kind, State: out.State}, nil
}

func (h *Handler) route(ev events.EventBridgeEvent) (Route, bool) {
	for _, r := range h.routes {
		if (r.Source == "" || r.Source == ev.Source) && (r.DetailType == "" || r.DetailType == ev.DetailType) {
			return r, true
		}
	}
	return Route{}, false
}
