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
// `-.->` conditional, `|"label"|` when labelled — quoted, `"` as `#quot;`, `|` as `/` —), and
// a trailing newline. Node ids are the slugs with Mermaid's keywords prefixed `s_`. graph.mmd
// holds this text plus one more newline.
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
		if e.Label != "" { // quoted, so ( [ { and the like render (V10-15)
			arrow += `|"` + mermaidText.Replace(e.Label) + `"|`
		}
		fmt.Fprintf(&b, "  %s %s %s;\n", mermaidID(e.Source), arrow, mermaidID(e.Target))
	}
	return b.String()
}

// mermaidText escapes a quoted Mermaid label: `"` as an entity, `|` (which would end the
// label) as `/`, line breaks as spaces.
var mermaidText = strings.NewReplacer(`"`, "#quot;", "|", "/", "\n", " ", "\r", "")

// mermaidReserved are words a Mermaid flowchart reads as keywords where a node id stands.
var mermaidReserved = map[string]bool{"end": true, "graph": true, "flowchart": true, "subgraph": true, "style": true,
	"class": true, "classdef": true, "click": true, "linkstyle": true, "direction": true, "default": true}

// mermaidID is a slug with every character outside [A-Za-z0-9_] replaced by `_`, prefixed
// `s_` when Mermaid would read it as a keyword ("end", "graph", …).
func mermaidID(s string) string {
	if s == StartNode {
		return s
	}
	id := strings.Map(func(r rune) rune {
		if r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, s)
	if mermaidReserved[strings.ToLower(id)] {
		id = "s_" + id
	}
	return id
}
