// Package kernel is the governance kernel (spec 03 §6): one pure, ordered rule pipeline
// that allows or refuses every tool call — the model's, an agent script's, a code state's,
// a grader's — against the state the session is in. The first verdict wins; when every
// rule abstains the call is allowed (rule "allow"). No I/O.
package kernel

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/archmax-ai/archmax/core/spec"
)

// Origin names who made a call (GOV-02).
type Origin string

const (
	OriginAgent  Origin = "agent"  // the session's model
	OriginScript Origin = "script" // an agent script (archmax_eval / archmax_run)
	OriginCode   Origin = "code"   // a code-state script
	OriginGrader Origin = "grader" // a grader sub-agent
)

// PathUse is one governed path argument of a call: the argument name, the canonical
// workspace-relative path ("" = the root) and its access (spec 01 §7.3 PATH_ACCESSES).
type PathUse struct {
	Arg, Path, Access string
	Raw               string // the path as the caller wrote it
}

// Action is one tool call put to the kernel.
type Action struct {
	Tool      string
	Args      map[string]any
	State     string
	Origin    Origin
	ReplyOnly bool
	Paths     []PathUse // from PathUses
}

// Verdict is the kernel's answer. Reason is set on a block; Terminal marks a block retrying
// cannot fix (the state fails, GOV-33); Warn marks a block surfaced as a tool-blocked event.
type Verdict struct {
	Allow    bool
	RuleID   string
	Reason   string
	Terminal bool
	Warn     bool
}

// Rule ids (GOV-61).
const (
	RuleGovernancePlane    = "zone.governance-plane"
	RuleSkillOnly          = "script.skill-only"
	RuleReplyOnly          = "tool.reply-only"
	RuleEval               = "tool.eval"
	RuleUngrantable        = "tool.ungrantable"
	RuleReadOnly           = "zone.read-only"
	RuleRuntimeInternal    = "zone.runtime-internal"
	RuleRuntimeManaged     = "zone.runtime-managed"
	RuleSkillForbidden     = "skill.forbidden"
	RuleSkillNotAllowed    = "skill.not-allowed"
	RulePathArgument       = "tool.path-argument"
	RuleForbidden          = "tool.forbidden"
	RuleForbiddenHere      = "tool.forbidden-here"
	RuleScratchpad         = "tool.scratchpad"
	RuleOffloadRead        = "tool.offload-read"
	RuleAllowed            = "tool.allowed"
	RuleAllow              = "allow"
	RuleNotAllowed         = "tool.not-allowed"
	RuleUnresolvedVariable = "tool.unresolved-variable"
	RuleTransitionRequires = "transition.requires"
	RuleTransitionNoEdge   = "transition.no-edge"
)

// Policy is what the kernel decides against: the workflow, the resolved skill registry,
// the session's variables (for ${{ }} guard references) and the tools each state discloses.
type Policy struct {
	Spec *spec.MachineSpec
	// Skills is the skill registry: bundle slugs served under skills/.
	Skills []string
	// Variables are the session's variable values, read by guard references at every call.
	Variables map[string]any
	// Surface returns the tool names a state discloses (for the not-allowed reason).
	Surface func(state string) []string
}

// Decide runs the pipeline of GOV-10 over a and returns the first verdict.
func Decide(p *Policy, a Action) Verdict {
	st := p.Spec.State(a.State)
	for _, rule := range []func(*Policy, *spec.State, Action) *Verdict{
		rulePathArgument, ruleGovernancePlane, ruleReplyOnly, ruleEval, ruleUngrantable,
		ruleReadOnly, ruleRuntimeInternal, ruleRuntimeManaged, ruleSkills,
		ruleDeclaredDenials, ruleAlwaysOpen, rulePerStateDefaults,
	} {
		if v := rule(p, st, a); v != nil {
			return *v
		}
	}
	return Verdict{Allow: true, RuleID: RuleAllow}
}

func block(rule, reason string) *Verdict {
	return &Verdict{RuleID: rule, Reason: reason, Warn: true}
}

// GOV-25: a declared path argument must be a string (or a list of strings).
func rulePathArgument(p *Policy, _ *spec.State, a Action) *Verdict {
	for _, pa := range PathArgs(a.Tool) {
		v, ok := a.Args[pa.Arg]
		if !ok || v == nil {
			continue
		}
		switch x := v.(type) {
		case string:
		case []any:
			for _, e := range x {
				if _, ok := e.(string); !ok {
					return block(RulePathArgument, reasonPathArgument(a.Tool, pa.Arg))
				}
			}
		default:
			return block(RulePathArgument, reasonPathArgument(a.Tool, pa.Arg))
		}
	}
	return nil
}

// GOV-21: scripts never reach the authoring plane (the agent's own calls find nothing there).
func ruleGovernancePlane(_ *Policy, _ *spec.State, a Action) *Verdict {
	if a.Origin == OriginAgent {
		return nil
	}
	for _, u := range a.Paths {
		if firstSegment(u.Path) == AuthoringPrefix {
			return block(RuleGovernancePlane, reasonGovernancePlane(a.Tool, u.Path))
		}
	}
	return nil
}

// GOV-20b.
func ruleReplyOnly(_ *Policy, _ *spec.State, a Action) *Verdict {
	if !a.ReplyOnly {
		return nil
	}
	return block(RuleReplyOnly, reasonReplyOnly(a.Tool))
}

// GOV-20 (silent).
func ruleEval(_ *Policy, _ *spec.State, a Action) *Verdict {
	if a.Tool != "eval" {
		return nil
	}
	return &Verdict{RuleID: RuleEval, Reason: reasonEval}
}

// GOV-20a (silent).
func ruleUngrantable(_ *Policy, _ *spec.State, a Action) *Verdict {
	if !slices.Contains(spec.UngrantableTools, a.Tool) {
		return nil
	}
	return &Verdict{RuleID: RuleUngrantable, Reason: reasonUngrantable(a.Tool)}
}

func isWrite(access string) bool { return access == "write" || access == "remove" }

// GOV-23: writes to authored, read-only mounts.
func ruleReadOnly(_ *Policy, _ *spec.State, a Action) *Verdict {
	for _, u := range a.Paths {
		if !isWrite(u.Access) {
			continue
		}
		if m, ok := ReadOnlyMountOf(u.Path); ok {
			return block(RuleReadOnly, reasonReadOnly(a.Tool, u.Path, m))
		}
	}
	return nil
}

// GOV-24: runtime-internal areas admit no call at all.
func ruleRuntimeInternal(_ *Policy, _ *spec.State, a Action) *Verdict {
	for _, u := range a.Paths {
		if slices.Contains(InternalDirs, firstSegment(u.Path)) {
			return block(RuleRuntimeInternal, reasonRuntimeInternal(a.Tool, u.Path))
		}
	}
	return nil
}

// GOV-23a: writes into the offload areas.
func ruleRuntimeManaged(_ *Policy, _ *spec.State, a Action) *Verdict {
	for _, u := range a.Paths {
		if isWrite(u.Access) && slices.Contains(OffloadDirs, firstSegment(u.Path)) {
			return block(RuleRuntimeManaged, reasonRuntimeManaged(a.Tool, u.Path))
		}
	}
	return nil
}

// GOV-40/41: skill bundles are closed by default.
func ruleSkills(p *Policy, st *spec.State, a Action) *Verdict {
	for _, u := range a.Paths {
		slug, ok := p.skillOf(u.Path)
		if !ok {
			continue
		}
		enabled := EnabledSkills(p.Spec, st, p.Skills)
		if slices.Contains(p.Spec.Skills.Forbid, slug) {
			return block(RuleSkillForbidden, reasonSkillForbidden(a.Tool, u.Path, slug, "'skills.forbid_always' denies in every state", enabled))
		}
		if st != nil && slices.Contains(st.Skills.Forbid, slug) {
			return block(RuleSkillForbidden, reasonSkillForbidden(a.Tool, u.Path, slug, fmt.Sprintf("state '%s' forbids", a.State), enabled))
		}
		if !slices.Contains(enabled, slug) {
			return block(RuleSkillNotAllowed, reasonSkillNotAllowed(a.Tool, u.Path, slug, a.State, enabled))
		}
	}
	return nil
}

// skillOf classifies a path inside a resolved skill bundle (skills/<slug> or below).
func (p *Policy) skillOf(path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, SkillsMount+"/")
	if !ok {
		return "", false
	}
	slug, _, _ := strings.Cut(rest, "/")
	if slug == "" || !slices.Contains(p.Skills, slug) {
		return "", false
	}
	return slug, true
}

// EnabledSkills resolves a state's enabled skills (spec 01 §2.8): state allow then root
// allow_always (declaration order, deduplicated, slugs the registry lacks dropped) minus
// forbid_always and the state's forbid.
func EnabledSkills(sp *spec.MachineSpec, st *spec.State, registry []string) []string {
	var out []string
	var lists [][]string
	if st != nil {
		lists = append(lists, st.Skills.Allow)
	}
	lists = append(lists, sp.Skills.Allow)
	for _, l := range lists {
		for _, s := range l {
			if slices.Contains(out, s) || !slices.Contains(registry, s) || slices.Contains(sp.Skills.Forbid, s) {
				continue
			}
			if st != nil && slices.Contains(st.Skills.Forbid, s) {
				continue
			}
			out = append(out, s)
		}
	}
	return out
}

// GOV-31/35: declared denials — the workflow's forbid_always, then the state's forbid.
func ruleDeclaredDenials(p *Policy, st *spec.State, a Action) *Verdict {
	if v := p.denial(p.Spec.Tools.Forbid, a, RuleForbidden, "the workflow", "tools.forbid_always"); v != nil {
		return v
	}
	if st != nil {
		return p.denial(st.Tools.Forbid, a, RuleForbiddenHere, fmt.Sprintf("state '%s'", a.State), fmt.Sprintf("states.%s.tools.forbid", a.State))
	}
	return nil
}

func (p *Policy) denial(entries []spec.ToolEntry, a Action, rule, where, key string) *Verdict {
	for _, e := range entries {
		if e.Tool != a.Tool && e.Tool != spec.ForbidAnyTool {
			continue
		}
		if e.Guarded && !p.guardAny(e, a) {
			continue
		}
		on := ""
		if fp := filePathOf(a); fp != "" {
			on = fmt.Sprintf(" on '%s'", fp)
		}
		k := key
		if e.Guarded {
			k += ": " + guardText(e)
		}
		return block(rule, reasonForbidden(a.Tool, on, where, k))
	}
	return nil
}

func guardText(e spec.ToolEntry) string {
	var parts []string
	if len(e.Paths) > 0 {
		parts = append(parts, "paths="+strings.Join(e.Paths, "|"))
	}
	for _, g := range e.Args {
		parts = append(parts, g.Name+"="+strings.Join(g.Globs, "|"))
	}
	return strings.Join(parts, ", ")
}

// GOV-55/51: the scratchpad is open to the essential tools; the offload areas to reads.
func ruleAlwaysOpen(_ *Policy, _ *spec.State, a Action) *Verdict {
	if !spec.IsEssentialTool(a.Tool) || len(a.Paths) == 0 {
		return nil
	}
	allScratch, allOffloadRead := true, true
	for _, u := range a.Paths {
		seg := firstSegment(u.Path)
		if seg != ScratchpadDir {
			allScratch = false
		}
		if !slices.Contains(OffloadDirs, seg) || isWrite(u.Access) {
			allOffloadRead = false
		}
	}
	switch {
	case allScratch:
		return &Verdict{Allow: true, RuleID: RuleScratchpad}
	case allOffloadRead:
		return &Verdict{Allow: true, RuleID: RuleOffloadRead}
	}
	return nil
}

// GOV-10 step 5, GOV-13/14/30/33: the state's effective entries.
func rulePerStateDefaults(p *Policy, st *spec.State, a Action) *Verdict {
	var own []spec.ToolEntry
	if st != nil {
		for _, e := range st.Tools.Allow {
			if e.Tool == a.Tool {
				own = append(own, e)
			}
		}
	}
	var unresolved *spec.UnresolvedReference
	var unresolvedGlob string
	tryEntries := func(entries []spec.ToolEntry) bool {
		for _, e := range entries {
			if !e.Guarded {
				return true
			}
			ok, u, g := p.guardAll(e, a)
			if ok {
				return true
			}
			if u != nil && unresolved == nil {
				unresolved, unresolvedGlob = u, g
			}
		}
		return false
	}
	switch {
	case len(own) > 0:
		if tryEntries(own) {
			return &Verdict{Allow: true, RuleID: RuleAllowed}
		}
	case spec.IsEssentialTool(a.Tool) || isStateControl(st, a.Tool):
		return &Verdict{Allow: true, RuleID: RuleAllowed}
	default:
		var always []spec.ToolEntry
		for _, e := range p.Spec.Tools.Allow {
			if e.Tool == a.Tool {
				always = append(always, e)
			}
		}
		if tryEntries(always) {
			return &Verdict{Allow: true, RuleID: RuleAllowed}
		}
	}
	if unresolved != nil {
		return &Verdict{RuleID: RuleUnresolvedVariable, Terminal: true, Warn: true, Reason: reasonUnresolved(a.Tool, a.State, unresolvedGlob, unresolved.Detail)}
	}
	return block(RuleNotAllowed, p.notAllowedReason(st, a))
}

func isStateControl(st *spec.State, tool string) bool {
	if st == nil {
		return false
	}
	switch tool {
	case spec.AdvanceTool:
		return !st.IsTerminal()
	case spec.RaiseTool, spec.GetVariablesTool, spec.SetVariablesTool:
		return true
	case spec.ResetTool, spec.WaitTool:
		return st.Type == "agent" || st.Type == "human"
	case spec.GetHistoryTool:
		return st.Type == "code" || st.Type == "grader"
	}
	return false
}

// guardAll reports whether an allow entry's guards cover the call: every governed path
// (paths:) and every guarded argument (args:) must match one of its globs (GOV-30). An
// unresolvable ${{ }} reference makes the entry match nothing (GOV-33) and is returned.
func (p *Policy) guardAll(e spec.ToolEntry, a Action) (bool, *spec.UnresolvedReference, string) {
	if len(e.Paths) > 0 {
		if len(a.Paths) == 0 {
			return false, nil, ""
		}
		for _, u := range a.Paths {
			ok, unres, g := p.matchAny(e.Paths, u.Path)
			if unres != nil {
				return false, unres, g
			}
			if !ok {
				return false, nil, ""
			}
		}
	}
	for _, g := range e.Args {
		vals, ok := argValues(a.Args, g.Name)
		if !ok {
			return false, nil, "" // absent, empty or non-scalar: nothing to match (GOV-30)
		}
		for _, v := range vals {
			ok, unres, gl := p.matchAny(g.Globs, v)
			if unres != nil {
				return false, unres, gl
			}
			if !ok {
				return false, nil, ""
			}
		}
	}
	return true, nil, ""
}

// guardAny reports whether a forbid entry's guards fire: any governed path or guarded
// argument matching; an unresolvable reference matches (fails closed, GOV-33).
func (p *Policy) guardAny(e spec.ToolEntry, a Action) bool {
	for _, u := range a.Paths {
		if ok, unres, _ := p.matchAny(e.Paths, u.Path); ok || unres != nil {
			return true
		}
	}
	for _, g := range e.Args {
		vals, ok := argValues(a.Args, g.Name)
		if !ok {
			if _, present := argValue(a.Args, g.Name); present {
				return true // a guarded argument the guard cannot read fails closed
			}
			continue
		}
		for _, v := range vals {
			if ok, unres, _ := p.matchAny(g.Globs, v); ok || unres != nil {
				return true
			}
		}
	}
	return false
}

func (p *Policy) matchAny(globs []string, value string) (bool, *spec.UnresolvedReference, string) {
	for _, g := range globs {
		resolved := g
		if spec.HasVariableReference(g) {
			r, unres := spec.ResolveGlob(g, p.Variables)
			if unres != nil {
				return false, unres, g
			}
			resolved = r
		}
		if ok, err := doublestar.Match(resolved, value); err == nil && ok {
			return true, nil, ""
		}
	}
	return false, nil, ""
}

// argValue reads a guarded argument; dotted names read nested objects.
func argValue(args map[string]any, name string) (any, bool) {
	var cur any = args
	for _, seg := range strings.Split(name, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[seg]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// argValues reads a guarded argument as strings: a scalar, or a non-empty list of scalars.
// ok is false when the argument is absent, null, an object, an empty list or a list holding
// anything but scalars — a value a guard cannot match.
func argValues(args map[string]any, name string) ([]string, bool) {
	v, present := argValue(args, name)
	if !present {
		return nil, false
	}
	if list, isList := v.([]any); isList {
		if len(list) == 0 {
			return nil, false
		}
		out := make([]string, 0, len(list))
		for _, e := range list {
			s, ok := spec.ScalarString(e)
			if !ok {
				return nil, false
			}
			out = append(out, canonicalOrRaw(s))
		}
		return out, true
	}
	s, ok := spec.ScalarString(v)
	if !ok {
		return nil, false
	}
	return []string{canonicalOrRaw(s)}, true
}

func canonicalOrRaw(s string) string {
	if c, err := CanonicalPath(s); err == nil {
		return c
	}
	return s
}

func filePathOf(a Action) string {
	for _, k := range []string{"file_path", "path", "source"} {
		if s, ok := a.Args[k].(string); ok && s != "" {
			return strings.TrimLeft(s, "/")
		}
	}
	return ""
}
