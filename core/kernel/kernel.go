// Package kernel is the governance kernel (spec 03 §6): one pure, ordered rule pipeline
// that allows or refuses every tool call — the model's, an agent script's, a code state's,
// a grader's — against the state the session is in, and the transition check of
// archmax_advance (CS-35). The first verdict wins; when every rule abstains the call is
// allowed (rule "allow"). No I/O.
package kernel

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/archmax-ai/archmax/core/machine"
	"github.com/archmax-ai/archmax/core/spec"
)

// Origin names who made a call (GOV-02). Every origin is governed alike; only the agent's
// own calls skip zone.governance-plane (GOV-21), the authoring plane having no route in its
// workspace. The zero value is treated as a script origin (fail closed).
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
	RuleMountReadOnly      = "mount.read-only"
	RuleMountForbidden     = "mount.forbidden"
	RuleMountNotAllowed    = "mount.not-allowed"
	RulePathArgument       = "tool.path-argument"
	RuleForbidden          = "tool.forbidden"
	RuleForbiddenHere      = "tool.forbidden-here"
	RuleScratchpad         = "tool.scratchpad"
	RuleOffloadRead        = "tool.offload-read"
	RuleAllowed            = "tool.allowed"
	RuleAllow              = "allow"
	RuleNotAllowed         = "tool.not-allowed"
	RuleImpliedRead        = "tool.implied-read" // K17-6: copy/move's source, edit's file
	RuleUnresolvedVariable = "tool.unresolved-variable"
	RuleTransitionRequires = "transition.requires"
	RuleTransitionNoEdge   = "transition.no-edge"
)

// Mount is one entry of the host's mount table (see machine.Mount).
type Mount = machine.Mount

// Inherited is one ancestor workflow's workflow-wide denials, which bind every
// sub-workflow it delegates to, directly or further down (GOV-36): its
// tools.forbid_always entries, skills.forbid_always slugs and mounts.forbid_always names.
// A refusal it causes names Workflow.
type Inherited struct {
	Workflow string
	Tools    []spec.ToolEntry
	Skills   []string
	Mounts   []string
}

// Rule is a consumer policy rule (GOV-04, policyRules): a pure function returning a verdict,
// or nil to abstain. It sees every call's Origin. Consumer rules run after the safety rules
// and the declared denials and before the always-open areas and the per-state defaults, so
// a block refuses the call and an allow admits it without the state's grants being
// consulted; neither can override a safety rule or a declared denial.
type Rule func(Action, API) *Verdict

// API is what a consumer Rule may consult (GOV-04). It shares the Policy's values: a rule
// must treat every field as read-only.
type API struct {
	Spec *spec.MachineSpec
	// Workflow is the slug of the workflow the call runs in ("" when the host did not say).
	Workflow      string
	Variables     map[string]any
	MountPrefixes []Mount  // the host's mount table
	Skills        []string // the skill registry
}

// Policy is what the kernel decides against: the workflow, the resolved skill registry and
// mount table, the session's variables (for ${{ }} guard references), the tools each state
// discloses, the ancestors' denials and the consumer's rules.
type Policy struct {
	Spec *spec.MachineSpec
	// Workflow is the workflow's slug, for consumer rules (API.Workflow).
	Workflow string
	// Skills is the skill registry: bundle slugs served under skills/.
	Skills []string
	// Mounts is the host's mount table; nil means machine.DefaultMounts.
	Mounts []Mount
	// Variables are the session's variable values, read by guard references at every call.
	Variables map[string]any
	// Surface returns the tool names a state discloses (for the not-allowed reason).
	Surface func(state string) []string
	// Inherited holds the ancestors' workflow-wide denials, root first (GOV-36); empty for a
	// root session.
	Inherited []Inherited
	// Rules are the consumer's policy rules, in the order given (GOV-04).
	Rules []Rule
	// ToolPaths are the host tools' declared path arguments (GOV-50); built-in tools use
	// spec.BuiltInToolPaths.
	ToolPaths map[string][]spec.PathArg
	// Essential names host tools that are always on (the host's essentialTools, GOV-13).
	Essential map[string]bool
}

// pathArgs returns a tool's declared path arguments: the built-in table, else the host's.
func (p *Policy) pathArgs(tool string) []spec.PathArg {
	if pa, ok := spec.BuiltInToolPaths[tool]; ok {
		return pa
	}
	return p.ToolPaths[tool]
}

// essential reports whether a tool is always on: a built-in essential tool or a host one.
func (p *Policy) essential(tool string) bool {
	return spec.IsEssentialTool(tool) || p.Essential[tool]
}

// PathUses derives a call's governed path uses from the tool's declared path arguments
// (built-in or host, GOV-50/52); see the package-level PathUses.
func (p *Policy) PathUses(tool string, args map[string]any) ([]PathUse, string) {
	return pathUses(p.pathArgs(tool), args)
}

// machine is the reader view over the policy's spec, mount table and skill registry.
func (p *Policy) machine() *machine.Machine {
	return &machine.Machine{Spec: p.Spec, Mounts: p.Mounts, Skills: p.Skills}
}

// Decide runs the pipeline of GOV-10 over a and returns the first verdict: the safety rules
// (tool.path-argument first, then GOV-20…GOV-24, the skill rule, the mount rule — each of
// the last two led by the inherited denials of its kind), the declared tool denials
// (inherited, forbid_always, the state's forbid), the consumer rules, the always-open areas
// and the per-state defaults.
//
// A call allowed by the pipeline that exposes a file's contents without being a read_file —
// copy_file and move_file (the source's contents at the destination), edit_file (whether
// old_string occurs) — is also held to a read_file of that file by the same caller in the
// same state: refused when that read would be (RuleImpliedRead), so no denial or narrowed
// grant of read_file is passed by copying, moving or probing the file (K17-6).
func Decide(p *Policy, a Action) Verdict {
	v := pipeline(p, a)
	if !v.Allow {
		return v
	}
	arg := impliedReadArg(a.Tool)
	if arg == "" {
		return v
	}
	for _, u := range a.Paths {
		if u.Arg != arg {
			continue
		}
		read := Action{Tool: "read_file", Args: map[string]any{"file_path": u.Raw}, State: a.State, Origin: a.Origin,
			Paths: []PathUse{{Arg: "file_path", Path: u.Path, Access: "read", Raw: u.Raw}}}
		if rv := pipeline(p, read); !rv.Allow {
			return Verdict{RuleID: RuleImpliedRead, Reason: reasonImpliedRead(a.Tool, u.Raw, rv.Reason), Terminal: rv.Terminal, Warn: rv.Warn}
		}
	}
	return v
}

// impliedReadArg is the path argument whose file's contents a tool exposes without being a
// read_file ("" for none).
func impliedReadArg(tool string) string {
	switch tool {
	case spec.CopyFileTool, spec.MoveFileTool:
		return "source"
	case "edit_file":
		return "file_path"
	}
	return ""
}

func pipeline(p *Policy, a Action) Verdict {
	st := p.Spec.State(a.State)
	for _, rule := range []func(*Policy, *spec.State, Action) *Verdict{
		rulePathArgument, ruleGovernancePlane, ruleSkillOnly, ruleReplyOnly, ruleEval, ruleUngrantable,
		ruleReadOnly, ruleRuntimeInternal, ruleRuntimeManaged, ruleSkills, ruleMounts,
		ruleDeclaredDenials, ruleConsumers, ruleAlwaysOpen, rulePerStateDefaults,
	} {
		if v := rule(p, st, a); v != nil {
			return *v
		}
	}
	return Verdict{Allow: true, RuleID: RuleAllow}
}

// HiddenByGovernance reports whether a canonical path must be left out of an ls, glob or
// grep result handed to state's model or scripts (GOV-41, GOV-48, BR-31): what
// machine.HiddenByGovernance hides, plus bundles and mounts an ancestor denies (GOV-36).
func (p *Policy) HiddenByGovernance(state, path string) bool {
	m := p.machine()
	if m.HiddenByGovernance(state, path) {
		return true
	}
	slug, inSkill := m.SkillOf(path)
	mt, inMount := machine.MountOf(m.MountTable(), path)
	for _, in := range p.Inherited {
		if (inSkill && slices.Contains(in.Skills, slug)) || (inMount && slices.Contains(in.Mounts, mt.Name)) {
			return true
		}
	}
	return false
}

func block(rule, reason string) *Verdict {
	return &Verdict{RuleID: rule, Reason: reason, Warn: true}
}

// GOV-25: a declared path argument must be a string (or a list of strings).
func rulePathArgument(p *Policy, _ *spec.State, a Action) *Verdict {
	for _, pa := range p.pathArgs(a.Tool) {
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

// GOV-21: scripts never reach the authoring plane (the agent's own calls find nothing there);
// no caller reaches the host file's name at the workspace root (IsHostFile), which no route
// serves either but which the session's own folder would otherwise take.
func ruleGovernancePlane(_ *Policy, _ *spec.State, a Action) *Verdict {
	for _, u := range a.Paths {
		if IsHostFile(firstSegment(u.Path)) {
			return block(RuleGovernancePlane, reasonHostFile(a.Tool, u.Path))
		}
	}
	if a.Origin == OriginAgent {
		return nil
	}
	for _, u := range a.Paths {
		if IsAuthoringPlane(firstSegment(u.Path)) {
			return block(RuleGovernancePlane, reasonGovernancePlane(a.Tool, u.Path))
		}
	}
	return nil
}

// GOV-22: archmax_run executes only scripts inside a resolved skill bundle.
func ruleSkillOnly(p *Policy, _ *spec.State, a Action) *Verdict {
	if a.Tool != spec.RunTool {
		return nil
	}
	m := p.machine()
	for _, u := range a.Paths {
		if u.Access != "execute" {
			continue
		}
		if _, inBundle := m.SkillOf(u.Path); !inBundle {
			return block(RuleSkillOnly, reasonSkillOnly(u.Path))
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

// GOV-23, GOV-47: writes and removals under a mount the host serves read-only.
func ruleReadOnly(p *Policy, _ *spec.State, a Action) *Verdict {
	table := p.machine().MountTable()
	for _, u := range a.Paths {
		if !isWrite(u.Access) {
			continue
		}
		if mt, ok := machine.MountOf(table, u.Path); ok && mt.ReadOnly {
			return block(RuleReadOnly, reasonReadOnly(a.Tool, u.Path, mt.Name))
		}
	}
	return nil
}

// GOV-24: runtime-internal areas admit no call at all.
func ruleRuntimeInternal(_ *Policy, _ *spec.State, a Action) *Verdict {
	for _, u := range a.Paths {
		if IsInternalArea(firstSegment(u.Path)) {
			return block(RuleRuntimeInternal, reasonRuntimeInternal(a.Tool, u.Path))
		}
	}
	return nil
}

// GOV-23a: writes into the offload areas.
func ruleRuntimeManaged(_ *Policy, _ *spec.State, a Action) *Verdict {
	for _, u := range a.Paths {
		if isWrite(u.Access) && IsOffloadArea(firstSegment(u.Path)) {
			return block(RuleRuntimeManaged, reasonRuntimeManaged(a.Tool, u.Path))
		}
	}
	return nil
}

// GOV-36, GOV-40/41: an ancestor's skills.forbid_always, then the workflow's own skill
// lists; skill bundles are closed by default.
func ruleSkills(p *Policy, st *spec.State, a Action) *Verdict {
	m := p.machine()
	for _, u := range a.Paths {
		slug, ok := m.SkillOf(u.Path)
		if !ok {
			continue
		}
		for _, in := range p.Inherited {
			if slices.Contains(in.Skills, slug) {
				return block(RuleSkillForbidden, reasonSkillInherited(a.Tool, u.Path, slug, in.Workflow))
			}
		}
		enabled := m.EnabledSkills(a.State)
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

// EnabledSkills resolves a state's enabled skills (spec 01 §2.8; machine.EnabledSkills):
// state allow then root allow_always (declaration order, deduplicated, slugs the registry
// lacks dropped) minus forbid_always and the state's forbid. A nil st reads the root only.
func EnabledSkills(sp *spec.MachineSpec, st *spec.State, registry []string) []string {
	state := ""
	if st != nil {
		state = st.Slug
	}
	return (&machine.Machine{Spec: sp, Skills: registry}).EnabledSkills(state)
}

// GOV-36, GOV-45…GOV-47: an ancestor's mounts.forbid_always, then the workflow's own mount
// lists: a forbidden mount, a governed mount the state does not enable, and a write under a
// mount the state's grants narrowed to reads.
func ruleMounts(p *Policy, _ *spec.State, a Action) *Verdict {
	m := p.machine()
	for _, u := range a.Paths {
		mt, ok := machine.MountOf(m.MountTable(), u.Path)
		if !ok {
			continue
		}
		for _, in := range p.Inherited {
			if slices.Contains(in.Mounts, mt.Name) {
				return block(RuleMountForbidden, reasonMountInherited(a.Tool, u.Path, mt.Name, in.Workflow))
			}
		}
		if denied, workflowWide := m.MountDenial(a.State, mt.Name); denied {
			by := fmt.Sprintf("state '%s' forbids", a.State)
			if workflowWide {
				by = "'mounts.forbid_always' denies in every state"
			}
			return block(RuleMountForbidden, reasonMountForbidden(a.Tool, u.Path, mt.Name, by, m.EnabledMounts(a.State)))
		}
		if !m.MountReachable(a.State, mt.Name) {
			return block(RuleMountNotAllowed, reasonMountNotAllowed(a.Tool, u.Path, mt.Name, a.State, m.EnabledMounts(a.State)))
		}
		if isWrite(u.Access) && !m.MountWritable(a.State, mt.Name) {
			return block(RuleMountReadOnly, reasonMountReadOnly(a.Tool, u.Path, mt.Name, a.State))
		}
	}
	return nil
}

// GOV-31/35/36: declared denials — the ancestors' tools.forbid_always (root first), the
// workflow's forbid_always, then the state's forbid.
func ruleDeclaredDenials(p *Policy, st *spec.State, a Action) *Verdict {
	for _, in := range p.Inherited {
		where := fmt.Sprintf("the workflow inherited from workflow '%s'", in.Workflow)
		if v := p.denial(in.Tools, a, RuleForbidden, where, "tools.forbid_always"); v != nil {
			return v
		}
	}
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

// GOV-04: the consumer's rules, in order.
func ruleConsumers(p *Policy, _ *spec.State, a Action) *Verdict {
	api := API{Spec: p.Spec, Workflow: p.Workflow, Variables: p.Variables, MountPrefixes: p.machine().MountTable(), Skills: p.Skills}
	for _, r := range p.Rules {
		if v := r(a, api); v != nil {
			return v
		}
	}
	return nil
}

// GOV-55/51: the scratchpad is open to the essential tools; the offload areas to reads.
func ruleAlwaysOpen(p *Policy, _ *spec.State, a Action) *Verdict {
	if !p.essential(a.Tool) || len(a.Paths) == 0 {
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
	case st != nil && (st.Type == "code" || st.Type == "grader") && slices.Contains(spec.AutomatedExcludedTools, a.Tool):
		// never offered to automated states, even when granted (01 §7.6, 03 CS-04, GR-04)
	case len(own) > 0:
		if tryEntries(own) {
			return &Verdict{Allow: true, RuleID: RuleAllowed}
		}
	case p.essential(a.Tool) || isStateControl(st, a.Tool):
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
		path := p.isPathArg(a.Tool, g.Name)
		vals, ok := argValues(a.Args, g.Name, path)
		if !ok {
			return false, nil, "" // absent, empty or non-scalar: nothing to match (GOV-30)
		}
		for _, v := range vals {
			if !path && !plainValue(v) {
				return false, nil, "" // a value with dot segments or '\' is never admitted (K17-2)
			}
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
		path := p.isPathArg(a.Tool, g.Name)
		vals, ok := argValues(a.Args, g.Name, path)
		if !ok {
			if _, present := argValue(a.Args, g.Name); present {
				return true // a guarded argument the guard cannot read fails closed
			}
			continue
		}
		for _, v := range vals {
			match := p.matchAny
			if !path {
				match = p.matchAnyWide
			}
			if ok, unres, _ := match(g.Globs, v); ok || unres != nil {
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

// argValues reads a guarded argument as strings: a scalar, or a non-empty list of scalars —
// canonicalised when the argument is one of the tool's declared path arguments (GOV-50),
// else as the caller wrote it (what the tool's handler receives; K17-1). ok is false when
// the argument is absent, null, an object, an empty list or a list holding anything but
// scalars — a value a guard cannot match.
func argValues(args map[string]any, name string, path bool) ([]string, bool) {
	v, present := argValue(args, name)
	if !present {
		return nil, false
	}
	read := func(s string) string { return s }
	if path {
		read = canonicalOrRaw
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
			out = append(out, read(s))
		}
		return out, true
	}
	s, ok := spec.ScalarString(v)
	if !ok {
		return nil, false
	}
	return []string{read(s)}, true
}

func canonicalOrRaw(s string) string {
	if c, err := CanonicalPath(s); err == nil {
		return c
	}
	return s
}

// isPathArg reports whether name is one of tool's declared path arguments (built-in or
// host, GOV-50): those are matched canonically, every other argument on its raw text.
func (p *Policy) isPathArg(tool, name string) bool {
	return slices.ContainsFunc(p.pathArgs(tool), func(pa spec.PathArg) bool { return pa.Arg == name })
}

func filePathOf(a Action) string {
	for _, k := range []string{"file_path", "path", "source"} {
		if s, ok := a.Args[k].(string); ok && s != "" {
			return strings.TrimLeft(s, "/")
		}
	}
	return ""
}
