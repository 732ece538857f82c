package session

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/archmax-ai/archmax/core/events"
	"github.com/archmax-ai/archmax/core/kernel"
	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/transcript"
)

// ParkChannel is what a parked session waits for (spec 02 §0.1).
type ParkChannel string

const (
	ChannelDecision ParkChannel = "decision" // a person's decision at a human state
	ChannelInput    ParkChannel = "input"    // an outside event (archmax_wait)
)

// Park is a session's live suspension (spec 02 §3.2, §4.2). ParkID is minted when the park
// is created (a reply's re-park keeps it); decide, deliver and wake may name it.
type Park struct {
	ParkID   string           `json:"parkId"`
	Channel  ParkChannel      `json:"channel"`
	Decision *PendingDecision `json:"decision,omitempty"`
	Input    *PendingInput    `json:"input,omitempty"`
	// Delegation is set when the park is a child's, presented through this session (02
	// §3.7): Decision or Input is the child's own pending record.
	Delegation *DelegatedPark `json:"delegation,omitempty"`
}

// State is the parked state: the session's own, or for a delegated park the calling state
// (the child's state is Decision.State / Input.State).
func (p *Park) State() string {
	if p.Delegation != nil {
		return p.Delegation.State
	}
	if p.Decision != nil {
		return p.Decision.State
	}
	if p.Input != nil {
		return p.Input.State
	}
	return ""
}

// PendingDecision is a human state's park record (spec 02 §3.2).
type PendingDecision struct {
	State       string               `json:"state"`
	Title       string               `json:"title,omitempty"`
	Seq         int                  `json:"seq"`
	Transitions []DecisionTransition `json:"transitions"`
	Evidence    []string             `json:"evidence,omitempty"`
	// EvidenceLinks pair each evidence path with the session API's route serving the file
	// (GET /v1/sessions/{id}/files/{path}), in Evidence's order: set on the HTTP API's
	// answers, never stored.
	EvidenceLinks []EvidenceLink `json:"evidenceLinks,omitempty"`
	CreatedAt     string         `json:"createdAt"`
	Approvers     []string       `json:"approvers,omitempty"`
}

// EvidenceLink is one evidence file and the route that serves it.
type EvidenceLink struct {
	Path string `json:"path"`
	Href string `json:"href"`
}

// DecisionTransition is one choice offered to the person.
type DecisionTransition struct {
	To          string `json:"to"`
	Description string `json:"description,omitempty"`
	Type        string `json:"type,omitempty"`
}

// PendingInput is an archmax_wait park record (spec 02 §4.2); ResumeAt is set with `until`.
type PendingInput struct {
	State    string `json:"state"`
	Title    string `json:"title,omitempty"`
	Reason   string `json:"reason"`
	ParkedAt string `json:"parkedAt"`
	ResumeAt string `json:"resumeAt,omitempty"`
}

// Decision is a person's choice at a human park (spec 02 §3.4).
type Decision struct {
	To      string
	Comment string
	ParkID  string // optional: the park it answers (refused when no longer live)
}

// Delivery resumes an archmax_wait park (spec 02 §4.3).
type Delivery struct {
	Trigger   string
	Variables map[string]any
	Message   string
	Files     map[string]TurnFile
	ParkID    string // optional: the park it answers
	// ID, when set, makes the delivery idempotent: an id among the session's last
	// MaxDeliveryIDs accepted ones is refused with *DuplicateDeliveryError and applies
	// nothing (an EventBridge event id; an HTTP Idempotency-Key).
	ID string
}

// MaxDeliveryIDs is how many accepted delivery ids a session remembers.
const MaxDeliveryIDs = 32

// TimerTrigger is the trigger a scheduled wake delivers, with the variable `now`.
const TimerTrigger = "timer"

// parked reports whether the session is parked on channel: status and a live park both.
func (r *run) parked(ch ParkChannel) bool {
	p := r.rec.Park
	if p == nil || p.Channel != ch {
		return false
	}
	return (ch == ChannelDecision && r.rec.Status == StatusAwaitingDecision) || (ch == ChannelInput && r.rec.Status == StatusAwaitingInput)
}

func newParkID() string { return "p" + newMessageID()[1:] }

// stateLabel is `'<slug>' (<title>)`, or `'<slug>'` (spec 02 §14.3).
func (r *run) stateLabel(slug string) string {
	if st := r.sp.State(slug); st != nil && strings.TrimSpace(st.Title) != "" {
		return fmt.Sprintf("'%s' (%s)", slug, strings.TrimSpace(st.Title))
	}
	return fmt.Sprintf("'%s'", slug)
}

// presentDecision parks the session at a human state (spec 02 §3.1): the record is
// committed first, then one reply-only handoff message, then the call settles parked.
func (r *run) presentDecision(st *spec.State) (stepResult, error) {
	r.rec.DecisionCount++
	d := &PendingDecision{State: st.Slug, Title: strings.TrimSpace(st.Title), Seq: r.rec.DecisionCount,
		CreatedAt: r.e.now(), Approvers: st.Approvers}
	for _, t := range st.Transitions {
		d.Transitions = append(d.Transitions, DecisionTransition{To: t.To, Description: strings.TrimSpace(t.Description), Type: t.Type})
	}
	for _, p := range append(slices.Clone(st.Evidence), r.rec.PendingEvidence...) {
		if p = strings.TrimSpace(p); p != "" && !slices.Contains(d.Evidence, p) {
			d.Evidence = append(d.Evidence, p)
		}
	}
	r.rec.PendingEvidence = nil
	r.rec.Park = &Park{ParkID: newParkID(), Channel: ChannelDecision, Decision: d}
	r.rec.Status = StatusAwaitingDecision
	r.emit(events.Parked, map[string]any{"state": st.Slug, "sessionId": r.id, "awaiting": string(ChannelDecision), "parkId": r.rec.Park.ParkID})
	situation := handoffFresh
	if n := len(r.msgs); n > 0 && r.msgs[n-1].Role == transcript.RoleRuntime {
		situation = handoffRouted
	}
	// the park and its handoff message are committed together, when the call settles: a
	// crash between them can no longer leave a park without the message the person reads
	// (R18-8); a failed handoff call still settles parked without it (03 OQ-8)
	if err := r.replyOnlyCall(st, replyOnlyDirective(situation, r.stateLabel(st.Slug), "")); err != nil {
		return stepResult{}, err
	}
	return stepResult{settled: &settlement{status: StatusAwaitingDecision}}, nil
}

// replyOnlyCall makes one model call in st in which every tool call is refused
// (tool.reply-only, GOV-20b): a handoff, a reply on a park, or a wait's closing message. A
// model that calls a tool instead of writing leaves no message and gets no second call; a
// failed model call leaves no message either (03 OQ-8).
func (r *run) replyOnlyCall(st *spec.State, directive string) error {
	r.replyOnly = true
	defer func() { r.replyOnly = false }()
	req := r.agentRequest(st)
	req.System[len(req.System)-1].Text += "\n\n" + directive
	messageID := newMessageID()
	resp, stream, err := r.streamCall(r.ctx, st.Slug, messageID, req)
	if err != nil {
		stream.partial()
		if r.isCancel(err) && !(r.head.Version > r.startVersion && r.rec.Park != nil) {
			return err
		}
		// a park this call committed stands: the call settles parked without the message
		// (03 OQ-8) rather than report a stopped turn for a session that is parked
		r.warn("model", "the reply-only message could not be written: "+err.Error())
		return nil
	}
	r.recordUsage(st.Slug, "agent", req, resp)
	text, calls := replyOf(resp)
	calls = validCalls(calls)
	if resp.StopReason == model.StopMaxTokens {
		calls = nil
	}
	renumberCallIDs(calls, r.callIDsInUse())
	if strings.TrimSpace(text) == "" && len(calls) == 0 {
		return nil
	}
	if len(calls) > 0 {
		text = "" // a model that calls a tool instead of writing leaves no message
		stream.partial()
	}
	msg := r.appendMessage(transcript.Message{ID: messageID, Role: transcript.RoleAssistant, Text: text, ToolCalls: calls, State: st.Slug})
	for _, c := range calls {
		_, ref := r.govern(st, kernel.OriginAgent, c.ID, c.Name, c.Args)
		reason := notATool(c.Name)
		if ref != nil {
			reason = ref.text
		}
		r.appendMessage(transcript.Message{Role: transcript.RoleTool, ToolCallID: c.ID, Tool: c.Name, Text: reason, Error: true, Blocked: ref != nil && ref.blocked, State: st.Slug})
	}
	if t := strings.TrimSpace(msg.Text); t != "" {
		stream.whole(msg.Text)
		r.emit(events.AgentText, map[string]any{"state": st.Slug, "text": msg.Text, "messageId": msg.ID})
		r.lastReplyOnlyText = t
	}
	return nil
}

// reply answers a message to a session parked at a human state (spec 02 §3.6): the person's
// message, one reply-only call, and the park again on the unchanged record.
func (r *run) reply(text string) (*Outcome, error) {
	r.traceDisposition(DispositionReply)
	text = strings.TrimSpace(text)
	if text == "" {
		return nil, &EmptyMessageError{SessionID: r.id, Reply: true}
	}
	if err := r.refuseSpent(nil); err != nil { // a reply-only call is a model call
		return nil, err
	}
	r.rec.Calls++
	park := r.rec.Park
	state := park.State()
	r.appendMessage(transcript.Message{Role: transcript.RoleUser, Text: text, State: state})
	r.emit(events.ParkMessage, map[string]any{"state": state, "sessionId": r.id, "direction": "inbound", "text": text})
	st := r.sp.State(state)
	if st == nil {
		return nil, fmt.Errorf("parked state '%s' no longer exists in the workflow", state)
	}
	label := r.stateLabel(state)
	if park.Delegation != nil {
		label = delegatedParkLabel(park, park.Delegation)
	}
	if err := r.replyOnlyCall(st, replyOnlyDirective(replyOnPark, label, "")); err != nil {
		return nil, r.abandon(err)
	}
	if r.lastReplyOnlyText != "" {
		r.emit(events.ParkMessage, map[string]any{"state": state, "sessionId": r.id, "direction": "outbound", "text": r.lastReplyOnlyText})
	}
	r.disposition, r.reparked = DispositionReply, true
	return r.settle(settlement{status: StatusAwaitingDecision})
}

// decide applies a person's decision (spec 02 §3.4) and continues the turn at the target.
func (r *run) decide(d Decision) (*Outcome, error) {
	r.traceDisposition(DispositionDecide)
	if !r.parked(ChannelDecision) {
		return nil, &SessionNotParkedError{SessionID: r.id}
	}
	park := r.rec.Park
	if d.ParkID != "" && d.ParkID != park.ParkID {
		return nil, &ParkNotLiveError{SessionID: r.id, ParkID: d.ParkID, LiveParkID: park.ParkID}
	}
	if park.Delegation != nil {
		return r.decideDelegated(d)
	}
	state := park.Decision.State
	to := strings.TrimSpace(d.To)
	valid, chosen := decisionTargets(park.Decision, r.sp, to)
	if chosen == nil {
		return nil, &InvalidDecisionTargetError{SessionID: r.id, Target: to, ValidTargets: valid}
	}
	if err := r.refuseSpent(nil); err != nil {
		return nil, err
	}
	r.rec.Calls++
	comment := strings.TrimSpace(d.Comment)
	r.rec.Park, r.rec.Status, r.rec.Rejected, r.rec.StateTurns = nil, StatusRunning, "", nil
	r.appendTrail(transcript.TrailStep{To: to, Kind: transcript.TrailHuman, Reason: comment, By: callerRef(r.ctx)})
	r.emit(events.Decided, r.withBy(map[string]any{"state": state, "to": to, "sessionId": r.id}))
	r.appendMessage(transcript.Message{Role: transcript.RoleRuntime, Note: transcript.NoteDecision, Text: noteDecision(state, to, chosen.Type, comment), State: to})
	r.emit(events.StateLeave, map[string]any{"state": state, "next": to})
	r.emit(events.StateEnter, map[string]any{"state": to})
	r.rec.State = to
	r.disposition = DispositionDecide
	return r.continueLoop()
}

// decisionTargets are the targets a decision on pending may take under sp, the spec as it is
// now: the park's transitions (never back to the parked state, which would end the session
// rather than route it) that sp still declares, as states and as transitions of the parked
// state; chosen is to's transition when it is one of them.
func decisionTargets(pending *PendingDecision, sp *spec.MachineSpec, to string) (valid []string, chosen *DecisionTransition) {
	st := sp.State(pending.State)
	for i, t := range pending.Transitions {
		if t.To == pending.State || sp.State(t.To) == nil || (st != nil && st.TransitionTo(t.To) == nil) {
			continue
		}
		valid = append(valid, t.To)
		if t.To == to {
			chosen = &pending.Transitions[i]
		}
	}
	return valid, chosen
}

// deliver resumes an archmax_wait park with a trigger firing (spec 02 §4.3): files placed,
// variables seeded locked, the [event] note and the person's message committed together,
// then the loop continues in the parked state.
func (r *run) deliver(d Delivery) (*Outcome, error) {
	r.traceDisposition(DispositionDeliver)
	if d.ID != "" && slices.Contains(r.rec.DeliveryIDs, d.ID) {
		return nil, &DuplicateDeliveryError{SessionID: r.id, ID: d.ID}
	}
	if !r.parked(ChannelInput) {
		return nil, &SessionNotAwaitingInputError{SessionID: r.id}
	}
	park := r.rec.Park
	if d.ParkID != "" && d.ParkID != park.ParkID {
		return nil, &ParkNotLiveError{SessionID: r.id, ParkID: d.ParkID, LiveParkID: park.ParkID}
	}
	if err := CheckDelivery(r.id, d); err != nil {
		return nil, err
	}
	if err := r.refuseSpent(park.Delegation); err != nil {
		return nil, err
	}
	trigger := strings.TrimSpace(d.Trigger)
	r.rec.Calls++
	if d.ID != "" {
		r.rec.DeliveryIDs = append(r.rec.DeliveryIDs, d.ID)
		if n := len(r.rec.DeliveryIDs); n > MaxDeliveryIDs {
			r.rec.DeliveryIDs = r.rec.DeliveryIDs[n-MaxDeliveryIDs:]
		}
	}
	if park.Delegation != nil {
		return r.deliverDelegated(d, trigger)
	}
	state := park.Input.State
	vars := maps.Clone(d.Variables)
	if vars == nil {
		vars = map[string]any{}
	}
	for _, k := range slices.Sorted(maps.Keys(d.Files)) {
		path, err := r.ws.PlaceAttachment(r.ctx, d.Files[k].Name, d.Files[k].Content)
		if err != nil {
			return nil, &InvalidTurnFileError{Variable: k, Cause: "the session store cannot hold it"}
		}
		vars[k] = path
	}
	r.emit(events.Delivered, r.withBy(map[string]any{"state": state, "trigger": trigger, "to": state, "sessionId": r.id}))
	var names []string
	title := ""
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		if k == spec.TriggerVariable {
			r.warn("workflow", deliveredTriggerIgnored)
			continue
		}
		if k == spec.TitleVariable {
			if detail := spec.TitleWriteError(vars[k]); detail != "" {
				r.warn("workflow", "Delivered title ignored: "+detail)
				continue
			}
			s, _ := vars[k].(string)
			title = strings.TrimSpace(s)
			r.rec.Variables[k] = spec.VariableEntry{Value: title}
		} else {
			r.rec.Variables[k] = spec.VariableEntry{Value: vars[k], Locked: true}
		}
		names = append(names, k)
	}
	if len(names) > 0 {
		r.emit(events.VariablesSet, map[string]any{"state": state, "names": names, "locked": true})
	}
	if title != "" {
		r.emit(events.TitleSet, map[string]any{"title": title, "state": state})
	}
	r.rec.Variables[spec.TriggerVariable] = spec.VariableEntry{Value: trigger, Locked: true}
	r.rec.CurrentTrigger = trigger
	message := strings.TrimSpace(d.Message)
	// the note quotes what was stored: the delivered variables that were applied
	quoted := map[string]any{}
	for _, k := range names {
		if _, delivered := d.Variables[k]; delivered {
			quoted[k] = r.rec.Variables[k].Value
		}
	}
	r.appendMessage(transcript.Message{Role: transcript.RoleRuntime, Note: transcript.NoteEvent, Text: noteEvent(trigger, state, quoted, message != ""), State: state})
	if message != "" {
		r.emit(events.ParkMessage, map[string]any{"state": state, "sessionId": r.id, "direction": "inbound", "text": message})
		r.appendMessage(transcript.Message{Role: transcript.RoleUser, Text: message, State: state})
	}
	// a parked state the edit removed continues at the delivered trigger's entry, else manual's
	if r.sp.State(state) == nil {
		if t := r.sp.Trigger(trigger); t != nil {
			state = t.State
		} else if t := r.sp.Trigger(spec.ManualTrigger); t != nil {
			state = t.State
		} else {
			state = r.sp.Entry()
		}
	}
	r.emit(events.StateEnter, map[string]any{"state": state})
	r.rec.Park, r.rec.Status, r.rec.State = nil, StatusRunning, state
	r.appendTrail(transcript.TrailStep{To: state, Kind: transcript.TrailTrigger, Reason: trigger, By: callerRef(r.ctx)})
	if r.e.cfg.Scheduler != nil && park.Input.ResumeAt != "" {
		_ = r.e.cfg.Scheduler.Cancel(context.WithoutCancel(r.ctx), r.id, park.ParkID)
	}
	r.disposition = DispositionDeliver
	return r.continueLoop()
}

// wake delivers the timer trigger to one park when it is due (DESIGN.md §5); a wake for a
// park that is gone, another park, or one not yet due is a no-op that says why.
func (r *run) wake(parkID string) (*Outcome, *WakeSkipped, error) {
	p := r.rec.Park
	switch {
	case !r.parked(ChannelInput):
		return nil, &WakeSkipped{Reason: "the session is not parked awaiting input (resumed already, or never parked)"}, nil
	case parkID != "" && p.ParkID != parkID:
		return nil, &WakeSkipped{Reason: fmt.Sprintf("park '%s' is not the live park (live: '%s')", parkID, p.ParkID)}, nil
	case p.Input.ResumeAt == "":
		return nil, &WakeSkipped{Reason: "the park has no resumeAt"}, nil
	}
	now := spec.FormatInstant(r.e.cfg.Clock())
	if now < p.Input.ResumeAt {
		// an early fire (a timer a hair early, a schedule rounded down) must not strand the
		// park until the sweep: the wake is arranged again for resumeAt (R18-6)
		r.scheduleWake()
		return nil, &WakeSkipped{Reason: fmt.Sprintf("the park is not due until %s (its wake is arranged again)", p.Input.ResumeAt)}, nil
	}
	out, err := r.deliver(Delivery{Trigger: TimerTrigger, Variables: map[string]any{"now": now}, ParkID: p.ParkID})
	return out, nil, err
}

// WakeSkipped says why a wake did nothing.
type WakeSkipped struct{ Reason string }

// continueLoop runs the state loop after a resume and settles the call. The resume is
// committed with the loop's first step, not before it: a failure before that commit (the
// model call failing, the deadline, a crash) leaves the park exactly as it was, so the
// retry of the decision, delivery or wake applies it again (exactly once either way).
//
// Under a step deadline — a host that continues turns (DESIGN.md §4) — the resume is
// committed before its first step instead: a cut or failed first step then leaves an
// interrupted session (with lastError) that the continuation or the sweep carries on, and a
// request can be answered before the step's model call.
func (r *run) continueLoop() (*Outcome, error) {
	r.resumeUncommitted = true
	if _, ok := StepDeadline(r.ctx); ok {
		if err := r.commit(); err != nil {
			return nil, r.abandon(err)
		}
	}
	s, err := r.loop()
	if err != nil {
		return nil, r.abandon(err)
	}
	return r.settle(s)
}

// waitPark handles an accepted archmax_wait (spec 02 §4.2): the input park is committed,
// its wake scheduled, and — when the agent said nothing since the person last spoke — one
// closing reply-only message is owed before the call settles.
func (r *run) waitPark(st *spec.State, in *PendingInput, callID string) (stepResult, error) {
	if r.rec.ParkCounts == nil {
		r.rec.ParkCounts = map[string]int{}
	}
	r.rec.ParkCounts[st.Slug]++
	r.rec.Park = &Park{ParkID: newParkID(), Channel: ChannelInput, Input: in}
	r.rec.Status = StatusAwaitingInput
	ev := map[string]any{"state": st.Slug, "sessionId": r.id, "awaiting": string(ChannelInput), "reason": in.Reason, "callId": callID, "parkId": r.rec.Park.ParkID}
	if in.ResumeAt != "" {
		ev["resumeAt"] = in.ResumeAt
	}
	r.emit(events.Parked, ev)
	if !spokeSinceLastPerson(r.msgs) {
		// committed with the park below, never after it (R18-8)
		if err := r.replyOnlyCall(st, replyOnlyDirective(inputPark, r.stateLabel(st.Slug), in.Reason)); err != nil {
			return stepResult{}, err
		}
	}
	if err := r.commit(); err != nil {
		return stepResult{}, err
	}
	r.scheduleWake() // once the park it wakes is stored
	return stepResult{settled: &settlement{status: StatusAwaitingInput}}, nil
}

// quotaPark parks the turn awaiting input when the model's quota is used up for a long while
// (a daily token quota; docs/DECISIONS.md R18-5) instead of retrying it: the wait's resumeAt
// is quotaBackoff after now — 1 h, doubling for each quota park in a row, at most 24 h — and
// the normal wake path resumes the state then (the timer trigger's [event] note); a message
// or a delivery before that resumes it too. No reply-only message is asked for: the model
// is out of quota.
func (r *run) quotaPark(st *spec.State, ce *model.CallError) (stepResult, error) {
	r.rec.QuotaWaits++
	wait := quotaBackoff(r.rec.QuotaWaits)
	in := &PendingInput{State: st.Slug, Title: strings.TrimSpace(st.Title), Reason: quotaWaitReason(ce.Code, wait),
		ParkedAt: r.e.now(), ResumeAt: spec.FormatInstant(r.e.cfg.Clock().Add(wait))}
	r.rec.Park = &Park{ParkID: newParkID(), Channel: ChannelInput, Input: in}
	r.rec.Status = StatusAwaitingInput
	r.warn("model", in.Reason)
	r.emit(events.Parked, map[string]any{"state": st.Slug, "sessionId": r.id, "awaiting": string(ChannelInput), "reason": in.Reason,
		"parkId": r.rec.Park.ParkID, "resumeAt": in.ResumeAt})
	if err := r.commit(); err != nil {
		return stepResult{}, err
	}
	r.scheduleWake()
	return stepResult{settled: &settlement{status: StatusAwaitingInput}}, nil
}

// quotaBackoff is the n-th quota park's wait (n ≥ 1): 1 h × 2^(n-1), at most 24 h.
func quotaBackoff(n int) time.Duration {
	d := time.Hour
	for i := 1; i < n && d < 24*time.Hour; i++ {
		d *= 2
	}
	return min(d, 24*time.Hour)
}

// spokeSinceLastPerson reports whether an assistant message with text follows the last
// turn-opening message (a person's message or a runtime note) (spec 02 §5.4).
func spokeSinceLastPerson(msgs []transcript.Message) bool {
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		switch {
		case m.Role == transcript.RoleAssistant && strings.TrimSpace(m.Text) != "":
			return true
		case m.Role == transcript.RoleUser || m.Role == transcript.RoleRuntime:
			return false
		}
	}
	return false
}

// checkWait validates archmax_wait({reason, until?}) (01 §7.2, 02 §4.1–§4.2): the pending
// input, or the refusal text, and whether the refusal is the park budget's (a state failure).
func (r *run) checkWait(st *spec.State, args map[string]any) (*PendingInput, string, bool) {
	reason, _ := args["reason"].(string)
	reason = strings.TrimSpace(reason)
	if reason == "" {
		return nil, waitNoReason, false
	}
	in := &PendingInput{State: st.Slug, Title: strings.TrimSpace(st.Title), Reason: reason, ParkedAt: r.e.now()}
	if until, ok := args["until"].(string); ok {
		at, err := spec.ResolveWaitUntil(r.e.cfg.Clock(), until)
		if err != nil {
			var wu *spec.WaitUntilError
			if asWaitUntil(err, &wu) {
				return nil, wu.Refusal(), false
			}
			return nil, "archmax_wait rejected: " + err.Error(), false
		}
		in.ResumeAt = spec.FormatInstant(at)
	}
	if n := st.Budget.MaxParks; n > 0 && r.rec.ParkCounts[st.Slug] >= n {
		return nil, fmt.Sprintf("archmax_wait rejected: state '%s' exhausted its park budget (maxParks: %d) — it asked to wait again for: %s", st.Slug, n, reason), true
	}
	return in, "", false
}

func asWaitUntil(err error, target **spec.WaitUntilError) bool { return errors.As(err, target) }

// Decide applies a person's decision to a session parked at a human state and continues the
// turn at the target (spec 02 §3.4). Errors: *SessionNotParkedError, *ParkNotLiveError,
// *InvalidDecisionTargetError (nothing written), and those of Send.
func (e *Engine) Decide(ctx context.Context, sessionID string, d Decision) (*Outcome, error) {
	id, err := spec.CheckSessionID(sessionID)
	if err != nil {
		return nil, err
	}
	if err := refuseChild(id); err != nil {
		return nil, err
	}
	return e.withSession(ctx, id, func(r *run) (*Outcome, error) { r.addressed = true; return r.decide(d) })
}

// Reply answers a message to a session parked at a human state on a reply-only turn and
// re-parks it on the same record (spec 02 §3.6). Errors: *SessionNotParkedError,
// *EmptyMessageError, and those of Send.
func (e *Engine) Reply(ctx context.Context, sessionID, text string) (*Outcome, error) {
	id, err := spec.CheckSessionID(sessionID)
	if err != nil {
		return nil, err
	}
	if err := refuseChild(id); err != nil {
		return nil, err
	}
	return e.withSession(ctx, id, func(r *run) (*Outcome, error) {
		if !r.parked(ChannelDecision) {
			return nil, &SessionNotParkedError{SessionID: id}
		}
		r.addressed = true
		return r.reply(text)
	})
}

// CheckDelivery checks what a delivery to session sessionID carries, whatever the session's
// state: a trigger id (*MissingDeliveryTriggerError), variable names (spec 01 §5.1,
// *spec.InvalidVariableNameError) and files (*InvalidTurnFileError). Deliver runs it before
// it reads the session, so a malformed delivery is refused (400) before an unknown or busy
// session is (404, 409) — as a malformed turn or decision is.
func CheckDelivery(sessionID string, d Delivery) error {
	if strings.TrimSpace(d.Trigger) == "" {
		return &MissingDeliveryTriggerError{SessionID: sessionID}
	}
	source := fmt.Sprintf("delivered to session '%s'", sessionID)
	for _, k := range slices.Sorted(maps.Keys(d.Variables)) {
		if err := spec.CheckVariableName(k, source); err != nil {
			return err
		}
	}
	for _, k := range slices.Sorted(maps.Keys(d.Files)) {
		if err := checkTurnFile(k, d.Files[k], d.Variables); err != nil {
			return err
		}
	}
	return nil
}

// Deliver resumes a session parked by archmax_wait in its parked state (spec 02 §4.3).
// Errors: *MissingDeliveryTriggerError, *spec.InvalidVariableNameError,
// *InvalidTurnFileError (CheckDelivery, before the session is read), then
// *SessionNotAwaitingInputError, *ParkNotLiveError, and those of Send; nothing is written
// on a refusal.
func (e *Engine) Deliver(ctx context.Context, sessionID string, d Delivery) (*Outcome, error) {
	id, err := spec.CheckSessionID(sessionID)
	if err != nil {
		return nil, err
	}
	if err := CheckDelivery(id, d); err != nil {
		return nil, err
	}
	if err := refuseChild(id); err != nil {
		return nil, err
	}
	return e.withSession(ctx, id, func(r *run) (*Outcome, error) { r.addressed = true; return r.deliver(d) })
}

// Wake delivers the timer trigger (variable `now`) to the named park when it is due
// (DESIGN.md §5). parkID "" means the live park (the sweep's wake). A wake for a park that
// is gone, not the live one, or not yet due changes nothing and returns the reason instead
// of an outcome.
func (e *Engine) Wake(ctx context.Context, sessionID, parkID string) (*Outcome, *WakeSkipped, error) {
	id, err := spec.CheckSessionID(sessionID)
	if err != nil {
		return nil, nil, err
	}
	if err := refuseChild(id); err != nil {
		return nil, nil, err
	}
	var skipped *WakeSkipped
	out, err := e.withSession(ctx, id, func(r *run) (*Outcome, error) {
		o, s, err := r.wake(parkID)
		skipped = s
		return o, err
	})
	return out, skipped, err
}
