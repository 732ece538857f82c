package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkFiftyOfflineCases: `archmax test` over 50 offline cases (the fixture's happy path,
// copied 50 times: each a full session — a code state, three agent model calls through the
// real Bedrock client and the Converse fake over loopback, governance, commits to the
// in-memory session store). Goal (issue 9): 50 cases in ≤ 10 s wall.
func BenchmarkFiftyOfflineCases(b *testing.B) {
	dir := b.TempDir()
	if err := copyWorkspace(dir, ws); err != nil {
		b.Fatal(err)
	}
	tests := filepath.Join(dir, "workflows", "access-request", "tests")
	caseSrc, err := os.ReadFile(filepath.Join(tests, "happy-path.test.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join(tests, "happy-path.model.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	bench := filepath.Join(tests, "bench")
	if err := os.MkdirAll(bench, 0o755); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		name := filepath.Join(bench, fmt.Sprintf("case-%02d", i))
		if os.WriteFile(name+".test.yaml", caseSrc, 0o644) != nil || os.WriteFile(name+".model.yaml", script, 0o644) != nil {
			b.Fatal("write")
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var out, errb bytes.Buffer
		code := execute(context.Background(), []string{"test", "--workspace", dir, "access-request", "tests/bench/"}, &out, &errb)
		if code != 0 || strings.TrimSpace(out.String()) != "50 passed, 0 failed, 0 skipped" {
			b.Fatalf("exit %d: %s\n%s", code, out.String(), errb.String())
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N*50), "ms/case")
}
