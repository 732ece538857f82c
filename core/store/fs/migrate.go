package fs

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// The layout of names.go replaced one that stored key segments and session ids as they
// were. A store of that layout — it has no format marker — is migrated once, when it is
// opened; stop every older archmax process using the store first (they would keep writing
// unencoded names). A fresh store just gets the marker.
//
//   - Session files (OpenFiles): the encoded tree is staged beside the old one
//     (<dir>.v2-<random>) with a hard link per file (a copy where the file system has no
//     links), completed with its marker, and swapped in by two renames; the old tree
//     (<dir>.v1-<random>) is then removed. A migration cut short is found at the next open:
//     a complete staged tree whose old tree is already gone is put in place, an incomplete
//     one is discarded and the migration runs again. Symbolic links and the old layout's
//     temp files are not carried over.
//   - The session log (Open): only the session folders' names change. Each renamed folder is
//     first moved into migrating/ under its new name; once all are there a marker records it
//     and they move back into sessions/. Either phase resumes where it stopped.
//
// Both run under a lock (a flock(2) file beside the tree, and the log's own .lock).

// logFormatFile marks a session log of the encoded layout; logStaging holds the session
// folders of a migration between its two phases, logPhase2 marks the second.
const (
	logFormatFile = "format"
	logStaging    = "migrating"
	logPhase2     = "%phase2"
	formatText    = "archmax fs store: names encoded (core/store/fs/names.go)\n"
)

// prepareFiles makes dir a session-files tree of the current layout (see above).
func prepareFiles(dir string) error {
	parent, base := filepath.Dir(dir), filepath.Base(dir)
	if _, err := os.Stat(filepath.Join(dir, formatFile)); err == nil {
		// the old tree of a migration cut short after its swap is all that may be left over
		if left, _ := filepath.Glob(filepath.Join(parent, globEscape(base)+".v[12]-*")); len(left) == 0 {
			return nil
		}
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	unlock, err := lockFile(filepath.Join(parent, "."+base+".migrate.lock"))
	if err != nil {
		return err
	}
	defer unlock()
	leftovers, err := filepath.Glob(filepath.Join(parent, globEscape(base)+".v[12]-*"))
	if err != nil {
		return err
	}
	if _, err := os.Stat(dir); errors.Is(err, iofs.ErrNotExist) {
		for _, l := range leftovers { // cut short between the two renames: put the new tree in place
			if _, err := os.Stat(filepath.Join(l, formatFile)); err == nil && strings.HasPrefix(filepath.Base(l), base+".v2-") {
				if err := os.Rename(l, dir); err != nil {
					return err
				}
				break
			}
		}
	}
	for _, l := range leftovers {
		if l != dir {
			if err := os.RemoveAll(l); err != nil && !errors.Is(err, iofs.ErrNotExist) {
				return err
			}
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, formatFile)); err == nil {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(entries) == 0 {
		return writeDurably(filepath.Join(dir, formatFile), []byte(formatText))
	}
	staged := filepath.Join(parent, base+".v2-"+rand.Text())
	if err := stageEncoded(dir, staged); err != nil {
		os.RemoveAll(staged)
		return fmt.Errorf("migrate %s to encoded names: %w", dir, err)
	}
	old := filepath.Join(parent, base+".v1-"+rand.Text())
	if err := os.Rename(dir, old); err != nil {
		return err
	}
	if err := os.Rename(staged, dir); err != nil {
		return err
	}
	if err := syncPath(parent); err != nil {
		return err
	}
	return os.RemoveAll(old)
}

// stageEncoded builds at staged the encoded tree of the unencoded tree at old, ending with
// its format marker.
func stageEncoded(old, staged string) error {
	if err := os.Mkdir(staged, 0o755); err != nil {
		return err
	}
	err := filepath.WalkDir(old, func(p string, d iofs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(old, p)
		if err != nil || rel == "." {
			return err
		}
		switch {
		case d.Type()&iofs.ModeSymlink != 0:
			return nil // never followed, so never carried over
		case strings.HasPrefix(d.Name(), legacyTempPrefix):
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		case !d.IsDir() && !d.Type().IsRegular():
			return nil
		}
		key := filepath.ToSlash(rel)
		for seg := range strings.SplitSeq(key, "/") {
			if _, digest := fileName(seg); digest != "" {
				if err := os.MkdirAll(filepath.Join(staged, namesDir), 0o755); err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(staged, namesDir, digest), []byte(seg), 0o644); err != nil {
					return err
				}
			}
		}
		target := filepath.Join(staged, filepath.FromSlash(diskPath(key)))
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if os.Link(p, target) == nil {
			return nil
		}
		return copyFile(p, target)
	})
	if err != nil {
		return err
	}
	return writeDurably(filepath.Join(staged, formatFile), []byte(formatText))
}

// migrateLog renames the session folders of an unencoded session log (see above).
func migrateLog(root *os.Root) error {
	if _, err := root.Stat(logFormatFile); err == nil {
		return nil
	}
	unlock, err := lock(root, ".")
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := root.Stat(logFormatFile); err == nil {
		return nil
	}
	if _, err := root.Stat(path.Join(logStaging, logPhase2)); errors.Is(err, iofs.ErrNotExist) {
		entries, err := iofs.ReadDir(root.FS(), sessionsDir)
		if err != nil {
			return err
		}
		moved := false
		for _, e := range entries {
			name := e.Name()
			if !e.IsDir() || legacyDigestName(name) {
				continue
			}
			if enc := sessionDirName(name); enc != name {
				if err := root.MkdirAll(logStaging, 0o755); err != nil {
					return err
				}
				if err := root.Rename(path.Join(sessionsDir, name), path.Join(logStaging, enc)); err != nil {
					return err
				}
				moved = true
			}
		}
		if moved {
			if err := replaceFile(root, path.Join(logStaging, logPhase2), []byte("phase 2\n")); err != nil {
				return err
			}
		}
	}
	if entries, err := iofs.ReadDir(root.FS(), logStaging); err == nil {
		for _, e := range entries {
			if e.Name() == logPhase2 {
				continue
			}
			if err := root.Rename(path.Join(logStaging, e.Name()), path.Join(sessionsDir, e.Name())); err != nil {
				return err
			}
		}
		if err := syncDir(root, sessionsDir); err != nil {
			return err
		}
		if err := root.RemoveAll(logStaging); err != nil {
			return err
		}
	} else if !errors.Is(err, iofs.ErrNotExist) {
		return err
	}
	return replaceFile(root, logFormatFile, []byte(formatText))
}

// legacyDigestName reports a session folder named by the digest of a long id ("=" and 64
// hex digits), which both layouts name alike.
func legacyDigestName(name string) bool {
	return len(name) == 65 && name[0] == '=' && strings.Trim(name[1:], hexDigits) == ""
}

// lockFile takes an exclusive flock(2) on the file name (created as needed).
func lockFile(name string) (unlock func(), err error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := flock(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}

// writeDurably writes name and fsyncs it and its folder.
func writeDurably(name string, data []byte) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return syncPath(filepath.Dir(name))
}

func syncPath(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func copyFile(from, to string) error {
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
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// globEscape quotes the glob metacharacters of a literal file name.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
