package workspace

import (
	"errors"
	"testing"

	"github.com/archmax-ai/archmax/core/store"
)

// ServedPath canonicalises as the tools do and refuses what a reader may not have: the
// internal areas, the transcript's pages, the authoring plane, the host file's name, the
// root, and any path that climbs out of the session's folder.
func TestServedPath(t *testing.T) {
	for in, want := range map[string]string{
		"scratchpad/refund.json":          "scratchpad/refund.json",
		"/scratchpad//./refund.json":      "scratchpad/refund.json",
		`scratchpad\notes\a.md`:           "scratchpad/notes/a.md",
		"scratchpad/x/../refund.json":     "scratchpad/refund.json",
		"large_tool_results/call-1.txt":   "large_tool_results/call-1.txt",
		"report.md":                       "report.md",
		"scratchpad/artifacts/graph.json": "scratchpad/artifacts/graph.json",
	} {
		got, err := ServedPath(in)
		if err != nil || got != want {
			t.Errorf("ServedPath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "/", "scratchpad/..", "checkpoints/head.json", "Artifacts/graph.json", "_specs/abc.json",
		"_BLOBS/x", "conversation_history/1.md", "Conversation_History/1.md", "workflows/desk/workflow.yaml",
		"archmax.host.yaml", "scratchpad/../checkpoints/x"} {
		if got, err := ServedPath(in); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("ServedPath(%q) = %q, %v; want a not-found refusal", in, got, err)
		}
	}
	for _, in := range []string{"..", "../other/scratchpad/x", "scratchpad/../../other/x", `..\other\x`} {
		var esc *PathEscapeError
		if _, err := ServedPath(in); !errors.As(err, &esc) {
			t.Errorf("ServedPath(%q) = %v; want *PathEscapeError", in, err)
		}
	}
}
