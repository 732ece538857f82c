package main

import (
	"runtime/debug"
	"strings"
)

// compatibility is the workflow contract this CLI runs: workflows, scripts, cases and command
// lines written for the reference runtime at this version.
const compatibility = "@archmax-ai/harness 1.0"

// versionLine is what --version prints: the build's module version (or "devel"), its VCS
// revision when the build recorded one, and the contract it runs.
func versionLine() string {
	v, rev, dirty := "devel", "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	var b strings.Builder
	b.WriteString("archmax " + v)
	if rev != "" {
		b.WriteString(" (" + rev)
		if dirty {
			b.WriteString(", modified")
		}
		b.WriteString(")")
	}
	b.WriteString(" — runs " + compatibility + " workflows")
	return b.String()
}
