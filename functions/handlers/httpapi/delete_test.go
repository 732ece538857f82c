package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/archmax-ai/archmax/core/store"
)

// del is DELETE /v1/sessions/{id} by its route key, as API Gateway delivers it.
func del(id string) events.APIGatewayV2HTTPRequest {
	req := request(RouteDeleteSession, http.MethodDelete, "/v1/sessions/"+id, "")
	req.PathParameters = map[string]string{"sessionId": id}
	return req
}

// deleteAs sends a DELETE signed as userARN and returns the status, failing t unless a 204
// has an empty body and every other answer is the contract's error JSON.
func (f *authzFixture) deleteAs(userARN string, req events.APIGatewayV2HTTPRequest) (int, map[string]any) {
	f.t.Helper()
	req = signedAs(req, userARN)
	resp, err := f.h.Handle(context.Background(), req)
	if err != nil {
		f.t.Fatalf("Handle returned a Go error: %v", err)
	}
	if resp.StatusCode == http.StatusNoContent {
		if resp.Body != "" || resp.Headers["Cache-Control"] != "no-store" {
			f.t.Errorf("204 with body %q, headers %v", resp.Body, resp.Headers)
		}
		return resp.StatusCode, nil
	}
	return call(f.t, f.h, req)
}

// RD22-5: the owner and an admin delete a session (204, then 204 again); a caller who may
// not see it gets the very answer a missing session gets (204, nothing deleted); a decider,
// who sees a parked session, may not delete it (403); a running turn refuses it (409).
func TestDeleteRouteAuthorization(t *testing.T) {
	f := newAuthz(t, authzPolicy, nil)
	ctx := context.Background()
	f.parked("s-dana")
	f.waiting("w-dana")
	f.parked("r-dana")
	v := f.version("s-dana")

	if status, _ := f.deleteAs(eveARN, del("s-dana")); status != http.StatusNoContent {
		t.Errorf("eve deletes dana's session: %d, want the missing session's 204", status)
	}
	if status, _ := f.deleteAs(eveARN, del("s-missing")); status != http.StatusNoContent {
		t.Errorf("eve deletes a missing session: %d", status)
	}
	if f.version("s-dana") != v {
		t.Error("eve's delete wrote to dana's session")
	}
	if status, body := f.deleteAs(approverARN, del("s-dana")); status != http.StatusForbidden || errCode(body) != "AccessDeniedError" || details(body)["action"] != "delete" {
		t.Errorf("the decider deletes: %d %v", status, body)
	}
	if status, _ := f.deleteAs(approverARN, del("w-dana")); status != http.StatusNoContent {
		t.Errorf("the decider deletes a session it may not see: %d", status)
	}
	if _, err := f.log.Get(ctx, "w-dana"); err != nil {
		t.Errorf("the decider's delete of a session it may not see deleted it: %v", err)
	}

	// a turn runs: 409, and the message says to retry once it settles
	if _, err := f.log.Acquire(ctx, "r-dana", "a-turn", time.Minute); err != nil {
		t.Fatal(err)
	}
	if status, body := f.deleteAs(danaARN, del("r-dana")); status != http.StatusConflict || errCode(body) != "SessionNotResumableError" || details(body)["leaseExpiresAt"] == nil {
		t.Errorf("delete during a turn: %d %v", status, body)
	}
	if _, err := f.log.Get(ctx, "r-dana"); err != nil {
		t.Errorf("the refused delete deleted: %v", err)
	}

	for _, c := range []struct{ who, id string }{{danaARN, "s-dana"}, {adminARN, "w-dana"}} {
		for round := range 2 {
			if status, body := f.deleteAs(c.who, del(c.id)); status != http.StatusNoContent {
				t.Errorf("%s deletes %s (round %d): %d %v", c.who, c.id, round, status, body)
			}
		}
		if _, err := f.log.Get(ctx, c.id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s after its delete: %v", c.id, err)
		}
		if status, _ := f.as(c.who, get("/v1/sessions/"+c.id, nil)); status != http.StatusNotFound {
			t.Errorf("GET %s after its delete: %d", c.id, status)
		}
	}
	// a child is deleted with its root
	if status, _ := f.deleteAs(danaARN, del("r-dana~1")); status != http.StatusNoContent {
		t.Errorf("delete of a child that never ran: %d", status)
	}
}

// RD22-5: the route by raw path ($default), the bad id, the other methods on a session's
// path (405 naming GET and DELETE), and the read-only sessions function, which never
// deletes (405).
func TestDeleteRouting(t *testing.T) {
	f := newAuthz(t, authzPolicy, nil)
	f.parked("p-dana")
	req := request("$default", http.MethodDelete, "/v1/sessions/p-dana", "")
	if status, _ := f.deleteAs(danaARN, req); status != http.StatusNoContent {
		t.Errorf("DELETE by raw path: %d", status)
	}
	if _, err := f.log.Get(context.Background(), "p-dana"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("after DELETE by raw path: %v", err)
	}
	if status, body := f.deleteAs(danaARN, request("$default", http.MethodDelete, "/v1/sessions/_specs", "")); status != http.StatusBadRequest {
		t.Errorf("DELETE of a reserved id: %d %v", status, body)
	}
	resp, _ := f.h.Handle(context.Background(), signedAs(request("$default", http.MethodPut, "/v1/sessions/p-dana", ""), danaARN))
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Headers["Allow"] != "GET, DELETE" {
		t.Errorf("PUT on a session: %d Allow %q", resp.StatusCode, resp.Headers["Allow"])
	}
	f.parked("q-dana")
	resp, _ = f.h.HandleRead(context.Background(), signedAs(del("q-dana"), danaARN))
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("the sessions function's DELETE: %d %s", resp.StatusCode, resp.Body)
	}
	if _, err := f.log.Get(context.Background(), "q-dana"); err != nil {
		t.Errorf("the read-only function deleted: %v", err)
	}
}

// slowDelete is a log whose Delete waits for its context to end: a session too large to
// delete within the request's time.
type slowDelete struct{ store.Log }

func (s slowDelete) Delete(ctx context.Context, id string) (bool, error) {
	<-ctx.Done()
	return false, ctx.Err()
}

// RD22-3: a DELETE whose time runs out part-way answers 409 SessionDeletingError (repeat it
// to finish), not an unexpected failure; the session is marked deleting and the repeat, with
// time, deletes it.
func TestDeleteCutByTheRequestsTime(t *testing.T) {
	var slow bool
	f := newAuthz(t, authzPolicy, func(l store.Log) store.Log { return &toggleSlow{Log: l, slow: &slow} })
	f.parked("big")
	slow = true
	ctx, cancel := context.WithTimeout(context.Background(), commitMargin+200*time.Millisecond)
	defer cancel()
	resp, err := f.h.Handle(ctx, signedAs(del("big"), danaARN))
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	_ = json.Unmarshal([]byte(resp.Body), &body)
	if resp.StatusCode != http.StatusConflict || errCode(body) != "SessionDeletingError" {
		t.Fatalf("a DELETE cut by its time: %d %s", resp.StatusCode, resp.Body)
	}
	if h, err := f.log.Get(context.Background(), "big"); err != nil || h.Status != "deleting" {
		t.Fatalf("after the cut: %+v %v, want the session marked deleting", h, err)
	}
	slow = false
	if status, body := f.deleteAs(danaARN, del("big")); status != http.StatusNoContent {
		t.Fatalf("the repeat: %d %v", status, body)
	}
	if _, err := f.log.Get(context.Background(), "big"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("after the repeat: %v", err)
	}
}

// toggleSlow is slowDelete while *slow is set.
type toggleSlow struct {
	store.Log
	slow *bool
}

func (s *toggleSlow) Delete(ctx context.Context, id string) (bool, error) {
	if *s.slow {
		return slowDelete{s.Log}.Delete(ctx, id)
	}
	return s.Log.Delete(ctx, id)
}
