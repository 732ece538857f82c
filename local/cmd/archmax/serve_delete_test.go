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
