package session

// Sub-workflows (spec 02 §8, §3.7; 01 §7.5; 03 §4.5): a state that allows
// archmax_workflow_<slug> hands work to another workflow of the same authored tree, run as a
// child session <parent>~<n> with its own checkpoint, files and lease.
//
// A dispatch has three phases. prepare runs under the parent's run (its goroutine, or a
// script host's lock): the dispatch checks, the child number, the start event. run drives
// the child on its own goroutine and touches nothing of the parent. finish, under the run
// again, turns the child's outcome into the call's answer: the result, the sub-workflow
// trail step and result event, the usage roll-up, or a delegated park.
//
// An agent's delegation calls are recorded on the parent (record.Dispatches) and committed
// before their children start, so an invocation that stops — at its step deadline, cut, or
// crashed — leaves a parent whose continuation drives the same children on from their own
// checkpoints and answers the calls (DESIGN.md §4).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/archmax-ai/archmax/core/events"
	"github.com/archmax-ai/archmax/core/identity"
	"github.com/archmax-ai/archmax/core/kernel"
	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/pricing"
	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/store"
	"github.com/archmax-ai/archmax/core/transcript"
	"github.com/archmax-ai/archmax/core/workspace"
)

// DelegatedPark names the child whose park a session presents (spec 02 §3.7): set on
// Outcome.Delegation and Park.Delegation while the parent waits on the child's decision or
// input. A decision or delivery addressed to the parent is routed to the child.
type DelegatedPark struct {
	Workflow    string `json:"workflow"`             // the child's workflow slug
	SessionID   string `json:"sessionId"`            // the child session id, <parent>~<identity>
	Identity    int    `json:"identity"`             // the dispatch number in the parent
	DispatchID  string `json:"dispatchId"`           // as the sub-workflow-* events name it
	ToolCallID  string `json:"toolCallId,omitempty"` // the delegation call in the parent's transcript
	State       string `json:"state"`                // the calling (parent) state
	ChildParkID string `json:"childParkId"`          // the child's own live park
	// Inner is the child's own delegated park when the decision or input belongs to a
	// sub-workflow further down (a park presented through several levels).
	Inner *DelegatedPark `json:"inner,omitempty"`
}

// childScope is a child session's place in its delegation chain.
type childScope struct {
	// Chain is the workflow slugs of every session above the child, root first.
	Chain      []string `json:"chain"`
	DispatchID string   `json:"dispatchId"`
	State      string   `json:"state"` // the calling state in the parent
	ToolCallID string   `json:"toolCallId,omitempty"`
}

// dispatchMark is a child owing its parent a result (record.Dispatches).
type dispatchMark struct {
	N          int            `json:"n"`
	Workflow   string         `json:"workflow"`
	State      string         `json:"state"` // the calling state
	ToolCallID string         `json:"toolCallId"`
	Args       map[string]any `json:"args,omitempty"` // the resolved arguments (a child not yet started)
	StartedAt  int64          `json:"startedAt"`      // epoch ms
	// Resume is set for a delegated park's child resumed through the parent: what to apply
	// to the child's park when it is still live. Its result becomes a note, not a tool result.
	Resume *resumeMark `json:"resume,omitempty"`
	Rolled *Usage      `json:"rolled,omitempty"` // the child's usage already added to the parent's
}

// resumeMark is a decision or delivery routed to a parked child (02 §3.7).
type resumeMark struct {
	ChildParkID string         `json:"childParkId"`
	To          string         `json:"to,omitempty"` // a decision
	Comment     string         `json:"comment,omitempty"`
	Trigger     string         `json:"trigger,omitempty"` // a delivery (its files already placed in the child)
	Variables   map[string]any `json:"variables,omitempty"`
	Message     string         `json:"message,omitempty"`
	DeliveryID  string         `json:"deliveryId,omitempty"`
	// By is who decided or delivered (the caller of the parent's call): the child records it.
	By *identity.Principal `json:"by,omitempty"`
}

// queuedDelegation is a parked child waiting to be presented, or presented, by its parent.
type queuedDelegation struct {
	Delegation DelegatedPark `json:"delegation"`
	Park       *Park         `json:"park"` // the child's park as it arrived
	Rolled     *Usage        `json:"rolled,omitempty"`
}

// returnsNoteName is the reserved return carrying the missing-returns note (01 §7.5).
const returnsNoteName = "note"

// delegation is one dispatch between prepare and finish.
type delegation struct {
	mark    *dispatchMark
	childID string
	sib     *Engine
	origin  kernel.Origin
	chain   []string // the child's chain (the workflows above it)
	returns []spec.SignatureEntry
	files   map[string]TurnFile // file arguments to place in a child not yet started
	mock    *ToolMock
	owner   *identity.Principal // the parent's owner: a child started here is owned by it too
	frames  []budgetFrame       // the budgets above the child (childFrames), taken under the parent's run
	// results of run
	out      *Outcome
	err      error
	deferred bool // not driven: the step deadline had passed when its slot came free
}

func (d *delegation) dispatchID() string { return spec.DispatchIDOf(d.childID) }

// depth is this session's delegation depth (a root session is 0).
func (r *run) depth() int { return strings.Count(r.id, "~") }

// chain is the workflow slugs of this session and every session above it, root first: the
// chain a child of this session sits under.
func (r *run) chain() []string {
	var c []string
	if r.rec.Scope != nil {
		c = slices.Clone(r.rec.Scope.Chain)
	}
	return append(c, r.e.cfg.Workflow)
}

// maxDepth and maxConcurrent are the dispatcher's bounds (02 §8.3).
func (e *Engine) maxDepth() int {
	if e.cfg.MaxDelegationDepth > 0 {
		return e.cfg.MaxDelegationDepth
	}
	return spec.DefaultSubWorkflowDepth
}

func (e *Engine) maxConcurrent() int {
	if e.cfg.MaxConcurrentDelegations > 0 {
		return e.cfg.MaxConcurrentDelegations
	}
	return spec.DefaultSubWorkflowConcurrency
}

// slot takes one of the session's in-flight child slots, waiting (FIFO) while all are
// taken (02 §8.3: extra dispatches queue); false when ctx ends first.
func (r *run) slot(ctx context.Context) (release func(), ok bool) {
	r.slotsOnce.Do(func() { r.slots = make(chan struct{}, r.e.maxConcurrent()) })
	select {
	case r.slots <- struct{}{}:
		return func() { <-r.slots }, true
	case <-ctx.Done():
		return nil, false
	}
}

// prepareDelegation checks one delegation call that governance allowed (02 §8.1, in the
// reference's order: depth, cycle, argument references, the target's spec, disabled,
// missing and mistyped arguments) and, when it may run, numbers the child and emits
// sub-workflow-start. A refusal returns its text, after a start/result pair of status error.
//
// args are the call's arguments as resolveDelegationArgs resolved them (and governance
// judged them); unres is its failure, refused after the depth and cycle checks. target is
// the preloaded target (nil loads it here).
func (r *run) prepareDelegation(st *spec.State, origin kernel.Origin, callID, tool string, args map[string]any, unres *argUnresolved, target *loadedTarget) (*delegation, string) {
	slug, _ := spec.WorkflowSlugFromToolName(tool)
	chain := r.chain()
	depth := r.depth() + 1
	path := strings.Join(append(slices.Clone(chain), slug), " → ")
	n := r.nextChild()
	d := &delegation{childID: spec.ChildSessionID(r.id, n), origin: origin, chain: chain, owner: r.rec.Owner,
		mark: &dispatchMark{N: n, Workflow: slug, State: st.Slug, ToolCallID: callID, StartedAt: r.e.cfg.Clock().UnixMilli()}}
	refuse := func(text string) (*delegation, string) {
		// a refused dispatch creates no child: its events carry no child id
		r.emitDispatchStart(d, depth, false)
		r.emitDispatchResult(d, "error", text, nil, true)
		return nil, text
	}
	if depth > r.e.maxDepth() {
		return refuse(delegationDepthExceeded(slug, depth, r.e.maxDepth(), path))
	}
	if slices.Contains(chain, slug) {
		return refuse(delegationCycle(slug, path))
	}
	if unres != nil {
		return refuse(delegationUnresolved(slug, unres.param, unres.detail))
	}
	params := args
	if params == nil {
		params = map[string]any{}
	}
	d.mark.Args = params
	d.mock = matchMock(r.ctx, tool, params)
	if target == nil {
		target = r.e.loadTarget(r.ctx, slug)
	}
	if target.problem != "" && d.mock == nil {
		return refuse(target.problem)
	}
	d.sib = target.sib
	var requires []spec.SignatureEntry
	if sp := target.spec; sp != nil {
		if sp.Disabled {
			return refuse(delegationDisabled(slug))
		}
		if trig := sp.Trigger(spec.ManualTrigger); trig != nil {
			requires, d.returns = trig.Requires, trig.Returns
		}
	}
	var missing, invalid []string
	for _, is := range spec.SignatureValueIssues(requires, params) {
		if is.Kind == "missing" {
			missing = append(missing, is.Name)
		} else {
			invalid = append(invalid, is.Message)
		}
	}
	if len(missing) > 0 {
		return refuse(delegationMissingParams(slug, missing))
	}
	// an argument is seeded as a locked variable: its name must be one, a title a title, and
	// never a return the child owes (a caller could otherwise hand itself the answer)
	returned := map[string]bool{}
	for _, e := range d.returns {
		returned[e.Name] = true
	}
	for _, e := range requires { // a value the child requires and hands back is the caller's to give
		delete(returned, e.Name)
	}
	for _, k := range slices.Sorted(maps.Keys(params)) {
		switch {
		case !spec.IsVariableName(k):
			invalid = append(invalid, fmt.Sprintf("'%s' is not a variable name (lowercase letters, digits and underscores, starting with a letter)", k))
		case returned[k] || k == returnsNoteName:
			invalid = append(invalid, fmt.Sprintf("'%s' is a return of '%s': the sub-workflow sets it, a caller cannot supply it", k, slug))
		case k == spec.TitleVariable:
			if detail := spec.TitleWriteError(params[k]); detail != "" {
				invalid = append(invalid, "'title' "+strings.TrimSuffix(detail, "."))
			}
		}
	}
	if len(invalid) > 0 {
		return refuse(delegationInvalidParams(slug, invalid))
	}
	if d.mock == nil {
		files, text := r.delegationFiles(slug, requires, params)
		if text != "" {
			return refuse(text)
		}
		d.files = files
	}
	r.emitDispatchStart(d, depth, d.mock == nil)
	return d, ""
}

// nextChild returns the next unused child number: the counter moves past any id a child
// already holds (one a crashed call started before its parent could record it).
func (r *run) nextChild() int {
	for {
		r.rec.DispatchCount++
		id := spec.ChildSessionID(r.id, r.rec.DispatchCount)
		if _, err := r.e.cfg.Log.Get(r.ctx, id); err != nil { // not found (or unreadable: the start will tell)
			return r.rec.DispatchCount
		}
	}
}

// argUnresolved is a delegation argument whose ${{ }} reference does not resolve.
type argUnresolved struct{ param, detail string }

// resolveDelegationArgs substitutes ${{ }} references in a delegation call's arguments
// verbatim (01 §5.5, 02 §8.1), before governance judges them: an argument that is exactly
// one reference keeps the referenced value's type. On a failure the arguments come back
// unresolved, with the first failing parameter in name order.
func (r *run) resolveDelegationArgs(args map[string]any) (map[string]any, *argUnresolved) {
	out := make(map[string]any, len(args))
	vars := r.vars()
	for _, k := range slices.Sorted(maps.Keys(args)) {
		v, unres := spec.ResolveArgsTyped(args[k], vars, true)
		if unres != nil {
			return args, &argUnresolved{param: k, detail: unres.Detail}
		}
		out[k] = v
	}
	return out, nil
}

// loadedTarget is a delegation target as loaded for one dispatch.
type loadedTarget struct {
	sib     *Engine
	spec    *spec.MachineSpec
	problem string // the refusal (unknown-workflow, not-delegatable), "" when usable
}

// loadTarget loads a delegation target; it touches only engines, so a script host calls it
// outside its lock.
func (e *Engine) loadTarget(ctx context.Context, slug string) *loadedTarget {
	sib, sp, problem := e.delegationTarget(ctx, slug)
	return &loadedTarget{sib: sib, spec: sp, problem: problem}
}

// delegationTarget loads a delegation target: its engine and spec, or the refusal text
// (unknown-workflow, not-delegatable). A broken target fails the dispatch only (02 §8.4).
func (e *Engine) delegationTarget(ctx context.Context, slug string) (*Engine, *spec.MachineSpec, string) {
	sib, err := e.sibling(ctx, slug)
	if err != nil {
		return nil, nil, delegationUnknown(slug, fmt.Sprintf("no 'workflows/%s/workflow.yaml' found", slug))
	}
	sp, err := sib.loadSpec(ctx)
	if err != nil {
		var unknown *UnknownWorkflowError
		var load *spec.WorkflowLoadError
		switch {
		case errors.As(err, &unknown):
			return nil, nil, delegationUnknown(slug, fmt.Sprintf("no 'workflows/%s/workflow.yaml' found", slug))
		case errors.As(err, &load):
			return sib, nil, delegationUnknown(slug, loadProblems(load))
		case errors.As(err, new(*spec.UnsupportedRuntimeContractError)):
			return sib, nil, delegationUnknown(slug, strings.TrimSuffix(err.Error(), "."))
		}
		return sib, nil, delegationUnknown(slug, err.Error())
	}
	if sp.Trigger(spec.ManualTrigger) == nil {
		return sib, sp, delegationNoManual(slug)
	}
	return sib, sp, ""
}

// loadProblems joins a load error's error diagnostics.
func loadProblems(e *spec.WorkflowLoadError) string {
	var msgs []string
	for _, d := range e.Diagnostics {
		if d.Severity == "error" {
			msgs = append(msgs, strings.TrimSuffix(d.Message, "."))
		}
	}
	if len(msgs) == 0 {
		return "no valid machine spec"
	}
	return strings.Join(msgs, "; ")
}

// delegationFiles reads the parent's files a `file`-typed argument names, to be placed in
// the child's scratchpad/attachments/ (02 §8.1 [P]).
func (r *run) delegationFiles(slug string, requires []spec.SignatureEntry, params map[string]any) (map[string]TurnFile, string) {
	var files map[string]TurnFile
	for _, e := range requires {
		if e.Type != "file" {
			continue
		}
		p, _ := params[e.Name].(string)
		b, err := r.ws.ReadFile(r.ctx, p)
		if err != nil {
			return nil, delegationInvalidParams(slug, []string{fmt.Sprintf("'%s' names '%s', which cannot be read (%v)", e.Name, p, err)})
		}
		if files == nil {
			files = map[string]TurnFile{}
		}
		name := p[strings.LastIndexByte(p, '/')+1:]
		files[e.Name] = TurnFile{Name: name, Content: b}
	}
	return files, ""
}

// emitDispatchStart emits sub-workflow-start (02 §8.4); child says whether a child session
// is created (the envelope's sessionId is the emitting session: the child's id has its own
// key, childSessionId).
func (r *run) emitDispatchStart(d *delegation, depth int, child bool) {
	m := d.mark
	data := map[string]any{"state": m.State, "workflow": m.Workflow, "dispatchId": d.dispatchID(), "depth": depth}
	if child {
		data["childSessionId"] = d.childID
	}
	if m.ToolCallID != "" {
		data["toolCallId"] = m.ToolCallID
	}
	if len(d.chain) > 0 {
		data["chain"] = slices.Clone(d.chain)
	}
	r.emit(events.SubWorkflowStart, data)
}

// emitDispatchResult emits sub-workflow-result (02 §8.4): returns are names, never values.
func (r *run) emitDispatchResult(d *delegation, status, reason string, returns []string, refused bool) {
	m := d.mark
	data := map[string]any{"state": m.State, "workflow": m.Workflow, "dispatchId": d.dispatchID(), "status": status, "durationMs": int64(0)}
	if !refused {
		data["durationMs"] = max(int64(0), r.e.cfg.Clock().UnixMilli()-m.StartedAt)
		if d.mock == nil {
			data["childSessionId"] = d.childID
		}
	}
	if m.ToolCallID != "" {
		data["toolCallId"] = m.ToolCallID
	}
	if reason != "" {
		data["reason"] = reason
	}
	if refused {
		data["refused"] = true // a refusal, not a child's failure (no child ran)
	}
	if returns != nil {
		data["returns"] = returns
	}
	r.emit(events.SubWorkflowResult, data)
}

// resumeDelegation rebuilds the dispatch of a recorded mark (a continuation, a crash
// recovery): a child that never committed gets its start again, file arguments re-read.
func (r *run) resumeDelegation(m *dispatchMark) *delegation {
	d := &delegation{mark: m, childID: spec.ChildSessionID(r.id, m.N), origin: kernel.OriginAgent, chain: r.chain(), owner: r.rec.Owner}
	sib, target, _ := r.e.delegationTarget(r.ctx, m.Workflow)
	d.sib = sib
	if target != nil {
		if trig := target.Trigger(spec.ManualTrigger); trig != nil {
			d.returns = trig.Returns
			if _, err := r.e.cfg.Log.Get(r.ctx, d.childID); errors.Is(err, store.ErrNotFound) && m.Resume == nil {
				d.files, _ = r.delegationFiles(m.Workflow, trig.Requires, m.Args)
			}
		}
	}
	return d
}

// run drives the child on the calling goroutine: starts it, carries on an interrupted one,
// applies a routed resume, or reads a settled one's outcome. It touches nothing of the
// parent.
func (d *delegation) run(ctx context.Context) {
	if d.mock != nil {
		return
	}
	if d.sib == nil {
		d.err = &UnknownWorkflowError{Workflow: d.mark.Workflow}
		return
	}
	d.out, d.err = d.sib.driveChild(withBudgetFrames(ctx, d.frames), d.childID, d)
}

// runDelegations runs dispatches concurrently, each holding one of the session's child
// slots, and waits for all of them.
func (r *run) runDelegations(ctx context.Context, ds []*delegation) {
	for _, d := range ds {
		d.frames = r.childFrames(d.mark)
	}
	var wg sync.WaitGroup
	for _, d := range ds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			release, ok := r.slot(ctx)
			if !ok {
				d.err = ctx.Err()
				return
			}
			defer release()
			// past the step deadline only one child of the call is driven (its one step is the
			// call's progress); the others wait for the next invocation rather than each take
			// a step after the deadline, wave after wave
			if t, ok := StepDeadline(ctx); ok && !r.e.cfg.Clock().Before(t) && !r.childDriven.CompareAndSwap(false, true) {
				d.deferred = true
				return
			}
			r.childDriven.Store(true)
			d.run(r.traceDelegation(ctx, d))
		}()
	}
	wg.Wait()
}

// dispatchAnswer is a finished dispatch as the caller reads it.
type dispatchAnswer struct {
	text    string
	isErr   bool
	blocked bool              // a refusal: a governed "no" the agent may correct (02 §8.1)
	parked  bool              // the child parked (an agent's call: the parent parks with it)
	pending bool              // no answer yet: the child is still running (the mark stays)
	queued  *queuedDelegation // the parked child, to queue
	err     error             // a failure of the parent's call itself (a cancelled turn, a store failure)
}

// finishDelegation turns a dispatch's child outcome into its answer, recording the
// sub-workflow trail step and result event, rolling the child's usage into the parent's
// and, for an agent's call whose child parked, queuing the delegated park (02 §8.4, §3.7).
// canPark is false for scripts and graders: their park fails the call (03 AS-44).
func (r *run) finishDelegation(d *delegation, canPark bool) dispatchAnswer {
	m, wf := d.mark, d.mark.Workflow
	if d.mock != nil {
		text, failure, names := r.mockAnswer(d)
		return r.settleDispatch(d, text, failure, names)
	}
	if d.deferred {
		return dispatchAnswer{pending: true}
	}
	if d.err != nil {
		switch text, permanent := childFailure(wf, d.err); {
		case permanent:
			return r.settleDispatch(d, "", text, nil)
		case canPark:
			// the parent's call stops with it; the mark stays, so the continuation (or the
			// next attempt) drives the child on from its own checkpoint
			return dispatchAnswer{pending: true, err: d.err}
		case r.ctx.Err() != nil || errors.Is(d.err, context.Canceled) || errors.Is(d.err, context.DeadlineExceeded):
			return r.settleDispatch(d, "", delegationFailed(wf, "the turn was aborted"), nil)
		}
		return r.settleDispatch(d, "", delegationFailed(wf, d.err.Error()), nil)
	}
	out := d.out
	r.rollUsage(m, out.Usage)
	switch out.Kind {
	case KindRunning:
		return dispatchAnswer{pending: true}
	case KindParked:
		r.emitDispatchResult(d, "parked", "", nil, false)
		if !canPark || out.Pending == nil {
			text := delegationScriptParked(wf)
			if canPark {
				text = delegationUnsettled(wf, out.State, out.Status)
			}
			// nothing can ever resume it (a child is driven only by its caller): it ends here
			// rather than wait for ever [decision D8-18]
			if _, err := d.sib.rejectChild(r.ctx, d.childID, childCannotWait); err != nil {
				r.warn("sub-workflow", fmt.Sprintf("could not settle the parked sub-workflow session '%s': %v", d.childID, err))
			}
			return dispatchAnswer{text: text, isErr: true}
		}
		return dispatchAnswer{text: delegationAgentParked(wf, out.Pending), isErr: true, parked: true, queued: d.queued(out.Pending)}
	}
	text, failure, names := r.childAnswer(d, out)
	return r.settleDispatch(d, text, failure, names)
}

// errChildLost: a recorded resume whose child session has no record.
var errChildLost = errors.New("the sub-workflow child has no record to resume")

// childFailure classifies an error driving a child: a permanent one (the child's spec no
// longer loads, the child refused what was routed to it, its record is gone) is the
// dispatch's failure, with its text; any other (a model or store failure, a busy lease, a
// cancellation) is transient — the dispatch stays owed and a retry drives it on.
func childFailure(wf string, err error) (string, bool) {
	var load *spec.WorkflowLoadError
	var unknown *UnknownWorkflowError
	var target *InvalidDecisionTargetError
	var trigger *spec.UnknownTriggerError
	switch {
	case errors.As(err, &load):
		return delegationFailed(wf, loadProblems(load)), true
	case errors.As(err, new(*spec.UnsupportedRuntimeContractError)):
		return delegationFailed(wf, err.Error()), true
	case errors.As(err, &unknown):
		return delegationFailed(wf, unknown.Error()), true
	case errors.As(err, &target), errors.As(err, &trigger), errors.Is(err, errChildLost):
		return delegationFailed(wf, err.Error()), true
	}
	return "", false
}

// queued is the delegated park of d's child, parked at p, as its parent queues it.
func (d *delegation) queued(p *Park) *queuedDelegation {
	m := d.mark
	return &queuedDelegation{Park: p, Rolled: m.Rolled,
		Delegation: DelegatedPark{Workflow: m.Workflow, SessionID: d.childID, Identity: m.N, DispatchID: d.dispatchID(),
			ToolCallID: m.ToolCallID, State: m.State, ChildParkID: p.ParkID, Inner: p.Delegation}}
}

// settleDispatch records a dispatch that settled: the trail step, the result event.
func (r *run) settleDispatch(d *delegation, text, failure string, returns []string) dispatchAnswer {
	status := "ok"
	if failure != "" {
		status = "error"
	}
	r.emitDispatchResult(d, status, failure, returns, false)
	r.appendTrail(transcript.TrailStep{To: d.mark.State, Kind: transcript.TrailSubWorkflow, Workflow: d.mark.Workflow, Status: status})
	if failure != "" {
		return dispatchAnswer{text: failure, isErr: true}
	}
	return dispatchAnswer{text: text}
}

// childAnswer is a settled child's result (02 §8.4): {message, returns} — or the message
// alone when the child declares no returns — or the failure text.
func (r *run) childAnswer(d *delegation, out *Outcome) (text, failure string, returns []string) {
	message, handed, failure := r.childResult(d, out)
	switch {
	case failure != "":
		return "", failure, nil
	case handed == nil:
		return message, "", nil
	}
	return resultJSON(message, handed), "", slices.Sorted(maps.Keys(handed))
}

// childResult is a settled child's closing message and handed returns (nil when it declares
// none), or the failure text.
func (r *run) childResult(d *delegation, out *Outcome) (message string, handed map[string]any, failure string) {
	wf := d.mark.Workflow
	switch out.Status {
	case StatusFailed:
		code, reason := "unknown", "no reason recorded"
		if out.Exit != nil {
			code, reason = out.Exit.Code, out.Exit.Reason
		}
		return "", nil, delegationRaised(wf, code, out.State, reason)
	case StatusRejected:
		return "", nil, delegationRejected(wf, out.State, out.Rejected)
	case StatusCompleted:
	default:
		return "", nil, delegationUnsettled(wf, out.State, out.Status)
	}
	message = closingMessage(out.Messages)
	if len(d.returns) == 0 {
		return message, nil, ""
	}
	values := map[string]any{}
	for _, e := range d.returns {
		if v, ok := out.Variables[e.Name]; ok {
			values[e.Name] = v.Value
		}
	}
	handed, failure = r.handReturns(d, fmt.Sprintf("in state '%s'", out.State), values)
	if failure != "" {
		return "", nil, failure
	}
	return message, handed, ""
}

// handReturns holds a child's returns to its signature (01 §7.5): a mistyped value fails the
// call (invalid-return), unset ones are named in `note`, a `file` return is copied into the
// parent's scratchpad under a fresh name and handed on as the parent's path.
func (r *run) handReturns(d *delegation, where string, values map[string]any) (map[string]any, string) {
	wf := d.mark.Workflow
	var unset, invalid []string
	for _, is := range spec.SignatureValueIssues(d.returns, values) {
		if is.Kind == "missing" {
			unset = append(unset, is.Name)
		} else {
			invalid = append(invalid, is.Message)
		}
	}
	if len(invalid) > 0 {
		return nil, delegationInvalidReturns(wf, where, invalid)
	}
	handed := map[string]any{}
	for _, e := range d.returns {
		v, ok := values[e.Name]
		if !ok {
			continue
		}
		if e.Type == "file" && d.mock == nil {
			p, err := r.copyReturnedFile(d, v.(string))
			if err != nil {
				return nil, delegationFailed(wf, fmt.Sprintf("its return '%s' names '%s', which could not be copied back: %v", e.Name, v, err))
			}
			v = p
		}
		handed[e.Name] = v
	}
	if len(unset) > 0 {
		handed[returnsNoteName] = delegationMissingReturnsNote(unset)
	}
	return handed, ""
}

// copyReturnedFile copies a file of the child's workspace into the parent's scratchpad
// under a name no other file holds, returning the parent's path.
func (r *run) copyReturnedFile(d *delegation, p string) (string, error) {
	child := workspace.New(r.e.cfg.Files, d.childID, r.e.workspaceMounts())
	b, err := child.ReadFile(context.WithoutCancel(r.ctx), p)
	if err != nil {
		return "", err
	}
	return r.ws.PlaceAttachment(context.WithoutCancel(r.ctx), p[strings.LastIndexByte(p, '/')+1:], b)
}

// resultJSON renders {message, returns} with message first.
func resultJSON(message string, returns map[string]any) string {
	b, _ := json.Marshal(struct {
		Message string         `json:"message"`
		Returns map[string]any `json:"returns"`
	}{message, returns})
	return string(b)
}

// closingMessage is a child's last agent text, or the explicit no-message text.
func closingMessage(msgs []transcript.Message) string {
	if t := transcript.LastAgentText(msgs); t != "" {
		return t
	}
	return noClosingMessage
}

// rollUsage adds what a child spent since its last roll-up to the parent's usage (02 §8.7).
func (r *run) rollUsage(m *dispatchMark, total *Usage) {
	if total.Empty() {
		return
	}
	delta := *total
	if m.Rolled != nil {
		delta.InputTokens -= m.Rolled.InputTokens
		delta.OutputTokens -= m.Rolled.OutputTokens
		delta.CacheReadTokens -= m.Rolled.CacheReadTokens
		delta.CacheCreationTokens -= m.Rolled.CacheCreationTokens
		if delta.CostUSD != nil && m.Rolled.CostUSD != nil {
			c := pricing.Round(*delta.CostUSD - *m.Rolled.CostUSD)
			delta.CostUSD = &c
		}
	}
	if r.rec.Usage == nil {
		r.rec.Usage = &Usage{}
	}
	u := r.rec.Usage
	u.InputTokens += delta.InputTokens
	u.OutputTokens += delta.OutputTokens
	u.CacheReadTokens += delta.CacheReadTokens
	u.CacheCreationTokens += delta.CacheCreationTokens
	u.CostUSD = pricing.Add(u.CostUSD, delta.CostUSD)
	rolled := *total
	m.Rolled = &rolled
}

// markFor returns the recorded dispatch answering tool call callID, if any.
func (r *run) markFor(callID string) *dispatchMark {
	for _, m := range r.rec.Dispatches {
		if m.Resume == nil && m.ToolCallID == callID {
			return m
		}
	}
	return nil
}

func (r *run) dropMark(m *dispatchMark) {
	r.rec.Dispatches = slices.DeleteFunc(r.rec.Dispatches, func(x *dispatchMark) bool { return x == m })
}

// delegationBatch runs a run of consecutive delegation calls of one assistant message (02
// §8.4: concurrent calls succeed or fail independently): each governed and checked in call
// order, the accepted ones recorded and committed, their children run concurrently within
// the session's bound, and every call answered in call order. Calls already recorded (a
// continuation) drive their children on instead. pending reports calls left unanswered
// because a child is still running; err is the parent call's own failure.
func (r *run) delegationBatch(st *spec.State, calls []transcript.ToolCall) (b batchResult) {
	answers := make([]*dispatchAnswer, len(calls))
	var ds []*delegation
	idx := map[*delegation]int{}
	fresh := false
	msgID := ""
	if last := r.lastAssistant(); last != nil {
		msgID = last.ID
	}
	for i, c := range calls {
		if m := r.markFor(c.ID); m != nil {
			d := r.resumeDelegation(m)
			ds, idx[d] = append(ds, d), i
			continue
		}
		resolved, unres := r.resolveDelegationArgs(c.Args)
		args, ref := r.govern(st, kernel.OriginAgent, c.ID, c.Name, resolved)
		if ref != nil {
			answers[i] = &dispatchAnswer{text: ref.text, isErr: true, blocked: ref.blocked}
			if ref.terminal && b.terminal == "" {
				b.terminal = ref.text
			}
			continue
		}
		d, refusal := r.prepareDelegation(st, kernel.OriginAgent, c.ID, c.Name, args, unres, nil)
		if refusal != "" {
			answers[i] = &dispatchAnswer{text: refusal, isErr: true, blocked: true}
			continue
		}
		r.emitCalled(st.Slug, kernel.OriginAgent, c.ID, c.Name, args)
		if d.mock == nil {
			r.rec.Dispatches = append(r.rec.Dispatches, d.mark)
			fresh = true
		}
		ds, idx[d] = append(ds, d), i
	}
	if fresh {
		// the children are recorded before they start: a stop from here on is carried on
		if err := r.commit(); err != nil {
			b.err = err
			return b
		}
	}
	r.runDelegations(r.ctx, ds)
	var parked []*queuedDelegation
	for _, d := range ds {
		a := r.finishDelegation(d, true)
		i := idx[d]
		if a.pending {
			b.pending = true
			if a.err != nil && b.err == nil {
				b.err = a.err
			}
			continue
		}
		r.dropMark(d.mark)
		answers[i] = &a
		switch {
		case a.parked:
			parked = append(parked, a.queued)
		case a.isErr:
			r.rec.DelegationFailures = append(r.rec.DelegationFailures, &delegationFailure{State: d.mark.State,
				Workflow: d.mark.Workflow, Args: d.mark.Args, Reason: a.text, MessageID: msgID})
		default:
			r.recoverDelegationFailure(d.mark, msgID)
		}
		r.emitResult(st.Slug, kernel.OriginAgent, calls[i].ID, calls[i].Name, a.text, a.isErr, msTime(d.mark.StartedAt))
	}
	r.enqueueParked(parked)
	b.parked = len(parked) > 0
	for i, a := range answers {
		if a != nil {
			r.appendMessage(transcript.Message{Role: transcript.RoleTool, ToolCallID: calls[i].ID, Tool: calls[i].Name,
				Text: a.text, Error: a.isErr, Blocked: a.blocked, State: st.Slug})
		}
	}
	return b
}

// enqueueParked queues parked children in the order their parks arrived (02 §3.7), ties by
// dispatch number.
func (r *run) enqueueParked(qs []*queuedDelegation) {
	slices.SortStableFunc(qs, func(a, b *queuedDelegation) int {
		if c := strings.Compare(parkArrival(a.Park), parkArrival(b.Park)); c != 0 {
			return c
		}
		return a.Delegation.Identity - b.Delegation.Identity
	})
	r.rec.Delegations = append(r.rec.Delegations, qs...)
}

func parkArrival(p *Park) string {
	if p.Decision != nil {
		return p.Decision.CreatedAt
	}
	if p.Input != nil {
		return p.Input.ParkedAt
	}
	return ""
}

// delegationFailure is a failed delegation call of the agent (02 §8.4 item 5): the calling
// state's failure until a later success of the same workflow from the same state recovers it.
type delegationFailure struct {
	State    string         `json:"state"`
	Workflow string         `json:"workflow"`
	Args     map[string]any `json:"args,omitempty"`
	Reason   string         `json:"reason"`
	// MessageID is the assistant message whose call failed: its siblings never recover it.
	MessageID string `json:"messageId"`
}

// recoverDelegationFailure clears the failure one successful call recovers: of the same
// workflow from the same state, made by an earlier model message (never a sibling call) —
// the one whose arguments it repeats, else the oldest.
func (r *run) recoverDelegationFailure(m *dispatchMark, msgID string) {
	pick := -1
	for i, f := range r.rec.DelegationFailures {
		if f.State != m.State || f.Workflow != m.Workflow || f.MessageID == msgID {
			continue
		}
		if reflect.DeepEqual(f.Args, m.Args) {
			pick = i
			break
		}
		if pick < 0 {
			pick = i
		}
	}
	if pick >= 0 {
		r.rec.DelegationFailures = slices.Delete(r.rec.DelegationFailures, pick, pick+1)
	}
}

// outstandingDelegationFailures is the failure reason of a state whose agent finishes its
// turn with failed delegation calls unrecovered (02 §8.4 item 5), "" when there are none:
// each failure's text with `(called with {…})`, its arguments. They are cleared as routed.
func (r *run) outstandingDelegationFailures(state string) string {
	var parts []string
	rest := r.rec.DelegationFailures[:0:0]
	for _, f := range r.rec.DelegationFailures {
		if f.State != state {
			rest = append(rest, f)
			continue
		}
		args, _ := json.Marshal(f.Args)
		if f.Args == nil {
			args = []byte("{}")
		}
		parts = append(parts, fmt.Sprintf("%s (called with %s)", strings.TrimSuffix(f.Reason, "."), args))
	}
	r.rec.DelegationFailures = rest
	return strings.Join(parts, "; ")
}

// batchResult is how a delegation batch ended: parked (a child parked), pending (a child is
// still running: its call stays unanswered), terminal (a terminal governance block), err
// (the parent call's own failure).
type batchResult struct {
	parked, pending bool
	terminal        string
	err             error
}

// delegateDetached answers one delegation call of a script or a grader (03 AS-40…AS-46),
// entered with lock held after governance allowed the (resolved) arguments: prepared and
// finished under lock (the script host's mutex; no-ops for a grader on the run's
// goroutine), the child run outside it, without the step deadline — a script cannot be
// carried across invocations, so its children run within the script's own timeout — and a
// park failing the call. accepted runs under lock once the dispatch passed its checks
// (refused: it never runs). live reports, under lock, whether the call may still record into
// the run (a script that ended settles its calls itself). A child the script's end cancelled
// is settled rejected, so it is never left running.
func (r *run) delegateDetached(ctx context.Context, st *spec.State, origin kernel.Origin, callID, tool string, args map[string]any,
	unres *argUnresolved, target *loadedTarget, accepted, lock, unlock func(), live func() bool) (text string, isErr, refused bool) {
	d, refusal := r.prepareDelegation(st, origin, callID, tool, args, unres, target)
	if refusal != "" {
		return refusal, true, true
	}
	accepted()
	d.frames = r.childFrames(d.mark)
	unlock()
	childCtx := WithStepDeadline(ctx, timeZero)
	release, ok := r.slot(childCtx)
	if ok {
		d.run(r.traceDelegation(childCtx, d))
		release()
	} else {
		d.err = ctx.Err()
	}
	// a child stopped by a transient failure (or the script's end) cannot be carried on by a
	// script: it is settled rejected, and the call fails with the cause
	var abandonedOut *Outcome
	cause := ""
	if _, permanent := childFailure(d.mark.Workflow, d.err); d.err != nil && !permanent && d.sib != nil {
		cause = d.err.Error()
		if ctx.Err() != nil {
			cause = "the turn was aborted"
		}
		abandonedOut, _ = d.sib.rejectChild(ctx, d.childID, childAbandoned)
	}
	lock()
	if !live() {
		return "", true, false
	}
	if cause != "" {
		if abandonedOut != nil {
			r.rollUsage(d.mark, abandonedOut.Usage)
		}
		a := r.settleDispatch(d, "", delegationFailed(d.mark.Workflow, cause), nil)
		return a.text, a.isErr, false
	}
	a := r.finishDelegation(d, false)
	return a.text, a.isErr, false
}

// closeOpenCalls ends what a stopped turn left open when a new turn begins (02 §3.7: a new
// turn abandons the queue): every unanswered call of the newest assistant message is
// answered in call order — a recorded delegation "abandoned", any other "not run" — so the
// history stays one Bedrock accepts; the recorded and queued children are set aside for
// rejectAbandoned, which the caller runs once its own state is committed.
func (r *run) closeOpenCalls() {
	if last := r.lastAssistant(); last != nil {
		answered := r.answeredCalls()
		for _, c := range last.ToolCalls {
			if answered[c.ID] {
				continue
			}
			text := toolNotRun(c.Name)
			if m := r.markFor(c.ID); m != nil {
				text = delegationAbandoned(m.Workflow)
			}
			r.appendMessage(transcript.Message{Role: transcript.RoleTool, ToolCallID: c.ID, Tool: c.Name, Text: text, Error: true, State: last.State})
		}
	}
	r.abandoned = append(r.abandoned, r.rec.Dispatches...)
	r.rec.Dispatches, r.rec.StepFailure = nil, ""
	r.abandonQueue()
}

// abandonQueue sets the queued parked children aside for rejectAbandoned (a state that
// fails, a new turn: nothing will present them any more).
func (r *run) abandonQueue() {
	for _, q := range r.rec.Delegations {
		r.abandoned = append(r.abandoned, &dispatchMark{N: q.Delegation.Identity, Workflow: q.Delegation.Workflow, Rolled: q.Rolled})
	}
	r.rec.Delegations = nil
}

// rejectAbandoned settles every child set aside rejected (childAbandoned) and rolls what they
// spent since the last roll-up into this session's usage (committed with its next commit).
// A child that cannot be reached now (its lease held by a writer that crashed) is named in a
// warning and left as it is.
func (r *run) rejectAbandoned() {
	for _, m := range r.abandoned {
		id := spec.ChildSessionID(r.id, m.N)
		sib, err := r.e.sibling(r.ctx, m.Workflow)
		if err == nil {
			var out *Outcome
			if out, err = sib.rejectChild(r.ctx, id, childAbandoned); out != nil {
				r.rollUsage(m, out.Usage)
			}
		}
		if err != nil {
			r.warn("sub-workflow", fmt.Sprintf("could not settle the abandoned sub-workflow session '%s': %v", id, err))
		}
	}
	r.abandoned = nil
}

// childAbandoned is the rejection of a child its caller stopped waiting for;
// childCannotWait of one that parked under a caller that cannot wait (a script).
const (
	childAbandoned  = "Abandoned by its caller: the call that started it ended before it finished."
	childCannotWait = "Abandoned by its caller: it stopped for a person, and a script cannot wait for one."
)

// rejectChild settles a running or parked child rejected with reason (a child its caller
// abandoned), so it is never left waiting with nothing able to carry it on — its own
// children with it, their usage rolled into it; it returns the child's outcome (nil when the
// child never ran or had settled) or the error that kept it from it (e.g. a lease a crashed
// writer still holds). It runs even when ctx is cancelled (bounded to 10 s).
func (e *Engine) rejectChild(ctx context.Context, id, reason string) (*Outcome, error) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	return e.withSessionOf(childContext(cctx), id, false, func(r *run) (*Outcome, error) {
		if r.isNew || IsFinished(r.rec.Status) {
			return nil, nil
		}
		r.abandoned = append(r.abandoned, r.rec.Dispatches...)
		r.rec.Dispatches = nil
		r.abandonQueue()
		r.rejectAbandoned()
		if r.rec.Park != nil && r.rec.Park.Input != nil && r.rec.Park.Input.ResumeAt != "" && r.e.cfg.Scheduler != nil {
			_ = r.e.cfg.Scheduler.Cancel(r.ctx, r.id, r.rec.Park.ParkID)
		}
		r.rec.Park = nil
		r.answerOpenCalls()
		return r.settle(settlement{status: StatusRejected, reason: reason})
	})
}

// mockAnswer is a mocked dispatch's answer, held to the target's declared returns like a
// real child (reference applyMock): {error} fails it, {message, returns} or a string answer it.
func (r *run) mockAnswer(d *delegation) (text, failure string, returns []string) {
	wf := d.mark.Workflow
	obj, _ := d.mock.Result.(map[string]any)
	if e, ok := obj["error"]; ok {
		return "", fmt.Sprintf("Sub-workflow '%s' failed (mocked): %v", wf, e), nil
	}
	var message string
	switch {
	case obj != nil && isString(obj["message"]):
		message = obj["message"].(string)
	case isString(d.mock.Result):
		message = d.mock.Result.(string)
	default:
		b, _ := json.Marshal(d.mock.Result)
		message = string(b)
	}
	if len(d.returns) == 0 {
		return message, "", nil
	}
	supplied, _ := obj["returns"].(map[string]any)
	values := map[string]any{}
	for _, e := range d.returns {
		if v, ok := supplied[e.Name]; ok {
			values[e.Name] = v
		}
	}
	handed, failure := r.handReturns(d, "(mocked)", values)
	if failure != "" {
		return "", failure, nil
	}
	return resultJSON(message, handed), "", slices.Sorted(maps.Keys(handed))
}

func isString(v any) bool { _, ok := v.(string); return ok }

// delegationToolSpec is the Converse spec of archmax_workflow_<slug> (02 §8.1): the
// description led by the target's manual trigger description (else its title, 01 §4.8), the
// input schema its manual trigger's `requires` (spec.SignatureJSONSchema, each property
// described, further properties allowed). A target that cannot be loaded is still offered
// — with an open schema — and its dispatch is refused with the reason (02 §8.4).
func (e *Engine) delegationToolSpec(ctx context.Context, slug string) model.ToolSpec {
	ts := model.ToolSpec{Name: spec.WorkflowToolName(slug)}
	_, target, _ := e.delegationTarget(ctx, slug)
	var trig *spec.Trigger
	if target != nil {
		trig = target.Trigger(spec.ManualTrigger)
	}
	if trig == nil {
		ts.Description = delegationToolDescription(slug, "", "", nil, nil)
		ts.InputSchema = json.RawMessage(`{"type":"object","properties":{},"additionalProperties":true}`)
		return ts
	}
	names := func(es []spec.SignatureEntry) []string {
		var out []string
		for _, e := range es {
			out = append(out, e.Name)
		}
		return out
	}
	ts.Description = delegationToolDescription(slug, target.Title, trig.Description, names(trig.Requires), names(trig.Returns))
	var schema map[string]any
	_ = json.Unmarshal(spec.SignatureJSONSchema(trig.Requires), &schema)
	if props, ok := schema["properties"].(map[string]any); ok {
		for _, e := range trig.Requires {
			if p, ok := props[e.Name].(map[string]any); ok {
				p["description"] = delegationParamDescription(e.Name, e.Description)
			}
		}
	}
	schema["additionalProperties"] = true
	ts.InputSchema, _ = json.Marshal(schema)
	return ts
}
