package httptool

import (
	"strings"
	"testing"
)

// Templates: the scheme and host are fixed, a placeholder is a whole segment or value.
func TestParseTemplate(t *testing.T) {
	props := map[string]bool{"id": true, "lang": true, "q": true}
	for _, ok := range []string{
		"https://api.example.com",
		"https://api.example.com/",
		"https://API.example.com:8443/v1/orders/{id}/notes?lang={lang}&fixed=a%20b&flag",
		"https://[::1]:8443/{id}/",
		"http://127.0.0.1:8080/{id}",
		"http://localhost/{id}",
	} {
		if _, err := parseTemplate(ok, props); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for url, want := range map[string]string{
		"http://api.example.com/x":               "http:// only to localhost or a loopback address",
		"https://user:pw@api.example.com/x":      "no user info",
		"https://{id}.example.com/x":             "no placeholder in scheme://host[:port]",
		"https://api.example.com/ord-{id}":       "a placeholder fills a whole path segment",
		"https://api.example.com/x?q=a{q}":       "a placeholder fills a whole query value",
		"https://api.example.com/x?{q}=1":        "a query key is fixed",
		"https://api.example.com/x#frag":         "fragment",
		"https://api.example.com/a/../admin":     "dot segments",
		"https://api.example.com/a/%2e%2E/admin": "dot segments",
		"https://api.example.com/{nope}":         "{nope} is not a property",
		"https://api.example.com/a b":            "spaces",
		"https://api.example.com/%zz":            "is not valid in a URL",
		"https://api.example.com/a/%2E./admin":   "decodes to the dot segment",
		"https://api.example.com/a/%252e%252e":   "decodes to the dot segment",
		"https://api.example.com:99999/":         "not a port",
		"https://":                               "it has no host",
	} {
		_, err := parseTemplate(url, props)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", url, err, want)
		}
	}
}

// Every value is one segment or one value, percent-encoded; a path value that is, or
// decodes to, a dot segment or a value with '/' or '\' is refused.
func TestFill(t *testing.T) {
	tpl, err := parseTemplate("https://api.example.com/v1/orders/{id}?lang={lang}&n={n}", nil)
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{
		"ORD-7":             "https://api.example.com/v1/orders/ORD-7",
		"a b+c":             "https://api.example.com/v1/orders/a%20b%2Bc",
		"é😀":                "https://api.example.com/v1/orders/%C3%A9%F0%9F%98%80",
		"x?admin=1":         "https://api.example.com/v1/orders/x%3Fadmin%3D1",
		"x#frag":            "https://api.example.com/v1/orders/x%23frag",
		"@evil.example":     "https://api.example.com/v1/orders/%40evil.example",
		"...":               "https://api.example.com/v1/orders/...",
		"%41":               "https://api.example.com/v1/orders/%2541",
		"..a":               "https://api.example.com/v1/orders/..a",
		"user:pw@evil.com:": "https://api.example.com/v1/orders/user%3Apw%40evil.com%3A",
	} {
		got, err := tpl.fill("get_order", map[string]any{"id": id})
		if err != nil || got != want {
			t.Errorf("id %q: %q %v, want %q", id, got, err, want)
		}
	}
	for _, id := range []string{"..", ".", "", "a/b", "/", "a\\b", "%2e%2e", "%2E%2e", "%2e", "%252e%252e", "%25252e%25252e",
		"a%2Fb", "a%252fb", "a%5cb", "line\r\nX-Evil: 1", "nul\x00", "%0d%0a"} {
		got, err := tpl.fill("get_order", map[string]any{"id": id})
		if err == nil || !strings.HasPrefix(err.Error(), "Error: the argument 'id' of 'get_order' cannot be a URL path segment: ") ||
			!strings.HasSuffix(err.Error(), "Nothing was sent.") {
			t.Errorf("id %q: %q %v", id, got, err)
		}
	}
	for lang, want := range map[string]string{
		"en":               "?lang=en",
		"en&admin=1":       "?lang=en%26admin%3D1",
		"x#y":              "?lang=x%23y",
		"../../etc/passwd": "?lang=..%2F..%2Fetc%2Fpasswd",
		"a\r\nb":           "?lang=a%0D%0Ab",
		"":                 "?lang=",
	} {
		got, err := tpl.fill("get_order", map[string]any{"id": "A", "lang": lang})
		if err != nil || got != "https://api.example.com/v1/orders/A"+want {
			t.Errorf("lang %q: %q %v", lang, got, err)
		}
	}
	if got, err := tpl.fill("get_order", map[string]any{"id": 7.0, "n": 2.5, "lang": true}); err != nil || got != "https://api.example.com/v1/orders/7?lang=true&n=2.5" {
		t.Errorf("scalars: %q %v", got, err)
	}
	if _, err := tpl.fill("get_order", map[string]any{"id": map[string]any{"a": 1}}); err == nil || !strings.Contains(err.Error(), "must be a string, number or boolean") {
		t.Errorf("an object: %v", err)
	}
	if _, err := tpl.fill("get_order", map[string]any{"lang": "en"}); err == nil || !strings.Contains(err.Error(), "needs the argument 'id'") {
		t.Errorf("a missing path argument: %v", err)
	}
}
