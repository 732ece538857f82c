package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/archmax-ai/archmax/core/events"
	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/store/fs"
)

const workspace = "../../fixtures/access-desk"

func script(name string) string { return filepath.Join(workspace, "model-scripts", name+".model.yaml") }

// runTurn runs one turn of the fixture workflow end to end: fs store, the real Bedrock
// client, the Converse fake serving the script over loopback HTTP.
func runTurn(t *testing.T, storeDir, modelScript, sessionID, message string) (*session.Outcome, []events.Event) {
	t.Helper()
	return runTurnWith(t, Options{Workspace: workspace, StoreDir: storeDir, ModelScript: modelScript}, sessionID, message)
}

// runTurnWith runs one turn of the fixture workflow with a fresh environment built from opts.
func runTurnWith(t *testing.T, opts Options, sessionID, message string) (*session.Outcome, []events.Event) {
	t.Helper()
	var mu sync.Mutex
	var evs []events.Event
	opts.Events = func(e events.Event) { mu.Lock(); evs = append(evs, e); mu.Unlock() }
	env, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Close() })
	eng, err := env.Engine("access-request")
	if err != nil {
		t.Fatal(err)
	}
	out, err := eng.Send(context.Background(), sessionID, session.SendInput{Message: message})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	return out, evs
}

func trail(o *session.Outcome) string {
	var parts []string
	for _, s := range o.AuditTrail {
		parts = append(parts, string(s.Kind)+":"+s.To)
	}
	return strings.Join(parts, " ")
}

const dana = "Hi, I'm Dana from the platform team. I need badge access to the east lab, please."

// The acceptance path of `make run`: the fixture's happy path completes with its reply.
func TestHappyPathEndToEnd(t *testing.T) {
	dir := t.TempDir()
	out, evs := runTurn(t, dir, script("happy"), "s-happy", dana)
	if out.Kind != session.KindCompleted || out.State != "approve" {
		t.Fatalf("outcome %s in %s: %q", out.Kind, out.State, out.Rejected)
	}
	if out.Reply != "Approved — your badge will open the East Lab within the hour, Dana." {
		t.Errorf("reply = %q", out.Reply)
	}
	if got := trail(out); got != "trigger:screen code:check-grants agent:approve" {
		t.Errorf("trail = %s", got)
	}
	if out.Variables["area"].Value != "east-lab" || out.Variables["team"].Value != "platform" {
		t.Errorf("variables = %+v", out.Variables)
	}
	// the grant note landed in the session's scratchpad on disk
	note, err := os.ReadFile(filepath.Join(dir, "files", "s-happy", "grants", "east-lab.md"))
	if err != nil || !strings.Contains(string(note), "team: platform") {
		t.Errorf("grant note = %q, %v", note, err)
	}
	// usage is reported as scripted, inclusive of cache reads (02 §11.1)
	if out.Usage == nil || out.Usage.CacheReadTokens != 4500 || out.Usage.InputTokens != 8140+4500 || out.Usage.OutputTokens != 177 {
		t.Errorf("usage = %+v", out.Usage)
	}
	var lines []string
	for _, e := range evs {
		if e.Type == events.CodeOutput {
			lines = append(lines, e.Str("line"))
		}
	}
	if len(lines) != 1 || lines[0] != "requested area: east-lab (standard)" {
		t.Errorf("code-output = %q", lines)
	}
}

func TestDeclinedEndToEnd(t *testing.T) {
	out, _ := runTurn(t, t.TempDir(), script("declined"), "s-declined", "This is Ravi from finance, I need access to the west lab.")
	if out.Kind != session.KindCompleted || out.State != "decline" || !strings.HasPrefix(out.Reply, "Sorry Ravi") {
		t.Fatalf("outcome %s in %s: %q", out.Kind, out.State, out.Reply)
	}
}

func TestRefusedToolCallEndToEnd(t *testing.T) {
	out, evs := runTurn(t, t.TempDir(), script("refused-tool"), "s-refused", dana)
	if out.Kind != session.KindCompleted || out.State != "approve" {
		t.Fatalf("outcome %s in %s", out.Kind, out.State)
	}
	var blocked []events.Event
	for _, e := range evs {
		if e.Type == events.ToolBlocked {
			blocked = append(blocked, e)
		}
	}
	if len(blocked) != 1 || blocked[0].Str("tool") != "write_file" || blocked[0].Str("ruleId") != "tool.forbidden-here" {
		t.Errorf("tool-blocked = %+v", blocked)
	}
}

// Two runs on one session, each a separate engine and Converse fake (as two processes):
// turn 2 opens in the state turn 1 ended in and matches `when: {turn: 2}`.
func TestTwoTurnsContinueTheSession(t *testing.T) {
	dir := t.TempDir()
	first, _ := runTurn(t, dir, script("two-turn"), "demo-1", "Hi, I need a new badge please.")
	if first.State != "clarify" || first.Turn != 1 || first.Kind != session.KindCompleted {
		t.Fatalf("turn 1: %s in %s (turn %d)", first.Kind, first.State, first.Turn)
	}
	second, _ := runTurn(t, dir, script("two-turn"), "demo-1", "The print room — I'm on the finance team.")
	if second.Turn != 2 || second.State != "approve" || second.Kind != session.KindCompleted {
		t.Fatalf("turn 2: %s in %s (turn %d): %q", second.Kind, second.State, second.Turn, second.Rejected)
	}
	if got := trail(second); got != "trigger:screen code:clarify trigger:clarify reset:screen code:check-grants agent:approve" {
		t.Errorf("trail = %s", got)
	}
	// the stored head is readable by a fresh store instance
	log, err := fs.Open(filepath.Join(dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	head, err := log.Get(context.Background(), "demo-1")
	if err != nil || head.Status != "completed" || head.Messages != int64(len(second.Messages)) {
		t.Errorf("head = %+v, %v", head, err)
	}
}

func TestOpenNeedsExactlyOneModel(t *testing.T) {
	if _, err := Open(context.Background(), Options{Workspace: workspace}); err == nil {
		t.Error("no model chosen must be refused")
	}
	if _, err := Open(context.Background(), Options{Workspace: workspace, ModelScript: "x", Bedrock: true}); err == nil {
		t.Error("two models chosen must be refused")
	}
}

// DESIGN §6: throttling is retried in the client's one retry layer; when it gives up, Send
// returns the typed model error and keeps what was committed (02 §15 Q9).
func TestThrottlingRetriedThenGivenUp(t *testing.T) {
	write := func(times int) string {
		p := filepath.Join(t.TempDir(), "throttle.model.yaml")
		src := "agent:\n  - when: { state: clarify }\n    text: Which area?\nerrors:\n  - { role: agent, call: 0, error: ThrottlingException, times: " + strconv.Itoa(times) + " }\n"
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	out, _ := runTurn(t, t.TempDir(), write(2), "s-retry", "I need a badge.")
	if out.Kind != session.KindCompleted || out.Reply != "Which area?" {
		t.Fatalf("after two throttles: %s %q", out.Kind, out.Reply)
	}

	dir := t.TempDir()
	env, err := Open(context.Background(), Options{Workspace: workspace, StoreDir: dir, ModelScript: write(10)})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	eng, err := env.Engine("access-request")
	if err != nil {
		t.Fatal(err)
	}
	_, err = eng.Send(context.Background(), "s-giveup", session.SendInput{Message: "I need a badge."})
	var ce *model.CallError
	if !errors.As(err, &ce) || ce.Code != "ThrottlingException" || ce.Attempts != 3 {
		t.Fatalf("err = %v (%+v), want a ThrottlingException CallError after 3 attempts", err, ce)
	}
	// what ran before the model call (the code state's move) was committed
	log, err := fs.Open(filepath.Join(dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	head, err := log.Get(context.Background(), "s-giveup")
	if err != nil || head.Trail != 2 || head.Status != "running" {
		t.Errorf("head after give-up = %+v, %v", head, err)
	}
}

// Issue 4 acceptance: a guarded tools.allow entry with a ${{ }} reference, end to end. The
// approve state may write only grants/${{area}}.md; the wrong area's file is refused with
// the governance reason and the right one is written.
func TestGuardedReferenceEndToEnd(t *testing.T) {
	dir := t.TempDir()
	out, evs := runTurn(t, dir, script("wrong-grant"), "s-guard", dana)
	if out.Kind != session.KindCompleted || out.State != "approve" {
		t.Fatalf("outcome %s in %s: %q", out.Kind, out.State, out.Rejected)
	}
	var blocked []events.Event
	for _, e := range evs {
		if e.Type == events.ToolBlocked {
			blocked = append(blocked, e)
		}
	}
	if len(blocked) != 1 || blocked[0].Str("ruleId") != "tool.not-allowed" || !strings.Contains(blocked[0].Str("reason"), "'write_file' on 'grants/west-lab.md' is not allowed in state 'approve'") {
		t.Fatalf("tool-blocked = %+v", blocked)
	}
	if _, err := os.Stat(filepath.Join(dir, "files", "s-guard", "grants", "west-lab.md")); !os.IsNotExist(err) {
		t.Errorf("the refused write happened: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "files", "s-guard", "grants", "east-lab.md")); err != nil || !strings.Contains(string(b), "team: platform") {
		t.Errorf("the permitted write: %q, %v", b, err)
	}
}
