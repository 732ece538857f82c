package session

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/archmax-ai/archmax/core/events"
	"github.com/archmax-ai/archmax/core/kernel"
	"github.com/archmax-ai/archmax/core/machine"
	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/sandbox"
	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/store"
	"github.com/archmax-ai/archmax/core/transcript"
	"github.com/archmax-ai/archmax/core/workspace"
)

// run is one call on one session: the loaded record, the transcript and trail, and the
// items not yet committed.
type run struct {
	e     *Engine
	ctx   context.Context
	id    string
	owner string
	head  *store.Head
	wf    *workflowFiles
	sp    *spec.MachineSpec
	mach  *machine.Machine
	ws    *workspace.Workspace
	isNew bool

	rec  *record
	msgs []transcript.Message
	conv transcript.Conversation // msgs rendered for the model, kept incrementally
	// checkedFrom is the first rendered message a commit still has to check (commit); the
	// ones before it were checked when they were committed (or loaded).
	checkedFrom int
	// usedCallIDs are the toolUse ids of the transcript (callIDsInUse), built on first use.
	usedCallIDs map[string]bool
	// cutOffs counts the agent's answers in a row cut off at the token limit mid-call (R18-4).
	cutOffs int
	trail   []transcript.TrailStep
	// static is the cacheable system prompt, built once per call
	static string
	// surfaces caches each state's disclosed tools and their specs for this call
	surfaces map[string]*surface

	// pending items, appended after the head's counters at the next commit
	pendingMsgs, pendingTrail, pendingEvents []json.RawMessage
	steps                                    int
	leasedAt                                 time.Time       // when the lease was last taken or renewed
	knownBlobs                               map[string]bool // variable blobs already stored
	replyOnly                                bool            // a reply-only call is in progress (GOV-20b)
	lastReplyOnlyText                        string          // what the last reply-only call said
	disposition                              Disposition     // how this call was classified
	reparked                                 bool            // a resume that ended parked again
	// resumeUncommitted: a resume (decision, delivery, wake) is applied in memory only; until
	// its first commit a failure discards it, so the park stays live and a retry applies it.
	resumeUncommitted bool
	// continuing: the call is a Continue of an interrupted turn; callSteps counts the loop
	// steps this invocation took (r.steps counts the whole turn's).
	continuing   bool
	callSteps    int
	startVersion int64           // the head version the call started from
	failing      bool            // abandon is committing a failure (LastError stays)
	opened       bool            // the call's first commit happened (WithTurnOpened reported it)
	scripts      *sandbox.REPL   // the call's agent-script REPL (archmax_eval / archmax_run), lazily
	bridge       []sandbox.Tool  // the scripts' bridged tools (scriptBridge), computed on first use
	slotsState                   // the bound on in-flight children (delegations)
	opening      string          // a child's opening note, written instead of a person's message
	abandoned    []*dispatchMark // children set aside to settle rejected (rejectAbandoned)
	inheritOnce  sync.Once
	childDriven  atomic.Bool        // a child was driven in this call (the past-deadline progress step)
	inherited    []kernel.Inherited // the ancestors' workflow-wide denials (a child)
	// the outbox (outbox.go): the stored events of the next commit a notification may
	// stand for, whether that commit settles the call, and whether the hint file exists
	outEvents  []events.Event
	settling   bool
	outboxHint bool
	tr         *runTrace // the call's open spans (trace.go); nil when tracing is off

	// budget is the call's own usage not yet in the daily counter and the counter's
	// totals (budget.go)
	budget budgetState
	// addressed: a caller addressed this call to the session (Send, Reply, Decide,
	// Deliver), so a spent budget refuses it before anything is written (refuseSpent)
	addressed bool
}

// settlement is how the state loop ended.
type settlement struct {
	status Status
	reason string // rejected: the reason
	exit   *Exit
	// yielded: the step deadline stopped the loop; the session stays running (interrupted)
	yielded bool
}

// storedPreviewCap bounds the tool-result preview kept in a stored event (UTF-16 units);
// live handlers get the full 4096-unit preview, and the whole result is in the transcript.
// This keeps the bytes written per step close to the step's own content.
const storedPreviewCap = 160

// storedArgsCap bounds the tool arguments kept in a stored tool-called/tool-blocked event
// (bytes of JSON); larger arguments (e.g. a write_file's content) are in the transcript.
const storedArgsCap = 512

// emit stamps and delivers an event and queues it for persistence. Text deltas are live
// only (their message is stored whole); stored tool-result previews are shortened.
func (r *run) emit(typ string, data map[string]any) {
	r.rec.EventSeq++
	ev := events.Event{Type: typ, SessionID: r.id, SessionSeq: r.rec.EventSeq, Data: data}
	if r.rec.Scope != nil {
		ev.DispatchID = r.rec.Scope.DispatchID // everything a child emits names its dispatch (02 §8.4)
	}
	ev = r.e.emitter.Stamp(ev)
	observe(r.ctx, ev)
	if typ == events.AgentTextDelta {
		return
	}
	if out, ok := data["output"].(string); ok && typ == events.ToolResult {
		if short, cut := capUnits(out, storedPreviewCap); cut {
			stored := maps.Clone(data)
			stored["output"], stored["truncated"] = short, true
			ev.Data = stored
		}
	}
	if args, ok := data["args"]; ok {
		if b, err := json.Marshal(args); err == nil && len(b) > storedArgsCap {
			stored := maps.Clone(ev.Data)
			delete(stored, "args")
			stored["argsOmitted"] = true
			ev.Data = stored
		}
	}
	r.noteOutbound(ev)
	if l := r.e.cfg.EventLog; l != nil {
		state := ev.Str("state")
		if state == "" {
			state = r.rec.State
		}
		l.Write(r.ctx, ev, r.turnID(), state)
	}
	ev.SessionID = ""          // the log it is stored in names the session (Sessions.Events adds it back)
	raw, _ := ev.MarshalJSON() // already compact: skip json.Marshal's re-compaction
	r.pendingEvents = append(r.pendingEvents, raw)
}

func (r *run) warn(scope, msg string) {
	r.emit(events.Warning, map[string]any{"scope": scope, "message": msg})
}

// appendMessage adds a message to the transcript (committed at the next commit).
func (r *run) appendMessage(m transcript.Message) transcript.Message {
	if m.ID == "" {
		m.ID = newMessageID()
	}
	if m.TS == 0 {
		m.TS = r.e.cfg.Clock().UnixMilli()
	}
	r.msgs = append(r.msgs, m)
	r.conv.Add(m)
	raw, _ := json.Marshal(m)
	r.pendingMsgs = append(r.pendingMsgs, raw)
	return m
}

// newMessageID mints a short random message id ("m" + 16 base32 characters, 80 bits).
func newMessageID() string {
	var b [10]byte
	_, _ = rand.Read(b[:])
	return "m" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

// appendTrail adds a trail step (spec 02 §6).
func (r *run) appendTrail(s transcript.TrailStep) {
	if s.TS == 0 {
		s.TS = r.e.cfg.Clock().UnixMilli()
	}
	r.trail = append(r.trail, s)
	raw, _ := json.Marshal(s)
	r.pendingTrail = append(r.pendingTrail, raw)
}

// commit writes the pending items then the head, conditional on the version this writer
// last saw and its lease (DESIGN.md §3). A lost condition is SessionNotResumableError.
func (r *run) commit() error {
	undo, err := r.stageOutbox(context.WithoutCancel(r.ctx))
	if err != nil {
		return err
	}
	landed := false
	defer func() {
		if !landed {
			undo()
		}
	}()
	if !r.failing {
		r.rec.LastError = nil // a commit that makes progress supersedes a failed attempt
	}
	if ct := r.rec.CurrentTurn; ct != nil {
		ct.Steps, ct.Disposition = r.steps, r.disposition
	}
	if r.rec.Status != StatusRunning {
		r.rec.LastTurn = r.settledTurn() // the summary's lastTurn: what a synchronous answer says
	}
	if len(r.pendingMsgs) > 0 {
		// nothing Bedrock would refuse in a later request is ever stored (R18-1): the
		// messages this commit adds (and the one before, which they may merge into or answer)
		conv := r.conv.Messages()
		if err := model.ValidateHistory(conv, max(r.checkedFrom-1, 0)); err != nil {
			return &InvalidHistoryError{SessionID: r.id, Cause: err}
		}
		defer func(n int) { r.checkedFrom = n }(len(conv))
	}
	body, err := encodeRecord(context.WithoutCancel(r.ctx), r.rec, r.e.cfg.Blobs, r.id, r.knownBlobs)
	if err != nil {
		return err
	}
	h := *r.head
	h.SessionID, h.Workflow, h.Status = r.id, r.rec.Workflow, string(r.rec.Status)
	h.UpdatedAt = r.e.now()
	if h.CreatedAt == "" {
		h.CreatedAt = h.UpdatedAt
	}
	h.Body = body
	h.Messages += int64(len(r.pendingMsgs))
	h.Trail += int64(len(r.pendingTrail))
	h.Events += int64(len(r.pendingEvents))
	h.ParkDue = ""
	switch p := r.rec.Park; {
	case r.rec.Scope != nil:
		// a child is woken and carried on through its parent, never on its own
	case p != nil && p.Input != nil && r.rec.Status == StatusAwaitingInput:
		h.ParkDue = p.Input.ResumeAt
	case r.rec.Status == StatusRunning && !givenUp(r.rec.LastError):
		// a running session that commits nothing more by then is stranded: the sweep
		// continues it (DESIGN.md §4, the net behind the platform's own retries) — unless
		// its turn stopped on a failure no retry fixes, or failed MaxTurnAttempts times
		h.ParkDue = spec.FormatInstant(r.e.cfg.Clock().Add(StrandedAfter + r.e.cfg.LeaseTTL))
	}
	h.Lease = nil
	h.ExpiresAt = r.e.expiresAt(r.id, h.ParkDue) // retention from the last activity, or the next wake (retention.go)
	c := &store.Commit{ExpectedVersion: r.head.Version, Head: h, Messages: r.pendingMsgs, Trail: r.pendingTrail, Events: r.pendingEvents}
	// a commit must land even when the caller's context was just cancelled: what ran is kept
	cctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), r.e.cfg.LeaseTTL)
	defer cancel()
	if err := r.renewLease(cctx); err != nil {
		return err
	}
	stored, err := r.e.cfg.Log.Commit(cctx, r.id, r.owner, c)
	if errors.Is(err, store.ErrConflict) {
		return &SessionNotResumableError{SessionID: r.id, Status: string(r.rec.Status)}
	}
	if err != nil {
		return err
	}
	landed = true
	r.head = stored
	r.pendingMsgs, r.pendingTrail, r.pendingEvents = nil, nil, nil
	r.resumeUncommitted = false
	if !r.opened && !r.continuing {
		r.opened = true
		if fn, ok := r.ctx.Value(turnOpenedKey{}).(func(string, string)); ok && fn != nil {
			fn(r.id, r.turnID())
		}
	}
	r.publishOutbox(cctx)
	r.countCommitted(cctx) // the committed steps' own usage, into the workflow's daily counter
	return nil
}

// renewLease re-takes this writer's lease once a third of it has passed, so a long turn
// keeps its session; losing it to another writer is SessionNotResumableError.
func (r *run) renewLease(ctx context.Context) error {
	now := r.e.cfg.Clock()
	if now.Sub(r.leasedAt) < r.e.cfg.LeaseTTL/3 {
		return nil
	}
	if _, err := r.e.cfg.Log.Acquire(ctx, r.id, r.owner, r.e.cfg.LeaseTTL); err != nil {
		if errors.Is(err, store.ErrLeaseHeld) {
			return &SessionNotResumableError{SessionID: r.id, Status: string(r.rec.Status)}
		}
		return err
	}
	r.leasedAt = now
	return nil
}

// vars returns the variable values (for references and signature checks).
func (r *run) vars() map[string]any {
	out := make(map[string]any, len(r.rec.Variables))
	for k, v := range r.rec.Variables {
		out[k] = v.Value
	}
	return out
}

// turn opens and runs a `turn` disposition (spec 02 §1.4).
func (r *run) turn(in SendInput, seeds map[string]any) (*Outcome, error) {
	t := strings.TrimSpace(in.Trigger)
	if t == "" {
		t = spec.ManualTrigger
	}
	trig := r.sp.Trigger(t)
	if r.isNew && trig == nil {
		return nil, &spec.UnknownTriggerError{TriggerID: t, Available: r.sp.TriggerIDs()}
	}
	r.rec.Calls++
	// 2. disabled
	if r.sp.Disabled {
		reason := disabledRefusal(r.e.cfg.Workflow)
		r.warn("workflow", reason)
		if r.isNew {
			r.rec.State = trig.State
		}
		return r.settle(settlement{status: StatusRejected, reason: reason})
	}
	// 5. files: placed before seeding, each variable seeded (locked) with the placed path
	for _, k := range slices.Sorted(maps.Keys(in.Files)) {
		path, err := r.ws.PlaceAttachment(r.ctx, in.Files[k].Name, in.Files[k].Content)
		if err != nil {
			return nil, &InvalidTurnFileError{Variable: k, Cause: "the session store cannot hold it"}
		}
		seeds[k] = path
	}
	// 6. position
	pos := r.rec.State
	reopened := false
	if r.isNew || r.sp.State(pos) == nil {
		reopened = true
		if trig != nil {
			pos = trig.State
		} else {
			pos = r.sp.Entry()
		}
	}
	if reopened {
		r.emit(events.WorkflowReset, map[string]any{"entry": pos})
	}
	r.rec.State = pos
	if r.rec.OpeningState == "" {
		r.rec.OpeningState = pos
	}
	// 7. arrival event
	r.emit(events.Advance, r.withBy(map[string]any{"from": events.Origin, "to": pos}))
	// 8. spec snapshot
	if h := r.sp.Hash(); h != r.rec.SpecHash {
		r.writeSnapshot(h)
		r.rec.SpecHash = h
	}
	// 9. seeding
	opening := map[string]any{}
	maps.Copy(opening, seeds)
	opening[spec.TriggerVariable] = t
	var names []string
	titleSeeded := ""
	for _, k := range slices.Sorted(maps.Keys(opening)) {
		v := opening[k]
		if k == spec.TitleVariable {
			if _, has := r.rec.Variables[k]; has {
				continue // the session's own title survives a seeded one
			}
			s, _ := v.(string)
			titleSeeded = strings.TrimSpace(s)
			r.rec.Variables[k] = spec.VariableEntry{Value: titleSeeded}
		} else {
			r.rec.Variables[k] = spec.VariableEntry{Value: v, Locked: true}
		}
		if k != spec.TriggerVariable {
			names = append(names, k)
		}
	}
	if titleSeeded != "" {
		r.emit(events.TitleSet, map[string]any{"title": titleSeeded})
	}
	if len(names) > 0 {
		r.emit(events.VariablesSet, map[string]any{"names": names, "locked": true})
	}
	r.rec.CurrentTrigger = t
	// 10. signature check against the opening variables only
	if trig != nil {
		if reason := spec.RequiresRefusal(t, trig.Requires, opening); reason != "" {
			r.warn("workflow", reason)
			return r.settle(settlement{status: StatusRejected, reason: reason})
		}
	}
	// 11. turn reset (a new turn abandons pending delegations, 02 §3.7)
	r.closeOpenCalls()
	r.rec.DelegationFailures = nil
	r.rec.Rejected, r.rec.Exit, r.rec.StateTurns = "", nil, nil
	r.rec.Park, r.rec.ParkCounts, r.rec.PendingEvidence = nil, nil, nil
	r.rec.Status = StatusRunning
	// 12. arrival
	r.emit(events.StateEnter, map[string]any{"state": pos})
	r.appendTrail(transcript.TrailStep{To: pos, Kind: transcript.TrailTrigger, Reason: t, By: callerRef(r.ctx)})
	// 13. the person's message — for a sub-workflow child, its opening note (02 §8.6)
	if r.opening != "" {
		r.appendMessage(transcript.Message{Role: transcript.RoleUser, Note: transcript.NoteOpening, Text: r.opening, State: pos})
	} else {
		r.appendMessage(transcript.Message{Role: transcript.RoleUser, Text: strings.TrimSpace(in.Message), State: pos})
	}
	if err := r.commit(); err != nil {
		return nil, err
	}
	r.rejectAbandoned() // the children the turn reset set aside, now that it is committed
	// 14. the state loop
	s, err := r.loop()
	if err != nil {
		return nil, r.abandon(err)
	}
	return r.settle(s)
}

// writeSnapshot stores _specs/<hash>.json once per hash; failures are warnings (02 §9.5).
func (r *run) writeSnapshot(hash string) {
	_, err := r.e.cfg.Files.WriteIfAbsent(r.ctx, "_specs/"+hash+".json", r.sp.SnapshotJSON())
	if err != nil {
		r.warn("spec-snapshot", "failed to persist spec snapshot for hash '"+hash+"': "+err.Error())
	}
}

// abandon commits what ran before an error ended the call (nothing of a resume that never
// committed: its park stays live), then returns the error as the
// call's result (a cancelled context becomes TurnAbortedError).
//
// A failure that is not a cancellation is also recorded on a session left running
// (record.LastError, the summary's lastError), so a caller that is not waiting — an
// asynchronous turn's client — can see why the turn stopped; the next commit clears it.
func (r *run) abandon(err error) error {
	cancelled := errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
	var lost *SessionNotResumableError
	isLost := errors.As(err, &lost)
	record := !cancelled && !isLost && !errors.Is(err, store.ErrConflict) &&
		!r.resumeUncommitted && r.rec.Status == StatusRunning && r.head.Version > 0
	if record {
		te := turnErrorOf(r.turnID(), err, r.e.now())
		te.Attempts = 1
		// a commit that made progress cleared the previous failure: only failures in a row count
		if prev := r.rec.LastError; prev != nil && prev.TurnID == te.TurnID {
			te.Attempts = max(prev.Attempts, 1) + 1
		}
		r.rec.LastError = te
		r.failing = true
	}
	var poisoned *InvalidHistoryError
	if errors.As(err, &poisoned) {
		// the step's history is refused: keep the last valid checkpoint, with why it stopped
		if record {
			if cerr := r.commitFailureOnly(r.rec.LastError); cerr != nil {
				return errors.Join(err, cerr)
			}
		}
		return err
	}
	if !r.resumeUncommitted {
		r.answerOpenCalls() // a step cut between its model call and its tool results
	}
	if !r.resumeUncommitted && (record || len(r.pendingMsgs)+len(r.pendingTrail)+len(r.pendingEvents) > 0) {
		if cerr := r.commit(); cerr != nil {
			var refused *InvalidHistoryError
			if errors.As(cerr, &refused) && record {
				if ferr := r.commitFailureOnly(r.rec.LastError); ferr != nil {
					return errors.Join(err, cerr, ferr)
				}
			}
			return errors.Join(err, cerr)
		}
	}
	if cancelled && !isLost {
		return &TurnAbortedError{SessionID: r.id, TurnID: r.turnID(), State: r.rec.State, Cause: err,
			Disposition: cmpDisposition(r.disposition), Turn: r.rec.Calls,
			Interrupted: r.head.Version > r.startVersion && Status(r.head.Status) == StatusRunning}
	}
	return err
}

// commitFailureOnly records te on the last committed checkpoint and nothing else: the
// step that could not be stored (InvalidHistoryError) is dropped — its messages, trail,
// events and record changes — so the session stays as it was, saying why its turn stopped.
func (r *run) commitFailureOnly(te *TurnError) error {
	rec, err := decodeRecord(context.WithoutCancel(r.ctx), r.head.Body, r.e.cfg.Blobs, r.id, nil)
	if err != nil {
		return err
	}
	rec.LastError = te
	body, err := encodeRecord(context.WithoutCancel(r.ctx), rec, r.e.cfg.Blobs, r.id, r.knownBlobs)
	if err != nil {
		return err
	}
	h := *r.head
	h.Body, h.UpdatedAt, h.Lease, h.ParkDue = body, r.e.now(), nil, "" // given up: the sweep leaves it
	h.ExpiresAt = r.e.expiresAt(r.id, h.ParkDue)
	cctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), r.e.cfg.LeaseTTL)
	defer cancel()
	stored, err := r.e.cfg.Log.Commit(cctx, r.id, r.owner, &store.Commit{ExpectedVersion: r.head.Version, Head: h})
	if err != nil {
		return err
	}
	r.head, r.pendingMsgs, r.pendingTrail, r.pendingEvents = stored, nil, nil, nil
	return nil
}

// settledTurn is the record's lastTurn for the call as it stands: the fields of the
// Outcome a synchronous answer carries.
func (r *run) settledTurn() *TurnOutcome {
	o := r.outcome()
	t := &TurnOutcome{TurnID: o.TurnID, Kind: o.Kind, Disposition: o.Disposition, Status: o.Status, State: o.State,
		Reply: o.Reply, Exit: o.Exit, Rejected: o.Rejected, Turn: o.Turn}
	if len(t.Reply) > MaxLastTurnReply { // cut between runes: a split rune's bytes are dropped
		t.Reply, t.ReplyTruncated = strings.ToValidUTF8(t.Reply[:MaxLastTurnReply], ""), true
	}
	return t
}

// answerOpenCalls answers every tool call of the newest assistant message that has no result
// yet — a step stopped between its model call and its tools — with an error result saying
// it was not run, so what is committed stays a history Bedrock accepts (every toolUse
// followed by its toolResult) and the model, when the turn goes on, knows which calls ran.
func (r *run) answerOpenCalls() {
	for i := len(r.msgs) - 1; i >= 0; i-- {
		m := r.msgs[i]
		if m.Role != transcript.RoleAssistant {
			continue
		}
		answered := map[string]bool{}
		for _, later := range r.msgs[i+1:] {
			if later.Role == transcript.RoleTool {
				answered[later.ToolCallID] = true
			}
		}
		for _, c := range m.ToolCalls {
			if !answered[c.ID] && r.markFor(c.ID) == nil { // a recorded delegation is carried on, not dropped
				r.appendMessage(transcript.Message{Role: transcript.RoleTool, ToolCallID: c.ID, Tool: c.Name,
					Text: toolNotRun(c.Name), Error: true, State: m.State})
			}
		}
		return
	}
}

// settle commits the final status and builds the Outcome (spec 02 §1.6).
func (r *run) settle(s settlement) (*Outcome, error) {
	if !s.yielded {
		r.settling = IsFinished(s.status)
		r.rec.Status = s.status
		switch s.status {
		case StatusCompleted:
			r.rec.Exit = &Exit{Success: true}
		case StatusFailed:
			r.rec.Exit = s.exit
		case StatusRejected:
			r.rec.Rejected = s.reason
		}
	}
	// a yield stops between steps: everything before it is committed unless the opening
	// itself is still pending
	if !s.yielded || len(r.pendingMsgs)+len(r.pendingTrail)+len(r.pendingEvents) > 0 || r.head.Version == 0 {
		if err := r.commit(); err != nil {
			return nil, err
		}
	}
	if len(r.abandoned) > 0 { // children a budget stop set aside (budgetStop), once it is committed
		r.rejectAbandoned()
		if err := r.commit(); err != nil {
			return nil, err
		}
	}
	return r.outcome(), nil
}

// hideFromListing redacts skill bundles and governed mounts the current state does not
// reach (GOV-41, GOV-48).
func (r *run) hideFromListing(path string, _ bool) bool {
	return r.policy().HiddenByGovernance(r.rec.State, path)
}

// listingHide is the redaction of one ls, glob or grep call made from state by origin (nil
// for any other tool): an entry is shown only when the kernel would allow the same caller
// an ls of that exact path (for a name: every entry of ls and glob, and every folder a
// search walks) or a read_file of it (for content: the files grep reads), so no declared
// denial, guard or narrowed grant is searched past (03 GOV-35; docs/DECISIONS.md K17-5).
// The policy is taken now, so the check reads the variables as they are at the call.
func (r *run) listingHide(tool, state string, origin kernel.Origin) workspace.HideFunc {
	if tool != "ls" && tool != "glob" && tool != "grep" {
		return nil
	}
	pol := r.policy()
	return func(path string, _ bool, reveal workspace.Reveal) bool {
		probe, arg := "ls", "path"
		if reveal == workspace.RevealContent {
			probe, arg = readFileTool, "file_path"
		}
		args := map[string]any{arg: path}
		uses, escaped := pol.PathUses(probe, args)
		if escaped != "" {
			return true
		}
		return !kernel.Decide(pol, kernel.Action{Tool: probe, Args: args, State: state, Origin: origin, Paths: uses}).Allow
	}
}

// surface is a state's disclosed tool names and their Converse specs.
type surface struct {
	names []string
	specs []model.ToolSpec
}

// surfaceOf returns a state's surface; it depends only on the spec, so it is computed once
// per call.
func (r *run) surfaceOf(state string) *surface {
	if s, ok := r.surfaces[state]; ok {
		return s
	}
	if r.surfaces == nil {
		r.surfaces = map[string]*surface{}
	}
	names := r.mach.Surface(state)
	s := &surface{names: names}
	for _, name := range names {
		if slug, ok := spec.WorkflowSlugFromToolName(name); ok {
			s.specs = append(s.specs, r.e.delegationToolSpec(r.ctx, slug))
			continue
		}
		s.specs = append(s.specs, r.e.toolSpecs([]string{name})...)
	}
	r.surfaces[state] = s
	return s
}

// policy is the kernel's view of the session at this moment.
func (r *run) policy() *kernel.Policy {
	p := &kernel.Policy{Spec: r.sp, Workflow: r.e.cfg.Workflow, Skills: r.wf.skills, Mounts: r.mach.Mounts, Variables: r.vars(), Rules: r.e.cfg.PolicyRules,
		Inherited: r.inheritedDenials(),
		Surface:   func(st string) []string { return r.surfaceOf(st).names }}
	for name, t := range r.e.hostTools {
		if len(t.Paths) > 0 {
			if p.ToolPaths == nil {
				p.ToolPaths = map[string][]spec.PathArg{}
			}
			p.ToolPaths[name] = t.Paths
		}
		if t.Essential {
			if p.Essential == nil {
				p.Essential = map[string]bool{}
			}
			p.Essential[name] = true
		}
	}
	return p
}

// cmpDisposition is d, or turn when the call did not classify itself.
func cmpDisposition(d Disposition) Disposition {
	if d == "" {
		return DispositionTurn
	}
	return d
}
