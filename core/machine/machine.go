// Package machine compiles a parsed workflow spec into what the engine queries per state:
// the tool surface a state discloses (spec 01 §3.3.9, §7.3, §7.6, §7.7; 03 GOV-13, BR-01),
// the skills and governed mounts it reaches and may write (spec 01 §2.8, §2.9, §3.3.11,
// §3.3.12; 03 GOV-40, GOV-45…GOV-49), and what listings must hide. Pure: no I/O.
package machine

import (
	"slices"

	"github.com/archmax-ai/archmax/core/spec"
)

// Machine is a compiled workflow. Available is the set of tool names this runtime
// implements (built-ins, controls, host tools); a grant naming anything else offers nothing.
// Mounts is the host's mount table (nil = DefaultMounts) and Skills the skill registry (the
// bundle slugs served under skills/); the mount and skill readers answer against them.
type Machine struct {
	Spec      *spec.MachineSpec
	Available func(tool string) bool
	Mounts    []Mount
	Skills    []string
	// Essential are host tools disclosed in every state without a grant (essentialTools).
	Essential []string
}

// New compiles sp; available reports whether a tool name is implemented.
func New(sp *spec.MachineSpec, available func(string) bool) *Machine {
	return &Machine{Spec: sp, Available: available}
}

// agentControls and automatedControls are the controls each state kind is offered, in
// surface order (spec 01 §7.2, 03 §1.6).
var (
	agentControls     = []string{spec.AdvanceTool, spec.RaiseTool, spec.WaitTool, spec.ResetTool, spec.GetVariablesTool, spec.SetVariablesTool}
	automatedControls = []string{spec.AdvanceTool, spec.RaiseTool, spec.GetVariablesTool, spec.SetVariablesTool, spec.GetHistoryTool}
)

// Automated reports whether a state type is run without the session's model (code, grader).
func Automated(stateType string) bool { return stateType == "code" || stateType == "grader" }

// Surface returns the tool names state discloses, in order: the essential tools, then the
// granted tools (state allow, then allow_always), then the controls; minus every tool a
// bare forbid/forbid_always entry names ("*" removes all); never `task`; automated states
// lose write_todos, archmax_eval, archmax_run, archmax_wait, archmax_reset; terminal states
// lose archmax_advance. Nil for an unknown state.
func (m *Machine) Surface(state string) []string {
	st := m.Spec.State(state)
	if st == nil {
		return nil
	}
	automated := Automated(st.Type)
	var out []string
	add := func(name string) {
		if slices.Contains(out, name) || !m.Available(name) || slices.Contains(spec.UngrantableTools, name) {
			return
		}
		if automated && slices.Contains(spec.AutomatedExcludedTools, name) {
			return
		}
		if m.denied(st, name) {
			return
		}
		out = append(out, name)
	}
	for _, t := range spec.EssentialTools {
		add(t)
	}
	for _, t := range m.Essential {
		add(t)
	}
	for _, e := range st.Tools.Allow {
		if !spec.IsControlTool(e.Tool) {
			add(e.Tool)
		}
	}
	for _, e := range m.Spec.Tools.Allow {
		if !spec.IsControlTool(e.Tool) {
			add(e.Tool)
		}
	}
	controls := agentControls
	if automated {
		controls = automatedControls
	}
	for _, c := range controls {
		if c == spec.AdvanceTool && st.IsTerminal() {
			continue
		}
		add(c)
	}
	return out
}

// denied reports whether a bare forbid entry (workflow-wide or the state's) withholds name.
func (m *Machine) denied(st *spec.State, name string) bool {
	for _, list := range [][]spec.ToolEntry{m.Spec.Tools.Forbid, st.Tools.Forbid} {
		for _, e := range list {
			if !e.Guarded && (e.Tool == name || e.Tool == spec.ForbidAnyTool) {
				return true
			}
		}
	}
	return false
}

// Offers reports whether state discloses tool.
func (m *Machine) Offers(state, tool string) bool { return slices.Contains(m.Surface(state), tool) }
