package kernel

import (
	"strings"

	"github.com/gobwas/glob"

	"github.com/archmax-ai/archmax/core/spec"
)

// Argument guards on values that are not paths (GOV-30; docs/DECISIONS.md K17-1…K17-3). A
// declared path argument is matched in its canonical form with doublestar (matchAny). Any
// other argument — a URL, a command, a region — is matched on the text the tool's handler
// receives:
//
//   - a forbid entry matches when the glob matches the value with '*' also crossing '/'
//     (and the value with its dot segments resolved, and either in lower case): widening a
//     denial fails safe, so `https://evil.example/*` denies `https://EVIL.example/a/b`,
//     `https://api.example/*/../admin*` denies `https://api.example/v1/%2e%2e/admin`, and
//     `*rm -rf*` denies `rm -rf /home/x`;
//   - an allow entry matches only when the glob matches with '*' not crossing '/' (the
//     reference's semantics) and the value holds no '.' or '..' segment (also written
//     %2e) and no '\' (plainValue), so `https://api.example.com/v1/../admin` never passes
//     `https://api.example.com/v1/*`, and `us-east-1/../eu-west-1` never passes `eu-*`.

// matchAnyWide is matchAny for a forbid guard on a non-path value (see above). A glob that
// does not compile matches (fails closed).
func (p *Policy) matchAnyWide(globs []string, value string) (bool, *spec.UnresolvedReference, string) {
	candidates := []string{value, resolveDots(value)}
	for _, c := range candidates[:2] {
		candidates = append(candidates, strings.ToLower(c))
	}
	for _, g := range globs {
		resolved := g
		if spec.HasVariableReference(g) {
			r, unres := spec.ResolveGlob(g, p.Variables)
			if unres != nil {
				return false, unres, g
			}
			resolved = r
		}
		for _, pattern := range []string{resolved, strings.ToLower(resolved)} {
			m, err := glob.Compile(pattern) // no separators: '*' crosses '/'
			if err != nil {
				return true, nil, ""
			}
			for _, c := range candidates {
				if m.Match(c) {
					return true, nil, ""
				}
			}
		}
	}
	return false, nil, ""
}

// plainValue reports whether a non-path value may be admitted by an allow guard: no '\'
// and no '.' or '..' segment between slashes, written plainly or percent-encoded (empty
// segments, such as a URL's '//' after its scheme, are fine).
func plainValue(v string) bool {
	if strings.ContainsRune(v, '\\') {
		return false
	}
	for seg := range strings.SplitSeq(v, "/") {
		if d := decodeDots(seg); d == "." || d == ".." {
			return false
		}
	}
	return true
}

// decodeDots reads a segment's percent-encoded dots ("%2e", any case) as dots.
func decodeDots(seg string) string {
	if !strings.Contains(seg, "%") {
		return seg
	}
	return strings.NewReplacer("%2e", ".", "%2E", ".").Replace(seg)
}

// resolveDots resolves the '.' and '..' segments of a '/'-separated value (percent-encoded
// ones too) the way a server normalising a URL path would, keeping a leading
// "<scheme>://<authority>" and never climbing above it; a value without them is returned
// as is.
func resolveDots(v string) string {
	prefix, rest := "", v
	if i := strings.Index(v, "://"); i >= 0 {
		j := strings.IndexByte(v[i+3:], '/')
		if j < 0 {
			return v
		}
		prefix, rest = v[:i+3+j], v[i+3+j:]
	}
	segs := strings.Split(rest, "/")
	out := make([]string, 0, len(segs))
	changed := false
	for _, s := range segs {
		switch decodeDots(s) {
		case ".":
			changed = true
		case "..":
			changed = true
			if len(out) > 1 || (len(out) == 1 && out[0] != "") {
				out = out[:len(out)-1]
			}
		default:
			out = append(out, s)
		}
	}
	if !changed {
		return v
	}
	return prefix + strings.Join(out, "/")
}
