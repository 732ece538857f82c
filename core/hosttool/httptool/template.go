package httptool

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/archmax-ai/archmax/core/hostconfig"
)

// A URL template: `https://host[:port]/literal/{arg}/…?key=literal&key={arg}`. The scheme,
// host and port are fixed; a placeholder is a whole path segment or a whole query value,
// never part of one, and never in the host, a query key or a fragment (there is none).
type template struct {
	origin string // https://host[:port]
	scheme string // https (http only to a loopback host)
	host   string // host[:port] (compared ignoring case)
	path   []part // the segments after the first '/'
	query  []param
	args   map[string]bool // the argument names the URL uses
}

// part is one path segment or query value: a literal (as written, already percent-encoded
// where it needs to be) or an argument's name.
type part struct {
	literal string
	arg     string
}

type param struct {
	key   string // as written
	value part
}

// parseTemplate reads a URL template with the parser's own split (hostconfig.SplitURL:
// https, or http to a loopback host for local tests; a fixed host; whole-segment and
// whole-value placeholders) and checks what a request needs beyond it: only printable
// ASCII, no literal segment that decodes to a dot segment, and — when properties is not
// nil — every placeholder a property of the input schema.
func parseTemplate(raw string, properties map[string]bool) (*template, error) {
	parts, err := hostconfig.SplitURL(raw)
	if err != nil {
		var ue *hostconfig.URLError
		if errors.As(err, &ue) {
			return nil, &hostconfig.Problem{Code: hostconfig.CodeURL, Field: hostconfig.KindHTTP + ".url", Message: fmt.Sprintf("URL %q is refused: %s", raw, ue.Message), Hint: ue.Hint}
		}
		return nil, fmt.Errorf("url %q: %v", raw, err)
	}
	u, err := url.Parse(parts.Origin)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("url %q: %q is not scheme://host[:port]", raw, parts.Origin)
	}
	t := &template{origin: parts.Origin, scheme: u.Scheme, host: u.Host, args: map[string]bool{}}
	use := func(name string) error {
		if properties != nil && !properties[name] {
			return fmt.Errorf("url %q: placeholder {%s} is not a property of the tool's input schema", raw, name)
		}
		t.args[name] = true
		return nil
	}
	for _, seg := range parts.Path {
		if seg.Arg != "" {
			if err := use(seg.Arg); err != nil {
				return nil, err
			}
		}
		t.path = append(t.path, part{literal: seg.Literal, arg: seg.Arg})
	}
	for _, q := range parts.Query {
		if q.Arg != "" {
			if err := use(q.Arg); err != nil {
				return nil, err
			}
		}
		t.query = append(t.query, param{key: q.Key, value: part{literal: q.Literal, arg: q.Arg}})
	}
	return t, nil
}

// fill builds the URL of a call from its arguments: each placeholder's value
// percent-encoded as one segment or value. An error is the refusal the model reads.
func (t *template) fill(tool string, args map[string]any) (string, error) {
	var b strings.Builder
	b.WriteString(t.origin)
	if len(t.path) == 0 {
		b.WriteByte('/')
	}
	for _, p := range t.path {
		b.WriteByte('/')
		if p.arg == "" {
			b.WriteString(p.literal)
			continue
		}
		v, ok, err := scalar(tool, p.arg, args)
		if err != nil {
			return "", err
		}
		if !ok {
			return "", fmt.Errorf("Error: '%s' needs the argument '%s' for its URL; nothing was sent. Call it again with '%s'.", tool, p.arg, p.arg)
		}
		if why := hostconfig.SegmentProblem(v); why != "" {
			return "", fmt.Errorf("Error: the argument '%s' of '%s' cannot be a URL path segment: %s. A path argument is exactly one segment — no '/' or '\\', not '.' or '..', not empty, no control characters, and none of these percent-encoded either. Nothing was sent.", p.arg, tool, why)
		}
		b.WriteString(escape(v))
	}
	sep := byte('?')
	for _, q := range t.query {
		value := q.value.literal
		if q.value.arg != "" {
			v, ok, err := scalar(tool, q.value.arg, args)
			if err != nil {
				return "", err
			}
			if !ok {
				continue // an optional query argument not given: the parameter is left out
			}
			value = escape(v)
		}
		b.WriteByte(sep)
		sep = '&'
		b.WriteString(q.key)
		b.WriteByte('=')
		b.WriteString(value)
	}
	return b.String(), nil
}

// scalar is an argument's value as URL text: a string as is, a number as JSON writes it, a
// boolean as true/false. ok is false when the argument is absent (or null).
func scalar(tool, name string, args map[string]any) (string, bool, error) {
	v, present := args[name]
	if !present || v == nil {
		return "", false, nil
	}
	switch x := v.(type) {
	case string:
		return x, true, nil
	case bool:
		return strconv.FormatBool(x), true, nil
	case float64, float32, int, int64, int32, json.Number:
		b, err := json.Marshal(x)
		if err == nil {
			return string(b), true, nil
		}
	}
	return "", false, fmt.Errorf("Error: the argument '%s' of '%s' goes in the URL and must be a string, number or boolean; nothing was sent.", name, tool)
}

// escape percent-encodes every byte of s but RFC 3986's unreserved characters
// (A–Z a–z 0–9 - . _ ~), so the value is exactly one segment or value whatever it holds:
// '/', '?', '#', '&', '=', '@', '%', '+', spaces and every non-ASCII byte are encoded.
func escape(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}
