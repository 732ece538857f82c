package sandbox

import (
	"strings"
	"unicode"
)

// ParseCodeDescription is parseCodeDescription of spec 03 AS-21: the description an admin UI
// shows for a script, taken from the JSDoc block that opens it (AS-20). It is a pure string
// function; ok is false where the reference returns null.
//
//  1. One leading U+FEFF is stripped and every CRLF becomes LF (a lone CR stays as it is).
//  2. Leading whitespace is skipped; the source must then start with "/**" followed by
//     something other than "/" ("/**/" is an empty comment, not a block). Only a leading
//     block counts.
//  3. The block is the text between "/**" and the first "*/"; without "*/" there is none.
//  4. Each line loses its gutter — leading whitespace, then any run of "*", then at most one
//     space — and its trailing whitespace.
//  5. The first line that then starts with "@" ends the description; it and all later lines
//     are dropped.
//  6. The kept lines are joined with LF and the whole is trimmed (the title line is part of
//     the description; interior blank lines stay).
//  7. An empty result is not a description.
//
// Whitespace is ECMAScript's (WhiteSpace and LineTerminator, U+FEFF included), as the
// reference's trim and \s see it.
func ParseCodeDescription(source string) (description string, ok bool) {
	s := strings.TrimPrefix(source, "\uFEFF")
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.TrimLeftFunc(s, isJSSpace)
	if !strings.HasPrefix(s, "/**") || strings.HasPrefix(s, "/**/") {
		return "", false
	}
	body, _, closed := strings.Cut(s[len("/**"):], "*/")
	if !closed {
		return "", false
	}
	lines := strings.Split(body, "\n")
	kept := lines[:0]
	for _, line := range lines {
		line = strings.TrimLeftFunc(line, isJSSpace)
		line = strings.TrimLeft(line, "*")
		line = strings.TrimPrefix(line, " ")
		line = strings.TrimRightFunc(line, isJSSpace)
		if strings.HasPrefix(line, "@") {
			break
		}
		kept = append(kept, line)
	}
	description = strings.TrimFunc(strings.Join(kept, "\n"), isJSSpace)
	return description, description != ""
}

// isJSSpace reports ECMAScript WhiteSpace or LineTerminator: TAB, VT, FF, SP, NBSP, ZWNBSP,
// the Zs category, LF, CR, LS and PS (not NEL, which Go's unicode.IsSpace includes).
func isJSSpace(r rune) bool {
	switch r {
	case '\t', '\v', '\f', ' ', '\u00A0', '\uFEFF', '\n', '\r', '\u2028', '\u2029':
		return true
	}
	return r > unicode.MaxASCII && unicode.Is(unicode.Zs, r)
}
