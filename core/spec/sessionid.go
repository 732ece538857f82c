package spec

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
)

// MaxSessionIDBytes caps a session id's length in bytes (spec 01 §6.3, this bundle).
const MaxSessionIDBytes = 512

// SessionAreaNames are the session areas in sessionAreaNames() order: internal,
// offload, open (spec 01 §6.5). A session id's first segment may never be one.
var SessionAreaNames = []string{"checkpoints", "artifacts", "_specs", "large_tool_results", "conversation_history", "scratchpad"}

// AuthoringPrefix is the authoring plane's root, reserved for session ids (spec 01 §6.5).
const AuthoringPrefix = "workflows"

// HostFile is the host configuration at the workspace root (core/hostconfig, DESIGN §10):
// on the authoring plane, served by no route and reachable by no caller.
const HostFile = "archmax.host.yaml"

// StoreInternalNames are the top-level names the stores keep for themselves in the session
// files tree, beside the session folders: the outbox markers (_outbox/<sessionId>, every
// session's) and the large-value area's name (_blobs, a session's own <sessionId>/_blobs/ on
// S3). A session id's first segment may never be one (RD22-13), so no session's folder is,
// or aliases, a store's own. (The other internal names cannot be session ids: "_specs" is a
// session area, the S3 idempotency blobs' "~idempotency" starts with '~', and the fs
// store's "%names", "%format" and "%tmp-…" are never a session folder's encoded name,
// which escapes '%'.)
var StoreInternalNames = []string{"_outbox", "_blobs"}

// DefaultMountRoots are the first segments of the default mounts (spec 01 §6.5),
// reserved for session ids in this bundle whether or not a mount table is supplied.
var DefaultMountRoots = []string{"skills", ".platform", "AGENTS.md"}

// Session-id refusal reasons (spec 01 §6.3). The first three are the reference's exact
// texts, the "/" one is the bundle deviation's.
const (
	sessionIDEmpty     = "it must not be empty"
	sessionIDTraversal = "it must stay within the session zone (no absolute paths or '..' traversal)"
	sessionIDSlash     = "it must not contain '/'"
	sessionIDBackslash = `it must not contain '\'`
	sessionIDDot       = "it must not be '.'"
	sessionIDTilde     = "'~' may only separate a parent session id from a dispatch number (e.g. 'chat-42~1')"
	sessionIDTooLong   = "it must be at most 512 bytes"
	sessionIDControl   = "it must not contain control characters"
	sessionIDEncoding  = "it must be valid UTF-8"
)

// legacyChildPart is the reference's <state>:<workflow>:<ordinal> dispatch identity.
var legacyChildPart = regexp.MustCompile(`^[^~:]+:[^~:]+:\d+$`)

// SessionIDRejection is sessionIdRejection (spec 01 §6.3, 02 §9.2): "" when id can own
// a session folder, else the reason. Rules, in order, after stripping leading '/':
// empty; a '..' segment (split on '/' or '\'); a reserved first segment (a session
// area, "workflows", a default mount root, a store-internal name, or the first segment of one of mounts —
// compared ignoring case, ReservedName);
// '~' outside a child's shape (<root>~<n>[~<n>…], n a positive decimal without leading
// zeros or the legacy <state>:<workflow>:<ordinal>, the root passing every rule); then
// this bundle's hardening: no '/' or '\' at all, not ".", at most MaxSessionIDBytes
// bytes, valid UTF-8, no control character (U+0000–U+001F, U+007F).
func SessionIDRejection(id string, mounts ...string) string {
	rel := strings.TrimLeft(id, "/")
	if rel == "" {
		return sessionIDEmpty
	}
	segments := strings.FieldsFunc(rel, func(r rune) bool { return r == '/' || r == '\\' })
	if slices.Contains(segments, "..") {
		return sessionIDTraversal
	}
	if len(segments) > 0 && isReservedRoot(segments[0], mounts) {
		return "'" + segments[0] + "' is reserved at the workspace root (a session area or an authored mount)"
	}
	if root, children, isChild := strings.Cut(rel, "~"); isChild {
		if root == "" {
			return sessionIDTilde
		}
		if reason := SessionIDRejection(root, mounts...); reason != "" {
			return reason
		}
		for _, part := range strings.Split(children, "~") {
			if !isChildPart(part) {
				return sessionIDTilde
			}
		}
	}
	switch {
	case strings.Contains(rel, "/"):
		return sessionIDSlash
	case strings.Contains(rel, `\`):
		return sessionIDBackslash
	case rel == ".":
		return sessionIDDot
	case len(rel) > MaxSessionIDBytes:
		return sessionIDTooLong
	case !utf8.ValidString(rel):
		return sessionIDEncoding
	case strings.ContainsFunc(rel, func(r rune) bool { return r < 0x20 || r == 0x7F }):
		return sessionIDControl
	}
	return ""
}

// CheckSessionID applies SessionIDRejection where an id becomes a store address and
// returns the store-relative id (leading '/' stripped), or *SessionStoreIdError
// (`Invalid session id "<id>": <reason>.`) naming the id as given (spec 01 §6.3).
func CheckSessionID(id string, mounts ...string) (string, error) {
	if reason := SessionIDRejection(id, mounts...); reason != "" {
		return "", &SessionStoreIdError{ID: id, Reason: reason}
	}
	return strings.TrimLeft(id, "/"), nil
}

// isReservedRoot reports whether a first segment collides with the store root. Names are
// compared ignoring case (ReservedName), so "_SPECS" or "Checkpoints" never owns a session
// folder a case-insensitive store would alias with the area.
func isReservedRoot(segment string, mounts []string) bool {
	if ReservedName(segment, AuthoringPrefix) || ReservedName(segment, SessionAreaNames...) || ReservedName(segment, DefaultMountRoots...) ||
		ReservedName(segment, StoreInternalNames...) {
		return true
	}
	for _, m := range mounts {
		if first, _, _ := strings.Cut(strings.Trim(m, "/"), "/"); first != "" && ReservedName(segment, first) {
			return true
		}
	}
	return false
}

// ReservedName reports whether name is one of the reserved names, compared ignoring case:
// Unicode simple case folding (strings.EqualFold), which covers ASCII and also the letters
// that fold onto ASCII ones (KELVIN SIGN onto "k", LONG S onto "s"), as the case-insensitive
// file systems (APFS, NTFS) compare them. Every refusal of a reserved session area, zone or
// mount root goes through it; no normalisation beyond case is applied (the reserved names are
// ASCII, which canonical normalisation leaves alone).
func ReservedName(name string, reserved ...string) bool {
	return slices.ContainsFunc(reserved, func(r string) bool { return strings.EqualFold(name, r) })
}

// isChildPart reports whether one '~'-separated part below a root is child-shaped: a
// positive decimal without leading zeros, or the legacy <state>:<workflow>:<ordinal>.
func isChildPart(part string) bool {
	if legacyChildPart.MatchString(part) {
		return true
	}
	if part == "" || part[0] == '0' {
		return false
	}
	for _, r := range part {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// MintSessionID mints a session id for a firing no path names: "session-" and a
// lowercase UUID v4 (spec 01 §4.9).
func MintSessionID() string { return "session-" + uuid.NewString() }

// ChildSessionID is the id of a parent's n-th dispatched child, "<parent>~<n>"; n counts
// from 1 across all the parent's turns (spec 01 §6.4).
func ChildSessionID(parent string, n int) string { return parent + "~" + strconv.Itoa(n) }

// ParentSessionIDOf returns the text before id's last '~' when the part after it is
// child-shaped and non-empty text precedes it; false for a root id such as
// "tenant~conversation" (spec 01 §6.4).
func ParentSessionIDOf(id string) (string, bool) {
	at := strings.LastIndex(id, "~")
	if at <= 0 || !isChildPart(id[at+1:]) {
		return "", false
	}
	return id[:at], true
}

// RootSessionIDOf returns the top-level session of id: the text before its first '~'
// (id itself when it has none) (spec 01 §6.4).
func RootSessionIDOf(id string) string {
	root, _, _ := strings.Cut(id, "~")
	return root
}

// DispatchIDOf returns a child's id below its root ("root~1" ⇒ "1", "root~1~2" ⇒
// "1~2"), or "" for an id with no '~' (spec 01 §6.4).
func DispatchIDOf(id string) string {
	_, dispatch, _ := strings.Cut(id, "~")
	return dispatch
}

// IsChildSessionOf reports whether id is a session dispatched by parent at any depth:
// it starts with "<parent>~" and every '~'-separated part below is child-shaped
// (spec 01 §6.4).
func IsChildSessionOf(id, parent string) bool {
	rest, ok := strings.CutPrefix(id, parent+"~")
	if !ok {
		return false
	}
	for _, part := range strings.Split(rest, "~") {
		if !isChildPart(part) {
			return false
		}
	}
	return true
}
