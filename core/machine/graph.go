package machine

import (
	"fmt"
	"strings"

	"github.com/archmax-ai/archmax/core/spec"
)

// StartNode is the graph's start node (spec 01 §3.7).
const StartNode = "__start__"

// Graph is a workflow's derived topology (spec 01 §3.7, `graph.json`): the nodes (the start
// node, then every state in declaration order), the edges (one start edge per trigger, then
// per state its transitions followed by its on_error route), the entry state and the
// terminal states.
type Graph struct {
	Nodes  []string    `json:"nodes"`
	Edges  []GraphEdge `json:"edges"`
	Entry  string      `json:"entry"`
	Finals []string    `json:"finals"`
}

// GraphEdge is one edge: a transition (not conditional, labelled with its description), a
// start edge (conditional, labelled with the trigger id) or an on_error route (conditional,
// labelled "on_error").
type GraphEdge struct {
	Source      string `json:"source"`
	Target      string `json:"target"`
	Conditional bool   `json:"conditional"`
	Label       string `json:"label,omitempty"`
}

// GraphOf derives sp's topology from the spec itself (never from a compiled graph).
func GraphOf(sp *spec.MachineSpec) *Graph {
	g := &Graph{Nodes: []string{StartNode}, Edges: []GraphEdge{}, Entry: sp.Entry(), Finals: []string{}}
	for _, st := range sp.States {
		g.Nodes = append(g.Nodes, st.Slug)
		for _, t := range st.Triggers {
			g.Edges = append(g.Edges, GraphEdge{Source: StartNode, Target: st.Slug, Conditional: true, Label: t.ID})
		}
	}
	for _, st := range sp.States {
		for _, t := range st.Transitions {
			g.Edges = append(g.Edges, GraphEdge{Source: st.Slug, Target: t.To, Label: strings.TrimSpace(t.Description)})
		}
		if st.OnError != "" {
			g.Edges = append(g.Edges, GraphEdge{Source: st.Slug, Target: st.OnError, Conditional: true, Label: "on_error"})
		}
		if st.IsTerminal() {
			g.Finals = append(g.Finals, st.Slug)
		}
	}
	return g
}

// Mermaid renders the graph as a Mermaid flowchart (spec 01 §3.7): `graph TD;`, a node line
// per state (`id[slug]`, a human state `id{{slug}}`), an edge line per edge (`-->` plain,
// `-.->` conditional, `|label|` when labelled, `|` in a label written `/`), and a trailing
// newline. graph.mmd holds this text plus one more newline.
func (g *Graph) Mermaid(sp *spec.MachineSpec) string {
	var b strings.Builder
	b.WriteString("graph TD;\n")
	for _, st := range sp.States {
		if st.Type == "human" {
			fmt.Fprintf(&b, "  %s{{%s}};\n", mermaidID(st.Slug), st.Slug)
		} else {
			fmt.Fprintf(&b, "  %s[%s];\n", mermaidID(st.Slug), st.Slug)
		}
	}
	for _, e := range g.Edges {
		arrow := "-->"
		if e.Conditional {
			arrow = "-.->"
		}
		if e.Label != "" {
			arrow += "|" + strings.ReplaceAll(e.Label, "|", "/") + "|"
		}
		fmt.Fprintf(&b, "  %s %s %s;\n", mermaidID(e.Source), arrow, mermaidID(e.Target))
	}
	return b.String()
}

// mermaidID is a slug with every character outside [A-Za-z0-9_] replaced by `_`.
func mermaidID(s string) string {
	if s == StartNode {
		return s
	}
	return strings.Map(func(r rune) rune {
		if r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, s)
}

// Reachable reports the states some trigger's entry state leads to through transitions and
// on_error routes (the entry states included).
func Reachable(sp *spec.MachineSpec) map[string]bool {
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

// GraphDiagnostics is the static analysis of the topology (spec 01 §8.3 P-17 and issue
// 10): a state no entry reaches through transitions and on_error routes (warning
// `state.unreachable`), and a state from which no terminal state can be reached — a run
// there can never complete, it only loops (warning `state.no-terminal-path`). Each is
// located at its state.
func GraphDiagnostics(sp *spec.MachineSpec, file string) []spec.Diagnostic {
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
	var out []spec.Diagnostic
	for _, st := range sp.States {
		field := "states." + st.Slug
		switch {
		case hasStart && !reached[st.Slug]:
			out = append(out, spec.Diagnostic{Severity: "warning", Code: "state.unreachable", Field: field, File: file, Line: st.Line, Column: st.Column,
				Message: fmt.Sprintf("state '%s' is unreachable: no trigger's entry state leads to it through transitions or on_error; connect it or remove it", st.Slug)})
		case !completes[st.Slug]:
			out = append(out, spec.Diagnostic{Severity: "warning", Code: "state.no-terminal-path", Field: field, File: file, Line: st.Line, Column: st.Column,
				Message: fmt.Sprintf("no terminal state can be reached from state '%s': a run there can only loop; give one of its states a way out", st.Slug)})
		}
	}
	return out
}
