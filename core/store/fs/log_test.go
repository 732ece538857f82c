package fs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/store"
)

// step builds the commit after h with one message, trail step and event tagged tag.
func step(h *store.Head, tag string) *store.Commit {
	c := &store.Commit{ExpectedVersion: h.Version, Head: *h}
	c.Head.Body = json.RawMessage(`{"state":"draft"}`)
	c.Head.UpdatedAt = "2025-01-01T00:00:00.000Z"
	for _, lg := range []struct {
		items *[]json.RawMessage
		n     *int64
	}{{&c.Messages, &c.Head.Messages}, {&c.Trail, &c.Head.Trail}, {&c.Events, &c.Head.Events}} {
		*lg.items = append(*lg.items, fmt.Appendf(nil, `{"tag":%q,"seq":%d}`, tag, *lg.n))
		*lg.n++
	}
	return c
}

func mustAcquire(t *testing.T, s *Store, id, owner string) *store.Head {
	t.Helper()
	h, err := s.Acquire(t.Context(), id, owner, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func mustCommit(t *testing.T, s *Store, id, owner string, c *store.Commit) *store.Head {
	t.Helper()
	h, err := s.Commit(t.Context(), id, owner, c)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func writeFile(t *testing.T, name, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLayout(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	h := mustAcquire(t, s, "s1", "a")
	mustCommit(t, s, "s1", "a", step(h, "a"))
	if _, _, err := s.RememberIdempotent(t.Context(), "turn-1", []byte("x"), time.Hour); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("turn-1"))
	for _, name := range []string{
		"sessions/s1/head.json", "sessions/s1/lease.json", "sessions/s1/.lock",
		"sessions/s1/m/0000000000.json", "sessions/s1/t/0000000000.json", "sessions/s1/e/0000000000.json",
		"idempotency/" + hex.EncodeToString(sum[:]) + ".json",
	} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("layout: %v", err)
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "sessions/s1/head.json"))
	if err != nil {
		t.Fatal(err)
	}
	var onDisk map[string]any
	if err := json.Unmarshal(data, &onDisk); err != nil {
		t.Fatalf("head.json is not JSON: %v\n%s", err, data)
	}
	if onDisk["version"] != 1.0 || onDisk["lease"] != nil || onDisk["body"].(map[string]any)["state"] != "draft" {
		t.Fatalf("head.json = %s", data)
	}
}

// 02 §9.3 / 15-Q2: items past the counters, left by a writer that died mid-commit, are
// never read and are replaced by the next writer; a stale temp head does not disturb reads.
func TestCrashLeftoversAreInvisibleAndOverwritten(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	ctx := t.Context()
	h := mustAcquire(t, s, "s1", "a")
	h = mustCommit(t, s, "s1", "a", step(h, "a"))

	sess := filepath.Join(dir, "sessions", "s1")
	for _, sub := range []string{"m", "t", "e"} {
		writeFile(t, filepath.Join(sess, sub, "0000000001.json"), `{"tag":"dead writer"}`)
		writeFile(t, filepath.Join(sess, sub, "0000000002.json"), `{"tag":"dead`) // torn
	}
	writeFile(t, filepath.Join(sess, ".head.json.tmp"), `{"version":99,"mess`)
	writeFile(t, filepath.Join(sess, ".lease.json.tmp"), `{"owner":`)

	got, err := s.Get(ctx, "s1")
	if err != nil || got.Version != 1 || got.Messages != 1 {
		t.Fatalf("Get = %+v, %v; want v1 with 1 message", got, err)
	}
	msgs, err := s.Messages(ctx, "s1", 0, 10)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("Messages = %s, %v; want only the committed one", msgs, err)
	}
	// The next writer (after the dead one's lease) commits over the leftovers.
	if err := os.Remove(filepath.Join(sess, "lease.json")); err != nil {
		t.Fatal(err)
	}
	h = mustAcquire(t, s, "s1", "b")
	h = mustCommit(t, s, "s1", "b", step(h, "b"))
	for _, read := range []func() ([]json.RawMessage, error){
		func() ([]json.RawMessage, error) { return s.Messages(ctx, "s1", 0, 10) },
		func() ([]json.RawMessage, error) { return s.TrailSteps(ctx, "s1", 0, 10) },
		func() ([]json.RawMessage, error) { return s.Events(ctx, "s1", 0, 10) },
	} {
		items, err := read()
		if err != nil || len(items) != 2 || !bytes.Contains(items[1], []byte(`"tag":"b"`)) {
			t.Fatalf("items after the next commit = %s, %v; want b's item at 1", items, err)
		}
	}
	if h.Version != 2 {
		t.Fatalf("version = %d, want 2", h.Version)
	}
}

// 15-Q1/Q3: the lease is data; an expired lease.json left by a killed process blocks
// nobody and its owner can no longer commit, while a live one still holds.
func TestLeaseFileLeftByDeadProcess(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	ctx := t.Context()
	h := mustAcquire(t, s, "s1", "dead")
	h = mustCommit(t, s, "s1", "dead", step(h, "dead"))
	lease := filepath.Join(dir, "sessions", "s1", "lease.json")

	writeFile(t, lease, fmt.Sprintf(`{"owner":"dead","expiresAt":%q}`, time.Now().Add(time.Hour).Format(time.RFC3339Nano)))
	if _, err := s.Acquire(ctx, "s1", "b", time.Minute); !errors.Is(err, store.ErrLeaseHeld) {
		t.Fatalf("live lease file: err = %v, want ErrLeaseHeld", err)
	}

	writeFile(t, lease, `{"owner":"dead","expiresAt":"2020-01-01T00:00:00Z"}`)
	if g, err := s.Get(ctx, "s1"); err != nil || g.Lease != nil {
		t.Fatalf("Get with an expired lease = %+v, %v; want no lease", g, err)
	}
	if _, err := s.Commit(ctx, "s1", "dead", step(h, "dead")); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("commit on the expired lease: err = %v, want ErrConflict", err)
	}
	hb := mustAcquire(t, s, "s1", "b")
	if hb.Version != 1 || hb.Lease.Owner != "b" {
		t.Fatalf("takeover = %+v", hb)
	}
	mustCommit(t, s, "s1", "b", step(hb, "b"))
}

// 02 §9.3: bytes written per commit do not grow with the session.
func TestHeadSizeStaysFlat(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	h := mustAcquire(t, s, "s1", "a")
	head := filepath.Join(dir, "sessions", "s1", "head.json")
	var first int64
	for i := range 200 {
		h = mustCommit(t, s, "s1", "a", step(h, "a"))
		info, err := os.Stat(head)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = info.Size()
		}
		// Only the digits of the version and the three counters may grow (1 -> 200).
		if grown := info.Size() - first; grown > 4*2 {
			t.Fatalf("commit %d: head.json grew by %d bytes", i+1, grown)
		}
	}
	items, err := os.ReadDir(filepath.Join(dir, "sessions", "s1", "m"))
	if err != nil || len(items) != 200 {
		t.Fatalf("message files = %d, %v; want 200", len(items), err)
	}
}

func TestRefusesEscapingSessionIDs(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	for _, id := range []string{"", ".", "..", "../x", "a/b", `a\b`, "nul\x00"} {
		if _, err := s.Acquire(t.Context(), id, "a", time.Minute); err == nil {
			t.Errorf("Acquire(%q) succeeded", id)
		}
		if _, err := s.Get(t.Context(), id); err == nil || errors.Is(err, store.ErrNotFound) {
			t.Errorf("Get(%q): err = %v, want an invalid-id error", id, err)
		}
		if _, err := s.Delete(t.Context(), id); err == nil {
			t.Errorf("Delete(%q) succeeded", id)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "sessions")); len(entries) != 0 {
		t.Fatalf("refused ids created %v", entries)
	}
}

func TestReleaseOfUncommittedSessionLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	mustAcquire(t, s, "s1", "a")
	if err := s.Release(t.Context(), "s1", "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "sessions", "s1")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("session directory after release: %v", err)
	}
}

// Delete unlinks the lock file that other writers may be waiting on; they must start
// over on the new one rather than both believe they hold the lock.
func TestDeleteRacingWriters(t *testing.T) {
	s := openStore(t, t.TempDir())
	ctx := t.Context()
	done := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		defer close(errc)
		for {
			select {
			case <-done:
				return
			default:
			}
			if _, err := s.Delete(ctx, "s1"); err != nil {
				errc <- err
				return
			}
		}
	}()
	for i := range 100 {
		h, err := s.Acquire(ctx, "s1", "a", time.Minute)
		if err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		h, err = s.Commit(ctx, "s1", "a", step(h, "a"))
		switch {
		case errors.Is(err, store.ErrConflict): // deleted between Acquire and Commit
			continue
		case err != nil:
			t.Fatalf("round %d: %v", i, err)
		}
		// Whatever the deleter does, a visible head never counts missing items.
		if _, err := s.Messages(ctx, "s1", 0, h.Messages); err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("round %d: %v", i, err)
		}
	}
	close(done)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// Session ids may be 512 bytes (01 §6.3) while file names stop at 255: a long id is stored
// under a digest and still lists and reads back as itself.
func TestLongSessionIDs(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	id := strings.Repeat("x", 500)
	h, err := s.Acquire(ctx, id, "o", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	c := &store.Commit{ExpectedVersion: h.Version, Head: store.Head{Workflow: "wf", Status: "running", UpdatedAt: "2026-01-01T00:00:00.000Z", Messages: 1},
		Messages: []json.RawMessage{json.RawMessage(`{"n":1}`)}}
	if _, err := s.Commit(ctx, id, "o", c); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, id)
	if err != nil || got.SessionID != id || got.Messages != 1 {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	heads, _, err := s.List(ctx, store.ListOptions{})
	if err != nil || len(heads) != 1 || heads[0].SessionID != id {
		t.Fatalf("List = %+v, %v", heads, err)
	}
}

// One unreadable head does not hide the other sessions from listings and the due-park sweep.
func TestCorruptHeadIsSkippedByListings(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	c := step(mustAcquire(t, s, "ok", "w"), "a")
	c.Head.ParkDue = "2025-01-01T00:00:00.000Z"
	mustCommit(t, s, "ok", "w", c)
	writeFile(t, filepath.Join(dir, "sessions", "bad", "head.json"), "{")
	due, err := s.ListDueParks(t.Context(), "2026-01-01T00:00:00.000Z", 10)
	if err != nil || len(due) != 1 || due[0].SessionID != "ok" {
		t.Fatalf("due parks = %+v, %v", due, err)
	}
	if heads, _, err := s.List(t.Context(), store.ListOptions{}); err != nil || len(heads) != 1 {
		t.Errorf("list = %+v, %v", heads, err)
	}
	if _, err := s.Get(t.Context(), "bad"); err == nil {
		t.Errorf("Get of a corrupt head succeeded")
	}
}

// Store.Clock decides lease and idempotency expiry: a lease lapses and a record expires
// when the injected clock passes them, whatever the wall clock says.
func TestClockDecidesExpiry(t *testing.T) {
	s := openStore(t, t.TempDir())
	now := time.Date(2031, 3, 1, 12, 0, 0, 0, time.UTC)
	s.Clock = func() time.Time { return now }
	ctx := t.Context()
	h := mustAcquire(t, s, "s1", "a")
	mustCommit(t, s, "s1", "a", step(h, "a"))
	if _, _, err := s.RememberIdempotent(ctx, "k", []byte("v1"), time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Acquire(ctx, "s1", "b", time.Minute); !errors.Is(err, store.ErrLeaseHeld) {
		t.Fatalf("a lease live by the clock (years past the wall clock's): err = %v, want ErrLeaseHeld", err)
	}
	if v, ok, err := s.RememberIdempotent(ctx, "k", []byte("v2"), time.Hour); err != nil || !ok || string(v) != "v1" {
		t.Fatalf("a record live by the clock = %q %v %v, want v1", v, ok, err)
	}
	now = now.Add(2 * time.Hour)
	if _, err := s.Acquire(ctx, "s1", "b", time.Minute); err != nil {
		t.Fatalf("a lease lapsed by the clock: %v", err)
	}
	if v, ok, err := s.RememberIdempotent(ctx, "k", []byte("v2"), time.Hour); err != nil || ok {
		t.Fatalf("a record expired by the clock = %q %v %v, want it claimed afresh", v, ok, err)
	}
}
