package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// budgetWorkspace is the access desk with its host file's pricing and the given budgets.
func budgetWorkspace(t *testing.T, host string) string {
	t.Helper()
	dir := t.TempDir()
	if err := copyWorkspace(dir, ws); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "archmax.host.yaml"), []byte(host), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A spent budget, end to end through the CLI: the turn that reaches it is rejected with the
// budget's message (what to raise in archmax.host.yaml), and the next message to the session
// is refused with that message and the hint.
func TestRunStopsOnABudget(t *testing.T) {
	dir := budgetWorkspace(t, "version: 1\npricing:\n  claude-sonnet-4-5: { input: 3, output: 15 }\nbudgets:\n  session:\n    lifetime: { tokens: 1 }\n")
	store := t.TempDir()
	script := filepath.Join(dir, "model-scripts", "happy.model.yaml")
	args := []string{"run", "--workspace", dir, "--store", store, "--model-script", script, "--session", "s-budget", "--no-color", "access-request",
		"Hi, I'm Dana from the platform team. I need badge access to the east lab, please."}
	code, _, errs := run(t, args...)
	if code == 0 || !strings.Contains(errs, "✗ rejected") || !strings.Contains(errs, "Budget exceeded: session 's-budget' reached its lifetime budget") ||
		!strings.Contains(errs, "Raise budgets.session.lifetime.tokens in archmax.host.yaml") {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	if strings.Count(errs, "⚙ archmax_advance approve") != 0 {
		t.Errorf("the session went on past its budget:\n%s", errs)
	}
	code, _, errs = run(t, append(args[:len(args)-1:len(args)-1], "Any news?")...)
	if code != exitFail || !strings.Contains(errs, "archmax: Budget exceeded") ||
		!strings.Contains(errs, "hint: raise budgets.session.lifetime.tokens in archmax.host.yaml") || !strings.Contains(errs, "start a new session") {
		t.Fatalf("the next message: exit %d\n%s", code, errs)
	}
}

// archmax validate reports a USD budget on a model no pricing entry prices, at the budget,
// and accepts the same budget in tokens.
func TestValidateRefusesAUSDBudgetOnAnUnpricedModel(t *testing.T) {
	t.Setenv("ARCHMAX_MODEL", "")
	dir := budgetWorkspace(t, "version: 1\npricing:\n  other-model: { input: 3, output: 15 }\nbudgets:\n  workflows:\n    access-request:\n      daily: { usd: 5 }\n")
	code, out, errs := run(t, "validate", "--workspace", dir, "access-request")
	if code != exitFail || !strings.Contains(errs, "archmax.host.yaml:6:5: error host.budget: workflow 'access-request' has a USD budget") ||
		!strings.Contains(errs, "[budgets.workflows.access-request]") || !strings.Contains(errs, "hint: add a 'pricing' entry") || !strings.HasPrefix(out, "invalid") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	dir = budgetWorkspace(t, "version: 1\npricing:\n  other-model: { input: 3, output: 15 }\nbudgets:\n  workflows:\n    access-request:\n      daily: { tokens: 5000 }\n")
	if code, out, errs := run(t, "validate", "--workspace", dir, "access-request"); code != 0 || strings.Contains(errs, "host.budget") {
		t.Fatalf("a token budget: exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
}

// A budget keyed by a slug no workflow has is a warning: its limits would apply to nothing.
func TestValidateWarnsOfABudgetForNoWorkflow(t *testing.T) {
	dir := budgetWorkspace(t, "version: 1\nbudgets:\n  workflows:\n    acess-request:\n      daily: { tokens: 5000 }\n")
	code, out, errs := run(t, "validate", "--workspace", dir)
	if code != 0 || !strings.Contains(errs, "archmax.host.yaml:4:5: warning host.budget: 'acess-request' names no workflow of this workspace") ||
		strings.Count(errs, "acess-request' names") != 1 || !strings.Contains(out, "valid") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
}

// The models a USD budget needs priced include a human state's (its handoff and replies
// are model calls) and, under a lifetime or turn USD budget, those of the workflows it
// delegates to, transitively: badge-desk delegates to badge-approval, whose human state has
// a model of its own. A daily USD budget counts the workflow's own calls only.
func TestValidateUSDBudgetNeedsTheSubWorkflowsModelsPriced(t *testing.T) {
	t.Setenv("ARCHMAX_MODEL", "priced-model")
	host := "version: 1\npricing:\n  priced-model: { input: 3, output: 15 }\nbudgets:\n  workflows:\n    badge-desk:\n      lifetime: { usd: 5 }\n"
	dir := budgetWorkspace(t, host)
	file := filepath.Join(dir, "workflows", "badge-approval", "workflow.yaml")
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(src), "    type: human\n", "    type: human\n    model: handoff-model\n", 1)
	if edited == string(src) {
		t.Fatal("badge-approval has no human state to edit")
	}
	if err := os.WriteFile(file, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "validate", "--workspace", dir, "badge-desk")
	if code != exitFail || !strings.Contains(errs, "error host.budget: workflow 'badge-desk' has a USD budget") || !strings.Contains(errs, "'handoff-model'") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	// the human state's model under badge-approval's own budget
	if err := os.WriteFile(filepath.Join(dir, "archmax.host.yaml"), []byte(strings.Replace(host, "badge-desk", "badge-approval", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := run(t, "validate", "--workspace", dir, "badge-approval"); code != exitFail || !strings.Contains(errs, "'handoff-model'") {
		t.Fatalf("the human state's model: exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	if err := os.WriteFile(filepath.Join(dir, "archmax.host.yaml"), []byte(strings.Replace(host, "lifetime", "daily", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := run(t, "validate", "--workspace", dir, "badge-desk"); code != 0 || strings.Contains(errs, "host.budget") {
		t.Fatalf("a daily USD budget: exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
}

// badgeApprovalScript parks badge-approval at owner-sign-off at 1,505 tokens; a reply would
// cost 5,015 more.
const badgeApprovalScript = `agent:
  - when: { turn: 1, state: prepare-approval }
    toolCalls:
      - name: write_file
        input: { file_path: scratchpad/approval.md, content: "# Badge approval\n" }
      - name: archmax_advance
        input: { to: owner-sign-off, reason: The approval note is ready for the owner. }
    usage: { inputTokens: 700, outputTokens: 40 }
  - when: { turn: 1, state: owner-sign-off }
    text: I've asked the Server Room's owner to sign off Sam's badge.
    usage: { inputTokens: 750, outputTokens: 15 }
  - when: { state: owner-sign-off }
    text: Still waiting for the owner.
    usage: { inputTokens: 5000, outputTokens: 15 }
`

// A reply or a decision to a session parked over its lifetime budget is refused, through the
// CLI, before anything runs: the refusal's own text and the hint to repeat the command.
func TestReplyAndDecideRefusedOnASpentBudget(t *testing.T) {
	dir := budgetWorkspace(t, "version: 1\nbudgets:\n  workflows:\n    badge-approval:\n      lifetime: { tokens: 1400 }\n")
	script := filepath.Join(t.TempDir(), "ba.model.yaml")
	if err := os.WriteFile(script, []byte(badgeApprovalScript), 0o644); err != nil {
		t.Fatal(err)
	}
	store := t.TempDir()
	common := []string{"--workspace", dir, "--store", store, "--model-script", script, "--no-color"}
	code, _, errs := run(t, append(append([]string{"run"}, common...), "--session", "ba2", "--var", "person=Sam", "--var", "area=server-room", "--var", "reason=disk", "badge-approval", "badge please")...)
	if !strings.Contains(errs, "owner-sign-off") || strings.Contains(errs, "Budget exceeded") {
		t.Fatalf("run: exit %d\n%s", code, errs)
	}
	for _, cmd := range [][]string{{"reply", "ba2", "any update?"}, {"decide", "ba2", "badge-granted"}} {
		code, _, errs := run(t, append(append([]string{cmd[0]}, common...), cmd[1:]...)...)
		if code != exitFail || !strings.Contains(errs, "so this call is refused: nothing ran") || !strings.Contains(errs, "repeat the command") || strings.Contains(errs, "Still waiting") {
			t.Fatalf("%s: exit %d\n%s", cmd[0], code, errs)
		}
	}
}
