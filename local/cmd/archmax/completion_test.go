package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// Shell completion: cobra's completion scripts, workflow names from the workspace, session
// ids from the store (a command's own kind of park), a decision's targets with their
// descriptions.
func TestShellCompletion(t *testing.T) {
	supportCopy(t)
	t.Setenv(envModelScript, filepath.Join(supportAbs, "model-scripts", "refund-review.model.yaml"))
	if code, _, errs := run(t, "run", "order-lookup", "--session", "r-1", "support@acmecorp.com here. Please refund ORD-1003, it is weeks late."); code != exitOK {
		t.Fatalf("run: exit %d %s", code, errs)
	}
	complete := func(args ...string) string {
		t.Helper()
		code, out, errs := run(t, append([]string{"__complete"}, args...)...)
		if code != exitOK {
			t.Fatalf("%v: exit %d %s", args, code, errs)
		}
		return out
	}
	for _, c := range []struct {
		args     []string
		want     []string
		wantNone []string
	}{
		{[]string{"run", ""}, []string{"enrich-order\n", "order-lookup\n", "order-status\n"}, nil},
		{[]string{"validate", "order-lookup", ""}, []string{"enrich-order\n"}, []string{"order-lookup\n"}},
		{[]string{"test", "order-lookup", ""}, nil, []string{"enrich-order"}},
		{[]string{"decide", ""}, []string{"r-1\torder-lookup awaiting_decision refund-review\n"}, nil},
		{[]string{"reply", ""}, []string{"r-1\t"}, nil},
		{[]string{"deliver", ""}, nil, []string{"r-1"}},
		{[]string{"sessions", ""}, []string{"r-1\t"}, nil},
		{[]string{"decide", "r-1", ""}, []string{"refund-closed\tThe decision is right; close the case.\n", "refund-request\t"}, nil},
		{[]string{"decide", "r-1", "--to", ""}, []string{"refund-closed\t"}, nil},
		{[]string{"sessions", "--workflow", ""}, []string{"order-lookup\n"}, nil},
		{[]string{"run", "--session", ""}, []string{"r-1\t"}, nil},
	} {
		out := complete(c.args...)
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%q: lacks %q:\n%s", c.args, w, out)
			}
		}
		for _, w := range c.wantNone {
			if strings.Contains(out, w) {
				t.Errorf("%q: offers %q:\n%s", c.args, w, out)
			}
		}
	}
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		if code, out, _ := run(t, "completion", shell); code != exitOK || !strings.Contains(out, "archmax") {
			t.Errorf("completion %s: exit %d", shell, code)
		}
	}
}
