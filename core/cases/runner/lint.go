package runner

import (
	"context"
	"fmt"
	"slices"

	"github.com/archmax-ai/archmax/core/cases"
	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/store"
	"github.com/archmax-ai/archmax/core/workspace"
)

// newCaseLinter gathers, once per suite, what caseLinter.lintCase checks a case's names
// against: the workflow's states and grants, the states of the workflows it delegates to,
// the runtime's tools and extraTools, the host's own.
func newCaseLinter(ctx context.Context, authored store.Files, workflow string, sp *spec.MachineSpec, extraTools []string) *caseLinter {
	// a decision may be a sub-workflow's, presented through this session (02 §3.7)
	childStates := map[string]bool{}
	var delegated []string
	for _, e := range sp.Tools.Allow {
		delegated = append(delegated, e.Tool)
	}
	for _, st := range sp.States {
		for _, e := range st.Tools.Allow {
			delegated = append(delegated, e.Tool)
		}
	}
	for _, t := range delegated {
		if slug, ok := spec.WorkflowSlugFromToolName(t); ok {
			file := "workflows/" + slug + "/workflow.yaml"
			if src, err := authored.Read(ctx, file); err == nil {
				if child, err := spec.Load(slug, file, src); err == nil {
					for _, cs := range child.States {
						childStates[cs.Slug] = true
					}
				}
			}
		}
	}
	known := map[string]bool{}
	for _, t := range workspace.Tools() {
		known[t] = true
	}
	for _, t := range append(append(slices.Clone(spec.HarnessControlTools), spec.EssentialTools...), extraTools...) {
		known[t] = true
	}
	known[spec.GetHistoryTool], known["write_todos"] = true, true
	for _, e := range sp.Tools.Allow {
		known[e.Tool] = true
	}
	for _, st := range sp.States {
		for _, e := range st.Tools.Allow {
			known[e.Tool] = true
		}
	}
	return &caseLinter{ctx: ctx, authored: authored, workflow: workflow, sp: sp, childStates: childStates, known: known, exists: map[string]bool{}}
}

// caseLinter holds what lintCase checks names against, built once per suite.
type caseLinter struct {
	ctx         context.Context
	authored    store.Files
	workflow    string
	sp          *spec.MachineSpec
	childStates map[string]bool // the states of the workflows this one delegates to
	known       map[string]bool // the tools a case may name
	exists      map[string]bool // workflows looked up so far
}

func (l *caseLinter) workflowExists(slug string) bool {
	ok, seen := l.exists[slug]
	if !seen {
		_, err := l.authored.Stat(l.ctx, "workflows/"+slug+"/workflow.yaml")
		ok = err == nil
		l.exists[slug] = ok
	}
	return ok
}

// lintCase names what a case refers to that its workflow does not declare — a state, a
// sub-workflow, a tool — so a typo in an assertion that can only pass vacuously
// (`trail: {to: aprove, count: 0}`, `notCalledTool: {name: wirte_file}`) or a mock that can
// never match is reported as a warning rather than passing in silence.
func (l *caseLinter) lintCase(doc *cases.CaseDocument) []string {
	var out []string
	sp, workflow, childStates, known, workflowExists := l.sp, l.workflow, l.childStates, l.known, l.workflowExists
	state := func(where, s string) {
		if s != "" && sp.State(s) == nil {
			out = append(out, fmt.Sprintf("%s names '%s', which is not a state of workflow '%s'", where, s, workflow))
		}
	}
	tool := func(where, name string) {
		if slug, ok := spec.WorkflowSlugFromToolName(name); ok {
			if !workflowExists(slug) {
				out = append(out, fmt.Sprintf("%s names '%s', but there is no workflow '%s'", where, name, slug))
			}
			return
		}
		if !known[name] {
			out = append(out, fmt.Sprintf("%s names '%s', which no state of workflow '%s' is granted and the runtime does not offer", where, name, workflow))
		}
	}
	for i, m := range doc.Mocks {
		tool(fmt.Sprintf("mocks[%d]", i), m.Name)
	}
	for i, s := range doc.Steps {
		at := fmt.Sprintf("steps[%d].%s", i, s.Kind())
		switch a := s.(type) {
		case cases.DecideStep:
			if !childStates[a.To] {
				state(at, a.To)
			}
		case cases.ParkedAssertion:
			state(at, a.State)
		case cases.ReachedStateAssertion:
			state(at, a.State)
		case cases.TrailAssertion:
			state(at, a.To)
		case cases.CalledToolAssertion:
			tool(at, a.Name)
		case cases.NotCalledToolAssertion:
			tool(at, a.Name)
		case cases.BlockedToolAssertion:
			tool(at, a.Name)
		case cases.RanWorkflowAssertion:
			if !workflowExists(a.Workflow) {
				out = append(out, fmt.Sprintf("%s names '%s', but there is no workflow '%s'", at, a.Workflow, a.Workflow))
			}
		}
	}
	return out
}
