package workspace

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/archmax-ai/archmax/core/store"
)

const (
	// defaultMaxCount is grep's match cap when the caller sets none (GOV-57).
	defaultMaxCount = 1000
	// grepMaxFileBytes is deepagents' per-file search bound (BR-49): larger files are skipped.
	grepMaxFileBytes = 10 << 20
)

// glob lists the files under a folder matching a pattern (BR-46, OQ-15):
// `{ pattern: string, path?: string }`. Matching is doublestar's over the merged
// namespace, wildcards matching dot-prefixed names; a leading '/' on the pattern is ignored.
func (w *Workspace) glob(ctx context.Context, a *argReader) (string, error) {
	pattern, _ := a.str("pattern", true)
	arg, _ := a.str("path", false)
	if a.invalid() {
		return "", nil
	}
	p, err := Canonicalize(arg)
	if err != nil {
		return findError(reasonOutside), nil
	}
	pat := strings.TrimLeft(pattern, "/")
	if !doublestar.ValidatePattern(pat) {
		return findError(reasonPattern), nil
	}
	// Walk only below the pattern's wildcard-free leading folders, and only as deep as a
	// pattern without '**' can reach.
	start, levels := p, -1
	base, rest := doublestar.SplitPattern(pat)
	if joined := join(p, base); base != "." && !strings.ContainsRune(base, '\\') && !needsCleaning(joined) {
		start = joined
	} else {
		rest = pat // a base that is escaped or not canonical cannot name a folder
	}
	if !strings.Contains(rest, "**") {
		levels = strings.Count(rest, "/") + 1
	}
	var found []string
	if w.searchable(ctx, p, start) {
		err = w.walk(ctx, start, levels, func(e entry) {
			if ok, _ := doublestar.Match(pat, relative(p, e.path)); ok {
				found = append(found, resultPath(e.path))
			}
		})
	}
	if err != nil {
		if err := storeFailure(ctx, err); err != nil {
			return "", err
		}
		return findError(reason(err)), nil
	}
	if len(found) == 0 {
		return noFilesMatching(pattern), nil
	}
	slices.Sort(found)
	return capLines(found), nil
}

// relative returns path p relative to folder dir (p lies below dir).
func relative(dir, p string) string {
	if dir == "" {
		return p
	}
	return p[len(dir)+1:]
}

// searchable reports whether a search rooted at p may descend to the folder start below
// it: no redacted folder and no unsearchable mount root (GOV-58) lies in between.
func (w *Workspace) searchable(ctx context.Context, p, start string) bool {
	if start == p {
		return true
	}
	dir := p
	for seg := range strings.SplitSeq(relative(p, start), "/") {
		dir = join(dir, seg)
		if w.hidden(ctx, dir, true) {
			return false
		}
		if m, ok := w.MountOf(dir); ok && m.Unsearchable && m.Name == dir {
			return false
		}
	}
	return true
}

// fileMatches is one file's grep matches.
type fileMatches struct {
	path  string
	lines []lineMatch
}

type lineMatch struct {
	n    int // 1-based line number
	text string
}

// grep searches text files for a literal string (BR-47, GOV-57):
// `{ pattern: string, path?: string = "/", glob?: string | null, max_count?: integer > 0 | null,
// output_mode?: "files_with_matches" | "content" | "count" = "content" }`.
func (w *Workspace) grep(ctx context.Context, a *argReader) (string, error) {
	pattern, _ := a.str("pattern", true)
	arg, given := a.str("path", false)
	nameGlob, _ := a.nullableStr("glob")
	maxCount := a.positiveInt("max_count", defaultMaxCount)
	mode := a.enum("output_mode", "content", "files_with_matches", "content", "count")
	if a.invalid() {
		return "", nil
	}
	if !given {
		arg = "/"
	}
	p, err := Canonicalize(arg)
	if err != nil {
		return cannot(verbSearch, arg, reasonOutside), nil
	}
	results, capped, err := w.search(context.WithValue(ctx, contentKey{}, true), p, pattern, nameGlob, maxCount)
	if err != nil {
		if err := storeFailure(ctx, err); err != nil {
			return "", err
		}
		return cannot(verbSearch, arg, reason(err)), nil
	}
	if len(results) == 0 {
		return noMatches(pattern), nil
	}
	var b strings.Builder
	for i, f := range results {
		if i > 0 {
			b.WriteByte('\n')
		}
		switch mode {
		case "files_with_matches":
			b.WriteString(resultPath(f.path))
		case "count":
			b.WriteString(grepCount(f.path, len(f.lines)))
		default:
			b.WriteString(grepFileHead(f.path))
			for _, m := range f.lines {
				b.WriteByte('\n')
				b.WriteString(grepMatch(m.n, m.text))
			}
		}
	}
	text := b.String()
	if jsLen(text) > resultCap {
		text = jsPrefix(text, resultCap) + "\n" + truncLine
	}
	if capped {
		text += capNote
	}
	return text, nil
}

// search finds up to maxCount matching lines, files in ascending path order; capped
// reports that more matches exist. Binary-typed names, names failing nameGlob, files
// over grepMaxFileBytes and NUL-bearing content are skipped.
func (w *Workspace) search(ctx context.Context, p, pattern, nameGlob string, maxCount int) (results []fileMatches, capped bool, err error) {
	files, err := w.candidates(ctx, p)
	if err != nil {
		return nil, false, err
	}
	files = slices.DeleteFunc(files, func(e entry) bool {
		name := e.path[strings.LastIndexByte(e.path, '/')+1:]
		if nameGlob != "" {
			if ok, _ := doublestar.Match(nameGlob, name); !ok {
				return true
			}
		}
		return binaryType(e.path) != "" || e.size > grepMaxFileBytes
	})
	slices.SortFunc(files, func(a, b entry) int { return strings.Compare(a.path, b.path) })
	found := 0
	for _, f := range files {
		data, err := w.readTool(ctx, f.path)
		switch {
		case errors.Is(err, store.ErrNotFound):
			continue // removed since it was listed
		case err != nil:
			return nil, false, err
		case hasNUL(data):
			continue
		}
		fm := fileMatches{path: f.path}
		text := decodeText(data)
		for n := 1; text != ""; n++ {
			line, next, _ := strings.Cut(text, "\n")
			text = next
			if !strings.Contains(line, pattern) {
				continue
			}
			if found == maxCount {
				capped = true
				break
			}
			found++
			fm.lines = append(fm.lines, lineMatch{n: n, text: line})
		}
		if len(fm.lines) > 0 {
			results = append(results, fm)
		}
		if capped {
			break
		}
	}
	return results, capped, nil
}

// candidates returns the files a search of p covers: p itself when it names a file,
// else every file below it.
func (w *Workspace) candidates(ctx context.Context, p string) ([]entry, error) {
	if p != "" {
		r, ok := w.route(p, false)
		if !ok {
			return nil, nil
		}
		fi, err := r.files.Stat(ctx, r.key)
		switch {
		case err == nil && !fi.Dir:
			if w.hidden(ctx, p, false) {
				return nil, nil
			}
			return []entry{{path: p, size: fi.Size}}, nil
		case err != nil && !errors.Is(err, store.ErrNotFound):
			return nil, err
		}
	}
	var files []entry
	err := w.walk(ctx, p, -1, func(e entry) { files = append(files, e) })
	return files, err
}
