package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/archmax-ai/archmax/core/artifacts"
	"github.com/archmax-ai/archmax/core/session"
)

// writeArtifacts renders session id's artifacts from the store (core/artifacts: the same
// bytes GET /v1/sessions/{id}/artifacts/{name} answers) into dir, creating it, and prints
// each file's path on out. A file the store lacks the input for (the graph without the spec
// snapshot; the trail and variables without a readable checkpoint) is not written, and said so.
func writeArtifacts(ctx context.Context, sessions *session.Sessions, id, dir string, out, errOut io.Writer) error {
	src, err := sessions.ArtifactSource(ctx, id)
	if err != nil {
		return sessionsError(err, id)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	files := artifacts.Render(src)
	written := map[string]bool{}
	for _, f := range files {
		p := filepath.Join(dir, f.Name)
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			return err
		}
		written[f.Name] = true
		fmt.Fprintln(out, p)
	}
	for _, name := range artifacts.Names {
		if !written[name] {
			why := "its checkpoint could not be read"
			if name == artifacts.GraphJSON || name == artifacts.GraphMermaid {
				why = "its spec snapshot is not stored"
			}
			fmt.Fprintf(errOut, "archmax: %s not written: %s\n", name, why)
		}
	}
	return nil
}
