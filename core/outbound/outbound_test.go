package outbound

import (
	"encoding/json"
	"strings"
	"testing"
)

// A detail over the cap loses its largest values first, named in omitted; the identity stays.
func TestFit(t *testing.T) {
	d := map[string]any{"eventId": "s:1", "sessionId": "s", "sessionSeq": 1, "state": "a", "reason": strings.Repeat("x", 5000), "code": "c"}
	if b := Fit(d, 1<<20); len(b) < 5000 {
		t.Fatalf("fits, but cut: %s", b)
	}
	b := Fit(d, 1024)
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil || len(b) > 1024 {
		t.Fatalf("%d bytes: %s", len(b), b)
	}
	if got["reason"] != nil || got["code"] != "c" || got["eventId"] != "s:1" || got["state"] != "a" {
		t.Errorf("fitted = %v", got)
	}
	if o, _ := json.Marshal(got["omitted"]); string(o) != `["reason"]` {
		t.Errorf("omitted = %s", o)
	}
	if EventID("a~1", 7) != "a~1:7" || APIPath("a b") != "/v1/sessions/a%20b" {
		t.Error("ids")
	}
}
