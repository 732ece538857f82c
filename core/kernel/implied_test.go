package kernel

import (
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/core/spec"
)

// impliedWF denies read_file on secret/** and narrows read_file to reports/** in one state;
// nothing restricts copy_file, move_file or edit_file themselves.
const impliedWF = `
tools:
  forbid_always:
    - { tool: read_file, paths: ["secret/**"] }
states:
  wide:
    triggers:
      manual:
    tools:
      allow: [read_file, copy_file, move_file, edit_file]
  narrow:
    triggers:
      narrow:
    tools:
      allow:
        - { tool: read_file, paths: ["reports/**"] }
        - copy_file
        - move_file
        - edit_file
`

// K17-6: copy_file's and move_file's source and edit_file's file are held to a read_file of
// that file by the same caller; the destination is not a read, and tools that expose no
// contents are not affected.
func TestImpliedReads(t *testing.T) {
	sp, err := spec.Load("wf", "workflow.yaml", []byte(impliedWF))
	if err != nil {
		t.Fatal(err)
	}
	p := &Policy{Spec: sp, Surface: func(string) []string { return nil }}
	rows := []struct {
		name, state, tool string
		args              map[string]any
		implied           bool // refused under RuleImpliedRead
	}{
		{"copy of a denied file", "wide", "copy_file", map[string]any{"source": "secret/k.txt", "destination": "scratchpad/k"}, true},
		{"copy through dot segments", "wide", "copy_file", map[string]any{"source": "scratchpad/../secret/k.txt", "destination": "scratchpad/k"}, true},
		{"move of a denied file", "wide", "move_file", map[string]any{"source": "secret/k.txt", "destination": "scratchpad/k"}, true},
		{"edit of a denied file", "wide", "edit_file", map[string]any{"file_path": "secret/k.txt", "old_string": "a", "new_string": "b"}, true},
		{"copy of a readable file", "wide", "copy_file", map[string]any{"source": "notes/a.md", "destination": "scratchpad/a"}, false},
		{"copy into the denied area is not a read of it", "wide", "copy_file", map[string]any{"source": "notes/a.md", "destination": "secret/a.md"}, false},
		{"copy outside a narrowed grant", "narrow", "copy_file", map[string]any{"source": "notes/a.md", "destination": "scratchpad/a"}, true},
		{"edit outside a narrowed grant", "narrow", "edit_file", map[string]any{"file_path": "notes/a.md", "old_string": "a", "new_string": "b"}, true},
		{"copy inside a narrowed grant", "narrow", "copy_file", map[string]any{"source": "reports/q3.md", "destination": "scratchpad/q3"}, false},
	}
	for _, r := range rows {
		for _, origin := range []Origin{OriginAgent, OriginScript, OriginCode} {
			v := decide(p, r.state, r.tool, r.args, origin)
			if got := v.RuleID == RuleImpliedRead; got != r.implied || (r.implied && v.Allow) {
				t.Errorf("%s (%s): %+v", r.name, origin, v)
				continue
			}
			if r.implied && !strings.Contains(v.Reason, "would expose the contents of") {
				t.Errorf("%s: reason %q", r.name, v.Reason)
			}
		}
	}
}
