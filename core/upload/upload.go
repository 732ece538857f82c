// Package upload is the selection of a workspace's files a deployment carries: the authored
// tree the functions read, without secrets, local state or what only `archmax test` reads.
// The CDK app (infra/workspace.go) uploads exactly these under the spec prefix, and the local
// S3 fake `make local-engines` starts (local/cmd/localengines) is seeded with the same ones.
package upload

import (
	"errors"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/archmax-ai/archmax/core/hostconfig"
)

// Roots are the workspace entries the functions read — the authored tree: the workflows,
// the skills, the platform folder, AGENTS.md and the host file. Nothing else of the
// workspace is uploaded (no .env, no session store, no model scripts, no README).
var Roots = []string{"workflows", "skills", ".platform", "AGENTS.md", hostconfig.File}

// Excluded reports whether a path under the upload roots (relative to the workspace,
// slash-separated) stays out of the upload: secrets and local state wherever they are (.env
// and .env.* files, .archmax/ session stores, node_modules/, .git/, .DS_Store) and each
// workflow's tests/ (case files and their model scripts are `archmax test`'s, which no
// function reads).
func Excluded(rel string) bool {
	parts := strings.Split(rel, "/")
	for _, p := range parts {
		if p == ".env" || strings.HasPrefix(p, ".env.") || p == ".archmax" || p == "node_modules" || p == ".git" || p == ".DS_Store" {
			return true
		}
	}
	return len(parts) >= 3 && parts[0] == "workflows" && parts[2] == "tests"
}

// Files lists the regular files of the workspace at dir under Roots that Excluded keeps,
// relative to dir, slash-separated, sorted. Symbolic links are not followed and not listed:
// the functions' authored tree has none (the local one refuses them).
func Files(dir string) ([]string, error) {
	var out []string
	for _, root := range Roots {
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
