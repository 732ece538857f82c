package hostconfig

import (
	"testing"
	"time"
)

// RD22-8: retention periods — <n>d or <n>h from 1h to 3650d — in the file and for
// ARCHMAX_SESSION_TTL; anything else is a finding at its field.
func TestRetention(t *testing.T) {
	for in, want := range map[string]time.Duration{"30d": 30 * 24 * time.Hour, "12h": 12 * time.Hour, "1h": time.Hour, "3650d": 3650 * 24 * time.Hour} {
		if got, err := ParseRetention(in); err != nil || got != want {
			t.Errorf("ParseRetention(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0d", "30", "1.5d", "90m", "3651d", "-1d", " 30d", "30D", "720h0m"} {
		if _, err := ParseRetention(in); err == nil {
			t.Errorf("ParseRetention(%q) accepted", in)
		}
	}
	cfg, diags := Parse([]byte("retention: { sessions: 30d }\n"))
	if len(diags) != 0 || cfg.Retention == nil || cfg.Retention.Sessions != 30*24*time.Hour || cfg.Retention.Line != 1 {
		t.Fatalf("retention = %+v, %v", cfg.Retention, diags)
	}
	if cfg, _ := Parse([]byte("version: 1\n")); cfg.Retention != nil {
		t.Errorf("no section: %+v", cfg.Retention)
	}
	for src, field := range map[string]string{
		"retention: 30d\n":                     "retention",
		"retention: { sessions: 0d }\n":        "retention.sessions",
		"retention: { sessions: 30 }\n":        "retention.sessions",
		"retention: { sessions: 30d, x: 1 }\n": "retention.x",
	} {
		_, diags := Parse([]byte(src))
		if len(diags) != 1 || diags[0].Field != field {
			t.Errorf("%q: %v, want one finding at %s", src, diags, field)
		}
	}
}
