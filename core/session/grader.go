package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/archmax-ai/archmax/core/events"
	"github.com/archmax-ai/archmax/core/kernel"
	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/transcript"
)

// DefaultGraderMaxTurns bounds a grader's own model calls when its budget names none
// (spec 03 GR-16, decision).
const DefaultGraderMaxTurns = 25

// graderStep runs a grader state on entry (spec 03 §3.2): an isolated sub-agent on the
// grader role — its own conversation, created fresh, whose messages never enter the
// session's transcript and whose text never streams — with the grader state's own surface,
// governed against it (origin grader). Its first accepted archmax_advance moves the run
// with a `grader` trail step and the [grader] note; an accepted archmax_raise fails the
// session; anything else — an answer without a decision, the model failing, its maxTurns or
// timeoutMs spent — fails the state closed through on_error (GR-20).
func (r *run) graderStep(st *spec.State) (stepResult, error) {
	history, err := transcript.History(r.msgs, r.trail)
	if err != nil {
		return stepResult{}, err
	}
	maxTurns := st.Budget.MaxTurns
	if maxTurns <= 0 {
		maxTurns = DefaultGraderMaxTurns
	}
	ctx, cancel := r.ctx, context.CancelFunc(func() {})
	if st.Budget.TimeoutMs > 0 {
		ctx, cancel = context.WithTimeout(r.ctx, time.Duration(st.Budget.TimeoutMs)*time.Millisecond)
	}
	defer cancel()
	g := &grader{r: r, st: st, history: string(history)}
	var listed []string
	for _, t := range st.Transitions {
		listed = append(listed, fmt.Sprintf("`archmax_advance` to '%s': %s", t.To, strings.TrimSpace(t.Description)))
	}
	from, reason := r.enteredFrom(st.Slug)
	system := []model.Block{{Kind: model.BlockText, Text: graderPreamble(st.Slug, listed) + strings.TrimSpace(st.Instructions)}}
	conv := []model.Message{{Role: model.RoleUser, Content: []model.Block{{Kind: model.BlockText, Text: graderOpening(st.Slug, from, reason)}}}}
	graderIDs := map[string]bool{} // the toolUse ids of the grader's own conversation
	specs := r.surfaceOf(st.Slug).specs
	for turn := 0; turn < maxTurns && !g.decided; turn++ {
		if turn > 0 { // the grader's calls so far are spent: a budget they reached stops it here (BU22-13)
			if s := r.budgetStop(); s != nil {
				return stepResult{settled: s}, nil
			}
		}
		req := &model.Request{ModelID: r.graderModelID(st), System: system, Messages: conv, Tools: specs,
			MaxTokens: r.e.cfg.MaxTokens, Metadata: r.metadata(st.Slug, "grader")}
		resp, err := r.e.cfg.Model.Converse(ctx, req)
		if err != nil {
			switch {
			case r.ctx.Err() != nil:
				return stepResult{}, r.ctx.Err() // the turn was cancelled: no outcome at all
			case ctx.Err() != nil:
				return stepResult{failure: graderTimedOut(st.Slug, st.Budget.TimeoutMs)}, nil
			}
			return stepResult{failure: graderModelFailed(st.Slug, graderCause(err))}, nil
		}
		r.recordUsage(st.Slug, "grader", req, resp)
		_, calls := replyOf(resp)
		calls = validCalls(calls)
		if resp.StopReason == model.StopMaxTokens {
			calls = nil // a half-written call is never run
		}
		renumberCallIDs(calls, graderIDs)
		if len(calls) == 0 {
			return stepResult{failure: graderUndecided(st.Slug)}, nil // GR-20, GR-21: a text answer is no verdict
		}
		conv = append(conv, assistantTurn(resp.Message, calls))
		results := make([]model.Block, 0, len(calls))
		for _, c := range calls {
			if ctx.Err() != nil && r.ctx.Err() == nil {
				// the time budget ran out mid-message: nothing more runs
				return stepResult{failure: graderTimedOut(st.Slug, st.Budget.TimeoutMs)}, nil
			}
			text, isErr, err := g.call(ctx, c)
			if err != nil {
				return stepResult{}, err
			}
			status := "success"
			if isErr {
				status = "error"
				if text == "" {
					text = "error"
				}
			}
			results = append(results, model.Block{Kind: model.BlockToolResult, ToolResult: &model.ToolResult{ToolUseID: c.ID, Content: text, Status: status}})
		}
		conv = append(conv, model.Message{Role: model.RoleUser, Content: results})
	}
	switch {
	case g.raise != nil:
		r.emit(events.Raised, map[string]any{"state": st.Slug, "sessionId": r.id, "code": g.raise.Code, "reason": g.raise.Reason, "callId": g.callID})
		return stepResult{settled: &settlement{status: StatusFailed, exit: g.raise}}, nil
	case g.advanceTo != "":
		r.moveTo(g.advanceTo, transcript.TrailGrader, g.advanceReason, g.callID, true)
		r.appendMessage(transcript.Message{Role: transcript.RoleRuntime, Note: transcript.NoteGrader,
			Text: noteGrader(st.Slug, g.advanceTo, g.advanceReason), State: g.advanceTo})
		if !r.step() {
			return stepResult{settled: &settlement{status: StatusRejected, reason: stepLimitExceeded}}, nil
		}
		return stepResult{moved: true}, nil
	}
	return stepResult{failure: graderOverTurns(st.Slug, maxTurns)}, nil
}

// graderModelID resolves a grader's model (GR-14): its own model, then the assembly's
// grader default, then the agent's resolution.
func (r *run) graderModelID(st *spec.State) string {
	if st.Model == "" && r.e.cfg.GraderModelID != "" {
		return r.e.cfg.GraderModelID
	}
	return r.modelID(st)
}

// enteredFrom reads the trail step that entered state: the state before it and its reason.
func (r *run) enteredFrom(state string) (from, reason string) {
	for i := len(r.trail) - 1; i >= 0; i-- {
		if r.trail[i].To == state {
			if i > 0 {
				from = r.trail[i-1].To
			}
			return from, r.trail[i].Reason
		}
	}
	return "", ""
}

// assistantTurn is the grader's answer as it goes back into its own conversation: its text
// and only the calls that run, with the ids they run under (a dropped, malformed call must
// not appear unanswered; a repeated id was renumbered).
func assistantTurn(m model.Message, calls []transcript.ToolCall) model.Message {
	out := model.Message{Role: model.RoleAssistant}
	for _, b := range m.Content {
		if b.Kind == model.BlockText && strings.TrimSpace(b.Text) != "" {
			out.Content = append(out.Content, b)
		}
	}
	for _, c := range calls {
		args := c.Args
		if args == nil {
			args = map[string]any{}
		}
		raw, _ := json.Marshal(args)
		out.Content = append(out.Content, model.Block{Kind: model.BlockToolUse, ToolUse: &model.ToolUse{ID: c.ID, Name: c.Name, Input: raw}})
	}
	return out
}

// graderCause is a model failure's text for the state's failure reason.
func graderCause(err error) string {
	var ce *model.CallError
	if errors.As(err, &ce) {
		msg := ce.Message
		if r := []rune(msg); len(r) > 200 {
			msg = string(r[:200]) + "…"
		}
		return fmt.Sprintf("%s (HTTP %d): %s", ce.Code, ce.Status, msg)
	}
	return err.Error()
}

// grader is one grader run's decision state (GR-17: the first accepted decision wins).
type grader struct {
	r       *run
	st      *spec.State
	history string
	decision
}

// call answers one of the grader's tool calls: governed against the grader state (origin
// grader), with tool-called/tool-result events as any call; the controls decide, read and
// write variables, and read the history; other tools run as the agent's would.
func (g *grader) call(ctx context.Context, c transcript.ToolCall) (string, bool, error) {
	r, st := g.r, g.st
	if slug, ok := spec.WorkflowSlugFromToolName(c.Name); ok && r.knownTool(c.Name) {
		resolved, unres := r.resolveDelegationArgs(c.Args) // before governance (02 §8.1)
		args, ref := r.govern(st, kernel.OriginGrader, c.ID, c.Name, resolved)
		if ref != nil {
			return ref.text, true, nil
		}
		start := r.e.cfg.Clock()
		text, isErr, refused := r.delegateDetached(ctx, st, kernel.OriginGrader, c.ID, c.Name, args, unres, r.e.loadTarget(ctx, slug),
			func() { r.emitCalled(st.Slug, kernel.OriginGrader, c.ID, c.Name, args) }, func() {}, func() {}, func() bool { return true })
		if !refused {
			r.emitResult(st.Slug, kernel.OriginGrader, c.ID, c.Name, text, isErr, start)
		}
		return text, isErr, nil
	}
	args, ref := r.govern(st, kernel.OriginGrader, c.ID, c.Name, c.Args)
	if ref != nil {
		return ref.text, true, nil
	}
	r.emitCalled(st.Slug, kernel.OriginGrader, c.ID, c.Name, args)
	start := r.e.cfg.Clock()
	var text string
	var isErr bool
	if spec.IsControlTool(c.Name) {
		var err error
		if text, err = g.control(r, st, g.history, c.Name, c.ID, args, graderControlTexts); err != nil {
			text, isErr = err.Error(), true
		}
	} else if mocked, ok := r.mockedResult(c.Name, args); ok { // after governance (03 MK-01, MK-02)
		text = mocked
	} else {
		var err error
		text, isErr, err = r.callTool(ctx, c.Name, c.ID, st.Slug, args, r.listingHide(c.Name, st.Slug, kernel.OriginGrader))
		if err != nil {
			if r.ctx.Err() != nil {
				return "", false, r.ctx.Err()
			}
			text, isErr = fmt.Sprintf("Tool '%s' failed: %v", c.Name, err), true
		}
	}
	r.emitResult(st.Slug, kernel.OriginGrader, c.ID, c.Name, text, isErr, start)
	return text, isErr, nil
}
