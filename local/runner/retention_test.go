package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/hostconfig"
)

// RD22-18: ARCHMAX_SESSION_TTL is ignored — a bad value too, with no error — when the host
// file has a retention: section; without one a bad value is an error.
func TestSessionTTLVariable(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == EnvSessionTTL {
				return v
			}
			return ""
		}
	}
	withSection := &hostconfig.Config{Retention: &hostconfig.Retention{Sessions: 48 * time.Hour}}
	noSection := &hostconfig.Config{}
	for _, c := range []struct {
		value string
		host  *hostconfig.Config
		want  time.Duration
		err   string
	}{
		{"", nil, 0, ""},
		{"30d", nil, 30 * 24 * time.Hour, ""},
		{"30d", noSection, 30 * 24 * time.Hour, ""},
		{"30d", withSection, 0, ""},     // the section replaces it (host.Apply sets its period)
		{"forever", withSection, 0, ""}, // ignored: no error
		{"forever", nil, 0, "ARCHMAX_SESSION_TTL: \"forever\" is not a retention period"},
		{"10m", noSection, 0, "ARCHMAX_SESSION_TTL: \"10m\" is not a retention period"},
	} {
		got, err := SessionTTL(env(c.value), c.host)
		if got != c.want || (c.err == "") != (err == nil) || err != nil && !strings.HasPrefix(err.Error(), c.err) {
			t.Errorf("%q under %+v = %v, %v; want %v, %q", c.value, c.host, got, err, c.want, c.err)
		}
	}
}

// RD22-18 through a local run's configuration: a bad ARCHMAX_SESSION_TTL stops it only when
// the host file has no retention: section.
func TestBadSessionTTLVariableUnderTheHostFile(t *testing.T) {
	t.Setenv(EnvSessionTTL, "forever")
	for _, section := range []bool{true, false} {
		ws := t.TempDir()
		host := "# no retention\n"
		if section {
			host = "retention:\n  sessions: 2d\n"
		}
		if err := os.WriteFile(filepath.Join(ws, hostconfig.File), []byte(host), 0o644); err != nil {
			t.Fatal(err)
		}
		env, err := Open(context.Background(), Options{Workspace: ws, StoreDir: t.TempDir(), ModelScript: script("happy")})
		if err != nil {
			t.Fatal(err)
		}
		_, err = env.Config()
		env.Close()
		if section && err != nil {
			t.Errorf("with a retention: section the bad variable stopped the run: %v", err)
		}
		if !section && (err == nil || !strings.Contains(err.Error(), EnvSessionTTL)) {
			t.Errorf("without the section a bad variable = %v, want an error naming it", err)
		}
	}
}
