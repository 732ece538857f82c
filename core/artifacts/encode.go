package artifacts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// IndentDepth is how deep an artifact's JSON is indented: the members of the first
// IndentDepth levels of objects and arrays are one a line, indented by two spaces a level
// (JSON.stringify(v, null, 2)); a container nested deeper is written compact on its line.
// Indenting every level costs two bytes a level a line — a value nested n deep renders in
// O(n²) bytes (a 20 KB body of 9,990 nested arrays was a 200 MB variables.json) — whereas
// with the depth bounded a rendering is at most (2+2·IndentDepth) times the compact
// encoding of what the store holds (AR20-14).
const IndentDepth = 10

// MaxBytes is the largest artifact rendered: the session API's MaxServedFileBytes (the
// largest content it serves, in ranges or not), so `archmax sessions --artifacts` writes
// exactly what the route would serve, or says it does not (AR20-15).
const MaxBytes = 64 << 20

// ErrNotRendered is RenderOne's answer for a name that is not an artifact's, or whose
// input the Source lacks (the graph without the spec snapshot; the trail and variables
// without a readable checkpoint).
var ErrNotRendered = errors.New("artifact not rendered")

// TooLargeError is RenderOne's refusal of an artifact that renders to more than its limit.
// The rendering stops as soon as it passes the limit: the whole file is never built.
type TooLargeError struct {
	Artifact string // the artifact's name
	Limit    int64  // the limit it passed
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s renders to more than %d bytes, the most an artifact may be", e.Artifact, e.Limit)
}

// encode is v as JSON, '<', '>' and '&' kept as they are, indented to IndentDepth levels
// (deeper levels compact) and one trailing newline; *TooLargeError (with an empty
// Artifact, the caller's to name) once the rendering passes limit bytes.
func encode(v any, limit int64) ([]byte, error) {
	compact, err := encodeCompact(v)
	if err != nil { // only plain values: cannot fail but for a value JSON cannot hold
		compact = []byte("{}")
	}
	if int64(len(compact))+1 > limit { // an indented rendering is never shorter
		return nil, &TooLargeError{Limit: limit}
	}
	out, ok := indent(compact, IndentDepth, limit-1)
	if !ok {
		return nil, &TooLargeError{Limit: limit}
	}
	return append(out, '\n'), nil
}

// indent re-indents compact JSON as json.Indent(dst, src, "", "  ") would for the first
// depth levels of containers, leaving deeper ones compact; ok is false once the result
// passes limit bytes (it stops there).
func indent(src []byte, depth int, limit int64) (out []byte, ok bool) {
	dst := make([]byte, 0, int(min(int64(len(src)+len(src)/2), limit))+1)
	level := 0
	newline := func(l int) {
		dst = append(dst, '\n')
		for range l {
			dst = append(dst, ' ', ' ')
		}
	}
	for i := 0; i < len(src); i++ {
		switch c := src[i]; c {
		case '"': // a string, copied up to its closing quote
			j := i + 1
			for j < len(src) && src[j] != '"' {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			j = min(j, len(src)-1)
			dst = append(dst, src[i:j+1]...)
			i = j
		case '{', '[':
			level++
			dst = append(dst, c)
			if level <= depth && i+1 < len(src) && src[i+1] != '}' && src[i+1] != ']' {
				newline(level)
			}
		case '}', ']':
			if level <= depth && i > 0 && src[i-1] != '{' && src[i-1] != '[' {
				newline(level - 1)
			}
			level--
			dst = append(dst, c)
		case ',':
			dst = append(dst, c)
			if level <= depth {
				newline(level)
			}
		case ':':
			dst = append(dst, c)
			if level <= depth {
				dst = append(dst, ' ')
			}
		default:
			dst = append(dst, c)
		}
		if int64(len(dst)) > limit {
			return nil, false
		}
	}
	return dst, true
}

// encodeCompact is v as compact JSON with '<', '>' and '&' kept as they are.
func encodeCompact(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
