package main

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/store"
)

// RD22-5: `archmax serve` serves DELETE /v1/sessions/{id} over the local store: 204, the
// session gone (GET is 404), 204 again for the repeat.
func TestServeDeletesASession(t *testing.T) {
	srv, base, stop := serveOn(t, time.Now().Add(time.Hour))
	if status, body := post(t, base, "/v1/workflows/courier/sessions/c1/turns", `{"message":"track parcel 7"}`); status != 200 || body["status"] != "awaiting_input" {
		t.Fatalf("wait: %d %v", status, body)
	}
	for round := range 2 {
		req, err := http.NewRequest(http.MethodDelete, base+"/v1/sessions/c1", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("DELETE (round %d) = %d", round, resp.StatusCode)
		}
	}
	if _, err := srv.engines.Log().Get(context.Background(), "c1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the session after DELETE: %v", err)
	}
	resp, err := http.Get(base + "/v1/sessions/c1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET after DELETE = %d", resp.StatusCode)
	}
	if err := stop(); err != nil {
		t.Errorf("Serve: %v", err)
	}
}

// RD22-12: `archmax serve`'s sweep deletes a session whose retention expired — only while
// retention is configured (RD22-16): turned off, a session that still carries an expiry from
// before is kept.
func TestServeSweepDeletesExpiredSessions(t *testing.T) {
	t.Run("retention", func(t *testing.T) {
		t.Setenv("ARCHMAX_SESSION_TTL", "1h")
		serveSweep(t, true)
	})
	t.Run("no retention", func(t *testing.T) {
		t.Setenv("ARCHMAX_SESSION_TTL", "")
		serveSweep(t, false)
	})
}

func serveSweep(t *testing.T, retention bool) {
	srv, base, stop := serveOn(t, time.Now().Add(time.Hour))
	if status, body := post(t, base, "/v1/workflows/courier/sessions/old/turns", `{"message":"track parcel 7"}`); status != 200 {
		t.Fatalf("wait: %d %v", status, body)
	}
	if status, body := post(t, base, "/v1/workflows/desk/sessions/new/turns", `{"message":"file it"}`); status != 200 {
		t.Fatalf("park: %d %v", status, body)
	}
	ctx := context.Background()
	log := srv.engines.Log()
	for id, at := range map[string]int64{"old": time.Now().Add(-time.Minute).Unix(), "new": time.Now().Add(time.Hour).Unix()} {
		h, err := log.Acquire(ctx, id, "test", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		nh := *h
		nh.ExpiresAt, nh.Lease = at, nil
		if _, err := log.Commit(ctx, id, "test", &store.Commit{ExpectedVersion: h.Version, Head: nh}); err != nil {
			t.Fatal(err)
		}
		if err := log.Release(ctx, id, "test"); err != nil {
			t.Fatal(err)
		}
	}
	srv.sweep(ctx)
	if _, err := log.Get(ctx, "old"); retention && !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the expired session after the sweep: %v", err)
	} else if !retention && err != nil {
		t.Errorf("with retention off the sweep deleted a session that carried an expiry: %v", err)
	}
	if _, err := log.Get(ctx, "new"); err != nil {
		t.Errorf("the session not yet expired: %v", err)
	}
	if err := stop(); err != nil {
		t.Errorf("Serve: %v", err)
	}
}
