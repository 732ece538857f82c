package spec

import (
	"strconv"
	"strings"

	"github.com/archmax-ai/archmax/core/yamltree"
)

// Locate finds a dotted field path of the spec's governing document (spec 01 §8.2 field
// format: "states.review.transitions.0.to", list indices as plain segments) and returns the
// 1-based line and column of its key (a mapping entry) or of the item (a list element).
// ok is false when the document does not declare the field — so Locate also answers "is
// this key present", which the parsed types cannot (an absent list and `[]` both parse to
// nil) — or when sp was not produced by Parse. metadata blocks are not searchable (§9.1).
func (s *MachineSpec) Locate(field string) (line, col int, ok bool) {
	if s == nil || s.doc == nil || field == "" {
		return 0, 0, false
	}
	segs := strings.Split(field, ".")
	if len(segs) > 1 && segs[0] == "states" && s.docStates != nil { // the one mapping that can be huge
		e, ok := s.docStates[segs[1]]
		switch {
		case !ok:
			return 0, 0, false
		case len(segs) == 2:
			return e.Line, e.Col, true
		case e.Val == nil:
			return 0, 0, false
		}
		return locate(e.Val, segs[2:])
	}
	return locate(s.doc, segs)
}

// Position is where a finding about field belongs: the field's own key when the document
// declares it, else st's key (0, 0 with no st) — for findings about a key that is absent.
func (s *MachineSpec) Position(field string, st *State) (line, col int) {
	if line, col, ok := s.Locate(field); ok {
		return line, col
	}
	if st != nil {
		return st.Line, st.Column
	}
	return 0, 0
}

// stateEntries indexes the governing document's states by slug.
func stateEntries(doc *node) map[string]entry {
	for _, e := range doc.Entries {
		if e.Key == "states" && e.Val != nil && e.Val.Kind == yamltree.Map {
			m := make(map[string]entry, len(e.Val.Entries))
			for _, se := range e.Val.Entries {
				m[se.Key] = se
			}
			return m
		}
	}
	return nil
}

func locate(n *node, segs []string) (int, int, bool) {
	seg := segs[0]
	switch n.Kind {
	case yamltree.Map:
		for _, e := range n.Entries {
			if e.Key != seg {
				continue
			}
			if len(segs) == 1 {
				return e.Line, e.Col, true
			}
			if e.Val == nil {
				return 0, 0, false
			}
			return locate(e.Val, segs[1:])
		}
	case yamltree.Seq:
		i, err := strconv.Atoi(seg)
		if err != nil || i < 0 || i >= len(n.Items) {
			return 0, 0, false
		}
		if len(segs) == 1 {
			return n.Items[i].Line, n.Items[i].Col, true
		}
		return locate(n.Items[i], segs[1:])
	}
	return 0, 0, false
}
