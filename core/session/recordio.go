package session

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/store"
)

// blobVariableBytes is the size (bytes of JSON) over which a variable's value is kept as a
// content-addressed blob instead of inside the session record, so the head stays small and
// its bytes per step do not grow with big variables (DESIGN.md §3).
const blobVariableBytes = 16 << 10

// storedVariable is a variable as the record stores it: the value inline, or the ref of a
// blob holding the value's JSON.
type storedVariable struct {
	Value  json.RawMessage `json:"value,omitempty"`
	Blob   string          `json:"blob,omitempty"`
	Locked bool            `json:"locked"`
}

// storedRecord is the record as written to the head body; its Variables shadow the
// record's in-memory ones.
type storedRecord struct {
	record
	Variables map[string]storedVariable `json:"variables"`
}

// encodeRecord marshals rec for the head body; values over blobVariableBytes go to blobs
// (when the engine has a Blobs port). known holds refs already stored, to skip re-uploads.
func encodeRecord(ctx context.Context, rec *record, blobs store.Blobs, sessionID string, known map[string]bool) ([]byte, error) {
	sr := storedRecord{record: *rec, Variables: make(map[string]storedVariable, len(rec.Variables))}
	for name, v := range rec.Variables {
		raw, err := json.Marshal(v.Value)
		if err != nil {
			return nil, fmt.Errorf("variable %s: %w", name, err)
		}
		if blobs == nil || len(raw) <= blobVariableBytes {
			sr.Variables[name] = storedVariable{Value: raw, Locked: v.Locked}
			continue
		}
		sum := sha256.Sum256(raw)
		ref := hex.EncodeToString(sum[:])
		if !known[ref] {
			if ref, err = blobs.Put(ctx, sessionID, raw); err != nil {
				return nil, fmt.Errorf("store variable %s: %w", name, err)
			}
			known[ref] = true
		}
		sr.Variables[name] = storedVariable{Blob: ref, Locked: v.Locked}
	}
	return json.Marshal(sr)
}

// decodeRecord reads a head body back, fetching blob-held variable values; known collects
// the refs seen.
func decodeRecord(ctx context.Context, body []byte, blobs store.Blobs, sessionID string, known map[string]bool) (*record, error) {
	var sr storedRecord
	if err := json.Unmarshal(body, &sr); err != nil {
		return nil, err
	}
	rec := sr.record
	rec.Variables = make(map[string]spec.VariableEntry, len(sr.Variables))
	for name, sv := range sr.Variables {
		raw := []byte(sv.Value)
		if sv.Blob != "" {
			if blobs == nil {
				return nil, fmt.Errorf("variable %s is stored as a blob, but no blob store is configured", name)
			}
			b, err := blobs.Get(ctx, sessionID, sv.Blob)
			if err != nil {
				return nil, fmt.Errorf("variable %s: %w", name, err)
			}
			raw = b
			if known != nil {
				known[sv.Blob] = true
			}
		}
		var v any
		if len(raw) > 0 {
			if err := json.Unmarshal(raw, &v); err != nil {
				return nil, fmt.Errorf("variable %s: %w", name, err)
			}
		}
		rec.Variables[name] = spec.VariableEntry{Value: v, Locked: sv.Locked}
	}
	return &rec, nil
}
