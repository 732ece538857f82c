package validate

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/store"
)

// delegation walks the delegation graph from the workflow's reachable states'
// archmax_workflow_* grants, transitively (spec 01 §7.5, §8.3 R-22, V-25): a non-slug target,
// a target already in the chain (the delegation would never terminate), a target whose
// workflow.yaml is missing or unusable, one with no manual trigger, and a chain deeper than
// the dispatcher's limit are errors; a disabled target is a warning (the tool stays bound,
// the call is refused at run time). Each is located at the granting state of the validated
// workflow.
func (v *run) delegation() error {
	file, slug, sp := v.file, v.slug, v.sp
	var readErr error
	var out []spec.Diagnostic
	loaded := map[string]*spec.MachineSpec{slug: sp}
	failed := map[string]string{}
	load := func(wf string) (*spec.MachineSpec, string) {
		if s, ok := loaded[wf]; ok {
			return s, ""
		}
		if why, ok := failed[wf]; ok {
			return nil, why
		}
		f := "workflows/" + wf + "/workflow.yaml"
		src, err := v.files.Read(v.ctx, f)
		if err != nil {
			if !errors.Is(err, store.ErrNotFound) && readErr == nil {
				readErr = err
			}
			failed[wf] = fmt.Sprintf("there is no %s", f)
			return nil, failed[wf]
		}
		s, err := spec.Load(wf, f, src)
		if err == nil {
			err = spec.CheckRuntimeContract(wf, s)
		}
		if err != nil {
			failed[wf] = err.Error()
			return nil, failed[wf]
		}
		loaded[wf] = s
		return s, ""
	}
	seen := map[string]bool{}
	type grant struct {
		st    *spec.State // the state it is granted in (for allow_always: the first reachable one)
		entry spec.ToolEntry
		field string // the grant's own field in cur
	}
	// walk follows cur's grants; at and atField are the validated workflow's granting state and
	// grant a transitive finding is reported at (nil, "" while cur is that workflow itself).
	var walk func(at *spec.State, atField string, cur *spec.MachineSpec, chain []string)
	walk = func(at *spec.State, atField string, cur *spec.MachineSpec, chain []string) {
		reachable := spec.Reachable(cur)
		var grants []grant // each reachable state's own grants, then allow_always once
		var first *spec.State
		for _, st := range cur.States {
			if !reachable[st.Slug] {
				continue
			}
			if first == nil {
				first = st
			}
			for i, e := range st.Tools.Allow {
				grants = append(grants, grant{st, e, fmt.Sprintf("states.%s.tools.allow.%d", st.Slug, i)})
			}
		}
		if first != nil {
			for i, e := range cur.Tools.Allow {
				grants = append(grants, grant{first, e, fmt.Sprintf("tools.allow_always.%d", i)})
			}
		}
		{
			for _, g := range grants {
				e, st := g.entry, g.st
				target, ok := spec.WorkflowSlugFromToolName(e.Tool)
				if !ok {
					continue
				}
				where, field := at, atField
				if where == nil {
					where, field = st, g.field
				}
				via := "" // a finding in a sibling's grant names the chain that reaches it
				if len(chain) > 1 {
					via = "via " + strings.Join(chain, " → ") + ": "
				}
				add := func(sev, code, msg string) {
					if code == "delegation.cycle" || code == "delegation.too-deep" {
						via = "" // these name the whole chain already
					}
					key := code + "|" + field + "|" + via + msg
					if seen[key] {
						return
					}
					seen[key] = true
					d := spec.Diagnostic{Severity: sev, Code: code, Field: field, File: file, Message: via + msg}
					d.Line, d.Column = sp.Position(field, where)
					out = append(out, d)
				}
				path := strings.Join(append(append([]string(nil), chain...), target), " → ")
				switch {
				case !spec.IsDelegationSlug(target):
					add("error", "delegation.invalid-target", fmt.Sprintf("'%s' names '%s', which is not a workflow slug of at most %d characters (kebab-case)", e.Tool, target, spec.MaxDelegationSlug))
					continue
				case slices.Contains(chain, target):
					add("error", "delegation.cycle", fmt.Sprintf("delegating to '%s' would never terminate: it is already in the chain %s", target, path))
					continue
				case len(chain) > spec.DefaultSubWorkflowDepth:
					add("error", "delegation.too-deep", fmt.Sprintf("the chain %s is %d delegations deep, past the dispatcher's limit of %d", path, len(chain), spec.DefaultSubWorkflowDepth))
					continue
				}
				child, why := load(target)
				switch {
				case child == nil:
					add("error", "delegation.unknown-workflow", fmt.Sprintf("'%s' delegates to '%s', which cannot be loaded: %s", e.Tool, target, why))
					continue
				case child.Trigger(spec.ManualTrigger) == nil:
					add("error", "delegation.not-delegatable", fmt.Sprintf("'%s' delegates to '%s', which declares no 'manual' trigger to start in", e.Tool, target))
					continue
				case child.Disabled:
					add("warning", "delegation.disabled", fmt.Sprintf("'%s' delegates to '%s', which is disabled: its calls are refused at run time", e.Tool, target))
				}
				walk(where, field, child, append(append([]string(nil), chain...), target))
			}
		}
	}
	walk(nil, "", sp, []string{slug})
	v.diags = append(v.diags, out...)
	return readErr
}
