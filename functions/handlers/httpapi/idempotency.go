package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// IdempotencyTTL is how long the answer to an Idempotency-Key is kept: 24 hours.
const IdempotencyTTL = 24 * time.Hour

// ClaimTTL is how long a claimed key waits for its first request's answer: Lambda's
// 15-minute limit, so a claim left by a process that died expires and the retry runs.
const ClaimTTL = 15 * time.Minute

// Record states of an Idempotency-Key.
const (
	idemPending  = "pending"  // claimed; the first request is running
	idemDone     = "done"     // the first request's final answer is recorded
	idemReleased = "released" // the first request failed transiently; the next one runs
)

// idemRecord is what the store keeps under an Idempotency-Key.
type idemRecord struct {
	State       string `json:"state"`
	Fingerprint string `json:"fingerprint"` // SHA-256 of method, path and body
	Status      int    `json:"status,omitempty"`
	Body        string `json:"body,omitempty"`
}

// idempotent serves a mutating request that carries an Idempotency-Key (DESIGN.md §1: a
// repeat with the same key returns the first answer). The key is scoped to the method and
// path and claimed in the store before the work runs:
//
//   - first use: the request runs; a final answer (2xx, 4xx other than a busy session) is
//     recorded for IdempotencyTTL and replayed to every repeat with header
//     Idempotent-Replayed: true; a transient one (5xx, 504, a busy session) releases the key
//     so the retry runs;
//   - a repeat while the first still runs: 409 IdempotencyKeyInUseError (retry later); a
//     claim whose process died expires after ClaimTTL;
//   - the key with another body: 422 IdempotencyKeyReusedError.
func (h *Handler) idempotent(ctx context.Context, req events.APIGatewayV2HTTPRequest, key string) events.APIGatewayV2HTTPResponse {
	log := h.engines.Log()
	storeKey, fp := idemKey(req, key)
	keep := context.WithoutCancel(ctx) // the record must land even if the caller left
	claim, _ := json.Marshal(idemRecord{State: idemPending, Fingerprint: fp})
	old, found, err := log.RememberIdempotent(keep, storeKey, claim, ClaimTTL)
	if err != nil {
		return h.failure(ctx, req, fmt.Errorf("claim Idempotency-Key: %w", err))
	}
	if found {
		var r idemRecord
		if err := json.Unmarshal(old, &r); err != nil {
			return h.failure(ctx, req, fmt.Errorf("idempotency record of %q: %w", key, err))
		}
		switch {
		case r.Fingerprint != fp:
			return h.failure(ctx, req, &requestError{code: CodeIdempotencyKeyReused,
				message: fmt.Sprintf("Idempotency-Key %q was used with a different request; use a new key for a new request.", key)})
		case r.State == idemDone:
			resp := respond(r.Status, []byte(r.Body))
			resp.Headers["Idempotent-Replayed"] = "true"
			return resp
		case r.State == idemPending:
			return h.failure(ctx, req, &requestError{code: CodeIdempotencyKeyInUse,
				message: fmt.Sprintf("A request with Idempotency-Key %q is still running; retry it shortly for its answer.", key)})
		}
		// released: this request runs in place of the failed one
		if err := log.PutIdempotent(keep, storeKey, claim, ClaimTTL); err != nil {
			return h.failure(ctx, req, fmt.Errorf("claim Idempotency-Key: %w", err))
		}
	}
	resp := h.answer(ctx, req)
	rec, ttl := idemRecord{State: idemDone, Fingerprint: fp, Status: resp.StatusCode, Body: resp.Body}, IdempotencyTTL
	if transient(resp) {
		rec, ttl = idemRecord{State: idemReleased, Fingerprint: fp}, ClaimTTL
	}
	b, _ := json.Marshal(rec)
	if err := log.PutIdempotent(keep, storeKey, b, ttl); err != nil {
		h.log.WarnContext(ctx, "Idempotency-Key answer not recorded; a repeat will wait out the claim", "key", key, "error", err.Error())
	}
	return resp
}

// idemKey is the store key of an Idempotency-Key (scoped to method and path) and the
// fingerprint of the request (SHA-256 of method, path and body).
func idemKey(req events.APIGatewayV2HTTPRequest, key string) (storeKey, fingerprint string) {
	method := req.RequestContext.HTTP.Method
	sum := sha256.Sum256([]byte(method + "\n" + req.RawPath + "\n" + req.Body))
	return "http " + method + " " + req.RawPath + " " + key, hex.EncodeToString(sum[:])
}

// transient reports an answer a retry may change: a server failure or timeout, or a
// session busy with another call.
func transient(resp events.APIGatewayV2HTTPResponse) bool {
	if resp.StatusCode >= http.StatusInternalServerError {
		return true
	}
	if resp.StatusCode != http.StatusConflict {
		return false
	}
	var body ErrorBody
	return json.Unmarshal([]byte(resp.Body), &body) == nil && body.Error.Code == "SessionNotResumableError"
}
