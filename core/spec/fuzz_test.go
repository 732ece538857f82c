package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse: the workflow parser never panics, always answers (a spec, or at least one
// error diagnostic) and, when it accepts a document, accepts its snapshot's hash stably
// (issue 10 "Bad input"; spec 01 §2.13). The seed corpus runs as an ordinary test.
func FuzzParse(f *testing.F) {
	for _, dir := range []string{"testdata", "../../fixtures/access-desk/workflows"} {
		_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".yaml") && !strings.Contains(p, "/tests/") {
				if b, err := os.ReadFile(p); err == nil {
					f.Add(b)
				}
			}
			return nil
		})
	}
	for _, s := range []string{
		"",
		"states: {}",
		"a: &a [*a]",
		"a: &a [x, x, x, x]\nb: &b [*a, *a, *a, *a]\nc: &c [*b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c]\n",
		"<<: {states: {s: {triggers: {manual: }}}}",
		"states:\n  on:\n    triggers: {manual: }\n  no:\n    instructions: x\n  y:\n    instructions: y\n",
		"states:\n  s:\n    triggers: {manual: }\n  s:\n    instructions: dup\n",
		"\xff\xfe states: [",
		strings.Repeat("[", 500) + strings.Repeat("]", 500),
		"states:\n  s:\n    triggers:\n      manual:\n        requires: [{name: a, type: strange}]\n",
		"---\nstates: {}\n---\nstates: {}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		if len(src) > 1<<16 {
			return
		}
		sp, diags := Parse("workflows/wf/workflow.yaml", src)
		hasError := false
		for _, d := range diags {
			if d.Severity == "error" {
				hasError = true
			}
			if d.Message == "" || d.Code == "" {
				t.Fatalf("a diagnostic without code or message: %+v", d)
			}
		}
		if sp == nil && !hasError {
			t.Fatalf("no spec and no error for %q", src)
		}
		if sp != nil && !hasError {
			if h1, h2 := sp.Hash(), sp.Hash(); h1 != h2 {
				t.Fatalf("unstable hash")
			}
		}
	})
}

// FuzzSessionID: the session-id rule never panics; an accepted id is accepted again and its
// parent/root helpers stay within it (spec 02 §9.2, §8.2).
func FuzzSessionID(f *testing.F) {
	for _, s := range []string{"s1", "chat-42", "s~1", "s~1~2", "a/b", "..", "", "~1", "s~", "s~x", "checkpoints", "x\x00y",
		strings.Repeat("a", 300), "s~1~2~3~4", "s~state:wf:1", "é", "s\u2028"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		got, err := CheckSessionID(id)
		if err != nil {
			if SessionIDRejection(id) == "" {
				t.Fatalf("CheckSessionID refused %q but SessionIDRejection accepts it", id)
			}
			return
		}
		if _, err := CheckSessionID(got); err != nil {
			t.Fatalf("an accepted id %q is refused the second time: %v", got, err)
		}
		if p, ok := ParentSessionIDOf(got); ok && !strings.HasPrefix(got, p+"~") {
			t.Fatalf("parent %q of %q", p, got)
		}
		if r := RootSessionIDOf(got); !strings.HasPrefix(got, r) {
			t.Fatalf("root %q of %q", r, got)
		}
	})
}

// BenchmarkParse10MB: a 10 MB workflow.yaml (one huge instructions string) parses in bounded
// time and memory (issue 10 "Bad input").
func BenchmarkParse10MB(b *testing.B) {
	src := []byte("states:\n  s:\n    triggers: {manual: }\n    instructions: \"" + strings.Repeat("x", 10<<20) + "\"\n")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if sp, _ := Parse("workflows/wf/workflow.yaml", src); sp == nil {
			b.Fatal("refused")
		}
	}
}

// BenchmarkValidateManyStates: ValidateSpec of a 7.6 MB chain of 67,000 states (every
// lookup by slug indexed, so the document rules and lint stay linear; issue 10 "Bad input").
func BenchmarkValidateManyStates(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("instructions: Chain.\nstates:\n")
	const n = 67000
	for i := 0; i < n; i++ {
		fmt.Fprintf(&sb, "  s%d:\n", i)
		if i == 0 {
			sb.WriteString("    triggers:\n      manual:\n")
		}
		fmt.Fprintf(&sb, "    instructions: Step %d.\n", i)
		if i < n-1 {
			fmt.Fprintf(&sb, "    transitions:\n      - to: s%d\n        description: Next step %d.\n", i+1, i)
		}
	}
	src := []byte(sb.String())
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if v := ValidateSpec("workflows/wf/workflow.yaml", src); !v.OK || len(v.Diagnostics) != 0 {
			b.Fatalf("%d findings", len(v.Diagnostics))
		}
	}
}
