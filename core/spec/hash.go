package spec

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/archmax-ai/archmax/core/yamltree"
)

// Hash is the specHash (spec 01 §9.1): the first 32 lowercase hex characters of
// SHA-256 over stableStringify of the governing document — the document as parsed,
// null states as {}, no defaults, metadata removed at the root and on every state —
// with object keys sorted by UTF-16 code units, no whitespace, strings escaped as
// JSON.stringify does and numbers rendered as ECMAScript does. Comments, formatting,
// quoting, key order and metadata do not change it; list order and values do. A spec
// not built by Parse hashes as the empty document {}.
func (s *MachineSpec) Hash() string {
	sum := sha256.Sum256(appendJSON(nil, s.governing(), true))
	return hex.EncodeToString(sum[:])[:32]
}

// SnapshotJSON is the persisted snapshot (spec 01 §9.2): the governing document of
// Hash as JSON indented by two spaces (JSON.stringify(doc, null, 2)), keys in
// document order, no metadata. It is not the hashed text.
func (s *MachineSpec) SnapshotJSON() []byte {
	return appendIndented(nil, s.governing(), "")
}

func (s *MachineSpec) governing() *node {
	if s.doc == nil {
		return &node{Kind: yamltree.Map}
	}
	return s.doc
}

// appendJSON writes n as compact JSON; sorted orders object keys by UTF-16 code
// units (stableStringify), otherwise document order (JSON.stringify).
func appendJSON(b []byte, n *node, sorted bool) []byte {
	switch n.Kind {
	case yamltree.Seq:
		b = append(b, '[')
		for i, it := range n.Items {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSON(b, it, sorted)
		}
		return append(b, ']')
	case yamltree.Map:
		entries := n.Entries
		if sorted {
			entries = slices.Clone(entries)
			slices.SortFunc(entries, func(a, c entry) int { return compareUTF16(a.Key, c.Key) })
		}
		b = append(b, '{')
		for i, e := range entries {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendJSONString(b, e.Key)
			b = append(b, ':')
			b = appendJSON(b, e.Val, sorted)
		}
		return append(b, '}')
	}
	return appendScalar(b, n)
}

// appendIndented writes n as JSON.stringify(n, null, 2) does.
func appendIndented(b []byte, n *node, indent string) []byte {
	inner := indent + "  "
	switch {
	case n.Kind == yamltree.Seq && len(n.Items) > 0:
		b = append(b, '[')
		for i, it := range n.Items {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(append(b, '\n'), inner...)
			b = appendIndented(b, it, inner)
		}
		return append(append(append(b, '\n'), indent...), ']')
	case n.Kind == yamltree.Map && len(n.Entries) > 0:
		b = append(b, '{')
		for i, e := range n.Entries {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(append(b, '\n'), inner...)
			b = append(AppendJSONString(b, e.Key), ": "...)
			b = appendIndented(b, e.Val, inner)
		}
		return append(append(append(b, '\n'), indent...), '}')
	}
	return appendJSON(b, n, false)
}

func appendScalar(b []byte, n *node) []byte {
	switch n.Kind {
	case yamltree.String:
		return AppendJSONString(b, n.Str)
	case yamltree.Number:
		if math.IsNaN(n.Num) || math.IsInf(n.Num, 0) {
			return append(b, "null"...) // JSON.stringify writes non-finite numbers as null
		}
		return append(b, FormatJSNumber(n.Num)...)
	case yamltree.Bool:
		if n.Truth {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	}
	return append(b, "null"...)
}

// AppendJSONString quotes s as JSON.stringify does: `"` and `\` escaped, \b \f \n \r
// \t short forms, other C0 controls as \u00xx, nothing else escaped. Invalid UTF-8
// bytes are written as U+FFFD.
func AppendJSONString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	for _, r := range s {
		switch r {
		case '"':
			b = append(b, `\"`...)
		case '\\':
			b = append(b, `\\`...)
		case '\b':
			b = append(b, `\b`...)
		case '\f':
			b = append(b, `\f`...)
		case '\n':
			b = append(b, `\n`...)
		case '\r':
			b = append(b, `\r`...)
		case '\t':
			b = append(b, `\t`...)
		default:
			if r < 0x20 {
				b = append(b, '\\', 'u', '0', '0', hexDigits[r>>4], hexDigits[r&0xf])
				continue
			}
			b = utf8.AppendRune(b, r)
		}
	}
	return append(b, '"')
}

// compareUTF16 orders strings by their UTF-16 code units, as JavaScript's < does: it
// differs from code-point order only where a supplementary character (a surrogate
// pair, 0xD800–0xDBFF first) meets a BMP character above U+DFFF.
func compareUTF16(a, c string) int {
	for a != "" && c != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rc, nc := utf8.DecodeRuneInString(c)
		if ra != rc {
			if ua, uc := firstUnit(ra), firstUnit(rc); ua != uc {
				return cmp.Compare(ua, uc)
			}
			return cmp.Compare(ra, rc) // same high surrogate: low surrogates follow code points
		}
		a, c = a[na:], c[nc:]
	}
	return strings.Compare(a, c) // the shorter (a prefix) sorts first
}

// firstUnit is the first UTF-16 code unit of r.
func firstUnit(r rune) rune {
	if r >= 0x10000 {
		return 0xD800 + (r-0x10000)>>10
	}
	return r
}
