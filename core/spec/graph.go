package spec

import "fmt"

// Reachable reports the states some trigger's entry state leads to through transitions and
// on_error routes (the entry states included).
func Reachable(sp *MachineSpec) map[string]bool {
	reached := map[string]bool{}
	var walk func(string)
	walk = func(s string) {
		st := sp.State(s)
		if reached[s] || st == nil {
			return
		}
		reached[s] = true
		for _, t := range st.Transitions {
			walk(t.To)
		}
		if st.OnError != "" {
			walk(st.OnError)
		}
	}
	for _, st := range sp.States {
		if len(st.Triggers) > 0 {
			walk(st.Slug)
		}
	}
	return reached
}

// graphLint is the static analysis of the topology (spec 01 §8.3 P-17 and issue
// 10): a state no entry reaches through transitions and on_error routes (warning
// `state.unreachable`), and a state from which no terminal state can be reached — a run
// there can never complete, it only loops (warning `state.no-terminal-path`). Each is
// located at its state.
func graphLint(sp *MachineSpec, file string) []Diagnostic {
	next := map[string][]string{}
	hasStart := false
	for _, st := range sp.States {
		hasStart = hasStart || len(st.Triggers) > 0
		for _, t := range st.Transitions {
			next[st.Slug] = append(next[st.Slug], t.To)
		}
		if st.OnError != "" {
			next[st.Slug] = append(next[st.Slug], st.OnError)
		}
	}
	reached := Reachable(sp)
	// states that reach a terminal: the reverse closure from the terminals
	prev := map[string][]string{}
	for from, tos := range next {
		for _, to := range tos {
			prev[to] = append(prev[to], from)
		}
	}
	completes := map[string]bool{}
	var back func(string)
	back = func(s string) {
		if completes[s] {
			return
		}
		completes[s] = true
		for _, p := range prev[s] {
			back(p)
		}
	}
	for _, st := range sp.States {
		if st.IsTerminal() {
			back(st.Slug)
		}
	}
	var out []Diagnostic
	for _, st := range sp.States {
		field := "states." + st.Slug
		switch {
		case hasStart && !reached[st.Slug]:
			out = append(out, Diagnostic{Severity: "warning", Code: "state.unreachable", Field: field, File: file, Line: st.Line, Column: st.Column,
				Message: fmt.Sprintf("state '%s' is unreachable: no trigger's entry state leads to it through transitions or on_error; connect it or remove it", st.Slug)})
		case !completes[st.Slug]:
			out = append(out, Diagnostic{Severity: "warning", Code: "state.no-terminal-path", Field: field, File: file, Line: st.Line, Column: st.Column,
				Message: fmt.Sprintf("no terminal state can be reached from state '%s': a run there can only loop; give one of its states a way out", st.Slug)})
		}
	}
	return out
}
