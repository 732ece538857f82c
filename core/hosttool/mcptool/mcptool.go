// Package mcptool is the `mcp` kind of host tool: the tools a remote MCP server offers over
// Streamable HTTP (an AgentCore Gateway, or any MCP server), through the official Go SDK
// (github.com/modelcontextprotocol/go-sdk).
//
// The host file's `expose` list is the declaration: each entry names a tool on the server
// and the name the model calls it by (Prefix + As, As defaulting to Name). What the model
// reads about a tool — its description and input schema — is the server's, from tools/list.
//
// Lifecycle (a Lambda container, or a local process):
//
//   - New lists the server's tools when the host tools are built — once per container start
//     (and again only if the assembly rebuilds for a new host file). A server that cannot be
//     reached, or does not offer an exposed tool, fails the build with an error naming the
//     server and the tools; no tool is ever offered to a model with a guessed schema.
//   - The client session that listing opened is kept and shared by every call of the
//     server's tools; a session that drops (the server ends it, a 404 after the server
//     restarted, the connection breaks) is forgotten and the next call connects again. A
//     call refused before it reached the server (its session already gone) is retried once
//     on a fresh session; a call that may have reached it never is.
//   - A call runs under its context: the shared wrapper's timeout (hosttool.Build) and any
//     earlier deadline of the turn. No standalone SSE stream is opened (a frozen container
//     cannot hold one, and nothing server-initiated is used).
//   - Every tools/call carries the call's idempotency key in its `_meta` (MetaIdempotencyKey).
//   - A call after the server's connections sat idle for IdleReuse (by the wall clock, which
//     runs on while a container is frozen) opens a new connection rather than write into
//     one the far end may have closed meanwhile: a POST written into a dead connection
//     cannot be told apart from one the server received.
package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/archmax-ai/archmax/core/hostconfig"
	"github.com/archmax-ai/archmax/core/hosttool"
	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/spec"
)

// MetaIdempotencyKey is the `_meta` key of a tools/call request carrying the call's
// idempotency key "<sessionId>/<turnId>/<toolUseId>" (session.HostCall.IdempotencyKey) —
// the spelling of the lambda kind's payload field.
const MetaIdempotencyKey = "idempotencyKey"

// ToolInfo is one tool as a server's tools/list describes it.
type ToolInfo struct {
	Name        string
	Title       string
	Description string
	// InputSchema is the tool's input schema, a JSON Schema object ("type": "object" added
	// when the server left it out).
	InputSchema json.RawMessage
}

// New builds the host tools of an `mcp` declaration: one per exposed tool, named Prefix+As,
// described by the server's tools/list (a hosttool.Builder). The listing is bounded by the
// declaration's timeout.
func New(ctx context.Context, decl hostconfig.ToolDecl, deps hosttool.Deps) ([]session.HostTool, error) {
	srv := decl.MCP
	if srv == nil {
		return nil, errors.New("an mcp tool needs its server (url, expose)")
	}
	if len(srv.Expose) == 0 {
		return nil, fmt.Errorf("mcp server %s exposes no tools", srv.URL)
	}
	names, err := modelNames(*srv)
	if err != nil {
		return nil, err
	}
	c, err := newConn(*srv, deps)
	if err != nil {
		return nil, err
	}
	timeout := decl.Timeout
	if timeout <= 0 {
		timeout = hostconfig.DefaultTimeout
	}
	lctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	infos, err := c.list(lctx)
	if err != nil {
		c.close()
		return nil, err
	}
	tools, err := hostTools(c, *srv, names, infos, decl.MaxResultChars)
	if err != nil {
		c.close()
		return nil, err
	}
	return tools, nil
}

// List lists every tool the server offers (all pages of tools/list), on a session of its
// own that it closes: what `archmax validate --online` compares the host file's expose
// lists with.
func List(ctx context.Context, server hostconfig.MCPServer, deps hosttool.Deps) ([]ToolInfo, error) {
	c, err := newConn(server, deps)
	if err != nil {
		return nil, err
	}
	defer c.close()
	return c.list(ctx)
}

// toolName is a Bedrock tool name.
var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// modelNames are the names the model calls the exposed tools by, in expose order, each
// checked (a valid Bedrock tool name once prefixed, not reserved, not repeated).
func modelNames(srv hostconfig.MCPServer) ([]string, error) {
	var names []string
	for _, t := range srv.Expose {
		if t.Name == "" {
			return nil, fmt.Errorf("mcp server %s: an exposed tool has no name", srv.URL)
		}
		name := srv.ToolName(t)
		switch {
		case !toolName.MatchString(name):
			return nil, fmt.Errorf("mcp server %s: tool %q is exposed as %q, which is not a valid tool name ([a-zA-Z0-9_-], 1 to 64 characters, prefix included): give it an `as`", srv.URL, t.Name, name)
		case spec.IsReservedToolName(name):
			return nil, fmt.Errorf("mcp server %s: tool %q is exposed as %q, a reserved name (the 'archmax_' prefix or a runtime file tool): give it another `as`", srv.URL, t.Name, name)
		case slices.Contains(names, name):
			return nil, fmt.Errorf("mcp server %s: two exposed tools are named %q", srv.URL, name)
		}
		names = append(names, name)
	}
	return names, nil
}

// hostTools matches the expose list with the server's listing.
func hostTools(c *conn, srv hostconfig.MCPServer, names []string, infos []ToolInfo, maxChars int) ([]session.HostTool, error) {
	byName := map[string]ToolInfo{}
	var offered []string
	for _, in := range infos {
		byName[in.Name] = in
		offered = append(offered, in.Name)
	}
	var missing []string
	for _, t := range srv.Expose {
		if _, ok := byName[t.Name]; !ok {
			missing = append(missing, t.Name)
		}
	}
	if len(missing) > 0 {
		return nil, &NotOfferedError{URL: srv.URL, Missing: missing, Offered: offered}
	}
	out := make([]session.HostTool, 0, len(srv.Expose))
	for i, t := range srv.Expose {
		in := byName[t.Name]
		if err := checkPaths(in.InputSchema, t.Paths); err != nil {
			return nil, fmt.Errorf("mcp server %s: tool %q: %w", srv.URL, t.Name, err)
		}
		desc := in.Description
		if desc == "" {
			desc = in.Title
		}
		out = append(out, session.HostTool{
			Name:        names[i],
			Description: desc,
			InputSchema: in.InputSchema,
			Paths:       slices.Clone(t.Paths),
			Handler:     c.handler(names[i], t.Name, maxChars),
		})
	}
	return out, nil
}

// checkPaths: every declared path argument is a property of the server's input schema.
func checkPaths(schema json.RawMessage, paths []spec.PathArg) error {
	if len(paths) == 0 {
		return nil
	}
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	_ = json.Unmarshal(schema, &s)
	for _, p := range paths {
		if _, ok := s.Properties[p.Arg]; !ok {
			return fmt.Errorf("path argument %q is not a property of the server's input schema", p.Arg)
		}
	}
	return nil
}

// IdleReuse is how long the server's pooled connections may sit idle and still be reused
// by the next call (load balancers and gateways commonly close idle ones after 60 s).
const IdleReuse = 20 * time.Second

// conn is one server's client: its transport and the session calls share.
type conn struct {
	url    string
	client *mcp.Client
	httpc  *http.Client
	auth   *authTransport
	// lastUsed is when a request of this server last ended (wall clock, Unix nanoseconds).
	lastUsed atomic.Int64
	// connecting serialises connects (a channel, so a waiting caller keeps its deadline).
	connecting chan struct{}
	mu         sync.Mutex
	cs         *mcp.ClientSession
}

func newConn(srv hostconfig.MCPServer, deps hosttool.Deps) (*conn, error) {
	if err := checkURL(srv.URL); err != nil {
		return nil, err
	}
	httpc, auth, err := httpClient(srv, deps)
	if err != nil {
		return nil, fmt.Errorf("mcp server %s: %w", srv.URL, err)
	}
	return &conn{
		url:        srv.URL,
		client:     mcp.NewClient(&mcp.Implementation{Name: "archmax", Version: version()}, nil),
		httpc:      httpc,
		auth:       auth,
		connecting: make(chan struct{}, 1),
	}, nil
}

// checkURL: the parser's own check of the URL (hostconfig.MCPURLProblem: absolute, https —
// http only to a loopback host, for local servers — a fixed host, no fragment, no
// placeholder).
func checkURL(raw string) error {
	if p := hostconfig.MCPURLProblem(raw); p != nil {
		q := *p
		q.Field = hostconfig.KindMCP + "." + p.Field
		q.Message = fmt.Sprintf("mcp server %q: %s", raw, p.Message)
		return &q
	}
	return nil
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

// freshen closes the pooled connections when they sat idle past IdleReuse.
func (c *conn) freshen() {
	if last := c.lastUsed.Load(); last != 0 && wallNow().Sub(time.Unix(0, last)) > IdleReuse {
		c.httpc.CloseIdleConnections()
	}
}

func (c *conn) touch() { c.lastUsed.Store(wallNow().UnixNano()) }

// wallNow is the wall clock without its monotonic reading (a test moves it).
var wallNow = func() time.Time { return time.Now().Round(0) }

// session is the shared client session, connected on first use or after a drop.
func (c *conn) session(ctx context.Context) (*mcp.ClientSession, error) {
	select {
	case c.connecting <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-c.connecting }()
	c.mu.Lock()
	cs := c.cs
	c.mu.Unlock()
	if cs != nil {
		return cs, nil
	}
	cs, err := c.client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   c.url,
		HTTPClient: c.httpc,
		// A POST's event stream is resumed at most twice (servers with event ids); the
		// call's deadline bounds the waits.
		MaxRetries:           2,
		DisableStandaloneSSE: true,
	}, nil)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.cs = cs
	c.mu.Unlock()
	go func() {
		// The server ended the session: the next call connects again.
		_ = cs.Wait()
		c.forget(cs)
	}()
	return cs, nil
}

// forget drops cs if it is still the shared session, and closes it in the background (a
// close may send a DELETE; no caller waits for it).
func (c *conn) forget(cs *mcp.ClientSession) {
	c.mu.Lock()
	if c.cs == cs {
		c.cs = nil
	}
	c.mu.Unlock()
	go func() { _ = cs.Close() }()
}

func (c *conn) close() {
	c.mu.Lock()
	cs := c.cs
	c.cs = nil
	c.mu.Unlock()
	if cs != nil {
		_ = cs.Close()
	}
}

// list is every tool of tools/list (all pages), retried once on a fresh session when the
// shared one turns out to be gone.
func (c *conn) list(ctx context.Context) ([]ToolInfo, error) {
	defer c.touch()
	for attempt := 0; ; attempt++ {
		cs, err := c.session(ctx)
		if err != nil {
			return nil, fmt.Errorf("mcp server %s: could not connect: %w", c.url, err)
		}
		var tools []*mcp.Tool
		for t, lerr := range cs.Tools(ctx, nil) {
			if lerr != nil {
				err = lerr
				break
			}
			tools = append(tools, t)
		}
		if err != nil {
			if ctx.Err() == nil && !serverAnswered(err) {
				c.forget(cs)
				if attempt == 0 && notSent(err) {
					continue
				}
			}
			return nil, fmt.Errorf("mcp server %s: tools/list: %w", c.url, err)
		}
		out := make([]ToolInfo, 0, len(tools))
		for _, t := range tools {
			info, err := toolInfo(t)
			if err != nil {
				return nil, fmt.Errorf("mcp server %s: tool %q: %w", c.url, t.Name, err)
			}
			out = append(out, info)
		}
		return out, nil
	}
}

// toolInfo is a listed tool with its input schema as a JSON Schema object.
func toolInfo(t *mcp.Tool) (ToolInfo, error) {
	raw, err := json.Marshal(t.InputSchema)
	if err != nil {
		return ToolInfo{}, fmt.Errorf("its input schema does not encode: %w", err)
	}
	var schema map[string]any
	if err := json.Unmarshal(raw, &schema); err != nil || schema == nil {
		return ToolInfo{}, errors.New(`its input schema is not a JSON object`)
	}
	switch typ := schema["type"]; typ {
	case nil:
		schema["type"] = "object"
		raw, _ = json.Marshal(schema)
	case "object":
	default:
		return ToolInfo{}, fmt.Errorf(`its input schema's type is %v, not "object"`, typ)
	}
	return ToolInfo{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: raw}, nil
}

// handler is the call of one exposed tool: name is the model's, remote the server's.
func (c *conn) handler(name, remote string, maxChars int) func(context.Context, session.HostCall) (string, error) {
	return func(ctx context.Context, call session.HostCall) (string, error) {
		res, err := c.call(ctx, name, remote, call)
		if err != nil {
			return "", err
		}
		text := c.auth.redact(resultText(res))
		if res.IsError {
			return "", &ToolError{Tool: name, Text: clipNote(text, limitOf(maxChars))}
		}
		return hosttool.FitResult(ctx, call, text, maxChars), nil
	}
}

// call runs tools/call on the shared session. A call refused before it reached the server
// (the session was already closed, or the server no longer knows it: 404) is retried once
// on a fresh session; any other failure is the call's answer.
func (c *conn) call(ctx context.Context, name, remote string, call session.HostCall) (*mcp.CallToolResult, error) {
	params := &mcp.CallToolParams{Name: remote, Arguments: call.Args}
	c.freshen()
	defer c.touch()
	for attempt := 0; ; attempt++ {
		cs, err := c.session(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, &UnreachableError{Tool: name, Detail: c.detail(err), Err: err}
		}
		if call.IdempotencyKey != "" {
			// A fresh map per attempt: the SDK may add its own keys to the params' _meta.
			params.Meta = mcp.Meta{MetaIdempotencyKey: call.IdempotencyKey}
		}
		res, err := cs.CallTool(ctx, params)
		switch {
		case err == nil:
			return res, nil
		case ctx.Err() != nil:
			return nil, ctx.Err() // the wrapper answers a timeout; a cancelled turn stops
		case serverAnswered(err):
			var we *mcpError
			errors.As(err, &we)
			return nil, &RefusedError{Tool: name, Code: we.Code, Message: c.auth.redact(quote(we.Message))}
		}
		c.forget(cs)
		switch {
		case notSent(err) && attempt == 0:
			continue
		case notSent(err), notDialed(err), errors.As(err, new(*authError)):
			return nil, &UnreachableError{Tool: name, Detail: c.detail(err), Err: err}
		}
		return nil, &DroppedError{Tool: name, Detail: c.detail(err), Err: err}
	}
}

// detail is err as the model reads it: the innermost cause of a failed HTTP request (not
// the SDK's and net/http's prefixes naming the method and URL), on one line, bounded, with
// the header secret redacted.
func (c *conn) detail(err error) string {
	var ae *authError
	var ue *url.Error
	switch {
	case errors.As(err, &ae):
		err = ae.err
	case errors.As(err, &ue):
		err = ue.Err
	}
	return c.auth.redact(quote(err.Error()))
}

// quoteLimit bounds a cause quoted in an error result.
const quoteLimit = 1000

// quote is s on one line, bounded to quoteLimit characters.
func quote(s string) string {
	return clipNote(strings.Join(strings.Fields(s), " "), quoteLimit)
}

// clipNote is s cut to max characters with an ellipsis when longer.
func clipNote(s string, max int) string {
	if hosttool.Units(s) <= max {
		return s
	}
	return hosttool.Clip(s, max) + "…"
}

func limitOf(maxChars int) int {
	if maxChars <= 0 {
		return hostconfig.DefaultMaxResultChars
	}
	return maxChars
}

// notSent: the request never reached the server's tools — the session was closed before it
// was written, the server answered 404 for a session it no longer has, or it closed the
// pooled connection as idle while the request was being written (net/http's
// errServerClosedIdle, unexported: a server closes only connections with nothing in flight).
func notSent(err error) bool {
	return errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, mcp.ErrSessionMissing) ||
		strings.Contains(err.Error(), "http: server closed idle connection")
}

// notDialed: no connection to the server could be opened (refused, no such host), so the
// request was never written.
func notDialed(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// The codes of the SDK's own transport errors (jsonrpc2.ErrClientClosing,
// ErrServerClosing, ErrRejected), which are not the server's answers.
var transportCodes = []int64{-32003, -32004, -32005}

// serverAnswered: err is a JSON-RPC error response from the server (an unknown tool, bad
// params, its internal error): the session is fine and the call was decided by the server.
func serverAnswered(err error) bool {
	var we *mcpError
	if !errors.As(err, &we) {
		return false
	}
	return !slices.Contains(transportCodes, we.Code) && !errors.Is(err, mcp.ErrSessionMissing)
}

// resultText maps a tools/call result to the tool-result text: text blocks joined with blank
// lines, other content named by a notice in its place, the structured content (JSON) when
// there is no text block.
func resultText(res *mcp.CallToolResult) string {
	var parts []string
	texts := 0
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			texts++
			parts = append(parts, c.Text)
		case *mcp.ImageContent:
			parts = append(parts, fmt.Sprintf("[image content omitted: %s, %d bytes]", orUnknown(c.MIMEType), len(c.Data)))
		case *mcp.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio content omitted: %s, %d bytes]", orUnknown(c.MIMEType), len(c.Data)))
		case *mcp.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource link omitted: %s]", resourceLabel(c.URI, c.MIMEType, -1)))
		case *mcp.EmbeddedResource:
			if r := c.Resource; r != nil {
				n := len(r.Blob)
				if r.Text != "" {
					n = len(r.Text)
				}
				parts = append(parts, fmt.Sprintf("[resource content omitted: %s]", resourceLabel(r.URI, r.MIMEType, n)))
			} else {
				parts = append(parts, "[resource content omitted]")
			}
		default:
			parts = append(parts, "[content omitted]")
		}
	}
	if texts == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append([]string{string(b)}, parts...)
		}
	}
	return strings.Join(parts, "\n\n")
}

func orUnknown(mime string) string {
	if mime == "" {
		return "unknown type"
	}
	return mime
}

func resourceLabel(uri, mime string, n int) string {
	s := uri
	if mime != "" {
		s += ", " + mime
	}
	if n >= 0 {
		s += fmt.Sprintf(", %d bytes", n)
	}
	return s
}
