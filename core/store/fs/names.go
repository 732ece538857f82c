package fs

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// File names of the store's own trees (the session log's session folders and every segment
// of a session-files key). A key segment is whatever the spec accepts — a session id such as
// "a:b:3" or "Chat", a file the model names "Report.md", "x." or "CON" — while file systems
// alter or alias names: case-insensitive ones (APFS, NTFS, exFAT — macOS's and Windows'
// defaults) make "A" and "a" one file, APFS also identifies Unicode canonical equivalents,
// Windows strips trailing dots and spaces, reserves CON, PRN, AUX, NUL, COM0–9 and LPT0–9
// (with any extension), refuses : \ * ? " < > | and control characters, and answers 8.3 short
// names (PROGRA~1). So each segment is stored under an encoding whose names no such file
// system alters or aliases:
//
//   - a–z, 0–9, '-' and '_' stand for themselves, and so does '.' except at the end;
//   - an upper-case ASCII letter is '!' and the letter in lower case ("Chat" → "!chat"),
//     as the Go module cache spells module paths;
//   - every other byte — a trailing '.', a space, ':', '~', '!', '%', '=', control
//     characters, each byte of a non-ASCII character — is '%' and two lower-case hex digits;
//   - a name whose part before its first '.' is a Windows device name gets its first letter
//     escaped ("con" → "%63on", "nul.txt" → "%6eul.txt").
//
// Encoded names are ASCII without upper case, so two keys differing in any way — case
// included — never share a file. Only the canonical encoding of a segment is ever a key:
// any other name in the tree (a temp file, a file put there by hand) is not listed.
//
// A name whose encoding is longer than maxNameBytes is stored as "%h" and the SHA-256 of the
// segment in hex, and the segment itself is kept in the tree's dictionary (namesDir/<hex>),
// which listings read to name the entry. Dictionary entries are content-addressed and tiny:
// only a folder's delete removes any — those of the names in it that contain the folder's own
// name, under the session's lease (DeleteFolder, RD22-21) — so no removal races a writer
// that needs one.

// maxNameBytes is the longest file name the common file systems store (255 bytes or
// UTF-16 units; encoded names are ASCII).
const maxNameBytes = 255

const (
	hashedPrefix = "%h"     // an over-long segment's name: "%h" + 64 hex digits
	namesDir     = "%names" // the dictionary of over-long segments, at the tree's root
	formatFile   = "%format"
)

// encodeName is the portable file name of one key segment (see above), before the
// over-long rule.
func encodeName(seg string) string {
	var b strings.Builder
	b.Grow(len(seg) + 8)
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '_', c == '.' && i < len(seg)-1:
			b.WriteByte(c)
		case 'A' <= c && c <= 'Z':
			b.WriteByte('!')
			b.WriteByte(c + 'a' - 'A')
		default:
			escape(&b, c)
		}
	}
	name := b.String()
	if isDeviceName(name) {
		var e strings.Builder
		escape(&e, name[0])
		name = e.String() + name[1:]
	}
	return name
}

const hexDigits = "0123456789abcdef"

func escape(b *strings.Builder, c byte) {
	b.WriteByte('%')
	b.WriteByte(hexDigits[c>>4])
	b.WriteByte(hexDigits[c&15])
}

// isDeviceName reports whether Windows reserves name: CON, PRN, AUX, NUL, COM0–COM9 or
// LPT0–LPT9 before the first '.', in any case.
func isDeviceName(name string) bool {
	base, _, _ := strings.Cut(strings.ToLower(name), ".")
	switch base {
	case "con", "prn", "aux", "nul":
		return true
	}
	return len(base) == 4 && (strings.HasPrefix(base, "com") || strings.HasPrefix(base, "lpt")) && '0' <= base[3] && base[3] <= '9'
}

// decodeName returns the segment whose canonical encoding is name; ok is false for any
// other name (not a key of the tree).
func decodeName(name string) (string, bool) {
	if name == "" {
		return "", false
	}
	b := make([]byte, 0, len(name))
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case c == '!':
			if i+1 >= len(name) || name[i+1] < 'a' || name[i+1] > 'z' {
				return "", false
			}
			b = append(b, name[i+1]-'a'+'A')
			i++
		case c == '%':
			if i+2 >= len(name) {
				return "", false
			}
			hi, lo := strings.IndexByte(hexDigits, name[i+1]), strings.IndexByte(hexDigits, name[i+2])
			if hi < 0 || lo < 0 {
				return "", false
			}
			b = append(b, byte(hi<<4|lo))
			i += 2
		default:
			b = append(b, c)
		}
	}
	seg := string(b)
	if encodeName(seg) != name { // a non-canonical spelling is not a key
		return "", false
	}
	return seg, true
}

// fileName is the name segment is stored under, and the dictionary digest when it is
// over-long ("" otherwise).
func fileName(seg string) (name, digest string) {
	name = encodeName(seg)
	if len(name) <= maxNameBytes {
		return name, ""
	}
	sum := sha256.Sum256([]byte(seg))
	digest = hex.EncodeToString(sum[:])
	return hashedPrefix + digest, digest
}

// hashedDigest returns the digest of a name stored under the over-long rule.
func hashedDigest(name string) (string, bool) {
	digest, ok := strings.CutPrefix(name, hashedPrefix)
	if !ok || len(digest) != 2*sha256.Size || strings.Trim(digest, hexDigits) != "" {
		return "", false
	}
	return digest, true
}

// sessionDirName is the session log's folder name of a session id: its encoding, or "=" and
// the id's SHA-256 in hex when that is longer than maxDirName (head.json keeps the id). The
// encoding escapes '=', so the two forms never meet.
func sessionDirName(sessionID string) string {
	name := encodeName(sessionID)
	if len(name) > maxDirName {
		sum := sha256.Sum256([]byte(sessionID))
		name = "=" + hex.EncodeToString(sum[:])
	}
	return name
}
