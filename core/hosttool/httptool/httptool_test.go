package httptool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/archmax-ai/archmax/core/hostconfig"
	"github.com/archmax-ai/archmax/core/hosttool"
	"github.com/archmax-ai/archmax/core/hosttool/secrets"
	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/local/secretsfake"
)

// seen is one request the peer received.
type seen struct {
	Method, RawPath, RawQuery string
	Header                    http.Header
	Body                      string
	ID                        string // the {id} path value as the server decodes it
}

// peer is an httptest TLS server recording every request.
type peer struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []seen
}

func (p *peer) requests() []seen {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]seen(nil), p.reqs...)
}

func newPeer(t *testing.T, h http.HandlerFunc) *peer {
	p := &peer{}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s := seen{Method: r.Method, RawPath: r.URL.EscapedPath(), RawQuery: r.URL.RawQuery, Header: r.Header.Clone(), Body: string(body)}
		if parts := strings.Split(r.URL.EscapedPath(), "/"); len(parts) > 3 {
			s.ID, _ = url.PathUnescape(parts[3])
		}
		p.mu.Lock()
		p.reqs = append(p.reqs, s)
		p.mu.Unlock()
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		h(w, r)
	})
	p.Server = httptest.NewTLSServer(mux)
	t.Cleanup(p.Close)
	return p
}

// host is the peer's host:port.
func (p *peer) host() string { return strings.TrimPrefix(p.URL, "https://") }

const noteSchema = `{"type":"object","properties":{"id":{"type":"string"},"lang":{"type":"string"},"note":{"type":"string"},"file":{"type":"string"}},"required":["id"],"additionalProperties":false}`

// secretDeps are the deps of the assembly: the peer's client, and secrets read through the
// real SDK from the Secrets Manager wire fake.
func secretDeps(t *testing.T, p *peer) (hosttool.Deps, *secretsfake.Fake) {
	sm := secretsfake.New()
	srv := httptest.NewServer(sm)
	t.Cleanup(srv.Close)
	client := secretsmanager.New(secretsmanager.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", "")})
	return hosttool.Deps{HTTP: p.Client(), Secret: secrets.New(client).Resolve}, sm
}

func noteDecl(p *peer) hostconfig.ToolDecl {
	return hostconfig.ToolDecl{Kind: hostconfig.KindHTTP, Name: "add_note", Description: "Adds a note to an order.", Input: json.RawMessage(noteSchema),
		HTTP: &hostconfig.HTTPTool{Method: "POST", URL: "https://" + p.host() + "/v1/orders/{id}/notes?lang={lang}&source=agent",
			Headers: map[string]string{"X-Api-Version": "2"},
			Auth:    &hostconfig.Auth{Header: "Authorization", Prefix: "Bearer ", Secret: "orders/api", SecretKey: "token"}}}
}

func build(t *testing.T, deps hosttool.Deps, decls ...hostconfig.ToolDecl) []session.HostTool {
	t.Helper()
	tools, err := hosttool.Build(context.Background(), &hostconfig.Config{Tools: decls}, map[string]hosttool.Builder{hostconfig.KindHTTP: New}, deps)
	if err != nil {
		t.Fatal(err)
	}
	return tools
}

func call(args map[string]any) session.HostCall {
	return session.HostCall{SessionID: "s-1", State: "work", CallID: "tooluse_3", Args: args, IdempotencyKey: "s-1/t-9/tooluse_3"}
}

// One request through a TLS peer with a secret from the Secrets Manager wire fake: the URL
// filled segment by segment, the unused arguments as the JSON body, the fixed headers, the
// Idempotency-Key and the secret's header; the JSON answer passed as text. Hostile
// arguments and a secret with a line break send nothing.
func TestRequestWithASecret(t *testing.T) {
	p := newPeer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"ok": true, "auth": "`+r.Header.Get("Authorization")+`"}`)
	})
	deps, sm := secretDeps(t, p)
	sm.PutString("orders/api", `{"token":"tok-9f8e7d6c"}`)
	h := build(t, deps, noteDecl(p))[0].Handler
	text, err := h(context.Background(), call(map[string]any{"id": "ORD 7?#@x", "lang": "en&admin=1", "note": "call back"}))
	if err != nil || text != `{"ok": true, "auth": "Bearer [redacted]"}` {
		t.Fatalf("result = %q, %v", text, err)
	}
	rs := p.requests()
	if len(rs) != 1 {
		t.Fatalf("requests = %+v", rs)
	}
	r := rs[0]
	if r.Method != "POST" || r.RawPath != "/v1/orders/ORD%207%3F%23%40x/notes" || r.ID != "ORD 7?#@x" || r.RawQuery != "lang=en%26admin%3D1&source=agent" {
		t.Errorf("request line: %s %s ? %s (id %q)", r.Method, r.RawPath, r.RawQuery, r.ID)
	}
	if r.Body != `{"note":"call back"}` || r.Header.Get("Content-Type") != "application/json" {
		t.Errorf("body %q (%s)", r.Body, r.Header.Get("Content-Type"))
	}
	if r.Header.Get("Authorization") != "Bearer tok-9f8e7d6c" || r.Header.Get("X-Api-Version") != "2" || r.Header.Get(IdempotencyHeader) != "s-1/t-9/tooluse_3" {
		t.Errorf("headers: %v", r.Header)
	}

	// hostile arguments: nothing leaves the process
	for _, id := range []string{"../admin", "..", "%2e%2e", "a/b", "a%2fb", "x\r\nX-Evil: 1"} {
		if _, err := h(context.Background(), call(map[string]any{"id": id})); err == nil || !strings.Contains(err.Error(), "Nothing was sent.") {
			t.Errorf("id %q: %v", id, err)
		}
	}
	bad := call(map[string]any{"id": "ORD-1"})
	bad.IdempotencyKey = "s-1/t-1/x\r\nX-Evil: 1"
	if _, err := h(context.Background(), bad); err == nil || !strings.Contains(err.Error(), "has a line break") {
		t.Errorf("a key with CR/LF: %v", err)
	}
	sm.PutString("crlf", "tok\r\nX-Evil: 1")
	d := noteDecl(p)
	d.Name = "add_note_crlf"
	d.HTTP.Auth = &hostconfig.Auth{Header: "X-Token", Secret: "crlf"}
	if _, err := build(t, deps, d)[0].Handler(context.Background(), call(map[string]any{"id": "ORD-1"})); err == nil ||
		!strings.Contains(err.Error(), "cannot be a header value (the secret has a line break (CR or LF)); nothing was sent") || strings.Contains(err.Error(), "tok") {
		t.Errorf("a secret with CR/LF: %v", err)
	}
	d.HTTP.Auth = &hostconfig.Auth{Header: "X-Token", Secret: "missing"}
	if _, err := build(t, deps, d)[0].Handler(context.Background(), call(map[string]any{"id": "ORD-1"})); err == nil ||
		!strings.Contains(err.Error(), "could not read its credentials") || !strings.Contains(err.Error(), "ResourceNotFoundException") {
		t.Errorf("a missing secret: %v", err)
	}
	if n := len(p.requests()); n != 1 {
		t.Errorf("refused calls reached the peer: %d requests", n)
	}
	if n := len(sm.Requests()); n != 3 {
		t.Errorf("the secret was not cached: %d GetSecretValue", n)
	}
}

// Answers: errors quote a bounded part of the body; a huge body, a binary body, a redirect
// to another host (or to http) and a slow endpoint are error results; a same-host redirect
// is followed; a GET sends no body.
func TestAnswers(t *testing.T) {
	other := newPeer(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "other host") })
	var p *peer
	p = newPeer(t, func(w http.ResponseWriter, r *http.Request) {
		switch id := strings.Split(r.URL.Path, "/")[3]; id {
		case "ok":
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			fmt.Fprint(w, "plain text é")
		case "missing":
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"message":"no such order"}`+strings.Repeat(" pad", 2000))
		case "boom":
			w.WriteHeader(http.StatusBadGateway)
		case "huge":
			w.Write([]byte(strings.Repeat("x", 5000)))
		case "binary":
			w.Header().Set("Content-Type", "image/png")
			w.Write([]byte{0x89, 'P', 'N', 'G', 0, 0xff})
		case "empty":
			w.WriteHeader(http.StatusNoContent)
		case "away":
			http.Redirect(w, r, other.URL+"/v1/orders/stolen", http.StatusFound)
		case "downgrade":
			http.Redirect(w, r, "http://"+p.host()+"/v1/orders/ok", http.StatusTemporaryRedirect)
		case "moved":
			http.Redirect(w, r, "/v1/orders/ok", http.StatusMovedPermanently)
		case "loop":
			http.Redirect(w, r, "/v1/orders/loop", http.StatusFound)
		case "notmod":
			w.WriteHeader(http.StatusNotModified)
		case "slow":
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		}
	})
	d := hostconfig.ToolDecl{Kind: hostconfig.KindHTTP, Name: "get_order", Description: "Gets an order.", Input: json.RawMessage(noteSchema),
		Timeout: 300 * time.Millisecond,
		HTTP:    &hostconfig.HTTPTool{Method: "GET", URL: "https://" + p.host() + "/v1/orders/{id}", MaxResponseBytes: 4096}}
	h := build(t, hosttool.Deps{HTTP: p.Client()}, d)[0].Handler
	get := func(id string) (string, error) { return h(context.Background(), call(map[string]any{"id": id})) }
	if text, err := get("ok"); err != nil || text != "plain text é" {
		t.Errorf("ok: %q %v", text, err)
	}
	if text, err := get("moved"); err != nil || text != "plain text é" {
		t.Errorf("a same-host redirect: %q %v", text, err)
	}
	if text, err := get("empty"); err != nil || text != "(HTTP 204 No Content, empty body)" {
		t.Errorf("empty: %q %v", text, err)
	}
	for id, want := range map[string]string{
		"missing":   `Error: 'get_order' answered HTTP 404 Not Found: {"message":"no such order"} pad pad`,
		"boom":      "Error: 'get_order' answered HTTP 502 Bad Gateway: an empty body",
		"huge":      "Error: 'get_order' answered HTTP 200 OK with a body over its 4096-byte limit (maxResponseBytes); the body is not shown. It may have acted.",
		"binary":    "Error: 'get_order' answered HTTP 200 OK with 6 bytes of image/png, which is not text; the body is not shown.",
		"away":      "Error: 'get_order' was redirected to another host (" + other.host() + "), which is refused; the redirect was not followed.",
		"downgrade": "Error: 'get_order' was redirected from https to http, which is refused",
		"loop":      "Error: 'get_order' was redirected more than 5 times, which is refused",
		"notmod":    "Error: 'get_order' answered HTTP 304 Not Modified, a redirect that was not followed",
	} {
		_, err := get(id)
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: %v\nwant %s", id, err, want)
		}
	}
	if _, err := get("missing"); err == nil || hosttool.Units(err.Error()) > quoteLimit+100 || !strings.HasSuffix(err.Error(), "…") {
		t.Errorf("an error body is quoted bounded: %d characters", len(err.Error()))
	}
	start := time.Now()
	_, err := get("slow")
	var te *hosttool.TimeoutError
	if !errors.As(err, &te) || time.Since(start) > 3*time.Second {
		t.Errorf("slow: %v after %s", err, time.Since(start))
	}
	if n := len(other.requests()); n != 0 {
		t.Errorf("the other host received %d requests", n)
	}
	for _, r := range p.requests() {
		if r.Method != "GET" || r.Body != "" || r.Header.Get(IdempotencyHeader) != "s-1/t-9/tooluse_3" {
			t.Errorf("request %+v", r)
		}
	}
}

// SigV4: the request is signed for the declared service and region with the host's
// credentials; the peer checks the signature by signing the same request again.
func TestSigV4(t *testing.T) {
	creds := credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "session-token")
	sign := SigV4Signer(aws.Config{Region: "us-east-1", Credentials: aws.NewCredentialsCache(creds)})
	verdict := make(chan error, 1)
	p := newPeer(t, func(w http.ResponseWriter, r *http.Request) {
		verdict <- verify(r, "execute-api", "eu-west-1")
		fmt.Fprint(w, `{"ok":true}`)
	})
	d := noteDecl(p)
	d.HTTP.Auth = &hostconfig.Auth{SigV4: &hostconfig.SigV4{Service: "execute-api", Region: "eu-west-1"}}
	h := build(t, hosttool.Deps{HTTP: p.Client(), Sign: sign}, d)[0].Handler
	if text, err := h(context.Background(), call(map[string]any{"id": "ORD-1", "note": "x"})); err != nil || text != `{"ok":true}` {
		t.Fatalf("result %q %v", text, err)
	}
	r := p.requests()[0]
	if auth := r.Header.Get("Authorization"); !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/") || !strings.Contains(auth, "/eu-west-1/execute-api/aws4_request") ||
		!strings.Contains(auth, "idempotency-key") || r.Header.Get("X-Amz-Security-Token") != "session-token" {
		t.Errorf("headers %v", r.Header)
	}
	if err := <-verdict; err != nil {
		t.Error(err)
	}
	if _, err := New(context.Background(), d, hosttool.Deps{}); err == nil || !strings.Contains(err.Error(), "Deps.Sign") {
		t.Errorf("sigv4 without a signer: %v", err)
	}
}

// verify signs a copy of r (its signed headers only, at its X-Amz-Date) and compares.
func verify(r *http.Request, service, region string) error {
	auth := r.Header.Get("Authorization")
	_, signed, _ := strings.Cut(auth, "SignedHeaders=")
	signed, _, _ = strings.Cut(signed, ",")
	body, _ := io.ReadAll(r.Body)
	u := *r.URL
	u.Scheme, u.Host = "https", r.Host
	cp, _ := http.NewRequest(r.Method, u.String(), strings.NewReader(string(body)))
	for _, h := range strings.Split(signed, ";") {
		if h != "host" && h != "x-amz-date" && h != "x-amz-security-token" {
			cp.Header.Set(h, r.Header.Get(h))
		}
	}
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return err
	}
	s := sigV4Signer(aws.Config{Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "session-token")},
		func() time.Time { return at })
	if err := s(context.Background(), cp, body, service, region); err != nil {
		return err
	}
	if cp.Header.Get("Authorization") != auth {
		return fmt.Errorf("signature mismatch:\n got %s\nwant %s", auth, cp.Header.Get("Authorization"))
	}
	return nil
}

// Build refusals: what the file may not say.
func TestBuildRefusals(t *testing.T) {
	base := func() hostconfig.ToolDecl {
		return hostconfig.ToolDecl{Kind: hostconfig.KindHTTP, Name: "t", Input: json.RawMessage(noteSchema),
			HTTP: &hostconfig.HTTPTool{Method: "GET", URL: "https://api.example.com/v1/orders/{id}"}}
	}
	deps := hosttool.Deps{Secret: func(context.Context, *hostconfig.Auth) (string, error) { return "x", nil }}
	for name, c := range map[string]struct {
		edit func(*hostconfig.HTTPTool)
		want string
	}{
		"method":         {func(h *hostconfig.HTTPTool) { h.Method = "TRACE" }, "is not one of"},
		"get body":       {func(h *hostconfig.HTTPTool) { h.Body = "json" }, "a GET has no body"},
		"body kind":      {func(h *hostconfig.HTTPTool) { h.Method, h.Body = "POST", "xml" }, "not json or none"},
		"authorization":  {func(h *hostconfig.HTTPTool) { h.Headers = map[string]string{"authorization": "Bearer x"} }, "carries credentials, which are never written in the host file"},
		"host header":    {func(h *hostconfig.HTTPTool) { h.Headers = map[string]string{"Host": "evil.example"} }, "set by the transport"},
		"idempotency":    {func(h *hostconfig.HTTPTool) { h.Headers = map[string]string{"Idempotency-Key": "x"} }, "set by the transport"},
		"crlf value":     {func(h *hostconfig.HTTPTool) { h.Headers = map[string]string{"X-A": "a\r\nX-B: b"} }, "line break"},
		"bad name":       {func(h *hostconfig.HTTPTool) { h.Headers = map[string]string{"X A": "a"} }, "not a header name"},
		"no auth kind":   {func(h *hostconfig.HTTPTool) { h.Auth = &hostconfig.Auth{} }, "an auth block is 'sigv4: { service }' or 'header'"},
		"secret and env": {func(h *hostconfig.HTTPTool) { h.Auth = &hostconfig.Auth{Header: "X-K", Secret: "a", Env: "B"} }, "exactly one of 'secret'"},
		"auth dup header": {func(h *hostconfig.HTTPTool) {
			h.Auth = &hostconfig.Auth{Header: "X-K", Env: "B"}
			h.Headers = map[string]string{"x-k": "1"}
		}, "is set by 'auth'"},
		"auth on host":     {func(h *hostconfig.HTTPTool) { h.Auth = &hostconfig.Auth{Header: "Host", Env: "B"} }, "not a header a secret can go in"},
		"sigv4 no service": {func(h *hostconfig.HTTPTool) { h.Auth = &hostconfig.Auth{SigV4: &hostconfig.SigV4{}} }, "'sigv4.service' is required"},
		"http url":         {func(h *hostconfig.HTTPTool) { h.URL = "http://api.example.com/{id}" }, "http:// only to localhost"},
	} {
		d := base()
		c.edit(d.HTTP)
		if _, err := New(context.Background(), d, deps); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
	d := base()
	d.HTTP.Auth = &hostconfig.Auth{Header: "X-K", Env: "B"}
	if _, err := New(context.Background(), d, hosttool.Deps{}); err == nil || !strings.Contains(err.Error(), "Deps.Secret") {
		t.Errorf("a header secret without a resolver: %v", err)
	}
}
