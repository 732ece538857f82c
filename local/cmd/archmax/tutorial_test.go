package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The authoring guide's tutorial, as written: every file it shows (a code block under a
// `<!-- file: PATH -->` or `<!-- append: PATH -->` comment, the last one for a path winning) is
// written into an empty workspace, which must then validate clean, pass its cases under
// --strict, and run and decide as the tutorial's last section does.
func TestTheTutorialWorksAsWritten(t *testing.T) {
	src, err := os.ReadFile("../../../docs/authoring/tutorial.md")
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile("(?ms)^<!-- (file|append): (\\S+) -->\n```[a-z]*\n(.*?)^```")
	dir := t.TempDir()
	found := block.FindAllStringSubmatch(string(src), -1)
	if len(found) < 10 {
		t.Fatalf("only %d file blocks in the tutorial", len(found))
	}
	for _, m := range found {
		path := filepath.Join(dir, filepath.FromSlash(m[2]))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		flag := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
		if m[1] == "append" {
			flag = os.O_CREATE | os.O_WRONLY | os.O_APPEND
		}
		f, err := os.OpenFile(path, flag, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.WriteString(m[3])
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if code, out, errs := run(t, "validate", "--root", dir); code != exitOK || !strings.HasPrefix(out, "valid — 0 error(s), 0 warning(s)") {
		t.Fatalf("validate: exit %d, stdout %q, stderr %s", code, out, errs)
	}
	if code, out, errs := run(t, "test", "--root", dir, "--strict"); code != exitOK || !strings.HasPrefix(out, "3 passed, 0 failed, 0 skipped") {
		t.Fatalf("test --strict: exit %d, stdout %q, stderr %s", code, out, errs)
	}
	script := filepath.Join(dir, "workflows/refund/tests/large-refund-approved.model.yaml")
	store := t.TempDir()
	code, out, errs := run(t, "run", "--workspace", dir, "--store", store, "--model-script", script,
		"--session", "demo-1", "--var", "order_id=ORD-9", "--var", "amount=250", "The sofa I ordered never arrived.")
	if code != exitOK || !strings.Contains(errs, "⏸ awaiting a decision in review") || !strings.Contains(out, "needs a reviewer's approval") {
		t.Fatalf("run: exit %d, stdout %q, stderr %s", code, out, errs)
	}
	code, out, errs = run(t, "decide", "demo-1", "--to", "refund", "--comment", "Carrier confirmed the loss.",
		"--workspace", dir, "--store", store, "--model-script", script)
	if code != exitOK || !strings.Contains(out, "approved and on its way") {
		t.Fatalf("decide: exit %d, stdout %q, stderr %s", code, out, errs)
	}
}
