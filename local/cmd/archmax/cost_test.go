package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/core/artifacts"
	localrunner "github.com/archmax-ai/archmax/local/runner"
)

// The priced workspace: a desk that looks an order up in a sub-workflow, parks for sign-off
// and finishes once decided; the host file prices the model by a part of its id.
const (
	costHost = `version: 1
pricing:
  claude-sonnet-4-5: { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 }
  other-model: { input: 100, output: 100 }
`
	costDesk = `
title: Desk
states:
  intake:
    triggers:
      manual:
    instructions: Look the order up, then hand it to sign-off.
    tools:
      allow: ["archmax_workflow_lookup"]
    transitions:
      - to: signoff
        description: The order was looked up.
  signoff:
    type: human
    title: Sign-off
    transitions:
      - to: done
        description: Approved.
        type: approve
  done:
    instructions: Say it is done.
`
	costLookup = `
title: Lookup
states:
  find:
    triggers:
      manual:
        description: Look one order up.
        requires: [{ name: order_id, type: string, description: The order's id }]
    instructions: Look it up and say what you found.
`
	// The scripted inputTokens exclude the cache counts (Bedrock's shape): each event's
	// inputTokens is the sum. Rates 3 / 15 / 0.3 / 3.75 USD per 1M tokens:
	//   intake 1: 1000×3 + 800×3.75 + 100×15           = 7500 → 0.0075
	//   find:     500×3 + 800×0.3 + 40×15              = 2340 → 0.00234 (the child)
	//   intake 2: 200×3 + 1600×0.3 + 20×15             = 1380 → 0.00138
	//   signoff:  100×3 + 1600×0.3 + 400×3.75 + 11×15  = 2445 → 0.002445
	//   done:     300×3 + 1600×0.3 + 50×15             = 2130 → 0.00213 (the second process)
	costScript = `
agent:
  - when: { state: intake }
    toolCalls:
      - name: archmax_workflow_lookup
        input: { order_id: ORD-1 }
    usage: { inputTokens: 1000, outputTokens: 100, cacheWriteInputTokens: 800 }
  - when: { state: find }
    text: Found ORD-1.
    usage: { inputTokens: 500, outputTokens: 40, cacheReadInputTokens: 800 }
  - when: { state: intake }
    toolCalls:
      - name: archmax_advance
        input: { to: signoff, reason: looked up }
    usage: { inputTokens: 200, outputTokens: 20, cacheReadInputTokens: 1600 }
  - when: { state: signoff }
    text: Sent to sign-off.
    usage: { inputTokens: 100, outputTokens: 11, cacheReadInputTokens: 1600, cacheWriteInputTokens: 400 }
  - when: { state: done }
    text: Done.
    usage: { inputTokens: 300, outputTokens: 50, cacheReadInputTokens: 1600 }
`
)

// A parked-then-resumed session whose turns ran in two processes, with a sub-workflow child:
// every model-usage event carries its call's costUsd, the child's cost is rolled into the
// parent's, and the session's total is the same in its summary, its metadata.json and the
// CLI's footer.
func TestCostAcrossProcessesAndChildren(t *testing.T) {
	dir := t.TempDir()
	for name, src := range map[string]string{
		"archmax.host.yaml":              costHost,
		"workflows/desk/workflow.yaml":   costDesk,
		"workflows/lookup/workflow.yaml": costLookup,
		"cost.model.yaml":                costScript,
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	store := t.TempDir()
	common := []string{"--workspace", dir, "--store", store, "--model-script", filepath.Join(dir, "cost.model.yaml"),
		"--model", "us.anthropic.claude-sonnet-4-5-20250929-v1:0"}
	code, out, errs := cliProcess(t, append([]string{"run", "--session", "k1"}, append(common, "desk", "file ORD-1")...)...)
	if code != exitOK || out != "Sent to sign-off.\n" || !strings.Contains(errs, "⏸ awaiting a decision in signoff") {
		t.Fatalf("run: exit %d\n%s%s", code, out, errs)
	}
	// the first process: its own three calls and the child's
	if want := "usage: in 7000 · out 171 · cache r 4000/w 1200 · $0.0137\n"; !strings.Contains(errs, want) {
		t.Errorf("the first footer is not %q:\n%s", want, errs)
	}
	code, out, errs = cliProcess(t, append([]string{"decide", "--comment", "fine"}, append(common, "k1", "done")...)...)
	if code != exitOK || out != "Done.\n" {
		t.Fatalf("decide: exit %d\n%s%s", code, out, errs)
	}
	// the second: the whole session, both processes' calls
	if want := "usage: in 8900 · out 221 · cache r 5600/w 1200 · $0.0158\n"; !strings.Contains(errs, want) {
		t.Errorf("the second footer is not %q:\n%s", want, errs)
	}

	// metadata.json, written by a third process
	art := filepath.Join(t.TempDir(), "out")
	if code, out, errs := cliProcess(t, append([]string{"sessions", "k1", "--artifacts", art}, common[:4]...)...); code != exitOK {
		t.Fatalf("sessions --artifacts: exit %d\n%s%s", code, out, errs)
	}
	raw, err := os.ReadFile(filepath.Join(art, artifacts.Metadata))
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Usage map[string]any `json:"usage"`
	}
	if err := json.Unmarshal(raw, &meta); err != nil {
		t.Fatal(err)
	}
	if meta.Usage["costUsd"] != 0.015795 || meta.Usage["inputTokens"] != 8900.0 {
		t.Errorf("metadata.json usage %v, want costUsd 0.015795 over 8900 input tokens", meta.Usage)
	}

	// the summary and the stored events, read from the store
	env, err := localrunner.Open(context.Background(), localrunner.Options{Workspace: dir, StoreDir: store, NoModel: true})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	sessions, err := env.Sessions()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for id, want := range map[string]float64{"k1": 0.015795, "k1~1": 0.00234} {
		sum, err := sessions.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if sum.Usage == nil || sum.Usage.CostUSD == nil || *sum.Usage.CostUSD != want {
			t.Errorf("%s: summary usage %+v, want costUsd %v", id, sum.Usage, want)
		}
	}
	costs := func(id string) []float64 {
		evs, _, err := sessions.Events(ctx, id, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		var got []float64
		for _, raw := range evs {
			var e map[string]any
			if err := json.Unmarshal(raw, &e); err != nil {
				t.Fatal(err)
			}
			if e["type"] != "model-usage" {
				continue
			}
			c, ok := e["costUsd"].(float64)
			if !ok || e["model"] != "us.anthropic.claude-sonnet-4-5-20250929-v1:0" {
				t.Errorf("%s: a model-usage event without its cost or model: %s", id, raw)
			}
			got = append(got, c)
		}
		return got
	}
	if got, want := costs("k1"), []float64{0.0075, 0.00138, 0.002445, 0.00213}; !equalFloats(got, want) {
		t.Errorf("the parent's per-call costs %v, want %v", got, want)
	}
	if got, want := costs("k1~1"), []float64{0.00234}; !equalFloats(got, want) {
		t.Errorf("the child's per-call costs %v, want %v", got, want)
	}

	// `archmax sessions` shows the same total
	if code, out, errs := cliProcess(t, append([]string{"sessions", "k1"}, common[:4]...)...); code != exitOK ||
		!regexp.MustCompile(`usage\s+in 8900 · out 221 · cache r 5600/w 1200 · \$0\.0158`).MatchString(out+errs) {
		t.Errorf("sessions k1: exit %d\n%s%s", code, out, errs)
	}
}

// A model no entry prices reports tokens only: no cost on the footer, none in the summary.
func TestUnpricedModelShowsTokensOnly(t *testing.T) {
	dir := t.TempDir()
	for name, src := range map[string]string{
		"archmax.host.yaml":            "pricing:\n  claude-haiku: { input: 1, output: 5 }\n",
		"workflows/desk/workflow.yaml": costDesk,
		"cost.model.yaml":              "agent:\n  - { text: Nothing to do., usage: { inputTokens: 10, outputTokens: 2 } }\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("ARCHMAX_PRICE_INPUT", "7") // the host file's section wins, even where it prices nothing
	code, out, errs := run(t, "run", "--workspace", dir, "--store", t.TempDir(), "--model-script", filepath.Join(dir, "cost.model.yaml"),
		"--model", "us.anthropic.claude-sonnet-4-5-20250929-v1:0", "--json", "desk", "hello")
	if code != exitOK {
		t.Fatalf("run: exit %d\n%s%s", code, out, errs)
	}
	if strings.Contains(out, "costUsd") || !strings.Contains(out, `"type":"model-usage"`) {
		t.Errorf("an unpriced model's usage carries a cost (or none was reported):\n%s", out)
	}
}

func equalFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// `archmax test` shows each case's cost beside its tokens and the suite's on stderr; the
// stdout summary line stays the three counts.
func TestTestCommandShowsTheCost(t *testing.T) {
	code, stdout, stderr := run(t, "test", "--workspace", ws, "--model", "us.anthropic.claude-sonnet-4-5-20250929-v1:0", "access-request", "happy-path")
	if code != exitOK || strings.TrimSpace(stdout) != "1 passed, 0 failed, 0 skipped" {
		t.Fatalf("exit %d, stdout %q\n%s", code, stdout, stderr)
	}
	if !regexp.MustCompile(`✔ passed happy-path \(\d+ ms, 12817 tokens, \$0\.0284\)`).MatchString(stderr) || !strings.Contains(stderr, "cost: $0.0284 (the suite's priced model calls)\n") {
		t.Errorf("no cost on the case line or the suite's:\n%s", stderr)
	}
}
