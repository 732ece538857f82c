package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/core/store"
	"github.com/archmax-ai/archmax/core/store/memory"
)

// sid is the session id of the fixtures; no tool output may contain it (GOV-56).
const sid = "sess-7f3a91"

type fixture struct {
	ws       *Workspace
	session  store.Files
	authored store.Files
}

// newFixture builds a fixture over memory stores (see newFixtureOn).
func newFixture(t testing.TB) *fixture { return newFixtureOn(t, storeKinds[0]) }

// newFixtureOn builds a workspace with the default mounts over stores of one kind: an
// empty session tree, and an authored tree holding a skill, a platform prompt, AGENTS.md
// and a workflow (the authoring plane).
func newFixtureOn(t testing.TB, kind storeKind) *fixture {
	t.Helper()
	f := &fixture{session: kind.open(t), authored: kind.open(t)}
	f.put(t, f.authored, "skills/triage/SKILL.md", "# Triage\nSort the tickets.\n")
	f.put(t, f.authored, "skills/triage/scripts/run.js", "export default 1\n")
	f.put(t, f.authored, ".platform/system/GRAPH_STATE.md", "platform prompt\n")
	f.put(t, f.authored, "AGENTS.md", "be kind\n")
	f.put(t, f.authored, "workflows/support/workflow.yaml", "title: Support\n")
	f.ws = New(f.session, sid, DefaultMounts(f.authored))
	return f
}

func (f *fixture) put(t testing.TB, files store.Files, key, content string) {
	t.Helper()
	if err := files.Write(context.Background(), key, []byte(content)); err != nil {
		t.Fatal(err)
	}
}

// file writes a session file at workspace path p.
func (f *fixture) file(t testing.TB, p, content string) {
	t.Helper()
	f.put(t, f.session, sid+"/"+p, content)
}

// call runs a tool and fails the test on a Go error.
func (f *fixture) call(t testing.TB, tool, args string) Result {
	t.Helper()
	res, err := f.ws.Call(context.Background(), tool, json.RawMessage(args))
	if err != nil {
		t.Fatalf("%s %s: %v", tool, args, err)
	}
	if strings.Contains(res.Text, sid) {
		t.Fatalf("%s %s: result leaks the session id: %q", tool, args, res.Text)
	}
	return res
}

// text runs a tool that must not fail its argument checks and returns its text.
func (f *fixture) text(t testing.TB, tool, args string) string {
	t.Helper()
	res := f.call(t, tool, args)
	if res.Error {
		t.Fatalf("%s %s: unexpected error status: %s", tool, args, res.Text)
	}
	return res.Text
}

func TestCanonicalize(t *testing.T) { // GOV-30, GOV-56
	tests := []struct{ in, want string }{
		{"", ""},
		{"/", ""},
		{"./x", "x"},
		{"a/../x", "x"},
		{"/scratchpad/a", "scratchpad/a"},
		{"//scratchpad//a/./b/", "scratchpad/a/b"},
		{"scratchpad\\a", "scratchpad/a"},
		{"scratchpad/../checkpoints/x", "checkpoints/x"},
		{".env", ".env"},
		{"a/..", ""},
	}
	for _, tt := range tests {
		got, err := Canonicalize(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("Canonicalize(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, in := range []string{"../x", "/..", "a/../../x", "scratchpad/../../etc/passwd"} {
		_, err := Canonicalize(in)
		var pe *PathEscapeError
		if !errors.As(err, &pe) || pe.Name() != "WorkspacePathEscapeError" || pe.Path != in {
			t.Errorf("Canonicalize(%q) error = %v; want *PathEscapeError for it", in, err)
		}
	}
}

func TestMountOf(t *testing.T) { // GOV-49: the longest matching mount
	ws := New(memory.NewFiles(), sid, []Mount{
		{Name: "skills"}, {Name: "catalogs"}, {Name: "catalogs/eu"}, {Name: "AGENTS.md", File: true},
	})
	tests := []struct{ path, want string }{
		{"skills", "skills"},
		{"skills/x/SKILL.md", "skills"},
		{"skillsets/x", ""},
		{"catalogs/eu/a.csv", "catalogs/eu"},
		{"catalogs/eu", "catalogs/eu"},
		{"catalogs/uk/a.csv", "catalogs"},
		{"AGENTS.md", "AGENTS.md"},
		{"AGENTS.md/x", ""},
		{"scratchpad/a", ""},
		{"", ""},
	}
	for _, tt := range tests {
		m, ok := ws.MountOf(tt.path)
		got := ""
		if ok {
			got = m.Name
		}
		if got != tt.want {
			t.Errorf("MountOf(%q) = %q; want %q", tt.path, got, tt.want)
		}
	}
}

func TestTools(t *testing.T) { // BR-40, BR-22
	want := []string{"ls", "read_file", "write_file", "edit_file", "glob", "grep", "copy_file", "move_file", "remove_file"}
	if got := Tools(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("Tools() = %v; want %v", got, want)
	}
	args := map[string][]string{
		"ls":          {"path"},
		"read_file":   {"file_path", "offset", "limit"},
		"write_file":  {"file_path", "content"},
		"edit_file":   {"file_path", "old_string", "new_string", "replace_all"},
		"glob":        {"pattern", "path"},
		"grep":        {"pattern", "path", "glob", "max_count", "output_mode"},
		"copy_file":   {"source", "destination", "overwrite"},
		"move_file":   {"source", "destination", "overwrite"},
		"remove_file": {"file_path"},
	}
	for _, name := range want {
		desc, schema := ToolSpec(name)
		var s struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(schema, &s); err != nil || s.Type != "object" || desc == "" {
			t.Fatalf("ToolSpec(%q): %v %q %s", name, err, desc, schema)
		}
		for _, a := range args[name] {
			if _, ok := s.Properties[a]; !ok {
				t.Errorf("ToolSpec(%q) lacks argument %q", name, a)
			}
		}
	}
	if desc, _ := ToolSpec("read_file"); !strings.Contains(desc, "text only") { // BR-20
		t.Errorf("read_file description does not say reads are text only: %q", desc)
	}
	if _, err := newFixture(t).ws.Call(context.Background(), "delete", json.RawMessage(`{}`)); err == nil {
		t.Error("Call(delete) succeeded; want an unknown-tool error")
	}
}

func TestSchemaErrors(t *testing.T) { // BR-41
	f := newFixture(t)
	const suffix = "\n Please fix the error and try again."
	tests := []struct {
		name, tool, args string
		want             string
	}{
		{"missing file_path", "read_file", `{ "offset": 1 }`,
			"Error invoking tool 'read_file' with kwargs {\"offset\":1} with error: Error: Received tool input did not match expected schema\n\n" +
				"✖ Invalid input: expected string, received undefined\n  → at file_path" + suffix},
		{"bad number and bad path", "read_file", `{"file_path": 3, "limit": "ten"}`,
			"Error invoking tool 'read_file' with kwargs {\"file_path\":3,\"limit\":\"ten\"} with error: Error: Received tool input did not match expected schema\n\n" +
				"✖ Invalid input: expected string, received number\n  → at file_path\n" +
				"✖ Invalid input: expected number, received string\n  → at limit" + suffix},
		{"content required", "write_file", `{"file_path":"/scratchpad/a"}`,
			"Error invoking tool 'write_file' with kwargs {\"file_path\":\"/scratchpad/a\"} with error: Error: Received tool input did not match expected schema\n\n" +
				"✖ Invalid input: expected string, received undefined\n  → at content" + suffix},
		{"max_count must be positive", "grep", `{"pattern":"x","max_count":0}`,
			"Error invoking tool 'grep' with kwargs {\"pattern\":\"x\",\"max_count\":0} with error: Error: Received tool input did not match expected schema\n\n" +
				"✖ Too small: expected number to be >0\n  → at max_count" + suffix},
		{"output_mode enum", "grep", `{"pattern":"x","output_mode":"lines"}`,
			"Error invoking tool 'grep' with kwargs {\"pattern\":\"x\",\"output_mode\":\"lines\"} with error: Error: Received tool input did not match expected schema\n\n" +
				"✖ Invalid option: expected one of \"files_with_matches\"|\"content\"|\"count\"\n  → at output_mode" + suffix},
		{"replace_all boolean", "edit_file", `{"file_path":"a","old_string":"x","new_string":"y","replace_all":"yes"}`,
			"Error invoking tool 'edit_file' with kwargs {\"file_path\":\"a\",\"old_string\":\"x\",\"new_string\":\"y\",\"replace_all\":\"yes\"} with error: Error: Received tool input did not match expected schema\n\n" +
				"✖ Invalid input: expected boolean, received string\n  → at replace_all" + suffix},
		{"not an object", "ls", `["a"]`,
			"Error invoking tool 'ls' with kwargs [\"a\"] with error: Error: Received tool input did not match expected schema\n\n" +
				"✖ Invalid input: expected object, received array" + suffix},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := f.call(t, tt.tool, tt.args)
			if !res.Error || res.Text != tt.want {
				t.Errorf("got (error=%v)\n%s\nwant\n%s", res.Error, res.Text, tt.want)
			}
		})
	}
}

func TestArgumentLeniency(t *testing.T) { // BR-41: unknown keys, numeric strings, the path alias
	f := newFixture(t)
	f.file(t, "scratchpad/a.txt", "one\ntwo\nthree")
	want := "@@ lines 2-2 of 3 | next offset 2 @@\ntwo"
	for _, args := range []string{
		`{"file_path":"/scratchpad/a.txt","offset":1,"limit":1,"extra":{"x":1}}`,
		`{"file_path":"/scratchpad/a.txt","offset":"1","limit":" 1 "}`,
		`{"path":"/scratchpad/a.txt","offset":1.9,"limit":1.2}`,
	} {
		if got := f.text(t, "read_file", args); got != want {
			t.Errorf("read_file %s = %q; want %q", args, got, want)
		}
	}
	if got := f.text(t, "write_file", `{"path":"scratchpad/b.txt","content":"hi"}`); got != "Successfully wrote to 'scratchpad/b.txt'" {
		t.Errorf("write_file via path alias = %q", got)
	}
}

// failingFiles fails every call with an error whose text carries the session id and a
// host path, as a real store's might.
type failingFiles struct{ err error }

func (f failingFiles) Read(context.Context, string) ([]byte, error) { return nil, f.err }
func (f failingFiles) Write(context.Context, string, []byte) error  { return f.err }
func (f failingFiles) WriteIfAbsent(context.Context, string, []byte) (bool, error) {
	return false, f.err
}
func (f failingFiles) Delete(context.Context, string) error { return f.err }
func (f failingFiles) List(context.Context, string) ([]store.FileInfo, error) {
	return nil, f.err
}
func (f failingFiles) Stat(context.Context, string) (*store.FileInfo, error) { return nil, f.err }

func TestStoreFailuresAreClassified(t *testing.T) { // BR-22, BR-49
	refused := errors.New("open /var/lib/archmax/sessions/" + sid + "/scratchpad/a.md: input/output error")
	denied := fmt.Errorf("open /var/lib/archmax/sessions/%s/scratchpad/a.md: %w", sid, fs.ErrPermission)
	tests := []struct {
		tool, args string
		err        error
		want       string
	}{
		{"ls", `{"path":"/scratchpad"}`, refused, "Error listing files: the store refused it"},
		{"ls", `{}`, denied, "Error listing files: permission was denied"},
		{"read_file", `{"file_path":"/scratchpad/a.md"}`, refused, "Error: Cannot read '/scratchpad/a.md': the store refused it."},
		{"write_file", `{"file_path":"/scratchpad/a.md","content":"x"}`, denied, "Error: Cannot write '/scratchpad/a.md': permission was denied."},
		{"edit_file", `{"file_path":"/scratchpad/a.md","old_string":"x","new_string":"y"}`, refused, "Error: Cannot edit '/scratchpad/a.md': the store refused it."},
		{"glob", `{"pattern":"**/*.md"}`, refused, "Error finding files: the store refused it"},
		{"grep", `{"pattern":"x","path":"/scratchpad"}`, denied, "Error: Cannot search '/scratchpad': permission was denied."},
	}
	for _, tt := range tests {
		f := &fixture{ws: New(failingFiles{tt.err}, sid, nil)}
		if got := f.text(t, tt.tool, tt.args); got != tt.want {
			t.Errorf("%s %s = %q; want %q", tt.tool, tt.args, got, tt.want)
		}
	}
}

func TestCancelledCallReturnsContextError(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ws := New(failingFiles{context.Canceled}, sid, nil)
	if _, err := ws.Call(ctx, "read_file", json.RawMessage(`{"file_path":"a"}`)); !errors.Is(err, context.Canceled) {
		t.Fatalf("Call with a cancelled context: err = %v; want context.Canceled", err)
	}
}

func TestEngineReadWrite(t *testing.T) {
	onEachStore(t, func(t *testing.T, newFixture fixtureFunc) {
		f := newFixture(t)
		ctx := context.Background()
		if err := f.ws.WriteFile(ctx, "artifacts/run.json", []byte("{}")); err != nil {
			t.Fatalf("WriteFile into an internal area: %v", err)
		}
		if data, err := f.session.Read(ctx, sid+"/artifacts/run.json"); err != nil || string(data) != "{}" {
			t.Fatalf("session key = %q, %v", data, err)
		}
		if data, err := f.ws.ReadFile(ctx, "/AGENTS.md"); err != nil || string(data) != "be kind\n" {
			t.Errorf("ReadFile(AGENTS.md) = %q, %v", data, err)
		}
		if _, err := f.ws.ReadFile(ctx, "workflows/support/workflow.yaml"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("ReadFile(workflows/...) err = %v; want store.ErrNotFound", err)
		}
		if err := f.ws.WriteFile(ctx, "workflows/x.yaml", nil); !errors.Is(err, ErrNoRoute) {
			t.Errorf("WriteFile(workflows/...) err = %v; want ErrNoRoute", err)
		}
		if err := f.ws.WriteFile(ctx, "skills/triage/SKILL.md", nil); !errors.Is(err, ErrReadOnly) {
			t.Errorf("WriteFile(skills/...) err = %v; want ErrReadOnly", err)
		}
		var pe *PathEscapeError
		if err := f.ws.WriteFile(ctx, "../x", nil); !errors.As(err, &pe) {
			t.Errorf("WriteFile(../x) err = %v; want *PathEscapeError", err)
		}
	})
}

func TestFormatSize(t *testing.T) { // OQ-13
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0 B"}, {1023, "1023 B"}, {1024, "1.0 KB"}, {1280, "1.3 KB"}, {1536, "1.5 KB"},
		{1048575, "1024.0 KB"}, {1048576, "1.0 MB"}, {5 << 30, "5120.0 MB"},
	}
	for _, tt := range tests {
		if got := formatSize(tt.n); got != tt.want {
			t.Errorf("formatSize(%d) = %q; want %q", tt.n, got, tt.want)
		}
	}
}

func TestGovernedMountIsServedLikeAnyOther(t *testing.T) { // GOV-45: governance is the kernel's
	f := newFixture(t)
	contracts := memory.NewFiles()
	f.put(t, contracts, "contracts/acme.md", "terms\n")
	f.ws = New(f.session, sid, append(DefaultMounts(f.authored), Mount{Name: "contracts", Files: contracts, Governed: true}))
	tests := []struct{ tool, args, want string }{
		{"ls", `{"path":"/contracts"}`, "/contracts/acme.md (6 bytes)"},
		{"read_file", `{"file_path":"/contracts/acme.md"}`, "@@ lines 1-1 of 1 @@\nterms"},
		{"write_file", `{"file_path":"/contracts/new.md","content":"x"}`, "Successfully wrote to '/contracts/new.md'"},
		{"move_file", `{"source":"/contracts/new.md","destination":"/scratchpad/new.md"}`, "Moved 'contracts/new.md' to 'scratchpad/new.md' (1 B)."},
	}
	for _, tt := range tests {
		if got := f.text(t, tt.tool, tt.args); got != tt.want {
			t.Errorf("%s %s = %q; want %q", tt.tool, tt.args, got, tt.want)
		}
	}
	if m, ok := f.ws.MountOf("contracts/acme.md"); !ok || !m.Governed {
		t.Errorf("MountOf(contracts/acme.md) = %+v, %v; want the governed mount", m, ok)
	}
}
