package hostconfig

import (
	"errors"
	"fmt"
	"net/textproto"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/archmax-ai/archmax/core/pricing"
)

// The static checks of a declaration that the tool kinds repeat when they are built
// (core/hosttool/httptool, mcptool): one source, so `archmax validate`, the stack's synth and
// the runtime refuse the same files. The parser reports each Problem located (its Field
// below the block, its line and column); a kind returns it as its error.

// Problem is one static refusal of a declaration: its code, its field below the block the
// check reads ("headers.Authorization", "auth.prefix", "url"), what is wrong and what to do.
type Problem struct {
	Code    string
	Field   string
	Message string
	Hint    string
}

func (p *Problem) Error() string { return p.Message + " (" + p.Hint + ")" }

// IdempotencyHeader carries a call's idempotency key, <session>/<turn>/<toolUseId>.
const IdempotencyHeader = "Idempotency-Key"

// TransportHeaders are the headers no declaration sets — the transport's and the idempotency
// key every call carries — in canonical form. None can carry a secret either.
var TransportHeaders = []string{"Host", "Content-Length", "Transfer-Encoding", "Connection", "Upgrade", "Te", "Trailer",
	"Keep-Alive", "Proxy-Connection", IdempotencyHeader}

// CredentialHeaders carry credentials: never a fixed value in the file, only auth's header.
var CredentialHeaders = []string{"Authorization", "Proxy-Authorization", "Cookie"}

// SigV4Prefix starts the headers the SigV4 signer sets (X-Amz-Date, X-Amz-Security-Token,
// X-Amz-Content-Sha256): no fixed header of a sigv4 tool takes one.
const SigV4Prefix = "X-Amz-"

// headerToken is RFC 9110's token: a header name.
var headerToken = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

// HeaderProblem says why an http tool may not fix header name to value under auth (nil
// when it may). Its Field is "headers.<name>".
func HeaderProblem(name, value string, auth *Auth) *Problem {
	field := "headers." + name
	canon := textproto.CanonicalMIMEHeaderKey(name)
	switch {
	case !headerToken.MatchString(name):
		return &Problem{CodeHTTP, field, fmt.Sprintf("'%s' is not a header name", name), hintHeaderName}
	case slices.Contains(TransportHeaders, canon):
		return &Problem{CodeHTTP, field, fmt.Sprintf("header '%s' is set by the transport (or the idempotency key every call carries), not by the host file", name), hintTransportHeader}
	case auth != nil && auth.Header != "" && strings.EqualFold(auth.Header, name):
		return &Problem{CodeHTTP, field, fmt.Sprintf("header '%s' is set by 'auth'; do not set it in 'headers' too", name), hintAuthHeaderTwice}
	case slices.Contains(CredentialHeaders, canon):
		return &Problem{CodeHTTP, field, fmt.Sprintf("header '%s' carries credentials, which are never written in the host file", name), hintCredentialHeader}
	case auth != nil && auth.SigV4 != nil && strings.HasPrefix(canon, SigV4Prefix):
		return &Problem{CodeHTTP, field, fmt.Sprintf("header '%s' is the SigV4 signer's: with 'auth: sigv4' it sets the %s* headers itself", name, SigV4Prefix), hintSigV4Header}
	}
	if why := HeaderValueProblem(value); why != "" {
		return &Problem{CodeHTTP, field, fmt.Sprintf("the value of header '%s' %s", name, why), hintHeaderValue}
	}
	return nil
}

// Header is one fixed header of an http tool, as the file writes it.
type Header struct{ Name, Value string }

// HeaderProblems are the reasons an http tool may not fix headers (in the file's order)
// under auth, at most one a header: HeaderProblem's, and a name given twice in different
// cases (header names ignore case: only one value could be sent).
func HeaderProblems(headers []Header, auth *Auth) []*Problem {
	var out []*Problem
	first := map[string]string{}
	for _, h := range headers {
		if p := HeaderProblem(h.Name, h.Value, auth); p != nil {
			out = append(out, p)
			continue
		}
		canon := textproto.CanonicalMIMEHeaderKey(h.Name)
		if f, dup := first[canon]; dup {
			out = append(out, &Problem{CodeHTTP, "headers." + h.Name, fmt.Sprintf("header '%s' is also given as '%s': header names ignore case, so only one value could be sent", h.Name, f), hintHeaderTwice})
			continue
		}
		first[canon] = h.Name
	}
	return out
}

// HeaderValueProblem says why s cannot be a header value (CR, LF, NUL or another control
// character; a tab is allowed), or "".
func HeaderValueProblem(s string) string {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\r' || c == '\n':
			return "has a line break (CR or LF)"
		case c < ' ' && c != '\t' || c == 0x7f:
			return "has a control character"
		}
	}
	return ""
}

// awsService is an AWS service's signing name; awsRegion a region.
var (
	awsService = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)
	awsRegion  = regexp.MustCompile(`^[a-z]{2}(-gov)?-[a-z]+-\d$`)
)

// AuthProblems are the reasons an auth block is refused, each once (none when it is
// taken): first its fields', then its shape's. A Field is below the block: "" (the block
// itself), "header", "prefix", "secret", "secretKey", "sigv4.service", "sigv4.region".
func AuthProblems(a *Auth) []*Problem {
	if a == nil {
		return nil
	}
	var out []*Problem
	add := func(code, field, hint, format string, args ...any) {
		out = append(out, &Problem{code, field, fmt.Sprintf(format, args...), hint})
	}
	if s := a.SigV4; s != nil {
		switch {
		case s.Service == "":
			add(CodeRequired, "sigv4.service", hintSigV4Service, "'sigv4.service' is required: the AWS service the requests are signed for")
		case !awsService.MatchString(s.Service):
			add(CodeAuth, "sigv4.service", hintSigV4Service, "'%s' is not an AWS service's signing name (e.g. execute-api, bedrock-agentcore, lambda)", s.Service)
		}
		if s.Region != "" && !awsRegion.MatchString(s.Region) {
			add(CodeAuth, "sigv4.region", hintSigV4Region, "'%s' is not an AWS region (e.g. eu-west-1)", s.Region)
		}
	}
	if a.Header != "" && (!headerToken.MatchString(a.Header) || slices.Contains(TransportHeaders, textproto.CanonicalMIMEHeaderKey(a.Header))) {
		add(CodeAuth, "header", hintAuthHeaderName, "'%s' is not a header a secret can go in", a.Header)
	}
	if why := HeaderValueProblem(a.Prefix); why != "" {
		add(CodeAuth, "prefix", hintAuthPrefix, "'prefix' %s: it is a one-line string put before the secret (e.g. \"Bearer \")", why)
	}
	if strings.ContainsAny(a.Secret, " \t\r\n") {
		add(CodeAuth, "secret", hintSecretName, "'secret' names a Secrets Manager secret (its name or ARN), never the secret itself")
	}
	switch {
	case a.SigV4 != nil && (a.Header != "" || a.Secret != "" || a.Env != "" || a.Prefix != "" || a.SecretKey != ""):
		add(CodeAuth, "", hintAuthBoth, "an auth block is either 'sigv4' or a header with a secret ('header', 'secret' or 'env'), not both")
	case a.SigV4 != nil:
	case a.Header == "":
		add(CodeAuth, "", hintAuthHeader, "an auth block is 'sigv4: { service }' or 'header' with 'secret' (a Secrets Manager secret) or 'env' (an environment variable, for local runs)")
	case (a.Secret == "") == (a.Env == ""):
		add(CodeAuth, "", hintAuthSource, "a header's value comes from exactly one of 'secret' (Secrets Manager) and 'env' (an environment variable)")
	case a.SecretKey != "" && a.Secret == "":
		add(CodeAuth, "secretKey", hintSecretKey, "'secretKey' picks a key of a JSON secret: it goes with 'secret'")
	}
	return out
}

// SegmentProblem says why v cannot be one URL path segment, or "": empty, a dot segment, a
// '/' or '\', or a control character — in v or in any percent-decoding of it (a server or
// proxy may decode once more than it should). It holds a template's literal segments (at
// load) and a call's path arguments (when the URL is filled).
func SegmentProblem(v string) string {
	if v == "" {
		return "it is empty"
	}
	for layer, s := 0, v; layer < 8; layer++ {
		switch {
		case s == "." || s == "..":
			if layer == 0 {
				return fmt.Sprintf("it is the dot segment %q", s)
			}
			return fmt.Sprintf("%q decodes to the dot segment %q", v, s)
		case strings.ContainsAny(s, "/\\"):
			if layer == 0 {
				return "it contains '/' or '\\'"
			}
			return fmt.Sprintf("%q decodes to a value with '/' or '\\'", v)
		case strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r == 0x7f }):
			return "it contains a control character"
		}
		d, err := url.PathUnescape(s)
		if err != nil || d == s {
			break
		}
		s = d
	}
	return ""
}

// MCPURLProblem says why an mcp server's URL is refused, or nil: SplitURL's grammar, with
// no placeholder. Its Field is "url".
func MCPURLProblem(raw string) *Problem {
	parts, err := SplitURL(raw)
	var ue *URLError
	switch {
	case errors.As(err, &ue):
		return &Problem{CodeURL, "url", fmt.Sprintf("URL %q is refused: %s", raw, ue.Message), ue.Hint}
	case err != nil:
		return &Problem{CodeURL, "url", fmt.Sprintf("URL %q is refused: %v", raw, err), hints[CodeURL]}
	case len(parts.Args()) > 0:
		return &Problem{CodeURL, "url", "an MCP server's URL is fixed: no placeholders", hintMCPURLArgs}
	}
	return nil
}

// URLError is a URL template SplitURL refuses: what is wrong and what to do instead.
type URLError struct {
	Message string
	Hint    string
}

func (e *URLError) Error() string { return e.Message }

func urlErr(hint, format string, args ...any) *URLError {
	return &URLError{Message: fmt.Sprintf(format, args...), Hint: hint}
}

// UnpricedBudgetProblem is the shared check of a USD limit on a workflow whose models are
// not all priced (BU22-3): workflow's limits (b.For) name a USD amount, and one of models —
// the model ids its states call (their own, the workflow's, the assembly's default) — has
// no entry in table (pricing.Table.Resolve). Its spend in USD could not be counted, so the
// limit would never stop it: `archmax validate` reports it and the engine refuses the
// workflow's calls. nil when the workflow has no USD limit or every model is priced. The
// Field is "budgets.workflows.<slug>" for a workflow's own entry, else "budgets.session".
func UnpricedBudgetProblem(b *Budgets, workflow string, models []string, table pricing.Table) *Problem {
	lim := b.For(workflow)
	if !lim.USD() {
		return nil
	}
	var unpriced []string
	for _, m := range models {
		if _, ok := table.Resolve(m); !ok && !slices.Contains(unpriced, m) {
			unpriced = append(unpriced, m)
		}
	}
	if len(unpriced) == 0 {
		return nil
	}
	field := "budgets.session"
	if _, own := b.Workflows[workflow]; own {
		field = "budgets.workflows." + workflow
	}
	for i, m := range unpriced {
		if m == "" {
			unpriced[i] = "(no model configured)"
		}
	}
	return &Problem{Code: CodeBudget, Field: field,
		Message: fmt.Sprintf("workflow '%s' has a USD budget, but no pricing entry prices its model %s: its cost cannot be counted, so the limit would never stop it",
			workflow, strings.Join(quoteAll(unpriced), ", ")),
		Hint: hintBudgetUnpriced}
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = "'" + v + "'"
	}
	return out
}
