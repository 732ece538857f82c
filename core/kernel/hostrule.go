package kernel

import (
	"fmt"
	"slices"

	"github.com/archmax-ai/archmax/core/spec"
)

// HostRule is a declarative consumer rule (GOV-04): a host file's policyRules entry
// (core/hostconfig). It applies to a call when every condition it gives holds — the tool
// (Tools, "*" = any), the workflow, the origin (an empty origin is a script's, G-5), the
// state, the governed paths (Paths) and the arguments (Args) — and then decides it: a block
// under ID with Reason (surfaced as a tool-blocked event), or, with Allow, an admission
// under ID that the state's own grants are not consulted for. Otherwise it abstains.
//
// The globs follow the kernel's own guards (DECISIONS K17-1…K17-3). A block rule's are a
// forbid entry's: Paths holds when any governed path matches a glob; an argument guard holds
// when any of its values matches — a declared path argument canonically, any other value
// widely ('*' crossing '/', dot segments resolved, case folded), and a value the guard cannot
// read (an object) always. An allow rule's are an allow entry's: Paths holds when the call
// has governed paths and every one matches; an argument guard when every value matches
// narrowly and none holds a '.' or '..' segment or a '\'. A `${{ }}` reference that does not
// resolve fires a block rule and never an allow rule. Conditions combine with AND.
type HostRule struct {
	ID        string
	Allow     bool
	Tools     []string
	Workflows []string
	Origins   []Origin
	States    []string
	Paths     []string
	Args      []spec.ArgGuard
	Reason    string
}

// Rule is the rule as the kernel runs it (Policy.Rules, session.Config.PolicyRules).
func (h HostRule) Rule() Rule {
	return func(a Action, api API) *Verdict {
		if !h.applies(a, api) {
			return nil
		}
		p := &Policy{Spec: api.Spec, Variables: api.Variables, ToolPaths: map[string][]spec.PathArg{}}
		for _, u := range a.Paths {
			p.ToolPaths[a.Tool] = append(p.ToolPaths[a.Tool], spec.PathArg{Arg: u.Arg, Access: u.Access})
		}
		if h.Allow {
			if !h.admits(p, a) {
				return nil
			}
			return &Verdict{Allow: true, RuleID: h.ID}
		}
		if !h.fires(p, a) {
			return nil
		}
		on := ""
		if fp := filePathOf(a); fp != "" {
			on = fmt.Sprintf(" on '%s'", fp)
		}
		return block(h.ID, reasonHostRule(a.Tool, on, h.ID, h.Reason))
	}
}

// applies checks the conditions that are not globs.
func (h HostRule) applies(a Action, api API) bool {
	if !slices.Contains(h.Tools, spec.ForbidAnyTool) && !slices.Contains(h.Tools, a.Tool) {
		return false
	}
	if len(h.Workflows) > 0 && !slices.Contains(h.Workflows, api.Workflow) {
		return false
	}
	origin := a.Origin
	if origin == "" {
		origin = OriginScript
	}
	if len(h.Origins) > 0 && !slices.Contains(h.Origins, origin) {
		return false
	}
	return len(h.States) == 0 || slices.Contains(h.States, a.State)
}

// fires reports whether a block rule's globs all hold (forbid semantics).
func (h HostRule) fires(p *Policy, a Action) bool {
	if len(h.Paths) > 0 && !slices.ContainsFunc(a.Paths, func(u PathUse) bool {
		ok, unres, _ := p.matchAny(h.Paths, u.Path)
		return ok || unres != nil
	}) {
		return false
	}
	for _, g := range h.Args {
		if !p.guardAny(spec.ToolEntry{Tool: a.Tool, Guarded: true, Args: []spec.ArgGuard{g}}, Action{Tool: a.Tool, Args: a.Args}) {
			return false
		}
	}
	return true
}

// admits reports whether an allow rule's globs all hold (allow-entry semantics).
func (h HostRule) admits(p *Policy, a Action) bool {
	if len(h.Paths) == 0 && len(h.Args) == 0 {
		return true
	}
	ok, _, _ := p.guardAll(spec.ToolEntry{Tool: a.Tool, Guarded: true, Paths: h.Paths, Args: h.Args}, a)
	return ok
}
