// Package model is the provider-neutral model API the engine talks to (DESIGN.md §6).
//
// A Request carries system blocks, alternating user/assistant messages made of text,
// toolUse, toolResult and cachePoint blocks, and tool specs; a Response carries the
// assistant message, the stop reason and the token usage. model/bedrock implements
// Client on Amazon Bedrock Converse; nothing in this package does I/O.
package model

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// Role is a Converse conversation role: "user" or "assistant" (never "system").
type Role string

const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// BlockKind names the one member a content block carries.
type BlockKind string

const (
	BlockText       BlockKind = "text"
	BlockToolUse    BlockKind = "toolUse"
	BlockToolResult BlockKind = "toolResult"
	BlockCachePoint BlockKind = "cachePoint"
)

// Block is one content block. Exactly the field matching Kind is used.
type Block struct {
	Kind       BlockKind
	Text       string      // BlockText
	ToolUse    *ToolUse    // BlockToolUse
	ToolResult *ToolResult // BlockToolResult
	CacheTTL   string      // BlockCachePoint: "" (provider default, 5m) or "1h"
}

// ToolUse is a tool call the model made. Input is a JSON object.
type ToolUse struct {
	ID    string
	Name  string
	Input json.RawMessage
}

// ToolResult answers one ToolUse. Status is "success" or "error"; Content is the text the
// model reads (never empty when Status is "error").
type ToolResult struct {
	ToolUseID string
	Content   string
	Status    string
}

// Message is one conversation message.
type Message struct {
	Role    Role
	Content []Block
}

// ToolSpec describes one tool offered to the model; InputSchema is a JSON Schema object
// whose top-level type is "object".
type ToolSpec struct {
	Name        string
	Description string
	InputSchema json.RawMessage
}

// ToolsCachePointIndex is where r's tools cachePoint goes among the tool specs: after the
// first ToolsCachePointAt when that is between 1 and len(Tools), else after all of them.
func (r *Request) ToolsCachePointIndex() int {
	if r.ToolsCachePointAt > 0 && r.ToolsCachePointAt < len(r.Tools) {
		return r.ToolsCachePointAt
	}
	return len(r.Tools)
}

// Request is one model call.
type Request struct {
	ModelID  string
	System   []Block // text and cachePoint blocks
	Messages []Message
	Tools    []ToolSpec
	// ToolsCachePoint places a cachePoint after the tool specs (counts toward the limit of 4):
	// after all of them, or after the first ToolsCachePointAt when that is between 1 and
	// len(Tools) — the tools every state offers, so a state change still reads them.
	ToolsCachePoint   bool
	ToolsCachePointAt int
	CacheTTL          string // TTL for the tools cache point: "" or "1h"
	MaxTokens         int    // 0 = provider default
	Temperature       *float64
	// Metadata is sent as Converse requestMetadata (values are sanitised by the client).
	Metadata map[string]string
}

// Stop reasons reported by Converse.
const (
	StopEndTurn      = "end_turn"
	StopToolUse      = "tool_use"
	StopMaxTokens    = "max_tokens"
	StopSequence     = "stop_sequence"
	StopGuardrail    = "guardrail_intervened"
	StopContentFilt  = "content_filtered"
	StopMalformedOut = "malformed_model_output"
	StopMalformedUse = "malformed_tool_use"
	StopContextLimit = "model_context_window_exceeded"
)

// Usage is the provider's token accounting for one call. InputTokens includes the cache
// counts (the inclusive total, spec 02 §11.1).
type Usage struct {
	InputTokens      int64
	OutputTokens     int64
	CacheReadTokens  int64
	CacheWriteTokens int64
}

// Response is the model's answer.
type Response struct {
	Message    Message
	StopReason string
	Usage      *Usage // nil when the endpoint reported none
	ModelID    string // the id the call ran against
	LatencyMs  int64
}

// Client performs model calls. Implementations retry throttling and 5xx internally (one
// retry layer) and return *CallError when they give up.
type Client interface {
	Converse(ctx context.Context, req *Request) (*Response, error)
}

// CallError is a model call that failed after the client's retries. Code is the provider's
// error name (e.g. "ThrottlingException", "ValidationException"), Status the HTTP status.
type CallError struct {
	Code      string
	Status    int
	Message   string
	Retryable bool
	// Quota marks a quota that is used up for a long while — a daily token quota
	// ("Too many tokens per day"), a service quota — rather than a burst: never retried
	// (Retryable is false); the engine parks the turn until later (docs/DECISIONS.md R18-5).
	Quota    bool
	Attempts int
	Err      error
}

// IsQuotaExhausted reports whether a provider error (code, message) is a quota used up for
// a long while rather than a burst to back off from: ServiceQuotaExceededException, or a
// throttle whose message speaks of a daily quota ("Too many tokens per day", "… per day").
func IsQuotaExhausted(code, message string) bool {
	if code == "ServiceQuotaExceededException" {
		return true
	}
	m := strings.ToLower(message)
	return code == "ThrottlingException" && (strings.Contains(m, "per day") || strings.Contains(m, "daily"))
}

func (e *CallError) Error() string {
	return fmt.Sprintf("model call failed: %s (HTTP %d): %s", e.Code, e.Status, e.Message)
}
func (e *CallError) Unwrap() error { return e.Err }

// Name returns the spec error name, ModelCallError.
func (e *CallError) Name() string { return "ModelCallError" }

// InvalidRequestError is returned by ValidateRequest: a history Bedrock would refuse. Path is
// the indexed location (e.g. "messages.3.content.0"), as Bedrock reports it.
type InvalidRequestError struct {
	Path    string
	Message string
}

func (e *InvalidRequestError) Error() string {
	if e.Path == "" {
		return "invalid model request: " + e.Message
	}
	return "invalid model request at " + e.Path + ": " + e.Message
}

// Name returns the spec-style error name.
func (e *InvalidRequestError) Name() string { return "InvalidModelRequestError" }
