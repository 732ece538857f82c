package session

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/archmax-ai/archmax/core/events"
	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/store"
)

// ResolveInput is a firing to classify (spec 02 §4.5): the trigger id ("" = manual), its
// variables, and optionally an explicit session id or a per-firing session path (blank =
// absent).
type ResolveInput struct {
	Trigger     string
	Variables   map[string]any
	SessionID   string
	SessionPath string
}

// Dispositions of a resolved firing (spec 02 §4.5).
const (
	ResolveTurn   = "turn"   // a new session, or a finished one reopened
	ResolveResume = "resume" // a session awaiting input: the firing is a delivery
	ResolveReply  = "reply"  // a session awaiting a decision: the firing is a reply
)

// ResolvedSession is where a firing would go: the session id, the disposition, the state a
// turn begins in (StartState) or the parked state (State), and Native — the id was minted
// for this firing.
type ResolvedSession struct {
	SessionID   string `json:"sessionId"`
	Disposition string `json:"disposition"`
	StartState  string `json:"startState,omitempty"`
	State       string `json:"state,omitempty"`
	Native      bool   `json:"native"`
}

// UnknownSessionTriggerError: a firing that would open a session names a trigger no state
// declares (spec 02 §4.5).
type UnknownSessionTriggerError struct{ Trigger string }

func (e *UnknownSessionTriggerError) Error() string {
	return fmt.Sprintf("No state declares trigger '%s', and no parked session is awaiting it, so there is nowhere for this firing to go. "+
		"Declare it under the 'triggers:' of the state a run should start in, or deliver the firing to a session parked on it — "+
		"naming the session, or a 'sessionPath' to find it by.", e.Trigger)
}

// Name returns the spec error name.
func (e *UnknownSessionTriggerError) Name() string { return "UnknownSessionTriggerError" }

// ResolveSession classifies a firing without running anything (spec 02 §4.5): it reads
// only the session's checkpoint. The id is, most specific first, the explicit SessionID,
// else the one session path present (the per-firing SessionPath, else the trigger's
// `session:`), else minted as `session-<uuid>`; a path that does not resolve mints an id
// and emits a warning event naming the trigger, the path and the id. Errors:
// *spec.InvalidSessionPathError (malformed caller path), *spec.SessionStoreIdError,
// *UnknownSessionTriggerError (opening a session on an undeclared trigger),
// *SessionNotResumableError (a session mid-turn), workflow load errors.
func (e *Engine) ResolveSession(ctx context.Context, in ResolveInput) (*ResolvedSession, error) {
	wf, err := e.loadWorkflow(ctx)
	if err != nil {
		return nil, err
	}
	sp := wf.spec
	trigger := strings.TrimSpace(in.Trigger)
	if trigger == "" {
		trigger = spec.ManualTrigger
	}
	res := &ResolvedSession{}
	if id := strings.TrimSpace(in.SessionID); id != "" {
		if res.SessionID, err = spec.CheckSessionID(id); err != nil {
			return nil, err
		}
	} else {
		pathSrc := strings.TrimSpace(in.SessionPath)
		if pathSrc == "" {
			if t := sp.Trigger(trigger); t != nil {
				pathSrc = t.Session
			}
		}
		if pathSrc != "" {
			path, err := spec.ParseSessionPath(pathSrc)
			if err != nil {
				return nil, err
			}
			if got, ok := spec.SessionIDFromPath(in.Variables, path); ok {
				if res.SessionID, err = spec.CheckSessionID(got); err != nil {
					return nil, err
				}
			}
		}
		if res.SessionID == "" {
			res.SessionID, res.Native = spec.MintSessionID(), true
			if pathSrc != "" {
				e.emitter.Stamp(events.Event{Type: events.Warning, SessionID: res.SessionID, Data: map[string]any{"scope": "session",
					"message": fmt.Sprintf("Trigger '%s': session path '%s' did not resolve; minted session id '%s'.", trigger, pathSrc, res.SessionID)}})
			}
		}
	}
	var head *store.Head
	if !res.Native {
		head, err = e.cfg.Log.Get(ctx, res.SessionID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
	}
	if head == nil {
		t := sp.Trigger(trigger)
		if t == nil {
			return nil, &UnknownSessionTriggerError{Trigger: trigger}
		}
		res.Disposition, res.StartState = ResolveTurn, t.State
		return res, nil
	}
	rec, err := decodeRecord(ctx, head.Body, e.cfg.Blobs, res.SessionID, nil)
	if err != nil {
		return nil, err
	}
	switch st := Status(head.Status); {
	case IsFinished(st):
		res.Disposition = ResolveTurn
		switch {
		case sp.State(rec.State) != nil:
			res.StartState = rec.State
		case sp.Trigger(trigger) != nil:
			res.StartState = sp.Trigger(trigger).State
		default:
			res.StartState = sp.Entry()
		}
	case st == StatusAwaitingDecision && rec.Park != nil:
		res.Disposition, res.State = ResolveReply, rec.Park.State()
	case st == StatusAwaitingInput && rec.Park != nil:
		res.Disposition, res.State = ResolveResume, rec.Park.State()
	case st == StatusRunning && !head.Lease.Live(e.cfg.Clock()):
		// interrupted: its turn stopped on a failure and no writer holds it — a new message
		// starts a new turn from where it stopped, as Send does (SS21-12)
		res.Disposition, res.StartState = ResolveTurn, rec.State
		if sp.State(rec.State) == nil {
			res.StartState = sp.Entry()
		}
	default:
		busy := &SessionNotResumableError{SessionID: res.SessionID, Status: head.Status}
		if head.Lease != nil {
			busy.LeaseExpiresAt = spec.FormatInstant(head.Lease.ExpiresAt)
		}
		return nil, busy
	}
	return res, nil
}
