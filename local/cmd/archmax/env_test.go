package main

import (
	"maps"
	"testing"
)

// The .env grammar of the reference's loader: assignments only, lenient about the rest.
func TestParseDotenv(t *testing.T) {
	src := "# a comment\n" +
		"A=1\n" +
		"export B=\"x y\"\n" +
		"C='q # not a comment'\n" +
		"D=v # a comment\n" +
		"MY-KEY=dashed\n" +
		"my.key=dotted\n" +
		"justaword\n" +
		"E=\"line1\\nline2\"\n" +
		"M=\"first\nsecond\"\n" +
		"F=\n" +
		"G: colon\n" +
		"  H = spaced  \r\n" +
		"I=`back tick`\n" +
		"A=2\n"
	want := map[string]string{"A": "2", "B": "x y", "C": "q # not a comment", "D": "v", "MY-KEY": "dashed", "my.key": "dotted",
		"E": "line1\nline2", "M": "first\nsecond", "F": "", "G": "colon", "H": "spaced", "I": "back tick"}
	if got := parseDotenv(src); !maps.Equal(got, want) {
		t.Errorf("parseDotenv =\n%q\nwant\n%q", got, want)
	}
}
