package spec

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// mutatingBuiltIns are the built-in file tools that write.
var mutatingBuiltIns = []string{"write_file", "edit_file", "copy_file", "move_file", "remove_file"}

// Lint is the lint phase of validateSpec (spec 01 §8.1, §8.3: phase L): rules that do not
// block loading but fail `archmax validate` (errors) or advise (warnings). Each diagnostic
// carries its §8.3 code and is located at the state (or the root) it concerns. sp must be
// a loaded spec; file names it in the diagnostics.
func Lint(sp *MachineSpec, file string) []Diagnostic {
	var out []Diagnostic
	at := func(sev, code, field string, st *State, msg string) {
		d := Diagnostic{Severity: sev, Code: code, Field: field, File: file, Message: msg}
		if st != nil {
			d.Line, d.Column = st.Line, st.Column
		}
		out = append(out, d)
	}
	if strings.TrimSpace(sp.Instructions) == "" {
		at(sevWarning, "spec.instructions-missing", "instructions", nil,
			"the workflow has no root 'instructions': the agent is told nothing about the workflow as a whole; say what it is for")
	}
	if sp.Disabled {
		at(sevWarning, "spec.disabled", "disabled", nil, "the workflow is disabled ('disabled: true'): it starts no new turns")
	}
	anyTransition := false
	for _, st := range sp.States {
		anyTransition = anyTransition || len(st.Transitions) > 0
	}
	for _, e := range sp.Tools.Forbid {
		if !e.Guarded && (e.Tool == AdvanceTool || e.Tool == ForbidAnyTool) && anyTransition {
			at(sevError, "tools.advance-forbidden", "tools.forbid_always", nil,
				"'tools.forbid_always' denies archmax_advance, but states declare transitions no agent could then take; remove the denial or the transitions")
		}
	}
	for _, e := range sp.Tools.Allow {
		if IsEssentialTool(e.Tool) {
			what := "redundant: essential tools are offered in every state"
			if e.Guarded {
				what = "not enforced: an essential tool is always offered, so its guard never narrows it"
			}
			at(sevWarning, "tools.essential-inert", "tools.allow_always", nil, fmt.Sprintf("'tools.allow_always' names the essential tool '%s': %s", e.Tool, what))
		}
	}
	// the names a requires declares (a trigger's or a state's): what guards may reference
	declared := map[string]bool{TriggerVariable: true, TitleVariable: true}
	for _, st := range sp.States {
		for _, r := range st.Requires {
			declared[r] = true
		}
		for _, t := range st.Triggers {
			for _, e := range t.Requires {
				declared[e.Name] = true
			}
		}
	}
	undeclared := func(field string, st *State, entries []ToolEntry) {
		for _, e := range entries {
			var texts []string
			texts = append(texts, e.Paths...)
			for _, a := range e.Args {
				texts = append(texts, a.Globs...)
			}
			for _, text := range texts {
				refs, _ := ParseReferences(text)
				for _, ref := range refs {
					if !declared[ref.Name] {
						at(sevWarning, "reference.undeclared", field, st, fmt.Sprintf(
							"the guard of '%s' references '%s', which no trigger's or state's 'requires' declares: it may be unset when the call is judged, and the call is then refused", e.Tool, ref.Raw))
					}
				}
			}
		}
	}
	undeclared("tools.allow_always", nil, sp.Tools.Allow)
	undeclared("tools.forbid_always", nil, sp.Tools.Forbid)
	for _, st := range sp.States {
		f := "states." + st.Slug
		undeclared(f+".tools.allow", st, st.Tools.Allow)
		undeclared(f+".tools.forbid", st, st.Tools.Forbid)
		for _, t := range st.Triggers {
			for _, k := range slices.Sorted(maps.Keys(t.Extra)) {
				at(sevWarning, "trigger.unknown-key", f+".triggers."+t.ID+"."+k, st, fmt.Sprintf(
					"trigger '%s' declares the key '%s', which the runtime does not read (kept for the host)", t.ID, k))
			}
		}
		if st.Type == "human" && st.Budget != (Budget{}) { // P-10
			at(sevError, "human.key-refused", f+".budget", st, fmt.Sprintf(
				"human state '%s' declares a budget: a person's decision is not bounded by turns or time; remove it", st.Slug))
		}
		for _, e := range st.Tools.Allow {
			if !e.Guarded && slices.ContainsFunc(st.Tools.Forbid, func(x ToolEntry) bool { return !x.Guarded && x.Tool == e.Tool }) {
				at(sevWarning, "governance.inert-entry", f+".tools", st, fmt.Sprintf(
					"state '%s' both allows and forbids '%s': the denial wins, the grant does nothing", st.Slug, e.Tool))
			}
			if e.Guarded && len(e.Args) == 0 && len(e.Paths) > 0 && slices.Contains(mutatingBuiltIns, e.Tool) &&
				!slices.ContainsFunc(e.Paths, func(p string) bool { return !strings.HasPrefix(p, "scratchpad/") }) {
				at(sevWarning, "tools.scratchpad-inert", f+".tools.allow", st, fmt.Sprintf(
					"state '%s' allows '%s' only on scratchpad/ paths, which every state may write anyway: the grant adds nothing", st.Slug, e.Tool))
			}
		}
		if st.Type == "human" {
			if strings.TrimSpace(st.Instructions) == "" {
				at(sevError, "human.instructions-missing", f+".instructions", st,
					fmt.Sprintf("human state '%s' has no instructions: the person deciding is told nothing about what to decide", st.Slug))
			}
			typed := map[string]int{}
			for _, t := range st.Transitions {
				if t.To == st.Slug {
					at(sevError, "human.self-transition", f+".transitions", st,
						fmt.Sprintf("human state '%s' transitions to itself: a decision routes the session out of the state", st.Slug))
				}
				if t.Type != "" && t.Type != "none" {
					typed[t.Type]++
				}
			}
			for typ, n := range typed {
				if n > 1 {
					at(sevError, "human.duplicate-type", f+".transitions", st,
						fmt.Sprintf("human state '%s' has %d transitions of type '%s': at most one transition per labelled type", st.Slug, n, typ))
				}
			}
		}
		if st.Type != "human" && len(st.Transitions) > 1 && strings.TrimSpace(st.Instructions) == "" && st.Type != "code" {
			at(sevWarning, "state.routing-unguided", f+".instructions", st,
				fmt.Sprintf("state '%s' has %d transitions and no instructions: nothing tells its agent which way to go", st.Slug, len(st.Transitions)))
		}
		if st.Model != "" && st.Model == sp.Settings.Model {
			at(sevWarning, "state.model-redundant", f+".model", st,
				fmt.Sprintf("state '%s' names the model 'settings.model' already names; remove it", st.Slug))
		}
		seen := map[string]bool{}
		for _, r := range st.Requires {
			if seen[r] {
				at(sevWarning, "state.requires-duplicate", f+".requires", st, fmt.Sprintf("state '%s' lists '%s' twice in 'requires'", st.Slug, r))
			}
			seen[r] = true
		}
		if (st.Type == "code" || st.Type == "grader") && st.OnError == st.Slug { // P-11
			at(sevError, "state.on-error-self", f+".on_error", st,
				fmt.Sprintf("state '%s' routes its own failures to itself: a failing %s state would fail again forever; name another state", st.Slug, st.Type))
		}
		if st.Type == "grader" && len(st.Triggers) > 0 { // P-20
			at(sevWarning, "grader.entry-state", f+".triggers", st,
				fmt.Sprintf("grader state '%s' is a trigger's entry state: it would judge a session with no work in it", st.Slug))
		}
		if strings.Contains(st.Instructions, "${{") { // P-18
			at(sevWarning, "instructions.reference-not-resolved", f+".instructions", st,
				fmt.Sprintf("state '%s''s instructions contain '${{': references are not resolved in instructions, the agent reads the text as written", st.Slug))
		}
		for _, e := range st.Tools.Allow { // P-20: a control tool in a grant is inert
			if slices.Contains(HarnessControlTools, e.Tool) && e.Tool != EvalTool && e.Tool != RunTool {
				at(sevWarning, "tools.control-granted", f+".tools.allow", st,
					fmt.Sprintf("state '%s' grants the control tool '%s': controls are offered by the state's kind, a grant changes nothing", st.Slug, e.Tool))
			}
		}
	}
	return out
}
