package workspace

import (
	"regexp"
	"strings"
)

// pageHeader matches BR-43's status line: "@@ lines <a>-<b> of <n> @@", with or without the
// " | …" parts (next offset, truncated due to size, truncated mid-line), and limit 0's
// "@@ lines <n>-<n> @@".
var pageHeader = regexp.MustCompile(`^@@ lines \d+-\d+( of \d+)?( \| .*)? @@$`)

// ScriptText is what a script's `tools.read_file` resolves to for answer, the page the tool
// gave (03 BR-12a): the file text, not the page — so `JSON.parse(await
// tools.read_file({file_path}))` works as the 1.0 scripts write it.
//
//   - An `Error: …` answer (missing file, binary notice, offset past the end) is unchanged
//     (BR-13 class 2).
//   - When one of the first three lines is the BR-43 header and every line above it is a
//     BR-43 notice (negative offset, size cap), the header and the lines above it are
//     dropped: the script gets the window's lines joined by LF, without a final LF. A
//     window cut by the 80,000-character cap gives the whole lines that fit (or the part of
//     a first line that fits); the header that said so is dropped with the rest, so a
//     script reading a file that large pages with offset and limit. Limit 0 gives "".
//   - The empty-file reminder (an empty or whitespace-only file) gives "": it is the
//     model's page, not file text (docs/DECISIONS.md F16-1).
//   - Otherwise, when every non-empty line carries a `cat -n` gutter (`^\s*\d+(\.\d+)?\t`,
//     the pre-1.14 page a host tool or mock may still give), the gutters are dropped.
//   - Anything else is returned unchanged.
func ScriptText(answer string) string {
	if strings.HasPrefix(answer, "Error: ") {
		return answer
	}
	if answer == emptyFileReminder {
		return ""
	}
	rest := answer
	for range 3 {
		line, after, more := strings.Cut(rest, "\n")
		if pageHeader.MatchString(line) {
			return after
		}
		if !more || !isPageNotice(line) {
			break
		}
		rest = after
	}
	if text, ok := dropGutters(answer); ok {
		return text
	}
	return answer
}

// isPageNotice reports whether line is one of BR-43's notices above the header.
func isPageNotice(line string) bool {
	return strings.HasSuffix(line, "]") &&
		(strings.HasPrefix(line, "[Requested offset ") && strings.HasSuffix(line, " is before the start of the file; read from line 1 instead.]") ||
			strings.HasPrefix(line, "[Output was truncated due to size limits"))
}

// dropGutters removes a `cat -n` gutter (optional blanks, digits, an optional `.digits`
// continuation mark, a TAB) from every line, reporting false — and doing nothing — unless
// every non-empty line has one and at least one line does.
func dropGutters(text string) (string, bool) {
	lines := strings.Split(text, "\n")
	seen := false
	for i, l := range lines {
		if l == "" {
			continue
		}
		n := gutterLen(l)
		if n < 0 {
			return "", false
		}
		lines[i], seen = l[n:], true
	}
	if !seen {
		return "", false
	}
	return strings.Join(lines, "\n"), true
}

// gutterLen is the length of line's `cat -n` gutter, or -1 when it has none.
func gutterLen(line string) int {
	i := 0
	for i < len(line) && isGutterSpace(line[i]) {
		i++
	}
	digits := func() bool {
		start := i
		for i < len(line) && line[i] >= '0' && line[i] <= '9' {
			i++
		}
		return i > start
	}
	if !digits() {
		return -1
	}
	if i < len(line) && line[i] == '.' {
		i++
		if !digits() {
			return -1
		}
	}
	if i < len(line) && line[i] == '\t' {
		return i + 1
	}
	return -1
}

// isGutterSpace is a blank a gutter may start with (the ASCII `\s`).
func isGutterSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\r' }
