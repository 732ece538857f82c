package apigw

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// The codes of the guard's refusals, in the API's error shape
// {"error": {"code", "message", "details"}}. API Gateway itself never answers them: they are
// the front door of `archmax serve`, which runs turns on the developer's own credentials.
const (
	// CodeMisdirectedHost (421): the Host is not a name this server answers for — a
	// DNS-rebinding page reaches a local server under its own name.
	CodeMisdirectedHost = "MisdirectedHostError"
	// CodeUnauthorized (401): the server wants a bearer token and the request has none, or
	// another one.
	CodeUnauthorized = "UnauthorizedError"
	// CodeForbiddenOrigin (403): a browser request from another origin (Origin, or
	// Sec-Fetch-Site when there is no Origin).
	CodeForbiddenOrigin = "ForbiddenOriginError"
	// CodeUnsupportedMediaType (415): a browser request whose body is not application/json.
	CodeUnsupportedMediaType = "UnsupportedMediaTypeError"
	// CodePayloadTooLarge (413): the body is over MaxBodyBytes — the code the session API's
	// handler gives a body over its own limit (httpapi.CodePayloadTooLarge), where API
	// Gateway (and Handler, its emulation) answers {"message":"Request Entity Too Large"}.
	CodePayloadTooLarge = "PayloadTooLargeError"
)

// MinTokenLength is the shortest bearer token a Policy takes.
const MinTokenLength = 16

// Policy is what the guard admits.
//
//   - Host: "localhost" and loopback IP literals (127.0.0.0/8, [::1]), with any port or
//     none; the AllowHosts; and, when the listener is not loopback-only, any IP literal
//     (an IP literal cannot be rebound; a name can).
//   - Token: when set, every request carries "Authorization: Bearer <Token>" (never in the
//     query string); the guard consumes the header, the handler never sees it.
//   - Origin: absent, or exactly this request's own origin — http(s):// + its Host. "null",
//     several Origins, or any other origin is refused, on every method (a read leaks the
//     transcript) and on preflights, which never grant CORS.
//   - Sec-Fetch-Site: absent, "same-origin" or "none" (the user typed the URL).
//   - Body type: a request from a browser (it sends Origin or Sec-Fetch-Site) with any
//     method but GET, HEAD and OPTIONS must be application/json (parameters allowed).
//     Without either header the body type is not looked at: `curl -d` sends form encoding.
type Policy struct {
	// Loopback reports that the listener is bound to loopback addresses only.
	Loopback bool
	// AllowHosts are further Host values to answer, each NAME or NAME:PORT (without a
	// port, any port): the name a proxy, a container or another machine reaches it by.
	AllowHosts []string
	// Token, when set, is the bearer token every request must carry. A Policy that is not
	// Loopback needs one.
	Token string
}

// hostSpec is one parsed AllowHosts entry.
type hostSpec struct{ name, port string }

// Validate checks the AllowHosts and the Token's form (not whether a token is needed).
func (p Policy) Validate() error {
	_, err := p.hosts()
	if err == nil && p.Token != "" {
		err = checkToken(p.Token)
	}
	return err
}

func (p Policy) hosts() ([]hostSpec, error) {
	var out []hostSpec
	for _, raw := range p.AllowHosts {
		s := strings.TrimSpace(raw)
		switch {
		case s == "":
			return nil, errors.New("--allow-host: an empty host name")
		case strings.Contains(s, "://") || strings.ContainsAny(s, "/@?#"):
			return nil, fmt.Errorf("--allow-host %q: give the host name only, as the Host header carries it (NAME or NAME:PORT), without a scheme or a path", raw)
		case strings.Contains(s, "*"):
			return nil, fmt.Errorf("--allow-host %q: wildcards are not taken (one would admit the names a DNS-rebinding page uses); list each name", raw)
		}
		a, ok := parseAuthority(s)
		if !ok || !a.ip.IsValid() && !validName(a.name) {
			return nil, fmt.Errorf("--allow-host %q: not a host name, IP address or NAME:PORT", raw)
		}
		out = append(out, hostSpec{name: a.name, port: a.port})
	}
	return out, nil
}

// checkToken refuses a token too short to guess at or unfit for a header.
func checkToken(t string) error {
	if len(t) < MinTokenLength {
		return fmt.Errorf("the bearer token must be at least %d characters long (leave it out on a non-loopback --addr and archmax serve makes one)", MinTokenLength)
	}
	for _, c := range t {
		if c <= ' ' || c > '~' {
			return errors.New("the bearer token must be printable ASCII without spaces (it travels in the Authorization header)")
		}
	}
	return nil
}

// NewToken makes a random bearer token (32 bytes from crypto/rand, base64url).
func NewToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

// IsLoopback reports whether a listener's address is a loopback one (127.0.0.0/8, ::1). An
// unspecified address (0.0.0.0, ::) listens on every interface and is not.
func IsLoopback(a net.Addr) bool {
	tcp, ok := a.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// Guard puts the policy's checks in front of next (usually Handler's gateway); a refused
// request never reaches it, and each refusal is logged at warn to log (nil discards).
func Guard(next http.Handler, p Policy, log *slog.Logger) (http.Handler, error) {
	hosts, err := p.hosts()
	if err != nil {
		return nil, err
	}
	g := &guard{next: next, loopback: p.Loopback, hosts: hosts, log: log}
	if p.Token != "" {
		if err := checkToken(p.Token); err != nil {
			return nil, err
		}
		sum := sha256.Sum256([]byte(p.Token))
		g.token = &sum
	} else if !p.Loopback {
		return nil, errors.New("a listener that is not loopback-only needs a bearer token")
	}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	return g, nil
}

type guard struct {
	next     http.Handler
	loopback bool
	hosts    []hostSpec
	token    *[sha256.Size]byte
	log      *slog.Logger
}

// authority is a parsed Host (or an Origin's host): a lower-cased name, or an IP literal
// (name is then its canonical text, without brackets), and the port ("" when none).
type authority struct {
	name, port string
	ip         netip.Addr
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	host, ok := parseAuthority(r.Host)
	if !ok || !g.hostAllowed(host) {
		g.refuse(w, r, http.StatusMisdirectedRequest, CodeMisdirectedHost, fmt.Sprintf(
			"archmax serve does not answer for Host %q: it answers for %s. A web page under another name that resolves to this machine "+
				"is a DNS-rebinding attack; if you reach the server under this name on purpose, restart it with --allow-host %s.",
			r.Host, g.hostList(), suggestHost(r.Host)),
			map[string]any{"host": r.Host, "allowedHosts": g.hostNames()})
		return
	}
	if g.token != nil && !g.authorized(w, r) {
		return
	}
	origins, hasOrigin := r.Header["Origin"]
	own := "http://" + r.Host
	if hasOrigin {
		if len(origins) != 1 {
			g.refuse(w, r, http.StatusForbidden, CodeForbiddenOrigin,
				"The request carries several Origin headers; a browser sends one. Send none (a script, curl) or this server's own origin ("+own+").",
				map[string]any{"origins": origins, "allowedOrigin": own})
			return
		}
		if origins[0] == "null" {
			g.refuse(w, r, http.StatusForbidden, CodeForbiddenOrigin,
				"A request with Origin \"null\" (a sandboxed frame, a file:// page, a redirect from another site) is refused: archmax serve "+
					"runs turns on your model credentials and serves every transcript, so only its own origin ("+own+") or a client that sends "+
					"no Origin (curl, a script) may call it.",
				map[string]any{"origin": "null", "allowedOrigin": own})
			return
		}
		if !sameOrigin(origins[0], host) {
			g.refuse(w, r, http.StatusForbidden, CodeForbiddenOrigin, fmt.Sprintf(
				"A cross-origin request is refused: Origin %q is not this server's (%s). archmax serve runs turns on your model credentials "+
					"and serves every transcript, and grants no CORS: call it from a script or curl (no Origin), or from a page on %s.",
				origins[0], own, own),
				map[string]any{"origin": origins[0], "allowedOrigin": own})
			return
		}
	}
	site := r.Header.Get("Sec-Fetch-Site")
	if site != "" && site != "same-origin" && site != "none" {
		g.refuse(w, r, http.StatusForbidden, CodeForbiddenOrigin, fmt.Sprintf(
			"A browser request from another site is refused (Sec-Fetch-Site: %s): archmax serve runs turns on your model credentials and "+
				"serves every transcript. Call it from a script or curl, or open %s%s in the browser yourself.", site, own, r.URL.Path),
			map[string]any{"secFetchSite": site, "allowedOrigin": own})
		return
	}
	// a request without a body (Content-Length 0 or none, not chunked: a DELETE) has no type to
	// check — and nothing a form could have posted (RD22-19)
	bodyless := r.ContentLength == 0 && len(r.TransferEncoding) == 0
	if (hasOrigin || site != "") && !bodyless && r.Method != http.MethodGet && r.Method != http.MethodHead && r.Method != http.MethodOptions {
		ct := r.Header.Get("Content-Type")
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			shown := ct
			if shown == "" {
				shown = "none"
			}
			g.refuse(w, r, http.StatusUnsupportedMediaType, CodeUnsupportedMediaType, fmt.Sprintf(
				"A request from a browser must send its body as application/json (Content-Type: %s). The browser-simple types "+
					"(text/plain, application/x-www-form-urlencoded, multipart/form-data, or none) are how another site's page posts "+
					"without asking first. Send the body with Content-Type: application/json.", shown),
				map[string]any{"contentType": ct, "accepted": []string{"application/json"}})
			return
		}
	}
	if !g.bodyFits(w, r) {
		return
	}
	g.next.ServeHTTP(w, r)
}

// bodyFits refuses a body over MaxBodyBytes (413 PayloadTooLargeError, the API's error
// shape): by its Content-Length at once, or — sent without one (chunked) — once that many
// bytes have been read, the body read so far handed on otherwise.
func (g *guard) bodyFits(w http.ResponseWriter, r *http.Request) bool {
	refuse := func(details map[string]any) bool {
		details["maxBytes"] = MaxBodyBytes
		g.refuse(w, r, http.StatusRequestEntityTooLarge, CodePayloadTooLarge, fmt.Sprintf(
			"The request body is more than %d bytes, the most archmax serve (like API Gateway) accepts; the session API's "+
				"requests are JSON objects of at most 1 MiB.", MaxBodyBytes), details)
		return false
	}
	if r.ContentLength > MaxBodyBytes {
		return refuse(map[string]any{"size": r.ContentLength})
	}
	if r.ContentLength >= 0 || r.Body == nil || r.Body == http.NoBody {
		return true // net/http reads no more than the Content-Length
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
	if err == nil && len(body) > MaxBodyBytes {
		return refuse(map[string]any{})
	}
	r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), errReader{err}))
	return true
}

// errReader reads as err (io.EOF when nil): the end of a body read ahead.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) {
	if e.err == nil {
		return 0, io.EOF
	}
	return 0, e.err
}

// authorized checks the bearer token, answering 401 when it is missing or wrong; the
// Authorization header is consumed.
func (g *guard) authorized(w http.ResponseWriter, r *http.Request) bool {
	values := r.Header.Values("Authorization")
	r.Header.Del("Authorization")
	if len(values) == 1 {
		scheme, cred, _ := strings.Cut(strings.TrimSpace(values[0]), " ")
		if strings.EqualFold(scheme, "Bearer") {
			// equal-length digests: the comparison's time says nothing about the token
			sum := sha256.Sum256([]byte(strings.TrimSpace(cred)))
			if subtle.ConstantTimeCompare(sum[:], g.token[:]) == 1 {
				return true
			}
		}
	}
	msg := "This server needs a bearer token: send the header \"Authorization: Bearer <token>\" with the token archmax serve printed " +
		"at start (or the one given by --token or ARCHMAX_SERVE_TOKEN)."
	challenge := `Bearer realm="archmax serve"`
	if len(values) > 0 {
		msg = "The Authorization header does not carry this server's bearer token. Send \"Authorization: Bearer <token>\" with the " +
			"token archmax serve printed at start (a start without --token or ARCHMAX_SERVE_TOKEN makes a new one)."
		challenge += `, error="invalid_token"`
	}
	q := r.URL.Query()
	if q.Has("access_token") || q.Has("token") {
		msg += " A token in the query string is never read: it ends up in logs and browser history."
	}
	w.Header().Set("WWW-Authenticate", challenge)
	g.refuse(w, r, http.StatusUnauthorized, CodeUnauthorized, msg, nil)
	return false
}

func (g *guard) hostAllowed(a authority) bool {
	if a.ip.IsValid() {
		if a.ip.Unmap().IsLoopback() || !g.loopback {
			return true
		}
	} else if a.name == "localhost" {
		return true
	}
	for _, h := range g.hosts {
		if h.name == a.name && (h.port == "" || h.port == a.port) {
			return true
		}
	}
	return false
}

// hostNames lists the accepted Host names for an answer's details.
func (g *guard) hostNames() []string {
	names := []string{"127.0.0.1", "localhost", "[::1]"}
	for _, h := range g.hosts {
		n := h.name
		if strings.Contains(n, ":") {
			n = "[" + n + "]"
		}
		if h.port != "" {
			n += ":" + h.port
		}
		names = append(names, n)
	}
	if !g.loopback {
		names = append(names, "any IP address")
	}
	return names
}

func (g *guard) hostList() string {
	names := append([]string{"localhost", "any loopback address (127.0.0.1, [::1], the rest of 127.0.0.0/8)"}, g.hostNames()[3:]...)
	if !g.loopback {
		names = append(names, "any IP address")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// suggestHost is the --allow-host value that would admit host (its name, without a port).
func suggestHost(host string) string {
	if a, ok := parseAuthority(host); ok && a.name != "" {
		if strings.Contains(a.name, ":") {
			return "[" + a.name + "]"
		}
		return a.name
	}
	return "NAME"
}

func (g *guard) refuse(w http.ResponseWriter, r *http.Request, status int, code, message string, details map[string]any) {
	g.log.WarnContext(r.Context(), "archmax serve refused a request", "status", status, "code", code, "method", r.Method,
		"path", r.URL.Path, "host", r.Host, "origin", r.Header.Get("Origin"), "secFetchSite", r.Header.Get("Sec-Fetch-Site"))
	body, _ := json.Marshal(map[string]any{"error": errorInfo{Code: code, Message: message, Details: details}})
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// errorInfo is the inside of the API's error shape (httpapi.ErrorInfo, which this package
// cannot import: httpapi's tests import apigw).
type errorInfo struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

// sameOrigin reports whether origin is http(s):// + the request's own host and port, as a
// browser serializes an origin (the scheme's default port left out).
func sameOrigin(origin string, host authority) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || origin != u.Scheme+"://"+u.Host {
		return false // not an origin as a browser serializes it: no path, query, fragment or user
	}
	a, ok := parseAuthority(u.Host)
	if !ok {
		return false
	}
	def := map[string]string{"http": "80", "https": "443"}[u.Scheme]
	port := func(p string) string {
		if p == "" {
			return def
		}
		return p
	}
	return a.name == host.name && port(a.port) == port(host.port)
}

// parseAuthority parses a Host header value (or an Origin's host): NAME, NAME:PORT,
// IPv4[:PORT] or [IPv6][:PORT]. Names are lower-cased, IP literals canonical; anything
// else (an empty name, a bad port, an IPv6 address without brackets or with a zone) is not
// an authority.
func parseAuthority(s string) (authority, bool) {
	var a authority
	rest := ""
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return a, false
		}
		ip, err := netip.ParseAddr(s[1:end])
		if err != nil || !ip.Is6() || ip.Zone() != "" {
			return a, false
		}
		a.ip, a.name, rest = ip, ip.String(), s[end+1:]
		if rest != "" && rest[0] != ':' {
			return a, false
		}
	} else {
		name, port, hasPort := strings.Cut(s, ":")
		if hasPort {
			rest = ":" + port
		}
		if name == "" || strings.Contains(port, ":") {
			return a, false
		}
		a.name = strings.ToLower(name)
		if ip, err := netip.ParseAddr(a.name); err == nil && ip.Is4() {
			a.ip, a.name = ip, ip.String()
		}
	}
	if rest != "" {
		a.port = rest[1:]
		if n, err := strconv.Atoi(a.port); err != nil || n < 0 || n > 65535 || len(a.port) > 5 ||
			strings.TrimLeft(a.port, "0123456789") != "" {
			return a, false
		}
	}
	return a, true
}

// validName reports whether s (lower-cased) is a DNS-like host name: dot-separated labels
// of letters, digits, '-' and '_'.
func validName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(strings.TrimSuffix(s, "."), ".") {
		if label == "" || len(label) > 63 || slices.ContainsFunc([]byte(label), func(c byte) bool {
			return !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_')
		}) {
			return false
		}
	}
	return true
}
