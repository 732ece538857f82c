package conversefake

import (
	"encoding/json"
	"testing"
)

// The engine's per-call content after the conversation's cachePoint is system prompt to a
// script (systemIncludes), never the newest user text (lastUserText).
func TestPerCallContentIsNotUserText(t *testing.T) {
	for name, c := range map[string]struct {
		body             string
		lastUser, system string
	}{
		"after the cachePoint": {`{"system":[{"text":"static"}],"messages":[{"role":"user","content":[{"text":"I need the east lab"},{"cachePoint":{"type":"default"}},{"text":"# Current state: check-grants"}]}]}`,
			"I need the east lab", "static\n# Current state: check-grants"},
		"in a message of its own": {`{"system":[{"text":"static"}],"messages":[{"role":"user","content":[{"text":"hi"}]},{"role":"assistant","content":[{"text":"yes"},{"cachePoint":{"type":"default"}}]},{"role":"user","content":[{"text":"# Current state: a"}]}]}`,
			"hi", "static\n# Current state: a"},
		"no cachePoint": {`{"system":[{"text":"static"}],"messages":[{"role":"user","content":[{"text":"one"},{"text":"two"}]}]}`,
			"two", "static"},
	} {
		var req wireRequest
		if err := json.Unmarshal([]byte(c.body), &req); err != nil {
			t.Fatal(err)
		}
		got := callOf(&req)
		if got.LastUserText != c.lastUser || got.System != c.system {
			t.Errorf("%s: lastUserText %q, system %q", name, got.LastUserText, got.System)
		}
	}
}
