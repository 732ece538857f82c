package sandbox

import "testing"

// TestAS21_ParseCodeDescription covers each of AS-21's seven steps.
func TestAS21_ParseCodeDescription(t *testing.T) {
	const notOK = "\x00not ok"
	cases := []struct {
		name, src, want string
	}{
		// Step 1: one BOM, CRLF -> LF, a lone CR left alone.
		{"BOM stripped", "\uFEFF/** Title */", "Title"},
		{"CRLF normalised", "/**\r\n * Title\r\n *\r\n * Body line.\r\n */\r\nconst x = 1;", "Title\n\nBody line."},
		{"lone CR is not a line break", "/** a\r * b */", "a\r * b"},
		{"CR before LF inside a line ending is removed", "/** Title\r\n * Body\r\n */", "Title\nBody"},
		// Step 2: leading whitespace skipped; only a leading /** block counts.
		{"leading whitespace", " \t\n\n  /** Title */", "Title"},
		{"empty comment /**/ does not count", "/**/ /** Title */", notOK},
		{"plain block comment", "/* Title */", notOK},
		{"line comment first", "// intro\n/** Title */", notOK},
		{"code first", "const a = 1; /** Title */", notOK},
		{"three stars still a block", "/*** Title */", "Title"},
		{"empty source", "", notOK},
		{"whitespace only", " \n\t", notOK},
		// Step 3: the first */ ends the block; none, no block.
		{"no closing", "/** Title\n * Body", notOK},
		{"first closing wins", "/** A */ /** B */", "A"},
		{"bare opener at the end", "/**", notOK},
		// Step 4: the gutter is leading whitespace, a run of *, at most one space; trailing
		// whitespace goes.
		{"gutter variants", "/**\n   ** Stars\n *  two spaces keep one\n*no space\n\t*\ttab after star\n * trailing   \n */",
			"Stars\n two spaces keep one\nno space\n\ttab after star\ntrailing"},
		{"lines without gutter", "/**\nTitle\n\n  Body\n*/", "Title\n\nBody"},
		// Step 5: the first @ line and everything after it are dropped.
		{"tag cut", "/**\n * Title\n *\n * Body.\n * @param x the x\n * after the tag\n */", "Title\n\nBody."},
		{"@ inside a line is text", "/** mail me @ home */", "mail me @ home"},
		{"tag on the title line", "/** @type {import('x').Y} */", notOK},
		// Step 6: interior blank lines stay, the whole is trimmed.
		{"interior blank lines", "/**\n * Title\n *\n *\n * Body\n *\n */", "Title\n\n\nBody"},
		{"indented prose kept", "/**\n * Title\n *\n * Steps:\n *   1. read\n *   2. write\n */", "Title\n\nSteps:\n  1. read\n  2. write"},
		// Step 7: empty -> not ok.
		{"empty block", "/** */", notOK},
		{"only gutters", "/**\n *\n *\n */", notOK},
		{"only stars", "/*****/", notOK},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := ParseCodeDescription(c.src)
			if c.want == notOK {
				if ok || got != "" {
					t.Fatalf("got (%q, %v), want not ok", got, ok)
				}
				return
			}
			if !ok || got != c.want {
				t.Fatalf("got (%q, %v), want %q", got, ok, c.want)
			}
		})
	}
}
