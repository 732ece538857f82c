package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
)

// OffloadDir is the session folder oversized tool results are offloaded to (02 §9.1).
const OffloadDir = "large_tool_results"

// OffloadThreshold is the size, in UTF-16 code units (JavaScript string length), above
// which a tool result is offloaded rather than handed to the model whole: BR-41's cap.
const OffloadThreshold = resultCap

// Offload writes an oversized tool result's text to "large_tool_results/<name>" of the
// session, <name> being callID with every byte but ASCII letters, digits, '-' and '_'
// replaced by '_' ("ptc:3" → "ptc_3"; an id over 128 bytes is shortened with a hash of
// it). It returns the message the model reads in its place: the absolute path, the text's
// size in characters (UTF-16 units) and that read_file pages through it with offset and
// limit. A result offloaded again under the same call id replaces the file. Errors: an
// empty callID, or the store's error wrapped.
func (w *Workspace) Offload(ctx context.Context, callID string, text string) (string, error) {
	if callID == "" {
		return "", errors.New("workspace: offload: empty call id")
	}
	p := OffloadDir + "/" + offloadName(callID)
	if err := w.session.Write(ctx, w.sessionID+"/"+p, []byte(text)); err != nil {
		return "", fmt.Errorf("workspace: offload %q: %w", p, err)
	}
	return offloadPointer(p, jsLen(text)), nil
}

// offloadName is a safe file name for a call id: ASCII letters, digits, '-' and '_' are
// kept, every other byte becomes '_' (so "ptc:3" → "ptc_3"), and an id whose name would
// exceed 128 bytes keeps its first 111 followed by '-' and 16 hex digits of its SHA-256.
func offloadName(callID string) string {
	b := []byte(callID)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	const limit, keep = 128, 111
	if len(b) > limit {
		sum := sha256.Sum256([]byte(callID))
		b = append(b[:keep:keep], '-')
		b = hex.AppendEncode(b, sum[:8])
	}
	return string(b)
}
