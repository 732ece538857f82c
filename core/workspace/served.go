package workspace

import (
	"fmt"
	"strings"

	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/store"
)

// historyArea is the offload area holding the session's own transcript pages: read through
// the transcript routes, never served as a file.
const historyArea = "conversation_history"

// ServedPath is the canonical path of a session-zone file the session API may serve to a
// reader (a park's evidence, a report the session wrote): p canonicalised as the tools
// canonicalise it (Canonicalize: backslashes as '/', '.' and empty segments dropped, '..'
// applied), then refused when it names nothing a reader may have — the workspace root, a
// runtime-internal area (checkpoints/, artifacts/, _specs/, _blobs/), conversation_history/,
// the authoring plane or the host file's name, each matched ignoring case as the tools match
// them. Errors: *PathEscapeError for a path climbing above the session's folder (so never
// another session's), else an error wrapping store.ErrNotFound — the same answer as a file
// that does not exist.
func ServedPath(p string) (string, error) {
	c, err := Canonicalize(p)
	if err != nil {
		return "", err
	}
	first, _, _ := strings.Cut(c, "/")
	if c == "" || closedRoot(first, false) || spec.ReservedName(first, historyArea) {
		return "", fmt.Errorf("workspace: %q is not a file a reader is served: %w", c, store.ErrNotFound)
	}
	return c, nil
}
