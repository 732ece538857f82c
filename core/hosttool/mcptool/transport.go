package mcptool

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/archmax-ai/archmax/core/hostconfig"
	"github.com/archmax-ai/archmax/core/hosttool"
)

// MaxRedirects bounds the redirects a request follows (same scheme, host and port only).
const MaxRedirects = 5

// MaxResponseBytes bounds one HTTP response body read from the server (an SSE stream or a
// JSON answer): past it the call fails rather than fill the function's memory.
const MaxResponseBytes = 32 << 20

// maxHeaderBytes bounds the response headers of the default client.
const maxHeaderBytes = 64 << 10

// httpClient is the server's HTTP client: Deps.HTTP (or a default one) with the redirect
// rule and a transport that authenticates every request — initialize, the listing, each
// call, the closing DELETE — and bounds every response body.
func httpClient(srv hostconfig.MCPServer, deps hosttool.Deps) (*http.Client, *authTransport, error) {
	auth := srv.Auth
	if ps := hostconfig.AuthProblems(auth); len(ps) > 0 {
		// the parser's own check of the block: a file `archmax validate` passes builds here
		p := *ps[0]
		p.Field = hostconfig.KindMCP + ".auth" + strings.TrimSuffix("."+p.Field, ".")
		return nil, nil, &p
	}
	if auth != nil {
		switch {
		case auth.SigV4 != nil:
			if deps.Sign == nil {
				return nil, nil, errors.New("auth sigv4 needs AWS credentials (no signer in this host)")
			}
		case auth.Header != "":
			if deps.Secret == nil {
				return nil, nil, errors.New("auth header needs a secret resolver (none in this host)")
			}
		default:
			auth = nil
		}
	}
	c := &http.Client{Transport: defaultTransport()}
	if deps.HTTP != nil {
		copied := *deps.HTTP
		c = &copied
	}
	c.CheckRedirect = sameOrigin
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	t := &authTransport{base: base, auth: auth, deps: deps}
	c.Transport = t
	return c, t, nil
}

// defaultTransport is the default client's transport, one per server (closing its idle
// connections touches no other server's): http.DefaultTransport's settings with the
// response headers bounded.
func defaultTransport() http.RoundTripper {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxResponseHeaderBytes = maxHeaderBytes
	return tr
}

// sameOrigin follows a redirect only to the first request's scheme, host and port, at most
// MaxRedirects times (Deps.HTTP's own rule is replaced).
func sameOrigin(req *http.Request, via []*http.Request) error {
	first := via[0].URL
	switch {
	case req.URL.Scheme != first.Scheme:
		return fmt.Errorf("refused a redirect from %s to %s", first.Scheme, req.URL.Scheme)
	case !strings.EqualFold(req.URL.Host, first.Host):
		return fmt.Errorf("refused a redirect to another host (%s)", req.URL.Host)
	case len(via) > MaxRedirects:
		return fmt.Errorf("refused a redirect: more than %d", MaxRedirects)
	}
	return nil
}

// authTransport authenticates each request: a SigV4 signature over its body, or the
// secret's header.
type authTransport struct {
	base http.RoundTripper
	auth *hostconfig.Auth
	deps hosttool.Deps
	// secret is the header secret's value last resolved (for redaction).
	secret atomic.Pointer[string]
}

// redact replaces the header secret's value by [redacted] in text the model will read (a
// server echoing the request's headers back).
func (t *authTransport) redact(s string) string {
	if p := t.secret.Load(); p != nil && len(*p) >= 4 {
		return strings.ReplaceAll(s, *p, "[redacted]")
	}
	return s
}

// authError: a request's authentication could not be prepared; it was not sent.
type authError struct{ err error }

func (e *authError) Error() string { return e.err.Error() }
func (e *authError) Unwrap() error { return e.err }

func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	out := req.Clone(ctx)
	switch {
	case t.auth == nil:
	case t.auth.SigV4 != nil:
		body, err := readBody(req)
		if err != nil {
			return nil, &authError{fmt.Errorf("could not read its request to sign it: %w", err)}
		}
		setBody(out, body)
		if err := t.deps.Sign(ctx, out, body, t.auth.SigV4.Service, t.auth.SigV4.Region); err != nil {
			return nil, &authError{fmt.Errorf("could not sign its request: %w", err)}
		}
	default:
		v, err := t.deps.Secret(ctx, t.auth)
		switch {
		case err != nil:
			closeBody(req)
			return nil, &authError{fmt.Errorf("could not read its credentials: %w", err)}
		case v == "":
			closeBody(req)
			return nil, &authError{errors.New("its credentials are empty")}
		case headerProblem(t.auth.Prefix + v):
			closeBody(req)
			return nil, &authError{errors.New("its credentials cannot be a header value (a line break or control character)")}
		}
		t.secret.Store(&v)
		out.Header.Set(t.auth.Header, t.auth.Prefix+v)
	}
	resp, err := t.base.RoundTrip(out)
	if err == nil {
		resp.Body = &boundedBody{r: resp.Body, left: MaxResponseBytes}
	}
	return resp, err
}

// headerProblem: s holds CR, LF or another control character (a tab is allowed).
func headerProblem(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' && c != '\t' || c == 0x7f {
			return true
		}
	}
	return false
}

// boundedBody fails a read past MaxResponseBytes.
type boundedBody struct {
	r    io.ReadCloser
	left int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, fmt.Errorf("the server's response is over %d bytes", MaxResponseBytes)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *boundedBody) Close() error { return b.r.Close() }

// CloseIdleConnections closes the base transport's pooled connections
// (http.Client.CloseIdleConnections reaches it through this).
func (t *authTransport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

func readBody(req *http.Request) ([]byte, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	defer req.Body.Close()
	return io.ReadAll(req.Body)
}

func setBody(req *http.Request, body []byte) {
	req.ContentLength = int64(len(body))
	if len(body) == 0 {
		req.Body, req.GetBody = http.NoBody, nil
		return
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}
