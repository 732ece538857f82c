package kernel

import "slices"

// DecideTransition decides an archmax_advance from the state from to the state to, once
// its arguments and evidence have been checked (GOV-02, CS-35 steps 3–4): the requires gate
// of from (set reports whether a session variable holds a value) is checked first
// (transition.requires, naming every unset variable once, in declaration order), then the
// edge (transition.no-edge: to is not a declared transition target of from, or names no
// state). Otherwise the verdict allows with rule "allow". Reasons carry no prefix: the
// agent's tool message adds "archmax_advance rejected: ", a script gets them verbatim.
// Transition blocks are neither terminal nor warn-level.
func DecideTransition(p *Policy, from, to string, set func(name string) bool) Verdict {
	st := p.Spec.State(from)
	if st == nil {
		return Verdict{RuleID: RuleTransitionNoEdge, Reason: reasonNoEdge(from, to, nil)}
	}
	var unset []string
	for _, name := range st.Requires {
		if !set(name) && !slices.Contains(unset, name) {
			unset = append(unset, name)
		}
	}
	if len(unset) > 0 {
		return Verdict{RuleID: RuleTransitionRequires, Reason: reasonRequires(from, unset)}
	}
	if st.TransitionTo(to) == nil || p.Spec.State(to) == nil {
		targets := make([]string, 0, len(st.Transitions))
		for _, t := range st.Transitions {
			targets = append(targets, t.To)
		}
		return Verdict{RuleID: RuleTransitionNoEdge, Reason: reasonNoEdge(from, to, targets)}
	}
	return Verdict{Allow: true, RuleID: RuleAllow}
}
