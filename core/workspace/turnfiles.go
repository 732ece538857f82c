package workspace

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// AttachmentsDir is the session folder turn files are placed in (spec 02 §1.8).
const AttachmentsDir = "scratchpad/attachments"

// maxNameBytes bounds a turn file's name (02 §1.8).
const maxNameBytes = 255

// ErrInvalidAttachmentName is wrapped by ValidAttachmentName's errors, whose text then
// names the cause.
var ErrInvalidAttachmentName = errors.New("not a plain file name")

// ValidAttachmentName checks a turn file's name (spec 02 §1.8, "not a plain file name"):
// not empty, "." or "..", no '/', '\', NUL or other control character, at most 255 bytes.
// A failure wraps ErrInvalidAttachmentName; its text is the cause the engine's
// InvalidTurnFileError names.
func ValidAttachmentName(name string) error {
	var cause string
	switch {
	case name == "":
		cause = "it is empty"
	case name == "." || name == "..":
		cause = "it is '" + name + "'"
	case strings.ContainsAny(name, `/\`):
		cause = "it contains a path separator"
	case strings.ContainsFunc(name, unicode.IsControl):
		cause = "it contains a control character"
	case len(name) > maxNameBytes:
		cause = "it is longer than " + strconv.Itoa(maxNameBytes) + " bytes"
	default:
		return nil
	}
	return fmt.Errorf("%w: %s", ErrInvalidAttachmentName, cause)
}

// PlaceAttachment writes a turn file's bytes exactly under AttachmentsDir and returns the
// placed session-relative path (spec 02 §1.8): "scratchpad/attachments/<name>", or when
// that is taken the first free "<stem>-1<ext>", "<stem>-2<ext>", … (<ext> is the last
// extension with its dot, none for a leading-dot name: "a.tar.gz" → "a.tar-1.gz", ".env" →
// ".env-1"). An existing file or folder is never overwritten; the write is conditional, so
// concurrent placements get distinct names. A name failing ValidAttachmentName returns its
// error; a store failure is returned wrapped.
func (w *Workspace) PlaceAttachment(ctx context.Context, name string, data []byte) (string, error) {
	if err := ValidAttachmentName(name); err != nil {
		return "", err
	}
	stem, ext := name, ""
	if dot := strings.LastIndexByte(name, '.'); dot > 0 {
		stem, ext = name[:dot], name[dot:]
	}
	candidate := name
	for n := 1; ; n++ {
		p := AttachmentsDir + "/" + candidate
		r := route{files: w.session, key: w.sessionID + "/" + p}
		why, err := w.conflict(ctx, p, r)
		if err != nil {
			return "", fmt.Errorf("workspace: place attachment %q: %w", name, err)
		}
		switch why {
		case "":
			wrote, err := r.files.WriteIfAbsent(ctx, r.key, data)
			if err != nil {
				return "", fmt.Errorf("workspace: place attachment %q: %w", name, err)
			}
			if wrote {
				return p, nil
			}
		case reasonDir: // a folder holds the name: try the next
		default:
			return "", fmt.Errorf("workspace: place attachment %q: %s", name, why)
		}
		candidate = stem + "-" + strconv.Itoa(n) + ext
	}
}
