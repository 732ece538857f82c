package host

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/core/hostconfig"
)

// DeployedMismatch holds the file read to the digest the stack deployed: the same file, or
// no check asked for, is no warning; a different file, a missing one and one the stack
// never saw each say what is wrong and how to fix it.
func TestDeployedMismatch(t *testing.T) {
	file := []byte(hostFile)
	digest := hostconfig.Digest(file)
	for _, c := range []struct {
		name, deployed string
		src            []byte
		want           string // "" = no warning; else a part of it
	}{
		{"no check", "", file, ""},
		{"no check, no file", "", nil, ""},
		{"the deployed file", digest, file, ""},
		{"deployed without one, none read", hostconfig.NoFile, nil, ""},
		{"another file", digest, []byte(hostFile + "# edited\n"), "differs from the one the stack was deployed with (sha256 " + digest + ")"},
		{"an empty file is a file", hostconfig.NoFile, []byte{}, "deployed from a workspace without one"},
		{"a file uploaded later", hostconfig.NoFile, file, "(sha256 " + digest + ") is not the stack's"},
		{"the file removed", digest, nil, "but the spec prefix holds none"},
	} {
		got := DeployedMismatch(c.deployed, c.src)
		switch {
		case c.want == "" && got != "":
			t.Errorf("%s: warns %q", c.name, got)
		case c.want != "" && !strings.Contains(got, c.want):
			t.Errorf("%s: %q, want it to say %q", c.name, got, c.want)
		case c.want != "" && !strings.Contains(got, "make deploy WORKSPACE="):
			t.Errorf("%s: %q names no fix", c.name, got)
		}
	}
}

// Engines logs one warning per container for each host file it reads that is not the
// deployed one — not one per request — and none for the deployed file or without a digest.
func TestEnginesWarnOnceForAFileThatIsNotTheDeployedOne(t *testing.T) {
	ctx := context.Background()
	var logged bytes.Buffer
	w := newWorld(t)
	w.env.Deployed, w.env.Log = hostconfig.Digest([]byte(hostFile)), slog.New(slog.NewJSONHandler(&logged, nil))
	w.write(t, hostFile)
	engines := NewEngines(w.base, w.env)
	warnings := func() int { return strings.Count(logged.String(), `"level":"WARN"`) }
	for range 3 {
		if _, err := engines.Engine(ctx, "wf"); err != nil {
			t.Fatal(err)
		}
	}
	if n := warnings(); n != 0 {
		t.Fatalf("the deployed file: %d warnings\n%s", n, logged.String())
	}
	edited := hostFile + "# edited in the bucket\n"
	w.write(t, edited)
	for range 3 {
		if _, err := engines.Engine(ctx, "wf"); err != nil {
			t.Fatal(err)
		}
	}
	if n := warnings(); n != 1 || !strings.Contains(logged.String(), `"readSha256":"`+hostconfig.Digest([]byte(edited))+`"`) ||
		!strings.Contains(logged.String(), `"deployedSha256":"`+w.env.Deployed+`"`) {
		t.Fatalf("an edited file read three times: %d warnings\n%s", n, logged.String())
	}
	w.write(t, "tools: {}\n") // a file that does not load differs too: warned once, still refused
	for range 2 {
		if _, err := engines.Engine(ctx, "wf"); err == nil {
			t.Fatal("a broken host file served an engine")
		}
	}
	w.write(t, hostFile) // back to the deployed file: nothing more
	if _, err := engines.Engine(ctx, "wf"); err != nil {
		t.Fatal(err)
	}
	if n := warnings(); n != 2 {
		t.Errorf("after a broken file and the deployed one: %d warnings, want 2\n%s", n, logged.String())
	}

	// no digest (a stack synthesized without a workspace): no check at all
	logged.Reset()
	w2 := newWorld(t)
	w2.env.Log = slog.New(slog.NewJSONHandler(&logged, nil))
	w2.write(t, edited)
	if _, err := NewEngines(w2.base, w2.env).Engine(ctx, "wf"); err != nil || logged.Len() != 0 {
		t.Errorf("no deployed digest: %v, logged %s", err, logged.String())
	}
}
