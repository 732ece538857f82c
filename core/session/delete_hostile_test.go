package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/identity"
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

// RD22-17: a session another delete holds — two DELETEs at once, or one that stopped
// part-way within its lease's minute — refuses a delete and every call with
// *SessionDeletingError and the lease's expiry, not the "turn in progress" of a running turn.
func TestADeletesLeaseHasItsOwnRefusal(t *testing.T) {
	now := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	h := newHarness(t, twoAgents, nil)
	h.log.Clock = func() time.Time { return now }
	h.cfg.Clock = func() time.Time { return now }
	deleteFixture(t, h)
	ctx := context.Background()
	for _, owner := range []string{deleteOwnerPrefix + "winner", expireOwnerPrefix + "stream"} {
		if _, err := h.log.Acquire(ctx, "root~1", owner, DeleteLeaseTTL); err != nil { // the winner holds the tree
			t.Fatal(err)
		}
		var deleting *SessionDeletingError
		_, err := NewSessions(h.log, h.files, nil).Delete(ctx, "root")
		if !errors.As(err, &deleting) || deleting.SessionID != "root" || deleting.LeaseExpiresAt != spec.FormatInstant(now.Add(DeleteLeaseTTL)) {
			t.Fatalf("%s: the losing delete = %v, want *SessionDeletingError with the lease's expiry", owner, err)
		}
		if strings.Contains(err.Error(), "turn in progress") || !strings.Contains(err.Error(), deleting.LeaseExpiresAt) {
			t.Errorf("%s: the refusal's text: %s", owner, err)
		}
		if _, err := h.log.Acquire(ctx, "rootx", owner, DeleteLeaseTTL); err != nil {
			t.Fatal(err)
		}
		if _, err := h.engine().Send(ctx, "rootx", SendInput{Message: "hello?"}); !errors.As(err, &deleting) || deleting.LeaseExpiresAt == "" {
			t.Errorf("%s: a message to a session a delete holds = %v", owner, err)
		}
		must(t, h.log.Release(ctx, "root~1", owner))
		must(t, h.log.Release(ctx, "rootx", owner))
	}
	// a turn's lease is still the turn's refusal
	if _, err := h.log.Acquire(ctx, "rootx", "engine/turn", time.Minute); err != nil {
		t.Fatal(err)
	}
	var busy *SessionNotResumableError
	if _, err := h.engine().Send(ctx, "rootx", SendInput{Message: "hello?"}); !errors.As(err, &busy) {
		t.Errorf("a message while a turn runs = %v", err)
	}
}

// RD22-20: each completed delete writes one audit line — the session, the principal, how it
// came, and the counts of sub-workflow sessions and files removed; a delete of nothing none.
func TestDeleteWritesAnAuditLine(t *testing.T) {
	h := newHarness(t, twoAgents, nil)
	deleteFixture(t, h)
	var buf bytes.Buffer
	s := NewSessions(h.log, h.files, nil).WithAuditLog(slog.New(slog.NewJSONHandler(&buf, nil)))
	ctx := WithCaller(context.Background(), identity.LocalPrincipal("dana"))
	if _, err := s.Delete(ctx, "root"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delete(ctx, "root"); err != nil { // nothing left: no line
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("audit lines = %q", buf.String())
	}
	var line map[string]any
	must(t, json.Unmarshal([]byte(lines[0]), &line))
	// root~1, root~1~1, root~2; five files of the tree under the session folders
	if line["msg"] != "session deleted" || line["level"] != "INFO" || line["sessionId"] != "root" || line["by"] != "request" ||
		line["principal"] == "" || line["children"] != float64(3) || line["files"] != float64(5) {
		t.Errorf("audit line = %v", line)
	}
}
