package session

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/archmax-ai/archmax/core/events"
	"github.com/archmax-ai/archmax/core/kernel"
	"github.com/archmax-ai/archmax/core/sandbox"
	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/store"
	"github.com/archmax-ai/archmax/core/transcript"
)

// codeStep runs a code state's script in a fresh sandbox context, with no model call, and
// applies its outcome (03 §1.3, §1.7, §1.8): advanced → move with a [code] note; raised →
// failed; finished undecided in a terminal state → completion; anything else → on_error.
func (r *run) codeStep(st *spec.State) (stepResult, error) {
	history, err := transcript.History(r.msgs, r.trail)
	if err != nil {
		return stepResult{}, err
	}
	key := "workflows/" + r.e.cfg.Workflow + "/" + st.Script
	src, err := r.e.cfg.Authored.Read(r.ctx, key)
	if err != nil {
		cause := "the store refused it"
		if errors.Is(err, store.ErrNotFound) {
			cause = "it does not exist"
		}
		return stepResult{failure: codeUnreadable(st.Slug, st.Script, cause)}, nil
	}
	h := &codeHost{scriptCalls: scriptCalls{r: r, st: st, origin: kernel.OriginCode}, history: string(history)}
	var tools []sandbox.Tool
	for _, name := range r.surfaceOf(st.Slug).names {
		tools = append(tools, sandbox.Tool{Name: name, Control: spec.IsControlTool(name)})
	}
	set := r.sp.Settings
	run := &sandbox.CodeStateRun{
		File:      st.Script,
		Source:    src,
		State:     st.Slug,
		Trigger:   r.rec.CurrentTrigger,
		Variables: r.vars(),
		Tools:     tools,
		Quotas: sandbox.Quotas{TimeoutMs: set.TimeoutMs, MaxPtcCalls: set.MaxPtcCalls,
			MaxResultChars: set.MaxResultChars, MemoryLimitBytes: set.MemoryLimitBytes},
		NextCallID: r.e.nextPtcID,
		OnLog: func(line string) {
			h.mu.Lock()
			defer h.mu.Unlock()
			if !h.closed {
				r.emit(events.CodeOutput, map[string]any{"state": st.Slug, "line": line})
			}
		},
	}
	runErr := r.traceCode(st, func() error { return sandbox.RunCodeState(r.ctx, run, h) })
	h.mu.Lock()
	defer h.mu.Unlock()
	// host calls still in flight were cancelled by the sandbox; from here on they must not
	// touch the run (which moves on without the lock) — their results are settled here
	h.end()
	var abort *sandbox.AbortError
	if errors.As(runErr, &abort) || r.ctx.Err() != nil {
		// a cancelled turn applies no outcome at all (03 CS-44)
		return stepResult{}, r.ctx.Err()
	}
	if h.raise != nil { // a raise wins over a later error (CS-43)
		r.emit(events.Raised, map[string]any{"state": st.Slug, "sessionId": r.id, "code": h.raise.Code, "reason": h.raise.Reason, "callId": h.callID})
		return stepResult{settled: &settlement{status: StatusFailed, exit: h.raise}}, nil
	}
	if runErr != nil {
		return stepResult{failure: codeFailure(st.Slug, runErr)}, nil
	}
	switch {
	case h.advanceTo != "":
		r.moveTo(h.advanceTo, transcript.TrailCode, h.advanceReason, h.callID, true)
		r.appendMessage(transcript.Message{Role: transcript.RoleRuntime, Note: transcript.NoteCode,
			Text: noteCode(st.Slug, h.advanceTo, h.advanceReason), State: h.advanceTo})
		if !r.step() {
			return stepResult{settled: &settlement{status: StatusRejected, reason: stepLimitExceeded}}, nil
		}
		return stepResult{moved: true}, nil
	case st.IsTerminal():
		s := r.completion()
		return stepResult{settled: &s}, nil
	}
	return stepResult{failure: codeUndecided(st.Slug)}, nil
}

// codeFailure renders a sandbox error as the state's failure reason (03 CS-44).
func codeFailure(state string, err error) string {
	var (
		to  *sandbox.TimeoutError
		se  *sandbox.ScriptError
		de  *sandbox.DefinitionError
		qe  *sandbox.QuotaError
		ie  *sandbox.ImportError
		syn *sandbox.SyntaxError
	)
	switch {
	case errors.As(err, &to):
		return codeTimedOut(state, to.TimeoutMs)
	case errors.As(err, &se):
		msg := se.Message
		if se.File != "" && se.Line > 0 {
			msg = fmt.Sprintf("%s (at %s:%d:%d)", msg, se.File, se.Line, se.Column)
		}
		return codeFailed(state, msg)
	case errors.As(err, &de):
		return codeDefinition(state, de.Message)
	case errors.As(err, &qe):
		return codeFailed(state, qe.Message)
	case errors.As(err, &ie):
		return codeFailed(state, fmt.Sprintf("%s (at %s:%d:%d)", ie.Error(), ie.File, ie.Line, ie.Column))
	case errors.As(err, &syn):
		return codeFailed(state, err.Error())
	}
	return codeFailed(state, err.Error())
}

// codeHost routes a code state script's tools.* calls: governed against the code state
// itself with origin "code" (GOV-01), controls serviced synchronously (CS-39) under the same
// lock.
type codeHost struct {
	scriptCalls
	history string
	decision
}

// Control services a control call on the VM goroutine: governed, then the first accepted
// advance or raise is the run's decision (CS-35, CS-37, CS-42); variable tools and the
// history behave as for the agent.
func (h *codeHost) Control(tool, callID string, raw json.RawMessage) (string, error) {
	r := h.r
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return "", errors.New("the code state's run is over")
	}
	args, ref := r.govern(h.st, kernel.OriginCode, callID, tool, decodeArgs(raw))
	if ref != nil {
		return "", errors.New(ref.text)
	}
	r.emitCalled(h.st.Slug, kernel.OriginCode, callID, tool, args)
	start := r.e.cfg.Clock()
	text, err := h.control(r, h.st, h.history, tool, callID, args, scriptControlTexts)
	if err != nil {
		r.emitResult(h.st.Slug, kernel.OriginCode, callID, tool, err.Error(), true, start)
		return "", err
	}
	r.emitResult(h.st.Slug, kernel.OriginCode, callID, tool, text, false, start)
	return text, nil
}
