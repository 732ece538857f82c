package hostconfig

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mountTree is a workspace (ws) with its own entries, a data folder inside it and one
// outside, a session store elsewhere, and links (made by link) pointing into each.
func mountTree(t *testing.T) (root, ws string, link func(name, target string) string) {
	t.Helper()
	root = t.TempDir()
	ws = filepath.Join(root, "ws")
	for _, d := range []string{"workflows/m/scripts", "skills/s", ".platform", ".archmax/files", "data/terms", "../outside", "../store/files"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{File, ".env", "AGENTS.md", "workflows/m/scripts/c.js", "data/terms/a.md", "../outside/o.md"} {
		if err := os.WriteFile(filepath.Join(ws, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link = func(name, target string) string {
		t.Helper()
		p := filepath.Join(root, name)
		if err := os.Symlink(target, p); err != nil {
			t.Fatalf("cannot make a symbolic link (the security check under test needs one): %v", err)
		}
		return p
	}
	return root, ws, link
}

// A mount's dir is resolved — made absolute against the workspace root, every link followed —
// before it is compared with the workspace, its own entries and the session store: a link
// never carries a mount into what no mount may serve; what is checked is what is opened.
func TestLocalMountProblemResolvesLinks(t *testing.T) {
	root, ws, link := mountTree(t)
	store := filepath.Join(root, "store")
	roots := LocalRoots{Workspace: ws, Store: store}
	refused := map[string]struct {
		m           MountDecl
		code, field string
		says        string
	}{
		"the workspace":              {MountDecl{Dir: "."}, CodeMount, "dir", "holds the workspace"},
		"its parent":                 {MountDecl{Dir: ".."}, CodeMount, "dir", "holds the workspace"},
		"workflows/":                 {MountDecl{Dir: "./workflows"}, CodeMount, "dir", "is the workspace's workflows/"},
		"in workflows/, any case":    {MountDecl{Dir: "Workflows/m"}, CodeMount, "dir", "lies in the workspace's workflows/"},
		"through ..":                 {MountDecl{Dir: "data/../skills/s"}, CodeMount, "dir", "lies in the workspace's skills/"},
		"the default store":          {MountDecl{Dir: ".archmax"}, CodeMount, "dir", "is the workspace's .archmax/"},
		"the .env file":              {MountDecl{Dir: ".env", File: true}, CodeMount, "dir", "is the workspace's .env"},
		"the host file":              {MountDecl{Dir: File, File: true}, CodeMount, "dir", "is the workspace's archmax.host.yaml"},
		"AGENTS.md":                  {MountDecl{Dir: "AGENTS.md", File: true}, CodeMount, "dir", "is the workspace's AGENTS.md"},
		"the run's store":            {MountDecl{Dir: store + "/files"}, CodeMount, "dir", "overlaps the session store"},
		"above the run's store":      {MountDecl{Dir: root + "/../" + filepath.Base(root)}, CodeMount, "dir", "holds the workspace"},
		"a link to the workspace":    {MountDecl{Dir: link("ws-link", ws)}, CodeMount, "dir", "holds the workspace"},
		"a link to the store":        {MountDecl{Dir: link("st-link", filepath.Join(ws, ".archmax"))}, CodeMount, "dir", "is the workspace's .archmax/"},
		"a link into workflows/":     {MountDecl{Dir: link("wf-link", filepath.Join(ws, "workflows/m/scripts"))}, CodeMount, "dir", "lies in the workspace's workflows/"},
		"a link to the run's store":  {MountDecl{Dir: link("rs-link", store)}, CodeMount, "dir", "overlaps the session store"},
		"a link to the .env":         {MountDecl{Dir: link("env-link", filepath.Join(ws, ".env")), File: true}, CodeMount, "dir", "is the workspace's .env"},
		"below a link, not there":    {MountDecl{Dir: filepath.Join(root, "ws-link", "workflows", "new")}, CodeMount, "dir", "lies in the workspace's workflows/"},
		"a missing dir":              {MountDecl{Dir: "data/none"}, CodeMountDir, "dir", "does not exist"},
		"no dir (s3 only)":           {MountDecl{S3: "s3://acme/x/"}, CodeMountDir, "", "has no dir"},
		"a folder under file: true":  {MountDecl{Dir: "data/terms", File: true, ReadOnly: true}, CodeMount, "file", "is a folder"},
		"a file without file: true":  {MountDecl{Dir: "data/terms/a.md"}, CodeMount, "dir", "is a file"},
		"a writable file mount":      {MountDecl{Dir: "data/terms/a.md", File: true}, CodeMount, "readOnly", "read-only"},
		"a link to a link to the ws": {MountDecl{Dir: link("ws-link2", filepath.Join(root, "ws-link"))}, CodeMount, "dir", "holds the workspace"},
		"a dangling link into ws":    {MountDecl{Dir: link("dangling", filepath.Join(ws, "workflows", "later"))}, CodeMount, "dir", "lies in the workspace's workflows/"},
		"a relative link":            {MountDecl{Dir: link("rel-link", "ws/.archmax")}, CodeMount, "dir", "is the workspace's .archmax/"},
		"a loop":                     {MountDecl{Dir: link("loop-a", filepath.Join(root, "loop-b"))}, CodeMountDir, "dir", "cannot be resolved"},
	}
	link("loop-b", filepath.Join(root, "loop-a"))
	for name, c := range refused {
		_, p := LocalMountProblem(c.m, roots)
		if p == nil || p.Code != c.code || p.Field != c.field || !strings.Contains(p.Message, c.says) || p.Hint == "" {
			t.Errorf("%s (%s): %+v", name, c.m.Dir, p)
		}
	}
	// a workspace entry that is itself a link: its target is refused too
	if err := os.Rename(filepath.Join(ws, "skills"), filepath.Join(root, "real-skills")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "real-skills"), filepath.Join(ws, "skills")); err != nil {
		t.Fatal(err)
	}
	if _, p := LocalMountProblem(MountDecl{Dir: filepath.Join(root, "real-skills", "s")}, roots); p == nil || !strings.Contains(p.Message, "skills/") {
		t.Errorf("the target of the workspace's skills link: %+v", p)
	}

	served := map[string]struct {
		m    MountDecl
		want string
	}{
		"a folder in the workspace":  {MountDecl{Dir: "data/terms", ReadOnly: true}, filepath.Join(ws, "data/terms")},
		"a folder outside it":        {MountDecl{Dir: "../outside"}, filepath.Join(root, "outside")},
		"a link to a folder outside": {MountDecl{Dir: link("out-link", filepath.Join(root, "outside"))}, filepath.Join(root, "outside")},
		"one file":                   {MountDecl{Dir: "data/terms/a.md", File: true, ReadOnly: true}, filepath.Join(ws, "data/terms/a.md")},
	}
	for name, c := range served {
		got, p := LocalMountProblem(c.m, roots)
		want, _ := filepath.EvalSymlinks(c.want)
		if p != nil || got.Path != want || got.Info == nil {
			t.Errorf("%s: %+v %v (want %s)", name, got, p, want)
		}
	}

	// the workspace root given through a link (macOS's /tmp) resolves alike
	wsLink := filepath.Join(root, "ws-link")
	if _, p := LocalMountProblem(MountDecl{Dir: filepath.Join(ws, "workflows")}, LocalRoots{Workspace: wsLink}); p == nil {
		t.Error("workflows/ under a linked workspace root: served")
	}
	if _, p := LocalMountProblem(MountDecl{Dir: "data/terms"}, LocalRoots{Workspace: wsLink}); p != nil {
		t.Errorf("data/terms under a linked workspace root: %v", p)
	}
}

// validate's view: each mount's first problem at the field it names, an error — a dir this
// machine cannot serve only a warning when the mount has an s3 location the functions serve;
// a mount with findings of its own is left to them.
func TestLocalMountDiagnostics(t *testing.T) {
	_, ws, _ := mountTree(t)
	src := `mounts:
  - name: a
    dir: ./workflows
  - name: b
    s3: s3://acme/b/
  - name: c
    s3: s3://acme/c/
    dir: ./none
  - name: d
    dir: ./none
  - name: e
    dir: data/terms
    file: true
  - name: f
    dir: data/terms
  - name: skills
    dir: .
`
	cfg, parsed := Parse([]byte(src))
	if len(parsed) != 1 || parsed[0].Field != "mounts.6.name" {
		t.Fatalf("parse: %+v", parsed)
	}
	got := map[string]string{}
	for _, d := range LocalMountDiagnostics(cfg, parsed, LocalRoots{Workspace: ws}) {
		got[d.Field] = fmt.Sprintf("%s %s %d:%d", d.Severity, d.Code, d.Line, d.Column)
		if d.Hint == "" || d.File != File || !strings.HasPrefix(d.Message, "mount '") {
			t.Errorf("%+v", d)
		}
	}
	want := map[string]string{
		"mounts.0.dir":  "error host.mount 3:10",
		"mounts.1":      "warning host.mount-dir 4:5",
		"mounts.2.dir":  "warning host.mount-dir 8:10",
		"mounts.3.dir":  "error host.mount-dir 10:10",
		"mounts.4.file": "error host.mount 13:11",
	}
	if len(got) != len(want) {
		t.Errorf("got %v", got)
	}
	for f, w := range want {
		if got[f] != w {
			t.Errorf("%s: %q, want %q", f, got[f], w)
		}
	}
}
