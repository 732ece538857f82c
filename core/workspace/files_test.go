package workspace

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
)

func TestLsRoot(t *testing.T) { // BR-42, GOV-55, 02 §9.1
	onEachStore(t, func(t *testing.T, newFixture fixtureFunc) {
		f := newFixture(t)
		f.file(t, "scratchpad/notes.md", "hello")
		f.file(t, "trigger.json", `{"a":1}`)
		f.file(t, "large_tool_results/r1", "big")
		for _, internal := range []string{"checkpoints/c1.json", "artifacts/trace.json", "_specs/h.json", "_blobs/abc", "workflows/evil.yaml"} {
			f.file(t, internal, "x")
		}
		f.file(t, "skills/shadow.md", "a session file under a mount name is not visible")
		want := strings.Join([]string{
			"/.platform/ (directory)",
			"/AGENTS.md (8 bytes)",
			"/large_tool_results/ (directory)",
			"/scratchpad/ (directory)",
			"/skills/ (directory)",
			"/trigger.json (7 bytes)",
		}, "\n")
		for _, args := range []string{`{}`, `{"path":"/"}`, `{"path":""}`, `{"path":"./"}`} {
			if got := f.text(t, "ls", args); got != want {
				t.Errorf("ls %s =\n%s\nwant\n%s", args, got, want)
			}
		}
	})
}

func TestLs(t *testing.T) { // BR-42
	onEachStore(t, func(t *testing.T, newFixture fixtureFunc) {
		f := newFixture(t)
		f.file(t, "scratchpad/b.md", "12345")
		f.file(t, "scratchpad/a/deep.txt", "x")
		f.file(t, "scratchpad/.env", "K=V")
		f.file(t, "scratchpad/empty", "")
		f.file(t, "checkpoints/c.json", "{}")
		tests := []struct{ args, want string }{
			{`{"path":"/scratchpad"}`, "/scratchpad/.env (3 bytes)\n/scratchpad/a/ (directory)\n/scratchpad/b.md (5 bytes)\n/scratchpad/empty"},
			{`{"path":"scratchpad/"}`, "/scratchpad/.env (3 bytes)\n/scratchpad/a/ (directory)\n/scratchpad/b.md (5 bytes)\n/scratchpad/empty"},
			{`{"path":"/skills"}`, "/skills/triage/ (directory)"},
			{`{"path":"/skills/triage"}`, "/skills/triage/SKILL.md (27 bytes)\n/skills/triage/scripts/ (directory)"},
			{`{"path":"/nope"}`, "No files found in /nope"},
			{`{"path":"/scratchpad/b.md"}`, "No files found in /scratchpad/b.md"},
			{`{"path":"/AGENTS.md"}`, "No files found in /AGENTS.md"},
			{`{"path":"/workflows"}`, "No files found in /workflows"},
			{`{"path":"/checkpoints"}`, "No files found in /checkpoints"},
			{`{"path":"../x"}`, "Error listing files: it resolves outside the workspace root"},
		}
		for _, tt := range tests {
			if got := f.text(t, "ls", tt.args); got != tt.want {
				t.Errorf("ls %s =\n%q\nwant\n%q", tt.args, got, tt.want)
			}
		}
		empty := &fixture{ws: New(f.session, "other-session", nil)}
		if got := empty.text(t, "ls", `{}`); got != "No files found in /" {
			t.Errorf("ls of an empty workspace = %q", got)
		}
	})
}

func TestLsCap(t *testing.T) { // BR-42: sum of entry lengths > 80,000 keeps ⌊n × 80,000 / sum⌋ lines
	for _, tt := range []struct {
		files int  // entries of 40 chars ("/scratchpad/" + 28)
		long  bool // one more entry of 41 chars, listed last
		keep  int  // -1: no truncation
	}{
		{2000, false, -1},  // exactly 80,000
		{1999, true, 1999}, // 80,001: ⌊2000 × 80000 / 80001⌋
		{2001, false, 2000},
		{2100, false, 2000}, // ⌊2100 × 80000 / 84000⌋
	} {
		f := newFixture(t)
		var names []string
		for i := range tt.files {
			names = append(names, fmt.Sprintf("%028d", i))
		}
		if tt.long {
			names = append(names, "z"+strings.Repeat("0", 28))
		}
		for _, n := range names {
			f.file(t, "scratchpad/"+n, "")
		}
		got := strings.Split(f.text(t, "ls", `{"path":"/scratchpad"}`), "\n")
		switch {
		case tt.keep < 0 && len(got) != len(names):
			t.Errorf("%d entries: %d lines; want all", len(names), len(got))
		case tt.keep >= 0 && (len(got) != tt.keep+1 || got[tt.keep] != truncLine || got[tt.keep-1] != "/scratchpad/"+names[tt.keep-1]):
			t.Errorf("%d entries: %d lines, last %q; want %d then TRUNC", len(names), len(got), got[len(got)-1], tt.keep)
		}
	}
}

func TestHide(t *testing.T) { // GOV-41, GOV-48, BR-31
	onEachStore(t, func(t *testing.T, newFixture fixtureFunc) {
		f := newFixture(t)
		f.put(t, f.authored, "skills/secret/SKILL.md", "# Secret\ntriage\n")
		f.file(t, "scratchpad/a.md", "triage")
		f.ws.Hide(func(p string, dir bool) bool { return p == "skills/secret" || p == ".platform" })
		tests := []struct{ tool, args, want string }{
			{"ls", `{"path":"/skills"}`, "/skills/triage/ (directory)"},
			{"ls", `{}`, "/AGENTS.md (8 bytes)\n/scratchpad/ (directory)\n/skills/ (directory)"},
			{"glob", `{"pattern":"**/SKILL.md"}`, "/skills/triage/SKILL.md"},
			{"glob", `{"pattern":"skills/secret/*"}`, "No files found matching pattern 'skills/secret/*'"},
			{"grep", `{"pattern":"riage","output_mode":"files_with_matches"}`, "/scratchpad/a.md\n/skills/triage/SKILL.md"},
		}
		for _, tt := range tests {
			if got := f.text(t, tt.tool, tt.args); got != tt.want {
				t.Errorf("%s %s =\n%q\nwant\n%q", tt.tool, tt.args, got, tt.want)
			}
		}
	})
}

func TestNestedMounts(t *testing.T) { // GOV-49, GOV-58, 01 §6.6
	onEachStore(t, func(t *testing.T, newFixture fixtureFunc) {
		f := newFixture(t)
		catalog := f.authored // any tree; served from a prefix
		f.put(t, catalog, "data/eu/prices.csv", "sku,price\nA,1\n")
		f.file(t, "catalogs/uk/notes.md", "prices")
		mounts := append(DefaultMounts(f.authored), Mount{Name: "catalogs/eu", Files: catalog, Prefix: "data/eu", ReadOnly: true, Unsearchable: true})
		f.ws = New(f.session, sid, mounts)
		tests := []struct{ tool, args, want string }{
			{"ls", `{"path":"/catalogs"}`, "/catalogs/eu/ (directory)\n/catalogs/uk/ (directory)"},
			{"ls", `{"path":"/catalogs/eu"}`, "/catalogs/eu/prices.csv (14 bytes)"},
			{"read_file", `{"file_path":"/catalogs/eu/prices.csv"}`, "@@ lines 1-2 of 2 @@\nsku,price\nA,1"},
			{"glob", `{"pattern":"**/*"}`, strings.Join([]string{"/.platform/system/GRAPH_STATE.md", "/AGENTS.md", "/catalogs/uk/notes.md", "/skills/triage/SKILL.md", "/skills/triage/scripts/run.js"}, "\n")},
			{"glob", `{"pattern":"catalogs/eu/*.csv"}`, "No files found matching pattern 'catalogs/eu/*.csv'"},
			{"glob", `{"pattern":"*.csv","path":"/catalogs/eu"}`, "/catalogs/eu/prices.csv"},
			{"grep", `{"pattern":"price","output_mode":"count"}`, "/catalogs/uk/notes.md: 1"},
			{"grep", `{"pattern":"price","path":"/catalogs/eu","output_mode":"count"}`, "/catalogs/eu/prices.csv: 1"},
			{"write_file", `{"file_path":"/catalogs/eu/x.csv","content":"x"}`, "Error: Cannot write '/catalogs/eu/x.csv': it is served by a read-only mount."},
		}
		for _, tt := range tests {
			if got := f.text(t, tt.tool, tt.args); got != tt.want {
				t.Errorf("%s %s =\n%q\nwant\n%q", tt.tool, tt.args, got, tt.want)
			}
		}
	})
}

func TestReadFile(t *testing.T) { // BR-43, BR-20
	onEachStore(t, func(t *testing.T, newFixture fixtureFunc) {
		f := newFixture(t)
		f.file(t, "scratchpad/three.txt", "line1\nline2\nline3")
		f.file(t, "scratchpad/lf.txt", "a\nb\n")
		f.file(t, "scratchpad/crlf.txt", "a\r\nb\r\n")
		f.file(t, "scratchpad/empty.txt", "")
		f.file(t, "scratchpad/blank.txt", " \n\t\n")
		f.file(t, "scratchpad/img.png", strings.Repeat("\x89", 1536))
		f.file(t, "scratchpad/IMG.JPEG", "\xff\xd8")
		f.file(t, "scratchpad/doc.pdf", strings.Repeat("%", 2*1024*1024))
		f.file(t, "scratchpad/archive.zip", "PK\x03\x04\x00\x00")
		f.file(t, "scratchpad/.png", "not an extension")
		f.file(t, "scratchpad/bad-utf8.txt", "caf\xe9")
		f.file(t, "workflows/x.md", "the authoring plane is not served from the session either")
		tests := []struct{ args, want string }{
			{`{"file_path":"/scratchpad/three.txt"}`, "@@ lines 1-3 of 3 @@\nline1\nline2\nline3"},
			{`{"file_path":"/scratchpad/three.txt","offset":1,"limit":1}`, "@@ lines 2-2 of 3 | next offset 2 @@\nline2"},
			{`{"file_path":"scratchpad/three.txt","limit":2}`, "@@ lines 1-2 of 3 | next offset 2 @@\nline1\nline2"},
			{`{"file_path":"/scratchpad/three.txt","offset":2,"limit":5}`, "@@ lines 3-3 of 3 @@\nline3"},
			{`{"file_path":"/scratchpad/three.txt","offset":-3,"limit":1}`,
				"[Requested offset -3 is before the start of the file; read from line 1 instead.]\n@@ lines 1-1 of 3 | next offset 1 @@\nline1"},
			{`{"file_path":"/scratchpad/three.txt","offset":-0.5,"limit":1}`,
				"[Requested offset -0.5 is before the start of the file; read from line 1 instead.]\n@@ lines 1-1 of 3 | next offset 1 @@\nline1"},
			{`{"file_path":"/scratchpad/three.txt","limit":-4}`, "@@ lines 1-1 @@\n"},
			{`{"file_path":"/scratchpad/three.txt","offset":2,"limit":0}`, "@@ lines 3-3 @@\n"},
			{`{"file_path":"/scratchpad/three.txt","offset":3}`, "Error: Line offset 3 exceeds file length (3 lines)"},
			{`{"file_path":"/scratchpad/three.txt","offset":9.7}`, "Error: Line offset 9 exceeds file length (3 lines)"},
			{`{"file_path":"/scratchpad/lf.txt"}`, "@@ lines 1-2 of 2 @@\na\nb"},
			{`{"file_path":"/scratchpad/crlf.txt"}`, "@@ lines 1-2 of 2 @@\na\r\nb\r"},
			{`{"file_path":"/scratchpad/bad-utf8.txt"}`, "@@ lines 1-1 of 1 @@\ncaf\uFFFD"},
			{`{"file_path":"/scratchpad/empty.txt"}`, "System reminder: File exists but has empty contents"},
			{`{"file_path":"/scratchpad/blank.txt","offset":5}`, "System reminder: File exists but has empty contents"},
			{`{"file_path":"/scratchpad/nope.md"}`, "Error: File '/scratchpad/nope.md' not found"},
			{`{"file_path":"scratchpad"}`, "Error: File 'scratchpad' not found"},
			{`{"file_path":"/"}`, "Error: File '/' not found"},
			{`{"file_path":"/workflows/support/workflow.yaml"}`, "Error: File '/workflows/support/workflow.yaml' not found"},
			{`{"file_path":"/workflows/x.md"}`, "Error: File '/workflows/x.md' not found"},
			{`{"file_path":"/checkpoints/c.json"}`, "Error: File '/checkpoints/c.json' not found"},
			{`{"file_path":"/AGENTS.md/x"}`, "Error: File '/AGENTS.md/x' not found"},
			{`{"file_path":"../etc/passwd"}`, "Error: Cannot read '../etc/passwd': it resolves outside the workspace root."},
			{`{"file_path":"//scratchpad/img.png"}`, "Error: 'scratchpad/img.png' is a binary file (image/png, 1.5 KB) and was not read; read_file returns text files only."},
			{`{"file_path":"scratchpad/IMG.JPEG"}`, "Error: 'scratchpad/IMG.JPEG' is a binary file (image/jpeg, 2 B) and was not read; read_file returns text files only."},
			{`{"file_path":"/scratchpad/doc.pdf"}`, "Error: 'scratchpad/doc.pdf' is a binary file (application/pdf, 2.0 MB) and was not read; read_file returns text files only."},
			{`{"file_path":"/scratchpad/archive.zip"}`, "Error: 'scratchpad/archive.zip' is a binary file (application/octet-stream) and was not read; read_file returns text files only."},
			{`{"file_path":"/scratchpad/.png"}`, "@@ lines 1-1 of 1 @@\nnot an extension"},
			{`{"file_path":"/AGENTS.md"}`, "@@ lines 1-1 of 1 @@\nbe kind"},
			{`{"file_path":"/skills/triage/SKILL.md","offset":1}`, "@@ lines 2-2 of 2 @@\nSort the tickets."},
		}
		for _, tt := range tests {
			if got := f.text(t, "read_file", tt.args); got != tt.want {
				t.Errorf("read_file %s =\n%q\nwant\n%q", tt.args, got, tt.want)
			}
		}
	})
}

const sizeNotice = "[Output was truncated due to size limits. The file content is very large. Consider reformatting the file to make it easier to navigate. For example, if this is JSON, use execute(command='jq . /scratchpad/big.txt') to pretty-print it with line breaks. For other formats, you can use appropriate formatting tools to split long lines.]\n"

func TestReadFileTruncation(t *testing.T) { // BR-43: the 80,000-character cap
	read := func(t *testing.T, content, args string) string {
		t.Helper()
		f := newFixture(t)
		f.file(t, "scratchpad/big.txt", content)
		return f.text(t, "read_file", `{"file_path":"/scratchpad/big.txt"`+args+`}`)
	}
	const header = "@@ lines 1-2 of 2 @@\n" // 21 chars

	t.Run("just under the cap is whole", func(t *testing.T) {
		content := strings.Repeat("x", 1000) + "\n" + strings.Repeat("y", 80000-21-1000-1-1)
		if got := read(t, content, ""); got != header+content || len(got) != 79999 {
			t.Errorf("len %d; want the whole 79,999-char result", len(got))
		}
	})
	t.Run("reaching the cap keeps whole lines", func(t *testing.T) {
		first := strings.Repeat("x", 1000)
		content := first + "\n" + strings.Repeat("y", 80000-21-1000-1)
		want := sizeNotice + "@@ lines 1-1 of 2 | next offset 1 | truncated due to size @@\n" + first
		if got := read(t, content, ""); got != want {
			t.Errorf("got %d chars %.120q…; want %d chars", len(got), got, len(want))
		}
	})
	t.Run("most whole lines that fit, under the offset notice", func(t *testing.T) {
		var lines []string
		for i := range 2000 {
			lines = append(lines, fmt.Sprintf("%099d", i)) // 99 chars + LF
		}
		got := read(t, strings.Join(lines, "\n"), `,"offset":-1,"limit":2000`)
		offsetNotice := "[Requested offset -1 is before the start of the file; read from line 1 instead.]\n"
		// budget 80,000 - notices; header for k lines; k lines take 100k-1 chars.
		budget := 80000 - len(offsetNotice) - len(sizeNotice)
		k := 0
		for len(fmt.Sprintf("@@ lines 1-%d of 2000 | next offset %d | truncated due to size @@\n", k+1, k+1))+100*(k+1)-1 <= budget {
			k++
		}
		want := offsetNotice + sizeNotice + fmt.Sprintf("@@ lines 1-%d of 2000 | next offset %d | truncated due to size @@\n", k, k) + strings.Join(lines[:k], "\n")
		if got != want || len(got) > 80000 {
			t.Errorf("got %d chars %.300q; want %d chars keeping %d lines", len(got), got, len(want), k)
		}
	})
	t.Run("first line cut mid-line", func(t *testing.T) {
		line := strings.Repeat("z", 100000)
		got := read(t, line+"\nsecond", `,"offset":0`)
		empty := sizeNotice + "@@ lines 1-1 of 2 | truncated mid-line | 100000 of 100000 chars @@\n"
		shown := 80000 - len(empty)
		want := sizeNotice + fmt.Sprintf("@@ lines 1-1 of 2 | truncated mid-line | %d of 100000 chars @@\n", shown) + line[:shown]
		if got != want {
			t.Errorf("got %d chars %.500q; want %d chars", len(got), got, len(want))
		}
		if len(got) > 80000 {
			t.Errorf("mid-line result is %d chars, over the cap", len(got))
		}
	})
	t.Run("length counts UTF-16 units", func(t *testing.T) {
		accents := strings.Repeat("é", 70000) // 70,000 units, 140,000 bytes
		if got := read(t, accents, ""); got != "@@ lines 1-1 of 1 @@\n"+accents {
			t.Errorf("a 70,000-unit line was cut (%d bytes)", len(got))
		}
		emoji := strings.Repeat("😀", 39990) // 79,980 units in 39,990 runes
		got := read(t, emoji, "")
		if !strings.HasPrefix(got, sizeNotice+"@@ lines 1-1 of 1 | truncated mid-line | ") || jsLen(got) > 80000 {
			t.Errorf("got %d units %.400q; want the mid-line cut within the cap", jsLen(got), got)
		}
	})
}

func TestWriteFile(t *testing.T) { // BR-44, BR-49
	onEachStore(t, func(t *testing.T, newFixture fixtureFunc) {
		f := newFixture(t)
		f.file(t, "scratchpad/dir/inner.txt", "x")
		f.file(t, "scratchpad/plain.txt", "x")
		tests := []struct{ args, want string }{
			{`{"file_path":"/scratchpad/new/deep/a.md","content":"# A\n"}`, "Successfully wrote to '/scratchpad/new/deep/a.md'"},
			{`{"file_path":"/scratchpad/plain.txt","content":"replaced"}`, "Successfully wrote to '/scratchpad/plain.txt'"},
			{`{"file_path":"report.md","content":""}`, "Successfully wrote to 'report.md'"},
			{`{"file_path":"/skills/triage/SKILL.md","content":"x"}`, "Error: Cannot write '/skills/triage/SKILL.md': it is served by a read-only mount."},
			{`{"file_path":"/skills/new.md","content":"x"}`, "Error: Cannot write '/skills/new.md': it is served by a read-only mount."},
			{`{"file_path":"/AGENTS.md","content":"x"}`, "Error: Cannot write '/AGENTS.md': it is served by a read-only mount."},
			{`{"file_path":"/.platform/system/GRAPH_STATE.md","content":"x"}`, "Error: Cannot write '/.platform/system/GRAPH_STATE.md': it is served by a read-only mount."},
			{`{"file_path":"/workflows/support/workflow.yaml","content":"x"}`, "Error: Cannot write '/workflows/support/workflow.yaml': permission was denied."},
			{`{"file_path":"/","content":"x"}`, "Error: Cannot write '/': it names the workspace root, not a file."},
			{`{"file_path":"../x","content":"x"}`, "Error: Cannot write '../x': it resolves outside the workspace root."},
			{`{"file_path":"/scratchpad/dir","content":"x"}`, "Error: Cannot write '/scratchpad/dir': it is a directory; this tool works on one file."},
			{`{"file_path":"/scratchpad/plain.txt/child","content":"x"}`, "Error: Cannot write '/scratchpad/plain.txt/child': 'scratchpad/plain.txt' is a file, not a folder."},
			{`{"file_path":"/scratchpad/x.png","content":"not base64!"}`, "Error: Cannot write '/scratchpad/x.png': its content is not valid base64, which a binary file needs."},
		}
		for _, tt := range tests {
			if got := f.text(t, "write_file", tt.args); got != tt.want {
				t.Errorf("write_file %s =\n%q\nwant\n%q", tt.args, got, tt.want)
			}
		}
		if got := f.text(t, "read_file", `{"file_path":"/scratchpad/new/deep/a.md"}`); got != "@@ lines 1-1 of 1 @@\n# A" {
			t.Errorf("read back = %q", got)
		}
		if got := f.text(t, "ls", `{"path":"/scratchpad/new"}`); got != "/scratchpad/new/deep/ (directory)" {
			t.Errorf("implicit folder listing = %q", got)
		}
		if data, _ := f.authored.Read(context.Background(), "AGENTS.md"); string(data) != "be kind\n" {
			t.Errorf("a refused write changed the authored tree: %q", data)
		}
	})
}

func TestWriteBinaryRoundTrip(t *testing.T) { // BR-44, BR-20
	onEachStore(t, func(t *testing.T, newFixture fixtureFunc) {
		f := newFixture(t)
		raw := make([]byte, 256)
		for i := range raw {
			raw[i] = byte(i)
		}
		enc := base64.StdEncoding.EncodeToString(raw)
		for name, content := range map[string]string{
			"plain.png":    enc,
			"data-url.png": "data:image/png;base64," + enc,
			"wrapped.pdf":  enc[:60] + "\n" + enc[60:120] + " \t" + enc[120:],
			"unpadded.mp3": strings.TrimRight(base64.StdEncoding.EncodeToString(raw[:255]), "="),
		} {
			args := fmt.Sprintf(`{"file_path":"/scratchpad/%s","content":%q}`, name, content)
			if got := f.text(t, "write_file", args); got != "Successfully wrote to '/scratchpad/"+name+"'" {
				t.Fatalf("write %s = %q", name, got)
			}
			data, err := f.ws.ReadFile(context.Background(), "scratchpad/"+name)
			want := raw
			if name == "unpadded.mp3" {
				want = raw[:255]
			}
			if err != nil || !bytes.Equal(data, want) {
				t.Errorf("%s: bytes differ after the round trip (%v)", name, err)
			}
		}
		if got := f.text(t, "read_file", `{"file_path":"/scratchpad/plain.png"}`); got != "Error: 'scratchpad/plain.png' is a binary file (image/png, 256 B) and was not read; read_file returns text files only." {
			t.Errorf("read of the written image = %q", got)
		}
	})
}

func TestEditFile(t *testing.T) { // BR-45
	onEachStore(t, func(t *testing.T, newFixture fixtureFunc) {
		tests := []struct {
			name, content, args, want, after string
		}{
			{"one occurrence", "a cat sat", `"old_string":"cat","new_string":"dog"`, "Successfully replaced 1 occurrence(s) in '/scratchpad/f.txt'", "a dog sat"},
			{"verbatim replacement", "x", `"old_string":"x","new_string":"$& $1"`, "Successfully replaced 1 occurrence(s) in '/scratchpad/f.txt'", "$& $1"},
			{"replace_all", "aXbXc", `"old_string":"X","new_string":"--","replace_all":true`, "Successfully replaced 2 occurrence(s) in '/scratchpad/f.txt'", "a--b--c"},
			{"non-overlapping", "aaaa", `"old_string":"aa","new_string":"b","replace_all":true`, "Successfully replaced 2 occurrence(s) in '/scratchpad/f.txt'", "bb"},
			{"multiple", "aXbX", `"old_string":"X","new_string":"-"`,
				"Error: String 'X' has multiple occurrences (appears 2 times) in file. Use replace_all=True to replace all instances, or provide a more specific string with surrounding context.", "aXbX"},
			{"case-sensitive miss", "Cat", `"old_string":"cat","new_string":"dog"`, "Error: String not found in file: 'cat'", "Cat"},
			{"empty old fills an empty file", "", `"old_string":"","new_string":"hello"`, "Successfully replaced 0 occurrence(s) in '/scratchpad/f.txt'", "hello"},
			{"empty old on content", "x", `"old_string":"","new_string":"hello"`, "Error: oldString cannot be empty when file has content", "x"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				f := newFixture(t)
				f.file(t, "scratchpad/f.txt", tt.content)
				if got := f.text(t, "edit_file", `{"file_path":"/scratchpad/f.txt",`+tt.args+`}`); got != tt.want {
					t.Errorf("got %q; want %q", got, tt.want)
				}
				if data, _ := f.ws.ReadFile(context.Background(), "scratchpad/f.txt"); string(data) != tt.after {
					t.Errorf("file is %q; want %q", data, tt.after)
				}
			})
		}
		f := newFixture(t)
		f.file(t, "scratchpad/a.png", "PNG")
		for _, tt := range []struct{ args, want string }{
			{`{"file_path":"/scratchpad/none.txt","old_string":"a","new_string":"b"}`, "Error: File '/scratchpad/none.txt' not found"},
			{`{"file_path":"/scratchpad","old_string":"a","new_string":"b"}`, "Error: File '/scratchpad' not found"},
			{`{"file_path":"/scratchpad/a.png","old_string":"P","new_string":"Q"}`, "Error: Cannot edit '/scratchpad/a.png': it is not a text file."},
			{`{"file_path":"/skills/triage/SKILL.md","old_string":"Triage","new_string":"X"}`, "Error: Cannot edit '/skills/triage/SKILL.md': it is served by a read-only mount."},
			{`{"path":"/AGENTS.md","old_string":"kind","new_string":"X"}`, "Error: Cannot edit '/AGENTS.md': it is served by a read-only mount."},
			{`{"file_path":"/../a","old_string":"a","new_string":"b"}`, "Error: Cannot edit '/../a': it resolves outside the workspace root."},
		} {
			if got := f.text(t, "edit_file", tt.args); got != tt.want {
				t.Errorf("edit_file %s = %q; want %q", tt.args, got, tt.want)
			}
		}
	})
}
