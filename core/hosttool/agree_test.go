package hosttool_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/core/hostconfig"
	"github.com/archmax-ai/archmax/core/hosttool"
	"github.com/archmax-ai/archmax/core/hosttool/httptool"
	"github.com/archmax-ai/archmax/core/hosttool/lambdatool"
	"github.com/archmax-ai/archmax/core/hosttool/mcptool"
)

type noInvoke struct{}

func (noInvoke) Invoke(context.Context, string, string, []byte) ([]byte, string, error) {
	return nil, "", errors.New("not called")
}

var (
	kinds = map[string]hosttool.Builder{hostconfig.KindLambda: lambdatool.New, hostconfig.KindHTTP: httptool.New, hostconfig.KindMCP: mcptool.New}
	// every dependency present: what is left to refuse is the file's
	deps = hosttool.Deps{Lambda: noInvoke{},
		Secret: func(context.Context, *hostconfig.Auth) (string, error) { return "s", nil },
		Sign:   func(context.Context, *http.Request, []byte, string, string) error { return nil }}
)

const (
	httpFile   = "tools:\n  - name: t\n    description: d\n    input: { type: object, properties: { a: { type: string } }, required: [a] }\n    http: { method: GET, url: 'https://api.example.com/v1/{a}' }\n"
	lambdaFile = "tools:\n  - name: t\n    description: d\n    input: { type: object, properties: { a: { type: string } } }\n    lambda: { function: orders-get }\n"
	mcpFile    = "tools:\n  - mcp: { url: 'https://mcp.example.com/mcp', expose: [{ name: x }] }\n"
)

// `archmax validate` (hostconfig.Parse) and the runtime (hosttool.Build with the three kinds)
// agree: every file a kind refuses for a static reason, validate refuses too — for the
// shared checks with the same field and hint. The files are the base files with one edit.
func TestValidateAndRuntimeAgree(t *testing.T) {
	for _, base := range []string{httpFile, lambdaFile} {
		cfg, diags := hostconfig.Parse([]byte(base))
		if len(diags) > 0 {
			t.Fatal(diags)
		}
		if _, err := hosttool.Build(context.Background(), cfg, kinds, deps); err != nil {
			t.Fatalf("the base file does not build: %v", err)
		}
	}
	for _, c := range []struct{ name, base, old, new string }{
		{"Authorization fixed", httpFile, "method: GET,", "method: GET, headers: { Authorization: 'Bearer x' },"},
		{"Cookie fixed", httpFile, "method: GET,", "method: GET, headers: { Cookie: a=b },"},
		{"Proxy-Authorization fixed", httpFile, "method: GET,", "method: GET, headers: { proxy-authorization: x },"},
		{"Host fixed", httpFile, "method: GET,", "method: GET, headers: { Host: evil.example },"},
		{"Idempotency-Key fixed", httpFile, "method: GET,", "method: GET, headers: { Idempotency-Key: k },"},
		{"Keep-Alive fixed", httpFile, "method: GET,", "method: GET, headers: { Keep-Alive: x },"},
		{"X-Amz-* under sigv4", httpFile, "method: GET,", "method: GET, headers: { X-Amz-Security-Token: x }, auth: { sigv4: { service: execute-api } },"},
		{"auth's header fixed", httpFile, "method: GET,", "method: GET, headers: { X-Key: x }, auth: { header: X-Key, env: K },"},
		{"a header twice", httpFile, "method: GET,", "method: GET, headers: { X-A: '1', x-a: '2' },"},
		{"a header name", httpFile, "method: GET,", "method: GET, headers: { 'X A': x },"},
		{"a control character", httpFile, "method: GET,", `method: GET, headers: { X-A: "a\x01" },`},
		{"a line break", httpFile, "method: GET,", `method: GET, headers: { X-A: "a\nb" },`},
		{"auth both", httpFile, "method: GET,", "method: GET, auth: { sigv4: { service: execute-api }, header: X-Key, env: K },"},
		{"auth empty", httpFile, "method: GET,", "method: GET, auth: {},"},
		{"sigv4 without service", httpFile, "method: GET,", "method: GET, auth: { sigv4: {} },"},
		{"auth's header the transport's", httpFile, "method: GET,", "method: GET, auth: { header: Content-Length, env: K },"},
		{"secret and env", httpFile, "method: GET,", "method: GET, auth: { header: X-Key, env: K, secret: s },"},
		{"no secret", httpFile, "method: GET,", "method: GET, auth: { header: X-Key },"},
		{"a prefix's control character", httpFile, "method: GET,", `method: GET, auth: { header: X-Key, env: K, prefix: "a\x01" },`},
		{"a method", httpFile, "method: GET,", "method: TRACE,"},
		{"a GET body", httpFile, "method: GET,", "method: GET, body: json,"},
		{"a body kind", httpFile, "method: GET,", "method: POST, body: xml,"},
		{"plain http", httpFile, "https://api.example.com", "http://api.example.com"},
		{"no host", httpFile, "https://api.example.com", "https://"},
		{"a fragment", httpFile, "v1/{a}", "v1/{a}#x"},
		{"non-ASCII", httpFile, "v1/{a}", "v1/café/{a}"},
		{"a space", httpFile, "v1/{a}", "v1/a b/{a}"},
		{"an encoded slash", httpFile, "v1/{a}", "v1/a%2Fb/{a}"},
		{"an encoded dot segment", httpFile, "v1/{a}", "v1/.%2E/{a}"},
		{"part of a segment", httpFile, "v1/{a}", "v1/x{a}"},
		{"an unknown placeholder", httpFile, "v1/{a}", "v1/{a}?q={b}"},
		{"a lambda without function", lambdaFile, "{ function: orders-get }", "{ qualifier: live }"},
		{"an mcp URL in plain http", mcpFile, "https://", "http://"},
		{"an mcp URL with a fragment", mcpFile, "/mcp'", "/mcp#x'"},
		{"an mcp URL with a space", mcpFile, "/mcp'", "/m cp'"},
		{"an mcp URL with a placeholder", mcpFile, "/mcp'", "/{x}'"},
		{"mcp auth both", mcpFile, "expose:", "auth: { sigv4: { service: bedrock-agentcore }, header: X-K, env: K }, expose:"},
		{"mcp sigv4 without service", mcpFile, "expose:", "auth: { sigv4: {} }, expose:"},
		{"mcp expose nothing", mcpFile, "[{ name: x }]", "[]"},
		{"mcp reserved name", mcpFile, "[{ name: x }]", "[{ name: x, as: archmax_x }]"},
		{"mcp invalid name", mcpFile, "[{ name: x }]", "[{ name: x.y }]"},
		{"mcp names twice", mcpFile, "[{ name: x }]", "[{ name: x }, { name: y, as: x }]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := strings.Replace(c.base, c.old, c.new, 1)
			if src == c.base {
				t.Fatalf("%q is not in the base file", c.old)
			}
			cfg, diags := hostconfig.Parse([]byte(src))
			_, err := hosttool.Build(context.Background(), cfg, kinds, deps)
			if err == nil {
				t.Fatalf("the runtime builds it: the case does not test a runtime refusal\n%s", src)
			}
			if len(diags) == 0 {
				t.Fatalf("validate passes a file the runtime refuses (%v)\n%s", err, src)
			}
			var be *hosttool.BuildError
			if !errors.As(err, &be) {
				return // a refusal of the kind's own wording; validate refused the file
			}
			for _, d := range diags {
				if d.Field == be.Field && d.Hint == be.Problem.Hint && d.Code == be.Problem.Code {
					if !strings.HasPrefix(err.Error(), "archmax.host.yaml:") || !strings.Contains(err.Error(), "["+d.Field+"]") {
						t.Errorf("the runtime's message is not located: %v", err)
					}
					return
				}
			}
			t.Errorf("the runtime refuses %s (%s; hint %q), validate says %+v", be.Field, be.Problem.Message, be.Problem.Hint, diags)
		})
	}
}

// An input schema the parser refuses does not compile at Build either (one compiler:
// hostconfig.CompileSchema): a declaration that did not come through Load.
func TestSchemasAgree(t *testing.T) {
	for _, schema := range []string{
		`{"type":"object","properties":{"a":{"type":5}}}`,
		`{"type":"object","properties":5}`,
		`{"type":"object","required":"a"}`,
		`{"type":"object","properties":{"a":{"type":"strin"}}}`,
		`{"type":"object","properties":{"a":{"type":"string","pattern":"("}}}`,
		`{"type":"object","properties":{"a":{"$ref":"#/$defs/none"}}}`,
		`{"type":"object","properties":{"a":{"$ref":"file:///etc/passwd"}}}`,
	} {
		src := "tools:\n  - name: t\n    description: d\n    input: " + schema + "\n    lambda: { function: f }\n"
		if _, diags := hostconfig.Parse([]byte(src)); len(diags) == 0 {
			t.Errorf("%s: validate passes it", schema)
		}
		cfg := &hostconfig.Config{Tools: []hostconfig.ToolDecl{{Kind: hostconfig.KindLambda, Name: "t", Description: "d",
			Input: json.RawMessage(schema), Lambda: &hostconfig.LambdaTool{Function: "f"}, Line: 2, Column: 5}}}
		if _, err := hosttool.Build(context.Background(), cfg, kinds, deps); err == nil || !strings.Contains(err.Error(), "does not compile") {
			t.Errorf("%s: the runtime builds it (%v)", schema, err)
		}
	}
}
