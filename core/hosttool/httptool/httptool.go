// Package httptool is the `http` kind of host tool (docs/authoring/host-tools.md): one call is one
// request to an HTTPS endpoint whose scheme and host the host file fixes (http:// only to a
// loopback host, for local tests, as the parser allows). The URL's `{arg}`
// placeholders — whole path segments or whole query values — are filled from the call's
// arguments, each percent-encoded as exactly one segment or value (a path argument that is
// or decodes to a dot segment, or holds '/' or '\', is refused); the arguments the URL does
// not use are the JSON body when the tool has one. Every request carries the call's
// Idempotency-Key header and the declaration's fixed headers, and authenticates by SigV4
// (Deps.Sign) or by a header whose value is a secret (Deps.Secret).
//
// The client follows a redirect only to the same scheme, host and port (at most 5), reads
// at most MaxResponseBytes of the body, and answers a 2xx with its body as the result text
// (JSON as it came), anything else with an error result quoting a bounded part of the body.
// A text over MaxResultChars is offloaded to large_tool_results/. The arguments' schema
// check and the call's timeout are the shared wrapper's (hosttool.Build).
package httptool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/archmax-ai/archmax/core/hostconfig"
	"github.com/archmax-ai/archmax/core/hosttool"
	"github.com/archmax-ai/archmax/core/session"
)

// IdempotencyHeader carries the call's idempotency key, <session>/<turn>/<toolUseId>.
const IdempotencyHeader = hostconfig.IdempotencyHeader

// MaxRedirects bounds the same-host redirects one call follows.
const MaxRedirects = 5

// quoteLimit bounds the part of an error response's body an error result quotes.
const quoteLimit = 2000

// maxHeaderBytes bounds the response headers the default client reads.
const maxHeaderBytes = 64 << 10

var methods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// New is the hosttool.Builder of the http kind.
func New(_ context.Context, decl hostconfig.ToolDecl, deps hosttool.Deps) ([]session.HostTool, error) {
	h := decl.HTTP
	if h == nil {
		return nil, errors.New("an http tool needs its http: block (method, url)")
	}
	method := strings.ToUpper(strings.TrimSpace(h.Method))
	if method == "" {
		method = http.MethodGet
	}
	if !slices.Contains(methods, method) {
		return nil, fmt.Errorf("method %q is not one of %s", h.Method, strings.Join(methods, ", "))
	}
	schema := decl.Input
	if len(schema) == 0 {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	props, err := properties(schema)
	if err != nil {
		return nil, err
	}
	tpl, err := parseTemplate(h.URL, props)
	if err != nil {
		return nil, err
	}
	body := h.Body
	switch body {
	case "":
		body = "none"
		if method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch {
			body = "json"
		}
	case "json", "none":
	default:
		return nil, fmt.Errorf("body %q is not json or none", h.Body)
	}
	if body == "json" && method == http.MethodGet {
		return nil, errors.New("a GET has no body: use body: none (the URL's placeholders carry the arguments)")
	}
	t := &tool{name: decl.Name, method: method, tpl: tpl, json: body == "json", headers: http.Header{},
		auth: h.Auth, maxBytes: h.MaxResponseBytes, maxChars: decl.MaxResultChars, sign: deps.Sign, secret: deps.Secret}
	if t.maxBytes <= 0 {
		t.maxBytes = hostconfig.DefaultMaxResponseBytes
	}
	// The file's static refusals are the parser's own checks (hostconfig.HeaderProblems,
	// AuthProblems), so a file `archmax validate` passes builds here.
	names := slices.Sorted(maps.Keys(h.Headers))
	fixed := make([]hostconfig.Header, 0, len(names))
	for _, name := range names {
		fixed = append(fixed, hostconfig.Header{Name: name, Value: h.Headers[name]})
	}
	if ps := hostconfig.HeaderProblems(fixed, h.Auth); len(ps) > 0 {
		return nil, in(ps[0])
	}
	if ps := hostconfig.AuthProblems(h.Auth); len(ps) > 0 {
		q := in(ps[0])
		q.Field = hostconfig.KindHTTP + ".auth" + strings.TrimSuffix("."+ps[0].Field, ".")
		return nil, q
	}
	for _, f := range fixed {
		t.headers.Set(textproto.CanonicalMIMEHeaderKey(f.Name), f.Value)
	}
	if a := h.Auth; a != nil {
		switch {
		case a.SigV4 != nil && deps.Sign == nil:
			return nil, errors.New("auth.sigv4 needs AWS credentials (Deps.Sign), and this host has none")
		case a.Header != "" && deps.Secret == nil:
			return nil, errors.New("auth.header needs a secret resolver (Deps.Secret), and this host has none")
		}
	}
	t.client = client(deps.HTTP)
	return []session.HostTool{{Name: decl.Name, Description: decl.Description, InputSchema: schema,
		Paths: decl.Paths, Handler: t.call}}, nil
}

type tool struct {
	name, method string
	tpl          *template
	json         bool
	headers      http.Header
	auth         *hostconfig.Auth
	maxBytes     int
	maxChars     int
	client       *http.Client
	sign         func(ctx context.Context, req *http.Request, body []byte, service, region string) error
	secret       func(ctx context.Context, auth *hostconfig.Auth) (string, error)
}

func (t *tool) call(ctx context.Context, c session.HostCall) (string, error) {
	target, err := t.tpl.fill(t.name, c.Args)
	if err != nil {
		return "", err
	}
	var body []byte
	if t.json {
		rest := map[string]any{}
		for k, v := range c.Args {
			if !t.tpl.args[k] {
				rest[k] = v
			}
		}
		if body, err = json.Marshal(rest); err != nil {
			return "", fmt.Errorf("Error: the arguments of '%s' cannot be sent as JSON (%v); nothing was sent.", t.name, err)
		}
	}
	req, err := http.NewRequestWithContext(ctx, t.method, target, bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("Error: '%s' could not build its request (%v); nothing was sent.", t.name, err)
	}
	if req.URL.Scheme != t.tpl.scheme || !strings.EqualFold(req.URL.Host, t.tpl.host) || req.URL.User != nil {
		return "", fmt.Errorf("Error: '%s' built a request for another endpoint; nothing was sent.", t.name) // never: fill encodes every value
	}
	if !t.json {
		req.Body, req.GetBody, req.ContentLength = http.NoBody, nil, 0
	}
	req.Header = t.headers.Clone()
	if t.json && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "application/json, text/*;q=0.9, */*;q=0.1")
	}
	req.Header.Set("User-Agent", "archmax-host-tool")
	if c.IdempotencyKey != "" {
		if problem := hostconfig.HeaderValueProblem(c.IdempotencyKey); problem != "" {
			return "", fmt.Errorf("Error: the idempotency key of this call %s, so it cannot be a header; nothing was sent.", problem)
		}
		req.Header.Set(IdempotencyHeader, c.IdempotencyKey)
	}
	var secret string
	if a := t.auth; a != nil && a.Header != "" {
		if secret, err = t.secret(ctx, a); err != nil {
			if ctx.Err() != nil {
				return "", ctx.Err()
			}
			return "", fmt.Errorf("Error: '%s' could not read its credentials (%s); nothing was sent.", t.name, quote(err.Error()))
		}
		if secret == "" {
			return "", fmt.Errorf("Error: the credentials of '%s' are empty; nothing was sent.", t.name)
		}
		if problem := hostconfig.HeaderValueProblem(a.Prefix + secret); problem != "" {
			return "", fmt.Errorf("Error: the credentials of '%s' cannot be a header value (the secret %s); nothing was sent.", t.name, problem)
		}
		req.Header.Set(a.Header, a.Prefix+secret)
	}
	if a := t.auth; a != nil && a.SigV4 != nil {
		if err := t.sign(ctx, req, body, a.SigV4.Service, a.SigV4.Region); err != nil {
			if ctx.Err() != nil {
				return "", ctx.Err()
			}
			return "", fmt.Errorf("Error: '%s' could not sign its request (%s); nothing was sent.", t.name, quote(err.Error()))
		}
	}
	resp, err := t.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err() // the wrapper answers a timeout; a cancelled turn stops
		}
		var re *redirectError
		if errors.As(err, &re) {
			return "", fmt.Errorf("Error: '%s' was redirected %s, which is refused; the redirect was not followed. The first request may have acted.", t.name, re.why)
		}
		return "", fmt.Errorf("Error: '%s' could not reach its endpoint: %s", t.name, redact(quote(errText(err)), secret))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, int64(t.maxBytes)+1))
	if err != nil && ctx.Err() != nil {
		return "", ctx.Err()
	}
	over := len(data) > t.maxBytes
	if over {
		data = data[:t.maxBytes]
	}
	status := fmt.Sprintf("HTTP %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		detail := "an empty body"
		if len(data) > 0 {
			detail = quote(textOf(data))
		}
		if resp.StatusCode >= 300 && resp.StatusCode < 400 {
			return "", fmt.Errorf("Error: '%s' answered %s, a redirect that was not followed: %s", t.name, status, redact(detail, secret))
		}
		return "", fmt.Errorf("Error: '%s' answered %s: %s", t.name, status, redact(detail, secret))
	}
	if err != nil {
		return "", fmt.Errorf("Error: '%s' answered %s but its body could not be read: %s. It may have acted.", t.name, status, quote(errText(err)))
	}
	if over {
		return "", fmt.Errorf("Error: '%s' answered %s with a body over its %d-byte limit (maxResponseBytes); the body is not shown. It may have acted.", t.name, status, t.maxBytes)
	}
	if len(data) == 0 {
		return fmt.Sprintf("(%s, empty body)", status), nil
	}
	if !utf8.Valid(data) || bytes.IndexByte(data, 0) >= 0 {
		return "", fmt.Errorf("Error: '%s' answered %s with %d bytes of %s, which is not text; the body is not shown.", t.name, status, len(data), contentType(resp))
	}
	return hosttool.FitResult(ctx, c, redact(string(data), secret), t.maxChars), nil
}

// in is a Problem of the http block as the declaration's: its field below the tool entry.
func in(p *hostconfig.Problem) *hostconfig.Problem {
	q := *p
	q.Field = hostconfig.KindHTTP + "." + q.Field
	return &q
}

// properties are the property names of an input schema (nil when it declares none).
func properties(schema json.RawMessage) (map[string]bool, error) {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil, fmt.Errorf("its input schema is not a JSON object: %w", err)
	}
	if s.Properties == nil {
		return nil, nil
	}
	out := map[string]bool{}
	for k := range s.Properties {
		out[k] = true
	}
	return out, nil
}

// redirectError is a redirect the client refused.
type redirectError struct{ why string }

func (e *redirectError) Error() string { return "redirect refused: " + e.why }

// client is base (nil: a default client) with the redirect rule: the same scheme, host and
// port as the first request, at most MaxRedirects. base's own CheckRedirect is replaced.
func client(base *http.Client) *http.Client {
	c := &http.Client{Transport: defaultTransport()}
	if base != nil {
		copied := *base
		c = &copied
	}
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		first := via[0].URL
		switch {
		case req.URL.Scheme != first.Scheme:
			return &redirectError{why: "from " + first.Scheme + " to " + req.URL.Scheme}
		case !strings.EqualFold(req.URL.Host, first.Host):
			return &redirectError{why: "to another host (" + req.URL.Host + ")"}
		case len(via) > MaxRedirects:
			return &redirectError{why: fmt.Sprintf("more than %d times", MaxRedirects)}
		}
		return nil
	}
	return c
}

// defaultTransport is the default client's transport, shared: http.DefaultTransport's
// settings with the response headers bounded.
var defaultTransport = sync.OnceValue(func() http.RoundTripper {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxResponseHeaderBytes = maxHeaderBytes
	return tr
})

// textOf is data as text for a quote: invalid UTF-8 replaced.
func textOf(data []byte) string { return strings.ToValidUTF8(string(data), "\uFFFD") }

// quote is s on one line, bounded to quoteLimit characters.
func quote(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if hosttool.Units(s) <= quoteLimit {
		return s
	}
	return hosttool.Clip(s, quoteLimit) + "…"
}

// redact removes a secret's value from text the model will read (a server echoing the
// request's headers back).
func redact(s, secret string) string {
	if len(secret) < 4 {
		return s
	}
	return strings.ReplaceAll(s, secret, "[redacted]")
}

// errText is a transport error without the Go wrapper's method and URL prefix when there
// is one (the model knows the tool it called).
func errText(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}

func contentType(resp *http.Response) string {
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		return ct
	}
	return "an unnamed type"
}
