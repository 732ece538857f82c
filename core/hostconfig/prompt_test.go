package hostconfig

import (
	"strings"
	"testing"
)

func TestPromptSection(t *testing.T) {
	cfg, findings := Parse([]byte("version: 1\nprompt:\n  cache: { enabled: false, ttl: 1h }\n"))
	if len(findings) > 0 {
		t.Fatalf("findings %v", findings)
	}
	pc := cfg.Prompt.Cache
	if pc == nil || pc.Enabled == nil || *pc.Enabled || pc.TTL != "1h" {
		t.Fatalf("prompt.cache %+v", pc)
	}
	if cfg, _ := Parse([]byte("prompt: { cache: { ttl: 5m } }\n")); cfg.Prompt.Cache.Enabled != nil || cfg.Prompt.Cache.TTL != "5m" {
		t.Errorf("a key left out must stay unset: %+v", cfg.Prompt.Cache)
	}
	for src, want := range map[string]string{
		"prompt: { cache: false }\n":             "'prompt.cache' must be a mapping",
		"prompt: { cache: { enabled: 'no' } }\n": "'prompt.cache.enabled' must be true or false",
		"prompt: { cache: { ttl: 10m } }\n":      "'prompt.cache.ttl' must be 5m or 1h",
		"prompt: { cache: { size: 1 } }\n":       "size",
		"prompt: []\n":                           "'prompt' must be a mapping",
	} {
		_, findings := Parse([]byte(src))
		if len(findings) == 0 || !strings.Contains(findings[0].Message, want) {
			t.Errorf("%q: findings %v, want %q", src, findings, want)
		}
	}
}
