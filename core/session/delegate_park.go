package session

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/archmax-ai/archmax/core/events"
	"github.com/archmax-ai/archmax/core/kernel"
	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/transcript"
	"github.com/archmax-ai/archmax/core/workspace"
)

var timeZero time.Time

// childContext is the context a child is driven under: the request's acceptance hook
// (WithTurnOpened) and its turn id (WithTurnID) belong to the caller's call, never to its
// children's commits and turns.
func childContext(ctx context.Context) context.Context {
	ctx = context.WithValue(ctx, guardKey{}, Guard(nil)) // the host authorized the parent's call, not each child
	ctx = context.WithValue(ctx, requestTurnKey{}, "")
	return context.WithValue(ctx, turnOpenedKey{}, (func(string, string))(nil))
}

func msTime(ms int64) time.Time { return time.UnixMilli(ms) }

// ChildSessionError: a write addressed to a sub-workflow child session (spec 02 §3.7: the host
// keeps addressing the parent; a decision or delivery on the parent is routed to the child).
// HTTP 409.
type ChildSessionError struct{ SessionID, ParentID, RootID string }

func (e *ChildSessionError) Error() string {
	return fmt.Sprintf("Session '%s' is a sub-workflow child of '%s': it is driven through its root session. Address '%s' instead.", e.SessionID, e.ParentID, e.RootID)
}

// Name returns the error name.
func (e *ChildSessionError) Name() string { return "ChildSessionError" }

// refuseChild returns *ChildSessionError for a child session id.
func refuseChild(id string) error {
	if parent, ok := spec.ParentSessionIDOf(id); ok {
		return &ChildSessionError{SessionID: id, ParentID: parent, RootID: spec.RootSessionIDOf(id)}
	}
	return nil
}

// sibling returns the engine of another workflow of the same assembly (02 §8.5: the child
// composes from the parent's assembly), created on first use and kept.
func (e *Engine) sibling(ctx context.Context, slug string) (*Engine, error) {
	if slug == e.cfg.Workflow {
		return e, nil
	}
	e.siblingsOnce.Do(func() {
		if e.siblings == nil {
			base := e.cfg
			e.siblings = &Engines{base: base, byWf: map[string]*Engine{e.cfg.Workflow: e}, emitter: e.emitter}
		}
	})
	return e.siblings.Engine(ctx, slug)
}

// inheritedDenials are the workflow-wide denials of every session above a child, root
// first (03 GOV-36), read from the ancestors' current specs once per call.
func (r *run) inheritedDenials() []kernel.Inherited {
	if r.rec.Scope == nil {
		return nil
	}
	r.inheritOnce.Do(func() {
		for _, slug := range r.rec.Scope.Chain {
			sib, err := r.e.sibling(r.ctx, slug)
			if err != nil {
				continue
			}
			sp, err := sib.loadSpec(r.ctx)
			if err != nil {
				continue
			}
			if len(sp.Tools.Forbid)+len(sp.Skills.Forbid)+len(sp.Mounts.Forbid) == 0 {
				continue
			}
			r.inherited = append(r.inherited, kernel.Inherited{Workflow: slug, Tools: sp.Tools.Forbid, Skills: sp.Skills.Forbid, Mounts: sp.Mounts.Forbid})
		}
	})
	return r.inherited
}

// driveChild takes a child session's lease and moves it on for its parent: it starts a
// child that never ran (d's arguments), applies a routed decision or delivery while the
// child's park is still the one it answers, carries on an interrupted child, and otherwise
// reads the outcome the child settled with. Every path settles like a call (an Outcome,
// kind running when it stopped at the step deadline).
func (e *Engine) driveChild(ctx context.Context, id string, d *delegation) (*Outcome, error) {
	ctx = childContext(ctx)
	if rm := d.mark.Resume; rm != nil && rm.By != nil {
		ctx = WithCaller(ctx, *rm.By) // a routed decision or delivery is recorded as its caller's, whenever it runs
	}
	return e.withSessionOf(ctx, id, false, func(r *run) (*Outcome, error) {
		m := d.mark
		switch {
		case r.isNew && m.Resume != nil:
			return nil, errChildLost
		case r.isNew:
			return r.childTurn(d)
		case m.Resume != nil && r.rec.Park != nil && r.rec.Park.ParkID == m.Resume.ChildParkID &&
			(r.parked(ChannelDecision) || r.parked(ChannelInput)):
			r.beginTurn()
			rm := m.Resume
			if rm.Trigger == "" {
				return r.decide(Decision{To: rm.To, Comment: rm.Comment, ParkID: rm.ChildParkID})
			}
			return r.deliver(Delivery{Trigger: rm.Trigger, Variables: rm.Variables, Message: rm.Message, ID: rm.DeliveryID, ParkID: rm.ChildParkID})
		case r.rec.Status == StatusRunning:
			return r.carryOn()
		}
		return r.outcome(), nil
	})
}

// childTurn opens a child's first turn (02 §8.4 step 2): its scope recorded, file arguments
// placed in its scratchpad/attachments/, the arguments seeded locked, the manual trigger,
// and the opening note instead of a person's message.
func (r *run) childTurn(d *delegation) (*Outcome, error) {
	r.traceDisposition(DispositionTurn)
	r.beginTurn()
	r.rec.Scope = &childScope{Chain: d.chain, DispatchID: d.dispatchID(), State: d.mark.State, ToolCallID: d.mark.ToolCallID}
	if d.owner != nil { // the root's owner owns every session under it
		r.rec.Owner, r.head.Owner = d.owner, d.owner.Key()
	}
	seeds := maps.Clone(d.mark.Args)
	if seeds == nil {
		seeds = map[string]any{}
	}
	for _, k := range slices.Sorted(maps.Keys(d.files)) {
		p, err := r.ws.PlaceAttachment(r.ctx, d.files[k].Name, d.files[k].Content)
		if err != nil {
			return nil, fmt.Errorf("place the file argument '%s' in sub-workflow child '%s': %w", k, r.id, err)
		}
		seeds[k] = p
	}
	r.opening = openingNote(seeds)
	return r.turn(SendInput{Trigger: spec.ManualTrigger}, seeds)
}

// outcome is the Outcome of the session as it stands, without a commit.
func (r *run) outcome() *Outcome {
	disposition := cmpDisposition(r.disposition)
	out := &Outcome{
		SessionID:   r.id,
		TurnID:      r.turnID(),
		Disposition: disposition,
		Status:      r.rec.Status,
		State:       r.rec.State,
		Reply:       transcript.LastAgentText(r.msgs),
		Exit:        r.rec.Exit,
		Variables:   maps.Clone(r.rec.Variables),
		Messages:    r.msgs,
		AuditTrail:  r.trail,
		Turn:        r.rec.Calls,
	}
	if !r.rec.Usage.Empty() {
		u := *r.rec.Usage
		out.Usage = &u
	}
	switch r.rec.Status {
	case StatusAwaitingDecision, StatusAwaitingInput:
		out.Kind, out.Pending, out.ParkedChannel = KindParked, r.rec.Park, r.rec.Park.Channel
		out.State = r.rec.Park.State()
		out.Reparked = disposition != DispositionTurn
		if r.rec.Park.Delegation != nil && r.rec.Park.Channel == ChannelDecision {
			out.Delegation = r.rec.Park.Delegation
		}
	case StatusRejected:
		out.Kind, out.Rejected = KindRejected, r.rec.Rejected
	case StatusFailed:
		out.Kind = KindFailed
	case StatusRunning:
		// the turn is not over: it has no reply yet (its messages so far are readable)
		out.Kind, out.Reply = KindRunning, ""
	default:
		out.Kind = KindCompleted
	}
	if out.Messages == nil {
		out.Messages = []transcript.Message{}
	}
	if out.AuditTrail == nil {
		out.AuditTrail = []transcript.TrailStep{}
	}
	return out
}

// presentDelegation parks the session on the head of its delegation queue (02 §3.7): the
// child's decision presented unchanged with this session's next seq (or its input park),
// committed, then one reply-only closing message when the agent has not spoken since the
// person last did. Not counted against maxParks.
func (r *run) presentDelegation(st *spec.State) (stepResult, error) {
	if st == nil { // the calling state is gone from the spec (edited while parked)
		st = r.sp.State(r.fallbackState(r.rec.State))
		r.rec.State = st.Slug
	}
	q := r.rec.Delegations[0]
	dp := q.Delegation
	p := &Park{ParkID: newParkID(), Channel: q.Park.Channel, Delegation: &dp}
	label := delegatedParkLabel(q.Park, &dp)
	situation, reason := handoffFresh, ""
	if q.Park.Decision != nil {
		dec := *q.Park.Decision
		r.rec.DecisionCount++
		dec.Seq = r.rec.DecisionCount
		p.Decision = &dec
		r.rec.Status = StatusAwaitingDecision
	} else {
		in := *q.Park.Input
		p.Input = &in
		r.rec.Status = StatusAwaitingInput
		situation, reason = inputPark, in.Reason
	}
	r.rec.Park = p
	ev := map[string]any{"state": st.Slug, "sessionId": r.id, "awaiting": string(p.Channel), "parkId": p.ParkID,
		"delegation": map[string]any{"workflow": dp.Workflow, "sessionId": dp.SessionID, "dispatchId": dp.DispatchID}}
	if p.Input != nil {
		ev["reason"] = p.Input.Reason
		if p.Input.ResumeAt != "" {
			ev["resumeAt"] = p.Input.ResumeAt
		}
	}
	r.emit(events.Parked, ev)
	if err := r.commit(); err != nil {
		return stepResult{}, err
	}
	r.scheduleWake()
	if !spokeSinceLastPerson(r.msgs) {
		if err := r.replyOnlyCall(st, replyOnlyDirective(situation, label, reason)); err != nil {
			return stepResult{}, err
		}
	}
	return stepResult{settled: &settlement{status: r.rec.Status}}, nil
}

// delegatedParkLabel names where a delegated park waits: the parked state of the innermost
// sub-workflow ("'<state>' of the sub-workflow '<wf>'").
func delegatedParkLabel(p *Park, dp *DelegatedPark) string {
	for dp.Inner != nil {
		dp = dp.Inner
	}
	state := ""
	switch {
	case p.Decision != nil:
		state = p.Decision.State
	case p.Input != nil:
		state = p.Input.State
	}
	return fmt.Sprintf("'%s' of the sub-workflow '%s'", state, dp.Workflow)
}

// scheduleWake arranges the wake of a committed input park with a resumeAt. Only a root
// session schedules: a child's park is woken through the parent that presents it.
func (r *run) scheduleWake() {
	p := r.rec.Park
	if p == nil || p.Input == nil || p.Input.ResumeAt == "" || r.e.cfg.Scheduler == nil || r.rec.Scope != nil {
		return
	}
	at, _ := time.Parse(time.RFC3339Nano, p.Input.ResumeAt)
	if err := r.e.cfg.Scheduler.Schedule(context.WithoutCancel(r.ctx), r.id, p.ParkID, at); err != nil {
		r.warn("scheduler", fmt.Sprintf("could not schedule the wake of park '%s' at %s: %v (the sweep will find it)", p.ParkID, p.Input.ResumeAt, err))
	}
}

// decideDelegated routes a decision on a delegated park to the child (02 §3.7): checked
// against the child's transitions before anything is written, recorded on this session —
// committed before the child runs, so a stop from here on re-applies it exactly once — and
// then the loop carries the child on and this session after it.
func (r *run) decideDelegated(d Decision) (*Outcome, error) {
	park := r.rec.Park
	to := strings.TrimSpace(d.To)
	// the child decides against its spec as it is now: the same check, there, before anything
	// is written (the innermost child's, for a park presented through several levels)
	innermost := park.Delegation
	for innermost.Inner != nil {
		innermost = innermost.Inner
	}
	sib, err := r.e.sibling(r.ctx, innermost.Workflow)
	if err != nil {
		return nil, err
	}
	childSpec, err := sib.loadSpec(r.ctx)
	if err != nil {
		return nil, err
	}
	if valid, chosen := decisionTargets(park.Decision, childSpec, to); chosen == nil {
		return nil, &InvalidDecisionTargetError{SessionID: r.id, Target: to, ValidTargets: valid}
	}
	if err := r.refuseSpent(park.Delegation); err != nil { // this session's budget and the children's
		return nil, err
	}
	r.rec.Calls++
	r.disposition = DispositionDecide
	r.emit(events.Decided, r.withBy(map[string]any{"state": park.Delegation.State, "to": to, "sessionId": r.id}))
	return r.resumeThrough(&resumeMark{ChildParkID: park.Delegation.ChildParkID, To: to, Comment: strings.TrimSpace(d.Comment), By: callerRef(r.ctx)})
}

// deliverDelegated routes a checked delivery on a delegated input park to the child (02
// §3.7): its files are placed in the child's workspace first and travel as the variables'
// paths.
func (r *run) deliverDelegated(d Delivery, trigger string) (*Outcome, error) {
	park := r.rec.Park
	vars := maps.Clone(d.Variables)
	if vars == nil {
		vars = map[string]any{}
	}
	holder := park.Delegation // the files go to the sub-workflow that waits for them
	for holder.Inner != nil {
		holder = holder.Inner
	}
	child := workspace.New(r.e.cfg.Files, holder.SessionID, r.e.workspaceMounts())
	for _, k := range slices.Sorted(maps.Keys(d.Files)) {
		p, err := child.PlaceAttachment(r.ctx, d.Files[k].Name, d.Files[k].Content)
		if err != nil {
			return nil, &InvalidTurnFileError{Variable: k, Cause: "the session store cannot hold it"}
		}
		vars[k] = p
	}
	r.disposition = DispositionDeliver
	if msg := strings.TrimSpace(d.Message); msg != "" {
		// the person spoke to this session: its transcript keeps what they said
		r.emit(events.ParkMessage, map[string]any{"state": park.Delegation.State, "sessionId": r.id, "direction": "inbound", "text": msg})
		r.appendMessage(transcript.Message{Role: transcript.RoleUser, Text: msg, State: park.Delegation.State})
	}
	r.emit(events.Delivered, r.withBy(map[string]any{"state": park.Delegation.State, "trigger": trigger, "to": park.Delegation.State, "sessionId": r.id}))
	if r.e.cfg.Scheduler != nil && park.Input != nil && park.Input.ResumeAt != "" {
		_ = r.e.cfg.Scheduler.Cancel(context.WithoutCancel(r.ctx), r.id, park.ParkID)
	}
	return r.resumeThrough(&resumeMark{ChildParkID: park.Delegation.ChildParkID, Trigger: trigger, Variables: vars,
		Message: strings.TrimSpace(d.Message), DeliveryID: d.ID, By: callerRef(r.ctx)})
}

// resumeThrough takes the presented delegation off the queue as a resumed dispatch, commits,
// and runs the loop, whose first step drives the child (pendingStep).
func (r *run) resumeThrough(rm *resumeMark) (*Outcome, error) {
	q := r.rec.Delegations[0]
	r.rec.Delegations = r.rec.Delegations[1:]
	dp := q.Delegation
	r.rec.Dispatches = append(r.rec.Dispatches, &dispatchMark{N: dp.Identity, Workflow: dp.Workflow, State: dp.State,
		ToolCallID: dp.ToolCallID, StartedAt: r.e.cfg.Clock().UnixMilli(), Resume: rm, Rolled: q.Rolled})
	r.rec.Park, r.rec.Status = nil, StatusRunning
	r.rec.State = r.fallbackState(dp.State) // the turn goes on in the calling state
	if err := r.commit(); err != nil {
		return nil, r.abandon(err)
	}
	s, err := r.loop()
	if err != nil {
		return nil, r.abandon(err)
	}
	return r.settle(s)
}

// fallbackState is state while the spec declares it; else where a park whose state an edit
// removed continues (as deliver does): the current trigger's entry, manual's, the entry.
func (r *run) fallbackState(state string) string {
	switch {
	case r.sp.State(state) != nil:
		return state
	case r.sp.Trigger(r.rec.CurrentTrigger) != nil:
		return r.sp.Trigger(r.rec.CurrentTrigger).State
	case r.sp.Trigger(spec.ManualTrigger) != nil:
		return r.sp.Trigger(spec.ManualTrigger).State
	}
	return r.sp.Entry()
}

// pendingStep is the loop step that settles what the session's children owe it before
// anything else runs: resumed delegated parks first, then the delegation calls of the last
// agent message still waiting for their children. ok is false when nothing is pending.
func (r *run) pendingStep() (res stepResult, ok bool, err error) {
	if len(r.rec.Dispatches) == 0 {
		// a committed answer whose calls a lost commit left unanswered (a host tool's step,
		// R18-7): they run now, under the ids the model gave them
		if last := r.lastAssistant(); last != nil && last.State == r.rec.State && r.sp.State(last.State) != nil && r.hasOpenCalls(last) {
			res, err = r.runToolCalls(r.sp.State(last.State), last.ToolCalls)
			return res, true, err
		}
		return stepResult{}, false, nil
	}
	var resumed []*dispatchMark
	for _, m := range r.rec.Dispatches {
		if m.Resume != nil {
			resumed = append(resumed, m)
		}
	}
	if len(resumed) > 0 {
		res, err := r.resumedStep(resumed)
		return res, true, err
	}
	last := r.lastAssistant()
	if last == nil || r.sp.State(last.State) == nil {
		// the calls' state is gone from the spec: nothing can take their answers any more
		r.closeOpenCalls()
		r.rejectAbandoned()
		return stepResult{}, false, nil
	}
	res, err = r.runToolCalls(r.sp.State(last.State), last.ToolCalls)
	return res, true, err
}

// hasOpenCalls reports whether some call of the newest assistant message last has no tool
// result yet.
func (r *run) hasOpenCalls(last *transcript.Message) bool {
	answered := r.answeredCalls()
	return slices.ContainsFunc(last.ToolCalls, func(c transcript.ToolCall) bool { return !answered[c.ID] })
}

// lastAssistant is the newest assistant message, or nil.
func (r *run) lastAssistant() *transcript.Message {
	for i := len(r.msgs) - 1; i >= 0; i-- {
		if r.msgs[i].Role == transcript.RoleAssistant {
			return &r.msgs[i]
		}
	}
	return nil
}

// answeredCalls returns the ids of the calls answered after the newest assistant message.
func (r *run) answeredCalls() map[string]bool {
	answered := map[string]bool{}
	for i := len(r.msgs) - 1; i >= 0 && r.msgs[i].Role != transcript.RoleAssistant; i-- {
		if r.msgs[i].Role == transcript.RoleTool {
			answered[r.msgs[i].ToolCallID] = true
		}
	}
	return answered
}

// resumedStep drives the children a decision or delivery was routed to and settles each
// (02 §3.7): parked again → presented again at once; settled → the [sub-workflow] note (or
// the failure's [error] note), the trail step and result event, then the next queued
// delegation or the turn going on in the calling state.
func (r *run) resumedStep(marks []*dispatchMark) (stepResult, error) {
	var ds []*delegation
	for _, m := range marks {
		ds = append(ds, r.resumeDelegation(m))
	}
	r.runDelegations(r.ctx, ds)
	var firstErr error
	pending := false
	var again []*queuedDelegation
	for _, d := range ds {
		m := d.mark
		if d.deferred {
			pending = true
			continue
		}
		if d.err != nil {
			text, permanent := childFailure(m.Workflow, d.err)
			if !permanent {
				pending = true
				if firstErr == nil {
					firstErr = d.err
				}
				continue
			}
			// the child can no longer take what was routed to it: the dispatch failed, and
			// nothing else could ever move the child on
			r.dropMark(m)
			r.abandoned = append(r.abandoned, m)
			r.rejectAbandoned()
			r.settleDispatch(d, "", text, nil)
			r.appendMessage(transcript.Message{Role: transcript.RoleRuntime, Note: transcript.NoteError,
				Text: noteSubWorkflowFailed(m.Workflow, text), State: r.rec.State})
			continue
		}
		out := d.out
		r.rollUsage(m, out.Usage)
		switch out.Kind {
		case KindRunning:
			pending = true
			continue
		case KindParked:
			r.dropMark(m)
			r.emitDispatchResult(d, "parked", "", nil, false)
			again = append(again, d.queued(out.Pending))
			continue
		}
		r.dropMark(m)
		message, handed, failure := r.childResult(d, out)
		var names []string
		if handed != nil {
			names = slices.Sorted(maps.Keys(handed))
		}
		r.settleDispatch(d, message, failure, names)
		if failure != "" {
			r.appendMessage(transcript.Message{Role: transcript.RoleRuntime, Note: transcript.NoteError,
				Text: noteSubWorkflowFailed(m.Workflow, failure), State: r.rec.State})
			continue
		}
		note := noteSubWorkflow(m.Workflow, message)
		if handed != nil {
			// the returns travel with the note: the call they would answer was answered when
			// the child parked [decision D8-6]
			b, _ := json.Marshal(handed)
			note += "\nReturns: " + string(b)
		}
		r.appendMessage(transcript.Message{Role: transcript.RoleRuntime, Note: transcript.NoteSubWorkflow, Text: note, State: r.rec.State})
	}
	queued := r.rec.Delegations
	r.rec.Delegations = nil
	r.enqueueParked(again)
	r.rec.Delegations = append(r.rec.Delegations, queued...)
	if pending {
		if firstErr != nil {
			return stepResult{}, firstErr
		}
		return stepResult{yielded: true}, nil
	}
	if len(r.rec.Delegations) > 0 {
		return r.presentDelegation(r.sp.State(r.rec.State))
	}
	return stepResult{}, nil
}

// slotsState is the run's bound on in-flight children (02 §8.3).
type slotsState struct {
	slots     chan struct{}
	slotsOnce sync.Once
}
