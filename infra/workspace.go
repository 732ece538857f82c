package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/archmax-ai/archmax/core/hostconfig"
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
	// Files are the uploaded files (UploadRoots, less what Excluded leaves out), relative to
	// Dir, slash-separated, sorted; Stage is a directory holding exactly them, the
	// deployment's asset (Close removes it).
	Files []string
	Stage string
}

// UploadRoots are the workspace entries the functions read — the authored tree: the
// workflows, the skills, the platform folder, AGENTS.md and the host file. Nothing else of
// the workspace is uploaded (no .env, no session store, no model scripts, no README).
var UploadRoots = []string{"workflows", "skills", ".platform", "AGENTS.md", hostconfig.File}

// Excluded reports whether a path under the upload roots stays out of the upload: secrets
// and local state wherever they are (.env and .env.* files, .archmax/ session stores,
// node_modules/, .git/, .DS_Store) and each workflow's tests/ (case files and their model
// scripts are `archmax test`'s, which no function reads).
func Excluded(rel string) bool {
	parts := strings.Split(rel, "/")
	for _, p := range parts {
		if p == ".env" || strings.HasPrefix(p, ".env.") || p == ".archmax" || p == "node_modules" || p == ".git" || p == ".DS_Store" {
			return true
		}
	}
	return len(parts) >= 3 && parts[0] == "workflows" && parts[2] == "tests"
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
	if w.Files, err = uploadFiles(dir); err != nil {
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

// uploadFiles lists the regular files under UploadRoots that Excluded keeps. Symbolic links
// are not followed and not uploaded: the functions' authored tree has none (the local one
// refuses them).
func uploadFiles(dir string) ([]string, error) {
	var out []string
	for _, root := range UploadRoots {
		err := filepath.WalkDir(filepath.Join(dir, root), func(p string, d fs.DirEntry, err error) error {
			if errors.Is(err, fs.ErrNotExist) && p == filepath.Join(dir, root) {
				return nil // a root the workspace does not have
			}
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return err
			}
			rel = filepath.ToSlash(rel)
			if Excluded(rel) {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if d.Type().IsRegular() {
				out = append(out, rel)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	slices.SortFunc(out, func(a, b string) int { return strings.Compare(path.Clean(a), path.Clean(b)) })
	return out, nil
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
