package store

import (
	"context"
	"time"
)

// IdempotencyTier is a Log that files an idempotency record under the session it answers for
// (RD22-14), so that deleting the session — Log.Delete, also after its retention expired —
// removes the record with it: a request repeated after the delete runs anew instead of
// replaying the deleted session's answer. Implemented by the memory, fs and dynamodb stores.
type IdempotencyTier interface {
	// TieIdempotent files the record of key (RememberIdempotent's, PutIdempotent's) under
	// sessionID for ttl (as long as the record is kept): Delete of the session removes the
	// record. Tying a key again is harmless; a key may be tied to several sessions. A store
	// may skip a session that has no committed head (nothing would delete it).
	TieIdempotent(ctx context.Context, sessionID, key string, ttl time.Duration) error
}
