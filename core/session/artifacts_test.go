package session

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/artifacts"
	"github.com/archmax-ai/archmax/core/store"
	"github.com/archmax-ai/archmax/core/workspace"
)

const artifactsWorkflow = `states:
  a:
    triggers:
      manual:
    instructions: Answer.
`

// ArtifactSource reads the record, the transcript, the trail and the hash-checked spec
// snapshot; without the snapshot there is no spec, without a readable record no checkpoint.
func TestArtifactSource(t *testing.T) {
	h := newHarness(t, artifactsWorkflow, nil)
	h.script(says("Done."))
	h.send("s1", "hello", map[string]any{"n": 1})
	ctx := context.Background()
	sessions := NewSessions(h.log, h.files, nil)
	src, err := sessions.ArtifactSource(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if src.Spec == nil || src.SpecHash == "" || src.Spec.Hash() != src.SpecHash || !src.Checkpoint || len(src.Messages) != 2 ||
		len(src.Trail) != 1 || src.Usage == nil || src.Usage.InputTokens != 100 || !src.Variables["n"].Locked {
		t.Fatalf("source = %+v", src)
	}
	if len(artifacts.Render(src)) != len(artifacts.Names) {
		t.Errorf("not every artifact renders from a whole session")
	}

	// only what the named artifacts need is read
	if g, err := sessions.ArtifactSource(ctx, "s1", artifacts.GraphJSON); err != nil || g.Spec == nil || g.Messages != nil || g.Trail != nil {
		t.Errorf("source of graph.json = %+v, %v (want the snapshot alone)", g, err)
	}
	if tr, err := sessions.ArtifactSource(ctx, "s1", artifacts.Trail); err != nil || tr.Spec != nil || tr.Messages != nil || len(tr.Trail) != 1 {
		t.Errorf("source of trail.json = %+v, %v (want the trail alone)", tr, err)
	}
	snapshot := "_specs/" + src.SpecHash + ".json"
	must(t, h.files.Write(ctx, snapshot, []byte(`{"states":{"other":{"instructions":"x"}}}`)))
	if src, _ := sessions.ArtifactSource(ctx, "s1"); src.Spec != nil {
		t.Error("a snapshot that does not hash to specHash was used")
	}
	must(t, h.files.Delete(ctx, snapshot))
	if src, _ := sessions.ArtifactSource(ctx, "s1"); src.Spec != nil || !src.Checkpoint {
		t.Errorf("without a snapshot: spec %v, checkpoint %v", src.Spec, src.Checkpoint)
	}

	// a record that cannot be decoded: no checkpoint, the transcript still read
	head, err := h.log.Get(ctx, "s1")
	must(t, err)
	if _, err := h.log.Acquire(ctx, "s1", "t", time.Minute); err != nil {
		t.Fatal(err)
	}
	bad := *head
	bad.Body = []byte(`"not a record"`)
	if _, err := h.log.Commit(ctx, "s1", "t", &store.Commit{ExpectedVersion: head.Version, Head: bad}); err != nil {
		t.Fatal(err)
	}
	src, err = sessions.ArtifactSource(ctx, "s1")
	if err != nil || src.Checkpoint || len(src.Messages) != 2 || src.Spec != nil {
		t.Errorf("undecodable record: %+v, %v", src, err)
	}
	var nf *SessionNotFoundError
	if _, err := sessions.ArtifactSource(ctx, "nobody"); !errors.As(err, &nf) {
		t.Errorf("unknown session: %v", err)
	}
}

// StatServed serves the session's own files only.
func TestStatServed(t *testing.T) {
	h := newHarness(t, artifactsWorkflow, nil)
	ctx := context.Background()
	must(t, h.files.Write(ctx, "s1/scratchpad/a.md", []byte("abc")))
	must(t, h.files.Write(ctx, "s1/checkpoints/c.json", []byte("{}")))
	must(t, h.files.Write(ctx, "s2/scratchpad/b.md", []byte("no")))
	sessions := NewSessions(h.log, h.files, nil)
	f, err := sessions.StatServed(ctx, "s1", "/scratchpad/./a.md")
	if err != nil || f.Path != "scratchpad/a.md" || f.Size != 3 {
		t.Fatalf("StatServed = %+v, %v", f, err)
	}
	if data, err := sessions.ReadServed(ctx, "s1", f); err != nil || string(data) != "abc" {
		t.Errorf("ReadServed = %q, %v", data, err)
	}
	for _, p := range []string{"scratchpad", "checkpoints/c.json", "scratchpad/none.md"} {
		if _, err := sessions.StatServed(ctx, "s1", p); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("StatServed(%q) = %v, want not found", p, err)
		}
	}
	var esc *workspace.PathEscapeError
	if _, err := sessions.StatServed(ctx, "s1", "../s2/scratchpad/b.md"); !errors.As(err, &esc) {
		t.Errorf("another session's file: %v", err)
	}
}
