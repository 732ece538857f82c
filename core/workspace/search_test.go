package workspace

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
)

func searchFixture(t testing.TB, newFixture fixtureFunc) *fixture {
	t.Helper()
	f := newFixture(t)
	f.file(t, "top.md", "todo: top\n")
	f.file(t, "scratchpad/a.md", "alpha\ntodo: write tests\nomega todo\n")
	f.file(t, "scratchpad/.hidden.md", "todo hidden\n")
	f.file(t, "scratchpad/sub/b.txt", "nothing\nTODO upper\ntodo: lower\n")
	f.file(t, "scratchpad/sub/deeper/c.md", "a.b*c todo\n")
	f.file(t, "scratchpad/pic.png", "todo in a png name is skipped")
	f.file(t, "scratchpad/blob.bin", "todo\x00binary")
	f.file(t, "checkpoints/c1.json", "todo internal")
	f.file(t, "workflows/w.yaml", "todo authoring")
	return f
}

func TestGlob(t *testing.T) { // BR-46, OQ-15
	onEachStore(t, func(t *testing.T, newFixture fixtureFunc) {
		f := searchFixture(t, newFixture)
		tests := []struct{ args, want string }{
			{`{"pattern":"*.md"}`, "/AGENTS.md\n/top.md"},
			{`{"pattern":"/*.md"}`, "/AGENTS.md\n/top.md"},
			{`{"pattern":"**/*.md","path":"/scratchpad"}`, "/scratchpad/.hidden.md\n/scratchpad/a.md\n/scratchpad/sub/deeper/c.md"},
			{`{"pattern":"*.md","path":"scratchpad"}`, "/scratchpad/.hidden.md\n/scratchpad/a.md"},
			{`{"pattern":"scratchpad/**/*.{md,txt}"}`, "/scratchpad/.hidden.md\n/scratchpad/a.md\n/scratchpad/sub/b.txt\n/scratchpad/sub/deeper/c.md"},
			{`{"pattern":"scratchpad/sub/*"}`, "/scratchpad/sub/b.txt"},
			{`{"pattern":"skills/**/SKILL.md"}`, "/skills/triage/SKILL.md"},
			{`{"pattern":"**/.platform/**"}`, "/.platform/system/GRAPH_STATE.md"},
			{`{"pattern":"**/c1.json"}`, "No files found matching pattern '**/c1.json'"},
			{`{"pattern":"**/w.yaml"}`, "No files found matching pattern '**/w.yaml'"},
			{`{"pattern":"*","path":"/scratchpad/a.md"}`, "No files found matching pattern '*'"},
			{`{"pattern":"*.nope"}`, "No files found matching pattern '*.nope'"},
			{`{"pattern":"sub","path":"/scratchpad"}`, "No files found matching pattern 'sub'"},
			{`{"pattern":"scratchpad/../../*"}`, "No files found matching pattern 'scratchpad/../../*'"},
			{`{"pattern":"[","path":"/scratchpad"}`, "Error finding files: the pattern is not valid"},
			{`{"pattern":"*","path":"../.."}`, "Error finding files: it resolves outside the workspace root"},
		}
		for _, tt := range tests {
			if got := f.text(t, "glob", tt.args); got != tt.want {
				t.Errorf("glob %s =\n%q\nwant\n%q", tt.args, got, tt.want)
			}
		}
	})
}

func TestGrep(t *testing.T) { // BR-47, GOV-57
	onEachStore(t, func(t *testing.T, newFixture fixtureFunc) {
		f := searchFixture(t, newFixture)
		tests := []struct{ args, want string }{
			{`{"pattern":"todo:","path":"/scratchpad"}`, "/scratchpad/a.md:\n  2: todo: write tests\n/scratchpad/sub/b.txt:\n  3: todo: lower"},
			{`{"pattern":"todo","output_mode":"files_with_matches"}`, "/scratchpad/.hidden.md\n/scratchpad/a.md\n/scratchpad/sub/b.txt\n/scratchpad/sub/deeper/c.md\n/top.md"},
			{`{"pattern":"todo","output_mode":"count","path":"/scratchpad"}`, "/scratchpad/.hidden.md: 1\n/scratchpad/a.md: 2\n/scratchpad/sub/b.txt: 1\n/scratchpad/sub/deeper/c.md: 1"},
			{`{"pattern":"todo","glob":"*.txt","output_mode":"count"}`, "/scratchpad/sub/b.txt: 1"},
			{`{"pattern":"todo","glob":null,"max_count":null,"path":"/scratchpad/a.md"}`, "/scratchpad/a.md:\n  2: todo: write tests\n  3: omega todo"},
			{`{"pattern":"b*c","output_mode":"files_with_matches"}`, "/scratchpad/sub/deeper/c.md"},
			{`{"pattern":"Sort","path":"/skills"}`, "/skills/triage/SKILL.md:\n  2: Sort the tickets."},
			{`{"pattern":"kind","path":"/AGENTS.md"}`, "/AGENTS.md:\n  1: be kind"},
			{`{"pattern":"internal"}`, "No matches found for pattern 'internal'"},
			{`{"pattern":"authoring","path":"/workflows"}`, "No matches found for pattern 'authoring'"},
			{`{"pattern":"binary"}`, "No matches found for pattern 'binary'"},
			{`{"pattern":"zzz"}`, "No matches found for pattern 'zzz'"},
			{`{"pattern":"x","path":"../x"}`, "Error: Cannot search '../x': it resolves outside the workspace root."},
			{`{"pattern":"todo","max_count":2,"output_mode":"count","path":"/scratchpad"}`,
				"/scratchpad/.hidden.md: 1\n/scratchpad/a.md: 1\n\nNote: the search stopped early because it hit the maximum match count. The matches above are valid but incomplete. Narrow the search (a more specific pattern or a narrower path), or raise max_count, to see the rest."},
			{`{"pattern":"todo","max_count":"3","output_mode":"count","path":"/scratchpad"}`,
				"/scratchpad/.hidden.md: 1\n/scratchpad/a.md: 2\n\nNote: the search stopped early because it hit the maximum match count. The matches above are valid but incomplete. Narrow the search (a more specific pattern or a narrower path), or raise max_count, to see the rest."},
			{`{"pattern":"todo","max_count":5,"output_mode":"count","path":"/scratchpad"}`,
				"/scratchpad/.hidden.md: 1\n/scratchpad/a.md: 2\n/scratchpad/sub/b.txt: 1\n/scratchpad/sub/deeper/c.md: 1"},
		}
		for _, tt := range tests {
			if got := f.text(t, "grep", tt.args); got != tt.want {
				t.Errorf("grep %s =\n%q\nwant\n%q", tt.args, got, tt.want)
			}
		}
	})
}

func TestGrepCaps(t *testing.T) { // BR-47: 80,000-char cut and the default cap of 1000 (GOV-57)
	f := newFixture(t)
	line := strings.Repeat("m", 95)
	f.file(t, "scratchpad/many.txt", strings.Repeat(line+"\n", 1001))
	got := f.text(t, "grep", `{"pattern":"m","path":"/scratchpad"}`)
	body, note, capped := strings.Cut(got, "\n\nNote: the search stopped early")
	if !capped {
		t.Fatalf("1001 matches with the default cap: no cap note in %.200q", got)
	}
	// "/scratchpad/many.txt:" + 1000 × "\n  <n>: " + 95 chars is over 80,000: cut, then TRUNC.
	head, tail, _ := strings.Cut(body, "\n"+truncLine)
	if jsLen(head) != 80000 || tail != "" || !strings.HasPrefix(note, " because it hit the maximum match count.") {
		t.Errorf("head %d chars, tail %q, note %.60q", jsLen(head), tail, note)
	}
	if strings.Contains(got, "  1001: ") {
		t.Error("match 1001 returned past the default cap")
	}
}

// TestSessionIDNeverShown runs every tool over paths and failures of a session and checks
// (in fixture.call) that no result names the session id (GOV-56, BR-49).
func TestSessionIDNeverShown(t *testing.T) {
	onEachStore(t, func(t *testing.T, newFixture fixtureFunc) {
		f := searchFixture(t, newFixture)
		f.file(t, "scratchpad/"+sid+".md", "named like the session") // the agent may pick any name…
		for _, c := range []struct{ tool, args string }{
			{"ls", `{}`}, {"ls", `{"path":"/scratchpad/sub"}`}, {"ls", `{"path":"/nope"}`},
			{"read_file", `{"file_path":"/scratchpad/a.md"}`}, {"read_file", `{"file_path":"/nope"}`},
			{"read_file", `{"file_path":"/scratchpad/pic.png"}`},
			{"write_file", `{"file_path":"/scratchpad/sub","content":"x"}`},
			{"write_file", `{"file_path":"/scratchpad/a.md/x","content":"x"}`},
			{"edit_file", `{"file_path":"/scratchpad/a.md","old_string":"alpha","new_string":"beta"}`},
			{"glob", `{"pattern":"**/*.md","path":"/scratchpad/sub"}`},
			{"grep", `{"pattern":"todo"}`},
		} {
			f.call(t, c.tool, c.args) // fails the test on a leak
		}
	})
}

func BenchmarkReadFile(b *testing.B) {
	content, err := os.ReadFile("testdata/tool-result-2048.txt")
	if err != nil {
		b.Fatal(err)
	}
	f := newFixture(b)
	f.file(b, "scratchpad/result.txt", string(content))
	args := json.RawMessage(`{"file_path":"/scratchpad/result.txt"}`)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := f.ws.Call(ctx, "read_file", args)
		if err != nil || !strings.HasPrefix(res.Text, "@@ lines 1-") {
			b.Fatal(fmt.Sprint(err, res.Text))
		}
	}
}
