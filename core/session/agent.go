package session

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/archmax-ai/archmax/core/events"
	"github.com/archmax-ai/archmax/core/kernel"
	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/pricing"
	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/transcript"
	"github.com/archmax-ai/archmax/core/workspace"
)

// agentStep makes one model call in an agent state and runs the tool calls it asked for
// (spec 02 §1.5). A call that ends without tool calls ends the turn.
func (r *run) agentStep(st *spec.State) (stepResult, error) {
	if r.rec.StateTurns == nil || r.rec.StateTurns.State != st.Slug {
		r.rec.StateTurns = &stateTurns{State: st.Slug}
	}
	if st.Budget.MaxTurns > 0 && r.rec.StateTurns.Count >= st.Budget.MaxTurns {
		return stepResult{failure: maxTurnsExhausted(st.Slug, st.Budget.MaxTurns)}, nil
	}
	r.rec.StateTurns.Count++
	req := r.agentRequest(st)
	callCtx, cancel := r.ctx, context.CancelFunc(func() {})
	if st.Budget.TimeoutMs > 0 {
		callCtx, cancel = context.WithTimeout(r.ctx, time.Duration(st.Budget.TimeoutMs)*time.Millisecond)
	}
	messageID := newMessageID()
	resp, stream, err := r.streamCall(callCtx, st.Slug, messageID, req)
	timedOut := callCtx.Err() != nil && r.ctx.Err() == nil
	cancel()
	if err != nil {
		stream.partial() // the text that arrived before the call failed (02 §12.5)
		if timedOut {
			return stepResult{failure: modelTimedOut(st.Slug, st.Budget.TimeoutMs)}, nil
		}
		var ce *model.CallError
		if errors.As(err, &ce) && ce.Quota {
			r.rec.StateTurns.Count-- // the call was refused, not made
			return r.quotaPark(st, ce)
		}
		return stepResult{}, err
	}
	r.rec.QuotaWaits = 0
	r.recordUsage(st.Slug, "agent", req, resp)

	text, calls := replyOf(resp)
	if valid := validCalls(calls); len(valid) < len(calls) {
		// a call Bedrock would refuse in the next request's history is never checkpointed
		r.warn("model", malformedToolCall)
		calls = valid
		if len(calls) == 0 && strings.TrimSpace(text) == "" {
			return stepResult{failure: malformedToolCall}, nil
		}
	}
	if renumberIDs(calls, r.callIDsInUse()) {
		r.warn("model", repeatedToolCallID)
	}
	cutOff := ""
	if resp.StopReason == model.StopMaxTokens && len(calls) > 0 {
		// a half-written call is never executed nor checkpointed (DESIGN.md §6): the model is
		// told it was cut off and goes on, within the step limit — the state does not
		// complete on the words before it (R18-4); maxCutOffs in a row fail it (on_error)
		cutOff = calls[len(calls)-1].Name
		calls = nil
		r.warn("model", truncatedToolCall)
		if r.cutOffs++; r.cutOffs >= maxCutOffs {
			return stepResult{failure: cutOffFailure(st.Slug)}, nil
		}
	} else {
		r.cutOffs = 0
	}
	var msg transcript.Message
	if cutOff == "" || strings.TrimSpace(text) != "" {
		msg = r.appendMessage(transcript.Message{ID: messageID, Role: transcript.RoleAssistant, Text: text, ToolCalls: calls, State: st.Slug})
	}
	if t := strings.TrimSpace(msg.Text); t != "" {
		stream.whole(msg.Text)
		r.emit(events.AgentText, map[string]any{"state": st.Slug, "text": msg.Text, "messageId": msg.ID})
	}
	if cutOff != "" {
		r.appendMessage(transcript.Message{Role: transcript.RoleRuntime, Note: transcript.NoteCutOff, Text: noteCutOff(cutOff), State: st.Slug})
		return stepResult{}, nil // the next step asks the model again
	}
	if len(calls) == 0 {
		if reason := r.outstandingDelegationFailures(st.Slug); reason != "" {
			return stepResult{failure: reason}, nil
		}
		s := r.completion()
		return stepResult{settled: &s}, nil
	}
	if slices.ContainsFunc(calls, func(c transcript.ToolCall) bool { return r.e.hostTools[c.Name] != nil }) {
		// a host tool acts outside the session: the answer (its call ids) is committed first,
		// so a retry after a lost commit runs these calls under the same idempotency keys
		// (pendingStep) instead of asking the model again (R18-7)
		if err := r.commit(); err != nil {
			return stepResult{}, err
		}
	}
	return r.runToolCalls(st, calls)
}

// agentRequest is the model request of an agent call in st: the cacheable system prompt, the
// per-call content, the transcript, the state's tool surface and the call's metadata — with
// caching on, laid out and marked for the prompt cache (promptcache.go).
func (r *run) agentRequest(st *spec.State) *model.Request {
	req := &model.Request{
		ModelID:   r.modelID(st),
		Messages:  r.conv.Messages(),
		Tools:     r.surfaceOf(st.Slug).specs,
		MaxTokens: r.e.cfg.MaxTokens,
		Metadata:  r.metadata(st.Slug, "agent"),
	}
	if on, ttl := r.cacheEnabled(); on {
		r.cachedRequest(st, req, ttl) // promptcache.go
	} else {
		req.System = r.systemBlocks(st)
	}
	return req
}

// replyOf reads a model answer: its text, and its tool calls with their arguments (an
// argument object that does not decode is empty).
func replyOf(resp *model.Response) (string, []transcript.ToolCall) {
	var text strings.Builder
	var calls []transcript.ToolCall
	for _, b := range resp.Message.Content {
		switch b.Kind {
		case model.BlockText:
			text.WriteString(b.Text)
		case model.BlockToolUse:
			args := map[string]any{}
			if len(b.ToolUse.Input) > 0 {
				if err := json.Unmarshal(b.ToolUse.Input, &args); err != nil || args == nil {
					args = map[string]any{}
				}
			}
			calls = append(calls, transcript.ToolCall{ID: b.ToolUse.ID, Name: b.ToolUse.Name, Args: args})
		}
	}
	return text.String(), calls
}

// toolNamePattern is Bedrock's rule for tool names and toolUse ids (research D.3, D.4).
var toolNamePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// validCalls keeps the calls whose name and id Bedrock accepts in a history.
func validCalls(calls []transcript.ToolCall) []transcript.ToolCall {
	out := calls[:0:0]
	for _, c := range calls {
		if toolNamePattern.MatchString(c.Name) && toolNamePattern.MatchString(c.ID) {
			out = append(out, c)
		}
	}
	return out
}

// callIDsInUse is the set of toolUse ids the session's transcript holds, built on first use
// and kept current by renumberCallIDs.
func (r *run) callIDsInUse() map[string]bool {
	if r.usedCallIDs == nil {
		r.usedCallIDs = map[string]bool{}
		for _, m := range r.msgs {
			for _, c := range m.ToolCalls {
				r.usedCallIDs[c.ID] = true
			}
		}
	}
	return r.usedCallIDs
}

// renumberIDs is renumberCallIDs for the agent's answers (a test takes it away to prove
// that the commit check alone keeps a refused history out of the store).
var renumberIDs = renumberCallIDs

// renumberCallIDs gives every call whose id is already in used — an earlier call of the
// conversation, or an earlier call of the same answer — a fresh one ("<id>_<n>", cut to
// Bedrock's 64 characters), before anything is run or stored, and adds the ids to used: a
// repeated toolUse id would make every later request of the session fail (DESIGN.md §6;
// docs/DECISIONS.md R18-1). It reports whether it renamed any.
func renumberCallIDs(calls []transcript.ToolCall, used map[string]bool) bool {
	renamed := false
	for i := range calls {
		id := calls[i].ID
		for n := 2; used[id]; n++ {
			suffix := "_" + strconv.Itoa(n)
			base := calls[i].ID
			if len(base)+len(suffix) > 64 {
				base = base[:64-len(suffix)]
			}
			id = base + suffix
		}
		if id != calls[i].ID {
			calls[i].ID, renamed = id, true
		}
		used[id] = true
	}
	return renamed
}

// modelID resolves the model for a state: its own model, settings.model, the assembly's.
func (r *run) modelID(st *spec.State) string {
	switch {
	case st.Model != "":
		return st.Model
	case r.sp.Settings.Model != "":
		return r.sp.Settings.Model
	}
	return r.e.cfg.ModelID
}

// metadata is the Converse requestMetadata of a call (DESIGN.md §6, spec 05).
func (r *run) metadata(state, role string) map[string]string {
	return map[string]string{
		"archmax.session": metadataValue(r.id),
		"archmax.state":   state,
		"archmax.role":    role,
		"archmax.turn":    strconv.Itoa(r.rec.Calls),
	}
}

// metadataValue fits a value to Bedrock's requestMetadata alphabet ([a-zA-Z0-9\s:_@$#=/+,-.],
// 1–256 characters; research D): a child id's '~' reads as '/' ("s~1" → "s/1"), any other
// character outside it as '_'.
func metadataValue(s string) string {
	out := []rune(s)
	for i, c := range out {
		switch {
		case c == '~':
			out[i] = '/'
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', strings.ContainsRune(" \t\n:_@$#=/+,-.", c):
		default:
			out[i] = '_'
		}
	}
	if len(out) > 256 {
		out = out[:256]
	}
	return string(out)
}

// recordUsage folds one call's usage into the record and emits model-usage (02 §11.1); the
// call's cache writes are priced at the rate of the TTL its request's cache points asked for.
func (r *run) recordUsage(state, role string, req *model.Request, resp *model.Response) {
	modelID := req.ModelID
	u := resp.Usage
	if u == nil {
		return
	}
	if r.rec.Usage == nil {
		r.rec.Usage = &Usage{}
	}
	r.rec.Usage.InputTokens += u.InputTokens
	r.rec.Usage.OutputTokens += u.OutputTokens
	r.rec.Usage.CacheReadTokens += u.CacheReadTokens
	r.rec.Usage.CacheCreationTokens += u.CacheWriteTokens
	id := resp.ModelID
	if id == "" {
		id = modelID
	}
	data := map[string]any{"state": state, "role": role, "inputTokens": u.InputTokens, "outputTokens": u.OutputTokens,
		"cacheReadTokens": u.CacheReadTokens, "cacheCreationTokens": u.CacheWriteTokens}
	if id != "" {
		data["model"] = id
	}
	// priced against the reported id, else the configured one (02 §11.3); never guessed
	if cost, ok := r.e.cfg.Pricing.Cost(id, pricing.Usage{Input: u.InputTokens, Output: u.OutputTokens,
		CacheRead: u.CacheReadTokens, CacheWrite: u.CacheWriteTokens, CacheTTL: cacheTTL(req)}); ok {
		data["costUsd"] = cost
		r.rec.Usage.CostUSD = pricing.Add(r.rec.Usage.CostUSD, &cost)
		r.spend(u.InputTokens+u.OutputTokens, &cost)
	} else {
		r.spend(u.InputTokens+u.OutputTokens, nil)
	}
	r.emit(events.ModelUsage, data)
}

// cacheTTL is the TTL a request's cache points ask for: pricing.CacheTTL1h when one of them
// asks for an hour, else "" (the provider's default, 5 minutes). A run gives every cache
// point of its requests the same TTL (cacheEnabled).
func cacheTTL(req *model.Request) string {
	oneHour := func(bs []model.Block) bool {
		return slices.ContainsFunc(bs, func(b model.Block) bool {
			return b.Kind == model.BlockCachePoint && b.CacheTTL == pricing.CacheTTL1h
		})
	}
	if req.ToolsCachePoint && req.CacheTTL == pricing.CacheTTL1h || oneHour(req.System) ||
		slices.ContainsFunc(req.Messages, func(m model.Message) bool { return oneHour(m.Content) }) {
		return pricing.CacheTTL1h
	}
	return ""
}

// callEffect is what a control call did to the session.
type callEffect struct {
	moveTo     string // advance/reset target
	moveKind   transcript.TrailKind
	moveReason string
	raise      *Exit
	terminal   string        // a terminal governance block: the state fails with this reason
	wait       *PendingInput // an accepted archmax_wait: the park to commit
	waitCall   string        // the archmax_wait call id
	failure    string        // the state fails with this reason (a wait over its park budget)
	delegated  bool          // a child of a delegation call parked: the session parks with it
}

// runToolCalls answers every call of one assistant message in order (spec 02 §7.1: a tool
// that fails is answered with an error-status message and the state continues). Calls
// already answered are skipped, so a continuation re-enters the message where its
// delegation calls left it; a run of consecutive delegation calls is one concurrent batch
// (02 §8.4).
func (r *run) runToolCalls(st *spec.State, calls []transcript.ToolCall) (stepResult, error) {
	// what an earlier invocation of this message already did: a child parked (its queue),
	// a terminal block (carried across the yield)
	eff := callEffect{delegated: len(r.rec.Delegations) > 0, terminal: r.rec.StepFailure}
	r.rec.StepFailure = ""
	answered := r.answeredCalls()
	todoCalls := 0
	for _, c := range calls {
		if c.Name == writeTodosTool {
			todoCalls++
		}
	}
	for i := 0; i < len(calls); i++ {
		c := calls[i]
		if answered[c.ID] {
			continue
		}
		stopped := eff.moveTo != "" || eff.raise != nil || eff.wait != nil || eff.failure != "" || eff.delegated
		// a run of delegation calls is one batch (answered calls skipped); a recorded one is
		// owed its child's result whatever happened beside it
		inBatch := func(c transcript.ToolCall) bool {
			return spec.IsWorkflowToolName(c.Name) && (!stopped || r.markFor(c.ID) != nil)
		}
		if inBatch(c) {
			batch := []transcript.ToolCall{c}
			j := i + 1
			for ; j < len(calls) && (answered[calls[j].ID] || inBatch(calls[j])); j++ {
				if !answered[calls[j].ID] {
					batch = append(batch, calls[j])
				}
			}
			b := r.delegationBatch(st, batch)
			if b.terminal != "" && eff.terminal == "" {
				eff.terminal = b.terminal
			}
			switch {
			case b.err != nil || b.pending:
				r.rec.StepFailure = eff.terminal // the rest of the message runs in a later call
				if b.err != nil {
					return stepResult{}, b.err
				}
				return stepResult{yielded: true}, nil
			}
			eff.delegated = eff.delegated || b.parked
			i = j - 1
			continue
		}
		var text string
		var isErr, blocked bool
		switch {
		case c.Name == writeTodosTool && todoCalls > 1:
			text, isErr = workspace.TodosParallel, true // BR-48: none of them runs
		case stopped && eff.delegated && eff.moveTo == "" && eff.raise == nil && eff.wait == nil && eff.failure == "":
			text, isErr = notRunAfterDelegatedPark(c.Name), true
		case stopped:
			to := eff.moveTo
			if to == "" {
				to = st.Slug
			}
			text, isErr = notRunAfterMove(c.Name, to), true
		case c.Name == spec.RaiseTool && len(calls) > 1:
			text, isErr = raiseNotAlone, true
		default:
			var e2 callEffect
			var err error
			text, isErr, blocked, e2, err = r.dispatch(st, kernel.OriginAgent, c.ID, c.Name, c.Args)
			if err != nil {
				return stepResult{}, err
			}
			if e2.terminal != "" && eff.terminal == "" {
				eff.terminal = e2.terminal
			}
			if e2.moveTo != "" || e2.raise != nil {
				eff.moveTo, eff.moveKind, eff.moveReason, eff.raise = e2.moveTo, e2.moveKind, e2.moveReason, e2.raise
			}
			if e2.wait != nil {
				eff.wait, eff.waitCall = e2.wait, c.ID
			}
			if e2.failure != "" {
				eff.failure = e2.failure
			}
		}
		r.appendMessage(transcript.Message{Role: transcript.RoleTool, ToolCallID: c.ID, Tool: c.Name, Text: text, Error: isErr, Blocked: blocked, State: st.Slug})
	}
	if eff.terminal != "" || eff.failure != "" {
		// the state fails: its parked children will never be presented
		r.abandonQueue()
		r.rejectAbandoned()
	}
	switch {
	case eff.terminal != "":
		return stepResult{failure: eff.terminal}, nil
	case eff.failure != "":
		return stepResult{failure: eff.failure}, nil
	case eff.delegated:
		return r.presentDelegation(st)
	case eff.wait != nil:
		return r.waitPark(st, eff.wait, eff.waitCall)
	case eff.raise != nil:
		return stepResult{settled: &settlement{status: StatusFailed, exit: eff.raise}}, nil
	case eff.moveTo != "":
		if !r.step() {
			return stepResult{settled: &settlement{status: StatusRejected, reason: stepLimitExceeded}}, nil
		}
		return stepResult{moved: true}, nil
	}
	return stepResult{}, nil
}

// writeTodosTool is the planning tool; its plan lives in the session record (BR-48).
const writeTodosTool = "write_todos"

// readFileTool is the file tool whose answer a script receives as the file text (03 BR-12a).
const readFileTool = "read_file"

// refusal is a call answered without running: governance's block (Blocked), a malformed
// reference or an unknown tool. Terminal marks a block that fails the state (GOV-33).
type refusal struct {
	text              string
	blocked, terminal bool
}

// govern prepares one call for an origin against state st: the agent's own arguments get
// ${{ }} substitution (spec 01 §5.5), path arguments are canonicalised, and the kernel
// decides (GOV-01). A refused call returns the refusal (tool-blocked emitted when warn-level).
func (r *run) govern(st *spec.State, origin kernel.Origin, callID, tool string, args map[string]any) (map[string]any, *refusal) {
	if args == nil {
		args = map[string]any{}
	}
	// calls answered before governance: not a tool (GOV-12), an argument reference that does
	// not resolve (01 §5.5), a path above the root (01 §1.8). No tool-blocked event (they are
	// not governance blocks); a warning makes them visible to operators.
	early := func(text string) (map[string]any, *refusal) {
		r.emit(events.Warning, map[string]any{"scope": "tool-call", "message": text, "state": st.Slug, "tool": tool, "callId": callID})
		return nil, &refusal{text: text}
	}
	if !r.knownTool(tool) {
		return early(notATool(tool))
	}
	if origin == kernel.OriginAgent && !spec.IsWorkflowToolName(tool) {
		resolved, unres := spec.ResolveArgsTyped(args, r.vars(), false)
		if unres != nil {
			return early(spec.UnresolvedArgumentRefusal(unres))
		}
		if m, ok := resolved.(map[string]any); ok {
			args = m
		}
	}
	pol := r.policy()
	uses, escaped := pol.PathUses(tool, args)
	if escaped != "" {
		return early(pathEscapeRefusal(tool, escaped))
	}
	v := kernel.Decide(pol, kernel.Action{Tool: tool, Args: args, State: st.Slug, Origin: origin, Paths: uses, ReplyOnly: r.replyOnly})
	if v.Allow {
		return args, nil
	}
	if v.Warn {
		data := map[string]any{"state": st.Slug, "tool": tool, "reason": v.Reason, "ruleId": v.RuleID, "args": args}
		if callID != "" {
			data["callId"] = callID
		}
		if origin != kernel.OriginAgent {
			data["origin"] = string(origin)
		}
		r.emit(events.ToolBlocked, data)
	}
	return nil, &refusal{text: v.Reason, blocked: true, terminal: v.Terminal}
}

// emitCalled emits tool-called for a governed call that passed governance (02 §12.6).
func (r *run) emitCalled(state string, origin kernel.Origin, callID, tool string, args map[string]any) {
	called := map[string]any{"state": state, "tool": tool, "callId": callID, "args": args}
	if d := detailOf(args); d != "" {
		called["detail"] = d
	}
	if origin != kernel.OriginAgent {
		called["origin"] = string(origin)
	}
	r.emit(events.ToolCalled, called)
	r.traceToolStart(state, origin, callID, tool) // the call's span (trace.go)
}

// emitResult settles a tool-called with tool-result (preview capped, 02 §12.6).
func (r *run) emitResult(state string, origin kernel.Origin, callID, tool, text string, isErr bool, start time.Time) {
	status := "ok"
	if isErr {
		status = "error"
	}
	preview, truncated := previewOf(text)
	result := map[string]any{"state": state, "tool": tool, "callId": callID, "status": status,
		"durationMs": r.e.cfg.Clock().Sub(start).Milliseconds(), "output": preview, "truncated": truncated}
	if origin != kernel.OriginAgent {
		result["origin"] = string(origin)
	}
	r.emit(events.ToolResult, result)
	r.traceToolEnd(callID, isErr)
}

// dispatch runs one of the agent's tool calls: govern, then the tool. It returns the text
// the model reads, whether it is an error-status result, whether governance refused it,
// and the control's effect.
func (r *run) dispatch(st *spec.State, origin kernel.Origin, callID, tool string, args map[string]any) (string, bool, bool, callEffect, error) {
	args, ref := r.govern(st, origin, callID, tool, args)
	if ref != nil {
		eff := callEffect{}
		if ref.terminal {
			eff.terminal = ref.text
		}
		return ref.text, true, ref.blocked, eff, nil
	}
	r.emitCalled(st.Slug, origin, callID, tool, args)
	start := r.e.cfg.Clock()
	var text string
	var isErr bool
	var eff callEffect
	mocked, isMocked := r.mockedResult(tool, args) // after governance (03 MK-02)
	switch {
	case isMocked:
		text = mocked
	case tool == spec.EvalTool || tool == spec.RunTool:
		var err error
		if text, isErr, err = r.runScript(st, callID, tool, args); err != nil {
			return "", false, false, eff, err
		}
	case spec.IsControlTool(tool):
		text, isErr, eff = r.control(st, origin, callID, tool, args)
	case tool == writeTodosTool:
		raw, _ := json.Marshal(args)
		todos, problem := workspace.ParseTodos(raw)
		if problem != "" {
			text, isErr = problem, true
		} else {
			r.rec.Todos = todos
			text = workspace.TodosResult(todos)
		}
	default:
		var err error
		text, isErr, err = r.callTool(r.ctx, tool, callID, st.Slug, args, r.listingHide(tool, st.Slug, origin))
		if err != nil {
			return "", false, false, eff, err
		}
		if r.e.hostTools[tool] != nil && !isErr {
			text = r.offloadIfLarge(callID, text)
		}
	}
	r.emitResult(st.Slug, origin, callID, tool, text, isErr, start)
	return text, isErr, false, eff, nil
}

// offloadIfLarge moves a host tool's result over the offload threshold (80,000 UTF-16
// units) to large_tool_results/ and answers the model with a pointer to it; the built-in
// file tools cap their own results (03 BR-41).
func (r *run) offloadIfLarge(callID, text string) string {
	if _, cut := capUnits(text, workspace.OffloadThreshold); !cut {
		return text
	}
	pointer, err := r.ws.Offload(context.WithoutCancel(r.ctx), callID, text)
	if err != nil {
		short, _ := capUnits(text, workspace.OffloadThreshold)
		r.warn("tool-call", "could not offload a large tool result: "+err.Error())
		return short
	}
	return pointer
}

// callTool runs a non-control tool (the workspace's file tools). A cancellation is
// returned as an error; any other failure is the tool's error text.
//
// hide, when set, is the call's listing redaction (listingHide): ls, glob and grep leave out
// what the caller could not read or list by name.
func (r *run) callTool(ctx context.Context, tool, callID, state string, args map[string]any, hide workspace.HideFunc) (string, bool, error) {
	if hide != nil {
		ctx = workspace.WithHide(ctx, hide)
	}
	if t := r.e.hostTools[tool]; t != nil {
		text, err := t.Handler(ctx, HostCall{SessionID: r.id, State: state, CallID: callID, Args: args, Workspace: r.ws,
			IdempotencyKey: r.id + "/" + r.turnID() + "/" + callID})
		if err != nil {
			if ctx.Err() != nil {
				return "", false, ctx.Err()
			}
			return err.Error(), true, nil // a tool that errors is answered with its error; the turn goes on
		}
		return text, false, nil
	}
	raw, _ := json.Marshal(args)
	res, err := r.ws.Call(ctx, tool, raw)
	if err != nil {
		if ctx.Err() != nil {
			return "", false, err
		}
		return "Error: " + err.Error(), true, nil
	}
	return res.Text, res.Error, nil
}

// knownTool reports whether a name is a tool at all (GOV-12): anything this runtime
// implements, or a name governance must answer for (eval, task, delegation tools). A
// spec-defined tool this runtime does not offer yet is "not a tool" here.
func (r *run) knownTool(name string) bool {
	return r.e.available(name) || name == "eval" || name == "task" || spec.IsWorkflowToolName(name)
}

// detailOf is the first non-blank of file_path, path, to, pattern, command, url (02 §12.2).
func detailOf(args map[string]any) string {
	for _, k := range []string{"file_path", "path", "to", "pattern", "command", "url"} {
		if s, ok := args[k].(string); ok && strings.TrimSpace(s) != "" {
			return s
		}
	}
	return ""
}

// previewOf caps a tool-result preview at 4096 UTF-16 units (02 §12.6).
func previewOf(s string) (string, bool) { return capUnits(s, spec.ToolOutputPreviewCap) }

// capUnits cuts s to at most max UTF-16 units without splitting a surrogate pair.
func capUnits(s string, max int) (string, bool) {
	units := 0
	for i, rn := range s {
		n := utf16.RuneLen(rn)
		if n < 0 {
			n = 1
		}
		if units+n > max {
			return s[:i], true
		}
		units += n
	}
	return s, false
}

// toolSpecs renders a surface as Converse tool specs.
func (e *Engine) toolSpecs(surface []string) []model.ToolSpec {
	var out []model.ToolSpec
	for _, name := range surface {
		desc, schema := e.toolSpec(name)
		if schema == nil {
			continue
		}
		out = append(out, model.ToolSpec{Name: name, Description: desc, InputSchema: schema})
	}
	return out
}

func (e *Engine) toolSpec(name string) (string, json.RawMessage) {
	if t := e.hostTools[name]; t != nil {
		return t.Description, t.InputSchema
	}
	if cs, ok := controlSpecs[name]; ok {
		return cs.desc, json.RawMessage(cs.schema)
	}
	if implemented[name] {
		return workspace.ToolSpec(name)
	}
	return "", nil
}
