package mcptool

import (
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

type mcpError = jsonrpc.Error

// NotOfferedError: the host file exposes tools the server's tools/list does not offer.
type NotOfferedError struct {
	URL     string
	Missing []string // the exposed names the server does not offer, in expose order
	Offered []string // what it offers, in its order
}

func (e *NotOfferedError) Error() string {
	offers := "no tools"
	if len(e.Offered) > 0 {
		offers = "'" + strings.Join(e.Offered, "', '") + "'"
	}
	what := "tool '" + e.Missing[0] + "'"
	if len(e.Missing) > 1 {
		what = "tools '" + strings.Join(e.Missing, "', '") + "'"
	}
	return fmt.Sprintf("mcp server %s does not offer the exposed %s (its tools/list offers %s)", e.URL, what, offers)
}

// ToolError: the server's tool answered with isError; Text is what it said, the error
// result the model reads.
type ToolError struct {
	Tool, Text string
}

func (e *ToolError) Error() string {
	if strings.TrimSpace(e.Text) == "" {
		return fmt.Sprintf("Error: '%s' failed (the MCP server gave no detail).", e.Tool)
	}
	return e.Text
}

// UnreachableError: the call could not be sent — no session could be opened, no
// connection made, its credentials could not be prepared; the server did not see it.
// Detail is the cause as the model reads it (one line, bounded, secrets redacted).
type UnreachableError struct {
	Tool, Detail string
	Err          error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("Error: the MCP server of '%s' could not be reached (%s); nothing was sent. Try again later.", e.Tool, e.Detail)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// DroppedError: the call was sent and no answer came back — the connection broke, the
// server went away or answered with an HTTP error. It may or may not have acted.
type DroppedError struct {
	Tool, Detail string
	Err          error
}

func (e *DroppedError) Error() string {
	return fmt.Sprintf("Error: the MCP server of '%s' did not answer the call (%s); it may or may not have acted. Calling it again is safe only if it is idempotent.", e.Tool, e.Detail)
}

func (e *DroppedError) Unwrap() error { return e.Err }

// RefusedError: the server answered the call with a JSON-RPC error (a tool it no longer
// offers, arguments it rejects, its own failure). Message is the server's, as the model
// reads it.
type RefusedError struct {
	Tool    string
	Code    int64
	Message string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("Error: the MCP server refused the call of '%s': %s (JSON-RPC error %d).", e.Tool, e.Message, e.Code)
}
