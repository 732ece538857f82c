package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/archmax-ai/archmax/core/model"
)

func withKey(req events.APIGatewayV2HTTPRequest, key string) events.APIGatewayV2HTTPRequest {
	req.Headers["idempotency-key"] = key
	return req
}

// DESIGN §1: a repeat with the same Idempotency-Key returns the first answer and runs
// nothing; the key with another body is refused; a transient failure releases the key.
func TestIdempotencyKey(t *testing.T) {
	h, e := newFixture(t)
	ctx := context.Background()
	first, err := h.Handle(ctx, withKey(start("greeter", `{"message":"hi"}`), "k-1"))
	if err != nil || first.StatusCode != http.StatusOK {
		t.Fatalf("first: %+v %v", first, err)
	}
	calls := e.model.calls.Load()
	again, err := h.Handle(ctx, withKey(start("greeter", `{"message":"hi"}`), "k-1"))
	if err != nil || again.StatusCode != http.StatusOK || again.Body != first.Body || again.Headers["Idempotent-Replayed"] != "true" {
		t.Fatalf("repeat: %+v, want the first answer %s", again, first.Body)
	}
	if e.model.calls.Load() != calls {
		t.Errorf("the repeat ran the model")
	}
	if fresh, _ := h.Handle(ctx, withKey(start("greeter", `{"message":"hi"}`), "k-2")); fresh.Body == first.Body {
		t.Errorf("another key replayed the first answer")
	}
	status, body := call(t, h, withKey(start("greeter", `{"message":"something else"}`), "k-1"))
	if status != http.StatusUnprocessableEntity || errCode(body) != CodeIdempotencyKeyReused {
		t.Errorf("key reused with another body: %d %v", status, body)
	}

	// a request still running: the repeat is told to come back
	req := withKey(start("greeter", `{"message":"slow"}`), "k-3")
	storeKey, fp := idemKey(req, "k-3", testCaller(t, req))
	claim, _ := json.Marshal(idemRecord{State: idemPending, Fingerprint: fp})
	if _, _, err := e.log.RememberIdempotent(ctx, storeKey, claim, IdempotencyTTL); err != nil {
		t.Fatal(err)
	}
	if status, body := call(t, h, req); status != http.StatusConflict || errCode(body) != CodeIdempotencyKeyInUse {
		t.Errorf("in progress: %d %v", status, body)
	}

	// a failure is the answer too: the failed turn may have committed steps, so its repeat
	// replays the failure rather than running the turn twice
	e.model.err = &model.CallError{Code: "ThrottlingException", Status: 429, Retryable: true}
	failed := withKey(turn("greeter", "s-idem", `{"message":"hello"}`), "k-4")
	if status, body := call(t, h, failed); status != http.StatusBadGateway {
		t.Fatalf("throttled: %d %v", status, body)
	}
	e.model.err = nil
	if resp, _ := h.Handle(ctx, failed); resp.StatusCode != http.StatusBadGateway || resp.Headers["Idempotent-Replayed"] != "true" {
		t.Errorf("the repeat of a failed request: %+v", resp)
	}

	// a busy session wrote nothing: the key is released and the retry runs
	if _, err := e.log.Acquire(ctx, "s-busy", "another-writer", time.Minute); err != nil {
		t.Fatal(err)
	}
	held := withKey(turn("greeter", "s-busy", `{"message":"hello"}`), "k-5")
	if status, body := call(t, h, held); status != http.StatusConflict || errCode(body) != "SessionNotResumableError" {
		t.Fatalf("busy: %d %v", status, body)
	}
	if err := e.log.Release(ctx, "s-busy", "another-writer"); err != nil {
		t.Fatal(err)
	}
	if status, body := call(t, h, held); status != http.StatusOK || body["sessionId"] != "s-busy" {
		t.Errorf("retry after a busy session: %d %v", status, body)
	}

	long := withKey(start("greeter", `{"message":"hi"}`), strings.Repeat("k", MaxIdempotencyKey+1))
	if status, body := call(t, h, long); status != http.StatusBadRequest || errCode(body) != CodeInvalidRequest {
		t.Errorf("an oversized key: %d %v", status, body)
	}
}
