package session

import (
	"context"
	"errors"
	"github.com/archmax-ai/archmax/core/events"
	"github.com/archmax-ai/archmax/core/model"
	"strings"
	"testing"
)

// 03 CS-35: an advance whose leaving gate (the state's `requires`) is unmet rejects at the
// call, naming the missing variable; the script can catch it, set the variable and advance.
func TestCodeStateAdvanceWithUnmetRequires(t *testing.T) {
	flow := strings.Replace(codeFlow, "    on_error: explain\n", "    on_error: explain\n    requires: [area]\n", 1)
	h := codeHarnessFlow(t, flow, `let refused = "";
try { await tools.archmax_advance({ to: "stamp", reason: "early" }); } catch (e) { refused = e.message; }
await tools.archmax_set_variables({ variables: { refused, area: "east-lab" } });
await tools.archmax_advance({ to: "stamp", reason: "area known" });`)
	out := h.send("s1", "please", nil)
	if got := out.Variables["refused"].Value; got != "cannot leave 'screen' yet: 'area' is not set. Record it with archmax_set_variables, then advance." {
		t.Errorf("refused = %v", got)
	}
	if out.State != "done" || trailOf(out) != "trigger:screen code:stamp code:done" {
		t.Errorf("state %s, trail %s", out.State, trailOf(out))
	}
}

// graderModel answers grader calls by waiting for the call's context (a model slower than the
// grader's timeoutMs) or failing, and every other call from the harness queue.
type graderModel struct {
	*queueModel
	grader func(ctx context.Context) (*model.Response, error)
}

func (m graderModel) Converse(ctx context.Context, req *model.Request) (*model.Response, error) {
	if req.Metadata["archmax.role"] == "grader" {
		return m.grader(ctx)
	}
	return m.queueModel.Converse(ctx, req)
}

// 03 GR-14 (budget.timeoutMs) and a grader whose model call fails: both are the state's
// failure, routed through on_error with their texts — never a hang, never the turn's error.
func TestGraderTimeoutAndModelFailureRouteThroughOnError(t *testing.T) {
	for name, tc := range map[string]struct {
		grader func(ctx context.Context) (*model.Response, error)
		note   string
	}{
		"timeoutMs": {func(ctx context.Context) (*model.Response, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}, "grader state 'check' exceeded its time budget (timeoutMs: 50)"},
		"model failure": {func(context.Context) (*model.Response, error) {
			return nil, &model.CallError{Code: "ValidationException", Status: 400, Message: "bad request"}
		}, "grader state 'check' could not run its model: ValidationException (HTTP 400): bad request"},
	} {
		t.Run(name, func(t *testing.T) {
			flow := strings.Replace(graderFlow, "    on_error: triage\n", "    on_error: triage\n    budget: { timeoutMs: 50 }\n", 1)
			h := newHarness(t, flow, nil)
			h.cfg.Model = graderModel{queueModel: h.model, grader: tc.grader}
			h.script(calls("", advance("check", "ready")), says("The check could not run."))
			out := h.send("g-"+strings.ReplaceAll(name, " ", "-"), "write it", nil) // never a hang: go test's timeout would say
			if out.State != "triage" || out.Reply != "The check could not run." {
				t.Fatalf("outcome %s in %s", out.Kind, out.State)
			}
			m := notes(out)
			if len(m) == 0 || !strings.Contains(m[len(m)-1].Text, tc.note) {
				t.Errorf("notes = %+v", m)
			}
		})
	}
}

// 02 §13 with 03 CS-62: a turn cancelled while a code state's script runs applies no outcome
// — not even a decision the script already recorded — and the call answers TurnAbortedError;
// the session can be driven again afterwards.
func TestCancelledCodeStateAppliesNoOutcome(t *testing.T) {
	h := codeHarness(t, `await tools.archmax_advance({ to: "stamp", reason: "decided early" });
while (true) {}`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	record := h.cfg.Events
	h.cfg.Events = func(e events.Event) { // the decision is recorded: cancel while the script loops
		record(e)
		if e.Type == events.ToolResult && e.Str("tool") == "archmax_advance" {
			cancel()
		}
	}
	_, err := h.engine().Send(ctx, "c1", SendInput{Message: "please"})
	var aborted *TurnAbortedError
	if !errors.As(err, &aborted) {
		t.Fatalf("err = %v", err)
	}
	if sum := h.summary("c1"); sum.State == "stamp" || sum.State == "done" {
		t.Errorf("the cancelled run's decision was applied: state %s", sum.State)
	}
}

// CS-35/CS-39: a script's refused controls read alike — the problem itself, with no tool
// prefix (a grader's carry "archmax_<tool> rejected: ", as the agent's do).
func TestScriptControlRefusalsReadAlike(t *testing.T) {
	h := codeHarness(t, `const msgs = [];
try { await tools.archmax_raise({ code: "", reason: "" }); } catch (e) { msgs.push(e.message); }
try { await tools.archmax_advance({ to: "nowhere", reason: "x" }); } catch (e) { msgs.push(e.message); }
await tools.archmax_set_variables({ variables: { msgs } });
await tools.archmax_advance({ to: "stamp", reason: "ok" });`)
	out := h.send("s1", "please", nil)
	msgs, _ := out.Variables["msgs"].Value.([]any)
	if len(msgs) != 2 {
		t.Fatalf("msgs = %v", out.Variables["msgs"].Value)
	}
	for _, m := range msgs {
		if s, _ := m.(string); s == "" || strings.Contains(s, "rejected: ") {
			t.Errorf("refusal %q", s)
		}
	}
}
