package conversefake

import (
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/core/model/scripted"
)

// The usage as it goes on the wire with estimates on: cacheDetails by TTL, 1h first.
func TestEstimatedUsageOnTheWire(t *testing.T) {
	fake, hs := newServer(t, "usage: estimate\nagent:\n  - text: fine\n  - text: again\n")
	sys := strings.Repeat("s", 4400)
	b := body(`{"role":"user","content":[{"text":"more"},{"cachePoint":{"type":"default","ttl":"5m"}}]}`,
		`,"system":[{"text":"`+sys+`"},{"cachePoint":{"type":"default","ttl":"1h"}}]`)
	status, _, resp := post(t, hs.URL, b)
	want := `"usage":{"inputTokens":0,"outputTokens":1,"totalTokens":1102,"cacheReadInputTokens":0,"cacheWriteInputTokens":1101,"cacheDetails":[{"ttl":"1h","inputTokens":1100},{"ttl":"5m","inputTokens":1}]}`
	if status != 200 || !strings.Contains(resp, want) {
		t.Errorf("got %d %s\nwant %s", status, resp, want)
	}
	// a hit writes nothing: no cacheDetails at all
	status, _, resp = post(t, hs.URL, b)
	want = `"usage":{"inputTokens":0,"outputTokens":2,"totalTokens":1103,"cacheReadInputTokens":1101,"cacheWriteInputTokens":0},`
	if status != 200 || !strings.Contains(resp, want) {
		t.Errorf("got %d %s\nwant %s", status, resp, want)
	}
	if recs := fake.Requests(); len(recs) != 2 || recs[1].Usage.CacheReadInputTokens != 1101 || recs[1].CacheWrites != nil {
		t.Errorf("recorded %+v", recs)
	}
}

// The limit of 4 cachePoints stays a refusal with estimates on, and nothing is accounted.
func TestEstimateKeepsTheCachePointLimit(t *testing.T) {
	fake, hs := newServer(t, "usage: estimate\nagent:\n  - text: never\n")
	b := body(`{"role":"user","content":[{"text":"x"},`+cp+`,`+cp+`]}`, `,"system":[{"text":"s"},`+cp+`],"toolConfig":{"tools":[{"toolSpec":{"name":"a","inputSchema":{"json":{"type":"object"}}}},`+cp+`,`+cp+`]}`)
	if status, hdr, resp := post(t, hs.URL, b); status != 400 || hdr.Get("X-Amzn-Errortype") != "ValidationException" || !strings.Contains(resp, "at most 4 cachePoint blocks") {
		t.Errorf("got %d %s", status, resp)
	}
	if recs := fake.Requests(); len(recs) != 1 || recs[0].Usage != (scripted.Usage{}) || recs[0].CacheWrites != nil {
		t.Errorf("recorded %+v", recs)
	}
	if n := len(fake.cache["us.anthropic.claude-x-v1:0"]); n != 0 {
		t.Errorf("%d cache entries after a refusal", n)
	}
}
