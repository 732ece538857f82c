package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/archmax-ai/archmax/core/events"
	"github.com/archmax-ai/archmax/core/outbound"
	"github.com/archmax-ai/archmax/core/store"
)

// The outbox (docs/DECISIONS.md EV21-1): the notifications a commit owes the outbound sink
// (Config.Outbound) are built from the commit's own events and record and stored in the
// record (record.Outbox) by that same commit; they are published after it, and a second
// head-only commit clears them. A process that dies between the two leaves them in the
// record: the next writer of the session publishes them before it does anything else, and
// the sweep (SweepOutbox) finds an idle session by its hint file OutboxPrefix+<sessionId>,
// written before the first commit that owes anything and removed with the clear. At least
// once: a notification is repeated (same detail type and eventId) when a clear is lost,
// never dropped. A failed publish leaves them owed and is logged and counted
// (outbound.Config.Publish); it never fails the call.

// OutboxPrefix is the folder of the outbox hints in Config.Files: one file per session that
// owes notifications, holding the session's workflow.
const OutboxPrefix = "_outbox/"

// noteOutbound keeps a stored event for the commit's notifications (root sessions only: a
// child's park and ending reach the world through its parent).
func (r *run) noteOutbound(ev events.Event) {
	if r.e.cfg.Outbound == nil || r.rec.Scope != nil {
		return
	}
	ev.SessionID = r.id
	r.outEvents = append(r.outEvents, ev)
}

// outboxEntries are the notifications of the commit being made: one per parked and raised
// event, a settle's, and with Session Event every stored event.
func (r *run) outboxEntries() []outbound.Notification {
	cfg := r.e.cfg.Outbound
	if cfg == nil || r.rec.Scope != nil {
		return nil
	}
	var out []outbound.Notification
	add := func(typ string, seq, ts int64, state string, extra map[string]any) {
		if !cfg.Wants(typ) {
			return
		}
		d := map[string]any{"eventId": outbound.EventID(r.id, seq), "sessionId": r.id, "sessionSeq": seq,
			"workflow": r.rec.Workflow, "status": string(r.rec.Status), "state": state, "ts": ts, "apiPath": outbound.APIPath(r.id)}
		if t := r.turnID(); t != "" {
			d["turnId"] = t
		}
		for k, v := range extra {
			d[k] = v
		}
		out = append(out, outbound.Notification{DetailType: typ, EventID: outbound.EventID(r.id, seq), Detail: outbound.Fit(typ, d, cfg.Cap())})
	}
	for _, ev := range r.outEvents {
		state := ev.Str("state")
		switch ev.Type {
		case events.Parked:
			p := r.rec.Park
			if p == nil || p.ParkID != ev.Str("parkId") {
				p = nil // parked and answered in one commit: the event's own fields
			}
			extra := map[string]any{"parkId": ev.Str("parkId")}
			if del, ok := ev.Data["delegation"].(map[string]any); ok {
				extra["delegation"] = map[string]any{"workflow": del["workflow"], "sessionId": del["sessionId"]}
			}
			if ev.Str("awaiting") == string(ChannelDecision) {
				if p != nil && p.Decision != nil {
					targets := make([]map[string]any, 0, len(p.Decision.Transitions))
					for _, t := range p.Decision.Transitions {
						tm := map[string]any{"to": t.To}
						if t.Description != "" {
							tm["description"] = t.Description
						}
						if t.Type != "" {
							tm["type"] = t.Type
						}
						targets = append(targets, tm)
					}
					extra["targets"] = targets
					extra["evidence"] = append([]string{}, p.Decision.Evidence...)
					if p.Decision.Title != "" {
						extra["stateTitle"] = p.Decision.Title
					}
					if len(p.Decision.Approvers) > 0 {
						extra["approvers"] = p.Decision.Approvers
					}
				}
				add(outbound.SessionParked, ev.SessionSeq, ev.TS, state, extra)
			} else {
				extra["reason"] = ev.Str("reason")
				if at := ev.Str("resumeAt"); at != "" {
					extra["resumeAt"] = at
				}
				add(outbound.SessionAwaitingInput, ev.SessionSeq, ev.TS, state, extra)
			}
		case events.Raised:
			add(outbound.SessionRaised, ev.SessionSeq, ev.TS, state, map[string]any{"code": ev.Str("code"), "reason": ev.Str("reason")})
		}
		if cfg.Wants(outbound.SessionEvent) {
			stored, _ := json.Marshal(ev)
			add(outbound.SessionEvent, ev.SessionSeq, ev.TS, state, map[string]any{"event": json.RawMessage(stored)})
		}
	}
	if r.settling {
		ts := r.e.cfg.Clock().UnixMilli()
		switch r.rec.Status {
		case StatusCompleted:
			add(outbound.SessionCompleted, r.rec.EventSeq, ts, r.rec.State, nil)
		case StatusFailed:
			extra := map[string]any{}
			if x := r.rec.Exit; x != nil {
				extra["code"], extra["reason"] = x.Code, x.Reason
			}
			add(outbound.SessionFailed, r.rec.EventSeq, ts, r.rec.State, extra)
		case StatusRejected:
			add(outbound.SessionRejected, r.rec.EventSeq, ts, r.rec.State, map[string]any{"reason": r.rec.Rejected})
		}
	}
	return out
}

// stageOutbox adds the commit's notifications to the record before it is encoded, and
// writes the session's hint before the first commit that owes anything. undo puts the run
// back as it was when the commit does not land.
func (r *run) stageOutbox(ctx context.Context) (undo func(), err error) {
	if r.e.cfg.Outbound == nil {
		return func() {}, nil
	}
	n, evs, settling := len(r.rec.Outbox), r.outEvents, r.settling
	r.rec.Outbox = append(r.rec.Outbox, r.outboxEntries()...)
	r.outEvents, r.settling = nil, false
	undo = func() { r.rec.Outbox, r.outEvents, r.settling = r.rec.Outbox[:n], evs, settling }
	if len(r.rec.Outbox) > 0 && !r.outboxHint {
		if err := r.e.cfg.Files.Write(ctx, OutboxPrefix+r.id, []byte(r.rec.Workflow)); err != nil {
			undo()
			return nil, err
		}
		r.outboxHint = true
	}
	return undo, nil
}

// publishOutbox publishes what the stored record owes, then clears it with a head-only
// commit and removes the hint. It runs right after a commit (and when a call finds a dead
// writer's notifications), so r.rec and r.head are what is stored. Nothing here fails the
// call: a failed publish stays owed; a lost clear repeats the notifications later.
func (r *run) publishOutbox(ctx context.Context) {
	cfg := r.e.cfg.Outbound
	if cfg == nil || len(r.rec.Outbox) == 0 {
		return
	}
	if !cfg.Publish(ctx, r.id, r.rec.Outbox) {
		return
	}
	owed := r.rec.Outbox
	r.rec.Outbox = nil
	body, err := encodeRecord(ctx, r.rec, r.e.cfg.Blobs, r.id, r.knownBlobs)
	if err == nil {
		h := *r.head
		h.Body, h.Lease = body, nil
		var stored *store.Head
		if stored, err = r.e.cfg.Log.Commit(ctx, r.id, r.owner, &store.Commit{ExpectedVersion: r.head.Version, Head: h}); err == nil {
			r.head = stored
			if derr := r.e.cfg.Files.Delete(ctx, OutboxPrefix+r.id); derr == nil || errors.Is(derr, store.ErrNotFound) {
				r.outboxHint = false
			}
			return
		}
	}
	if errors.Is(err, store.ErrConflict) {
		r.rec.Outbox = nil // another writer holds the session: it publishes (again) what is stored
	} else {
		r.rec.Outbox = owed
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	logger.WarnContext(ctx, "published lifecycle notifications stay in the session's record; they will be published again", "sessionId", r.id, "error", err.Error())
}

// SweepOutbox publishes what sessions left owed — a process that died between a commit and
// its publish, a sink that was failing —, up to limit sessions: each session with a hint in
// files is opened by its workflow's engine (engineFor), which publishes and clears what its
// record owes; a hint whose session owes nothing (its commit never landed) is removed. A
// session another writer holds is left to that writer, one whose sink fails again to the
// next sweep. It returns how many sessions owe nothing any more, and the errors joined.
func SweepOutbox(ctx context.Context, files store.Files, engineFor func(ctx context.Context, workflow string) (*Engine, error), limit int) (int, error) {
	if limit <= 0 {
		limit = store.DefaultLimit
	}
	list, err := files.List(ctx, OutboxPrefix[:len(OutboxPrefix)-1])
	if err != nil {
		return 0, err
	}
	var errs []error
	done := 0
	for _, f := range list {
		if f.Dir || done == limit || ctx.Err() != nil {
			continue
		}
		wf, err := files.Read(ctx, OutboxPrefix+f.Name)
		if err != nil {
			if !errors.Is(err, store.ErrNotFound) {
				errs = append(errs, err)
			}
			continue
		}
		eng, err := engineFor(ctx, string(wf))
		clear := false
		if err == nil {
			clear, err = eng.PublishOwed(ctx, f.Name)
		}
		var busy *SessionNotResumableError
		switch {
		case errors.As(err, &busy):
		case err != nil:
			errs = append(errs, fmt.Errorf("publish what %s owes: %w", f.Name, err))
		case clear:
			done++
		}
	}
	return done, errors.Join(errs...)
}

// PublishOwed publishes and clears what session id's record owes the outbound sink, under
// the session's writer lease (a live writer: *SessionNotResumableError), and removes its
// hint once nothing is owed. It reports whether nothing is owed any more (false: the sink
// failed again; the hint stays for the next sweep).
func (e *Engine) PublishOwed(ctx context.Context, id string) (bool, error) {
	clear := false
	_, err := e.withSessionOf(ctx, id, false, func(r *run) (*Outcome, error) {
		if len(r.rec.Outbox) > 0 {
			return nil, nil
		}
		clear = true // published by withSessionOf, or never owed (a commit that did not land)
		if derr := e.cfg.Files.Delete(ctx, OutboxPrefix+id); derr != nil && !errors.Is(derr, store.ErrNotFound) {
			return nil, derr
		}
		return nil, nil
	})
	return clear, err
}
