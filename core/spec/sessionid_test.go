package spec

import (
	"errors"
	"regexp"
	"strings"
	"testing"
)

// Spec 01 §6.3 rule order and this bundle's deviation; 02 §9.2.
func TestSessionIDRejection(t *testing.T) {
	const (
		traversal = "it must stay within the session zone (no absolute paths or '..' traversal)"
		tilde     = "'~' may only separate a parent session id from a dispatch number (e.g. 'chat-42~1')"
	)
	reserved := func(s string) string {
		return "'" + s + "' is reserved at the workspace root (a session area or an authored mount)"
	}
	tests := []struct{ id, want string }{
		// accepted
		{"chat-42", ""},
		{"/abs", ""},
		{"//abs", ""},
		{"s1~1", ""},
		{"s1~1~2", ""},
		{"s1~review:enrich-order:3", ""},
		{"session-0f8fad5b-d9cb-469f-a165-70867728950e", ""},
		{"tenant.conversation", ""},
		{"skills-x", ""},
		{"..a", ""},
		{strings.Repeat("a", 512), ""},
		{"ünïcode", ""},
		// rule 1
		{"", "it must not be empty"},
		{"/", "it must not be empty"},
		{"///", "it must not be empty"},
		// rule 2
		{"..", traversal},
		{"/..", traversal},
		{"a/../b", traversal},
		{`a\..\b`, traversal},
		// rule 3
		{"scratchpad", reserved("scratchpad")},
		{"_specs", reserved("_specs")},
		{"checkpoints", reserved("checkpoints")},
		{"artifacts", reserved("artifacts")},
		{"large_tool_results", reserved("large_tool_results")},
		{"conversation_history", reserved("conversation_history")},
		{"workflows", reserved("workflows")},
		{"skills", reserved("skills")},
		{".platform", reserved(".platform")},
		{"AGENTS.md", reserved("AGENTS.md")},
		{"scratchpad/x", reserved("scratchpad")},
		{"/workflows", reserved("workflows")},
		{"scratchpad~1", reserved("scratchpad")},
		// rule 3 ignores case (Unicode simple folding): a case-insensitive store would alias them
		{"_SPECS", reserved("_SPECS")},
		{"Checkpoints", reserved("Checkpoints")},
		{"ARTIFACTS", reserved("ARTIFACTS")},
		{"Scratchpad~1", reserved("Scratchpad")},
		{"Workflows", reserved("Workflows")},
		{"SKILLS", reserved("SKILLS")},
		{".Platform", reserved(".Platform")},
		{"agents.md", reserved("agents.md")},
		{"checKpoints", reserved("checKpoints")},
		{"chec\u212apoints", reserved("chec\u212apoints")}, // KELVIN SIGN folds to k
		{"_\u017fpecs", reserved("_\u017fpecs")},           // LATIN SMALL LETTER LONG S folds to s
		{"Checkpoints-1", ""},
		// the stores' own top-level names (RD22-13): a session "_outbox" would own every
		// session's outbox markers
		{"_outbox", reserved("_outbox")},
		{"_OUTBOX", reserved("_OUTBOX")},
		{"_Outbox~1", reserved("_Outbox")},
		{"/_outbox", reserved("_outbox")},
		{"_blobs", reserved("_blobs")},
		{"_Blobs", reserved("_Blobs")},
		{"~idempotency", tilde},
		{"_outbox-1", ""},
		// rule 4
		{"a~b", tilde},
		{"~1", tilde},
		{"a~", tilde},
		{"a~0", tilde},
		{"a~01", tilde},
		{"a~1~", tilde},
		{"a~1~x", tilde},
		{"a~s:w", tilde},
		{"..~1", traversal},
		// this bundle
		{"a/b", "it must not contain '/'"},
		{"a/", "it must not contain '/'"},
		{"a//b", "it must not contain '/'"},
		{"run-7/workflows/x/tests/a.test.yaml", "it must not contain '/'"},
		{`a\b`, `it must not contain '\'`},
		{".", "it must not be '.'"},
		{strings.Repeat("a", 513), "it must be at most 512 bytes"},
		{strings.Repeat("é", 257), "it must be at most 512 bytes"},
		{"a\x00b", "it must not contain control characters"},
		{"a\tb", "it must not contain control characters"},
		{"a\x7fb", "it must not contain control characters"},
		{"a\xffb", "it must be valid UTF-8"},
	}
	for _, tt := range tests {
		if got := SessionIDRejection(tt.id); got != tt.want {
			t.Errorf("SessionIDRejection(%q) = %q, want %q", tt.id, got, tt.want)
		}
	}
}

// Spec 01 §6.5: a supplied mount table reserves each mount's first segment.
func TestSessionIDRejectionMounts(t *testing.T) {
	if got := SessionIDRejection("catalogs", "/catalogs/eu/"); got != "'catalogs' is reserved at the workspace root (a session area or an authored mount)" {
		t.Errorf("mount first segment: %q", got)
	}
	if got := SessionIDRejection("Catalogs", "/catalogs/eu/"); got != "'Catalogs' is reserved at the workspace root (a session area or an authored mount)" {
		t.Errorf("mount first segment in another case: %q", got)
	}
	if got := SessionIDRejection("contracts", "/catalogs/eu/"); got != "" {
		t.Errorf("unrelated id refused: %q", got)
	}
	if got := SessionIDRejection("subagents"); got != "" {
		t.Errorf("subagents is not reserved, got %q", got)
	}
}

func TestCheckSessionID(t *testing.T) {
	got, err := CheckSessionID("/abs")
	if err != nil || got != "abs" {
		t.Fatalf("CheckSessionID(/abs) = %q, %v; want abs", got, err)
	}
	tests := []struct{ id, want string }{
		{"..", `Invalid session id "..": it must stay within the session zone (no absolute paths or '..' traversal).`},
		{"a/b", `Invalid session id "a/b": it must not contain '/'.`},
		{"a\x01\"<", `Invalid session id "a\u0001\"<": it must not contain control characters.`},
	}
	for _, tt := range tests {
		_, err := CheckSessionID(tt.id)
		var typed *SessionStoreIdError
		if !errors.As(err, &typed) || typed.ID != tt.id {
			t.Fatalf("CheckSessionID(%q) = %#v, want *SessionStoreIdError", tt.id, err)
		}
		if err.Error() != tt.want {
			t.Errorf("message\n got %s\nwant %s", err.Error(), tt.want)
		}
	}
}

// Spec 01 §4.9: session-<lowercase uuid v4>, accepted by the session-id rule.
func TestMintSessionID(t *testing.T) {
	shape := regexp.MustCompile(`^session-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	a, b := MintSessionID(), MintSessionID()
	if !shape.MatchString(a) || a == b {
		t.Fatalf("minted %q, %q", a, b)
	}
	if r := SessionIDRejection(a); r != "" {
		t.Errorf("minted id refused: %s", r)
	}
}

// Spec 01 §6.4.
func TestChildSessionHelpers(t *testing.T) {
	if got := ChildSessionID("s1", 3); got != "s1~3" {
		t.Errorf("ChildSessionID = %q", got)
	}
	if r := SessionIDRejection(ChildSessionID(ChildSessionID("chat-42", 1), 12)); r != "" {
		t.Errorf("grandchild id refused: %s", r)
	}
	parents := []struct {
		id, parent string
		ok         bool
	}{
		{"s1~1", "s1", true},
		{"s1~1~2", "s1~1", true},
		{"s1~review:enrich-order:3", "s1", true},
		{"tenant~conversation", "", false},
		{"s1", "", false},
		{"~1", "", false},
		{"s1~0", "", false},
	}
	for _, tt := range parents {
		got, ok := ParentSessionIDOf(tt.id)
		if got != tt.parent || ok != tt.ok {
			t.Errorf("ParentSessionIDOf(%q) = %q, %v; want %q, %v", tt.id, got, ok, tt.parent, tt.ok)
		}
	}
	roots := map[string][2]string{ // id => {root, dispatch}
		"root~1":   {"root", "1"},
		"root~1~1": {"root", "1~1"},
		"root":     {"root", ""},
	}
	for id, want := range roots {
		if got := RootSessionIDOf(id); got != want[0] {
			t.Errorf("RootSessionIDOf(%q) = %q, want %q", id, got, want[0])
		}
		if got := DispatchIDOf(id); got != want[1] {
			t.Errorf("DispatchIDOf(%q) = %q, want %q", id, got, want[1])
		}
	}
	children := []struct {
		id, parent string
		want       bool
	}{
		{"s1~1", "s1", true},
		{"s1~1~2", "s1", true},
		{"s1~1~w:x:1", "s1", true},
		{"s1~1~2", "s1~1", true},
		{"s1", "s1", false},
		{"s10~1", "s1", false},
		{"s1~x", "s1", false},
		{"s1~1~x", "s1", false},
		{"s1~", "s1", false},
	}
	for _, tt := range children {
		if got := IsChildSessionOf(tt.id, tt.parent); got != tt.want {
			t.Errorf("IsChildSessionOf(%q, %q) = %v, want %v", tt.id, tt.parent, got, tt.want)
		}
	}
}
