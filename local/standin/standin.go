// Package standin serves the local stand-ins of a host file's tools (`local:` blocks,
// hostconfig.LocalStandIn) for local runs — `archmax run`, `test` and `serve` — so a
// workspace whose host file declares Lambda, HTTP and MCP tools runs offline. Each stand-in
// speaks its kind's own protocol on a loopback port and the kind's own code calls it: a
// lambda tool invokes its function through the AWS SDK against local/lambdafake, an http
// tool sends its request (URL template filled, encoded, checked) to an HTTP server, an mcp
// tool lists and calls an MCP server (the official SDK's) over Streamable HTTP. Only the
// endpoint is replaced and the auth left out (no secret is read, nothing is signed);
// governance, the input schema, timeouts, idempotency keys, result bounds and offloading all
// run as for the real tool.
//
// A stand-in answers a call from its answers in order: the first whose whenInput matches
// the call's arguments (partially, as a case's mock: core/cases.InputMatches) gives the
// result — a lambda function's {"text"} or {"error"}, an HTTP 200 body or a 422 with the
// error's text, an MCP text result or an isError one — and a call none matches is an error
// result naming its arguments. The deployed functions never read `local:`.
package standin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/archmax-ai/archmax/core/cases"
	"github.com/archmax-ai/archmax/core/hostconfig"
	"github.com/archmax-ai/archmax/core/hosttool"
	"github.com/archmax-ai/archmax/core/hosttool/lambdatool"
	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/local/lambdafake"
)

// Peers are the stand-ins of one local environment, started as the tools that declare one
// are built and stopped by Close. The zero value is not usable; call New. Safe for
// concurrent use.
type Peers struct {
	mu      sync.Mutex
	closed  bool
	servers []*http.Server
	// the Lambda peer, shared by every lambda stand-in (started on first use)
	fake    *lambdafake.Fake
	invoker hosttool.LambdaInvoker
	answers map[string][]hostconfig.LocalAnswer // lambda stand-ins' answers by tool name
}

// New returns Peers with nothing started.
func New() *Peers { return &Peers{answers: map[string][]hostconfig.LocalAnswer{}} }

// Kinds wraps a build's tool kinds (hostenv.Kinds): a declaration with a stand-in is built
// by its kind against its stand-in, started for it; any other goes to its kind as declared.
func (p *Peers) Kinds(kinds map[string]hosttool.Builder) map[string]hosttool.Builder {
	out := make(map[string]hosttool.Builder, len(kinds))
	for kind, build := range kinds {
		out[kind] = func(ctx context.Context, d hostconfig.ToolDecl, deps hosttool.Deps) ([]session.HostTool, error) {
			var err error
			switch {
			case kind == hostconfig.KindLambda && d.Lambda != nil && d.Local != nil:
				deps.Lambda, err = p.lambdaPeer(d)
			case kind == hostconfig.KindHTTP && d.HTTP != nil && d.Local != nil:
				d, err = p.httpPeer(d)
			case kind == hostconfig.KindMCP && d.MCP != nil && len(d.MCP.Expose) > 0 && d.MCP.Expose[0].Local != nil:
				d, err = p.mcpPeer(d)
			}
			if err != nil {
				return nil, fmt.Errorf("its local stand-in: %w", err)
			}
			return build(ctx, d, deps)
		}
	}
	return out
}

// Close stops every stand-in.
func (p *Peers) Close() error {
	p.mu.Lock()
	servers, fake := p.servers, p.fake
	p.servers, p.fake, p.closed = nil, nil, true
	p.mu.Unlock()
	var errs []error
	for _, s := range servers {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		if err := s.Shutdown(ctx); err != nil {
			errs = append(errs, s.Close())
		}
		cancel()
	}
	if fake != nil {
		fake.Close()
	}
	return errors.Join(errs...)
}

// serve starts h on a loopback port and returns its origin (http://127.0.0.1:port).
func (p *Peers) serve(h http.Handler) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return "", errors.New("the local environment is closed")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	p.servers = append(p.servers, srv)
	return "http://" + ln.Addr().String(), nil
}

// answer picks the first answer matching args: its text and whether it is an error; ok is
// false when none matches.
func answer(answers []hostconfig.LocalAnswer, args map[string]any) (text string, isError, ok bool) {
	for _, a := range answers {
		if a.WhenInput == nil || cases.InputMatches(a.WhenInput, args) {
			if a.Error != "" {
				return a.Error, true, true
			}
			return a.Result, false, true
		}
	}
	return "", false, false
}

// noAnswer is the text of a call no answer matches.
func noAnswer(tool string, args map[string]any) string {
	b, _ := json.Marshal(args)
	return fmt.Sprintf("the local stand-in of '%s' (archmax.host.yaml, local:) has no answer for the arguments %s", tool, b)
}

// --- lambda ------------------------------------------------------------------------

// lambdaPeer registers d's answers and returns the invoker of the Lambda peer: a real
// service/lambda client against local/lambdafake, whose one handler answers each invocation
// by the payload's tool (so two tools naming one function keep their own answers).
func (p *Peers) lambdaPeer(d hostconfig.ToolDecl) (hosttool.LambdaInvoker, error) {
	p.mu.Lock()
	started := p.fake != nil
	p.answers[d.Name] = d.Local.Answers
	p.mu.Unlock()
	if !started {
		fake := lambdafake.New()
		origin, err := p.serve(fake)
		if err != nil {
			return nil, err
		}
		client := lambda.New(lambda.Options{
			Region:       lambdafake.Region,
			BaseEndpoint: aws.String(origin),
			Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
		})
		p.mu.Lock()
		if p.fake == nil {
			p.fake, p.invoker = fake, lambdatool.SDKInvoker(client)
		} else {
			fake.Close() // another build started one first
		}
		p.mu.Unlock()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fake.Register(d.Lambda.Function, p.invokeLambda)
	return p.invoker, nil
}

// invokeLambda is the stand-in functions' code: the lambda kind's payload in, its answer
// contract out.
func (p *Peers) invokeLambda(_ context.Context, payload []byte) ([]byte, error) {
	var call struct {
		Tool  string         `json:"tool"`
		Input map[string]any `json:"input"`
	}
	if err := json.Unmarshal(payload, &call); err != nil {
		return nil, err
	}
	p.mu.Lock()
	answers := p.answers[call.Tool]
	p.mu.Unlock()
	text, isError, ok := answer(answers, call.Input)
	switch {
	case !ok:
		return json.Marshal(map[string]string{"error": "Error: " + noAnswer(call.Tool, call.Input) + "."})
	case isError:
		return json.Marshal(map[string]string{"error": text})
	default:
		return json.Marshal(map[string]string{"text": text})
	}
}

// --- http --------------------------------------------------------------------------

// httpPeer starts an HTTP server answering d's requests and returns d pointed at it: the
// same path and query template on http://127.0.0.1:<port>, without auth.
func (p *Peers) httpPeer(d hostconfig.ToolDecl) (hostconfig.ToolDecl, error) {
	parts, err := hostconfig.SplitURL(d.HTTP.URL)
	if err != nil {
		return d, err
	}
	types := propertyTypes(d.Input)
	name, answers := d.Name, d.Local.Answers
	origin, err := p.serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		args := map[string]any{}
		if body, _ := io.ReadAll(io.LimitReader(r.Body, 8<<20)); len(body) > 0 {
			_ = json.Unmarshal(body, &args)
		}
		segs := strings.Split(strings.TrimPrefix(r.URL.EscapedPath(), "/"), "/")
		for i, part := range parts.Path {
			if part.Arg != "" && i < len(segs) {
				if v, err := url.PathUnescape(segs[i]); err == nil {
					args[part.Arg] = typed(v, types[part.Arg])
				}
			}
		}
		q := r.URL.Query()
		for _, qp := range parts.Query {
			if qp.Arg != "" && q.Has(qp.Key) {
				args[qp.Arg] = typed(q.Get(qp.Key), types[qp.Arg])
			}
		}
		text, isError, ok := answer(answers, args)
		switch {
		case !ok:
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, noAnswer(name, args))
		case isError:
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusUnprocessableEntity)
			_, _ = io.WriteString(w, text)
		default:
			if json.Valid([]byte(text)) {
				w.Header().Set("Content-Type", "application/json")
			} else {
				w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			}
			_, _ = io.WriteString(w, text)
		}
	}))
	if err != nil {
		return d, err
	}
	h := *d.HTTP
	h.URL, h.Auth = origin+pathAndQuery(d.HTTP.URL), nil
	d.HTTP = &h
	return d, nil
}

// pathAndQuery is a URL template after its scheme://host[:port].
func pathAndQuery(template string) string {
	_, rest, _ := strings.Cut(template, "://")
	if i := strings.IndexAny(rest, "/?"); i >= 0 {
		return rest[i:]
	}
	return ""
}

// propertyTypes maps each property of an input schema to its declared JSON type ("" when
// none is given).
func propertyTypes(schema json.RawMessage) map[string]string {
	var s struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
	}
	_ = json.Unmarshal(schema, &s)
	out := map[string]string{}
	for name, p := range s.Properties {
		if t, ok := p.Type.(string); ok {
			out[name] = t
		}
	}
	return out
}

// typed reads a URL value as the argument it was filled from: a number or boolean as JSON
// decodes one, anything else as the string.
func typed(v, typ string) any {
	switch typ {
	case "integer", "number":
		if n, err := strconv.ParseFloat(v, 64); err == nil {
			return n
		}
	case "boolean":
		if b, err := strconv.ParseBool(v); err == nil {
			return b
		}
	}
	return v
}

// --- mcp ---------------------------------------------------------------------------

// mcpPeer starts an MCP server offering d's exposed tools — each listed with its
// stand-in's description and input, answering from its answers — and returns d pointed at
// it (http://127.0.0.1:<port>/mcp), without auth.
func (p *Peers) mcpPeer(d hostconfig.ToolDecl) (hostconfig.ToolDecl, error) {
	server := mcp.NewServer(&mcp.Implementation{Name: "archmax-standin", Version: "1"}, nil)
	for _, t := range d.MCP.Expose {
		if t.Local == nil {
			return d, fmt.Errorf("exposed tool '%s' has no stand-in: give every exposed tool of the server one", t.Name)
		}
		name, answers := d.MCP.ToolName(t), t.Local.Answers
		server.AddTool(&mcp.Tool{Name: t.Name, Description: t.Local.Description, InputSchema: t.Local.Input},
			func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				args := map[string]any{}
				if len(req.Params.Arguments) > 0 {
					_ = json.Unmarshal(req.Params.Arguments, &args)
				}
				text, isError, ok := answer(answers, args)
				if !ok {
					text, isError = noAnswer(name, args), true
				}
				return &mcp.CallToolResult{IsError: isError, Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
			})
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	origin, err := p.serve(mux)
	if err != nil {
		return d, err
	}
	m := *d.MCP
	m.URL, m.Auth = origin+"/mcp", nil
	d.MCP = &m
	return d, nil
}
