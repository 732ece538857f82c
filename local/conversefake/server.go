// Package conversefake is a local peer for Amazon Bedrock's Converse API (DESIGN.md §7):
// an http.Handler that speaks Converse's REST-JSON wire protocol, enforces Bedrock's request
// rules on the raw wire JSON, and answers from a spec-05 scripted.Script. It shares no
// validation code with core/model, so it proves independently that the client never sends a
// history Bedrock would refuse. ConverseStream is served on the event-stream wire encoding
// (stream.go), in chunks, with mid-stream faults and a Gate a test releases frames with.
// Usage is answered as scripted; with the script's `usage: estimate` or WithUsageEstimate it
// is estimated from the request, with Bedrock's prompt-caching rules applied (cache.go).
package conversefake

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/archmax-ai/archmax/core/model/scripted"
)

// ErrScriptMismatch is the X-Amzn-Errortype of a call the script cannot answer (no entry
// left, no remaining entry matching, or an `expect` miss). It is sent with HTTP 400, which
// no client retries, so the failure surfaces at once with the script's one-line message.
const ErrScriptMismatch = scripted.MismatchErrorType

// Requestmetadata keys the fake reads (spec 05 "How the fake knows who is calling").
const (
	MetaRole  = "archmax.role"
	MetaState = "archmax.state"
	MetaTurn  = "archmax.turn"
)

// RecordedRequest is one request the fake received, whatever it answered.
type RecordedRequest struct {
	ModelID   string
	Body      json.RawMessage // the raw request body
	Metadata  map[string]string
	Status    int    // the HTTP status answered
	ErrorType string // X-Amzn-Errortype answered (a stream: the exception it ended with), "" on success
	Stream    bool   // a ConverseStream call
	// Usage is the usage answered, in wire terms (InputTokens without the cache counts):
	// as scripted, or estimated with the prompt cache (WithUsageEstimate); zero for a call
	// refused or broken off.
	Usage scripted.Usage
	// CacheWrites splits Usage.CacheWriteInputTokens by TTL, "1h" before "5m", as the
	// answer's usage.cacheDetails does; nil unless usage is estimated and something was
	// written.
	CacheWrites []CacheWrite
}

// Server serves Converse for one Script. It is safe for concurrent use.
type Server struct {
	script    *scripted.Script
	latencyMs int64
	delay     time.Duration
	chunk     int   // runes per streamed chunk (0: text word by word, tool input 16 runes)
	gate      *Gate // holds each streamed frame until a test lets it go
	estimate  bool  // usage from the estimate and the prompt cache for every script
	now       func() time.Time

	mu       sync.Mutex
	requests []RecordedRequest
	cache    promptCache
}

// Option configures a Server.
type Option func(*Server)

// WithLatencyMs sets the metrics.latencyMs every answer reports (default 1).
func WithLatencyMs(ms int64) Option { return func(s *Server) { s.latencyMs = ms } }

// WithChunkSize cuts a streamed answer's text and tool inputs into pieces of n runes (by
// default the text goes word by word and a tool input in pieces of 16 runes).
func WithChunkSize(n int) Option { return func(s *Server) { s.chunk = n } }

// WithGate holds every frame of every streamed answer until g lets it go (Gate.Next).
func WithGate(g *Gate) Option { return func(s *Server) { s.gate = g } }

// WithDelay makes every answer take d: the fake waits before it reads the script, and a
// request whose client gave up meanwhile is dropped unanswered and unrecorded (the script
// is not advanced). It slows a scripted model past a deadline.
func WithDelay(d time.Duration) Option { return func(s *Server) { s.delay = d } }

// WithUsageEstimate makes every answered call report the usage the fake estimates, with
// prompt-cache accounting (cache.go), as a script's file-level `usage: estimate` does — for
// a benchmark that measures caching on a script written without it. The entries' own usage
// is then ignored.
func WithUsageEstimate() Option { return func(s *Server) { s.estimate = true } }

// WithClock sets the clock the prompt cache's TTLs run on (default time.Now), so a test
// moves time past 5 minutes or 1 hour without waiting.
func WithClock(now func() time.Time) Option { return func(s *Server) { s.now = now } }

// New returns a Server answering from s.
func New(s *scripted.Script, opts ...Option) *Server {
	srv := &Server{script: s, latencyMs: 1, now: time.Now, cache: promptCache{}}
	for _, o := range opts {
		o(srv)
	}
	return srv
}

// Requests returns a copy of every request received so far, in arrival order.
func (s *Server) Requests() []RecordedRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]RecordedRequest(nil), s.requests...)
}

// ServeHTTP answers POST /model/{modelId}/converse and /converse-stream. Refusals are
// Bedrock-shaped: the HTTP status of the error (research D.6), header X-Amzn-Errortype and
// body {"message": ...}; a stream's mid-stream fault is an exception frame (stream.go).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.delay > 0 {
		select {
		case <-time.After(s.delay):
		case <-r.Context().Done():
			return
		}
	}
	rec := RecordedRequest{}
	entry, midStream, status, errType, body := s.serve(r, &rec)
	if entry != nil {
		if rec.Stream {
			if midStream != nil {
				rec.ErrorType = midStream.Error
			}
			rec.Status = http.StatusOK
			if midStream == nil {
				rec.Usage = entry.Usage
			}
			s.record(rec)
			s.stream(w, r, entry, midStream, rec.CacheWrites)
			return
		}
		var err error
		if body, err = json.Marshal(s.response(entry, rec.CacheWrites)); err != nil {
			status, errType, body = failure(http.StatusInternalServerError, "InternalServerException", err.Error())
		}
	}
	if entry != nil {
		rec.Usage = entry.Usage
	}
	rec.Status, rec.ErrorType = status, errType
	s.record(rec)

	w.Header().Set("Content-Type", "application/json")
	if errType != "" {
		w.Header().Set("X-Amzn-Errortype", errType)
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func (s *Server) record(rec RecordedRequest) {
	s.mu.Lock()
	s.requests = append(s.requests, rec)
	s.mu.Unlock()
}

// serve reads and checks one call and picks its answer: the entry (with, for a stream, the
// fault it ends in, when one is scripted with afterChunks), or a refusal.
func (s *Server) serve(r *http.Request, rec *RecordedRequest) (entry *scripted.Entry, midStream *scripted.Fault, status int, errType string, body []byte) {
	fail := func(status int, errType, msg string) (*scripted.Entry, *scripted.Fault, int, string, []byte) {
		status, errType, body := failure(status, errType, msg)
		return nil, nil, status, errType, body
	}
	modelID, ok := strings.CutPrefix(r.URL.Path, "/model/")
	modelID, isStream := strings.CutSuffix(modelID, "/converse-stream")
	isConverse := isStream
	if !isStream {
		modelID, isConverse = strings.CutSuffix(modelID, "/converse")
	}
	if !ok || !isConverse || modelID == "" || r.Method != http.MethodPost {
		return fail(http.StatusNotFound, "UnknownOperationException", fmt.Sprintf("%s %s is not a Converse call", r.Method, r.URL.Path))
	}
	rec.Stream = isStream
	rec.ModelID = modelID
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return fail(http.StatusBadRequest, "ValidationException", "Could not read the request body.")
	}
	rec.Body = raw

	var req wireRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		return fail(http.StatusBadRequest, "ValidationException", "Malformed input request: "+err.Error())
	}
	rec.Metadata = req.RequestMetadata
	if err := checkRequest(&req, s.script.StrictToolTurns); err != nil {
		return fail(http.StatusBadRequest, "ValidationException", err.Error())
	}

	call := callOf(&req)
	idx := s.script.CallIndex(call.Role)
	if f, ok := s.script.FaultOf(call.Role, idx); ok {
		if f.Message == "" {
			f.Message = fmt.Sprintf("Scripted %s for %s call %d.", f.Error, call.Role, idx)
		}
		if !isStream || f.AfterChunks < 0 {
			code, _ := scripted.HTTPStatus(f.Error)
			return fail(code, f.Error, f.Message)
		}
		// the answer begins and breaks off: it is not consumed, so a retry gets it whole
		entry, err := s.script.Peek(call)
		if err != nil {
			return fail(http.StatusBadRequest, ErrScriptMismatch, err.Error())
		}
		return entry, &f, http.StatusOK, "", nil
	}
	entry, err = s.script.Next(call)
	if err != nil {
		return fail(http.StatusBadRequest, ErrScriptMismatch, err.Error())
	}
	if s.estimate || s.script.UsageEstimate {
		p := flatten(&req)
		s.mu.Lock()
		entry.Usage, rec.CacheWrites = s.cache.account(modelID, p, s.now())
		s.mu.Unlock()
		entry.Usage.OutputTokens = outputEstimate(entry)
	}
	return entry, nil, http.StatusOK, "", nil
}

// perCallOf is the text block archmax's engine sends its per-call content in when the prompt
// cache is on (the state's instructions, transitions and clock line, after the conversation's
// cachePoint): the request's final block, when it is text and a cachePoint comes right
// before it — in its message, or at the end of the message before; nil otherwise.
func perCallOf(req *wireRequest) *wireBlock {
	n := len(req.Messages)
	if n == 0 || req.Messages[n-1].Role != "user" {
		return nil
	}
	c := req.Messages[n-1].Content
	k := len(c)
	switch {
	case k == 0 || c[k-1].Text == nil:
		return nil
	case k >= 2 && c[k-2].CachePoint != nil:
		return &c[k-1]
	case k == 1 && n >= 2:
		if p := req.Messages[n-2].Content; len(p) > 0 && p[len(p)-1].CachePoint != nil {
			return &c[0]
		}
	}
	return nil
}

func failure(status int, errType, msg string) (int, string, []byte) {
	body, _ := json.Marshal(map[string]string{"message": msg})
	return status, errType, body
}

// callOf builds the scripted call from the request: role (default agent), state and turn from
// requestMetadata; the newest user text is the last text block of the last user message that
// has one; the system prompt is its text blocks joined by newlines. The runtime's per-call
// content sent at the end of the request (perCallOf) counts as system prompt, not user text.
func callOf(req *wireRequest) scripted.Call {
	c := scripted.Call{Role: req.RequestMetadata[MetaRole], State: req.RequestMetadata[MetaState]}
	if c.Role == "" {
		c.Role = "agent"
	}
	c.Turn, _ = strconv.Atoi(req.RequestMetadata[MetaTurn])
	perCall := perCallOf(req)
	for i := len(req.Messages) - 1; i >= 0 && c.LastUserText == ""; i-- {
		if req.Messages[i].Role != "user" {
			continue
		}
		for j := range req.Messages[i].Content {
			if b := &req.Messages[i].Content[j]; b.Text != nil && b != perCall {
				c.LastUserText = *b.Text
			}
		}
	}
	var system []string
	for _, b := range req.System {
		if b.Text != nil {
			system = append(system, *b.Text)
		}
	}
	if perCall != nil {
		system = append(system, *perCall.Text)
	}
	c.System = strings.Join(system, "\n")
	if req.ToolConfig != nil {
		for _, t := range req.ToolConfig.Tools {
			if t.ToolSpec != nil {
				c.ToolsOffered = append(c.ToolsOffered, t.ToolSpec.Name)
			}
		}
	}
	return c
}

// response renders an entry as a Converse response body. Usage is the entry's: as scripted,
// or as serve estimated it, with writes' split by TTL as cacheDetails; totalTokens is input +
// output + cache read + cache write.
func (s *Server) response(e *scripted.Entry, writes []CacheWrite) wireResponse {
	var content []wireOutBlock
	if e.Text != "" {
		content = append(content, wireOutBlock{Text: &e.Text})
	}
	for _, tc := range e.ToolCalls {
		content = append(content, wireOutBlock{ToolUse: &wireOutToolUse{ToolUseID: tc.ID, Name: tc.Name, Input: tc.Input}})
	}
	u := e.Usage
	resp := wireResponse{StopReason: e.StopReason}
	resp.Output.Message.Role = "assistant"
	resp.Output.Message.Content = content
	resp.Usage = wireUsage{
		InputTokens:           u.InputTokens,
		OutputTokens:          u.OutputTokens,
		TotalTokens:           u.InputTokens + u.OutputTokens + u.CacheReadInputTokens + u.CacheWriteInputTokens,
		CacheReadInputTokens:  u.CacheReadInputTokens,
		CacheWriteInputTokens: u.CacheWriteInputTokens,
	}
	for _, w := range writes {
		resp.Usage.CacheDetails = append(resp.Usage.CacheDetails, wireCacheDetail{TTL: w.TTL, InputTokens: w.Tokens})
	}
	resp.Metrics.LatencyMs = s.latencyMs
	return resp
}
