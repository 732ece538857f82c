package session

import (
	"context"
	"fmt"
	"slices"

	"github.com/archmax-ai/archmax/core/artifacts"
	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/store"
	"github.com/archmax-ai/archmax/core/workspace"
)

// artifactPage is how many messages ArtifactSource reads per log read.
const artifactPage = 500

// ArtifactSource reads what a session's artifacts are rendered from (core/artifacts, spec
// 02 §10) out of the stores alone, so any process renders the same files: the head and its
// record (variables, usage, specHash), the whole transcript and trail, and the spec snapshot
// the record's specHash names (_specs/<hash>.json; left out when it is not stored or does not
// hash to specHash). A record that cannot be decoded reads as no checkpoint (no trail.json,
// no variables.json). With names, only what those artifacts are rendered from is read (the
// transcript for trajectory.json, the trail for trail.json, the snapshot for the graph and
// metadata.json). Errors: *SessionNotFoundError, *spec.SessionStoreIdError, store errors.
func (s *Sessions) ArtifactSource(ctx context.Context, sessionID string, names ...string) (*artifacts.Source, error) {
	need := func(of ...string) bool {
		if len(names) == 0 {
			return true
		}
		for _, n := range of {
			if slices.Contains(names, n) {
				return true
			}
		}
		return false
	}
	id, h, err := s.head(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	src := &artifacts.Source{SessionID: id, Workflow: h.Workflow}
	for after := int64(0); need(artifacts.Trajectory) && after < h.Messages; {
		page, next, err := s.Messages(ctx, id, after, artifactPage)
		if err != nil {
			return nil, err
		}
		src.Messages = append(src.Messages, page...)
		if next <= after {
			break
		}
		after = next
	}
	rec, err := decodeRecord(ctx, h.Body, s.blobs, id, nil)
	if err != nil {
		return src, nil // no checkpoint: graph, trajectory and metadata only
	}
	src.Checkpoint, src.SpecHash, src.Variables = true, rec.SpecHash, rec.Variables
	if need(artifacts.Trail) {
		if src.Trail, err = s.Trail(ctx, id); err != nil {
			return nil, err
		}
	}
	if u := rec.Usage; !u.Empty() {
		src.Usage = &artifacts.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadTokens: u.CacheReadTokens,
			CacheCreationTokens: u.CacheCreationTokens, CostUSD: u.CostUSD}
	}
	if rec.SpecHash != "" && need(artifacts.GraphJSON, artifacts.GraphMermaid, artifacts.Metadata) {
		src.Spec = s.snapshot(ctx, rec.SpecHash)
	}
	return src, nil
}

// snapshot parses the spec snapshot of hash (_specs/<hash>.json, JSON being YAML); nil when
// it is not stored, does not parse, or is not the document hash names.
func (s *Sessions) snapshot(ctx context.Context, hash string) *spec.MachineSpec {
	src, err := s.files.Read(ctx, "_specs/"+hash+".json")
	if err != nil {
		return nil
	}
	sp, diags := spec.Parse("_specs/"+hash+".json", src)
	if sp == nil || sp.Hash() != hash {
		return nil
	}
	for _, d := range diags {
		if d.Severity == "error" {
			return nil
		}
	}
	return sp
}

// ServedFile is a session-zone file as the session API serves it: its canonical path and size.
type ServedFile struct {
	Path string
	Size int64
}

// StatServed finds the session-zone file a reader asked for by path (workspace.ServedPath:
// canonicalised, never outside the session's folder, never an internal area nor the
// transcript's pages). Errors: *workspace.PathEscapeError; an error wrapping
// store.ErrNotFound for a path not served, a folder or a missing file;
// *spec.SessionStoreIdError.
func (s *Sessions) StatServed(ctx context.Context, sessionID, path string) (*ServedFile, error) {
	id, err := spec.CheckSessionID(sessionID)
	if err != nil {
		return nil, err
	}
	p, err := workspace.ServedPath(path)
	if err != nil {
		return nil, err
	}
	fi, err := s.files.Stat(ctx, id+"/"+p)
	if err != nil {
		return nil, fmt.Errorf("session file %q: %w", p, err)
	}
	if fi.Dir {
		return nil, fmt.Errorf("session file %q is a folder: %w", p, store.ErrNotFound)
	}
	return &ServedFile{Path: p, Size: fi.Size}, nil
}

// ReadServed reads the file StatServed found.
func (s *Sessions) ReadServed(ctx context.Context, sessionID string, f *ServedFile) ([]byte, error) {
	id, err := spec.CheckSessionID(sessionID)
	if err != nil {
		return nil, err
	}
	data, err := s.files.Read(ctx, id+"/"+f.Path)
	if err != nil {
		return nil, fmt.Errorf("session file %q: %w", f.Path, err)
	}
	return data, nil
}
