package host

import (
	"context"
	"testing"

	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/session"
)

// PC23-10: the host file's prompt.cache reaches the engine: enabled: false wins over the
// workflow's settings and sends no cachePoint.
func TestTheHostFileSwitchesThePromptCache(t *testing.T) {
	for _, c := range []struct {
		name, file string
		marked     bool
	}{
		{"off", "prompt: { cache: { enabled: false } }\n", false},
		{"no section", "version: 1\n", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			w.write(t, c.file)
			var seen *model.Request
			w.model.replies = append(w.model.replies, func(r *model.Request) *model.Response {
				seen = r
				return text("done")(r)
			})
			eng, err := NewEngines(w.base, w.env).Engine(context.Background(), "wf")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := eng.Send(context.Background(), "s1", session.SendInput{Message: "hi"}); err != nil {
				t.Fatal(err)
			}
			if seen == nil {
				t.Fatal("no model call")
			}
			marked := seen.ToolsCachePoint
			for _, b := range seen.System {
				marked = marked || b.Kind == model.BlockCachePoint
			}
			if marked != c.marked {
				t.Errorf("cachePoints sent: %t, want %t", marked, c.marked)
			}
		})
	}
}
