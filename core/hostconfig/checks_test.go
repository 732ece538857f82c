package hostconfig

import (
	"strings"
	"testing"
)

const httpBase = "tools:\n  - name: t\n    description: d\n    input: { type: object, properties: { a: { type: string } }, required: [a] }\n    http: { method: GET, url: 'https://api.example.com/v1/{a}' }\n"

// The findings `archmax validate` reports for what the http kind refuses, and for input
// schemas and URLs: each exactly — message, field, position and hint.
func TestFindingsExactly(t *testing.T) {
	type want struct{ code, field, marker, message, hint string }
	for _, c := range []struct {
		name, old, new string
		want           []want
	}{
		{"authorization fixed", "method: GET,", "method: GET, headers: { Authorization: 'Bearer abc' },", []want{{CodeHTTP, "tools.0.http.headers.Authorization", "Authorization",
			"header 'Authorization' carries credentials, which are never written in the host file", hintCredentialHeader}}},
		{"cookie fixed", "method: GET,", "method: GET, headers: { cookie: s=1 },", []want{{CodeHTTP, "tools.0.http.headers.cookie", "cookie",
			"header 'cookie' carries credentials, which are never written in the host file", hintCredentialHeader}}},
		{"proxy authorization fixed", "method: GET,", "method: GET, headers: { Proxy-Authorization: x },", []want{{CodeHTTP, "tools.0.http.headers.Proxy-Authorization", "Proxy-Authorization",
			"header 'Proxy-Authorization' carries credentials, which are never written in the host file", hintCredentialHeader}}},
		{"transport header", "method: GET,", "method: GET, headers: { TE: trailers },", []want{{CodeHTTP, "tools.0.http.headers.TE", "TE",
			"header 'TE' is set by the transport (or the idempotency key every call carries), not by the host file", hintTransportHeader}}},
		{"x-amz with sigv4", "method: GET,", "method: GET, headers: { X-Amz-Date: '20250101T000000Z' }, auth: { sigv4: { service: execute-api } },", []want{{CodeHTTP, "tools.0.http.headers.X-Amz-Date", "X-Amz-Date",
			"header 'X-Amz-Date' is the SigV4 signer's: with 'auth: sigv4' it sets the X-Amz-* headers itself", hintSigV4Header}}},
		{"x-amz without sigv4", "method: GET,", "method: GET, headers: { X-Amz-Date: x },", nil},
		{"auth's header fixed", "method: GET,", "method: GET, headers: { x-api-key: k }, auth: { header: X-Api-Key, env: KEY },", []want{{CodeHTTP, "tools.0.http.headers.x-api-key", "x-api-key",
			"header 'x-api-key' is set by 'auth'; do not set it in 'headers' too", hintAuthHeaderTwice}}},
		{"a header twice", "method: GET,", "method: GET, headers: { X-V: '1', x-v: '2' },", []want{{CodeHTTP, "tools.0.http.headers.x-v", "x-v",
			"header 'x-v' is also given as 'X-V': header names ignore case, so only one value could be sent", hintHeaderTwice}}},
		{"a control character", "method: GET,", `method: GET, headers: { X-V: "a\x01" },`, []want{{CodeHTTP, "tools.0.http.headers.X-V", "X-V",
			"the value of header 'X-V' has a control character", hintHeaderValue}}},
		{"a number", "method: GET,", "method: GET, headers: { X-V: 2 },", []want{{CodeHTTP, "tools.0.http.headers.X-V", "2 }",
			"header 'X-V' takes a one-line string value", hintHeaderType}}},
		{"a prefix's control character", "method: GET,", `method: GET, auth: { header: X-Key, env: KEY, prefix: "a\x01" },`, []want{{CodeAuth, "tools.0.http.auth.prefix", `"a\x01"`,
			`'prefix' has a control character: it is a one-line string put before the secret (e.g. "Bearer ")`, hintAuthPrefix}}},
		{"auth's header the transport's", "method: GET,", "method: GET, auth: { header: Connection, env: KEY },", []want{{CodeAuth, "tools.0.http.auth.header", "Connection",
			"'Connection' is not a header a secret can go in", hintAuthHeaderName}}},

		{"type a number", "a: { type: string }", "a: { type: 5 }", []want{{CodeInputSchema, "tools.0.input.properties.a.type", "5 }",
			`'tools.0.input.properties.a.type' must be one of "array", "boolean", "integer", "null", "number", "object", "string", or a list of them (got 5)`, hintSchemaType}}},
		{"type misspelt", "a: { type: string }", "a: { type: strin }", []want{{CodeInputSchema, "tools.0.input.properties.a.type", "strin",
			`'tools.0.input.properties.a.type' must be one of "array", "boolean", "integer", "null", "number", "object", "string", or a list of them (got "strin")`, hintSchemaType}}},
		{"type list misspelt", "a: { type: string }", "a: { type: [string, nul] }", []want{{CodeInputSchema, "tools.0.input.properties.a.type.1", "nul",
			`'tools.0.input.properties.a.type.1' must be one of "array", "boolean", "integer", "null", "number", "object", "string" (got "nul")`, hintSchemaType}}},
		{"properties a number", "properties: { a: { type: string } }", "properties: 5", []want{{CodeInputSchema, "tools.0.input.properties", "5,",
			"'tools.0.input.properties' must be a mapping (got 5)", hintSchemaGeneral}}},
		{"required a string", "required: [a]", `required: "a"`, []want{{CodeInputSchema, "tools.0.input.required", `"a"`,
			`'tools.0.input.required' must be a list (got "a")`, hintSchemaGeneral}}},
		{"pattern", "a: { type: string }", "a: { type: string, pattern: '(' }", []want{{CodeInputSchema, "tools.0.input.properties.a.pattern", "'('",
			"'tools.0.input.properties.a.pattern' is not a regular expression: missing closing ): `(`", hintSchemaRegex}}},
		{"pattern property", "a: { type: string }", "a: { type: object, patternProperties: { 'x(': {} } }", []want{{CodeInputSchema, "tools.0.input.properties.a.patternProperties.x(", "'x('",
			"'tools.0.input.properties.a.patternProperties.x(' is not a regular expression: missing closing ): `x(`", hintSchemaRegex}}},
		{"minimum", "a: { type: string }", "a: { type: string, minLength: -1 }", []want{{CodeInputSchema, "tools.0.input.properties.a.minLength", "-1",
			"'tools.0.input.properties.a.minLength' must be at least 0 (got -1)", hintSchemaGeneral}}},
		{"items", "a: { type: string }", "a: { type: array, items: 5 }", []want{{CodeInputSchema, "tools.0.input.properties.a.items", "5 }",
			"'tools.0.input.properties.a.items' must be true or false, or a mapping (got 5)", hintSchemaGeneral}}},
		{"a dangling ref", "a: { type: string }", "a: { $ref: '#/$defs/id' }", []want{{CodeInputSchema, "tools.0.input.properties.a.$ref", "'#/",
			"'tools.0.input.properties.a.$ref' points at #/$defs/id, which is not in the input schema", hintSchemaRef}}},
		{"a remote ref", "a: { type: string }", "a: { $ref: 'https://schemas.example/id.json' }", []want{{CodeInputSchema, "tools.0.input.properties.a.$ref", "'https://schemas",
			"'tools.0.input.properties.a.$ref' refers to https://schemas.example/id.json, outside the input schema", hintSchemaRef}}},
		{"two problems", "properties: { a: { type: string } }, required: [a]", "properties: { a: { type: 5 } }, required: a", []want{
			{CodeInputSchema, "tools.0.input.properties.a.type", "5 }",
				`'tools.0.input.properties.a.type' must be one of "array", "boolean", "integer", "null", "number", "object", "string", or a list of them (got 5)`, hintSchemaType},
			{CodeInputSchema, "tools.0.input.required", "required: a|a",
				`'tools.0.input.required' must be a list (got "a")`, hintSchemaGeneral}}},

		{"plain http", "https://api.example.com", "http://api.example.com", []want{{CodeURL, "tools.0.http.url", "'http",
			`URL "http://api.example.com/v1/{a}" is refused: it is http:// to api.example.com: a tool's URL is https (http:// only to localhost or a loopback address, for local tests)`, hintURLPlain}}},
		{"no host", "https://api.example.com", "https://", []want{{CodeURL, "tools.0.http.url", "'https",
			`URL "https:///v1/{a}" is refused: it has no host: scheme://host[:port] comes first`, hintURLNoHost}}},
		{"user info", "https://api.example.com", "https://me:pw@api.example.com", []want{{CodeURL, "tools.0.http.url", "'https",
			`URL "https://me:pw@api.example.com/v1/{a}" is refused: its host "me:pw@api.example.com" is not fixed: no user info in scheme://host[:port]`, hintURLUserInfo}}},
		{"placeholder in the host", "https://api.example.com", "https://{a}.example.com", []want{{CodeURL, "tools.0.http.url", "'https",
			`URL "https://{a}.example.com/v1/{a}" is refused: its host "{a}.example.com" is not fixed: no placeholder in scheme://host[:port]`, hintURLHostArg}}},
		{"non-ASCII", "v1/{a}", "v1/café/{a}", []want{{CodeURL, "tools.0.http.url", "'https",
			`URL "https://api.example.com/v1/café/{a}" is refused: it has spaces, control or non-ASCII characters`, hintURLChars}}},
		{"an encoded slash", "v1/{a}", "v1/a%2Fb/{a}", []want{{CodeURL, "tools.0.http.url", "'https",
			`URL "https://api.example.com/v1/a%2Fb/{a}" is refused: path segment "a%2Fb": "a%2Fb" decodes to a value with '/' or '\'`, hintURLSegment}}},
		{"a twice-encoded dot segment", "v1/{a}", "v1/%252e%252e/{a}", []want{{CodeURL, "tools.0.http.url", "'https",
			`URL "https://api.example.com/v1/%252e%252e/{a}" is refused: path segment "%252e%252e": "%252e%252e" decodes to the dot segment ".."`, hintURLDotSegment}}},
		{"part of a segment", "v1/{a}", "v1/ord-{a}", []want{{CodeURL, "tools.0.http.url", "'https",
			`URL "https://api.example.com/v1/ord-{a}" is refused: path segment "ord-{a}": a placeholder fills a whole path segment ('/{id}/'), never part of one`, hintURLSegmentArg}}},
		{"unknown placeholder", "v1/{a}", "v1/{a}?q={b}", []want{{CodeURL, "tools.0.http.url", "'https",
			"placeholder {b} is not a property of the input schema (properties: a)", hintURLArgUnknown}}},
		{"optional segment", "required: [a]", "required: []", []want{{CodeURL, "tools.0.http.url", "'https",
			"placeholder {a} fills a path segment, so the input schema must list it in 'required'",
			"add the argument to the input's 'required' list, or make it a query value (?a={a}), which a call may leave out"}}},
		{"an object placeholder", "a: { type: string }", "a: { type: object }", []want{{CodeURL, "tools.0.http.url", "'https",
			"placeholder {a} fills one URL segment or value: its property must be a string, number, integer or boolean, not object", hintURLArgType}}},
		{"a placeholder twice", "v1/{a}", "v1/{a}?again={a}", []want{{CodeURL, "tools.0.http.url", "'https",
			`URL "https://api.example.com/v1/{a}?again={a}" uses the placeholder {a} twice`, hintURLArgTwice}}},
		{"an mcp URL with a placeholder", httpBase, "tools:\n  - mcp: { url: 'https://mcp.example/{a}', expose: [{ name: x }] }\n", []want{{CodeURL, "tools.0.mcp.url", "'https",
			"an MCP server's URL is fixed: no placeholders", hintMCPURLArgs}}},
		{"an mcp URL with a fragment", httpBase, "tools:\n  - mcp: { url: 'https://mcp.example/mcp#x', expose: [{ name: x }] }\n", []want{{CodeURL, "tools.0.mcp.url", "'https",
			`URL "https://mcp.example/mcp#x" is refused: a URL template has no fragment ('#')`, hintURLFragment}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := strings.Replace(httpBase, c.old, c.new, 1)
			if src == httpBase {
				t.Fatalf("%q is not in the base file", c.old)
			}
			_, diags := Parse([]byte(src))
			if len(diags) != len(c.want) {
				t.Fatalf("%d findings, want %d: %+v\n%s", len(diags), len(c.want), diags, src)
			}
			for i, w := range c.want {
				d := diags[i]
				line, col := at(t, src, w.marker)
				if d.Code != w.code || d.Field != w.field || d.Message != w.message || d.Hint != w.hint || d.Line != line || d.Column != col || d.Severity != "error" {
					t.Errorf("finding\n  %d:%d %s [%s] %s\n  hint: %s\nwant\n  %d:%d %s [%s] %s\n  hint: %s",
						d.Line, d.Column, d.Code, d.Field, d.Message, d.Hint, line, col, w.code, w.field, w.message, w.hint)
				}
			}
		})
	}
}

// A URL finding's hint says what to do about that finding: no two of SplitURL's refusals
// share the code's general hint.
func TestURLHintsAreSpecific(t *testing.T) {
	for _, u := range []string{"https://a.example/x#f", "a.example/x", "ftp://a.example/", "https:///x", "https://u@a.example/",
		"https://{a}.example/", "https://a%2e.example/", "https://a.example:0/", "http://a.example/", "https://a.example/x y",
		"https://a.example/a{b}", "https://a.example/..", "https://a.example/%zz", "https://a.example/?{q}=1", "https://a.example/?q=%zz",
		"https://a.example/?q=a{b}", "https://a.example/a%5Cb"} {
		_, err := SplitURL(u)
		ue, ok := err.(*URLError)
		if !ok || ue.Hint == "" || ue.Hint == hints[CodeURL] {
			t.Errorf("%s: %v (%T)", u, err, err)
		}
	}
}
