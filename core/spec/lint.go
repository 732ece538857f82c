package spec

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// mutatingBuiltIns are the built-in file tools that write.
var mutatingBuiltIns = []string{"write_file", "edit_file", "copy_file", "move_file", "remove_file"}

// Lint is the lint phase of ValidateSpec (spec 01 §8.1, §8.3: phase L): rules that do not
// block loading but fail `archmax validate` (errors) or advise (warnings), ending with the
// state-graph analysis (P-17 and states with no path to a terminal). Each diagnostic
// carries its §8.3 code and is located at the state (or the root) it concerns. sp must be
// a loaded spec; file names it in the diagnostics.
func Lint(sp *MachineSpec, file string) []Diagnostic {
	var out []Diagnostic
	// at records a finding at field's own line when the document declares it, else at the
	// state it concerns (or nowhere, for the root).
	at := func(sev, code, field string, st *State, msg string) {
		d := Diagnostic{Severity: sev, Code: code, Field: field, File: file, Message: msg}
		d.Line, d.Column = sp.Position(field, st)
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
				out[len(out)-1].Hint = keyHint(k, triggerKeys)
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
			if strings.TrimSpace(st.Instructions) == "" { // the spec's wording (01 Appendix A)
				at(sevError, "human.instructions-missing", f+".instructions", st,
					fmt.Sprintf("Human state '%s' must declare 'instructions' describing the decision to present", st.Slug))
			}
			if len(st.Transitions) == 0 { // the spec's wording (01 §3.5)
				at(sevError, "human.transition-required", f+".transitions", st,
					fmt.Sprintf("Human state '%s' must declare at least one outgoing transition the human can route to", st.Slug))
			}
			typed := map[string]int{}
			for i, t := range st.Transitions {
				if t.To == st.Slug {
					at(sevError, "human.self-transition", fmt.Sprintf("%s.transitions.%d.to", f, i), st,
						fmt.Sprintf("human state '%s' transitions to itself: a decision routes the session out of the state, so this edge would end the run; point it at the state that does the further work", st.Slug))
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
			if automated(st) && slices.Contains(AutomatedExcludedTools, e.Tool) {
				continue // V-12 below says more
			}
			if slices.Contains(HarnessControlTools, e.Tool) && e.Tool != EvalTool && e.Tool != RunTool {
				at(sevWarning, "tools.control-granted", f+".tools.allow", st,
					fmt.Sprintf("state '%s' grants the control tool '%s': controls are offered by the state's kind, a grant changes nothing", st.Slug, e.Tool))
			}
		}
		lintAutomated(sp, st, at)
		lintStateExtras(st, at)
	}
	lintGovernance(sp, at)
	lintGuardGlobs(sp, at)
	return append(out, graphLint(sp, file)...)
}

// atFunc records one lint finding (see Lint).
type atFunc func(sev, code, field string, st *State, msg string)

func automated(st *State) bool { return st.Type == typeCode || st.Type == typeGrader }

// lintAutomated holds the seeds' rules for code and grader states (spec 01 §8.3 V-08…V-12):
// keys an automated state cannot use, a grader's instructions and transitions, and the
// tools an automated surface never offers.
func lintAutomated(sp *MachineSpec, st *State, at atFunc) {
	f := "states." + st.Slug
	declared := func(key string) bool { _, _, ok := sp.Locate(f + "." + key); return ok }
	switch st.Type {
	case typeCode: // V-08
		for _, key := range []string{"instructions", "model", "budget", "evidence", "approvers"} {
			if declared(key) || key == "instructions" && st.Instructions != "" || key == "model" && st.Model != "" ||
				key == "budget" && st.Budget != (Budget{}) || key == "evidence" && st.Evidence != nil || key == "approvers" && st.Approvers != nil {
				at(sevError, "code.key-refused", f+"."+key, st, fmt.Sprintf(
					"code state '%s' declares '%s', which a code state does not use: its script decides, with no model, budget or reviewer", st.Slug, key))
			}
		}
	case typeGrader:
		if strings.TrimSpace(st.Instructions) == "" { // V-09
			at(sevError, "grader.instructions-required", f+".instructions", st, fmt.Sprintf(
				"grader state '%s' has no instructions: its judge would be told nothing about what to judge", st.Slug))
		}
		if len(st.Transitions) == 0 { // V-10
			at(sevError, "grader.transition-required", f+".transitions", st, fmt.Sprintf(
				"grader state '%s' declares no transitions: its judge has nowhere to send the session", st.Slug))
		}
		for _, key := range []string{"evidence", "approvers", "budget.maxParks"} { // V-11
			if declared(key) || key == "evidence" && st.Evidence != nil || key == "approvers" && st.Approvers != nil || key == "budget.maxParks" && st.Budget.MaxParks != 0 {
				at(sevError, "grader.key-refused", f+"."+key, st, fmt.Sprintf(
					"grader state '%s' declares '%s', which a grader does not use: it never parks for a person", st.Slug, key))
			}
		}
	default:
		return
	}
	for i, e := range st.Tools.Allow { // V-12 (the same names in allow_always are silently left out, V-13)
		if slices.Contains(AutomatedExcludedTools, e.Tool) {
			at(sevError, "automated.tool-not-offered", fmt.Sprintf("%s.tools.allow.%d", f, i), st, fmt.Sprintf(
				"%s state '%s' grants '%s', which is never offered to an automated state; remove the grant", st.Type, st.Slug, e.Tool))
		}
	}
}

// lintStateExtras holds the proposed per-state warnings of spec 01 §8.3 P-20 not covered
// elsewhere: a code or grader state transitioning to itself, `requires` on a human state,
// and a trigger's `session:` path whose root variable the same trigger does not require.
func lintStateExtras(st *State, at atFunc) {
	f := "states." + st.Slug
	if automated(st) {
		for i, t := range st.Transitions {
			if t.To == st.Slug {
				at(sevWarning, "state.self-transition", fmt.Sprintf("%s.transitions.%d.to", f, i), st, fmt.Sprintf(
					"%s state '%s' transitions to itself: it would run again on the same session with nothing new to decide", st.Type, st.Slug))
			}
		}
	}
	if st.Type == typeHuman && len(st.Requires) > 0 {
		at(sevWarning, "human.requires", f+".requires", st, fmt.Sprintf(
			"human state '%s' declares 'requires': a person's decision is not checked against variables; move it to the state that routes here", st.Slug))
	}
	for _, t := range st.Triggers {
		if t.Session == "" {
			continue
		}
		root, _, _ := strings.Cut(t.Session, ".")
		if root == TriggerVariable || slices.ContainsFunc(t.Requires, func(e SignatureEntry) bool { return e.Name == root }) {
			continue
		}
		at(sevWarning, "trigger.session-unrequired", f+".triggers."+t.ID+".session", st, fmt.Sprintf(
			"trigger '%s' derives the session id from '%s', but its 'requires' does not declare '%s': a start without it gets a minted id", t.ID, t.Session, root))
	}
}

// lintGovernance holds the inert-entry rules of spec 01 §8.3 R-18 that need only the
// document (phase L): a state entry the root already grants, `allow: []` beside a
// non-empty `allow_always`, a `forbid_always` name some list grants, a state allowing and
// forbidding one skill or mount, and a state `forbid` naming a skill nothing enables.
func lintGovernance(sp *MachineSpec, at atFunc) {
	const code = "governance.inert-entry"
	bareTool := func(list []ToolEntry, name string) bool {
		return slices.ContainsFunc(list, func(e ToolEntry) bool { return !e.Guarded && e.Tool == name })
	}
	mountNames := func(list []MountGrant) []string {
		var out []string
		for _, g := range list {
			out = append(out, g.Mount)
		}
		return out
	}
	for _, st := range sp.States {
		f := "states." + st.Slug
		for i, e := range st.Tools.Allow {
			if !e.Guarded && bareTool(sp.Tools.Allow, e.Tool) {
				at(sevWarning, code, fmt.Sprintf("%s.tools.allow.%d", f, i), st, fmt.Sprintf(
					"state '%s' allows '%s', which 'tools.allow_always' already grants in every state", st.Slug, e.Tool))
			}
		}
		for i, sk := range st.Skills.Allow {
			if slices.Contains(sp.Skills.Allow, sk) {
				at(sevWarning, code, fmt.Sprintf("%s.skills.allow.%d", f, i), st, fmt.Sprintf(
					"state '%s' enables the skill '%s', which 'skills.allow_always' already enables in every state", st.Slug, sk))
			}
			if slices.Contains(st.Skills.Forbid, sk) {
				at(sevWarning, code, f+".skills", st, fmt.Sprintf(
					"state '%s' both enables and forbids the skill '%s': the denial wins, the grant does nothing", st.Slug, sk))
			}
		}
		for i, sk := range st.Skills.Forbid {
			if !slices.Contains(st.Skills.Allow, sk) && !slices.Contains(sp.Skills.Allow, sk) {
				at(sevWarning, code, fmt.Sprintf("%s.skills.forbid.%d", f, i), st, fmt.Sprintf(
					"state '%s' forbids the skill '%s', which nothing enables: the denial changes nothing", st.Slug, sk))
			}
		}
		for i, g := range st.Mounts.Allow {
			if slices.Contains(sp.Mounts.Allow, g) {
				at(sevWarning, code, fmt.Sprintf("%s.mounts.allow.%d", f, i), st, fmt.Sprintf(
					"state '%s' grants the mount '%s', which 'mounts.allow_always' already grants in every state", st.Slug, g.Mount))
			}
			if slices.Contains(st.Mounts.Forbid, g.Mount) {
				at(sevWarning, code, f+".mounts", st, fmt.Sprintf(
					"state '%s' both grants and forbids the mount '%s': the denial wins, the grant does nothing", st.Slug, g.Mount))
			}
		}
		if _, _, declared := sp.Locate(f + ".tools.allow"); declared && len(st.Tools.Allow) == 0 && len(sp.Tools.Allow) > 0 {
			at(sevWarning, code, f+".tools.allow", st, fmt.Sprintf(
				"state '%s' declares 'allow: []', which does not take away the 'tools.allow_always' grants: a state's list adds to them", st.Slug))
		}
	}
	granted := func(pick func(st *State) []string, always []string) func(string) bool {
		return func(name string) bool {
			return slices.Contains(always, name) || slices.ContainsFunc(sp.States, func(st *State) bool { return slices.Contains(pick(st), name) })
		}
	}
	toolNames := func(list []ToolEntry) []string {
		var out []string
		for _, e := range list {
			out = append(out, e.Tool)
		}
		return out
	}
	for i, e := range sp.Tools.Forbid {
		if !e.Guarded && e.Tool != ForbidAnyTool && granted(func(st *State) []string { return toolNames(st.Tools.Allow) }, toolNames(sp.Tools.Allow))(e.Tool) {
			at(sevWarning, code, fmt.Sprintf("tools.forbid_always.%d", i), nil, fmt.Sprintf(
				"'tools.forbid_always' denies '%s', which a tools list grants: the denial wins everywhere, the grant does nothing", e.Tool))
		}
	}
	for i, sk := range sp.Skills.Forbid {
		if granted(func(st *State) []string { return st.Skills.Allow }, sp.Skills.Allow)(sk) {
			at(sevWarning, code, fmt.Sprintf("skills.forbid_always.%d", i), nil, fmt.Sprintf(
				"'skills.forbid_always' denies the skill '%s', which a skills list enables: the denial wins everywhere, the grant does nothing", sk))
		}
	}
	for i, m := range sp.Mounts.Forbid {
		if granted(func(st *State) []string { return mountNames(st.Mounts.Allow) }, mountNames(sp.Mounts.Allow))(m) {
			at(sevWarning, code, fmt.Sprintf("mounts.forbid_always.%d", i), nil, fmt.Sprintf(
				"'mounts.forbid_always' denies the mount '%s', which a mounts list grants: the denial wins everywhere, the grant does nothing", m))
		}
	}
}
