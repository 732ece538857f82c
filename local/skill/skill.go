// Package skill holds what `archmax skill` and `archmax init` hand out, embedded in the binary:
// the bundled authoring skill (archmax-harness/: SKILL.md, the authoring guide as references/,
// the editor schemas as schema/) for a coding agent that writes workflows for this runtime, and
// the starter workspace `archmax init` writes.
//
// references/ and schema/ are copies of docs/authoring/ and docs/schema/, refreshed by
// `go generate ./local/skill`; a test fails when a copy drifts from its source.
package skill

//go:generate sh -c "rm -f archmax-harness/references/*.md archmax-harness/schema/*.json && cp ../../docs/authoring/*.md archmax-harness/references/ && cp ../../docs/schema/*.json archmax-harness/schema/"

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// Name is the skill's name: its directory and the `name:` of its SKILL.md frontmatter.
const Name = "archmax-harness"

// InstallDir is where `archmax init` puts the skill inside a workspace, relative to its root:
// the cross-agent skills folder, outside everything the runtime mounts into a session.
const InstallDir = ".agents/skills/" + Name

//go:embed archmax-harness
var skillFiles embed.FS

//go:embed all:scaffold
var scaffoldFiles embed.FS

// Skill is the authoring skill's tree: SKILL.md at its root.
func Skill() fs.FS { return sub(skillFiles, Name) }

// Scaffold is the starter workspace's tree, without the skill (Init adds it).
func Scaffold() fs.FS { return sub(scaffoldFiles, "scaffold") }

func sub(f fs.FS, dir string) fs.FS {
	s, err := fs.Sub(f, dir)
	if err != nil {
		panic(err) // the directory is embedded at build time
	}
	return s
}

// Files lists the regular files of f, slash-separated and sorted.
func Files(f fs.FS) ([]string, error) {
	var out []string
	err := fs.WalkDir(f, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, p)
		}
		return err
	})
	sort.Strings(out)
	return out, err
}

// InitFiles is every file Init writes, relative to the workspace root: the scaffold's, then the
// skill's under InstallDir.
func InitFiles() ([]string, error) {
	own, err := Files(Scaffold())
	if err != nil {
		return nil, err
	}
	sk, err := Files(Skill())
	if err != nil {
		return nil, err
	}
	for _, p := range sk {
		own = append(own, InstallDir+"/"+p)
	}
	return own, nil
}

// ConflictError names the files a write would have replaced; nothing was written.
type ConflictError struct{ Paths []string }

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%d file(s) already exist and would be replaced, so nothing was written: %v", len(e.Paths), e.Paths)
}

// Init writes the starter workspace and the skill into dir (created when missing). It refuses,
// writing nothing, when any file it would write already exists (*ConflictError).
func Init(dir string) ([]string, error) {
	files, err := InitFiles()
	if err != nil {
		return nil, err
	}
	var taken []string
	for _, p := range files {
		if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(p))); err == nil {
			taken = append(taken, p)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	if len(taken) > 0 {
		return nil, &ConflictError{Paths: taken}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.CopyFS(dir, Scaffold()); err != nil {
		return nil, err
	}
	if err := os.CopyFS(filepath.Join(dir, filepath.FromSlash(InstallDir)), Skill()); err != nil {
		return nil, err
	}
	return files, nil
}

// WriteSkill writes the skill into dir/archmax-harness, replacing the files it has there, and
// returns that directory.
func WriteSkill(dir string) (string, error) {
	root := filepath.Join(dir, Name)
	files, err := Files(Skill())
	if err != nil {
		return "", err
	}
	for _, p := range files {
		b, err := fs.ReadFile(Skill(), p)
		if err != nil {
			return "", err
		}
		dst := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			return "", err
		}
	}
	return root, nil
}
