package s3store

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/archmax-ai/archmax/core/store"
)

func TestBlobsRoundTripLargeValue(t *testing.T) {
	client, _ := newFake(t)
	ctx := t.Context()
	b := NewBlobs(client, testBucket, "sessions/")
	data := make([]byte, 1_500_000)
	rand.Read(data)
	sum := sha256.Sum256(data)

	ref, err := b.Put(ctx, "s1", data)
	if err != nil || ref != hex.EncodeToString(sum[:]) {
		t.Fatalf("Put = %q, %v; want the hex SHA-256", ref, err)
	}
	got, err := b.Get(ctx, "s1", ref)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Get = %d bytes, %v; want the %d bytes put", len(got), err, len(data))
	}
	// DESIGN.md §3: the object key is <sessionPrefix><sessionId>/_blobs/<sha256>.
	raw, err := NewFiles(client, testBucket, "").Read(ctx, "sessions/s1/_blobs/"+ref)
	if err != nil || !bytes.Equal(raw, data) {
		t.Fatalf("object sessions/s1/_blobs/<ref> = %d bytes, %v", len(raw), err)
	}
	if _, err := b.Get(ctx, "s2", ref); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get from another session: err = %v, want ErrNotFound", err)
	}
}

func TestBlobsPutTwiceUploadsOnce(t *testing.T) {
	client, rec := newFake(t)
	ctx := t.Context()
	b := NewBlobs(client, testBucket, "sessions")
	data := bytes.Repeat([]byte("tool result "), 10_000)
	first, err := b.Put(ctx, "s1", data)
	if err != nil {
		t.Fatal(err)
	}
	second, err := b.Put(ctx, "s1", data)
	if err != nil || second != first {
		t.Fatalf("second Put = %q, %v; want %q", second, err, first)
	}
	calls := rec.take()
	if puts := count(calls, "put", 0); puts != 1 {
		t.Fatalf("PutObject calls = %d, want 1 (%+v)", puts, calls)
	}
	if heads := count(calls, "head", http.StatusOK); heads != 1 {
		t.Fatalf("successful HeadObject calls = %d, want 1 (%+v)", heads, calls)
	}
}

func TestBlobsDeleteSessionRemovesOnlyThatSession(t *testing.T) {
	client, rec := newFake(t)
	ctx := t.Context()
	b := NewBlobs(client, testBucket, "sessions/")
	files := NewFiles(client, testBucket, "sessions/")
	var refs []string
	for i := range 1001 {
		ref, err := b.Put(ctx, "s1", fmt.Appendf(nil, "blob %d", i))
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, ref)
	}
	otherRef, err := b.Put(ctx, "s10", []byte("blob 0"))
	if err != nil {
		t.Fatal(err)
	}
	if err := files.Write(ctx, "s1/scratchpad/notes.md", []byte("kept")); err != nil {
		t.Fatal(err)
	}
	rec.take()

	if err := b.DeleteSession(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if batches := count(rec.take(), "deleteObjects", http.StatusOK); batches != 2 {
		t.Fatalf("DeleteObjects calls = %d, want 2 (≤1000 keys each)", batches)
	}
	for _, ref := range []string{refs[0], refs[1000]} {
		if _, err := b.Get(ctx, "s1", ref); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Get after DeleteSession: err = %v, want ErrNotFound", err)
		}
	}
	if got, err := b.Get(ctx, "s10", otherRef); err != nil || string(got) != "blob 0" {
		t.Fatalf("another session's blob = %q, %v", got, err)
	}
	if got, err := files.Read(ctx, "s1/scratchpad/notes.md"); err != nil || string(got) != "kept" {
		t.Fatalf("the session's files = %q, %v; DeleteSession removes blobs only", got, err)
	}
	if err := b.DeleteSession(ctx, "never-existed"); err != nil {
		t.Fatalf("DeleteSession of a session without blobs: %v", err)
	}
}

func TestBlobsRefuseInvalidIDsAndRefs(t *testing.T) {
	client, rec := newFake(t)
	ctx := t.Context()
	b := NewBlobs(client, testBucket, "sessions/")
	valid := hex.EncodeToString(make([]byte, sha256.Size))
	for _, id := range []string{"", "a/b", "..", ".", "nul\x00"} {
		if _, err := b.Put(ctx, id, []byte("x")); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("Put(%q): err = %v, want ErrInvalidKey", id, err)
		}
		if _, err := b.Get(ctx, id, valid); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("Get(%q): err = %v, want ErrInvalidKey", id, err)
		}
		if err := b.DeleteSession(ctx, id); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("DeleteSession(%q): err = %v, want ErrInvalidKey", id, err)
		}
	}
	for _, ref := range []string{"", "abc", valid[:63], valid + "0", "../../x" + valid[7:], "A" + valid[1:]} {
		if _, err := b.Get(ctx, "s1", ref); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("Get(s1, %q): err = %v, want ErrInvalidKey", ref, err)
		}
	}
	if calls := rec.take(); len(calls) != 0 {
		t.Fatalf("refused calls reached S3: %+v", calls)
	}
}

func BenchmarkBlobsPut64KB(b *testing.B) {
	client, _ := newFake(b)
	blobs := NewBlobs(client, testBucket, "sessions/")
	data := make([]byte, 64<<10)
	i := 0
	for b.Loop() {
		i++
		copy(data, fmt.Sprint(i)) // a new blob each time: HEAD miss + PUT
		if _, err := blobs.Put(b.Context(), "s1", data); err != nil {
			b.Fatal(err)
		}
	}
}
