package httpapi

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/store"
	"github.com/archmax-ai/archmax/functions/handlers/access"
)

// IdempotencyTTL is how long the answer to an Idempotency-Key is kept: 24 hours.
const IdempotencyTTL = 24 * time.Hour

// ClaimTTL is how long a claimed key waits for its first request's answer before a repeat
// may run it again (the claim of a process that died): one minute, over the ~29 s an HTTP
// request can run.
const ClaimTTL = time.Minute

// MaxIdempotencyKey is the longest Idempotency-Key accepted, in bytes of printable ASCII.
const MaxIdempotencyKey = 255

// releasedTTL records a released key as already expired, so the next claim — an atomic
// RememberIdempotent — takes it.
const releasedTTL = -time.Second

// Record states of an Idempotency-Key.
const (
	idemPending  = "pending"  // claimed; the first request is running and has written nothing yet
	idemAccepted = "accepted" // the first request has written its turn (SessionID, TurnID); no answer yet
	idemDone     = "done"     // the first request's answer is recorded
)

// idemRecord is what the store keeps under an Idempotency-Key.
type idemRecord struct {
	State       string `json:"state"`       // "pending" (claimed, running) | "done" (answer recorded)
	Fingerprint string `json:"fingerprint"` // SHA-256 of method, path and body
	Status      int    `json:"status,omitempty"`
	Body        string `json:"body,omitempty"`
	SessionID   string `json:"sessionId,omitempty"` // accepted: the turn the request opened
	TurnID      string `json:"turnId,omitempty"`
}

// idempotent serves a mutating request that carries an Idempotency-Key (DESIGN.md §1: a
// repeat with the same key returns the first answer). The key is scoped to its caller (the
// same key from another principal is another key: it neither replays nor blocks this
// caller's answer), the method and the path, and claimed atomically in the store before the
// work runs:
//
//   - first use: the request runs and its answer is recorded for IdempotencyTTL and replayed
//     to every repeat with header Idempotent-Replayed: true — failures included, because a
//     failed turn may have committed steps, and running it again would apply them twice
//     (read the session, or send a new key). Only a busy session (409
//     SessionNotResumableError, nothing written) releases the key for the retry;
//   - a repeat while the first still runs: 409 IdempotencyKeyInUseError (retry later); a
//     claim whose process died before writing anything expires after ClaimTTL, and once
//     the first commit is made the claim is an accepted record naming the session and turn,
//     which a repeat serves from the session (replayAccepted);
//   - the request opens its turn under an id derived from the key (session.WithTurnID),
//     and a start with no session path its session under one too (session.SessionIDFor): a
//     repeat that finds no record — the claim lapsed after a crash, or no record could be
//     written — names the same session and turn, which the engine recognises under the
//     lease instead of opening a second one;
//   - the key with another body: 422 IdempotencyKeyReusedError; a key over
//     MaxIdempotencyKey bytes or not printable ASCII: 400 InvalidRequestError;
//   - the record is tied to the session it answers for (store.IdempotencyTier: the session
//     the request opened a turn on, the one its answer names, else the one its path names),
//     so deleting the session removes it (RD22-14); a recorded answer whose session (the one
//     its body names, else its path's) no longer exists — a delete that raced the record — is
//     discarded and the request runs anew.
//
// pathSession is the session the request's path names ("" for a start without one).
func (h *Handler) idempotent(ctx context.Context, req events.APIGatewayV2HTTPRequest, key, pathSession string, caller access.Caller, serve func(context.Context) (any, error)) events.APIGatewayV2HTTPResponse {
	if len(key) > MaxIdempotencyKey || strings.IndexFunc(key, func(r rune) bool { return r < 0x20 || r > 0x7e }) >= 0 {
		return h.failure(ctx, req, invalidRequest("Idempotency-Key must be 1 to %d printable ASCII characters.", MaxIdempotencyKey))
	}
	log := h.engines.Log()
	storeKey, fp := idemKey(req, key, caller)
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
		case r.State == idemDone && h.sessionGone(ctx, cmp.Or(answerSession(r.Body), pathSession)):
			// the answer is of a session deleted since: never replayed, the request runs anew
			if err := log.PutIdempotent(keep, storeKey, claim, ClaimTTL); err != nil {
				return h.failure(ctx, req, fmt.Errorf("claim Idempotency-Key: %w", err))
			}
		case r.State == idemDone:
			resp := respond(r.Status, []byte(r.Body))
			if r.Status == http.StatusAccepted {
				var sum session.OutcomeSummary
				if json.Unmarshal([]byte(r.Body), &sum) == nil {
					resp.Headers["Location"] = sessionLocation(sum.SessionID)
				}
			}
			if r.Status >= http.StatusInternalServerError { // a failure names its session (SS21-11)
				var eb ErrorBody
				if json.Unmarshal([]byte(r.Body), &eb) == nil {
					if id, _ := eb.Error.Details["sessionId"].(string); id != "" {
						resp.Headers["Location"] = sessionLocation(id)
					}
				}
			}
			resp.Headers["Idempotent-Replayed"] = "true"
			return resp
		case r.State == idemAccepted:
			// the first request wrote its turn, and its answer was never recorded (its
			// process died, or the record's write failed): the session answers for it
			return h.replayAccepted(withRequest(ctx, storeKey), req, storeKey, r, serve)
		default:
			return h.failure(ctx, req, &requestError{code: CodeIdempotencyKeyInUse,
				message: fmt.Sprintf("A request with Idempotency-Key %q is still running; retry it shortly for its answer.", key)})
		}
	}
	// once the call has written anything, a crash must not let a repeat run it again: the
	// claim becomes an accepted record naming the session and turn, kept as long as an answer
	opened, tied := false, ""
	tie := func(sessionID string) {
		if sessionID == "" || sessionID == tied {
			return
		}
		tied = sessionID
		if tier, ok := log.(store.IdempotencyTier); ok {
			if err := tier.TieIdempotent(keep, sessionID, storeKey, IdempotencyTTL); err != nil {
				h.log.WarnContext(ctx, "Idempotency-Key record not tied to its session; it outlives a delete until it expires", "key", key, "error", err.Error())
			}
		}
	}
	accepted := func(sessionID, turnID string) {
		opened = true
		tie(sessionID)
		b, _ := json.Marshal(idemRecord{State: idemAccepted, Fingerprint: fp, SessionID: sessionID, TurnID: turnID})
		if err := log.PutIdempotent(keep, storeKey, b, IdempotencyTTL); err != nil {
			h.log.WarnContext(ctx, "Idempotency-Key acceptance not recorded", "key", key, "error", err.Error())
		}
	}
	resp := h.answer(session.WithTurnOpened(withRequest(ctx, storeKey), accepted), req, serve)
	sid := cmp.Or(answerSession(resp.Body), tied, pathSession)
	rec, ttl := idemRecord{State: idemDone, Fingerprint: fp, Status: resp.StatusCode, Body: resp.Body}, IdempotencyTTL
	if busy(resp) && !opened { // a busy session that wrote nothing frees the key; one that wrote keeps it
		rec, ttl = idemRecord{State: idemPending, Fingerprint: fp}, releasedTTL
	} else {
		tie(sid)
	}
	b, _ := json.Marshal(rec)
	if err := log.PutIdempotent(keep, storeKey, b, ttl); err != nil {
		h.log.WarnContext(ctx, "Idempotency-Key answer not recorded; a repeat waits out the claim", "key", key, "error", err.Error())
	}
	return resp
}

// replayAccepted answers a repeat of a request whose turn is recorded (accepted) but whose
// answer is not: the request is served again under its own turn id, which the engine
// recognises — it carries the turn on when it is interrupted, or answers the outcome it
// settled with, never opening a second turn — and a settled answer is recorded as the
// key's answer. A session whose current turn is no longer the request's answers 409
// TurnSupersededError; one whose writer is still at work (the first request, its
// continuation) answers 202 with the session and turn, as the request itself would have.
// A record whose turn id is not the request's own (written before turn ids were derived
// from the key) is answered 202 from the record alone: serving it again could not be
// recognised.
func (h *Handler) replayAccepted(ctx context.Context, req events.APIGatewayV2HTTPRequest, storeKey string, r idemRecord, serve func(context.Context) (any, error)) events.APIGatewayV2HTTPResponse {
	running := func() events.APIGatewayV2HTTPResponse {
		sum := session.OutcomeSummary{SessionID: r.SessionID, TurnID: r.TurnID, Kind: session.KindRunning, Status: session.StatusRunning}
		b, _ := json.Marshal(sum)
		resp := respond(http.StatusAccepted, b)
		resp.Headers["Location"] = sessionLocation(r.SessionID)
		resp.Headers["Idempotent-Replayed"] = "true"
		return resp
	}
	if r.TurnID != session.TurnIDFor(storeKey) {
		return running()
	}
	applied, err := h.engines.Sessions().TurnApplied(ctx, r.SessionID, r.TurnID)
	if err != nil {
		return h.failure(ctx, req, fmt.Errorf("read session %s: %w", r.SessionID, err))
	}
	if !applied { // moved on past what the session remembers, or deleted: never opened again
		return h.failure(ctx, req, &session.TurnSupersededError{SessionID: r.SessionID, TurnID: r.TurnID})
	}
	resp := h.answer(ctx, req, serve)
	if busy(resp) {
		return running()
	}
	if resp.StatusCode == http.StatusOK {
		b, _ := json.Marshal(idemRecord{State: idemDone, Fingerprint: r.Fingerprint, Status: resp.StatusCode, Body: resp.Body})
		if err := h.engines.Log().PutIdempotent(context.WithoutCancel(ctx), storeKey, b, IdempotencyTTL); err != nil {
			h.log.WarnContext(ctx, "Idempotency-Key answer not recorded; the next repeat reads the session again", "error", err.Error())
		}
	}
	resp.Headers["Idempotent-Replayed"] = "true"
	return resp
}

// sessionGone reports whether the session a recorded answer is of no longer exists (false
// for "", and when the store cannot tell).
func (h *Handler) sessionGone(ctx context.Context, sessionID string) bool {
	if sessionID == "" {
		return false
	}
	_, err := h.engines.Log().Get(ctx, sessionID)
	return errors.Is(err, store.ErrNotFound)
}

// answerSession is the session an answer's body names: an outcome's or a summary's
// sessionId, or an error's details.sessionId; "" for none.
func answerSession(body string) string {
	var b struct {
		SessionID string `json:"sessionId"`
		Error     struct {
			Details struct {
				SessionID string `json:"sessionId"`
			} `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(body), &b) != nil {
		return ""
	}
	return cmp.Or(b.SessionID, b.Error.Details.SessionID)
}

type requestKey struct{}

// withRequest marks ctx as serving the request whose Idempotency-Key is stored under
// storeKey: the request's turn id (session.TurnIDFor) and, for a start whose session id
// would be minted, its session id (session.SessionIDFor) are derived from it, so a repeat —
// after a crash, a lapsed claim or a lost record — names the same session and turn.
func withRequest(ctx context.Context, storeKey string) context.Context {
	return context.WithValue(ctx, requestKey{}, storeKey)
}

// requestOf is the store key withRequest set ("" for a request without an Idempotency-Key).
func requestOf(ctx context.Context) string {
	k, _ := ctx.Value(requestKey{}).(string)
	return k
}

// requestTurn is the turn id of ctx's request ("" without an Idempotency-Key).
func requestTurn(ctx context.Context) string {
	if k := requestOf(ctx); k != "" {
		return session.TurnIDFor(k)
	}
	return ""
}

// idemKey is the store key of an Idempotency-Key (scoped to the caller, method and path,
// hashed so any principal and path fit the store's key limits) and the fingerprint of the
// request (SHA-256 of method, path and body).
func idemKey(req events.APIGatewayV2HTTPRequest, key string, caller access.Caller) (storeKey, fingerprint string) {
	method := req.RequestContext.HTTP.Method
	scope := sha256.Sum256([]byte(caller.Principal.Key() + "\n" + method + "\n" + req.RawPath + "\n" + key))
	sum := sha256.Sum256([]byte(method + "\n" + req.RawPath + "\n" + req.Body))
	return "http " + hex.EncodeToString(scope[:]), hex.EncodeToString(sum[:])
}

// deliveryID is the engine's delivery id of an HTTP delivery's Idempotency-Key ("" for
// none): scoped to the caller, so another caller's key never refuses this one's delivery
// as a duplicate.
func deliveryID(caller access.Caller, key string) string {
	if key == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(caller.Principal.Key() + "\n" + key))
	return "http:" + hex.EncodeToString(sum[:16])
}

// busy reports a 409 SessionNotResumableError: the session was held by another call, so
// this request wrote nothing and its retry may run.
func busy(resp events.APIGatewayV2HTTPResponse) bool {
	if resp.StatusCode != http.StatusConflict {
		return false
	}
	var body ErrorBody
	return json.Unmarshal([]byte(resp.Body), &body) == nil && body.Error.Code == "SessionNotResumableError"
}
