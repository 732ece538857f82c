package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/archmax-ai/archmax/core/hostconfig"
	"github.com/archmax-ai/archmax/core/upload"
)

// Workspace is the workspace a stack is synthesized with (`-c workspace=DIR`, the Makefile's
// WORKSPACE): its host file, whose functions, secrets, signed endpoints and buckets the
// functions' roles are granted (host.go), and the files uploaded under the spec prefix with
// the stack (a CDK bucket deployment), so that the host file the functions read is the one
// the permissions came from.
type Workspace struct {
	Dir string
	// Host is the parsed host file (nil: the workspace has none); Digest its
	// hostconfig.Digest, passed to the functions as ARCHMAX_HOST_FILE_SHA256.
	Host   *hostconfig.Config
	Digest string
	// Files are the uploaded files (upload.Files: upload.Roots, less what upload.Excluded
	// leaves out — the selection the local S3 fake is seeded with too), relative to Dir,
	// slash-separated, sorted; Stage is a directory holding exactly them, the deployment's
	// asset (Close removes it).
	Files []string
	Stage string
}

// ReadWorkspace reads the workspace at dir: it must hold workflows/; its host file, when it
// has one, must load (hostconfig.Load: the stack grants nothing for a file the functions
// would refuse) and be deployable on AWS — every mount has an s3 location (the functions
// serve mounts from S3 only). The upload is staged in a temporary directory.
func ReadWorkspace(dir string) (*Workspace, error) {
	if fi, err := os.Stat(filepath.Join(dir, "workflows")); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("workspace %s: no workflows/ folder (is it a workspace?)", dir)
	}
	w := &Workspace{Dir: dir, Digest: hostconfig.NoFile}
	src, err := os.ReadFile(filepath.Join(dir, hostconfig.File))
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("workspace %s: %w", dir, err)
	default:
		if w.Host, err = hostconfig.Load(src); err != nil {
			return nil, fmt.Errorf("workspace %s: %w", dir, err)
		}
		for _, m := range w.Host.Mounts {
			if _, _, ok := m.S3Location(); !ok {
				return nil, fmt.Errorf("workspace %s: %s:%d: mount '%s' has no s3 location: the functions serve mounts from S3 only (s3: s3://bucket/prefix/)",
					dir, hostconfig.File, m.Line, m.Name)
			}
		}
		w.Digest = hostconfig.Digest(src)
	}
	if w.Files, err = upload.Files(dir); err != nil {
		return nil, fmt.Errorf("workspace %s: %w", dir, err)
	}
	if w.Stage, err = os.MkdirTemp("", "archmax-workspace-"); err != nil {
		return nil, err
	}
	for _, f := range w.Files {
		if err := copyFile(filepath.Join(dir, filepath.FromSlash(f)), filepath.Join(w.Stage, filepath.FromSlash(f))); err != nil {
			_ = w.Close()
			return nil, err
		}
	}
	return w, nil
}

// Close removes the staged upload (after the app is synthesized: the assembly holds a copy).
func (w *Workspace) Close() error {
	if w == nil || w.Stage == "" {
		return nil
	}
	return os.RemoveAll(w.Stage)
}

func copyFile(from, to string) error {
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}
