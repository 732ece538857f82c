package session

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/archmax-ai/archmax/core/events"
	"github.com/archmax-ai/archmax/core/kernel"
	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/transcript"
)

// control services a control tool for the agent (spec 01 §7.2). Code-state scripts use the
// same checks through codeHost.
func (r *run) control(st *spec.State, origin kernel.Origin, callID, tool string, args map[string]any) (string, bool, callEffect) {
	switch tool {
	case spec.AdvanceTool:
		to, reason, problem := r.checkAdvance(st, args)
		if problem != "" {
			return advanceRejectedPrefix + problem, true, callEffect{}
		}
		r.moveTo(to, transcript.TrailAgent, reason, callID, true)
		return replyAdvanced(to), false, callEffect{moveTo: to, moveKind: transcript.TrailAgent, moveReason: reason}
	case spec.RaiseTool:
		code, reason, problem := checkRaise(args)
		if problem != "" {
			return raiseRejectedPrefix + problem, true, callEffect{}
		}
		r.emit(events.Raised, map[string]any{"state": st.Slug, "sessionId": r.id, "code": code, "reason": reason, "callId": callID})
		return replyRaised(code), false, callEffect{raise: &Exit{Success: false, Code: code, Reason: reason}}
	case spec.ResetTool:
		reason, _ := args["reason"].(string)
		if strings.TrimSpace(reason) == "" {
			return resetRejectedNoReason, true, callEffect{}
		}
		entry := r.resetTarget()
		r.emit(events.WorkflowReset, map[string]any{"entry": entry})
		r.moveTo(entry, transcript.TrailReset, strings.TrimSpace(reason), callID, true)
		r.rec.Rejected = ""
		return replyReset(entry), false, callEffect{moveTo: entry, moveKind: transcript.TrailReset, moveReason: reason}
	case spec.WaitTool:
		in, problem, budget := r.checkWait(st, args)
		if problem != "" {
			eff := callEffect{}
			if budget {
				eff.failure = strings.TrimPrefix(problem, "archmax_wait rejected: ")
			}
			return problem, true, eff
		}
		return replyWaiting(st.Slug, in.ResumeAt), false, callEffect{wait: in}
	case spec.GetVariablesTool:
		text, ok := r.getVariables(args)
		return text, !ok, callEffect{}
	case spec.SetVariablesTool:
		text, ok := r.setVariables(st.Slug, callID, args)
		return text, !ok, callEffect{}
	}
	return notATool(tool), true, callEffect{}
}

// resetTarget is the session's recorded entry state, else the current trigger's entry
// state, else the machine's entry (spec 02 §1.7).
func (r *run) resetTarget() string {
	if r.sp.State(r.rec.OpeningState) != nil {
		return r.rec.OpeningState
	}
	if t := r.sp.Trigger(r.rec.CurrentTrigger); t != nil {
		return t.State
	}
	return r.sp.Entry()
}

// checkAdvance validates an advance from st in the order of 03 CS-35: arguments, evidence,
// the requires gate (transition.requires), the edge (transition.no-edge). It returns the
// target and trimmed reason, or the problem text (without the agent's prefix).
func (r *run) checkAdvance(st *spec.State, args map[string]any) (string, string, string) {
	var problems []string
	to, okTo := args["to"].(string)
	if !okTo {
		problems = append(problems, "to: must be a string naming the target state")
	}
	reason, okReason := args["reason"].(string)
	if !okReason || strings.TrimSpace(reason) == "" {
		problems = append(problems, "reason: must be a non-empty string saying why the run moves")
	}
	var evidence []string
	if ev, present := args["evidence"]; present && ev != nil {
		list, ok := ev.([]any)
		if !ok {
			problems = append(problems, "evidence: must be a list of workspace paths")
		}
		for _, e := range list {
			s, ok := e.(string)
			if !ok {
				problems = append(problems, "evidence: must be a list of workspace paths")
				break
			}
			evidence = append(evidence, s)
		}
	}
	if len(problems) > 0 {
		return "", "", "invalid arguments — " + strings.Join(problems, "; ")
	}
	var accepted []string
	if len(evidence) > 0 {
		if target := r.sp.State(to); target == nil || target.Type != "human" {
			return "", "", fmt.Sprintf("evidence can only be attached when advancing into a human decision state, and '%s' is not one — nothing would present it. Call again without 'evidence'.", to)
		}
		if len(evidence) > spec.MaxAdvanceEvidence {
			return "", "", fmt.Sprintf("%d evidence paths were attached; at most 20 may be. Attach the artifacts the decision actually rests on.", len(evidence))
		}
		for _, raw := range evidence {
			p, err := kernel.CanonicalPath(strings.TrimSpace(raw))
			switch {
			case err != nil:
				return "", "", fmt.Sprintf("evidence path '%s' points outside the workspace.", raw)
			case p == "":
				return "", "", "an evidence path is empty — name a file, not the workspace root."
			case kernel.IsInternalArea(strings.SplitN(p, "/", 2)[0]) || kernel.IsAuthoringPlane(strings.SplitN(p, "/", 2)[0]):
				return "", "", fmt.Sprintf("evidence path '%s' addresses a runtime-internal area, which is not readable — attach what you wrote under 'scratchpad/'.", raw)
			}
			if !slices.Contains(accepted, p) {
				accepted = append(accepted, p)
			}
		}
	}
	v := kernel.DecideTransition(r.policy(), st.Slug, to, func(name string) bool { _, ok := r.rec.Variables[name]; return ok })
	if !v.Allow {
		return "", "", v.Reason
	}
	r.rec.PendingEvidence = accepted
	return to, strings.TrimSpace(reason), ""
}

// checkRaise validates archmax_raise({code, reason}): both non-empty strings (03 CS-37).
func checkRaise(args map[string]any) (string, string, string) {
	code, _ := args["code"].(string)
	reason, _ := args["reason"].(string)
	var problems []string
	if strings.TrimSpace(code) == "" {
		problems = append(problems, "code: must be a non-empty string")
	}
	if strings.TrimSpace(reason) == "" {
		problems = append(problems, "reason: must be a non-empty string")
	}
	if len(problems) > 0 {
		return "", "", "invalid arguments — " + strings.Join(problems, "; ")
	}
	return strings.TrimSpace(code), strings.TrimSpace(reason), ""
}

// getVariables answers archmax_get_variables({name?, path?}) (spec 01 §5.4).
func (r *run) getVariables(args map[string]any) (string, bool) {
	name, _ := args["name"].(string)
	path, _ := args["path"].(string)
	name, path = strings.TrimSpace(name), strings.TrimSpace(path)
	if name == "" {
		return prettyJSON(r.rec.Variables), true
	}
	entry, ok := r.rec.Variables[name]
	if !ok {
		set := slices.Sorted(maps.Keys(r.rec.Variables))
		list := "(none set yet)"
		if len(set) > 0 {
			list = strings.Join(set, ", ")
		}
		return fmt.Sprintf("Variable '%s' is not set. Set: %s.", name, list), false
	}
	if path == "" {
		return prettyJSON(entry), true
	}
	v, ok := spec.ResolveValuePath(entry.Value, strings.Split(path, "."))
	if !ok {
		return fmt.Sprintf("Path '%s' does not resolve against variable '%s'.", path, name), false
	}
	return prettyJSON(map[string]any{"value": v}), true
}

// setVariables applies archmax_set_variables({variables, lock?}) atomically (spec 01 §5.4,
// §4.7 typed returns): any refused name refuses the whole call.
func (r *run) setVariables(state, callID string, args map[string]any) (string, bool) {
	vars, ok := args["variables"].(map[string]any)
	if !ok || len(vars) == 0 {
		return "archmax_set_variables rejected: no variables given. Nothing was written.", false
	}
	lock, _ := args["lock"].(bool)
	names := slices.Sorted(maps.Keys(vars))
	for _, n := range names {
		if !spec.IsVariableName(n) {
			hint := ""
			if strings.Contains(n, ".") {
				hint = " Variables are written whole — there is no sub-path write."
			}
			return fmt.Sprintf("archmax_set_variables rejected: '%s' is not a valid variable name. Use lowercase letters, digits and underscores, starting with a letter (e.g. 'from_email').%s Nothing was written.", n, hint), false
		}
		if cur, ok := r.rec.Variables[n]; ok && cur.Locked {
			b, _ := json.Marshal(cur.Value)
			return fmt.Sprintf("archmax_set_variables rejected: '%s' is locked (set by the host to %s) and cannot be rewritten. Nothing was written.", n, b), false
		}
		if n == spec.TitleVariable {
			if lock {
				return "archmax_set_variables rejected: 'title' is never locked — it is the run's label, which the run may refine. Retry without `lock`. Nothing was written.", false
			}
			if d := spec.TitleWriteError(vars[n]); d != "" {
				return "archmax_set_variables rejected: " + d + " Nothing was written.", false
			}
		}
	}
	if trig := r.sp.Trigger(r.rec.CurrentTrigger); trig != nil {
		if msg := spec.MistypedReturnsRefusal(trig.ID, trig.Returns, vars); msg != "" {
			return "archmax_set_variables rejected: " + msg + " Nothing was written.", false
		}
	}
	title := ""
	for _, n := range names {
		v := vars[n]
		if n == spec.TitleVariable {
			s, _ := v.(string)
			v = strings.TrimSpace(s)
			if cur, ok := r.rec.Variables[n]; !ok || cur.Value != v {
				title = v.(string)
			}
			r.rec.Variables[n] = spec.VariableEntry{Value: v}
			continue
		}
		r.rec.Variables[n] = spec.VariableEntry{Value: v, Locked: lock}
	}
	ev := map[string]any{"state": state, "names": names, "locked": lock}
	if callID != "" {
		ev["callId"] = callID
	}
	r.emit(events.VariablesSet, ev)
	if title != "" {
		te := map[string]any{"title": title, "state": state}
		if callID != "" {
			te["callId"] = callID
		}
		r.emit(events.TitleSet, te)
	}
	suffix := ""
	if lock {
		suffix = " (locked)"
	}
	return fmt.Sprintf("Set %s%s.", strings.Join(names, ", "), suffix), true
}

func prettyJSON(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

// controlSpecs are the model-facing descriptions and input schemas of the controls.
var controlSpecs = map[string]struct{ desc, schema string }{
	spec.EvalTool: {evalDescription,
		`{"type":"object","properties":{"code":{"type":"string","description":` + jsonString(evalCodeParam) + `}},"required":["code"]}`},
	spec.RunTool: {runDescription,
		`{"type":"object","properties":{"file_path":{"type":"string","description":` + jsonString(runPathParam) + `},"args":{"type":"object","description":` + jsonString(runArgsParam) + `}},"required":["file_path"]}`},
	spec.AdvanceTool: {
		"Move the run along one of the current state's transitions when its work is done. `to` is the target state's slug (listed in the prompt); `reason` is what the next state reads about why the run moved.",
		`{"type":"object","properties":{"to":{"type":"string","description":"The target state's slug."},"reason":{"type":"string","description":"Why the run moves; the next state reads it."},"evidence":{"type":"array","items":{"type":"string"},"description":"Only when advancing into a human decision state: workspace paths the person should see (at most 20)."}},"required":["to","reason"]}`,
	},
	spec.RaiseTool: {
		"End the run as failed when it cannot continue. Call it on its own, with a short machine-readable `code` and a `reason` for the person.",
		`{"type":"object","properties":{"code":{"type":"string"},"reason":{"type":"string"}},"required":["code","reason"]}`,
	},
	spec.ResetTool: {
		"Return the run to the state its first turn opened in, to take a path the current state cannot reach. Messages, files and variables are kept.",
		`{"type":"object","properties":{"reason":{"type":"string","description":"Why the run has to start over."}},"required":["reason"]}`,
	},
	spec.GetVariablesTool: {
		"Read run variables: all of them, one by `name`, or a dotted `path` inside one (e.g. items.-1.sku).",
		`{"type":"object","properties":{"name":{"type":"string"},"path":{"type":"string"}}}`,
	},
	spec.SetVariablesTool: {
		"Write run variables (whole values; several at once, all or nothing). Variables the host set are locked. `lock: true` locks what you write.",
		`{"type":"object","properties":{"variables":{"type":"object","description":"Variable name to JSON value."},"lock":{"type":"boolean"}},"required":["variables"]}`,
	},
	spec.WaitTool: {
		"Park the run in this state until something arrives from outside (a reply, an event, a timer). Say what you wait for in `reason`; `until` (a duration such as 30m, 2h, 1d, or an ISO-8601 instant) schedules a wake. Stop working after calling it.",
		`{"type":"object","properties":{"reason":{"type":"string","description":"What the run is waiting for."},"until":{"type":"string","description":"When to wake if nothing arrives first: 30m, 2h, 1d, or an ISO-8601 instant."}},"required":["reason"]}`,
	},
	writeTodosTool: {
		"Keep a short plan for this run: replace the whole todo list. Use it for work of several steps; mark one item in_progress at a time and completed when done. Call it at most once per answer.",
		`{"type":"object","properties":{"todos":{"type":"array","items":{"type":"object","properties":{"content":{"type":"string"},"status":{"type":"string","enum":["pending","in_progress","completed"]}},"required":["content","status"]}}},"required":["todos"]}`,
	},
	spec.GetHistoryTool: {
		"Read the session's whole transcript and audit trail as JSON text {messages, trail}, as it stood when this state was entered.",
		`{"type":"object","properties":{}}`,
	},
}

// jsonString is s as a JSON string literal.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
