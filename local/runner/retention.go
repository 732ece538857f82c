package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/archmax-ai/archmax/core/hostconfig"
	"github.com/archmax-ai/archmax/core/store"
)

// EnvSessionTTL is the session retention of local runs without the host file's retention:
// section (<n>d or <n>h, hostconfig.ParseRetention), as the functions read it.
const EnvSessionTTL = "ARCHMAX_SESSION_TTL"

// SessionTTL is the retention ARCHMAX_SESSION_TTL gives (getenv's value; 0 when unset) under
// the host file host (nil: none, or one that does not parse). The file's retention: section
// replaces the variable wholesale (RD22-10), so with the section the variable is ignored —
// a bad value too, without an error (RD22-18); without it a bad value is an error, which
// `archmax validate` reports as well.
func SessionTTL(getenv func(string) string, host *hostconfig.Config) (time.Duration, error) {
	v := getenv(EnvSessionTTL)
	if v == "" || host != nil && host.Retention != nil {
		return 0, nil
	}
	d, err := hostconfig.ParseRetention(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", EnvSessionTTL, err)
	}
	return d, nil
}

// hostFile parses the workspace's host file as far as it goes (nil when there is none): what
// SessionTTL needs of it before the engines load it for good.
func hostFile(ctx context.Context, authored store.Files) *hostconfig.Config {
	src, err := authored.Read(ctx, hostconfig.File)
	if err != nil {
		return nil
	}
	cfg, _ := hostconfig.Parse(src)
	return cfg
}
