package workspace

import "testing"

// 03 BR-12a, branch by branch.
func TestScriptText(t *testing.T) {
	cases := []struct{ name, answer, want string }{
		{"page", "@@ lines 1-2 of 2 @@\n{\"a\":\n1}", "{\"a\":\n1}"},
		{"page with next offset", "@@ lines 1-1 of 3 | next offset 1 @@\nx", "x"},
		{"one empty line", "@@ lines 2-2 of 3 | next offset 2 @@\n", ""},
		{"limit 0", "@@ lines 4-4 @@\n", ""},
		{"negative offset notice", "[Requested offset -3 is before the start of the file; read from line 1 instead.]\n@@ lines 1-1 of 1 @@\nx", "x"},
		{"both notices", "[Requested offset -1 is before the start of the file; read from line 1 instead.]\n" +
			"[Output was truncated due to size limits. The file content is very large. …]\n" +
			"@@ lines 1-2 of 9 | next offset 2 | truncated due to size @@\na\nb", "a\nb"},
		{"mid-line cut", "[Output was truncated due to size limits …]\n@@ lines 1-1 of 1 | truncated mid-line | 5 of 9 chars @@\nabcde", "abcde"},
		{"content that looks like a header stays", "@@ lines 1-2 of 2 @@\n@@ lines 1-2 of 2 @@\nx", "@@ lines 1-2 of 2 @@\nx"},
		{"a header below a non-notice line is content", "hello\n@@ lines 1-1 of 1 @@\nx", "hello\n@@ lines 1-1 of 1 @@\nx"},
		{"the header must be within the first three lines", "[Output was truncated due to size limits]\n[Output was truncated due to size limits]\n[Output was truncated due to size limits]\n@@ lines 1-1 of 1 @@\nx",
			"[Output was truncated due to size limits]\n[Output was truncated due to size limits]\n[Output was truncated due to size limits]\n@@ lines 1-1 of 1 @@\nx"},
		{"not a header: trailing text", "@@ lines 1-1 of 1 @@ extra\nx", "@@ lines 1-1 of 1 @@ extra\nx"},
		{"error unchanged", "Error: File 'a.json' not found", "Error: File 'a.json' not found"},
		{"binary notice unchanged", "Error: 'a.png' is a binary file (image/png, 3 B) and was not read; read_file returns text files only.",
			"Error: 'a.png' is a binary file (image/png, 3 B) and was not read; read_file returns text files only."},
		{"empty file", emptyFileReminder, ""},
		{"cat -n gutter", "     1\t{\n     2\t  \"a\": 1\n\n     3\t}", "{\n  \"a\": 1\n\n}"},
		{"cat -n continuation", "     1\tabc\n   1.1\tdef", "abc\ndef"},
		{"tab-led gutter", "\t12\tx", "x"},
		{"not every line has a gutter", "     1\ta\nb", "     1\ta\nb"},
		{"plain text", "just text\n", "just text\n"},
		{"nothing", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ScriptText(c.answer); got != c.want {
				t.Errorf("ScriptText(%q) = %q, want %q", c.answer, got, c.want)
			}
		})
	}
}
