package main

import (
	"context"
	"errors"
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
// snapshot; the trail and variables without a readable checkpoint), or one that renders to
// more than artifacts.MaxBytes (which the route refuses too, 413), is not written, and said so.
func writeArtifacts(ctx context.Context, sessions *session.Sessions, id, dir string, out, errOut io.Writer) error {
	src, err := sessions.ArtifactSource(ctx, id)
	if err != nil {
		return sessionsError(err, id)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, name := range artifacts.Names {
		data, err := artifacts.RenderOne(src, name, artifacts.MaxBytes)
		var big *artifacts.TooLargeError
		switch {
		case errors.As(err, &big):
			fmt.Fprintf(errOut, "archmax: %s not written: it renders to more than %d bytes (the session API does not serve it either)\n", name, big.Limit)
			continue
		case err != nil:
			why := "its checkpoint could not be read"
			if name == artifacts.GraphJSON || name == artifacts.GraphMermaid {
				why = "its spec snapshot is not stored"
			}
			fmt.Fprintf(errOut, "archmax: %s not written: %s\n", name, why)
			continue
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return err
		}
		fmt.Fprintln(out, p)
	}
	return nil
}
