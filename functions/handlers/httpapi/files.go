package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/archmax-ai/archmax/core/artifacts"
	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/store"
	"github.com/archmax-ai/archmax/core/workspace"
	"github.com/archmax-ai/archmax/functions/handlers/access"
)

// The content routes — GET …/artifacts/{name} and GET …/files/{path+} — answer with bytes
// a model wrote or that hold what it wrote: hostile content on the API's origin. Every
// answer of theirs, error answers included, carries X-Content-Type-Options: nosniff and
// Content-Security-Policy: sandbox (no script, no same-origin access, no forms, even when a
// browser opens it directly), and a file of an active type (HTML, SVG, XML, JavaScript) is
// served as text/plain; an unknown type, or a PDF, as an attachment.
const (
	// MaxServedBytes is the most one answer carries (a whole file, or one range): within
	// Lambda's 6 MB response once base64-encoded. A larger file is read in ranges.
	MaxServedBytes = 4 << 20
	// MaxServedFileBytes is the largest file served at all, in ranges or not: the store
	// reads a file whole to answer any range of it.
	MaxServedFileBytes = 64 << 20
)

// renderLimit is the most an artifact renders to: MaxServedFileBytes, as a file (a variable
// only so a test can lower it). A larger rendering is abandoned there and refused 413, in
// ranges or not (AR20-15).
var renderLimit int64 = MaxServedFileBytes

// The codes of the content routes' refusals.
const (
	CodeArtifactNotFound    = "ArtifactNotFoundError"    // 404: no such artifact, or not rendered for this session
	CodeFileNotFound        = "FileNotFoundError"        // 404: no such session file, or one never served
	CodePathEscape          = "WorkspacePathEscapeError" // 400: the path climbs out of the session's folder
	CodeRangeNotSatisfiable = "RangeNotSatisfiableError" // 416: the range starts past the end (Content-Range: bytes */size)
	CodeContentTooLarge     = "ContentTooLargeError"     // 413: over MaxServedBytes without a range, or over MaxServedFileBytes (an artifact: its rendering), ranged or not
)

// contentError is a refusal of a content route: its status, code, details and headers.
type contentError struct {
	status  int
	code    string
	message string
	details map[string]any
	headers map[string]string
}

func (e *contentError) Error() string { return e.message }

// hostileHeaders are set on every answer of a content route.
var hostileHeaders = map[string]string{
	"X-Content-Type-Options":  "nosniff",
	"Content-Security-Policy": "sandbox",
}

// content answers a content route for its caller.
func (h *Handler) content(ctx context.Context, req events.APIGatewayV2HTTPRequest, t readTarget) events.APIGatewayV2HTTPResponse {
	resp, err := h.contentAnswer(ctx, req, t)
	if err != nil {
		resp = h.failure(ctx, req, err)
	}
	for k, v := range hostileHeaders {
		resp.Headers[k] = v
	}
	return resp
}

func (h *Handler) contentAnswer(ctx context.Context, req events.APIGatewayV2HTTPRequest, t readTarget) (events.APIGatewayV2HTTPResponse, error) {
	var none events.APIGatewayV2HTTPResponse
	caller, err := h.identify(req)
	if err != nil {
		return none, err
	}
	work, cancel := workContext(ctx)
	defer cancel()
	sessions := h.engines.Sessions()
	// the request's own refusals (an artifact name, a path) before anything of the session
	if t.view == "artifact" && !artifacts.IsName(t.name) {
		return none, &contentError{status: http.StatusNotFound, code: CodeArtifactNotFound,
			message: fmt.Sprintf("'%s' is not a session artifact; the artifacts are %s.", t.name, strings.Join(artifacts.Names, ", ")),
			details: map[string]any{"sessionId": t.sessionID, "name": t.name, "available": artifacts.Names}}
	}
	if t.view == "file" {
		if _, err := workspace.ServedPath(t.name); err != nil {
			return none, fileRefusal(t, err)
		}
	}
	// the same object-level check as GET /v1/sessions/{id}: a session the caller may not
	// see is 404, as a missing one
	a, err := sessions.Access(work, t.sessionID)
	if err != nil {
		return none, err
	}
	if err := h.policy.Check(caller, access.Read, a); err != nil {
		return none, err
	}
	if t.view == "artifact" {
		src, err := sessions.ArtifactSource(work, t.sessionID, t.name)
		if err != nil {
			return none, err
		}
		data, err := artifacts.RenderOne(src, t.name, renderLimit)
		var big *artifacts.TooLargeError
		switch {
		case errors.As(err, &big):
			return none, &contentError{status: http.StatusRequestEntityTooLarge, code: CodeContentTooLarge,
				message: fmt.Sprintf("The %s of session '%s' renders to more than %d bytes, more than the session API serves, in ranges or not; "+
					"read what it is made of from the session's other routes (GET /v1/sessions/%s, …/messages).", t.name, t.sessionID, big.Limit, t.sessionID),
				details: map[string]any{"sessionId": t.sessionID, "name": t.name, "maxBytes": MaxServedBytes, "maxFileBytes": MaxServedFileBytes}}
		case err != nil:
			var have []string // what the session has: only the record and the snapshot read, nothing rendered
			if all, err := sessions.ArtifactSource(work, t.sessionID, artifacts.GraphJSON, artifacts.Variables); err == nil {
				have = artifacts.Available(all)
			}
			return none, &contentError{status: http.StatusNotFound, code: CodeArtifactNotFound,
				message: fmt.Sprintf("Session '%s' has no %s: %s", t.sessionID, t.name, missingWhy(t.name)),
				details: map[string]any{"sessionId": t.sessionID, "name": t.name, "available": nonNil(have)}}
		}
		return serveBytes(req, data, artifacts.ContentType(t.name), "inline", t.name)
	}
	f, err := sessions.StatServed(work, t.sessionID, t.name)
	if err != nil {
		return none, fileRefusal(t, err)
	}
	_, ranged := rangeHeader(req)
	if f.Size > MaxServedFileBytes || f.Size > MaxServedBytes && !ranged {
		return none, tooLarge(f.Path, f.Size)
	}
	data, err := sessions.ReadServed(work, t.sessionID, f)
	if err != nil {
		return none, fileRefusal(t, err)
	}
	if int64(len(data)) > MaxServedFileBytes { // it grew since the stat
		return none, tooLarge(f.Path, int64(len(data)))
	}
	ctype, disposition := fileType(f.Path)
	return serveBytes(req, data, ctype, disposition, path.Base(f.Path))
}

// missingWhy says why an artifact is not rendered for a session.
func missingWhy(name string) string {
	switch name {
	case artifacts.GraphJSON, artifacts.GraphMermaid:
		return "the session's spec snapshot is not stored."
	default:
		return "the session's checkpoint could not be read."
	}
}

// fileRefusal words a file the route does not serve: a path climbing out of the session's
// folder is 400, anything else not found (404) — an internal area, the transcript's pages,
// a folder and a missing file alike.
func fileRefusal(t readTarget, err error) error {
	var esc *workspace.PathEscapeError
	switch {
	case errors.As(err, &esc):
		return &contentError{status: http.StatusBadRequest, code: CodePathEscape,
			message: fmt.Sprintf("The path '%s' climbs out of the session's folder; name a file inside it, such as 'scratchpad/report.md'.", t.name),
			details: map[string]any{"sessionId": t.sessionID, "path": t.name}}
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrInvalidKey): // a NUL: a name no file has
		return &contentError{status: http.StatusNotFound, code: CodeFileNotFound,
			message: fmt.Sprintf("Session '%s' has no file '%s' to serve.", t.sessionID, t.name),
			details: map[string]any{"sessionId": t.sessionID, "path": t.name}}
	}
	return err
}

func tooLarge(p string, size int64) error {
	msg := fmt.Sprintf("'%s' is %d bytes, more than one answer carries (%d); ask for it in parts with a Range header, e.g. 'Range: bytes=0-%d'.",
		p, size, MaxServedBytes, MaxServedBytes-1)
	if size > MaxServedFileBytes {
		msg = fmt.Sprintf("'%s' is %d bytes, more than the session API serves (%d), in ranges or not.", p, size, MaxServedFileBytes)
	}
	return &contentError{status: http.StatusRequestEntityTooLarge, code: CodeContentTooLarge, message: msg,
		details: map[string]any{"path": p, "size": size, "maxBytes": MaxServedBytes, "maxFileBytes": MaxServedFileBytes}}
}

// rangeHeader is the request's Range header and whether it has one.
func rangeHeader(req events.APIGatewayV2HTTPRequest) (string, bool) {
	v, ok := req.Headers["range"]
	return strings.TrimSpace(v), ok && strings.TrimSpace(v) != ""
}

// serveBytes answers data: 200 whole (at most MaxServedBytes), or 206 with one range of it
// (RFC 9110 §14: a single bytes range, at most MaxServedBytes of it served and Content-Range
// naming what was; several ranges, another unit, or an If-Range that is not this content's
// ETag are answered whole), 416 for a range that starts past the end.
func serveBytes(req events.APIGatewayV2HTTPRequest, data []byte, ctype, disposition, filename string) (events.APIGatewayV2HTTPResponse, error) {
	sum := sha256.Sum256(data)
	etag := `"` + hex.EncodeToString(sum[:16]) + `"`
	size := int64(len(data))
	status, body := http.StatusOK, data
	if size > MaxServedFileBytes { // not served at all, as tooLarge says: a range is not read either
		return events.APIGatewayV2HTTPResponse{}, tooLarge(filename, size)
	}
	var contentRange string
	if spec, ok := rangeHeader(req); ok {
		if ifRange, has := req.Headers["if-range"]; !has || strings.TrimSpace(ifRange) == etag {
			start, end, use, satisfiable := parseRange(spec, size)
			switch {
			case use && !satisfiable:
				return events.APIGatewayV2HTTPResponse{}, &contentError{status: http.StatusRequestedRangeNotSatisfiable, code: CodeRangeNotSatisfiable,
					message: fmt.Sprintf("The range '%s' does not overlap the content (%d bytes).", spec, size),
					details: map[string]any{"size": size}, headers: map[string]string{"Content-Range": fmt.Sprintf("bytes */%d", size)}}
			case use:
				end = min(end, start+MaxServedBytes-1)
				status, body = http.StatusPartialContent, data[start:end+1]
				contentRange = fmt.Sprintf("bytes %d-%d/%d", start, end, size)
			}
		}
	}
	if status == http.StatusOK && size > MaxServedBytes {
		return events.APIGatewayV2HTTPResponse{}, tooLarge(filename, size)
	}
	resp := events.APIGatewayV2HTTPResponse{
		StatusCode: status,
		Headers: map[string]string{
			"Content-Type":        ctype,
			"Content-Disposition": mime.FormatMediaType(disposition, map[string]string{"filename": filename}),
			"Cache-Control":       "no-store",
			"Accept-Ranges":       "bytes",
			"ETag":                etag,
		},
		Body:            base64.StdEncoding.EncodeToString(body),
		IsBase64Encoded: true,
	}
	if resp.Headers["Content-Disposition"] == "" { // a name mime cannot encode
		resp.Headers["Content-Disposition"] = disposition
	}
	if contentRange != "" {
		resp.Headers["Content-Range"] = contentRange
	}
	return resp, nil
}

// parseRange reads a Range header value against a size: use is false when it is to be
// ignored (another unit, several ranges, a malformed value — RFC 9110 §14.2 lets a server
// ignore it), satisfiable false when its one range starts past the end (or the content is
// empty), else [start, end] within the content.
func parseRange(v string, size int64) (start, end int64, use, satisfiable bool) {
	spec, ok := strings.CutPrefix(v, "bytes=")
	if !ok || strings.Contains(spec, ",") {
		return 0, 0, false, false
	}
	first, last, ok := strings.Cut(strings.TrimSpace(spec), "-")
	// a position or length too long for an int64 is past any content: a last position is
	// clamped to the end, a suffix length takes the whole, a first position is past the end
	num := func(s string) (int64, bool) {
		if s == "" || strings.Trim(s, "0123456789") != "" {
			return 0, false
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil { // digits alone: only a range error
			return math.MaxInt64, true
		}
		return n, true
	}
	switch {
	case !ok:
		return 0, 0, false, false
	case first == "": // the last n bytes
		n, ok := num(last)
		if !ok {
			return 0, 0, false, false
		}
		if n == 0 || size == 0 {
			return 0, 0, true, false
		}
		return max(size-n, 0), size - 1, true, true
	}
	a, ok := num(first)
	if !ok {
		return 0, 0, false, false
	}
	b := size - 1
	if last != "" {
		if b, ok = num(last); !ok || b < a {
			return 0, 0, false, false
		}
	}
	if a >= size {
		return 0, 0, true, false
	}
	return a, min(b, size-1), true, true
}

// fileType is the media type and disposition a session file is served with, by its
// extension alone (never by sniffing its bytes): text and images inline; HTML, SVG, XML and
// JavaScript as text/plain (their source, never rendered); PDFs and anything unknown as an
// attachment.
func fileType(p string) (ctype, disposition string) {
	const text = "text/plain; charset=utf-8"
	switch strings.ToLower(path.Ext(p)) {
	case ".txt", ".log", ".text", ".html", ".htm", ".xhtml", ".shtml", ".svg", ".svgz", ".xml", ".xsl", ".xslt", ".rss", ".atom",
		".js", ".mjs", ".cjs", ".jsx", ".ts", ".css", ".yaml", ".yml", ".toml", ".ini", ".sh", ".py", ".go", ".sql":
		return text, "inline"
	case ".md", ".markdown":
		return "text/markdown; charset=utf-8", "inline"
	case ".csv":
		return "text/csv; charset=utf-8", "inline"
	case ".tsv":
		return "text/tab-separated-values; charset=utf-8", "inline"
	case ".json":
		return "application/json", "inline"
	case ".jsonl", ".ndjson":
		return "application/x-ndjson", "inline"
	case ".png":
		return "image/png", "inline"
	case ".jpg", ".jpeg":
		return "image/jpeg", "inline"
	case ".gif":
		return "image/gif", "inline"
	case ".webp":
		return "image/webp", "inline"
	case ".pdf":
		return "application/pdf", "attachment"
	}
	return "application/octet-stream", "attachment"
}

// FileLink is the session API's route of a session-zone file: /v1/sessions/{id}/files/{path},
// every segment escaped.
func FileLink(sessionID, p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return sessionLocation(sessionID) + "/files/" + strings.Join(segs, "/")
}

// linkEvidence returns p with its decision's evidenceLinks filled (a copy: p itself, which
// may be the engine's, is left as it is). A delegated park's evidence is the child's own
// files: its links name the session whose decision it is.
func linkEvidence(p *session.Park, sessionID string) *session.Park {
	if p == nil || p.Decision == nil || len(p.Decision.Evidence) == 0 {
		return p
	}
	owner := sessionID
	for d := p.Delegation; d != nil; d = d.Inner {
		owner = d.SessionID
	}
	cp, dec := *p, *p.Decision
	dec.EvidenceLinks = make([]session.EvidenceLink, 0, len(dec.Evidence))
	for _, e := range dec.Evidence {
		dec.EvidenceLinks = append(dec.EvidenceLinks, session.EvidenceLink{Path: e, Href: FileLink(owner, e)})
	}
	cp.Decision = &dec
	return &cp
}
