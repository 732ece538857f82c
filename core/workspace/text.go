package workspace

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"strconv"
	"strings"
	"syscall"
	"unicode"
	"unicode/utf8"

	"github.com/archmax-ai/archmax/core/store"
)

// resultCap is the size cap of a tool result in JavaScript string length (UTF-16 code
// units): 4 × deepagents' toolTokenLimitBeforeEvict default of 20,000 (BR-41).
const resultCap = 80_000

// binaryMIMETypes is BR-20's BINARY_MIME_TYPES: extension (lower-case, no dot) → type.
var binaryMIMETypes = map[string]string{
	"png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif",
	"webp": "image/webp", "heic": "image/heic", "heif": "image/heif",
	"mp3": "audio/mpeg", "wav": "audio/wav", "aiff": "audio/aiff", "aac": "audio/aac",
	"ogg": "audio/ogg", "flac": "audio/flac",
	"mp4": "video/mp4", "webm": "video/webm", "mpeg": "video/mpeg", "mpg": "video/mpeg",
	"mov": "video/quicktime", "avi": "video/x-msvideo", "flv": "video/x-flv",
	"wmv": "video/x-ms-wmv", "3gpp": "video/3gpp",
	"pdf":  "application/pdf",
	"ppt":  "application/vnd.ms-powerpoint",
	"pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
}

// binaryType returns the BR-20 table's type for the canonical path's extension (from the
// last dot of the last segment, not a leading dot, lower-cased), or "" when the path is
// not binary-typed. Every type in the table is non-text.
func binaryType(p string) string {
	name := p[strings.LastIndexByte(p, '/')+1:]
	dot := strings.LastIndexByte(name, '.')
	if dot <= 0 {
		return ""
	}
	return binaryMIMETypes[strings.ToLower(name[dot+1:])]
}

// tenths renders n/unit with one decimal, rounding half up.
func tenths(n, unit int64) string {
	t := (n*20 + unit) / (2 * unit)
	return strconv.FormatInt(t/10, 10) + "." + strconv.FormatInt(t%10, 10)
}

// decodeText decodes file bytes as UTF-8, bad bytes becoming U+FFFD (BR-49).
func decodeText(data []byte) string {
	if utf8.Valid(data) {
		return string(data)
	}
	return strings.ToValidUTF8(string(data), "\uFFFD")
}

// hasNUL reports whether content must be treated as binary (BR-20).
func hasNUL(data []byte) bool { return bytes.IndexByte(data, 0) >= 0 }

// isBlank reports whether s is empty or only whitespace as JavaScript's trim() sees it.
func isBlank(s string) bool {
	return strings.TrimFunc(s, func(r rune) bool { return unicode.IsSpace(r) || r == '\uFEFF' }) == ""
}

// jsLen is the JavaScript length of s: UTF-16 code units.
func jsLen[T string | []byte](s T) int {
	n := len(s)
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return jsLenSlow(string(s))
		}
	}
	return n
}

func jsLenSlow(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r >= 0x10000 {
			n++
		}
	}
	return n
}

// jsPrefix returns the longest prefix of s whose JavaScript length is at most n (a
// surrogate pair is never split).
func jsPrefix(s string, n int) string {
	used := 0
	for i, r := range s {
		w := 1
		if r >= 0x10000 {
			w = 2
		}
		if used+w > n {
			return s[:i]
		}
		used += w
	}
	return s
}

// reason classifies a store error for a tool result (BR-22, BR-49): a store's own error
// text is never relayed.
func reason(err error) string {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return reasonMissing
	case errors.Is(err, fs.ErrPermission):
		return reasonDenied
	case errors.Is(err, store.ErrUnsupported):
		return reasonCannot
	case isSymlinkRefusal(err):
		return reasonSymlink
	default:
		return reasonRefused
	}
}

// isSymlinkRefusal reports whether err is a file tree refusing a symbolic link: a loop, or
// os.Root's refusal of a link leading out of the tree (an unexported error, known only by
// its text).
func isSymlinkRefusal(err error) bool {
	var pe *fs.PathError
	return errors.Is(err, syscall.ELOOP) || errors.As(err, &pe) && pe.Err.Error() == "path escapes from parent"
}

// storeFailure returns the context's error when err is due to cancellation (the engine
// abandons the call), else nil: the failure is reported to the model as a result.
func storeFailure(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}
