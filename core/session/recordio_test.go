package session

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"sync"
	"testing"

	"github.com/archmax-ai/archmax/core/store"
)

// mapBlobs is an in-memory store.Blobs counting uploads.
type mapBlobs struct {
	mu   sync.Mutex
	m    map[string][]byte
	puts int
}

func (b *mapBlobs) Put(_ context.Context, sid string, data []byte) (string, error) {
	sum := sha256.Sum256(data)
	ref := hex.EncodeToString(sum[:])
	b.mu.Lock()
	defer b.mu.Unlock()
	b.puts++
	b.m[sid+"/"+ref] = append([]byte(nil), data...)
	return ref, nil
}
func (b *mapBlobs) Get(_ context.Context, sid, ref string) ([]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	v, ok := b.m[sid+"/"+ref]
	if !ok {
		return nil, store.ErrNotFound
	}
	return v, nil
}
func (b *mapBlobs) DeleteSession(context.Context, string) error { return nil }

// DESIGN §3: a big variable lives in a blob; the head stays small, the blob is uploaded
// once however many steps follow, and the value reads back in a later call and in summaries.
func TestBigVariablesLiveInBlobs(t *testing.T) {
	h := newHarness(t, strings.Replace(twoAgents, "    requires: [topic]\n", "", 1), nil)
	blobs := &mapBlobs{m: map[string][]byte{}}
	h.cfg.Blobs = blobs
	big := strings.Repeat("report line\n", 4000) // ~48 KB
	look := calls("", call{"archmax_get_variables", map[string]any{"name": "report", "path": "x"}})
	h.script(calls("", call{"archmax_set_variables", map[string]any{"variables": map[string]any{"report": big}}}), look, look, says("stored"))
	h.send("s1", "store it", nil)
	if blobs.puts != 1 {
		t.Errorf("blob uploads = %d, want 1 across the steps", blobs.puts)
	}
	head, err := h.log.Get(context.Background(), "s1")
	if err != nil || len(head.Body) > 4096 {
		t.Fatalf("head body = %d bytes, %v", len(head.Body), err)
	}
	h.script(says("again"))
	out := h.send("s1", "again", nil)
	if out.Variables["report"].Value != big {
		t.Error("the blob-held variable did not read back")
	}
	sum, err := NewSessions(h.log, h.files, blobs).Get(context.Background(), "s1")
	if err != nil || sum.Variables["report"].Value != big {
		t.Errorf("summary variable: %v", err)
	}
}
