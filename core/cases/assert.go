package cases

// Assertion evaluation (04-cases.md §7.2, §6.2 ST-11): every assertion kind checked
// against the View of the closest preceding action, yielding its AssertionRecords.
// Pure apart from the grade step's judge call (§10, judge.go).

import (
	"context"
	"slices"
	"strings"

	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/transcript"
)

// Outcome kinds a View's Outcome.Kind holds (ST-10).
const (
	OutcomeCompleted = "completed"
	OutcomeParked    = "parked"
	OutcomeFailed    = "failed"
	OutcomeRejected  = "rejected"
)

// Evaluate checks one assertion step against v, the view of the closest preceding action
// (CD-72, ST-30 step 7), and returns its records, all stamped with step (RV-02) and in
// written order (RV-03):
//
//   - one record for succeeded, parked, raised, reachedState, calledTool, notCalledTool,
//     blockedTool, usedNoTools, trail, noTraversal, triggerArrival, ranWorkflow and grade;
//   - one per token for reply (includes first, then excludes; AX-06);
//   - for variables, one value record per `expect` name plus one lock record per set
//     variable that `locked` names (AX-04); an empty `expect` yields none.
//
// Scopes (ST-11, §7.1): succeeded/parked/raised read v.Outcome; reachedState, trail,
// noTraversal, triggerArrival and ranWorkflow the whole v.Trail (sub-workflow steps
// included); calledTool, notCalledTool, blockedTool and usedNoTools the agent's calls in
// the assistant messages of v.TurnMessages (runtime notes and archmax_note calls are never
// calls; a call is blocked when its tool message carries the governance marker or its id
// is in v.BlockedCallIDs); reply every assistant text of v.SessionMessages; variables
// v.Variables; grade the evidence built from v (JG-03).
//
// A regex match the engine aborted (ErrRegexAborted: timeout or backtracking budget) or a
// malformed regex (only in hand-built documents; the parser rejects them, MT-04) never
// passes: the record fails and its detail carries the error in parentheses after the
// detail the spec gives (e.g. `/^(a+)+$/ (regex "/^(a+)+$/": match aborted (…))`).
//
// grade asks judge (nil: no `tests.judge`, JG-01) through GradeClosedQA; it is the only
// kind that uses ctx. When ctx ends before or during the judge call, Evaluate returns no
// record for the grade step, so that the runner reports it not-executed (ST-41: an
// assertion in flight at the timeout has produced no record). A pointer to an assertion is
// read as its value; a nil v reads as an empty view.
func Evaluate(ctx context.Context, step int, a Assertion, v *View, judge Judge) []AssertionRecord {
	a = derefAssertion(a)
	if v == nil {
		v = &View{}
	}
	gate := func(kind string, pass bool, detail string) AssertionRecord {
		st := AssertionFailed
		if pass {
			st = AssertionPassed
		}
		return AssertionRecord{Kind: kind, Status: st, Detail: detail, Step: step}
	}
	one := func(r AssertionRecord) []AssertionRecord { return []AssertionRecord{r} }

	switch a := a.(type) {
	case SucceededAssertion:
		pass, detail := evalSucceeded(v.Outcome)
		return one(gate(string(StepSucceeded), pass, detail))
	case ParkedAssertion:
		o := v.Outcome
		pass := o.Kind == OutcomeParked &&
			(a.Channel == "" || o.Channel == a.Channel) &&
			(a.State == "" || o.State == a.State)
		var pinned []string
		for _, f := range []string{a.Channel, a.State} {
			if f != "" {
				pinned = append(pinned, f)
			}
		}
		return one(gate(string(StepParked), pass, strings.Join(pinned, " in ")))
	case RaisedAssertion:
		pass, detail := evalRaised(a, v.Outcome)
		return one(gate(string(StepRaised), pass, detail))
	case VariablesAssertion:
		return evalVariables(a, v.Variables, gate)
	case ReachedStateAssertion:
		pass := slices.ContainsFunc(v.Trail, func(s transcript.TrailStep) bool {
			return s.Kind != transcript.TrailTrigger && s.To == a.State
		})
		return one(gate(string(StepReachedState), pass, a.State))
	case ReplyAssertion:
		subject := replySubject(v)
		var out []AssertionRecord
		for _, tok := range a.Includes {
			ok, err := TextMatches(tok, subject)
			out = append(out, gate(RecordReplyIncludes, ok && err == nil, withErr(tok, err)))
		}
		for _, tok := range a.Excludes {
			ok, err := TextMatches(tok, subject)
			out = append(out, gate(RecordReplyExcludes, !ok && err == nil, withErr(tok, err)))
		}
		return out
	case CalledToolAssertion:
		found, err := findCall(turnCalls(v), a.ToolPattern, false)
		return one(gate(string(StepCalledTool), found, withErr(a.Name, abortedOnly(found, err))))
	case NotCalledToolAssertion:
		found, err := findCall(turnCalls(v), a.ToolPattern, false)
		return one(gate(string(StepNotCalledTool), !found && err == nil, withErr(a.Name, abortedOnly(found, err))))
	case BlockedToolAssertion:
		found, err := findCall(turnCalls(v), a.ToolPattern, true)
		return one(gate(string(StepBlockedTool), found, withErr(a.Name, abortedOnly(found, err))))
	case UsedNoToolsAssertion:
		return one(gate(string(StepUsedNoTools), len(turnCalls(v)) == 0, ""))
	case TrailAssertion:
		n := 0
		for _, s := range v.Trail {
			if (a.To == "" || s.To == a.To) &&
				(a.TrailKind == "" || string(s.Kind) == a.TrailKind) &&
				(a.Reason == "" || s.Reason == a.Reason) {
				n++
			}
		}
		var wanted []string
		if a.To != "" {
			wanted = append(wanted, "to="+a.To)
		}
		if a.TrailKind != "" {
			wanted = append(wanted, "kind="+a.TrailKind)
		}
		if a.Reason != "" {
			wanted = append(wanted, "reason="+a.Reason)
		}
		detail := strings.Join(wanted, " ") + " expected " + itoa(a.Count) + ", saw " + itoa(n)
		return one(gate(string(StepTrail), n == a.Count, detail))
	case NoTraversalAssertion:
		pass := !slices.ContainsFunc(v.Trail, func(s transcript.TrailStep) bool {
			return s.Kind != transcript.TrailTrigger
		})
		return one(gate(string(StepNoTraversal), pass, "no committed transitions"))
	case TriggerArrivalAssertion:
		pass := slices.ContainsFunc(v.Trail, func(s transcript.TrailStep) bool {
			return s.Kind == transcript.TrailTrigger && s.Reason == a.Trigger
		})
		return one(gate(string(StepTriggerArrival), pass, a.Trigger))
	case RanWorkflowAssertion:
		status := a.Status
		if status == "" {
			status = StatusOK
		}
		n := 0
		for _, s := range v.Trail {
			got := s.Status
			if got == "" {
				got = StatusOK
			}
			if s.Kind == transcript.TrailSubWorkflow && s.Workflow == a.Workflow && got == status {
				n++
			}
		}
		pass, detail := n > 0, a.Workflow+" ("+status+")"
		if a.Count != nil {
			pass = n == *a.Count
			detail = a.Workflow + " (" + status + ", " + itoa(n) + "/" + itoa(*a.Count) + ")"
		}
		return one(gate(string(StepRanWorkflow), pass, detail))
	case GradeAssertion:
		rec, ok := evalGrade(ctx, step, a, v, judge)
		if !ok {
			return nil
		}
		return one(rec)
	case nil:
		return one(gate("", false, "no assertion"))
	}
	return one(gate(string(a.Kind()), false, "unsupported assertion kind"))
}

// evalSucceeded is AX-01: a pass iff the outcome completed; the miss details name a raise
// (`raised '<code>': <reason>`), a park (`the session is parked`), or any other
// non-completion (`the turn did not complete`, then `: <rejected reason>` when the
// outcome carries one).
func evalSucceeded(o Outcome) (bool, string) {
	switch {
	case o.Kind == OutcomeCompleted:
		return true, ""
	case isRaise(o):
		return false, raisedLabel(o.Exit)
	case o.Kind == OutcomeParked:
		return false, "the session is parked"
	case o.Rejected != "":
		return false, "the turn did not complete: " + o.Rejected
	}
	return false, "the turn did not complete"
}

// isRaise reports whether o is a raise (AX-03): kind failed with an exit whose Success is
// false.
func isRaise(o Outcome) bool {
	return o.Kind == OutcomeFailed && o.Exit != nil && !o.Exit.Success
}

func raisedLabel(e *Exit) string { return "raised '" + e.Code + "': " + e.Reason }

// evalRaised is AX-03. A raise that matches passes with the detail naming it
// (`raised '<code>': <reason>`, decision: the spec gives miss details only); a raise that
// does not match misses with the same detail; no raise misses with
// `the session did not raise (outcome: <kind>)`. Code compares exactly; Reason exactly,
// or as a regex when regex-shaped (MT-01, MT-05) — an aborted match misses with the error
// appended.
func evalRaised(a RaisedAssertion, o Outcome) (bool, string) {
	if !isRaise(o) {
		return false, "the session did not raise (outcome: " + o.Kind + ")"
	}
	label := raisedLabel(o.Exit)
	if a.Code != "" && o.Exit.Code != a.Code {
		return false, label
	}
	if a.Reason == "" {
		return true, label
	}
	if _, _, regex := splitRegexForm(a.Reason); !regex {
		return o.Exit.Reason == a.Reason, label
	}
	ok, err := TextMatches(a.Reason, o.Exit.Reason)
	return ok && err == nil, withErr(label, err)
}

// evalVariables is AX-04: per `expect` name, in written order, a value record (`<label>`
// on a pass; `<label> (not set)`, `<label> (path does not resolve)` or
// `<label>: expected <JSON>, got <JSON>` on a miss, label = `<name>` or `<name>.<path>`),
// then, for a set variable that `locked` names, a lock record
// `<name> locked=<bool> (actual <bool>)`. Values compare by DeepEqual (MT-20; regex-shaped
// expectations are literal); paths resolve with spec.ResolveValuePath (list indexes,
// negative from the end). The expected JSON keeps document order; the actual's mappings
// print with sorted keys (Go maps have no order).
func evalVariables(a VariablesAssertion, vars map[string]spec.VariableEntry, gate func(string, bool, string) AssertionRecord) []AssertionRecord {
	const kind = string(StepVariables)
	var out []AssertionRecord
	for _, f := range a.Expect {
		name, expected := f.Key, f.Value
		path, hasPath := a.PathOf(name)
		hasPath = hasPath && path != ""
		label := name
		if hasPath {
			label = name + "." + path
		}
		stored, set := vars[name]
		if !set {
			out = append(out, gate(kind, false, label+" (not set)"))
			continue
		}
		actual, resolved := stored.Value, true
		if hasPath {
			actual, resolved = spec.ResolveValuePath(plainJSON(stored.Value), strings.Split(path, "."))
		}
		switch {
		case !resolved:
			out = append(out, gate(kind, false, label+" (path does not resolve)"))
		case DeepEqual(expected.Plain(), actual):
			out = append(out, gate(kind, true, label))
		default:
			exp, _ := expected.MarshalJSON()
			out = append(out, gate(kind, false, label+": expected "+string(exp)+", got "+jsJSON(actual)))
		}
		if want, declared := a.LockedOf(name); declared {
			out = append(out, gate(kind, stored.Locked == want,
				name+" locked="+boolText(want)+" (actual "+boolText(stored.Locked)+")"))
		}
	}
	return out
}

// plainJSON canonicalises a stored value to the shapes spec.ResolveValuePath walks:
// map[string]any and []any at every depth (other maps, slices, pointers and
// json.RawMessage converted as PartialMatch reads them); scalars are kept.
func plainJSON(v any) any {
	k, x := mtClassify(v)
	switch k {
	case mtkMap:
		m := x.(map[string]any)
		out := make(map[string]any, len(m))
		for key, val := range m {
			out[key] = plainJSON(val)
		}
		return out
	case mtkList:
		l := x.([]any)
		out := make([]any, len(l))
		for i, val := range l {
			out[i] = plainJSON(val)
		}
		return out
	case mtkNull:
		return nil
	}
	return x
}

// replySubject is AX-06's matching subject: the texts of the assistant messages of the
// whole session (runtime notes excluded, blank texts skipped) joined with a line feed;
// the outcome's reply when there is no such text.
func replySubject(v *View) string {
	var parts []string
	for _, m := range v.SessionMessages {
		if isAgentText(m) {
			parts = append(parts, m.Text)
		}
	}
	if len(parts) == 0 {
		return v.Outcome.Reply
	}
	return strings.Join(parts, "\n")
}

// isAgentText reports whether m is an assistant message (not a runtime note) with
// non-blank text.
func isAgentText(m transcript.Message) bool {
	return m.Role == transcript.RoleAssistant && m.Note == "" && strings.TrimSpace(m.Text) != ""
}

// Call statuses (JG-03; the reference's ToolCallFact status): a call with no result is
// pending; a result carrying the governance marker makes it rejected, an error result
// failed, any other result completed.
const (
	CallCompleted = "completed"
	CallFailed    = "failed"
	CallRejected  = "rejected"
	CallPending   = "pending"
)

// callFact is one agent tool call paired with its result.
type callFact struct {
	id     string
	name   string
	args   map[string]any
	status string
	output *string // the result text; nil when no result was recorded
}

// toolCalls reads the agent's calls from msgs in order (ST-11): every ToolCall of an
// assistant message that is not a runtime note, archmax_note calls excluded, each paired
// with its tool message — by call id, falling back to the first pending call of the same
// name (REF session-view.ts). blocked ids are rejected even without the marker.
func toolCalls(msgs []transcript.Message, blocked []string) []*callFact {
	var calls []*callFact
	for _, m := range msgs {
		if m.Note != "" {
			continue
		}
		switch m.Role {
		case transcript.RoleAssistant:
			for _, tc := range m.ToolCalls {
				if tc.Name == spec.NoteTool {
					continue
				}
				calls = append(calls, &callFact{id: tc.ID, name: tc.Name, args: tc.Args, status: CallPending})
			}
		case transcript.RoleTool:
			var fact *callFact
			if m.ToolCallID != "" {
				for _, c := range calls {
					if c.id == m.ToolCallID && c.status == CallPending {
						fact = c
						break
					}
				}
			}
			if fact == nil {
				for _, c := range calls {
					if c.name == m.Tool && c.status == CallPending && c.output == nil {
						fact = c
						break
					}
				}
			}
			if fact == nil {
				continue
			}
			text := m.Text
			fact.output = &text
			switch {
			case m.Blocked:
				fact.status = CallRejected
			case m.Error:
				fact.status = CallFailed
			default:
				fact.status = CallCompleted
			}
		}
	}
	for _, c := range calls {
		if c.id != "" && slices.Contains(blocked, c.id) {
			c.status = CallRejected
		}
	}
	return calls
}

// turnCalls are the agent's calls in the action's turn (ST-11).
func turnCalls(v *View) []*callFact { return toolCalls(v.TurnMessages, v.BlockedCallIDs) }

// findCall reports whether some call named p.Name (and, with blockedOnly, refused by
// governance) has arguments matching p.Input partially (MT-10; absent input matches any
// call). The error is non-nil only when no call matched and a regex match aborted on some
// candidate (ErrRegexAborted): the answer is then unknown.
func findCall(calls []*callFact, p ToolPattern, blockedOnly bool) (bool, error) {
	var aborted error
	want := p.Input.Plain()
	for _, c := range calls {
		if c.name != p.Name || (blockedOnly && c.status != CallRejected) {
			continue
		}
		if want == nil {
			return true, nil
		}
		var args any = c.args
		if c.args == nil {
			args = map[string]any{} // the reference reads absent arguments as {}
		}
		ok, err := PartialMatchErr(want, args)
		if ok && err == nil {
			return true, nil
		}
		if err != nil && aborted == nil {
			aborted = err
		}
	}
	return false, aborted
}

// abortedOnly drops err when a definite match was found.
func abortedOnly(found bool, err error) error {
	if found {
		return nil
	}
	return err
}

// withErr appends ` (<err>)` to detail when err is set.
func withErr(detail string, err error) string {
	if err == nil {
		return detail
	}
	return detail + " (" + err.Error() + ")"
}

func boolText(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func itoa(n int) string { return spec.FormatJSNumber(float64(n)) }

// jsJSON renders a stored JSON-shaped value as JavaScript's JSON.stringify does, compact:
// numbers in their shortest form (NaN and ±Infinity as null), strings with only `"`, `\`
// and control characters escaped, mappings with sorted keys (decision: a Go map keeps no
// insertion order). Values JSON cannot express fall back to encoding/json.
func jsJSON(v any) string { return string(appendJS(nil, v)) }

func appendJS(b []byte, v any) []byte {
	k, x := mtClassify(v)
	switch k {
	case mtkNull:
		return append(b, "null"...)
	case mtkBool:
		return append(b, boolText(x.(bool))...)
	case mtkNumber:
		return NumberValue(mtFloat(x)).appendScalar(b)
	case mtkString:
		return spec.AppendJSONString(b, x.(string))
	case mtkList:
		b = append(b, '[')
		for i, e := range x.([]any) {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJS(b, e)
		}
		return append(b, ']')
	case mtkMap:
		m := x.(map[string]any)
		keys := make([]string, 0, len(m))
		for key := range m {
			keys = append(keys, key)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, key := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = spec.AppendJSONString(b, key)
			b = append(b, ':')
			b = appendJS(b, m[key])
		}
		return append(b, '}')
	}
	raw, err := marshalNoHTMLEscape(x)
	if err != nil {
		return append(b, "null"...)
	}
	return append(b, raw...)
}
