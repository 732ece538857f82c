package mcptool

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/archmax-ai/archmax/core/hostconfig"
	"github.com/archmax-ai/archmax/core/hosttool"
	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/spec"
)

// fake is an MCP server built with the official SDK, served in process over Streamable
// HTTP. It records every HTTP request (method, JSON-RPC method, headers) and every tool
// call (name, arguments, _meta) it receives.
type fake struct {
	t       *testing.T
	srv     *httptest.Server
	opts    *mcp.StreamableHTTPOptions
	handler atomic.Pointer[http.Handler]
	server  *mcp.Server

	mu       sync.Mutex
	requests []request
	calls    []toolCall

	started  chan struct{} // a "hang" call has begun
	release  chan struct{} // lets the "slow" and "hang" calls end
	stopOnce sync.Once
	dials    atomic.Int32 // connections accepted
}

type request struct {
	Method, RPC string
	Header      http.Header
	Body        []byte
}

type toolCall struct {
	Name string
	Args map[string]any
	Meta map[string]any
}

func newFake(t *testing.T, opts *mcp.StreamableHTTPOptions) *fake {
	t.Helper()
	f := &fake{t: t, opts: opts, started: make(chan struct{}, 8), release: make(chan struct{})}
	f.restart()
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var msg struct {
			Method string `json:"method"`
		}
		_ = json.Unmarshal(body, &msg)
		f.mu.Lock()
		f.requests = append(f.requests, request{Method: r.Method, RPC: msg.Method, Header: r.Header.Clone(), Body: body})
		f.mu.Unlock()
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		(*f.handler.Load()).ServeHTTP(w, r)
	}))
	f.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			f.dials.Add(1)
		}
	}
	f.srv.Start()
	t.Cleanup(f.stop)
	return f
}

// stop takes the server away: blocked tools end, connections are cut, the listener closes.
func (f *fake) stop() {
	f.stopOnce.Do(func() { close(f.release) })
	f.srv.CloseClientConnections()
	f.srv.Close()
}

// restart replaces the MCP server behind the URL with a fresh one: every session it knew
// is gone (a redeployed server).
func (f *fake) restart() {
	f.server = mcp.NewServer(&mcp.Implementation{Name: "orders", Version: "1"}, nil)
	obj := func(props string, required ...string) json.RawMessage {
		if required == nil {
			required = []string{}
		}
		req, _ := json.Marshal(required)
		return json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{%s},"required":%s,"additionalProperties":false}`, props, req))
	}
	add := func(name, desc string, schema json.RawMessage, h func(context.Context, map[string]any) (*mcp.CallToolResult, error)) {
		f.server.AddTool(&mcp.Tool{Name: name, Description: desc, InputSchema: schema}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args map[string]any
			_ = json.Unmarshal(req.Params.Arguments, &args)
			f.mu.Lock()
			f.calls = append(f.calls, toolCall{Name: req.Params.Name, Args: args, Meta: req.Params.Meta})
			f.mu.Unlock()
			return h(ctx, args)
		})
	}
	text := func(s ...string) *mcp.CallToolResult {
		r := &mcp.CallToolResult{}
		for _, x := range s {
			r.Content = append(r.Content, &mcp.TextContent{Text: x})
		}
		return r
	}
	add("get_order", "Look an order up by its id.", obj(`"id":{"type":"string","pattern":"^ORD-[0-9]+$"}`, "id"),
		func(_ context.Context, a map[string]any) (*mcp.CallToolResult, error) {
			return text(fmt.Sprintf("Order %s: shipped.", a["id"]), "Carrier: DHL."), nil
		})
	add("cancel_order", "Cancel an order.", obj(`"id":{"type":"string"}`, "id"),
		func(context.Context, map[string]any) (*mcp.CallToolResult, error) {
			r := text("Order ORD-9 cannot be cancelled: it has shipped.")
			r.IsError = true
			return r, nil
		})
	add("order_media", "The order's photo, call recording and invoice.", obj(``),
		func(context.Context, map[string]any) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "Here is the parcel."},
				&mcp.ImageContent{MIMEType: "image/png", Data: make([]byte, 1234)},
				&mcp.AudioContent{MIMEType: "audio/wav", Data: make([]byte, 10)},
				&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "orders://ORD-1/invoice", MIMEType: "application/pdf", Blob: make([]byte, 99)}},
				&mcp.ResourceLink{URI: "orders://ORD-1/label", Name: "label", MIMEType: "text/plain"},
				&mcp.TextContent{Text: "That is all."},
			}}, nil
		})
	add("order_totals", "The order's totals.", obj(``),
		func(context.Context, map[string]any) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{StructuredContent: map[string]any{"total": 42.5, "currency": "EUR"}}, nil
		})
	add("slow_report", "A report that takes a while.", obj(``),
		func(ctx context.Context, _ map[string]any) (*mcp.CallToolResult, error) {
			select {
			case <-f.release:
				return text("report"), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		})
	add("hang", "Never answers.", obj(``),
		func(ctx context.Context, _ map[string]any) (*mcp.CallToolResult, error) {
			f.started <- struct{}{}
			select {
			case <-ctx.Done():
			case <-f.release:
			}
			return nil, errors.New("gone")
		})
	add("orders.export", "A dotted server name.", obj(`"file":{"type":"string"}`),
		func(_ context.Context, a map[string]any) (*mcp.CallToolResult, error) {
			return text(fmt.Sprint("exported ", a["file"])), nil
		})
	f.server.AddTool(&mcp.Tool{Name: "echo_headers", Description: "Echoes the request's Authorization header.", InputSchema: obj(``)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			f.mu.Lock()
			f.calls = append(f.calls, toolCall{Name: req.Params.Name, Meta: req.Params.Meta})
			f.mu.Unlock()
			auth := req.Extra.Header.Get("Authorization")
			return &mcp.CallToolResult{IsError: strings.Contains(auth, "fail"), Content: []mcp.Content{&mcp.TextContent{Text: "you sent " + auth}}}, nil
		})
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return f.server }, f.opts)
	f.handler.Store(&h)
}

func (f *fake) toolCalls() []toolCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]toolCall(nil), f.calls...)
}

func (f *fake) httpRequests() []request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]request(nil), f.requests...)
}

func (f *fake) count(rpc string) int {
	n := 0
	for _, r := range f.httpRequests() {
		if r.RPC == rpc {
			n++
		}
	}
	return n
}

func (f *fake) decl(prefix string, expose ...hostconfig.MCPTool) hostconfig.ToolDecl {
	return hostconfig.ToolDecl{Kind: hostconfig.KindMCP, Name: "orders", Line: 7,
		MCP: &hostconfig.MCPServer{URL: f.srv.URL, Prefix: prefix, Expose: expose}}
}

func expose(names ...string) []hostconfig.MCPTool {
	var out []hostconfig.MCPTool
	for _, n := range names {
		out = append(out, hostconfig.MCPTool{Name: n})
	}
	return out
}

var kinds = map[string]hosttool.Builder{hostconfig.KindMCP: New}

// build runs the shared hosttool.Build over one mcp declaration, as the assembly does.
func build(t *testing.T, deps hosttool.Deps, decls ...hostconfig.ToolDecl) map[string]session.HostTool {
	t.Helper()
	tools, err := hosttool.Build(context.Background(), &hostconfig.Config{Version: 1, Tools: decls}, kinds, deps)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	out := map[string]session.HostTool{}
	for _, tl := range tools {
		out[tl.Name] = tl
	}
	return out
}

func run(t *testing.T, tool session.HostTool, args map[string]any, key string) (string, error) {
	t.Helper()
	return tool.Handler(context.Background(), session.HostCall{SessionID: "s1", State: "work", CallID: "tu-1", Args: args, IdempotencyKey: key})
}

// The build lists the server's tools: each exposed one is a host tool named prefix+as with
// the server's description and schema; List gives the whole listing.
func TestBuildListsTheServersTools(t *testing.T) {
	f := newFake(t, nil)
	d := f.decl("crm_", hostconfig.MCPTool{Name: "get_order"}, hostconfig.MCPTool{Name: "orders.export", As: "export", Paths: []spec.PathArg{{Arg: "file", Access: "write"}}})
	tools := build(t, hosttool.Deps{}, d)
	if len(tools) != 2 {
		t.Fatalf("tools = %v", tools)
	}
	g := tools["crm_get_order"]
	if g.Description != "Look an order up by its id." || !strings.Contains(string(g.InputSchema), `"pattern":"^ORD-[0-9]+$"`) {
		t.Errorf("crm_get_order = %q %s", g.Description, g.InputSchema)
	}
	e := tools["crm_export"]
	if e.Description != "A dotted server name." || len(e.Paths) != 1 || e.Paths[0].Arg != "file" {
		t.Errorf("crm_export = %+v", e)
	}
	if text, err := run(t, e, map[string]any{"file": "scratchpad/out.csv"}, "s1/1/tu-1"); err != nil || text != "exported scratchpad/out.csv" {
		t.Errorf("export: %q %v", text, err)
	}
	if n := f.count("tools/list"); n != 1 {
		t.Errorf("tools/list sent %d times, want once per build", n)
	}
	if n := f.count("initialize"); n != 1 {
		t.Errorf("initialize sent %d times: the listing's session is the calls' session", n)
	}

	infos, err := List(context.Background(), *d.MCP, hosttool.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, in := range infos {
		names = append(names, in.Name)
		if in.Name == "get_order" && (in.Description != "Look an order up by its id." || !json.Valid(in.InputSchema)) {
			t.Errorf("List get_order = %+v", in)
		}
	}
	if strings.Join(names, ",") != "cancel_order,echo_headers,get_order,hang,order_media,order_totals,orders.export,slow_report" {
		t.Errorf("List = %v", names)
	}
}

// A call: its text blocks joined with a blank line; the server receives the idempotency key
// in _meta, over each server mode — sessions with SSE streams, plain JSON responses, and a
// stateless server.
func TestCallMapsTextAndCarriesTheIdempotencyKey(t *testing.T) {
	for name, opts := range map[string]*mcp.StreamableHTTPOptions{
		"stateful-sse": nil,
		"json":         {JSONResponse: true},
		"stateless":    {Stateless: true},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFake(t, opts)
			tools := build(t, hosttool.Deps{}, f.decl("", expose("get_order")...))
			text, err := run(t, tools["get_order"], map[string]any{"id": "ORD-7"}, "s1/3/tu-9")
			if err != nil || text != "Order ORD-7: shipped.\n\nCarrier: DHL." {
				t.Fatalf("call: %q %v", text, err)
			}
			calls := f.toolCalls()
			if len(calls) != 1 || calls[0].Name != "get_order" || calls[0].Args["id"] != "ORD-7" || calls[0].Meta[MetaIdempotencyKey] != "s1/3/tu-9" {
				t.Fatalf("server calls = %+v", calls)
			}
		})
	}
}

// isError is an error result with the tool's own text; image, audio and resource content
// are named by notices in place; structured content stands in for missing text.
func TestResultMapping(t *testing.T) {
	f := newFake(t, nil)
	tools := build(t, hosttool.Deps{}, f.decl("", expose("cancel_order", "order_media", "order_totals")...))
	_, err := run(t, tools["cancel_order"], map[string]any{"id": "ORD-9"}, "k")
	var te *ToolError
	if !errors.As(err, &te) || err.Error() != "Order ORD-9 cannot be cancelled: it has shipped." {
		t.Errorf("isError: %v", err)
	}
	text, err := run(t, tools["order_media"], nil, "k")
	want := "Here is the parcel.\n\n[image content omitted: image/png, 1234 bytes]\n\n[audio content omitted: audio/wav, 10 bytes]\n\n" +
		"[resource content omitted: orders://ORD-1/invoice, application/pdf, 99 bytes]\n\n[resource link omitted: orders://ORD-1/label, text/plain]\n\nThat is all."
	if err != nil || text != want {
		t.Errorf("media:\n%q\nwant\n%q (%v)", text, want, err)
	}
	text, err = run(t, tools["order_totals"], nil, "k")
	if err != nil || text != `{"currency":"EUR","total":42.5}` {
		t.Errorf("structured: %q %v", text, err)
	}
	// unit cases the server cannot easily produce
	for _, c := range []struct {
		res  *mcp.CallToolResult
		want string
	}{
		{&mcp.CallToolResult{}, ""},
		{&mcp.CallToolResult{StructuredContent: []any{1, 2}, Content: []mcp.Content{&mcp.TextContent{Text: "two items"}}}, "two items"},
		{&mcp.CallToolResult{StructuredContent: map[string]any{"a": 1}, Content: []mcp.Content{&mcp.ImageContent{Data: []byte{1}}}}, "{\"a\":1}\n\n[image content omitted: unknown type, 1 bytes]"},
	} {
		if got := resultText(c.res); got != c.want {
			t.Errorf("resultText = %q, want %q", got, c.want)
		}
	}
	if got := (&ToolError{Tool: "x"}).Error(); got != "Error: 'x' failed (the MCP server gave no detail)." {
		t.Errorf("empty isError = %q", got)
	}
}

// A listed tool the server does not offer fails the build with a clear error; so does a
// server that cannot be reached.
func TestToolNotOfferedFailsTheBuild(t *testing.T) {
	f := newFake(t, nil)
	_, err := hosttool.Build(context.Background(), &hostconfig.Config{Tools: []hostconfig.ToolDecl{f.decl("crm_", expose("get_order", "refund_order", "void")...)}}, kinds, hosttool.Deps{})
	var no *NotOfferedError
	if !errors.As(err, &no) || strings.Join(no.Missing, ",") != "refund_order,void" {
		t.Fatalf("Build: %v", err)
	}
	want := "archmax.host.yaml:7: tool 'orders': mcp server " + f.srv.URL + " does not offer the exposed tools 'refund_order', 'void' (its tools/list offers 'cancel_order', 'echo_headers', 'get_order', "
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error = %v", err)
	}
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	d := f.decl("", expose("get_order")...)
	d.MCP.URL = gone.URL
	if _, err := New(context.Background(), d, hosttool.Deps{}); err == nil || !strings.HasPrefix(err.Error(), "mcp server "+gone.URL+": could not connect: ") {
		t.Errorf("unreachable server: %v", err)
	}
}

// Names are checked before anything is sent: a name that is not a Bedrock tool name (a
// dotted server name without `as`, too long with its prefix) or a reserved one.
func TestNamesAreCheckedOffline(t *testing.T) {
	offline := "http://127.0.0.1:1/mcp" // nothing listens: a check that reached the network would fail differently
	for _, c := range []struct {
		prefix string
		tool   hostconfig.MCPTool
		want   string
	}{
		{"", hostconfig.MCPTool{Name: "orders.export"}, `tool "orders.export" is exposed as "orders.export", which is not a valid tool name`},
		{strings.Repeat("p", 60) + "_", hostconfig.MCPTool{Name: "get_order"}, "which is not a valid tool name ([a-zA-Z0-9_-], 1 to 64 characters, prefix included)"},
		{"archmax_", hostconfig.MCPTool{Name: "get_order"}, "a reserved name"},
		{"", hostconfig.MCPTool{Name: "x", As: "copy_file"}, "a reserved name"},
		{"", hostconfig.MCPTool{}, "an exposed tool has no name"},
	} {
		d := hostconfig.ToolDecl{Kind: "mcp", MCP: &hostconfig.MCPServer{URL: offline, Prefix: c.prefix, Expose: []hostconfig.MCPTool{c.tool}}}
		if _, err := New(context.Background(), d, hosttool.Deps{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s%+v: %v", c.prefix, c.tool, err)
		}
	}
	d := hostconfig.ToolDecl{Kind: "mcp", MCP: &hostconfig.MCPServer{URL: "http://mcp.example.com/mcp", Expose: expose("a")}}
	if _, err := New(context.Background(), d, hosttool.Deps{}); err == nil || !strings.Contains(err.Error(), "a tool's URL is https") {
		t.Errorf("plain http to a remote host: %v", err)
	}
	d = hostconfig.ToolDecl{Kind: "mcp", MCP: &hostconfig.MCPServer{URL: offline, Expose: expose("a", "a")}}
	if _, err := New(context.Background(), d, hosttool.Deps{}); err == nil || !strings.Contains(err.Error(), `two exposed tools are named "a"`) {
		t.Errorf("a repeated name: %v", err)
	}
	f := newFake(t, nil)
	d = f.decl("", hostconfig.MCPTool{Name: "get_order", Paths: []spec.PathArg{{Arg: "file", Access: "read"}}})
	if _, err := New(context.Background(), d, hosttool.Deps{}); err == nil || !strings.Contains(err.Error(), `path argument "file" is not a property of the server's input schema`) {
		t.Errorf("a path argument the schema lacks: %v", err)
	}
}

// The shared wrapper's timeout ends a call that takes too long (the server is told to
// cancel); the session stays usable. Arguments that break the server's schema never leave.
func TestTimeoutAndSchemaCheck(t *testing.T) {
	f := newFake(t, nil)
	d := f.decl("", expose("slow_report", "get_order")...)
	d.Timeout = 150 * time.Millisecond
	tools := build(t, hosttool.Deps{}, d)
	start := time.Now()
	_, err := run(t, tools["slow_report"], nil, "k1")
	var te *hosttool.TimeoutError
	if !errors.As(err, &te) || time.Since(start) > 5*time.Second {
		t.Fatalf("slow call: %v after %s", err, time.Since(start))
	}
	if text, err := run(t, tools["get_order"], map[string]any{"id": "ORD-1"}, "k2"); err != nil || !strings.HasPrefix(text, "Order ORD-1") {
		t.Errorf("a call after the timeout: %q %v", text, err)
	}
	if n := f.count("initialize"); n != 1 {
		t.Errorf("a timeout reconnected (%d initializes)", n)
	}
	_, err = run(t, tools["get_order"], map[string]any{"id": "../etc"}, "k3")
	var ae *hosttool.ArgumentsError
	if !errors.As(err, &ae) {
		t.Errorf("bad arguments: %v", err)
	}
	if n := len(f.toolCalls()); n != 2 {
		t.Errorf("server saw %d calls, want 2 (bad arguments never leave)", n)
	}
	// a call's own earlier deadline is honoured too
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := tools["slow_report"].Handler(ctx, session.HostCall{IdempotencyKey: "k4"}); !errors.Is(err, context.DeadlineExceeded) && !errors.As(err, &te) {
		t.Errorf("the caller's deadline: %v", err)
	}
}

// A server that disappears mid-call: the call is answered at once as dropped (it may have
// acted); the next call reconnects. A server that is gone altogether: nothing is sent.
func TestServerDisappearsMidCall(t *testing.T) {
	for name, opts := range map[string]*mcp.StreamableHTTPOptions{"stateful-sse": nil, "json": {JSONResponse: true}} {
		t.Run(name, func(t *testing.T) {
			f := newFake(t, opts)
			tools := build(t, hosttool.Deps{}, f.decl("", expose("hang", "get_order")...))
			go func() {
				<-f.started
				f.srv.CloseClientConnections()
			}()
			start := time.Now()
			_, err := run(t, tools["hang"], nil, "k1")
			var de *DroppedError
			if !errors.As(err, &de) || !strings.HasPrefix(err.Error(), "Error: the MCP server of 'hang' did not answer the call (") ||
				!strings.HasSuffix(err.Error(), "); it may or may not have acted. Calling it again is safe only if it is idempotent.") {
				t.Fatalf("dropped call: %v", err)
			}
			if time.Since(start) > 10*time.Second {
				t.Errorf("the drop took %s to notice", time.Since(start))
			}
			if text, err := run(t, tools["get_order"], map[string]any{"id": "ORD-2"}, "k2"); err != nil || !strings.HasPrefix(text, "Order ORD-2") {
				t.Fatalf("the call after the drop: %q %v", text, err)
			}
			if n := f.count("initialize"); n != 2 {
				t.Errorf("initialize sent %d times, want a reconnect after the drop", n)
			}
			// gone altogether: the first call may still write into a pooled connection the
			// server has just cut (EOF: it cannot know whether the server read it); once the
			// session is dropped, nothing can be sent
			f.stop()
			_, err = run(t, tools["get_order"], map[string]any{"id": "ORD-3"}, "k3")
			var ue *UnreachableError
			if !errors.As(err, &ue) && !errors.As(err, &de) {
				t.Errorf("a call to a server that is gone: %v", err)
			}
			_, err = run(t, tools["get_order"], map[string]any{"id": "ORD-3"}, "k4")
			if !errors.As(err, &ue) || !strings.HasPrefix(err.Error(), "Error: the MCP server of 'get_order' could not be reached (") ||
				!strings.HasSuffix(err.Error(), "connect: connection refused); nothing was sent. Try again later.") {
				t.Errorf("a call to a server that is gone: %v", err)
			}
		})
	}
}

// A redeployed server no longer knows the session (404): the call is sent again on a
// fresh session, once, and runs once.
func TestRestartedServerIsReconnected(t *testing.T) {
	f := newFake(t, nil)
	tools := build(t, hosttool.Deps{}, f.decl("", expose("get_order")...))
	f.restart()
	text, err := run(t, tools["get_order"], map[string]any{"id": "ORD-4"}, "s1/2/tu-1")
	if err != nil || !strings.HasPrefix(text, "Order ORD-4") {
		t.Fatalf("call after a restart: %q %v", text, err)
	}
	if calls := f.toolCalls(); len(calls) != 1 || calls[0].Meta[MetaIdempotencyKey] != "s1/2/tu-1" {
		t.Errorf("server calls = %+v", calls)
	}
	if n := f.count("initialize"); n != 2 {
		t.Errorf("initialize sent %d times, want 2", n)
	}
}

// A tool the server stopped offering after the build is refused by the server: a clear
// error result, and the session stays.
func TestToolRemovedAfterBuild(t *testing.T) {
	f := newFake(t, nil)
	tools := build(t, hosttool.Deps{}, f.decl("", expose("get_order", "cancel_order")...))
	f.server.RemoveTools("cancel_order")
	_, err := run(t, tools["cancel_order"], map[string]any{"id": "ORD-1"}, "k")
	var re *RefusedError
	if !errors.As(err, &re) || !strings.HasPrefix(err.Error(), "Error: the MCP server refused the call of 'cancel_order': ") {
		t.Fatalf("removed tool: %v", err)
	}
	if _, err := run(t, tools["get_order"], map[string]any{"id": "ORD-1"}, "k"); err != nil {
		t.Errorf("the next call: %v", err)
	}
	if n := f.count("initialize"); n != 1 {
		t.Errorf("a refusal reconnected (%d initializes)", n)
	}
}

// Auth by header: every request carries the secret (prefix + value) from Deps.Secret; a
// secret that cannot be resolved sends nothing.
func TestAuthHeader(t *testing.T) {
	f := newFake(t, nil)
	d := f.decl("", expose("get_order")...)
	d.MCP.Auth = &hostconfig.Auth{Header: "Authorization", Prefix: "Bearer ", Secret: "arn:aws:secretsmanager:eu-west-1:1:secret:crm"}
	var fail atomic.Bool
	deps := hosttool.Deps{Secret: func(_ context.Context, a *hostconfig.Auth) (string, error) {
		if fail.Load() {
			return "", errors.New("AccessDeniedException")
		}
		if a.Secret != "arn:aws:secretsmanager:eu-west-1:1:secret:crm" {
			return "", errors.New("wrong secret asked for")
		}
		return "s3cr3t", nil
	}}
	tools := build(t, deps, d)
	if _, err := run(t, tools["get_order"], map[string]any{"id": "ORD-1"}, "k"); err != nil {
		t.Fatal(err)
	}
	reqs := f.httpRequests()
	for _, r := range reqs {
		if r.Header.Get("Authorization") != "Bearer s3cr3t" {
			t.Errorf("%s %s: Authorization = %q", r.Method, r.RPC, r.Header.Get("Authorization"))
		}
	}
	if len(reqs) < 3 {
		t.Errorf("requests = %d", len(reqs))
	}
	fail.Store(true)
	_, err := run(t, tools["get_order"], map[string]any{"id": "ORD-2"}, "k2")
	var ue *UnreachableError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "AccessDeniedException") || !strings.Contains(err.Error(), "nothing was sent") {
		t.Errorf("unresolvable secret: %v", err)
	}
	if n := len(f.toolCalls()); n != 1 {
		t.Errorf("server calls = %d, want 1", n)
	}
	if _, err := New(context.Background(), d, hosttool.Deps{}); err == nil || !strings.Contains(err.Error(), "needs a secret resolver") {
		t.Errorf("no resolver: %v", err)
	}
}

// Auth by SigV4: every request is signed through Deps.Sign with the service and region,
// over the exact body sent.
func TestAuthSigV4(t *testing.T) {
	f := newFake(t, nil)
	d := f.decl("gw_", expose("get_order")...)
	d.MCP.Auth = &hostconfig.Auth{SigV4: &hostconfig.SigV4{Service: "bedrock-agentcore", Region: "eu-central-1"}}
	deps := hosttool.Deps{Sign: func(_ context.Context, req *http.Request, body []byte, service, region string) error {
		sum := sha256.Sum256(body)
		req.Header.Set("Authorization", "AWS4-HMAC-SHA256 "+service+"/"+region)
		req.Header.Set("X-Amz-Content-Sha256", hex.EncodeToString(sum[:]))
		return nil
	}}
	tools := build(t, deps, d)
	if text, err := run(t, tools["gw_get_order"], map[string]any{"id": "ORD-5"}, "s/1/t"); err != nil || !strings.HasPrefix(text, "Order ORD-5") {
		t.Fatalf("signed call: %q %v", text, err)
	}
	for _, r := range f.httpRequests() {
		sum := sha256.Sum256(r.Body)
		if r.Header.Get("Authorization") != "AWS4-HMAC-SHA256 bedrock-agentcore/eu-central-1" || r.Header.Get("X-Amz-Content-Sha256") != hex.EncodeToString(sum[:]) {
			t.Errorf("%s %s: signature headers %q %q over %d bytes", r.Method, r.RPC, r.Header.Get("Authorization"), r.Header.Get("X-Amz-Content-Sha256"), len(r.Body))
		}
	}
	if _, err := New(context.Background(), d, hosttool.Deps{}); err == nil || !strings.Contains(err.Error(), "needs AWS credentials") {
		t.Errorf("no signer: %v", err)
	}
}

// A call after the connections sat idle past IdleReuse (a frozen container thawing) dials a
// new connection instead of writing into one the far end may have closed; calls close
// together share one.
func TestIdleConnectionsAreNotReused(t *testing.T) {
	f := newFake(t, nil)
	dials := &f.dials
	tools := build(t, hosttool.Deps{}, f.decl("", expose("get_order")...))
	for i := range 3 {
		if _, err := run(t, tools["get_order"], map[string]any{"id": "ORD-1"}, fmt.Sprint("k", i)); err != nil {
			t.Fatal(err)
		}
	}
	before := dials.Load()
	shift := time.Minute
	wallNow = func() time.Time { return time.Now().Round(0).Add(shift) }
	t.Cleanup(func() { wallNow = func() time.Time { return time.Now().Round(0) } })
	if _, err := run(t, tools["get_order"], map[string]any{"id": "ORD-1"}, "k9"); err != nil {
		t.Fatal(err)
	}
	if got := dials.Load(); got != before+1 {
		t.Errorf("dials: %d before the idle call, %d after (want one new connection)", before, got)
	}
	if n := f.count("initialize"); n != 1 {
		t.Errorf("the MCP session was not kept (%d initializes)", n)
	}
}

// The header secret never reaches the model: a server echoing it reads [redacted]; a secret
// holding a line break is refused before anything is sent.
func TestSecretIsRedactedAndChecked(t *testing.T) {
	f := newFake(t, nil)
	d := f.decl("", expose("echo_headers")...)
	d.MCP.Auth = &hostconfig.Auth{Header: "Authorization", Prefix: "Bearer ", Env: "CRM_TOKEN"}
	var secret atomic.Value
	secret.Store("tok-12345")
	tools := build(t, hosttool.Deps{Secret: func(context.Context, *hostconfig.Auth) (string, error) { return secret.Load().(string), nil }}, d)
	if text, err := run(t, tools["echo_headers"], nil, "k1"); err != nil || text != "you sent Bearer [redacted]" {
		t.Errorf("echoed secret: %q %v", text, err)
	}
	secret.Store("tok-fail-6789")
	if _, err := run(t, tools["echo_headers"], nil, "k2"); err == nil || err.Error() != "you sent Bearer [redacted]" {
		t.Errorf("echoed secret in an error result: %v", err)
	}
	secret.Store("tok\r\nX-Admin: 1")
	_, err := run(t, tools["echo_headers"], nil, "k3")
	if err == nil || !strings.Contains(err.Error(), "its credentials cannot be a header value") || !strings.Contains(err.Error(), "nothing was sent") {
		t.Errorf("a secret with CR/LF: %v", err)
	}
	secret.Store("")
	if _, err := run(t, tools["echo_headers"], nil, "k4"); err == nil || !strings.Contains(err.Error(), "its credentials are empty") {
		t.Errorf("an empty secret: %v", err)
	}
	if n := len(f.toolCalls()); n != 2 {
		t.Errorf("server calls = %d, want 2", n)
	}
}

// Redirects are followed only to the same scheme, host and port.
func TestRedirectToAnotherHostIsRefused(t *testing.T) {
	f := newFake(t, nil)
	away := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, f.srv.URL, http.StatusTemporaryRedirect)
	}))
	defer away.Close()
	d := f.decl("", expose("get_order")...)
	d.MCP.URL = away.URL
	_, err := New(context.Background(), d, hosttool.Deps{HTTP: &http.Client{}})
	if err == nil || !strings.Contains(err.Error(), "refused a redirect to another host ("+strings.TrimPrefix(f.srv.URL, "http://")+")") {
		t.Errorf("redirect away: %v", err)
	}
	if n := len(f.httpRequests()); n != 0 {
		t.Errorf("the other host saw %d requests", n)
	}
	same := http.NewServeMux()
	same.HandleFunc("/old", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/mcp", http.StatusPermanentRedirect)
	})
	same.Handle("/mcp", *f.handler.Load())
	s2 := httptest.NewServer(same)
	defer s2.Close()
	d.MCP.URL = s2.URL + "/old"
	tools, err := New(context.Background(), d, hosttool.Deps{})
	if err != nil || len(tools) != 1 {
		t.Errorf("a same-host redirect: %v", err)
	}
}

// A result over maxResultChars is cut with a note when there is no workspace to offload to
// (the engine test covers the offload); an error result is cut, never offloaded.
func TestLongResultsAreCut(t *testing.T) {
	f := newFake(t, nil)
	d := f.decl("", expose("get_order", "cancel_order")...)
	d.MaxResultChars = 12
	tools := build(t, hosttool.Deps{}, d)
	text, err := run(t, tools["get_order"], map[string]any{"id": "ORD-7"}, "k")
	if err != nil || text != "Order ORD-7:\n[cut: the result has 36 characters; the first 12 are shown]" {
		t.Errorf("cut result: %q %v", text, err)
	}
	if _, err := run(t, tools["cancel_order"], map[string]any{"id": "ORD-7"}, "k"); err == nil || err.Error() != "Order ORD-9 …" {
		t.Errorf("cut error result: %v", err)
	}
}

// A response body past MaxResponseBytes fails its read.
func TestBoundedBody(t *testing.T) {
	b := &boundedBody{r: io.NopCloser(strings.NewReader(strings.Repeat("x", 100))), left: 60}
	data, err := io.ReadAll(b)
	if len(data) != 60 || err == nil || !strings.Contains(err.Error(), "response is over") {
		t.Errorf("read %d bytes, %v", len(data), err)
	}
}
