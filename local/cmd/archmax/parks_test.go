package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// cliParkScript answers by state (and turn), so each CLI process — which restarts the
// script — finds its entries.
const cliParkScript = `
agent:
  - when: { state: intake }
    toolCalls:
      - name: archmax_advance
        input: { to: signoff, reason: ready }
  - when: { state: signoff }
    text: Sent to sign-off.
  - when: { state: done }
    text: Done.
  - when: { state: watch, turn: 1 }
    toolCalls:
      - name: archmax_wait
        input: { reason: "the courier's scan" }
  - when: { state: watch, turn: 1 }
    text: Waiting for the scan.
  - when: { state: watch, turn: 2 }
    text: The parcel arrived.
`

func cliParkWorkspace(t *testing.T) (string, string) {
	t.Helper()
	dir := t.TempDir()
	for name, src := range map[string]string{
		"workflows/desk/workflow.yaml":    serveDesk,
		"workflows/courier/workflow.yaml": serveCourier,
		"park.model.yaml":                 cliParkScript,
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, filepath.Join(dir, "park.model.yaml")
}

// `archmax run` shows a park and how to answer it; `archmax decide` and `archmax deliver`
// resume it from another process.
func TestDecideAndDeliverFromTheCLI(t *testing.T) {
	ws, script := cliParkWorkspace(t)
	store := t.TempDir()
	common := []string{"--workspace", ws, "--store", store, "--model-script", script}

	code, out, errs := run(t, append([]string{"run", "--session", "d1"}, append(common, "desk", "file it")...)...)
	if code != exitOK || !strings.Contains(errs, "⏸ awaiting a decision in signoff (park p") || !strings.Contains(errs, "archmax decide d1 --to <done>") ||
		out != "Sent to sign-off.\n" {
		t.Fatalf("run: exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs := run(t, append([]string{"decide"}, append(common, "d1", "nowhere")...)...); code != exitFail || !strings.Contains(errs, "'nowhere' is not a valid decision target for session 'd1'") {
		t.Errorf("bad target: exit %d %s", code, errs)
	}
	park := regexp.MustCompile(`park (p\S+)\)`).FindStringSubmatch(errs)[1]
	code, out, errs = run(t, append([]string{"decide", "--comment", "fine", "--park", park}, append(common, "d1", "done")...)...)
	if code != exitOK || !strings.Contains(errs, "✔ completed in done") || out != "Done.\n" {
		t.Fatalf("decide: exit %d\n%s%s", code, out, errs)
	}

	code, out, errs = run(t, append([]string{"run", "--session", "c1"}, append(common, "courier", "track it")...)...)
	if code != exitOK || !strings.Contains(errs, "⏸ awaiting input in watch") || !strings.Contains(errs, "the courier's scan — archmax deliver c1 --trigger <id>") {
		t.Fatalf("wait: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = run(t, append([]string{"deliver", "--var", "scan=delivered", "--message", "here"}, append(common, "c1", "courier")...)...)
	if code != exitOK || out != "The parcel arrived.\n" {
		t.Fatalf("deliver: exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs := run(t, append([]string{"deliver"}, append(common, "nobody", "courier")...)...); code != exitFail || !strings.Contains(errs, "Session 'nobody' has not run yet.") {
		t.Errorf("unknown session: exit %d %s", code, errs)
	}
	if code, _, errs := run(t, append([]string{"decide"}, append(common, "d1")...)...); code != exitUsage || !strings.Contains(errs, "--to STATE is required") {
		t.Errorf("usage: exit %d %s", code, errs)
	}
}
