package hosttool

import (
	"context"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/archmax-ai/archmax/core/hostconfig"
	"github.com/archmax-ai/archmax/core/session"
)

// FitResult is a kind's successful result text as the transcript keeps it: the text itself
// when it is at most maxChars characters (UTF-16 units, as the engine counts; maxChars <= 0
// is hostconfig.DefaultMaxResultChars), else — like the engine's own offload of results over
// 80,000 — the text written to large_tool_results/<callId> of the session and the pointer
// the model reads instead (workspace.Offload). Without a workspace, or when the offload
// fails, the text is cut at maxChars with a note saying so.
func FitResult(ctx context.Context, call session.HostCall, text string, maxChars int) string {
	if maxChars <= 0 {
		maxChars = hostconfig.DefaultMaxResultChars
	}
	n := Units(text)
	if n <= maxChars {
		return text
	}
	if call.Workspace != nil && call.CallID != "" {
		if pointer, err := call.Workspace.Offload(context.WithoutCancel(ctx), call.CallID, text); err == nil {
			return pointer
		}
	}
	return Clip(text, maxChars) + fmt.Sprintf("\n[cut: the result has %d characters; the first %d are shown]", n, maxChars)
}

// Units is the length of s in UTF-16 code units (the engine's "characters").
func Units(s string) int {
	n := 0
	for _, r := range s {
		if l := utf16.RuneLen(r); l > 0 {
			n += l
		} else {
			n++
		}
	}
	return n
}

// Clip is the longest prefix of s of at most max UTF-16 units that ends on a rune boundary
// (invalid UTF-8 bytes count as one unit each and are kept as they are).
func Clip(s string, max int) string {
	n := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		l := 1
		if r != utf8.RuneError || size > 1 {
			if l = utf16.RuneLen(r); l < 1 {
				l = 1
			}
		}
		if n+l > max {
			return s[:i]
		}
		n += l
		i += size
	}
	return s
}
