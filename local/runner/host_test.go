package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/core/hostconfig"
	"github.com/archmax-ai/archmax/core/session"
)

// writeTree writes files (path → content) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, s := range files {
		f := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// archmax run/test/serve read the host file from the workspace root: its rules run in the
// kernel, its mounts are served from their dir, and no mount may serve the workspace.
func TestLocalRunsApplyTheHostFile(t *testing.T) {
	ws := t.TempDir()
	writeTree(t, ws, map[string]string{
		"workflows/desk/workflow.yaml": "states:\n  work:\n    triggers: { manual: }\n    instructions: Work.\n",
		"library/terms/a.md":           "terms A",
		"library/terms/secret.md":      "not for agents",
		hostconfig.File: `mounts:
  - { name: terms, dir: library/terms }
policyRules:
  - id: host.no-secrets
    effect: block
    tools: [read_file]
    paths: ["terms/secret*"]
    reason: That file is not for agents.
`,
		"model.yaml": `agent:
  - toolCalls:
      - { name: read_file, input: { file_path: terms/a.md } }
      - { name: read_file, input: { file_path: terms/secret.md } }
      - { name: write_file, input: { file_path: terms/b.md, content: x } }
  - text: Done.
`,
	})
	env, err := Open(context.Background(), Options{Workspace: ws, StoreDir: t.TempDir(), ModelScript: filepath.Join(ws, "model.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	eng, err := env.Engine("desk")
	if err != nil {
		t.Fatal(err)
	}
	out, err := eng.Send(context.Background(), "s1", session.SendInput{Message: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	var results []string
	for _, m := range out.Messages {
		if m.Tool == "read_file" || m.Tool == "write_file" {
			results = append(results, m.Text)
		}
	}
	if len(results) != 3 || !strings.Contains(results[0], "terms A") ||
		results[1] != "[workflow] BLOCKED: 'read_file' on 'terms/secret.md' is refused by the host's rule 'host.no-secrets': That file is not for agents." ||
		!strings.Contains(results[2], "read-only") {
		t.Errorf("results: %q", results)
	}

	// serve's engines follow the file
	engines, err := env.Engines()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := engines.Engine(context.Background(), "desk"); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{".", "..", "workflows", "library/../skills/x", "AGENTS.md"} {
		writeTree(t, ws, map[string]string{hostconfig.File: "mounts:\n  - { name: all, dir: '" + dir + "' }\n"})
		if _, err := env.Engine("desk"); err == nil || !strings.Contains(err.Error(), "mount 'all'") {
			t.Errorf("a mount of %s: %v", dir, err)
		}
		if _, err := engines.Engine(context.Background(), "desk"); err == nil {
			t.Errorf("serve, a mount of %s: no error", dir)
		}
	}
	writeTree(t, ws, map[string]string{hostconfig.File: "mounts:\n  - { name: terms, s3: 's3://acme/terms/' }\n"})
	if _, err := env.Engine("desk"); err == nil || !strings.Contains(err.Error(), "has no dir") {
		t.Errorf("an S3-only mount locally: %v", err)
	}
}

// A mount's dir is resolved before it is checked (hostconfig.LocalMountProblem): a link to
// the workspace, into its workflows/ or to the session store is refused like the path it
// points at, located and hinted as `archmax validate` reports it; a link to a folder of its
// own is served, from its target.
func TestLocalRunsResolveMountLinks(t *testing.T) {
	root := t.TempDir()
	ws, store := filepath.Join(root, "ws"), filepath.Join(root, "store")
	writeTree(t, ws, map[string]string{
		"workflows/desk/workflow.yaml":   "states:\n  work:\n    triggers: { manual: }\n    instructions: Work.\n",
		"workflows/desk/scripts/c.js":    "// the authoring plane",
		".env":                           "SECRET=1\n",
		"../outside/terms/a.md":          "terms A",
		"../store/files/other/secret.md": "another session's",
		"model.yaml":                     "agent:\n  - toolCalls:\n      - { name: read_file, input: { file_path: terms/a.md } }\n  - text: Done.\n",
	})
	link := func(name, target string) string {
		t.Helper()
		p := filepath.Join(root, name)
		if err := os.Symlink(target, p); err != nil {
			t.Fatalf("cannot make a symbolic link (the security check under test needs one): %v", err)
		}
		return p
	}
	for name, target := range map[string]string{"ws-link": ws, "wf-link": filepath.Join(ws, "workflows"), "store-link": store,
		"default-store-link": filepath.Join(ws, ".archmax"), "env-link": filepath.Join(ws, ".env")} {
		file := ""
		if name == "env-link" {
			file = ", file: true"
		}
		writeTree(t, ws, map[string]string{hostconfig.File: "mounts:\n  - { name: terms, dir: '" + link(name, target) + "'" + file + " }\n"})
		env, err := Open(context.Background(), Options{Workspace: ws, StoreDir: store, ModelScript: filepath.Join(ws, "model.yaml")})
		if err != nil {
			t.Fatal(err)
		}
		_, err = env.Engine("desk")
		env.Close()
		if err == nil || !strings.Contains(err.Error(), "archmax.host.yaml:2:") || !strings.Contains(err.Error(), "mount 'terms'") ||
			!strings.Contains(err.Error(), "its links followed") || !strings.Contains(err.Error(), "[mounts.0.dir] (hint: ") {
			t.Errorf("a mount through %s: %v", name, err)
		}
	}

	writeTree(t, ws, map[string]string{hostconfig.File: "mounts:\n  - { name: terms, dir: '" + link("out-link", filepath.Join(root, "outside", "terms")) + "' }\n"})
	env, err := Open(context.Background(), Options{Workspace: ws, StoreDir: store, ModelScript: filepath.Join(ws, "model.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	eng, err := env.Engine("desk")
	if err != nil {
		t.Fatal(err)
	}
	out, err := eng.Send(context.Background(), "s1", session.SendInput{Message: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	read := false
	for _, m := range out.Messages {
		read = read || m.Tool == "read_file" && strings.Contains(m.Text, "terms A")
	}
	if !read {
		t.Errorf("the linked folder was not served: %+v", out.Messages)
	}
}
