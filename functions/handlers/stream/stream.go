// Package stream is the Server-Sent Events face of the session API (functions/stream, and
// `archmax serve` for a request that asks for text/event-stream): the same routes, bodies,
// errors, Idempotency-Keys and authorization as the HTTP API — every request is served
// through functions/handlers/httpapi — with the answer streamed:
//
//	POST /v1/workflows/{workflow}/sessions                    run the start, stream its events, then `outcome`
//	POST /v1/workflows/{workflow}/sessions/{sessionId}/turns  run the turn, stream its events, then `outcome`
//	GET  /v1/sessions/{sessionId}/events?after=N              follow the stored events until the session settles
//
// A request is streamed only with `Accept: text/event-stream`. A refusal (the route, the
// caller, the body, the session: everything the HTTP API refuses before it runs anything)
// is the HTTP API's JSON error answer with its status; once the stream has begun, a
// failure is an `error` event with the same body, and the stream ends.
//
// Every SSE event is one lifecycle event: `event:` its type, `data:` its JSON (the envelope
// of GET …/events), and `id:` its sessionSeq when it is one the session stores. Text deltas
// (agent-text-delta) and a sub-workflow child's events are live only: no id, never
// replayed (the stored agent-text stands for the deltas; a child's events are its own
// session's log). A reconnect with `Last-Event-ID` (GET) replays the stored events after
// that sessionSeq, then follows. The last event is `outcome`: the outcome summary (the
// POST answer's body, or the session's lastTurn once it settled), kind "running" when the
// stream ends before the session settles (the invocation's end): reconnect to go on.
//
// A turn that outlives its invocation is handed to a continuation as on the HTTP API; the
// POST stream then follows the stored log, as GET does, until that turn settles.
package stream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	coreevents "github.com/archmax-ai/archmax/core/events"
	"github.com/archmax-ai/archmax/core/metrics"
	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/functions/handlers/httpapi"
	"github.com/archmax-ai/archmax/functions/handlers/metering"
)

// ContentType is the media type of a streamed answer.
const ContentType = "text/event-stream"

// The codes of this package's own refusals.
const (
	CodeNotAcceptable = "NotAcceptableError" // a streamed route without Accept: text/event-stream (406)
	CodeUnauthorized  = "UnauthorizedError"  // no valid bearer token where the function verifies it (401)
)

// OutcomeEvent is the type of a stream's last event; ErrorEvent of a failure after the
// stream began.
const (
	OutcomeEvent = "outcome"
	ErrorEvent   = "error"
)

// Defaults of a Handler.
const (
	DefaultPoll      = 500 * time.Millisecond // between two reads of a followed log
	DefaultKeepalive = 15 * time.Second       // a comment line after this long without an event
	DefaultMargin    = 5 * time.Second        // a follow ends this long before the invocation's deadline
	followPage       = 500
)

// Sink is where a streamed answer goes: a Lambda response stream (Lambda) or an HTTP
// response (HTTP). Header is called once, before any Write; Write sends its bytes at once
// and fails once the client is gone.
type Sink interface {
	Header(status int, headers map[string]string) error
	Write(p []byte) error
}

// Handler streams the answers of an httpapi.Handler. Safe for concurrent use.
type Handler struct {
	api       *httpapi.Handler
	log       *slog.Logger
	poll      time.Duration
	keepalive time.Duration
	margin    time.Duration
	// invocation bounds a request HTTP serves (WithInvocation)
	invocation time.Duration
}

// Option configures a Handler.
type Option func(*Handler)

// WithPoll sets how often a followed log is read (default DefaultPoll).
func WithPoll(d time.Duration) Option { return func(h *Handler) { h.poll = d } }

// WithKeepalive sets the longest silence before a comment line (default DefaultKeepalive).
func WithKeepalive(d time.Duration) Option { return func(h *Handler) { h.keepalive = d } }

// WithInvocation gives each request HTTP serves an invocation's deadline of d (`archmax
// serve`'s --invocation-timeout): a call still running then is handed to a continuation and
// the stream follows it, as on Lambda. Zero: no deadline.
func WithInvocation(d time.Duration) Option { return func(h *Handler) { h.invocation = d } }

// New returns a Handler serving through api; log nil discards.
func New(api *httpapi.Handler, log *slog.Logger, opts ...Option) *Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := &Handler{api: api, log: log, poll: DefaultPoll, keepalive: DefaultKeepalive, margin: DefaultMargin}
	for _, o := range opts {
		o(h)
	}
	return h
}

// route is what a streamed request asks for.
type route int

const (
	notStreamed route = iota
	turnRoute         // POST a start or a turn
	eventsRoute       // GET a session's events
)

// classify matches req's method and raw path to a streamed route.
func classify(req events.APIGatewayV2HTTPRequest) (route, string) {
	rest, ok := strings.CutPrefix(req.RawPath, "/")
	if !ok {
		return notStreamed, ""
	}
	seg := strings.Split(rest, "/")
	for _, s := range seg {
		if s == "" {
			return notStreamed, ""
		}
	}
	switch req.RequestContext.HTTP.Method {
	case http.MethodPost:
		if len(seg) >= 4 && seg[0] == "v1" && seg[1] == "workflows" && seg[3] == "sessions" &&
			(len(seg) == 4 || len(seg) == 6 && seg[5] == "turns") {
			return turnRoute, ""
		}
	case http.MethodGet:
		if len(seg) == 4 && seg[0] == "v1" && seg[1] == "sessions" && seg[3] == "events" {
			return eventsRoute, seg[2]
		}
	}
	return notStreamed, ""
}

// wantsStream reports whether req's Accept header names text/event-stream with a quality
// above 0 (RFC 9110 §12.5.1: q=0 means "not acceptable").
func wantsStream(req events.APIGatewayV2HTTPRequest) bool {
	for _, r := range strings.Split(header(req, "accept"), ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(r))
		if err != nil || mt != ContentType {
			continue
		}
		if q, ok := params["q"]; ok {
			if v, err := strconv.ParseFloat(q, 64); err == nil && v <= 0 {
				continue
			}
		}
		return true
	}
	return false
}

// header is req's header name (lower-case, as API Gateway and function URLs deliver them).
func header(req events.APIGatewayV2HTTPRequest, name string) string {
	if v, ok := req.Headers[name]; ok {
		return v
	}
	for k, v := range req.Headers {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

// Accepts reports whether req is a streamed route asking for text/event-stream: the
// requests `archmax serve` answers with a stream instead of the HTTP API's JSON.
func Accepts(req events.APIGatewayV2HTTPRequest) bool {
	r, _ := classify(req)
	return r != notStreamed && wantsStream(req)
}

// Serve answers req on sink; it returns when the answer is complete or the sink failed.
// A POST's call runs on ctx (and goes on, committing what it does, if the client leaves).
func (h *Handler) Serve(ctx context.Context, req events.APIGatewayV2HTTPRequest, sink Sink) {
	r, id := classify(req)
	switch {
	case r == notStreamed:
		refuse(sink, http.StatusNotFound, httpapi.CodeNotFound, fmt.Sprintf(
			"No streamed route for %s %s: this endpoint streams POST /v1/workflows/{workflow}/sessions, POST …/sessions/{sessionId}/turns "+
				"and GET /v1/sessions/{sessionId}/events (with Accept: text/event-stream); send other requests to the HTTP API.",
			req.RequestContext.HTTP.Method, req.RawPath))
		return
	case !wantsStream(req):
		refuse(sink, http.StatusNotAcceptable, CodeNotAcceptable,
			"This endpoint answers with Server-Sent Events only: send Accept: text/event-stream, or send the request to the HTTP API for a JSON answer.")
		return
	}
	w := &writer{sink: sink}
	if r == turnRoute {
		h.turn(ctx, req, w)
		return
	}
	h.follow(ctx, req, id, w)
}

// refuse answers a refusal before any stream: the HTTP API's error shape.
func refuse(sink Sink, status int, code, message string) {
	b, _ := json.Marshal(httpapi.ErrorBody{Error: httpapi.ErrorInfo{Code: code, Message: message}})
	if sink.Header(status, map[string]string{"Content-Type": "application/json", "Cache-Control": "no-store"}) == nil {
		_ = sink.Write(b)
	}
}

// passThrough answers resp (an HTTP API answer) as it is: a refusal before any stream.
func passThrough(sink Sink, resp events.APIGatewayV2HTTPResponse) {
	if sink.Header(resp.StatusCode, resp.Headers) == nil {
		_ = sink.Write([]byte(resp.Body))
	}
}

// writer writes SSE frames on a sink, starting the stream (200, text/event-stream) before
// the first frame. Not safe for concurrent use.
type writer struct {
	sink    Sink
	started bool
	err     error
	last    time.Time
}

func (w *writer) start(extra map[string]string) error {
	if w.started {
		return w.err
	}
	w.started = true
	hd := map[string]string{"Content-Type": ContentType, "Cache-Control": "no-store", "X-Accel-Buffering": "no"}
	for k, v := range extra {
		hd[k] = v
	}
	w.err = w.sink.Header(http.StatusOK, hd)
	w.last = time.Now()
	return w.err
}

// event writes one frame: id (omitted when ""), event type and the one-line JSON data.
func (w *writer) event(id, typ string, data []byte) error {
	if err := w.start(nil); err != nil {
		return err
	}
	var b bytes.Buffer
	if id != "" {
		b.WriteString("id: " + id + "\n")
	}
	b.WriteString("event: " + typ + "\n")
	var compact bytes.Buffer
	if json.Compact(&compact, data) == nil {
		data = compact.Bytes()
	}
	b.WriteString("data: ")
	b.Write(bytes.ReplaceAll(data, []byte("\n"), []byte("\ndata: ")))
	b.WriteString("\n\n")
	w.err = w.sink.Write(b.Bytes())
	w.last = time.Now()
	return w.err
}

// comment writes a keepalive comment line when the stream has been silent for d.
func (w *writer) keepalive(d time.Duration) error {
	if !w.started || w.err != nil || time.Since(w.last) < d {
		return w.err
	}
	w.err = w.sink.Write([]byte(": keepalive\n\n"))
	w.last = time.Now()
	return w.err
}

// queue holds the events a call emits until the writer sends them: the engine never waits
// on the client.
type queue struct {
	mu    sync.Mutex
	evs   []coreevents.Event
	ready chan struct{}
}

func newQueue() *queue { return &queue{ready: make(chan struct{}, 1)} }

func (q *queue) push(ev coreevents.Event) {
	q.mu.Lock()
	q.evs = append(q.evs, ev)
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

func (q *queue) take() []coreevents.Event {
	q.mu.Lock()
	defer q.mu.Unlock()
	evs := q.evs
	q.evs = nil
	return evs
}

// turn runs a POST through the HTTP API with an event observer, streaming the events as
// they happen, then the outcome; a turn handed to a continuation is followed on the log.
func (h *Handler) turn(ctx context.Context, req events.APIGatewayV2HTTPRequest, w *writer) {
	q := newQueue()
	done := make(chan events.APIGatewayV2HTTPResponse, 1)
	go func() {
		resp, _ := h.api.Handle(session.WithEventObserver(httpapi.Streamed(ctx), metrics.Also(ctx, q.push)), req)
		metering.Answered(ctx, resp)
		done <- resp
	}()
	var sessionID string
	var lastSeq int64
	send := func() error {
		for _, ev := range q.take() {
			b, err := ev.MarshalJSON()
			if err != nil {
				continue
			}
			id := ""
			if stored(ev) {
				id, lastSeq = strconv.FormatInt(ev.SessionSeq, 10), ev.SessionSeq
			}
			if sessionID == "" && ev.DispatchID == "" {
				sessionID = ev.SessionID
			}
			if err := w.event(id, ev.Type, b); err != nil {
				return err
			}
		}
		return nil
	}
	tick := time.NewTicker(h.tickEvery())
	defer tick.Stop()
	gone := false // the client left: the call goes on, and the invocation lasts until it answers
	for {
		select {
		case <-q.ready:
			gone = gone || send() != nil
		case <-tick.C:
			gone = gone || w.keepalive(h.keepalive) != nil
		case resp := <-done:
			if gone || send() != nil {
				return
			}
			h.answered(ctx, req, w, resp, sessionID, lastSeq)
			return
		}
		if gone {
			q.take()
		}
	}
}

func (h *Handler) tickEvery() time.Duration { return max(h.keepalive/3, time.Millisecond) }

// stored reports whether ev is one its session stores under its sessionSeq: the root
// session's events but text deltas.
func stored(ev coreevents.Event) bool {
	return ev.SessionSeq > 0 && ev.DispatchID == "" && ev.Type != coreevents.AgentTextDelta
}

// answered ends a POST stream with the HTTP API's answer: the outcome (200), the log
// followed until the turn settles (202: handed to a continuation, or a repeat of a request
// still running), or the refusal — as JSON before the stream began, else an error event.
func (h *Handler) answered(ctx context.Context, req events.APIGatewayV2HTTPRequest, w *writer, resp events.APIGatewayV2HTTPResponse, sessionID string, lastSeq int64) {
	ok := resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusAccepted
	if !ok {
		if !w.started {
			passThrough(w.sink, resp)
			return
		}
		_ = w.event("", ErrorEvent, []byte(resp.Body))
		return
	}
	if v := resp.Headers["Idempotent-Replayed"]; v != "" && !w.started {
		if w.start(map[string]string{"Idempotent-Replayed": v}) != nil {
			return
		}
	}
	if resp.StatusCode == http.StatusOK {
		_ = w.event("", OutcomeEvent, []byte(resp.Body))
		return
	}
	var sum session.OutcomeSummary
	if err := json.Unmarshal([]byte(resp.Body), &sum); err != nil || sum.SessionID == "" {
		_ = w.event("", OutcomeEvent, []byte(resp.Body))
		return
	}
	if sessionID == "" {
		sessionID = sum.SessionID
	}
	from := int64(0)
	if lastSeq > 0 {
		var err error
		if from, err = h.cursorAfter(ctx, req, sessionID, lastSeq); err != nil {
			h.fail(w, err)
			return
		}
	} else if from, ok = h.end(ctx, req, sessionID); !ok {
		_ = w.event("", OutcomeEvent, []byte(resp.Body))
		return
	}
	h.followFrom(ctx, req, w, sessionID, from, lastSeq, sum.TurnID)
}

// follow serves GET …/events with Accept: text/event-stream: the stored events after
// Last-Event-ID (a sessionSeq) or else after the cursor `after` (a count, as the JSON
// route's), then every event stored after them until the session settles.
func (h *Handler) follow(ctx context.Context, req events.APIGatewayV2HTTPRequest, id string, w *writer) {
	var from, lastSeq int64
	if v := strings.TrimSpace(header(req, "last-event-id")); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			refuse(w.sink, http.StatusBadRequest, httpapi.CodeInvalidRequest,
				"Last-Event-ID must be the id of an event this stream sent: a non-negative integer (the event's sessionSeq).")
			return
		}
		if from, err = h.cursorAfter(ctx, req, id, n); err != nil {
			h.fail(w, err)
			return
		}
		lastSeq = n
	} else if v := req.QueryStringParameters["after"]; v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			refuse(w.sink, http.StatusBadRequest, httpapi.CodeInvalidRequest,
				"'after' must be a non-negative integer: how many events were already read (the previous page's next).")
			return
		}
		from = n
	}
	h.followFrom(ctx, req, w, id, from, lastSeq, "")
}

// apiError is an HTTP API refusal met while following: its answer as it is.
type apiError struct {
	resp events.APIGatewayV2HTTPResponse
}

func (e *apiError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.resp.StatusCode, e.resp.Body) }

// fail ends a stream on err: the HTTP API's answer before the stream began (a refusal),
// else an error event.
func (h *Handler) fail(w *writer, err error) {
	var ae *apiError
	if errors.As(err, &ae) {
		if !w.started {
			passThrough(w.sink, ae.resp)
			return
		}
		_ = w.event("", ErrorEvent, []byte(ae.resp.Body))
		return
	}
	h.log.Error("stream failed", "error", err.Error())
	b, _ := json.Marshal(httpapi.ErrorBody{Error: httpapi.ErrorInfo{Code: httpapi.CodeInternal, Message: "The stream failed unexpectedly."}})
	if !w.started {
		if w.sink.Header(http.StatusInternalServerError, map[string]string{"Content-Type": "application/json"}) == nil {
			_ = w.sink.Write(b)
		}
		return
	}
	_ = w.event("", ErrorEvent, b)
}

// get serves a read route through the HTTP API as the request's own caller.
func (h *Handler) get(ctx context.Context, req events.APIGatewayV2HTTPRequest, path string, query map[string]string) ([]byte, error) {
	r := req
	r.RouteKey, r.RawPath, r.Body, r.IsBase64Encoded = "", path, "", false
	r.PathParameters = nil
	r.RequestContext.RouteKey = ""
	r.RequestContext.HTTP.Method, r.RequestContext.HTTP.Path = http.MethodGet, path
	r.QueryStringParameters = query
	q := url.Values{}
	for k, v := range query {
		q.Set(k, v)
	}
	r.RawQueryString = q.Encode()
	resp, err := h.api.Handle(ctx, r)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &apiError{resp: resp}
	}
	return []byte(resp.Body), nil
}

// page is one page of stored events.
type page struct {
	Events []json.RawMessage `json:"events"`
	Next   int64             `json:"next"`
}

func (h *Handler) events(ctx context.Context, req events.APIGatewayV2HTTPRequest, id string, after int64, limit int) (page, error) {
	b, err := h.get(ctx, req, "/v1/sessions/"+url.PathEscape(id)+"/events",
		map[string]string{"after": strconv.FormatInt(after, 10), "limit": strconv.Itoa(limit)})
	if err != nil {
		return page{}, err
	}
	var p page
	if err := json.Unmarshal(b, &p); err != nil {
		return page{}, fmt.Errorf("decode the events of %s: %w", id, err)
	}
	return p, nil
}

// end is the cursor past the session's stored events (false when it cannot be read).
func (h *Handler) end(ctx context.Context, req events.APIGatewayV2HTTPRequest, id string) (int64, bool) {
	p, err := h.events(ctx, req, id, 1<<62, 1)
	return p.Next, err == nil
}

// envelope is the part of a stored event a stream reads.
type envelope struct {
	Type       string `json:"type"`
	SessionSeq int64  `json:"sessionSeq"`
}

// cursorAfter is the cursor (a count of stored events) of the first stored event whose
// sessionSeq is over seq. Every stored event takes a sessionSeq, so that event lies at
// most seq events in: a binary search over [0, seq] of one-event reads.
func (h *Handler) cursorAfter(ctx context.Context, req events.APIGatewayV2HTTPRequest, id string, seq int64) (int64, error) {
	lo, hi := int64(0), seq
	for lo < hi {
		mid := lo + (hi-lo)/2
		p, err := h.events(ctx, req, id, mid, 1)
		if err != nil {
			return 0, err
		}
		var ev envelope
		if len(p.Events) == 0 || json.Unmarshal(p.Events[0], &ev) == nil && ev.SessionSeq > seq {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo, nil
}

// summary is the part of a session summary a stream reads.
type summary struct {
	SessionID   string             `json:"sessionId"`
	Status      session.Status     `json:"status"`
	State       string             `json:"workflowState"` // the session summary's name
	Interrupted bool               `json:"interrupted"`
	LastError   *session.TurnError `json:"lastError"`
	LastTurn    json.RawMessage    `json:"lastTurn"`
	Pending     json.RawMessage    `json:"pending"`
	Delegation  json.RawMessage    `json:"delegation"`
	Usage       json.RawMessage    `json:"usage"`
}

func (s summary) lastTurnID() string {
	var t struct {
		TurnID string `json:"turnId"`
	}
	_ = json.Unmarshal(s.LastTurn, &t)
	return t.TurnID
}

// settled reports whether the followed session has settled: the turn followed (turnID)
// has an outcome, or (any turn) the session is no longer running and its last call has
// let it go. A turn that stopped on a failure no retry fixes (or the last of
// session.MaxTurnAttempts in a row) waits for a new message: that ends a follow too.
func (s summary) settled(turnID string) bool {
	switch {
	case len(s.LastTurn) > 0 && turnID != "" && s.lastTurnID() == turnID:
		return true
	case len(s.LastTurn) > 0 && s.Status != session.StatusRunning:
		return true
	}
	return s.Status == session.StatusRunning && s.Interrupted && s.LastError != nil &&
		(!s.LastError.Retryable || s.LastError.Attempts >= session.MaxTurnAttempts)
}

// outcome is the outcome event of a followed session: its lastTurn with the session id,
// and the pending park, delegation and usage the summary carries — an outcome summary's
// fields; kind running when the follow ends before the session settled.
func (s summary) outcome(turnID string, settled bool) []byte {
	m := map[string]any{}
	if settled && len(s.LastTurn) > 0 && (turnID == "" || s.lastTurnID() == turnID) {
		_ = json.Unmarshal(s.LastTurn, &m)
	} else {
		m["kind"], m["status"], m["state"] = session.KindRunning, session.StatusRunning, s.State
		if turnID != "" {
			m["turnId"] = turnID
		}
		if s.LastError != nil {
			m["lastError"] = s.LastError
		}
	}
	m["sessionId"] = s.SessionID
	for k, v := range map[string]json.RawMessage{"pending": s.Pending, "delegation": s.Delegation, "usage": s.Usage} {
		if len(v) > 0 && string(v) != "null" {
			m[k] = v
		}
	}
	b, _ := json.Marshal(m)
	return b
}

// followFrom streams the stored events of session id from the cursor from (skipping any at
// or under lastSeq) until the session settles — turnID's outcome when one is named — then
// the outcome event; it stops early when the client leaves, and with a running outcome
// before the invocation's deadline.
func (h *Handler) followFrom(ctx context.Context, req events.APIGatewayV2HTTPRequest, w *writer, id string, from, lastSeq int64, turnID string) {
	deadline, hasDeadline := ctx.Deadline()
	for {
		b, err := h.get(ctx, req, "/v1/sessions/"+url.PathEscape(id), nil)
		if err != nil {
			h.fail(w, err)
			return
		}
		var sum summary
		if err := json.Unmarshal(b, &sum); err != nil {
			h.fail(w, fmt.Errorf("decode the summary of %s: %w", id, err))
			return
		}
		for { // the events stored up to the summary read (and perhaps after)
			p, err := h.events(ctx, req, id, from, followPage)
			if err != nil {
				h.fail(w, err)
				return
			}
			for _, raw := range p.Events {
				var ev envelope
				if json.Unmarshal(raw, &ev) != nil || ev.SessionSeq > 0 && ev.SessionSeq <= lastSeq {
					continue
				}
				idStr := ""
				if ev.SessionSeq > 0 {
					idStr, lastSeq = strconv.FormatInt(ev.SessionSeq, 10), ev.SessionSeq
				}
				if w.event(idStr, ev.Type, raw) != nil {
					return
				}
			}
			from = p.Next
			if len(p.Events) < followPage {
				break
			}
		}
		if err := w.start(nil); err != nil {
			return
		}
		if sum.settled(turnID) {
			_ = w.event("", OutcomeEvent, sum.outcome(turnID, true))
			return
		}
		if hasDeadline && time.Until(deadline) < h.margin+h.poll {
			_ = w.event("", OutcomeEvent, sum.outcome(turnID, false))
			return
		}
		if w.keepalive(h.keepalive) != nil {
			return
		}
		t := time.NewTimer(h.poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}
