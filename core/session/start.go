package session

import (
	"context"
	"fmt"
	"maps"
	"strings"

	"github.com/archmax-ai/archmax/core/spec"
)

// OutcomeSummary is the answer to a mutating HTTP request (DESIGN.md §1): the outcome without
// the transcript and trail, which are read page by page.
type OutcomeSummary struct {
	SessionID   string      `json:"sessionId"`
	TurnID      string      `json:"turnId"`
	Kind        OutcomeKind `json:"kind"`
	Disposition Disposition `json:"disposition"`
	Status      Status      `json:"status"`
	State       string      `json:"state"`
	Reply       string      `json:"reply"`
	// Pending is the live park (with its parkId) when Kind is parked (DESIGN.md §5).
	Pending  *Park  `json:"pending,omitempty"`
	Exit     *Exit  `json:"exit,omitempty"`
	Rejected string `json:"rejected,omitempty"`
	Usage    *Usage `json:"usage,omitempty"`
	Turn     int    `json:"turn"`
	// Delegation names the child whose decision the session is parked on (spec 02 §3.7).
	Delegation *DelegatedPark `json:"delegation,omitempty"`
}

// Summary returns the outcome's HTTP summary.
func (o *Outcome) Summary() OutcomeSummary {
	return OutcomeSummary{SessionID: o.SessionID, TurnID: o.TurnID, Kind: o.Kind, Disposition: o.Disposition, Status: o.Status,
		State: o.State, Reply: o.Reply, Pending: o.Pending, Exit: o.Exit, Rejected: o.Rejected, Usage: o.Usage, Turn: o.Turn,
		Delegation: o.Delegation}
}

// StartRefusedError: a start's variables fail the trigger's requires signature (spec 01 §4.7;
// DESIGN.md §1 — the HTTP layer checks before anything is written). HTTP 422.
type StartRefusedError struct {
	Trigger string
	Reason  string                     // the engine's refusal text ("Refusing to start: …")
	Issues  []spec.SignatureValueIssue // one per offending entry
}

func (e *StartRefusedError) Error() string { return e.Reason }

// Name returns the error name.
func (e *StartRefusedError) Name() string { return "SignatureIssuesError" }

// CheckStart checks a start before anything is written: the workflow loads (else
// *spec.WorkflowLoadError / *UnknownWorkflowError), is not disabled, declares the trigger
// (else *spec.UnknownTriggerError), and the opening variables (assembly seeds, vars, and the
// built-in trigger) satisfy the trigger's requires (else *StartRefusedError).
func (e *Engine) CheckStart(ctx context.Context, trigger string, vars map[string]any) error {
	wf, err := e.loadWorkflow(ctx)
	if err != nil {
		return err
	}
	t := strings.TrimSpace(trigger)
	if t == "" {
		t = spec.ManualTrigger
	}
	trig := wf.spec.Trigger(t)
	if trig == nil {
		return &spec.UnknownTriggerError{TriggerID: t, Available: wf.spec.TriggerIDs()}
	}
	opening := map[string]any{}
	maps.Copy(opening, e.cfg.Seeds)
	maps.Copy(opening, vars)
	opening[spec.TriggerVariable] = t
	if issues := spec.SignatureValueIssues(trig.Requires, opening); len(issues) > 0 {
		return &StartRefusedError{Trigger: t, Reason: spec.RequiresRefusal(t, trig.Requires, opening), Issues: issues}
	}
	return nil
}

// ResolveSessionID picks the session a start belongs to (spec 01 §4.9): the trigger's
// `session:` path resolved against the firing's variables, else a minted
// `session-<uuid>` (minted reports which). A resolved id failing the session-id rule is a
// *spec.SessionStoreIdError.
func (e *Engine) ResolveSessionID(ctx context.Context, trigger string, vars map[string]any) (id string, minted bool, err error) {
	wf, err := e.loadWorkflow(ctx)
	if err != nil {
		return "", false, err
	}
	t := strings.TrimSpace(trigger)
	if t == "" {
		t = spec.ManualTrigger
	}
	if trig := wf.spec.Trigger(t); trig != nil && trig.Session != "" {
		path, perr := spec.ParseSessionPath(trig.Session)
		if perr != nil {
			return "", false, fmt.Errorf("trigger '%s' session path: %w", t, perr)
		}
		if got, ok := spec.SessionIDFromPath(vars, path); ok {
			id, err := spec.CheckSessionID(got)
			return id, false, err
		}
	}
	return spec.MintSessionID(), true, nil
}
