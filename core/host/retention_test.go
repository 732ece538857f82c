package host

import (
	"context"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/session"
)

// RD22-10: the host file's retention section replaces the assembly's TTL
// (ARCHMAX_SESSION_TTL); without one the assembly's stays.
func TestTheHostFileSetsTheSessionTTL(t *testing.T) {
	now := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name, file string
		want       time.Duration
	}{
		{"the file's section", "retention: { sessions: 2d }\n", 48 * time.Hour},
		{"no section: the assembly's", "version: 1\n", 7 * 24 * time.Hour},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			w.write(t, c.file)
			w.base.SessionTTL = 7 * 24 * time.Hour
			w.base.Clock = func() time.Time { return now }
			w.model.replies = append(w.model.replies, text("done"))
			eng, err := NewEngines(w.base, w.env).Engine(context.Background(), "wf")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := eng.Send(context.Background(), "s1", session.SendInput{Message: "hi"}); err != nil {
				t.Fatal(err)
			}
			h, err := w.base.Log.Get(context.Background(), "s1")
			if err != nil || h.ExpiresAt != now.Add(c.want).Unix() {
				t.Errorf("ExpiresAt = %+v, %v; want %d", h, err, now.Add(c.want).Unix())
			}
		})
	}
}
