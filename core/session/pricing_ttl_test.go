package session

import (
	"fmt"
	"testing"

	"github.com/archmax-ai/archmax/core/events"
	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/pricing"
)

// ttlFlow is one agent state whose prompt cache lives for the given TTL.
func ttlFlow(ttl string) string {
	return fmt.Sprintf(`
settings:
  prompt_cache: { enabled: true, ttl: %s }
states:
  work:
    triggers:
      manual:
    instructions: Work.
`, ttl)
}

// cacheWriter answers with text after writing 1,000,000 of its 1,200,000 input tokens to the
// prompt cache, asserting the request's cache points carry the workflow's TTL.
func cacheWriter(t *testing.T, wantTTL string) reply {
	return func(req *model.Request) (*model.Response, error) {
		for _, b := range req.System {
			if b.Kind == model.BlockCachePoint && b.CacheTTL != wantTTL {
				t.Errorf("cache point TTL %q, want %q", b.CacheTTL, wantTTL)
			}
		}
		return &model.Response{StopReason: model.StopEndTurn, Usage: &model.Usage{InputTokens: 1_200_000, OutputTokens: 0, CacheWriteTokens: 1_000_000},
			Message: model.Message{Role: model.RoleAssistant, Content: []model.Block{{Kind: model.BlockText, Text: "Done."}}}}, nil
	}
}

// The same call is priced at the 5-minute write rate under ttl 5m and at the 1-hour one
// under ttl 1h; an entry without a 1-hour rate prices both TTLs at its cacheWrite rate
// (DECISIONS CO22-10).
func TestCacheWritePricedAtTheCallsTTL(t *testing.T) {
	t.Setenv("ARCHMAX_PROMPT_CACHE", "")
	t.Setenv("ARCHMAX_PROMPT_CACHE_TTL", "")
	r := func(v float64) *float64 { return &v }
	withHour := pricing.Table{"test-model": {Input: r(3), Output: r(15), CacheWrite: r(3.75), CacheWrite1h: r(6)}}
	withoutHour := pricing.Table{"test-model": {Input: r(3), Output: r(15), CacheWrite: r(3.75)}}
	for _, c := range []struct {
		name, yamlTTL, reqTTL string
		tab                   pricing.Table
		want                  float64 // 0.2M fresh input at $3 + 1M written at the TTL's rate
	}{
		{"5m", "5m", "", withHour, 0.6 + 3.75},
		{"1h", "1h", "1h", withHour, 0.6 + 6},
		{"1h without a 1-hour rate", "1h", "1h", withoutHour, 0.6 + 3.75},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, ttlFlow(c.yamlTTL), nil)
			h.cfg.Pricing = c.tab
			h.script(cacheWriter(t, c.reqTTL))
			out := h.send("s1", "go", nil)
			evs := h.eventsOf(events.ModelUsage)
			if len(evs) != 1 {
				t.Fatalf("%d model-usage events", len(evs))
			}
			if got, ok := evs[0].Data["costUsd"].(float64); !ok || got != pricing.Round(c.want) {
				t.Errorf("costUsd %v, want %v", evs[0].Data["costUsd"], pricing.Round(c.want))
			}
			if out.Usage == nil || out.Usage.CostUSD == nil || *out.Usage.CostUSD != pricing.Round(c.want) {
				t.Errorf("session usage %+v, want cost %v", out.Usage, c.want)
			}
		})
	}
}
