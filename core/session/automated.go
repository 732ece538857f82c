package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/archmax-ai/archmax/core/kernel"
	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/workspace"
)

// decision is what an automated run (a code state's script, a grader) decided through its
// controls (03 CS-35…CS-43, GR-17): the first accepted archmax_advance or archmax_raise wins,
// later ones are refused.
type decision struct {
	decided                  bool
	advanceTo, advanceReason string
	raise                    *Exit
	callID                   string
}

// controlTexts are the replies an automated run's controls give (CS-39a for scripts, A7-5
// for graders).
type controlTexts struct {
	advanced, raised func(string) string // accepted advance (target) / raise (code)
	decided          func(state string) string
	advancePrefix    string // before an advance refusal
	raisePrefix      string // before a raise refusal
}

var (
	scriptControlTexts = controlTexts{advanced: replyScriptAdvance, raised: replyScriptRaise, decided: alreadyDecided}
	graderControlTexts = controlTexts{advanced: replyGraderAdvance, raised: replyGraderRaise, decided: graderAlreadyDecided,
		advancePrefix: advanceRejectedPrefix, raisePrefix: raiseRejectedPrefix}
)

// control services one control call of an automated run in state st, governed already: a
// decision, the variable tools as for the agent, or the history read at the run's start.
func (d *decision) control(r *run, st *spec.State, history, tool, callID string, args map[string]any, t controlTexts) (string, error) {
	switch tool {
	case spec.AdvanceTool:
		if d.decided {
			return "", errors.New(t.decided(st.Slug))
		}
		to, reason, problem := r.checkAdvance(st, args)
		if problem != "" {
			return "", errors.New(t.advancePrefix + problem)
		}
		d.decided, d.advanceTo, d.advanceReason, d.callID = true, to, reason, callID
		return t.advanced(to), nil
	case spec.RaiseTool:
		if d.decided {
			return "", errors.New(t.decided(st.Slug))
		}
		code, reason, problem := checkRaise(args)
		if problem != "" {
			return "", errors.New(t.raisePrefix + problem)
		}
		d.decided, d.raise, d.callID = true, &Exit{Code: code, Reason: reason}, callID
		return t.raised(code), nil
	case spec.GetVariablesTool:
		text, ok := r.getVariables(args)
		if !ok {
			return "", errors.New(text)
		}
		return text, nil
	case spec.SetVariablesTool:
		text, ok := r.setVariables(st.Slug, callID, args)
		if !ok {
			return "", errors.New(strings.TrimPrefix(text, "archmax_set_variables rejected: "))
		}
		return text, nil
	case spec.GetHistoryTool:
		return history, nil
	}
	return "", errors.New(notATool(tool))
}

// scriptCalls services the non-control tools.* calls of a script (a code state's or an
// agent's) on their own goroutines: governed against st with origin, reported with
// tool-called and tool-result, and settled even when the script stops waiting (hostCalls).
// mu guards the run while a call is governed or reported; closed is set once the script has
// ended.
type scriptCalls struct {
	r      *run
	st     *spec.State
	origin kernel.Origin

	mu     sync.Mutex
	closed bool
	calls  hostCalls
}

// Call implements sandbox.Host's Call: governance and events under the lock, the tool
// outside it.
func (h *scriptCalls) Call(ctx context.Context, tool, callID string, raw json.RawMessage) (string, error) {
	r := h.r
	aborted := fmt.Errorf("Tool '%s' failed: the turn was aborted", tool)
	var target *loadedTarget
	if slug, ok := spec.WorkflowSlugFromToolName(tool); ok && r.knownTool(tool) {
		target = r.e.loadTarget(ctx, slug) // store reads, outside the lock
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return "", aborted
	}
	args, unres := decodeArgs(raw), (*argUnresolved)(nil)
	if target != nil {
		args, unres = r.resolveDelegationArgs(args) // before governance (02 §8.1)
	}
	args, ref := r.govern(h.st, h.origin, callID, tool, args)
	if ref != nil {
		h.mu.Unlock()
		return "", errors.New(ref.text)
	}
	if target != nil {
		return h.delegate(ctx, tool, callID, args, unres, target, aborted)
	}
	r.emitCalled(h.st.Slug, h.origin, callID, tool, args)
	start := r.e.cfg.Clock()
	h.calls.add(callID, tool, start)
	hide := r.listingHide(tool, h.st.Slug, h.origin) // under the lock: it reads the variables
	h.mu.Unlock()
	var text string
	var isErr bool
	var err error
	if mocked, ok := r.mockedResult(tool, args); ok { // after governance (03 MK-01, MK-02)
		text = mocked
	} else {
		text, isErr, err = r.callTool(ctx, tool, callID, h.st.Slug, args, hide)
	}
	if err != nil {
		text, isErr = aborted.Error(), true
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.calls.finish(callID, text, isErr, h.closed) {
		r.emitResult(h.st.Slug, h.origin, callID, tool, text, isErr, start)
	}
	if err != nil || h.closed {
		return "", aborted
	}
	if tool == readFileTool {
		// a script reads the file text, not the model's page (03 BR-12a); the tool-result
		// event above keeps the tool's own answer
		return workspace.ScriptText(text), nil
	}
	return text, nil
}

// delegate answers a script's delegation call (03 AS-40…AS-46): entered with mu held, the
// child run without it; a refusal or failure rejects the script's promise with its text.
func (h *scriptCalls) delegate(ctx context.Context, tool, callID string, args map[string]any, unres *argUnresolved, target *loadedTarget, aborted error) (string, error) {
	r := h.r
	start := r.e.cfg.Clock()
	text, isErr, refused := r.delegateDetached(ctx, h.st, h.origin, callID, tool, args, unres, target,
		func() {
			// accepted: the call is reported and tracked like any host call while its child runs
			r.emitCalled(h.st.Slug, h.origin, callID, tool, args)
			h.calls.add(callID, tool, start)
		},
		func() { h.mu.Lock() }, func() { h.mu.Unlock() },
		func() bool { return !h.closed || h.calls.open[callID] != nil })
	defer h.mu.Unlock()
	if refused {
		return "", errors.New(text)
	}
	if h.calls.finish(callID, text, isErr, h.closed) {
		r.emitResult(h.st.Slug, h.origin, callID, tool, text, isErr, start)
	}
	if h.closed {
		return "", aborted
	}
	if isErr {
		return "", errors.New(text)
	}
	return text, nil
}

// end marks the script ended and settles its calls still open; it runs on the run's
// goroutine with mu held.
func (h *scriptCalls) end() {
	h.closed = true
	h.calls.settle(&h.mu, h.r, h.st.Slug, h.origin)
}

func decodeArgs(raw json.RawMessage) map[string]any {
	args := map[string]any{}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &args); err != nil || args == nil {
			return map[string]any{}
		}
	}
	return args
}
