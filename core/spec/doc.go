// Package spec is the workflow.yaml definition (spec 01): the parsed types, the strict
// schema and the cross-reference rules that block loading, the grammars (slugs, variable
// names, session ids and paths, ${{ }} references, until, titles), trigger signatures,
// tool-name constants, and the specHash with its snapshot encoding. It is pure: no I/O.
package spec

// SignatureEntry is one normalised entry of a trigger's requires/returns list
// (spec 01 §4.4): a bare name and {name} are the same untyped entry. Type is one of
// SignatureTypes or "" (untyped); Description is trimmed ("" when blank).
type SignatureEntry struct {
	Name        string `json:"name"`
	Type        string `json:"type,omitempty"`
	Description string `json:"description,omitempty"`
}
