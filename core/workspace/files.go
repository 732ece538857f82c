package workspace

import (
	"context"
	"encoding/base64"
	"errors"
	"math"
	"strconv"
	"strings"

	"github.com/archmax-ai/archmax/core/store"
)

// ls lists one folder (BR-42): `{ path?: string = "/" }`.
func (w *Workspace) ls(ctx context.Context, a *argReader) (string, error) {
	arg, _ := a.str("path", false)
	if a.invalid() {
		return "", nil
	}
	p, err := Canonicalize(arg)
	if err != nil {
		return listError(reasonOutside), nil
	}
	es, err := w.children(ctx, p)
	if err != nil {
		if err := storeFailure(ctx, err); err != nil {
			return "", err
		}
		return listError(reason(err)), nil
	}
	if len(es) == 0 {
		if arg == "" {
			arg = "/"
		}
		return noFilesIn(arg), nil
	}
	lines := make([]string, len(es))
	for i, e := range es {
		switch {
		case e.dir:
			lines[i] = lsDir(e.path)
		case e.size > 0:
			lines[i] = lsFile(e.path, e.size)
		default:
			lines[i] = resultPath(e.path)
		}
	}
	return capLines(lines), nil
}

// capLines joins result lines with LF; when their lengths (LF not counted) sum to more
// than the cap, only the first ⌊n × cap / sum⌋ are kept, then the TRUNC line (BR-42, BR-46).
func capLines(lines []string) string {
	sum := 0
	for _, l := range lines {
		sum += jsLen(l)
	}
	if sum > resultCap {
		keep := len(lines) * resultCap / sum
		lines = append(lines[:keep:keep], truncLine)
	}
	return strings.Join(lines, "\n")
}

// readFile reads a window of a text file (BR-43, BR-20):
// `{ file_path: string, offset?: number = 0, limit?: number = 100 }`.
func (w *Workspace) readFile(ctx context.Context, a *argReader) (string, error) {
	arg := a.filePath()
	offset := a.num("offset", 0)
	limit := a.num("limit", 100)
	if a.invalid() {
		return "", nil
	}
	p, err := Canonicalize(arg)
	if err != nil {
		return cannot(verbRead, arg, reasonOutside), nil
	}
	data, err := w.readTool(ctx, p)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return fileNotFound(arg), nil
		}
		if err := storeFailure(ctx, err); err != nil {
			return "", err
		}
		return cannot(verbRead, arg, reason(err)), nil
	}
	if t := binaryType(p); t != "" {
		return binaryNotice(arg, binaryDetail(t, int64(len(data)))), nil
	}
	if hasNUL(data) {
		return binaryNotice(arg, octetStream), nil
	}
	text := decodeText(data)
	if isBlank(text) {
		return emptyFileReminder, nil
	}
	var notice string
	if offset < 0 {
		// Fixed notation is JavaScript's String(n) for every offset between -1e21 and -1e-6.
		notice = offsetNotice(strconv.FormatFloat(offset, 'f', -1, 64))
	}
	return readWindow(text, arg, notice, lineCount(offset), lineCount(limit)), nil
}

// readTool reads a file through the tools' routes: nothing serves the root, the
// authoring plane or the runtime-internal areas (store.ErrNotFound).
func (w *Workspace) readTool(ctx context.Context, p string) ([]byte, error) {
	r, ok := w.route(p, false)
	if !ok || p == "" {
		return nil, store.ErrNotFound
	}
	return r.files.Read(ctx, r.key)
}

// lineCount floors a line offset or limit, a negative value counting as 0 (BR-43).
func lineCount(f float64) int {
	switch {
	case f <= 0:
		return 0
	case f >= math.MaxInt32:
		return math.MaxInt32
	}
	return int(f)
}

// readWindow renders lines [offset, offset+limit) of a non-blank text (BR-43): the
// header, LF, the raw lines joined by LF; cut to the result cap with the size notice.
func readWindow(text, arg, notice string, offset, limit int) string {
	total := strings.Count(text, "\n")
	if !strings.HasSuffix(text, "\n") {
		total++
	}
	if offset >= total {
		return offsetBeyondEnd(offset, total)
	}
	if limit == 0 {
		return notice + limitZeroHeader(offset+1)
	}
	start := 0
	for range offset {
		start += strings.IndexByte(text[start:], '\n') + 1
	}
	last := min(offset+limit, total)
	end := start
	for i := offset; i < last; i++ {
		nl := strings.IndexByte(text[end:], '\n')
		if nl < 0 {
			end = len(text)
			break
		}
		end += nl + 1
	}
	body := strings.TrimSuffix(text[start:end], "\n")

	header := make([]byte, 0, 64+len(notice)+len(body))
	header = append(header, notice...)
	header = appendRange(header, offset+1, last, total)
	if last < total {
		header = appendNextOffset(header, last)
	}
	header = append(header, headerClose...)
	if jsLen(header)+jsLen(body) < resultCap {
		return string(append(header, body...))
	}
	return cutWindow(strings.Split(body, "\n"), arg, notice, offset, total)
}

// cutWindow renders a window that would reach the cap (BR-43): the size notice, then
// the most whole lines that fit the cap in all, or — when not even the first line fits —
// as much of the first line as fits under the mid-line header.
func cutWindow(lines []string, arg, notice string, offset, total int) string {
	prefix := notice + sizeLimitNotice(arg)
	budget := resultCap - jsLen(prefix)
	header := func(k int) string { return sizeCutHeader(offset+1, offset+k, total) }
	used, k := 0, 0
	for ; k < len(lines); k++ {
		add := jsLen(lines[k])
		if k > 0 {
			add++ // the LF before it
		}
		if jsLen(header(k+1))+used+add > budget {
			break
		}
		used += add
	}
	if k > 0 {
		return prefix + header(k) + strings.Join(lines[:k], "\n")
	}
	line := lines[0]
	length := strconv.Itoa(jsLen(line))
	midLine := func(shown string) string { return midLineHeader(offset+1, total, shown, length) }
	shown := max(budget-jsLen(midLine(length)), 0)
	return prefix + midLine(strconv.Itoa(shown)) + jsPrefix(line, shown)
}

// writeFile creates or replaces a file (BR-44, BR-49): `{ file_path: string, content: string }`.
func (w *Workspace) writeFile(ctx context.Context, a *argReader) (string, error) {
	arg := a.filePath()
	content, _ := a.str("content", true)
	if a.invalid() {
		return "", nil
	}
	fail := func(why string) (string, error) { return cannot(verbWrite, arg, why), nil }
	p, err := Canonicalize(arg)
	if err != nil {
		return fail(reasonOutside)
	}
	data := []byte(content)
	if binaryType(p) != "" {
		if data, err = decodeBase64(content); err != nil {
			return fail(reasonNotBase64)
		}
	}
	why, err := w.put(ctx, p, data)
	if err != nil {
		return "", err
	}
	if why != "" {
		return fail(why)
	}
	return wrote(arg), nil
}

// put writes a whole file through the tools' routes. It returns "" on success, else the
// BR-22/BR-49 reason the write was refused; the error is the context's when it ended.
func (w *Workspace) put(ctx context.Context, p string, data []byte) (string, error) {
	if p == "" {
		return reasonRoot, nil
	}
	r, ok := w.route(p, false)
	switch {
	case !ok:
		return reasonDenied, nil
	case r.mount != nil && r.mount.ReadOnly:
		return reasonReadOnly, nil
	}
	why, err := w.conflict(ctx, p, r)
	if err == nil && why == "" {
		err = r.files.Write(ctx, r.key, data)
	}
	if err != nil {
		if err := storeFailure(ctx, err); err != nil {
			return "", err
		}
		return reason(err), nil
	}
	return why, nil
}

// conflict keeps a file and a folder from sharing a path (BR-49): it returns the reason a
// write of p would break that ("" when none), or a store error.
func (w *Workspace) conflict(ctx context.Context, p string, r route) (string, error) {
	fi, err := r.files.Stat(ctx, r.key)
	switch {
	case err == nil && fi.Dir:
		return reasonDir, nil
	case err != nil && !errors.Is(err, store.ErrNotFound):
		return "", err
	}
	for i := strings.IndexByte(p, '/'); i >= 0; i = nextSlash(p, i) {
		anc := p[:i]
		ra, ok := w.route(anc, false)
		if !ok || ra.mount != r.mount {
			continue // a folder of the namespace, not of this tree
		}
		fi, err := ra.files.Stat(ctx, ra.key)
		switch {
		case err == nil && !fi.Dir:
			return reasonParentIsFile(anc), nil
		case err != nil && !errors.Is(err, store.ErrNotFound):
			return "", err
		}
	}
	return "", nil
}

// nextSlash returns the index of the next '/' in p after i, or -1.
func nextSlash(p string, i int) int {
	j := strings.IndexByte(p[i+1:], '/')
	if j < 0 {
		return -1
	}
	return i + 1 + j
}

// decodeBase64 decodes a binary file's content (BR-44): whitespace ignored, a leading
// "data:…," dropped, padding optional.
func decodeBase64(s string) ([]byte, error) {
	if strings.HasPrefix(s, "data:") {
		if _, rest, ok := strings.Cut(s, ","); ok {
			s = rest
		}
	}
	s = strings.Join(strings.Fields(s), "")
	if strings.HasSuffix(s, "=") {
		return base64.StdEncoding.DecodeString(s)
	}
	return base64.RawStdEncoding.DecodeString(s)
}

// editFile replaces literal text in a file (BR-45):
// `{ file_path: string, old_string: string, new_string: string, replace_all?: boolean = false }`.
func (w *Workspace) editFile(ctx context.Context, a *argReader) (string, error) {
	arg := a.filePath()
	oldS, _ := a.str("old_string", true)
	newS, _ := a.str("new_string", true)
	all := a.boolean("replace_all")
	if a.invalid() {
		return "", nil
	}
	fail := func(why string) (string, error) { return cannot(verbEdit, arg, why), nil }
	p, err := Canonicalize(arg)
	if err != nil {
		return fail(reasonOutside)
	}
	data, err := w.readTool(ctx, p)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return fileNotFound(arg), nil
		}
		if err := storeFailure(ctx, err); err != nil {
			return "", err
		}
		return fail(reason(err))
	}
	if binaryType(p) != "" {
		return fail(reasonNotText)
	}
	text := decodeText(data)
	n := 0
	switch {
	case oldS == "" && text != "":
		return emptyOldString, nil
	case oldS == "":
		text = newS
	default:
		n = strings.Count(text, oldS)
		switch {
		case n == 0:
			return stringNotFound(oldS), nil
		case n > 1 && !all:
			return multipleOccurrences(oldS, n), nil
		}
		text = strings.ReplaceAll(text, oldS, newS)
	}
	why, err := w.put(ctx, p, []byte(text))
	if err != nil {
		return "", err
	}
	if why != "" {
		return fail(why)
	}
	return replaced(n, arg), nil
}
