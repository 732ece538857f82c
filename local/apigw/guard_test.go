package apigw

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers/legacy"
)

// guarded serves a stub API behind Guard(p) on a real loopback listener; it returns the base
// URL, its port, and the requests that got through (with the headers the API saw).
func guarded(t *testing.T, p Policy) (base, port string, seen *[]http.Header) {
	t.Helper()
	var got []http.Header
	h, err := Guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Clone())
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true}`)
	}), p, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	_, port, _ = net.SplitHostPort(srv.Listener.Addr().String())
	return srv.URL, port, &got
}

type answer struct {
	status int
	code   string
	msg    string
	header http.Header
	body   []byte
}

func send(t *testing.T, method, url, host string, header map[string]string, body string) answer {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var e struct{ Error errorInfo }
	_ = json.Unmarshal(raw, &e)
	return answer{resp.StatusCode, e.Error.Code, e.Error.Message, resp.Header, raw}
}

// Origin, Sec-Fetch-Site and the body type of a browser request, on a loopback bind.
func TestGuardBrowserRequests(t *testing.T) {
	base, port, seen := guarded(t, Policy{Loopback: true})
	own := "http://127.0.0.1:" + port
	for _, c := range []struct {
		name   string
		method string
		host   string
		header map[string]string
		status int
		code   string
	}{
		{"curl -d (form encoding, no Origin)", "POST", "", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 200, ""},
		{"curl GET", "GET", "", nil, 200, ""},
		{"cross-origin text/plain POST", "POST", "", map[string]string{"Origin": "http://evil.example", "Content-Type": "text/plain"}, 403, CodeForbiddenOrigin},
		{"cross-origin form POST", "POST", "", map[string]string{"Origin": "https://evil.example", "Content-Type": "application/x-www-form-urlencoded"}, 403, CodeForbiddenOrigin},
		{"cross-origin GET", "GET", "", map[string]string{"Origin": "http://evil.example"}, 403, CodeForbiddenOrigin},
		{"Origin null", "POST", "", map[string]string{"Origin": "null", "Content-Type": "application/json"}, 403, CodeForbiddenOrigin},
		{"empty Origin", "GET", "", map[string]string{"Origin": ""}, 403, CodeForbiddenOrigin},
		{"own origin with a path", "GET", "", map[string]string{"Origin": own + "/"}, 403, CodeForbiddenOrigin},
		{"own origin with a user", "GET", "", map[string]string{"Origin": "http://me@127.0.0.1:" + port}, 403, CodeForbiddenOrigin},
		{"another port", "GET", "", map[string]string{"Origin": "http://127.0.0.1:1"}, 403, CodeForbiddenOrigin},
		{"another loopback name", "GET", "", map[string]string{"Origin": "http://localhost:" + port}, 403, CodeForbiddenOrigin},
		{"own host as a suffix", "GET", "", map[string]string{"Origin": "http://127.0.0.1:" + port + ".evil.example"}, 403, CodeForbiddenOrigin},
		{"preflight", "OPTIONS", "", map[string]string{"Origin": "http://evil.example", "Access-Control-Request-Method": "POST"}, 403, CodeForbiddenOrigin},
		{"Sec-Fetch-Site cross-site", "GET", "", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403, CodeForbiddenOrigin},
		{"Sec-Fetch-Site same-site", "GET", "", map[string]string{"Sec-Fetch-Site": "same-site"}, 403, CodeForbiddenOrigin},
		{"Sec-Fetch-Site none (typed URL)", "GET", "", map[string]string{"Sec-Fetch-Site": "none"}, 200, ""},
		{"own origin GET", "GET", "", map[string]string{"Origin": own, "Sec-Fetch-Site": "same-origin"}, 200, ""},
		{"own origin, https", "GET", "", map[string]string{"Origin": "https://127.0.0.1:" + port}, 200, ""},
		{"own origin JSON POST", "POST", "", map[string]string{"Origin": own, "Content-Type": "application/json"}, 200, ""},
		{"own origin JSON with charset", "POST", "", map[string]string{"Origin": own, "Content-Type": "Application/JSON; charset=utf-8"}, 200, ""},
		{"own origin text/plain", "POST", "", map[string]string{"Origin": own, "Content-Type": "text/plain;charset=UTF-8"}, 415, CodeUnsupportedMediaType},
		{"own origin form", "POST", "", map[string]string{"Origin": own, "Content-Type": "application/x-www-form-urlencoded"}, 415, CodeUnsupportedMediaType},
		{"own origin multipart", "POST", "", map[string]string{"Origin": own, "Content-Type": "multipart/form-data; boundary=x"}, 415, CodeUnsupportedMediaType},
		{"own origin, no Content-Type (a Blob)", "POST", "", map[string]string{"Origin": own}, 415, CodeUnsupportedMediaType},
		{"own origin, a JSON look-alike", "POST", "", map[string]string{"Origin": own, "Content-Type": "application/json-seq"}, 415, CodeUnsupportedMediaType},
		{"same-origin fetch without Origin, text/plain", "POST", "", map[string]string{"Sec-Fetch-Site": "same-origin", "Content-Type": "text/plain"}, 415, CodeUnsupportedMediaType},
		{"rebinding Host with its own Origin", "POST", "evil.example:" + port, map[string]string{"Origin": "http://evil.example:" + port, "Content-Type": "application/json"}, 421, CodeMisdirectedHost},
	} {
		before := len(*seen)
		a := send(t, c.method, base+"/v1/workflows/desk/sessions", c.host, c.header, `{"message":"hi"}`)
		if a.status != c.status || a.code != c.code {
			t.Errorf("%s: %d %s, want %d %s", c.name, a.status, a.body, c.status, c.code)
		}
		if reached := len(*seen) > before; reached != (c.status == 200) {
			t.Errorf("%s: reached the API = %v", c.name, reached)
		}
		if c.status != 200 && (a.msg == "" || a.header.Get("Content-Type") != "application/json") {
			t.Errorf("%s: refusal without a message or JSON type: %v %s", c.name, a.header, a.body)
		}
		for k := range a.header {
			if strings.HasPrefix(strings.ToLower(k), "access-control-") {
				t.Errorf("%s: answered %s (no CORS is granted)", c.name, k)
			}
		}
	}
	// several Origin headers
	req, _ := http.NewRequest("GET", base+"/v1/sessions", nil)
	req.Header.Add("Origin", own)
	req.Header.Add("Origin", "http://evil.example")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Errorf("two Origins: %d", resp.StatusCode)
	}
}

// The Host check: loopback names on a loopback bind, --allow-host names, IP literals on a
// non-loopback bind, and nothing a DNS-rebinding page could use.
func TestGuardHosts(t *testing.T) {
	base, port, _ := guarded(t, Policy{Loopback: true, AllowHosts: []string{"Dev.Example", "box.example:9000", "[fd00::7]"}})
	for host, want := range map[string]int{
		"127.0.0.1:" + port: 200, "127.0.0.1": 200, "127.8.9.10:" + port: 200,
		"localhost:" + port: 200, "LOCALHOST:" + port: 200, "localhost": 200,
		"[::1]:" + port: 200, "[::1]": 200, "[0:0:0:0:0:0:0:1]:" + port: 200, "[::ffff:127.0.0.1]:" + port: 200,
		"dev.example:" + port: 200, "dev.example": 200, "DEV.example:443": 200,
		"box.example:9000": 200, "box.example:" + port: 421, "box.example": 421,
		"[fd00::7]:" + port: 200,
		// DNS rebinding and look-alikes
		"evil.example:" + port: 421, "localhost.:" + port: 421, "localhost.": 421, "dev.example.:" + port: 421,
		"localhost.evil.example:" + port: 421, "127.0.0.1.nip.io:" + port: 421, "evil-localhost:" + port: 421,
		"sub.dev.example:" + port: 421, "0.0.0.0:" + port: 421, "[::]:" + port: 421, "192.0.2.7:" + port: 421,
		"2130706433:" + port: 421, "0x7f.0.0.1:" + port: 421, "127.000.000.001:" + port: 421,
		"localhost:" + port + ":1": 421, "[::1]x": 421, "[::1": 421, "localhost:": 421, "localhost:99999": 421, "localhost:+80": 421,
	} {
		a := send(t, "GET", base+"/v1/sessions", host, nil, "")
		if a.status != want {
			t.Errorf("Host %s: %d %s, want %d", host, a.status, a.body, want)
		}
		if want == 421 && (a.code != CodeMisdirectedHost || !strings.Contains(a.msg, "--allow-host")) {
			t.Errorf("Host %s: %s", host, a.body)
		}
	}
	// an allowed name's own origin is accepted with it
	if a := send(t, "POST", base+"/x", "dev.example:"+port, map[string]string{"Origin": "http://dev.example:" + port, "Content-Type": "application/json"}, "{}"); a.status != 200 {
		t.Errorf("dev.example's own origin: %d %s", a.status, a.body)
	}
	if a := send(t, "POST", base+"/x", "dev.example", map[string]string{"Origin": "https://dev.example", "Content-Type": "application/json"}, "{}"); a.status != 200 {
		t.Errorf("dev.example behind a TLS proxy: %d %s", a.status, a.body)
	}

	// not loopback-only: any IP literal (it cannot be rebound), names as before
	base, port, _ = guarded(t, Policy{Token: strings.Repeat("t", MinTokenLength)})
	auth := map[string]string{"Authorization": "Bearer " + strings.Repeat("t", MinTokenLength)}
	for host, want := range map[string]int{"192.0.2.7:" + port: 200, "[2001:db8::1]:" + port: 200, "localhost:" + port: 200, "evil.example:" + port: 421} {
		if a := send(t, "GET", base+"/v1/sessions", host, auth, ""); a.status != want {
			t.Errorf("non-loopback, Host %s: %d %s, want %d", host, a.status, a.body, want)
		}
	}
}

// The bearer token: required on every route when set, in the Authorization header only,
// compared as a whole, and never handed to the API.
func TestGuardToken(t *testing.T) {
	token := NewToken()
	if len(token) < 43 || NewToken() == token {
		t.Fatalf("NewToken = %q", token)
	}
	base, _, seen := guarded(t, Policy{Loopback: true, Token: token})
	for _, c := range []struct {
		name, path string
		header     map[string]string
		status     int
	}{
		{"no token", "/v1/sessions", nil, 401},
		{"wrong token", "/v1/sessions", map[string]string{"Authorization": "Bearer " + NewToken()}, 401},
		{"a prefix of it", "/v1/sessions", map[string]string{"Authorization": "Bearer " + token[:len(token)-1]}, 401},
		{"it and more", "/v1/sessions", map[string]string{"Authorization": "Bearer " + token + "x"}, 401},
		{"another scheme", "/v1/sessions", map[string]string{"Authorization": "Basic " + token}, 401},
		{"no scheme", "/v1/sessions", map[string]string{"Authorization": token}, 401},
		{"in the query", "/v1/sessions?access_token=" + token, nil, 401},
		{"in the query, token=", "/v1/sessions/s1/messages?after=0&token=" + token, nil, 401},
		{"a POST without it", "/v1/sessions/s1/decision", map[string]string{"Content-Type": "application/json"}, 401},
		{"right", "/v1/sessions", map[string]string{"Authorization": "Bearer " + token}, 200},
		{"scheme in any case", "/v1/sessions/s1", map[string]string{"Authorization": "bearer  " + token}, 200},
		{"right, on a POST", "/v1/sessions/s1/decision", map[string]string{"Authorization": "Bearer " + token}, 200},
	} {
		before := len(*seen)
		a := send(t, "POST", base+c.path, "", c.header, "{}")
		if a.status != c.status {
			t.Errorf("%s: %d %s, want %d", c.name, a.status, a.body, c.status)
			continue
		}
		if c.status == 401 {
			if a.code != CodeUnauthorized || !strings.HasPrefix(a.header.Get("WWW-Authenticate"), "Bearer ") || strings.Contains(string(a.body), token) {
				t.Errorf("%s: %v %s", c.name, a.header, a.body)
			}
			if strings.Contains(c.path, "token=") && !strings.Contains(a.msg, "query string") {
				t.Errorf("%s: the message does not say the query is not read: %s", c.name, a.msg)
			}
			if len(*seen) != before {
				t.Errorf("%s: reached the API", c.name)
			}
		} else if got := (*seen)[len(*seen)-1]; got.Get("Authorization") != "" {
			t.Errorf("%s: the API saw the token: %v", c.name, got)
		}
	}
	// a foreign page that somehow holds the token is still refused
	if a := send(t, "POST", base+"/x", "", map[string]string{"Authorization": "Bearer " + token, "Origin": "http://evil.example"}, "{}"); a.status != 403 {
		t.Errorf("token with a foreign Origin: %d", a.status)
	}
}

// Policies that cannot be served are refused before anything listens.
func TestGuardPolicyChecks(t *testing.T) {
	ok := http.NotFoundHandler()
	for _, p := range []Policy{
		{Loopback: false},
		{Loopback: true, Token: "short"},
		{Loopback: true, Token: strings.Repeat("x", MinTokenLength) + " y"},
		{Loopback: true, AllowHosts: []string{"http://dev.example"}},
		{Loopback: true, AllowHosts: []string{"dev.example/path"}},
		{Loopback: true, AllowHosts: []string{"*.example"}},
		{Loopback: true, AllowHosts: []string{""}},
		{Loopback: true, AllowHosts: []string{"dev.example:http"}},
		{Loopback: true, AllowHosts: []string{"fd00::7"}},
		{Loopback: true, AllowHosts: []string{"dev example"}},
	} {
		if _, err := Guard(ok, p, nil); err == nil {
			t.Errorf("Guard(%+v) took it", p)
		}
	}
	for _, p := range []Policy{{Loopback: true}, {Loopback: true, AllowHosts: []string{"dev.example", "192.0.2.7:8080", "[fd00::7]:80"}}, {Token: NewToken()}} {
		if _, err := Guard(ok, p, nil); err != nil {
			t.Errorf("Guard(%+v): %v", p, err)
		}
	}
	if !IsLoopback(&net.TCPAddr{IP: net.IPv6loopback}) || !IsLoopback(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}) ||
		IsLoopback(&net.TCPAddr{IP: net.IPv4zero}) || IsLoopback(&net.TCPAddr{IP: net.IPv6unspecified}) {
		t.Error("IsLoopback")
	}
}

// Every refusal of the guard is a documented answer of docs/openapi.yaml, on the read and
// the write routes alike.
func TestGuardRefusalsConformToTheOpenAPIDocument(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromFile("../../docs/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatal(err)
	}
	router, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	token := NewToken()
	base, port, _ := guarded(t, Policy{Loopback: true, Token: token})
	auth := "Bearer " + token
	for _, c := range []struct {
		name, method, path, host string
		header                   map[string]string
		status                   int
	}{
		{"421", "GET", "/v1/sessions/s-1/messages", "evil.example:" + port, nil, 421},
		{"421", "POST", "/v1/workflows/desk/sessions", "evil.example:" + port, nil, 421},
		{"401", "GET", "/v1/sessions", "", nil, 401},
		{"401", "POST", "/v1/sessions/s-1/decision", "", map[string]string{"Authorization": "Bearer nope"}, 401},
		{"403", "GET", "/v1/sessions/s-1/events", "", map[string]string{"Authorization": auth, "Origin": "http://evil.example"}, 403},
		{"403", "POST", "/v1/sessions/s-1/deliveries", "", map[string]string{"Authorization": auth, "Origin": "null"}, 403},
		{"415", "POST", "/v1/workflows/desk/sessions/s-1/turns", "", map[string]string{"Authorization": auth, "Origin": "http://127.0.0.1:" + port, "Content-Type": "text/plain"}, 415},
	} {
		a := send(t, c.method, base+c.path, c.host, c.header, "{}")
		if a.status != c.status {
			t.Fatalf("%s %s %s: %d %s", c.name, c.method, c.path, a.status, a.body)
		}
		hreq, _ := http.NewRequest(c.method, "http://127.0.0.1:8080"+c.path, nil)
		rt, params, err := router.FindRoute(hreq)
		if err != nil {
			t.Fatalf("%s %s: not in the document: %v", c.method, c.path, err)
		}
		in := &openapi3filter.RequestValidationInput{Request: hreq, PathParams: params, Route: rt}
		// IncludeResponseStatus: a status the operation does not document fails
		out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: a.status, Header: a.header,
			Body: io.NopCloser(bytes.NewReader(a.body)), Options: &openapi3filter.Options{IncludeResponseStatus: true}}
		if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
			t.Errorf("%s %s → %d does not conform: %v\n%s", c.method, c.path, a.status, err, a.body)
		}
	}
}

// zeros is n bytes of '0', read lazily.
type zeros struct{ n int64 }

func (z *zeros) Read(p []byte) (int, error) {
	if z.n <= 0 {
		return 0, io.EOF
	}
	k := min(int64(len(p)), z.n)
	for i := range p[:k] {
		p[i] = '0'
	}
	z.n -= k
	return int(k), nil
}

// A body over MaxBodyBytes is refused at the front door in the API's error shape (413
// PayloadTooLargeError) — by its Content-Length before a byte is read, or once a chunked
// body passes the limit — where the gateway's emulation alone answers API Gateway's own
// {"message"}; a body within the limit reaches the handler whole, chunked or not.
func TestGuardRefusesABodyOverTheLimitInTheErrorShape(t *testing.T) {
	var got []int
	api := Handler(func(_ context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		b, _ := base64.StdEncoding.DecodeString(ev.Body)
		got = append(got, len(b))
		return events.APIGatewayV2HTTPResponse{StatusCode: 200, Body: `{"ok":true}`}, nil
	}, nil)
	h, err := Guard(api, Policy{Loopback: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	post := func(size int64, chunked bool) *httptest.ResponseRecorder {
		z := &zeros{size}
		req := httptest.NewRequest("POST", "http://127.0.0.1/v1/workflows/desk/sessions", z)
		req.ContentLength = size
		if chunked {
			req.ContentLength = -1
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code == http.StatusRequestEntityTooLarge && !chunked && z.n != size {
			t.Errorf("%d bytes with a Content-Length: %d of them read before the refusal", size, size-z.n)
		}
		return rec
	}
	for _, c := range []struct {
		size    int64
		chunked bool
	}{{50 << 20, false}, {MaxBodyBytes + 1, false}, {MaxBodyBytes + 1, true}, {50 << 20, true}} {
		rec := post(c.size, c.chunked)
		var e struct{ Error errorInfo }
		if err := json.Unmarshal(rec.Body.Bytes(), &e); rec.Code != http.StatusRequestEntityTooLarge || err != nil ||
			e.Error.Code != CodePayloadTooLarge || e.Error.Details["maxBytes"] != float64(MaxBodyBytes) || rec.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%d bytes (chunked %v) = %d %s", c.size, c.chunked, rec.Code, rec.Body)
		}
	}
	if len(got) != 0 {
		t.Fatalf("a refused body reached the handler: %v", got)
	}
	for _, chunked := range []bool{false, true} {
		if rec := post(MaxBodyBytes, chunked); rec.Code != 200 || len(got) == 0 || got[len(got)-1] != MaxBodyBytes {
			t.Errorf("a body of exactly the limit (chunked %v) = %d %s, the handler saw %v", chunked, rec.Code, rec.Body, got)
		}
	}
	// the emulation alone is API Gateway's answer, unchanged
	rec := httptest.NewRecorder()
	api.ServeHTTP(rec, httptest.NewRequest("POST", "http://127.0.0.1/v1/workflows/desk/sessions", &zeros{MaxBodyBytes + 1}))
	if rec.Code != http.StatusRequestEntityTooLarge || rec.Body.String() != `{"message":"Request Entity Too Large"}` {
		t.Errorf("the gateway's own 413 = %d %s", rec.Code, rec.Body)
	}
}

// RD22-19: a same-origin browser request without a body (a DELETE from the page; Content-Length
// 0 or none) has no type to check and passes; one with a body is still held to JSON.
func TestGuardBodylessBrowserRequest(t *testing.T) {
	base, port, seen := guarded(t, Policy{Loopback: true})
	own := "http://127.0.0.1:" + port
	for _, c := range []struct {
		name, method, body string
		header             map[string]string
		status             int
	}{
		{"DELETE, no body, no Content-Type", "DELETE", "", map[string]string{"Origin": own, "Sec-Fetch-Site": "same-origin"}, 200},
		{"DELETE from a same-origin fetch without Origin", "DELETE", "", map[string]string{"Sec-Fetch-Site": "same-origin"}, 200},
		{"DELETE with a text body", "DELETE", "x", map[string]string{"Origin": own, "Content-Type": "text/plain"}, 415},
		{"POST with a body and no type", "POST", `{"message":"hi"}`, map[string]string{"Origin": own}, 415},
		{"cross-origin DELETE, no body", "DELETE", "", map[string]string{"Origin": "http://evil.example"}, 403},
	} {
		before := len(*seen)
		a := send(t, c.method, base+"/v1/sessions/s-1", "", c.header, c.body)
		if a.status != c.status {
			t.Errorf("%s: %d %s, want %d", c.name, a.status, a.body, c.status)
		}
		if reached := len(*seen) > before; reached != (c.status == 200) {
			t.Errorf("%s: reached the API = %v", c.name, reached)
		}
	}
}
