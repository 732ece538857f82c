package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/archmax-ai/archmax/core/store"
	fsstore "github.com/archmax-ai/archmax/core/store/fs"
	"github.com/archmax-ai/archmax/core/store/memory"
)

// allBytes is a binary file holding every byte value once.
var allBytes = func() []byte {
	b := make([]byte, 256)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}()

// opsFixture seeds the files the runtime file tool tables work on.
func opsFixture(t *testing.T, newFixture fixtureFunc) *fixture {
	t.Helper()
	f := newFixture(t)
	f.file(t, "scratchpad/a.txt", "hello")
	f.file(t, "scratchpad/b.txt", "old")
	f.file(t, "scratchpad/img.png", string(allBytes))
	f.file(t, "scratchpad/latin1.txt", "caf\xe9\r\n")
	f.file(t, "scratchpad/dir/inner.txt", "x")
	f.file(t, "checkpoints/c.json", "{}")
	return f
}

// contentIs fails the test unless workspace path p holds want (nil: nothing is there).
func (f *fixture) contentIs(t *testing.T, p string, want []byte) {
	t.Helper()
	got, err := f.ws.ReadFile(context.Background(), p)
	switch {
	case want == nil && !errors.Is(err, store.ErrNotFound):
		t.Errorf("%s: %q, %v; want nothing there", p, got, err)
	case want != nil && (err != nil || !bytes.Equal(got, want)):
		t.Errorf("%s: %q, %v; want %q", p, got, err, want)
	}
}

func TestCopyFile(t *testing.T) { // BR-22, OQ-13
	onEachStore(t, func(t *testing.T, newFixture fixtureFunc) {
		tests := []struct {
			args, want string
			dest       string // a path that must then hold the source's bytes
			source     string
		}{
			{`{"source":"/scratchpad/a.txt","destination":"/scratchpad/new/deep/a.txt"}`,
				"Copied 'scratchpad/a.txt' to 'scratchpad/new/deep/a.txt' (5 B).", "scratchpad/new/deep/a.txt", "scratchpad/a.txt"},
			{`{"source":"scratchpad/img.png","destination":"//scratchpad/./img-2.png"}`,
				"Copied 'scratchpad/img.png' to 'scratchpad/img-2.png' (256 B).", "scratchpad/img-2.png", "scratchpad/img.png"},
			{`{"source":"scratchpad/latin1.txt","destination":"scratchpad/latin1-copy.txt"}`,
				"Copied 'scratchpad/latin1.txt' to 'scratchpad/latin1-copy.txt' (6 B).", "scratchpad/latin1-copy.txt", "scratchpad/latin1.txt"},
			{`{"source":"/scratchpad/a.txt","destination":"/scratchpad/b.txt","overwrite":true}`,
				"Copied 'scratchpad/a.txt' to 'scratchpad/b.txt' (5 B).", "scratchpad/b.txt", "scratchpad/a.txt"},
			{`{"source":"/skills/triage/SKILL.md","destination":"scratchpad/skill.md"}`,
				"Copied 'skills/triage/SKILL.md' to 'scratchpad/skill.md' (27 B).", "scratchpad/skill.md", "skills/triage/SKILL.md"},
			{`{"source":"/AGENTS.md","destination":"trigger-notes.md"}`,
				"Copied 'AGENTS.md' to 'trigger-notes.md' (8 B).", "trigger-notes.md", "AGENTS.md"},
			{`{"source":"/scratchpad/a.txt","destination":"/scratchpad/img.png"}`,
				"Error: Cannot copy to 'scratchpad/img.png': a file is already there. Pass overwrite: true to replace it, or choose another destination.", "", ""},
			{`{"source":"/scratchpad/a.txt","destination":"/scratchpad/img.png","overwrite":false}`,
				"Error: Cannot copy to 'scratchpad/img.png': a file is already there. Pass overwrite: true to replace it, or choose another destination.", "", ""},
			{`{"source":"/scratchpad/a.txt","destination":"scratchpad/sub/../a.txt","overwrite":true}`,
				"Error: Cannot copy 'scratchpad/a.txt' onto itself: the source and the destination are the same file.", "", ""},
			{`{"source":"/scratchpad/nope.txt","destination":"/scratchpad/c.txt"}`,
				"Error: Cannot copy 'scratchpad/nope.txt': it does not exist.", "", ""},
			{`{"source":"/scratchpad/dir","destination":"/scratchpad/c.txt"}`,
				"Error: Cannot copy 'scratchpad/dir': it is a directory; this tool works on one file.", "", ""},
			{`{"source":"/workflows/support/workflow.yaml","destination":"/scratchpad/c.txt"}`,
				"Error: Cannot copy 'workflows/support/workflow.yaml': it does not exist.", "", ""},
			{`{"source":"/checkpoints/c.json","destination":"/scratchpad/c.txt"}`,
				"Error: Cannot copy 'checkpoints/c.json': it does not exist.", "", ""},
			{`{"source":"../x","destination":"/scratchpad/c.txt"}`,
				"Error: Cannot copy '../x': it resolves outside the workspace root.", "", ""},
			{`{"source":"/scratchpad/a.txt","destination":"/"}`,
				"Error: Cannot copy '/': it names the workspace root, not a file.", "", ""},
			{`{"source":"/scratchpad/a.txt","destination":"/skills/a.txt"}`,
				"Error: Cannot copy to 'skills/a.txt': it is served by a read-only mount.", "", ""},
			{`{"source":"/scratchpad/a.txt","destination":"/AGENTS.md","overwrite":true}`,
				"Error: Cannot copy to 'AGENTS.md': it is served by a read-only mount.", "", ""},
			{`{"source":"/scratchpad/a.txt","destination":"/checkpoints/a.txt"}`,
				"Error: Cannot copy to 'checkpoints/a.txt': permission was denied.", "", ""},
			{`{"source":"/scratchpad/a.txt","destination":"/scratchpad/dir"}`,
				"Error: Cannot copy to 'scratchpad/dir': it is a directory; this tool works on one file.", "", ""},
			{`{"source":"/scratchpad/a.txt","destination":"/scratchpad/b.txt/c"}`,
				"Error: Cannot copy to 'scratchpad/b.txt/c': 'scratchpad/b.txt' is a file, not a folder.", "", ""},
		}
		for _, tt := range tests {
			f := opsFixture(t, newFixture)
			if got := f.text(t, "copy_file", tt.args); got != tt.want {
				t.Errorf("copy_file %s =\n%q\nwant\n%q", tt.args, got, tt.want)
			}
			if tt.dest != "" {
				want, err := f.ws.ReadFile(context.Background(), tt.source)
				if err != nil {
					t.Fatal(err)
				}
				f.contentIs(t, tt.dest, want)
			}
		}
		f := opsFixture(t, newFixture)
		f.call(t, "copy_file", `{"source":"scratchpad/a.txt","destination":"scratchpad/img.png"}`)
		f.contentIs(t, "scratchpad/img.png", allBytes) // a refused copy leaves the destination alone
		f.contentIs(t, "scratchpad/a.txt", []byte("hello"))
	})
}

func TestMoveFile(t *testing.T) { // BR-22, BR-23
	onEachStore(t, func(t *testing.T, newFixture fixtureFunc) {
		tests := []struct {
			args, want string
			from, to   string // moved: from is then gone and to holds its bytes
		}{
			{`{"source":"/scratchpad/a.txt","destination":"/scratchpad/done/a.txt"}`,
				"Moved 'scratchpad/a.txt' to 'scratchpad/done/a.txt' (5 B).", "scratchpad/a.txt", "scratchpad/done/a.txt"},
			{`{"source":"scratchpad/img.png","destination":"picture.png"}`,
				"Moved 'scratchpad/img.png' to 'picture.png' (256 B).", "scratchpad/img.png", "picture.png"},
			{`{"source":"scratchpad/latin1.txt","destination":"scratchpad/b.txt","overwrite":true}`,
				"Moved 'scratchpad/latin1.txt' to 'scratchpad/b.txt' (6 B).", "scratchpad/latin1.txt", "scratchpad/b.txt"},
			{`{"source":"/scratchpad/dir/inner.txt","destination":"/scratchpad/inner.txt"}`,
				"Moved 'scratchpad/dir/inner.txt' to 'scratchpad/inner.txt' (1 B).", "scratchpad/dir/inner.txt", "scratchpad/inner.txt"},
			{`{"source":"/scratchpad/a.txt","destination":"/scratchpad/b.txt"}`,
				"Error: Cannot move to 'scratchpad/b.txt': a file is already there. Pass overwrite: true to replace it, or choose another destination.", "", ""},
			{`{"source":"/scratchpad/a.txt","destination":"scratchpad/a.txt"}`,
				"Error: Cannot move 'scratchpad/a.txt' onto itself: the source and the destination are the same file.", "", ""},
			{`{"source":"/skills/triage/SKILL.md","destination":"/scratchpad/skill.md"}`,
				"Error: Cannot move 'skills/triage/SKILL.md': it is served by a read-only mount, so it cannot be removed. Use copy_file to copy it instead.", "", ""},
			{`{"source":"/AGENTS.md","destination":"/scratchpad/agents.md"}`,
				"Error: Cannot move 'AGENTS.md': it is served by a read-only mount, so it cannot be removed. Use copy_file to copy it instead.", "", ""},
			{`{"source":"/scratchpad/nope.txt","destination":"/scratchpad/c.txt"}`,
				"Error: Cannot move 'scratchpad/nope.txt': it does not exist.", "", ""},
			{`{"source":"/scratchpad/a.txt","destination":"/.platform/a.txt"}`,
				"Error: Cannot move to '.platform/a.txt': it is served by a read-only mount.", "", ""},
			{`{"source":"/scratchpad/a.txt","destination":"a/../../b"}`,
				"Error: Cannot move 'a/../../b': it resolves outside the workspace root.", "", ""},
		}
		for _, tt := range tests {
			f := opsFixture(t, newFixture)
			var want []byte
			if tt.from != "" {
				var err error
				if want, err = f.ws.ReadFile(context.Background(), tt.from); err != nil {
					t.Fatal(err)
				}
			}
			if got := f.text(t, "move_file", tt.args); got != tt.want {
				t.Errorf("move_file %s =\n%q\nwant\n%q", tt.args, got, tt.want)
			}
			if tt.from != "" {
				f.contentIs(t, tt.from, nil)
				f.contentIs(t, tt.to, want)
			}
		}
		f := opsFixture(t, newFixture)
		f.call(t, "move_file", `{"source":"/skills/triage/SKILL.md","destination":"/scratchpad/skill.md"}`)
		f.contentIs(t, "skills/triage/SKILL.md", []byte("# Triage\nSort the tickets.\n"))
		f.contentIs(t, "scratchpad/skill.md", nil)
		f.call(t, "move_file", `{"source":"/scratchpad/a.txt","destination":"/scratchpad/b.txt"}`)
		f.contentIs(t, "scratchpad/a.txt", []byte("hello"))
		f.contentIs(t, "scratchpad/b.txt", []byte("old"))
	})
}

func TestRemoveFile(t *testing.T) { // BR-22, BR-25
	onEachStore(t, func(t *testing.T, newFixture fixtureFunc) {
		tests := []struct{ args, want, gone string }{
			{`{"file_path":"/scratchpad/b.txt"}`, "Removed 'scratchpad/b.txt'.", "scratchpad/b.txt"},
			{`{"file_path":"scratchpad//dir/./inner.txt"}`, "Removed 'scratchpad/dir/inner.txt'.", "scratchpad/dir/inner.txt"},
			{`{"file_path":"/scratchpad/img.png","extra":1}`, "Removed 'scratchpad/img.png'.", "scratchpad/img.png"},
			{`{"file_path":"/scratchpad/nope.txt"}`, "Error: Cannot remove 'scratchpad/nope.txt': it does not exist.", ""},
			{`{"file_path":"/scratchpad/dir"}`, "Error: Cannot remove 'scratchpad/dir': it is a directory; this tool works on one file.", ""},
			{`{"file_path":"/skills/triage/SKILL.md"}`, "Error: Cannot remove 'skills/triage/SKILL.md': it is served by a read-only mount.", ""},
			{`{"file_path":"/AGENTS.md"}`, "Error: Cannot remove 'AGENTS.md': it is served by a read-only mount.", ""},
			{`{"file_path":"/skills/nope.md"}`, "Error: Cannot remove 'skills/nope.md': it does not exist.", ""},
			{`{"file_path":"/checkpoints/c.json"}`, "Error: Cannot remove 'checkpoints/c.json': it does not exist.", ""},
			{`{"file_path":"/workflows/support/workflow.yaml"}`, "Error: Cannot remove 'workflows/support/workflow.yaml': it does not exist.", ""},
			{`{"file_path":"../etc/passwd"}`, "Error: Cannot remove '../etc/passwd': it resolves outside the workspace root.", ""},
			{`{"file_path":"/"}`, "Error: Cannot remove '/': it names the workspace root, not a file.", ""},
		}
		for _, tt := range tests {
			f := opsFixture(t, newFixture)
			if got := f.text(t, "remove_file", tt.args); got != tt.want {
				t.Errorf("remove_file %s =\n%q\nwant\n%q", tt.args, got, tt.want)
			}
			if tt.gone != "" {
				f.contentIs(t, tt.gone, nil)
			}
		}
		f := opsFixture(t, newFixture)
		f.call(t, "remove_file", `{"file_path":"/checkpoints/c.json"}`)
		f.call(t, "remove_file", `{"file_path":"/AGENTS.md"}`)
		f.contentIs(t, "checkpoints/c.json", []byte("{}"))
		f.contentIs(t, "AGENTS.md", []byte("be kind\n"))
		if got := f.text(t, "ls", `{"path":"/scratchpad/dir"}`); got != "/scratchpad/dir/inner.txt (1 bytes)" {
			t.Errorf("a refused folder removal changed it: %q", got)
		}
	})
}

func TestFileOpSchemaErrors(t *testing.T) { // BR-41 for BR-22's tools
	f := newFixture(t)
	const head = " with error: Error: Received tool input did not match expected schema\n\n"
	const suffix = "\n Please fix the error and try again."
	tests := []struct{ tool, args, want string }{
		{"copy_file", `{"source":"a"}`,
			`Error invoking tool 'copy_file' with kwargs {"source":"a"}` + head + "✖ Invalid input: expected string, received undefined\n  → at destination" + suffix},
		{"move_file", `{"source":"a","destination":"b","overwrite":"yes"}`,
			`Error invoking tool 'move_file' with kwargs {"source":"a","destination":"b","overwrite":"yes"}` + head + "✖ Invalid input: expected boolean, received string\n  → at overwrite" + suffix},
		{"remove_file", `{"path":"a"}`,
			`Error invoking tool 'remove_file' with kwargs {"path":"a"}` + head + "✖ Invalid input: expected string, received undefined\n  → at file_path" + suffix},
	}
	for _, tt := range tests {
		if res := f.call(t, tt.tool, tt.args); !res.Error || res.Text != tt.want {
			t.Errorf("%s %s = (error=%v)\n%s\nwant\n%s", tt.tool, tt.args, res.Error, res.Text, tt.want)
		}
	}
}

// undeletable is a store without delete capability (BR-22).
type undeletable struct{ *memory.Files }

func (undeletable) Delete(_ context.Context, key string) error {
	return fmt.Errorf("delete %s: %w", key, store.ErrUnsupported)
}

func TestStoreWithoutDelete(t *testing.T) { // BR-22
	session := undeletable{memory.NewFiles()}
	f := &fixture{ws: New(session, sid, nil), session: session}
	f.file(t, "scratchpad/a.txt", "hello")
	tests := []struct{ tool, args, want string }{
		{"remove_file", `{"file_path":"/scratchpad/a.txt"}`, "Error: Cannot remove 'scratchpad/a.txt': the store serving it cannot do that."},
		{"move_file", `{"source":"/scratchpad/a.txt","destination":"/scratchpad/b.txt"}`,
			"Error: Copied 'scratchpad/a.txt' to 'scratchpad/b.txt', but could not remove 'scratchpad/a.txt': the store serving it cannot do that. Both files now exist."},
	}
	for _, tt := range tests {
		if got := f.text(t, tt.tool, tt.args); got != tt.want {
			t.Errorf("%s %s =\n%q\nwant\n%q", tt.tool, tt.args, got, tt.want)
		}
	}
	f.contentIs(t, "scratchpad/a.txt", []byte("hello"))
	f.contentIs(t, "scratchpad/b.txt", []byte("hello"))
}

// lossy is a store that drops the last byte of every write to a key ending ".lossy".
type lossy struct{ *memory.Files }

func (l lossy) Write(ctx context.Context, key string, data []byte) error {
	if filepath.Ext(key) == ".lossy" && len(data) > 0 {
		data = data[:len(data)-1]
	}
	return l.Files.Write(ctx, key, data)
}

func TestUnkeptBytes(t *testing.T) { // BR-22: every copy is read back and compared
	tests := []struct {
		tool, args, want string
		after            map[string][]byte // path → content (nil: absent)
	}{
		{"copy_file", `{"source":"scratchpad/a.txt","destination":"scratchpad/new.lossy"}`,
			"Error: Cannot copy to 'scratchpad/new.lossy': the store serving it did not keep the file's bytes — what it holds differs from what was written. Nothing was kept.",
			map[string][]byte{"scratchpad/new.lossy": nil}},
		{"copy_file", `{"source":"scratchpad/a.txt","destination":"scratchpad/old.lossy","overwrite":true}`,
			"Error: Cannot copy to 'scratchpad/old.lossy': the store serving it did not keep the file's bytes — what it holds differs from what was written. 'scratchpad/old.lossy' was left as the store wrote it.",
			map[string][]byte{"scratchpad/old.lossy": []byte("hell")}},
		{"move_file", `{"source":"scratchpad/a.txt","destination":"scratchpad/new.lossy"}`,
			"Error: Cannot move to 'scratchpad/new.lossy': the store serving it did not keep the file's bytes — what it holds differs from what was written. Nothing was kept.",
			map[string][]byte{"scratchpad/new.lossy": nil, "scratchpad/a.txt": []byte("hello")}},
	}
	for _, tt := range tests {
		session := lossy{memory.NewFiles()}
		f := &fixture{ws: New(session, sid, nil), session: session.Files}
		f.file(t, "scratchpad/a.txt", "hello")
		f.file(t, "scratchpad/old.lossy", "previous")
		if got := f.text(t, tt.tool, tt.args); got != tt.want {
			t.Errorf("%s %s =\n%q\nwant\n%q", tt.tool, tt.args, got, tt.want)
		}
		for p, want := range tt.after {
			f.contentIs(t, p, want)
		}
	}
}

// BR-22: an fs tree follows no link — one naming a source is not there (the store skips
// links, as its listings do), and a destination through a linked folder is refused.
func TestSymlinkOutOfTheTree(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(outside, []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	session, err := fsstore.OpenFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	if err := session.Write(t.Context(), sid+"/scratchpad/seed.md", []byte("seed")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, sid, "scratchpad", "link.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(outside), filepath.Join(dir, sid, "scratchpad", "out")); err != nil {
		t.Fatal(err)
	}
	f := &fixture{ws: New(session, sid, nil), session: session}
	tests := []struct{ tool, args, want string }{
		{"copy_file", `{"source":"scratchpad/link.txt","destination":"scratchpad/copy.txt"}`,
			"Error: Cannot copy 'scratchpad/link.txt': it does not exist."},
		{"move_file", `{"source":"scratchpad/link.txt","destination":"scratchpad/copy.txt"}`,
			"Error: Cannot move 'scratchpad/link.txt': it does not exist."},
		{"remove_file", `{"file_path":"scratchpad/link.txt"}`,
			"Error: Cannot remove 'scratchpad/link.txt': it does not exist."},
		{"copy_file", `{"source":"scratchpad/seed.md","destination":"scratchpad/out/copy.txt"}`,
			"Error: Cannot copy to 'scratchpad/out/copy.txt': it is a symbolic link, which the workspace does not follow."},
	}
	for _, tt := range tests {
		if got := f.text(t, tt.tool, tt.args); got != tt.want {
			t.Errorf("%s %s =\n%q\nwant\n%q", tt.tool, tt.args, got, tt.want)
		}
	}
	if data, err := os.ReadFile(outside); err != nil || string(data) != "secret" {
		t.Errorf("the link's target changed: %q, %v", data, err)
	}
}
