package session

import (
	"context"
	"errors"
	"testing"

	"github.com/archmax-ai/archmax/core/spec"
)

// RD22-13: the stores' own top-level names of the session files tree are no session's: a
// session "_outbox" (in any case) would see, edit and — deleted — wipe every session's outbox
// markers. It cannot be started, messaged, read or deleted; the markers stay.
func TestStoreInternalNamesAreNoSession(t *testing.T) {
	h := newHarness(t, twoAgents, nil)
	deleteFixture(t, h)
	ctx := context.Background()
	s := NewSessions(h.log, h.files, nil)
	for _, id := range []string{"_outbox", "_OUTBOX", "_Outbox", "_blobs", "_BLOBS"} {
		var bad *spec.SessionStoreIdError
		h.script(says("hello"))
		if _, err := h.engine().Send(ctx, id, SendInput{Message: "hi"}); !errors.As(err, &bad) {
			t.Errorf("Send to %q = %v, want *SessionStoreIdError", id, err)
		}
		if _, err := s.Delete(ctx, id); !errors.As(err, &bad) {
			t.Errorf("Delete of %q = %v, want *SessionStoreIdError", id, err)
		}
	}
	for _, k := range []string{OutboxPrefix + "root", OutboxPrefix + "rootx"} {
		if _, err := h.files.Read(ctx, k); err != nil {
			t.Errorf("marker %s: %v", k, err)
		}
	}
}
