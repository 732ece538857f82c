package store

import (
	"encoding/base64"
	"testing"
)

// L5-6, C6-22: a cursor Encode wrote decodes to its position; a cursor the API never
// issued — whatever base64 of JSON it holds — is refused.
func TestDecodeCursorAcceptsOnlyIssuedCursors(t *testing.T) {
	issued := Cursor{UpdatedAt: "2026-03-01T10:00:00.123Z", SessionID: "demo-2"}
	got, err := DecodeCursor(issued.Encode())
	if err != nil || got == nil || *got != issued {
		t.Fatalf("DecodeCursor(issued) = %+v, %v", got, err)
	}
	odd := Cursor{UpdatedAt: "2026-03-01T10:00:00.123Z", SessionID: "a<b>&c~1"}
	if got, err := DecodeCursor(odd.Encode()); err != nil || *got != odd {
		t.Fatalf("an issued cursor with escaped characters = %+v, %v", got, err)
	}
	if got, err := DecodeCursor(""); got != nil || err != nil {
		t.Fatalf("the first page = %+v, %v", got, err)
	}
	b64 := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for name, forged := range map[string]string{
		"not base64":             "!!",
		"padded base64":          base64.URLEncoding.EncodeToString([]byte(`{"u":"2026-03-01T10:00:00.123Z","s":"demo-22"}`)),
		"another object":         b64(`{"x":1}`),
		"an empty object":        b64(`{}`),
		"garbage time, no id":    b64(`{"u":"garbage","s":""}`),
		"garbage time":           b64(`{"u":"garbage","s":"demo-2"}`),
		"no id":                  b64(`{"u":"2026-03-01T10:00:00.123Z","s":""}`),
		"id with a slash":        b64(`{"u":"2026-03-01T10:00:00.123Z","s":"a/b"}`),
		"id with a control char": b64(`{"u":"2026-03-01T10:00:00.123Z","s":"a\nb"}`),
		"an extra field":         b64(`{"u":"2026-03-01T10:00:00.123Z","s":"demo-2","x":1}`),
		"reordered":              b64(`{"s":"demo-2","u":"2026-03-01T10:00:00.123Z"}`),
		"spaced":                 b64(`{"u": "2026-03-01T10:00:00.123Z", "s": "demo-2"}`),
		"two values":             b64(`{"u":"2026-03-01T10:00:00.123Z","s":"demo-2"}{}`),
		"an array":               b64(`["2026-03-01T10:00:00.123Z","demo-2"]`),
		"null":                   b64(`null`),
		"a number id":            b64(`{"u":"2026-03-01T10:00:00.123Z","s":7}`),
	} {
		if got, err := DecodeCursor(forged); err == nil {
			t.Errorf("%s: DecodeCursor(%q) = %+v, want an error", name, forged, got)
		}
	}
}
