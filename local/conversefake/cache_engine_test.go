package conversefake_test

import (
	"context"
	"testing"

	"github.com/archmax-ai/archmax/core/session"
)

// A turn of three model calls through the engine and the Bedrock adapter with usage
// estimates on: the first call writes the prefix the engine marks (tools and system), and
// each later call of the state reads at least that much back.
func TestCacheThroughTheEngine(t *testing.T) {
	script := "usage: estimate\n" + `
agent:
  - text: "I will write the note first."
    toolCalls: [{name: write_file, id: tu-write, input: {file_path: scratchpad/note.md, content: "` + noteContent + `"}}]
  - text: "Now I read it back."
    toolCalls: [{name: read_file, id: tu-read, input: {file_path: scratchpad/note.md, offset: 1, limit: 40}}]
  - text: "The note says hello from the desk."
`
	for _, stream := range []bool{false, true} {
		d := newDesk(t, script, stream)
		out, err := d.engine.Send(context.Background(), "notes-1", session.SendInput{Message: "Please take a note."})
		if err != nil || out.Kind != session.KindCompleted {
			t.Fatalf("outcome %+v, %v", out, err)
		}
		recs := d.fake.Requests()
		if len(recs) != 3 {
			t.Fatalf("%d model calls", len(recs))
		}
		first := recs[0].Usage
		if first.CacheReadInputTokens != 0 || first.CacheWriteInputTokens == 0 || first.OutputTokens == 0 {
			t.Errorf("first call %+v: want a write and nothing read", first)
		}
		for i, r := range recs[1:] {
			if r.Usage.CacheReadInputTokens < first.CacheWriteInputTokens {
				t.Errorf("call %d %+v: read less than the first call wrote (%d)", i+2, r.Usage, first.CacheWriteInputTokens)
			}
		}
	}
}
