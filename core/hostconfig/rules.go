package hostconfig

import "github.com/archmax-ai/archmax/core/kernel"

// Rules returns the file's policy rules as the kernel's consumer rules, in file order
// (session.Config.PolicyRules): each a kernel.HostRule, whose doc says how its globs match.
func (c *Config) Rules() []kernel.Rule {
	if c == nil {
		return nil
	}
	out := make([]kernel.Rule, 0, len(c.PolicyRules))
	for _, r := range c.PolicyRules {
		out = append(out, r.HostRule().Rule())
	}
	return out
}

// HostRule is the rule's kernel form.
func (r PolicyRule) HostRule() kernel.HostRule {
	h := kernel.HostRule{ID: r.ID, Allow: r.Effect == EffectAllow, Tools: r.Tools, Workflows: r.Workflows,
		States: r.States, Paths: r.Paths, Args: r.Args, Reason: r.Reason}
	for _, o := range r.Origins {
		h.Origins = append(h.Origins, kernel.Origin(o))
	}
	return h
}
