// Package storetest is the conformance suite of the store ports (DESIGN.md §3, spec 02
// §9.3 and §15 Q1–Q3). Every adapter (memory, fs, dynamodb, s3) runs TestLog and/or
// TestFiles from its own tests; the suites use only the port's public contract, so a
// passing adapter is interchangeable with the others.
package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/store"
)

// TestLog runs the store.Log contract against fresh logs from newLog. newLog must return an
// empty log that shares no sessions with any other log it returned (each subtest calls it).
// Lease-expiry cases use real time with TTLs of tens of milliseconds.
func TestLog(t *testing.T, newLog func(t *testing.T) store.Log) {
	t.Run("Lease", func(t *testing.T) { testLease(t, newLog) })
	t.Run("Commit", func(t *testing.T) { testCommit(t, newLog) })
	t.Run("Items", func(t *testing.T) { testItems(t, newLog) })
	t.Run("List", func(t *testing.T) { testList(t, newLog) })
	t.Run("Owner", func(t *testing.T) { testOwner(t, newLog) })
	t.Run("DueParks", func(t *testing.T) { testDueParks(t, newLog) })
	t.Run("Idempotency", func(t *testing.T) { testIdempotency(t, newLog) })
	t.Run("Delete", func(t *testing.T) { testDelete(t, newLog) })
	t.Run("LargeValues", func(t *testing.T) { testLargeValues(t, newLog) })
	t.Run("Concurrency", func(t *testing.T) { testConcurrency(t, newLog) })
	t.Run("AliasIDs", func(t *testing.T) { testAliasIDs(t, newLog) })
}

const (
	long  = time.Minute            // a lease that stays live for the whole test
	short = 300 * time.Millisecond // a lease the test lets expire (long enough for one commit on a loaded machine)
)

// expire sleeps until a lease taken with ttl short is certainly expired.
func expire() { time.Sleep(short + 200*time.Millisecond) }

func raw(s string) json.RawMessage { return json.RawMessage(s) }

func item(log string, seq int) json.RawMessage {
	return raw(fmt.Sprintf(`{"log":%q,"seq":%d}`, log, seq))
}

// next builds the commit that follows h, appending nm messages, nt trail steps and ne
// events (tagged with tag so tests can tell writers apart).
func next(h *store.Head, tag string, nm, nt, ne int) *store.Commit {
	c := &store.Commit{ExpectedVersion: h.Version, Head: *h}
	c.Head.Lease = nil
	c.Head.Workflow = "wf"
	c.Head.Status = "running"
	if c.Head.CreatedAt == "" {
		c.Head.CreatedAt = "2025-01-01T00:00:00.000Z"
	}
	c.Head.UpdatedAt = "2025-01-01T00:00:00.000Z"
	c.Head.Body = raw(fmt.Sprintf(`{"tag":%q}`, tag))
	for i := range nm {
		c.Messages = append(c.Messages, item(tag+"/m", int(h.Messages)+i))
	}
	for i := range nt {
		c.Trail = append(c.Trail, item(tag+"/t", int(h.Trail)+i))
	}
	for i := range ne {
		c.Events = append(c.Events, item(tag+"/e", int(h.Events)+i))
	}
	c.Head.Messages += int64(nm)
	c.Head.Trail += int64(nt)
	c.Head.Events += int64(ne)
	return c
}

func mustAcquire(t *testing.T, l store.Log, id, owner string, ttl time.Duration) *store.Head {
	t.Helper()
	h, err := l.Acquire(t.Context(), id, owner, ttl)
	if err != nil {
		t.Fatalf("Acquire(%s, %s): %v", id, owner, err)
	}
	return h
}

func mustCommit(t *testing.T, l store.Log, id, owner string, c *store.Commit) *store.Head {
	t.Helper()
	h, err := l.Commit(t.Context(), id, owner, c)
	if err != nil {
		t.Fatalf("Commit(%s, %s, v%d): %v", id, owner, c.ExpectedVersion, err)
	}
	return h
}

// seed commits one version of session id (as owner "seed", lease released) with head
// fields set by edit.
func seed(t *testing.T, l store.Log, id string, edit func(h *store.Head)) *store.Head {
	t.Helper()
	h := mustAcquire(t, l, id, "seed", long)
	c := next(h, "seed", 1, 0, 0)
	edit(&c.Head)
	h = mustCommit(t, l, id, "seed", c)
	if err := l.Release(t.Context(), id, "seed"); err != nil {
		t.Fatalf("Release: %v", err)
	}
	return h
}

func testLease(t *testing.T, newLog func(t *testing.T) store.Log) {
	t.Run("new session: Version 0, nil Body, not yet visible", func(t *testing.T) {
		l := newLog(t)
		h := mustAcquire(t, l, "s1", "a", long)
		if h.Version != 0 || h.Body != nil || h.Messages != 0 || h.Trail != 0 || h.Events != 0 {
			t.Fatalf("Acquire on a new session = %+v, want a zero head", h)
		}
		if h.Lease == nil || h.Lease.Owner != "a" {
			t.Fatalf("Acquire lease = %+v, want owner a", h.Lease)
		}
		if _, err := l.Get(t.Context(), "s1"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Get before the first commit: err = %v, want ErrNotFound", err)
		}
	})
	t.Run("second owner refused while live", func(t *testing.T) {
		l := newLog(t)
		mustAcquire(t, l, "s1", "a", long)
		if _, err := l.Acquire(t.Context(), "s1", "b", long); !errors.Is(err, store.ErrLeaseHeld) {
			t.Fatalf("second owner: err = %v, want ErrLeaseHeld", err)
		}
	})
	t.Run("same owner re-acquires and extends", func(t *testing.T) {
		l := newLog(t)
		mustAcquire(t, l, "s1", "a", short)
		h := mustAcquire(t, l, "s1", "a", long)
		if h.Lease == nil || h.Lease.Owner != "a" {
			t.Fatalf("re-acquire lease = %+v", h.Lease)
		}
		expire() // past the first ttl: the extension must still hold
		if _, err := l.Acquire(t.Context(), "s1", "b", long); !errors.Is(err, store.ErrLeaseHeld) {
			t.Fatalf("after extension: err = %v, want ErrLeaseHeld", err)
		}
	})
	t.Run("expired lease is taken over", func(t *testing.T) {
		l := newLog(t)
		h := mustAcquire(t, l, "s1", "a", long)
		mustCommit(t, l, "s1", "a", next(h, "a", 1, 0, 0))
		mustAcquire(t, l, "s1", "a", short)
		expire()
		h = mustAcquire(t, l, "s1", "b", long)
		if h.Version != 1 || h.Lease == nil || h.Lease.Owner != "b" {
			t.Fatalf("takeover head = v%d lease %+v, want v1 owned by b", h.Version, h.Lease)
		}
	})
	t.Run("release lets another owner in", func(t *testing.T) {
		l := newLog(t)
		h := mustAcquire(t, l, "s1", "a", long)
		mustCommit(t, l, "s1", "a", next(h, "a", 1, 0, 0))
		if err := l.Release(t.Context(), "s1", "b"); err != nil { // not b's lease: no-op
			t.Fatalf("Release by non-holder: %v", err)
		}
		if _, err := l.Acquire(t.Context(), "s1", "b", long); !errors.Is(err, store.ErrLeaseHeld) {
			t.Fatalf("after a non-holder's release: err = %v, want ErrLeaseHeld", err)
		}
		if err := l.Release(t.Context(), "s1", "a"); err != nil {
			t.Fatalf("Release: %v", err)
		}
		if g, err := l.Get(t.Context(), "s1"); err != nil || g.Lease != nil {
			t.Fatalf("Get after release = %+v, %v; want no lease", g, err)
		}
		mustAcquire(t, l, "s1", "b", long)
		if err := l.Release(t.Context(), "never", "a"); err != nil {
			t.Fatalf("Release of an unknown session: %v", err)
		}
	})
	t.Run("reads report the live lease", func(t *testing.T) {
		l := newLog(t)
		h := mustAcquire(t, l, "s1", "a", long)
		mustCommit(t, l, "s1", "a", next(h, "a", 1, 0, 0))
		g, err := l.Get(t.Context(), "s1")
		if err != nil || g.Lease == nil || g.Lease.Owner != "a" || !g.Lease.Live(time.Now()) {
			t.Fatalf("Get = %+v, %v; want a live lease owned by a", g, err)
		}
		g.Lease.Owner, g.Lease.ExpiresAt = "b", time.Time{} // a copy: the stored lease stays a's
		if g, err = l.Get(t.Context(), "s1"); err != nil || g.Lease == nil || g.Lease.Owner != "a" {
			t.Fatalf("Get after mutating a returned lease = %+v, %v", g, err)
		}
	})
}

func testCommit(t *testing.T, newLog func(t *testing.T) store.Log) {
	t.Run("version increments and head round-trips", func(t *testing.T) {
		l := newLog(t)
		h := mustAcquire(t, l, "s1", "a", long)
		for want := int64(1); want <= 3; want++ {
			c := next(h, "a", 1, 1, 1)
			c.Head.Status = fmt.Sprintf("status-%d", want)
			h = mustCommit(t, l, "s1", "a", c)
			if h.Version != want || h.SessionID != "s1" {
				t.Fatalf("commit %d returned v%d id %q", want, h.Version, h.SessionID)
			}
			g, err := l.Get(t.Context(), "s1")
			if err != nil {
				t.Fatal(err)
			}
			if g.Version != want || g.Status != c.Head.Status || g.Workflow != "wf" ||
				g.Messages != want || g.Trail != want || g.Events != want ||
				g.CreatedAt != c.Head.CreatedAt || g.UpdatedAt != c.Head.UpdatedAt ||
				!bytes.Equal(g.Body, c.Head.Body) {
				t.Fatalf("Get after commit %d = %+v, want %+v", want, g, c.Head)
			}
		}
	})
	t.Run("wrong ExpectedVersion conflicts and shows nothing", func(t *testing.T) {
		l := newLog(t)
		h := mustAcquire(t, l, "s1", "a", long)
		h = mustCommit(t, l, "s1", "a", next(h, "a", 1, 1, 1))
		for _, v := range []int64{0, 2, 7} {
			c := next(h, "bad", 2, 2, 2)
			c.ExpectedVersion = v
			if _, err := l.Commit(t.Context(), "s1", "a", c); !errors.Is(err, store.ErrConflict) {
				t.Fatalf("ExpectedVersion %d on v1: err = %v, want ErrConflict", v, err)
			}
		}
		assertUnchanged(t, l, "s1", h)
	})
	t.Run("first commit of a new session with a nonzero version conflicts", func(t *testing.T) {
		l := newLog(t)
		h := mustAcquire(t, l, "s1", "a", long)
		c := next(h, "a", 1, 0, 0)
		c.ExpectedVersion = 1
		if _, err := l.Commit(t.Context(), "s1", "a", c); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("err = %v, want ErrConflict", err)
		}
		if _, err := l.Get(t.Context(), "s1"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Get: err = %v, want ErrNotFound", err)
		}
	})
	t.Run("commit without the lease conflicts", func(t *testing.T) {
		l := newLog(t)
		if _, err := l.Commit(t.Context(), "s1", "a", next(&store.Head{}, "a", 1, 0, 0)); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("commit with no lease: err = %v, want ErrConflict", err)
		}
		h := mustAcquire(t, l, "s1", "a", long)
		h = mustCommit(t, l, "s1", "a", next(h, "a", 1, 0, 0))
		if _, err := l.Commit(t.Context(), "s1", "b", next(h, "b", 1, 0, 0)); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("commit by a non-holder: err = %v, want ErrConflict", err)
		}
		assertUnchanged(t, l, "s1", h)
	})
	t.Run("lease lost to expiry and takeover", func(t *testing.T) {
		l := newLog(t)
		h := mustAcquire(t, l, "s1", "a", short)
		h = mustCommit(t, l, "s1", "a", next(h, "a", 1, 0, 0))
		expire()
		hb := mustAcquire(t, l, "s1", "b", long)
		if _, err := l.Commit(t.Context(), "s1", "a", next(h, "a", 1, 0, 0)); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("commit after takeover: err = %v, want ErrConflict", err)
		}
		assertUnchanged(t, l, "s1", h)
		mustCommit(t, l, "s1", "b", next(hb, "b", 1, 0, 0))
	})
	t.Run("expired lease without takeover conflicts", func(t *testing.T) {
		l := newLog(t)
		h := mustAcquire(t, l, "s1", "a", short)
		h = mustCommit(t, l, "s1", "a", next(h, "a", 1, 0, 0))
		expire()
		if _, err := l.Commit(t.Context(), "s1", "a", next(h, "a", 1, 0, 0)); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("commit on an expired lease: err = %v, want ErrConflict", err)
		}
		assertUnchanged(t, l, "s1", h)
	})
	t.Run("counters must match old counters plus items", func(t *testing.T) {
		l := newLog(t)
		h := mustAcquire(t, l, "s1", "a", long)
		h = mustCommit(t, l, "s1", "a", next(h, "a", 1, 1, 1))
		for name, edit := range map[string]func(c *store.Commit){
			"messages too high": func(c *store.Commit) { c.Head.Messages++ },
			"messages too low":  func(c *store.Commit) { c.Head.Messages-- },
			"trail":             func(c *store.Commit) { c.Head.Trail += 3 },
			"events":            func(c *store.Commit) { c.Head.Events = 0 },
			"items not counted": func(c *store.Commit) { c.Events = append(c.Events, raw(`{}`)) },
		} {
			c := next(h, "bad", 1, 1, 1)
			edit(c)
			_, err := l.Commit(t.Context(), "s1", "a", c)
			if err == nil || errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrLeaseHeld) {
				t.Fatalf("%s: err = %v, want a non-conflict error", name, err)
			}
		}
		assertUnchanged(t, l, "s1", h)
	})
	t.Run("store stamps the session id and ignores a supplied lease", func(t *testing.T) {
		l := newLog(t)
		h := mustAcquire(t, l, "s1", "a", long)
		c := next(h, "a", 0, 0, 0)
		c.Head.SessionID = ""
		c.Head.Lease = &store.Lease{Owner: "forged", ExpiresAt: time.Now().Add(time.Hour)}
		mustCommit(t, l, "s1", "a", c)
		g, err := l.Get(t.Context(), "s1")
		if err != nil || g.SessionID != "s1" || g.Lease == nil || g.Lease.Owner != "a" {
			t.Fatalf("Get = %+v, %v", g, err)
		}
	})
}

// assertUnchanged checks that the visible state of session id is still want.
func assertUnchanged(t *testing.T, l store.Log, id string, want *store.Head) {
	t.Helper()
	g, err := l.Get(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if g.Version != want.Version || g.Messages != want.Messages || g.Trail != want.Trail ||
		g.Events != want.Events || !bytes.Equal(g.Body, want.Body) {
		t.Fatalf("head changed: %+v, want %+v", g, want)
	}
	for _, r := range readers(l) {
		items, err := r.read(t.Context(), id, 0, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(items)) != r.count(want) {
			t.Fatalf("%s: %d items visible, want %d", r.name, len(items), r.count(want))
		}
	}
}

type reader struct {
	name  string
	read  func(ctx context.Context, id string, from, to int64) ([]json.RawMessage, error)
	count func(h *store.Head) int64
}

func readers(l store.Log) []reader {
	return []reader{
		{"messages", l.Messages, func(h *store.Head) int64 { return h.Messages }},
		{"trail", l.TrailSteps, func(h *store.Head) int64 { return h.Trail }},
		{"events", l.Events, func(h *store.Head) int64 { return h.Events }},
	}
}

func testItems(t *testing.T, newLog func(t *testing.T) store.Log) {
	t.Run("in order, ranges clamp to counters", func(t *testing.T) {
		l := newLog(t)
		h := mustAcquire(t, l, "s1", "a", long)
		h = mustCommit(t, l, "s1", "a", next(h, "a", 3, 2, 1))
		h = mustCommit(t, l, "s1", "a", next(h, "a", 2, 2, 2))
		tags := map[string]string{"messages": "a/m", "trail": "a/t", "events": "a/e"}
		for _, r := range readers(l) {
			n := r.count(h)
			for _, rg := range []struct{ from, to, wantFrom, wantTo int64 }{
				{0, n, 0, n},
				{0, 1000, 0, n},
				{1, n - 1, 1, n - 1},
				{-5, 2, 0, 2},
				{n, n + 5, n, n},
				{n + 3, n + 9, n, n},
				{2, 1, 2, 2},
			} {
				got, err := r.read(t.Context(), "s1", rg.from, rg.to)
				if err != nil {
					t.Fatalf("%s[%d,%d): %v", r.name, rg.from, rg.to, err)
				}
				if int64(len(got)) != rg.wantTo-rg.wantFrom {
					t.Fatalf("%s[%d,%d): %d items, want %d", r.name, rg.from, rg.to, len(got), rg.wantTo-rg.wantFrom)
				}
				for i, it := range got {
					if want := item(tags[r.name], int(rg.wantFrom)+i); !bytes.Equal(it, want) {
						t.Fatalf("%s[%d,%d) item %d = %s, want %s", r.name, rg.from, rg.to, i, it, want)
					}
				}
			}
		}
	})
	t.Run("missing session", func(t *testing.T) {
		l := newLog(t)
		for _, r := range readers(l) {
			if _, err := r.read(t.Context(), "nope", 0, 10); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("%s of a missing session: err = %v, want ErrNotFound", r.name, err)
			}
		}
	})
	t.Run("abandoned items are invisible and replaced", func(t *testing.T) {
		l := newLog(t)
		h := mustAcquire(t, l, "s1", "a", short)
		h = mustCommit(t, l, "s1", "a", next(h, "a", 1, 1, 1))
		// a's next step fails (its lease is gone), whatever it may have written first.
		expire()
		hb := mustAcquire(t, l, "s1", "b", long)
		if _, err := l.Commit(t.Context(), "s1", "a", next(h, "lost", 2, 2, 2)); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("abandoned commit: err = %v, want ErrConflict", err)
		}
		stale := next(hb, "lost", 2, 2, 2)
		stale.ExpectedVersion = 9
		if _, err := l.Commit(t.Context(), "s1", "b", stale); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("stale commit: err = %v, want ErrConflict", err)
		}
		assertUnchanged(t, l, "s1", h)
		hb = mustCommit(t, l, "s1", "b", next(hb, "b", 2, 2, 2))
		tags := map[string]string{"messages": "b/m", "trail": "b/t", "events": "b/e"}
		for _, r := range readers(l) {
			got, err := r.read(t.Context(), "s1", 1, 100)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 2 || !bytes.Equal(got[0], item(tags[r.name], 1)) || !bytes.Equal(got[1], item(tags[r.name], 2)) {
				t.Fatalf("%s after takeover = %s, want b's items 1 and 2", r.name, got)
			}
		}
	})
	t.Run("returned items are copies", func(t *testing.T) {
		l := newLog(t)
		h := mustAcquire(t, l, "s1", "a", long)
		c := next(h, "a", 1, 0, 0)
		mustCommit(t, l, "s1", "a", c)
		c.Messages[0][2] = 'X' // the caller reuses its buffer
		got, err := l.Messages(t.Context(), "s1", 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		got[0][2] = 'Y'
		again, err := l.Messages(t.Context(), "s1", 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again[0], item("a/m", 0)) {
			t.Fatalf("stored item aliased a caller's buffer: %s", again[0])
		}
	})
}

func testList(t *testing.T, newLog func(t *testing.T) store.Log) {
	l := newLog(t)
	type row struct{ id, wf, status, updated string }
	rows := []row{
		{"s1", "alpha", "completed", "2025-01-01T00:00:01.000Z"},
		{"s2", "beta", "running", "2025-01-01T00:00:05.000Z"},
		{"s3", "alpha", "running", "2025-01-01T00:00:03.000Z"},
		{"s4", "alpha", "completed", "2025-01-01T00:00:09.000Z"},
		{"s5", "beta", "completed", "2025-01-01T00:00:02.000Z"},
		{"s6", "alpha", "running", "2025-01-01T00:00:03.000Z"}, // ties s3
		{"s7", "gamma", "failed", "2025-01-01T00:00:07.000Z"},
	}
	for _, r := range rows {
		seed(t, l, r.id, func(h *store.Head) { h.Workflow, h.Status, h.UpdatedAt = r.wf, r.status, r.updated })
	}
	mustAcquire(t, l, "uncommitted", "x", long) // a lease alone is not a session

	ids := func(hs []*store.Head) []string {
		var out []string
		for _, h := range hs {
			out = append(out, h.SessionID)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		opts store.ListOptions
		want []string // newest first; s3/s6 tie, either order
	}{
		{"all", store.ListOptions{}, []string{"s4", "s7", "s2", "s3|s6", "s3|s6", "s5", "s1"}},
		{"workflow", store.ListOptions{Workflow: "alpha"}, []string{"s4", "s3|s6", "s3|s6", "s1"}},
		{"status", store.ListOptions{Status: "completed"}, []string{"s4", "s5", "s1"}},
		{"both", store.ListOptions{Workflow: "alpha", Status: "running"}, []string{"s3|s6", "s3|s6"}},
		{"none", store.ListOptions{Workflow: "zeta"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, cursor, err := l.List(t.Context(), tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if cursor != "" {
				t.Fatalf("single page returned cursor %q", cursor)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("List = %v, want %v", ids(got), tc.want)
			}
			for i, h := range got {
				if w := tc.want[i]; h.SessionID != w && !(w == "s3|s6" && (h.SessionID == "s3" || h.SessionID == "s6")) {
					t.Fatalf("List = %v, want %v", ids(got), tc.want)
				}
			}
			if len(got) == 0 {
				return
			}
			if h := got[0]; h.Body == nil || h.Messages != 1 || h.Version != 1 {
				t.Fatalf("listed head = %+v, want the full committed head", h)
			}
		})
	}
	t.Run("pages cover every session once", func(t *testing.T) {
		for _, limit := range []int{1, 2, 3, 7, 8} {
			for _, opts := range []store.ListOptions{{Limit: limit}, {Limit: limit, Workflow: "alpha"}} {
				all, _, err := l.List(t.Context(), store.ListOptions{Workflow: opts.Workflow})
				if err != nil {
					t.Fatal(err)
				}
				var paged []string
				for pages := 0; ; pages++ {
					if pages > len(rows) {
						t.Fatalf("limit %d: cursor never ends", limit)
					}
					page, cursor, err := l.List(t.Context(), opts)
					if err != nil {
						t.Fatal(err)
					}
					if len(page) > limit {
						t.Fatalf("limit %d: page of %d", limit, len(page))
					}
					paged = append(paged, ids(page)...)
					if cursor == "" {
						break
					}
					opts.Cursor = cursor
				}
				if fmt.Sprint(paged) != fmt.Sprint(ids(all)) {
					t.Fatalf("limit %d %q: pages %v, want %v", limit, opts.Workflow, paged, ids(all))
				}
			}
		}
	})
	t.Run("default limit is 50", func(t *testing.T) {
		l := newLog(t)
		for i := range 51 {
			seed(t, l, fmt.Sprintf("p%02d", i), func(h *store.Head) {
				h.UpdatedAt = fmt.Sprintf("2025-01-01T00:00:%02d.000Z", i)
			})
		}
		page, cursor, err := l.List(t.Context(), store.ListOptions{})
		if err != nil || len(page) != 50 || cursor == "" {
			t.Fatalf("List = %d heads, cursor %q, %v; want 50 and a cursor", len(page), cursor, err)
		}
		page, cursor, err = l.List(t.Context(), store.ListOptions{Cursor: cursor})
		if err != nil || len(page) != 1 || page[0].SessionID != "p00" || cursor != "" {
			t.Fatalf("second page = %d heads, cursor %q, %v; want p00 alone", len(page), cursor, err)
		}
	})
}

// testOwner: a head's Owner is write-once; List with an Owner returns exactly that owner's
// heads (with the workflow and status filters, in pages); the sessions awaiting a decision
// are listed whoever owns them, and leave that listing when answered.
func testOwner(t *testing.T, newLog func(t *testing.T) store.Log) {
	t.Run("write-once", func(t *testing.T) {
		l := newLog(t)
		h := seed(t, l, "s1", func(h *store.Head) { h.Owner = "jwt:https://i/#dana" })
		if got, err := l.Get(t.Context(), "s1"); err != nil || got.Owner != "jwt:https://i/#dana" || h.Owner != got.Owner {
			t.Fatalf("Get = %+v, %v (commit returned %q); want the owner", got, err, h.Owner)
		}
		for _, other := range []string{"jwt:https://i/#eve", ""} {
			h := mustAcquire(t, l, "s1", "a", long)
			if h.Owner != "jwt:https://i/#dana" {
				t.Fatalf("Acquire = owner %q, want the stored one", h.Owner)
			}
			c := next(h, "a", 1, 0, 0)
			c.Head.Owner = other
			if _, err := l.Commit(t.Context(), "s1", "a", c); !errors.Is(err, store.ErrInvalidCommit) {
				t.Fatalf("a commit changing the owner to %q: %v, want ErrInvalidCommit", other, err)
			}
			if err := l.Release(t.Context(), "s1", "a"); err != nil {
				t.Fatal(err)
			}
		}
		h = mustAcquire(t, l, "s1", "a", long)
		mustCommit(t, l, "s1", "a", next(h, "a", 0, 1, 0)) // the owner carried on: fine
		// a session committed without an owner may be given one (never the reverse)
		h = seed(t, l, "legacy", func(h *store.Head) {})
		if h.Owner != "" {
			t.Fatalf("an owner appeared: %q", h.Owner)
		}
		h = mustAcquire(t, l, "legacy", "a", long)
		c := next(h, "a", 1, 0, 0)
		c.Head.Owner = "iam:arn:aws:iam::1:role/r"
		if got := mustCommit(t, l, "legacy", "a", c); got.Owner != "iam:arn:aws:iam::1:role/r" {
			t.Fatalf("owner set later = %q", got.Owner)
		}
	})
	t.Run("listing by owner and the decision queue", func(t *testing.T) {
		l := newLog(t)
		const dana, eve = "jwt:https://i/#dana", "jwt:https://i/#eve"
		type row struct{ id, owner, wf, status, updated string }
		rows := []row{
			{"d1", dana, "alpha", "completed", "2025-01-01T00:00:01.000Z"},
			{"d2", dana, "beta", "awaiting_decision", "2025-01-01T00:00:05.000Z"},
			{"d3", dana, "alpha", "running", "2025-01-01T00:00:03.000Z"},
			{"e1", eve, "alpha", "awaiting_decision", "2025-01-01T00:00:04.000Z"},
			{"e2", eve, "alpha", "running", "2025-01-01T00:00:06.000Z"},
			{"n1", "", "alpha", "awaiting_decision", "2025-01-01T00:00:02.000Z"}, // no owner
			{"d4", dana, "alpha", "awaiting_input", "2025-01-01T00:00:07.000Z"},
			{"d5", dana, "alpha", "running", "2025-01-01T00:00:03.000Z"}, // ties d3
		}
		for _, r := range rows {
			seed(t, l, r.id, func(h *store.Head) { h.Owner, h.Workflow, h.Status, h.UpdatedAt = r.owner, r.wf, r.status, r.updated })
		}
		ids := func(hs []*store.Head) string {
			var out []string
			for _, h := range hs {
				out = append(out, h.SessionID)
			}
			return fmt.Sprint(out)
		}
		for _, tc := range []struct {
			name string
			opts store.ListOptions
			want string
		}{
			{"owner", store.ListOptions{Owner: dana}, "[d4 d2 d3 d5 d1]"},
			{"owner and workflow", store.ListOptions{Owner: dana, Workflow: "alpha"}, "[d4 d3 d5 d1]"},
			{"owner and status", store.ListOptions{Owner: dana, Status: "awaiting_decision"}, "[d2]"},
			{"other owner", store.ListOptions{Owner: eve}, "[e2 e1]"},
			{"unknown owner", store.ListOptions{Owner: "jwt:https://i/#mallory"}, "[]"},
			{"decision queue", store.ListOptions{Status: "awaiting_decision"}, "[d2 e1 n1]"},
			{"decision queue of a workflow", store.ListOptions{Status: "awaiting_decision", Workflow: "alpha"}, "[e1 n1]"},
		} {
			got, cursor, err := l.List(t.Context(), tc.opts)
			if err != nil || cursor != "" || ids(got) != tc.want {
				t.Fatalf("%s: List = %s, %q, %v; want %s", tc.name, ids(got), cursor, err, tc.want)
			}
			for _, h := range got {
				if tc.opts.Status == "awaiting_decision" && (h.ParkDue != "" || h.Body == nil || h.Version != 1) {
					t.Fatalf("%s: listed head %+v, want the full head with no ParkDue", tc.name, h)
				}
			}
		}
		for _, opts := range []store.ListOptions{{Owner: dana}, {Status: "awaiting_decision"}} {
			var paged []*store.Head
			for pages := 0; ; pages++ {
				if pages > len(rows) {
					t.Fatal("cursor never ends")
				}
				opts.Limit = 1
				page, cursor, err := l.List(t.Context(), opts)
				if err != nil || len(page) > 1 {
					t.Fatalf("page = %d heads, %v", len(page), err)
				}
				paged = append(paged, page...)
				if cursor == "" {
					break
				}
				opts.Cursor = cursor
			}
			opts.Limit, opts.Cursor = 0, ""
			all, _, _ := l.List(t.Context(), opts)
			if ids(paged) != ids(all) {
				t.Fatalf("%+v: pages %s, want %s", opts, ids(paged), ids(all))
			}
		}
		// answered: it leaves the queue (and is no due park), and stays its owner's
		h := mustAcquire(t, l, "d2", "a", long)
		c := next(h, "a", 1, 0, 0)
		c.Head.Workflow, c.Head.Status, c.Head.UpdatedAt = "beta", "running", "2025-01-01T00:00:08.000Z"
		mustCommit(t, l, "d2", "a", c)
		if got, _, err := l.List(t.Context(), store.ListOptions{Status: "awaiting_decision"}); err != nil || ids(got) != "[e1 n1]" {
			t.Fatalf("queue after the decision = %s, %v", ids(got), err)
		}
		if got, _, err := l.List(t.Context(), store.ListOptions{Owner: dana}); err != nil || ids(got) != "[d2 d4 d3 d5 d1]" {
			t.Fatalf("owner after the decision = %s, %v", ids(got), err)
		}
		if due, err := l.ListDueParks(t.Context(), "9999-01-01T00:00:00.000Z", 10); err != nil || ids(due) != "[]" {
			t.Fatalf("due parks = %s, %v; a decision park is never due", ids(due), err)
		}
	})
}

func testDueParks(t *testing.T, newLog func(t *testing.T) store.Log) {
	l := newLog(t)
	for id, due := range map[string]string{
		"late":    "2025-03-01T10:00:00.000Z",
		"early":   "2025-03-01T08:00:00.000Z",
		"exact":   "2025-03-01T12:00:00.000Z",
		"future":  "2025-03-01T12:00:00.001Z",
		"middle":  "2025-03-01T09:00:00.000Z",
		"unset":   "",
		"cleared": "2025-03-01T07:00:00.000Z",
	} {
		seed(t, l, id, func(h *store.Head) { h.ParkDue = due; h.Status = "awaiting_input" })
	}
	// "cleared" is resumed: its next commit drops ParkDue.
	h := mustAcquire(t, l, "cleared", "a", long)
	c := next(h, "a", 1, 0, 0)
	c.Head.ParkDue = ""
	mustCommit(t, l, "cleared", "a", c)

	const now = "2025-03-01T12:00:00.000Z"
	for _, tc := range []struct {
		limit int
		want  string
	}{
		{10, "[early middle late exact]"},
		{2, "[early middle]"},
		{1, "[early]"},
	} {
		got, err := l.ListDueParks(t.Context(), now, tc.limit)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, h := range got {
			ids = append(ids, h.SessionID)
			if h.ParkDue == "" || h.ParkDue > now {
				t.Fatalf("due head %s has ParkDue %q", h.SessionID, h.ParkDue)
			}
		}
		if fmt.Sprint(ids) != tc.want {
			t.Fatalf("ListDueParks(limit %d) = %v, want %s", tc.limit, ids, tc.want)
		}
	}
	got, err := l.ListDueParks(t.Context(), "2025-01-01T00:00:00.000Z", 10)
	if err != nil || len(got) != 0 {
		t.Fatalf("nothing due yet: %d heads, %v", len(got), err)
	}
}

func testIdempotency(t *testing.T, newLog func(t *testing.T) store.Log) {
	l := newLog(t)
	ctx := t.Context()
	v, found, err := l.RememberIdempotent(ctx, "turn:1", []byte(`{"first":true}`), time.Hour)
	if err != nil || found || v != nil {
		t.Fatalf("first remember = %s, %v, %v; want nil, false, nil", v, found, err)
	}
	v, found, err = l.RememberIdempotent(ctx, "turn:1", []byte(`{"second":true}`), time.Hour)
	if err != nil || !found || string(v) != `{"first":true}` {
		t.Fatalf("second remember = %s, %v, %v; want the first value", v, found, err)
	}
	if err := l.PutIdempotent(ctx, "turn:1", []byte(`{"final":true}`), time.Hour); err != nil {
		t.Fatal(err)
	}
	v, found, err = l.RememberIdempotent(ctx, "turn:1", []byte(`{"third":true}`), time.Hour)
	if err != nil || !found || string(v) != `{"final":true}` {
		t.Fatalf("remember after put = %s, %v, %v; want the put value", v, found, err)
	}
	if err := l.PutIdempotent(ctx, "turn:3", []byte(`{"put":true}`), time.Hour); err != nil {
		t.Fatal(err)
	}
	if v, found, err := l.RememberIdempotent(ctx, "turn:3", []byte(`x`), time.Hour); err != nil || !found || string(v) != `{"put":true}` {
		t.Fatalf("remember of a put-only key = %s, %v, %v", v, found, err)
	}
	v, found, err = l.RememberIdempotent(ctx, "turn:2", []byte("\x00\xffbinary"), time.Hour)
	if err != nil || found || v != nil {
		t.Fatalf("other key = %s, %v, %v", v, found, err)
	}
	v, found, err = l.RememberIdempotent(ctx, "turn:2", nil, time.Hour)
	if err != nil || !found || string(v) != "\x00\xffbinary" {
		t.Fatalf("binary value = %q, %v, %v", v, found, err)
	}

	// a recorded value of any size round-trips — an HTTP answer over DynamoDB's 400 KB item
	// limit included (Issue 18: such an answer was never recorded, so its repeat answered
	// 202 for a session that had completed)
	t.Run("large values", func(t *testing.T) {
		big := []byte(`{"reply":"` + strings.Repeat("é", 300<<10) + `"}`) // 600 KB
		if err := l.PutIdempotent(ctx, "big:put", big, time.Hour); err != nil {
			t.Fatalf("put a %d-byte value: %v", len(big), err)
		}
		v, found, err := l.RememberIdempotent(ctx, "big:put", []byte(`x`), time.Hour)
		if err != nil || !found || !bytes.Equal(v, big) {
			t.Fatalf("remember after a big put = %d bytes, %v, %v; want the %d bytes put", len(v), found, err, len(big))
		}
		if _, found, err := l.RememberIdempotent(ctx, "big:claim", big, time.Hour); err != nil || found {
			t.Fatalf("claim with a %d-byte value: %v, %v", len(big), found, err)
		}
		v, found, err = l.RememberIdempotent(ctx, "big:claim", nil, time.Hour)
		if err != nil || !found || !bytes.Equal(v, big) {
			t.Fatalf("remember of a big claim = %d bytes, %v, %v", len(v), found, err)
		}
	})

	t.Run("concurrent first writer wins", func(t *testing.T) {
		const n = 8
		var wg sync.WaitGroup
		results := make([]string, n)
		wins := make([]bool, n)
		for i := range n {
			wg.Go(func() {
				v, found, err := l.RememberIdempotent(ctx, "race", fmt.Appendf(nil, "w%d", i), time.Hour)
				if err != nil {
					t.Error(err)
					return
				}
				wins[i] = !found
				results[i] = string(v)
			})
		}
		wg.Wait()
		winner := -1
		for i, w := range wins {
			if w {
				if winner >= 0 {
					t.Fatalf("writers %d and %d both won", winner, i)
				}
				winner = i
			}
		}
		if winner < 0 {
			t.Fatal("no writer won")
		}
		for i, r := range results {
			if i != winner && r != fmt.Sprintf("w%d", winner) {
				t.Fatalf("writer %d saw %q, want w%d", i, r, winner)
			}
		}
	})
}

func testDelete(t *testing.T, newLog func(t *testing.T) store.Log) {
	l := newLog(t)
	ctx := t.Context()
	h := mustAcquire(t, l, "s1", "a", long)
	mustCommit(t, l, "s1", "a", next(h, "a", 2, 2, 2))
	seed(t, l, "s2", func(*store.Head) {})

	existed, err := l.Delete(ctx, "s1")
	if err != nil || !existed {
		t.Fatalf("Delete = %v, %v; want true", existed, err)
	}
	if _, err := l.Get(ctx, "s1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get after Delete: err = %v, want ErrNotFound", err)
	}
	for _, r := range readers(l) {
		if _, err := r.read(ctx, "s1", 0, 10); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("%s after Delete: err = %v, want ErrNotFound", r.name, err)
		}
	}
	if existed, err := l.Delete(ctx, "s1"); err != nil || existed {
		t.Fatalf("second Delete = %v, %v; want false", existed, err)
	}
	if _, err := l.Get(ctx, "s2"); err != nil {
		t.Fatalf("other session after Delete: %v", err)
	}
	list, _, err := l.List(ctx, store.ListOptions{})
	if err != nil || len(list) != 1 || list[0].SessionID != "s2" {
		t.Fatalf("List after Delete = %d heads, %v", len(list), err)
	}

	// The old holder's lease went with the session: a new session starts afresh.
	h = mustAcquire(t, l, "s1", "b", long)
	if h.Version != 0 || h.Messages != 0 {
		t.Fatalf("re-created session = %+v, want a zero head", h)
	}
	if _, err := l.Commit(ctx, "s1", "a", next(h, "a", 1, 0, 0)); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("old holder after Delete: err = %v, want ErrConflict", err)
	}
	h = mustCommit(t, l, "s1", "b", next(h, "b", 1, 0, 0))
	got, err := l.Messages(ctx, "s1", 0, 10)
	if err != nil || len(got) != 1 || !bytes.Equal(got[0], item("b/m", 0)) {
		t.Fatalf("messages of the re-created session = %s, %v", got, err)
	}
}

func testLargeValues(t *testing.T, newLog func(t *testing.T) store.Log) {
	l := newLog(t)
	msg := bigJSON(1<<20, "message")
	body := bigJSON(300<<10, "body")
	h := mustAcquire(t, l, "big", "a", long)
	c := next(h, "a", 0, 0, 0)
	c.Messages = []json.RawMessage{msg}
	c.Head.Messages = 1
	c.Head.Body = body
	mustCommit(t, l, "big", "a", c)

	got, err := l.Messages(t.Context(), "big", 0, 1)
	if err != nil || len(got) != 1 || !bytes.Equal(got[0], msg) {
		t.Fatalf("1 MiB message did not round-trip (err %v)", err)
	}
	g, err := l.Get(t.Context(), "big")
	if err != nil || !bytes.Equal(g.Body, body) {
		t.Fatalf("300 KiB body did not round-trip (err %v)", err)
	}
}

// bigJSON returns a JSON object of exactly n bytes whose text uses the whole printable
// range (including characters JSON encoders like to escape) and insignificant whitespace,
// so any re-encoding shows up as a difference.
func bigJSON(n int, name string) json.RawMessage {
	var b bytes.Buffer
	fmt.Fprintf(&b, "{ \"name\": %q,\n  \"text\": \"", name)
	for i := 0; b.Len() < n-2; i++ {
		c := byte(' ' + i%95)
		if c == '"' || c == '\\' {
			c = '<'
		}
		b.WriteByte(c)
	}
	b.WriteString("\"}")
	return b.Bytes()[:n:n]
}

func testConcurrency(t *testing.T, newLog func(t *testing.T) store.Log) {
	t.Run("one commit per version", func(t *testing.T) {
		// Writers sharing an owner are serialised by the version condition alone.
		l := newLog(t)
		const writers, rounds = 8, 10
		h := mustAcquire(t, l, "s1", "shared", long)
		for round := range rounds {
			var (
				wg     sync.WaitGroup
				mu     sync.Mutex
				winner = -1
			)
			for w := range writers {
				wg.Go(func() {
					_, err := l.Commit(t.Context(), "s1", "shared", next(h, fmt.Sprintf("w%d", w), 1, 1, 0))
					switch {
					case err == nil:
						mu.Lock()
						defer mu.Unlock()
						if winner >= 0 {
							t.Errorf("round %d: writers %d and %d both committed v%d", round, winner, w, h.Version+1)
						}
						winner = w
					case !errors.Is(err, store.ErrConflict):
						t.Errorf("round %d writer %d: %v", round, w, err)
					}
				})
			}
			wg.Wait()
			if winner < 0 {
				t.Fatalf("round %d: no commit succeeded", round)
			}
			var err error
			if h, err = l.Get(t.Context(), "s1"); err != nil {
				t.Fatal(err)
			}
			if h.Version != int64(round+1) || string(h.Body) != fmt.Sprintf(`{"tag":"w%d"}`, winner) {
				t.Fatalf("round %d: head v%d body %s, want v%d by w%d", round, h.Version, h.Body, round+1, winner)
			}
			got, err := l.Messages(t.Context(), "s1", int64(round), int64(round+1))
			if err != nil || len(got) != 1 || !bytes.Equal(got[0], item(fmt.Sprintf("w%d/m", winner), round)) {
				t.Fatalf("round %d: message %s, %v; want the winner's", round, got, err)
			}
		}
	})
	t.Run("leased writers lose no update", func(t *testing.T) {
		l := newLog(t)
		const writers, each = 6, 5
		var wg sync.WaitGroup
		for w := range writers {
			owner := fmt.Sprintf("w%d", w)
			wg.Go(func() {
				for done := 0; done < each; {
					h, err := l.Acquire(t.Context(), "s1", owner, long)
					if errors.Is(err, store.ErrLeaseHeld) {
						time.Sleep(time.Millisecond)
						continue
					}
					if err != nil {
						t.Error(err)
						return
					}
					_, err = l.Commit(t.Context(), "s1", owner, next(h, owner, 1, 0, 1))
					if err != nil {
						t.Errorf("%s: commit under a held lease: %v", owner, err)
					}
					if err := l.Release(t.Context(), "s1", owner); err != nil {
						t.Error(err)
						return
					}
					if err != nil {
						return
					}
					done++
				}
			})
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		h, err := l.Get(t.Context(), "s1")
		if err != nil || h.Version != writers*each || h.Messages != writers*each || h.Events != writers*each {
			t.Fatalf("final head = %+v, %v; want v%d with %d messages", h, err, writers*each, writers*each)
		}
		msgs, err := l.Messages(t.Context(), "s1", 0, h.Messages)
		if err != nil {
			t.Fatal(err)
		}
		perOwner := map[string]int{}
		for i, m := range msgs {
			var it struct {
				Log string `json:"log"`
				Seq int    `json:"seq"`
			}
			if err := json.Unmarshal(m, &it); err != nil || it.Seq != i {
				t.Fatalf("message %d = %s (%v)", i, m, err)
			}
			perOwner[it.Log]++
		}
		for w := range writers {
			if n := perOwner[fmt.Sprintf("w%d/m", w)]; n != each {
				t.Fatalf("writer w%d has %d messages, want %d", w, n, each)
			}
		}
	})
}

// BenchCommit measures one Commit of one message, one trail step and one event (a typical
// engine step) on l; a fresh session starts every 200 commits, so the figure covers
// sessions up to that length. Adapters call it from their BenchmarkCommit.
func BenchCommit(b *testing.B, l store.Log) {
	ctx := context.Background()
	var (
		h       *store.Head
		session int
	)
	msg := bigJSON(2<<10, "message")
	step := raw(`{"kind":"move","from":"a","to":"b","at":"2025-01-01T00:00:00.000Z"}`)
	ev := raw(`{"type":"state-entered","state":"b"}`)
	body := bigJSON(4<<10, "body")
	for i := 0; b.Loop(); i++ {
		if i%200 == 0 {
			session++
			var err error
			if h, err = l.Acquire(ctx, fmt.Sprintf("bench-%d", session), "bench", time.Hour); err != nil {
				b.Fatal(err)
			}
		}
		c := &store.Commit{ExpectedVersion: h.Version, Head: *h,
			Messages: []json.RawMessage{msg}, Trail: []json.RawMessage{step}, Events: []json.RawMessage{ev}}
		c.Head.Messages++
		c.Head.Trail++
		c.Head.Events++
		c.Head.Body = body
		c.Head.UpdatedAt = "2025-01-01T00:00:00.000Z"
		var err error
		if h, err = l.Commit(ctx, fmt.Sprintf("bench-%d", session), "bench", c); err != nil {
			b.Fatal(err)
		}
	}
}
