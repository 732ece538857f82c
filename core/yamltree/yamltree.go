// Package yamltree reads one YAML document into a plain value tree the strict parsers
// of workflow.yaml (core/spec, spec 01 §1.9, §2.13) and of case files (core/cases,
// spec 04 CD-03, CE-13, OQ-C18) walk: aliases expanded within a bound, merge keys
// (`<<`) applied, duplicate and non-string keys refused, plain scalars resolved with
// the YAML 1.2 core schema, and every value carrying the 1-based line and column of
// its source node.
//
// The package only builds the tree. How a child's path is written and how a finding
// is worded belong to the caller (Options); what it reports is a Finding, and a
// source that is not one YAML mapping comes back as a Refusal. It is pure: no I/O.
package yamltree

import (
	"bytes"
	"errors"
	"io"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"

	yaml "sigs.k8s.io/yaml/goyaml.v3"
)

// Kind is the type of a value after core-schema resolution.
type Kind uint8

const (
	Null Kind = iota
	Bool
	Number
	String
	Seq
	Map
)

// Node is a YAML value after alias and merge-key expansion, resolved with the YAML
// 1.2 core schema, with the 1-based position of its source node (0 when unknown).
type Node struct {
	Kind      Kind
	Str       string  // String: the value; any other scalar: its source text
	Num       float64 // Number
	Truth     bool    // Bool
	Items     []*Node // Seq
	Entries   []Entry // Map: document order, keys unique
	Line, Col int
}

// Entry is one mapping pair; Line and Col locate its key.
type Entry struct {
	Key       string
	Line, Col int
	Val       *Node
}

// Get returns the value under key in a mapping, or nil.
func (n *Node) Get(key string) *Node {
	if e := n.Entry(key); e != nil {
		return e.Val
	}
	return nil
}

// Entry returns the pair of key in a mapping, or nil.
func (n *Node) Entry(key string) *Entry {
	for i := range n.Entries {
		if n.Entries[i].Key == key {
			return &n.Entries[i]
		}
	}
	return nil
}

// IsScalar reports whether n is neither a sequence nor a mapping.
func (n *Node) IsScalar() bool { return n.Kind != Seq && n.Kind != Map }

// Alias-expansion bound (spec 01 §2.13 rule 4): an expanded tree may hold at most
// AliasExpansionFactor times the source's node count (at least AliasExpansionFloor
// nodes) and never more than AliasExpansionCap nodes.
const (
	AliasExpansionFactor = 64
	AliasExpansionFloor  = 1 << 12
	AliasExpansionCap    = 1 << 20
)

// YAML 1.2 core schema for plain scalars (spec 01 §2.13 rule 2): yes/no/on/off and
// dates stay strings; 0o/0x integers; no YAML 1.1 octal or digit separators.
var (
	coreNull  = regexp.MustCompile(`^(?:~|null|Null|NULL)?$`)
	coreTrue  = regexp.MustCompile(`^(?:true|True|TRUE)$`)
	coreFalse = regexp.MustCompile(`^(?:false|False|FALSE)$`)
	coreInt   = regexp.MustCompile(`^[-+]?[0-9]+$`)
	coreOct   = regexp.MustCompile(`^0o[0-7]+$`)
	coreHex   = regexp.MustCompile(`^0x[0-9a-fA-F]+$`)
	coreFloat = regexp.MustCompile(`^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$`)
	coreInf   = regexp.MustCompile(`^[-+]?\.(?:inf|Inf|INF)$`)
	coreNaN   = regexp.MustCompile(`^\.(?:nan|NaN|NAN)$`)
	yamlLine  = regexp.MustCompile(`line (\d+)`)
)

// Problem names what a Finding refuses.
type Problem uint8

const (
	// AliasBomb: aliases expand the document past the bound; reported once, at the
	// node where the budget ran out.
	AliasBomb Problem = iota + 1
	// AliasCycle: an alias refers to a node that contains it; Name is the alias.
	AliasCycle
	// DuplicateKey: a mapping repeats a key; Name is the key, FirstLine the line of
	// its first occurrence.
	DuplicateKey
	// NonStringKey: a mapping key does not resolve to a string; Name is its source
	// text.
	NonStringKey
	// BadMerge: a merge key's value is not a mapping or a list of mappings.
	BadMerge
)

// Finding is one refusal met while building the tree, at Path (written with the
// caller's Join and Index) and the 1-based Line and Col of the offending node. The
// tree is still built past a DuplicateKey, NonStringKey or BadMerge (the key or
// merge source is dropped); AliasBomb and AliasCycle make Decode return no tree.
type Finding struct {
	Problem   Problem
	Path      string
	Line, Col int
	Name      string
	FirstLine int
}

// Options parameterise Decode.
type Options struct {
	// Join writes the path of key under path; nil is Join.
	Join func(path, key string) string
	// Index writes the path of item i of the sequence at path; nil is
	// Join(path, strconv.Itoa(i)) with the Join in use.
	Index func(path string, i int) string
	// Report receives every Finding in document order; nil drops them.
	Report func(Finding)
}

// Join is the dotted path of key under path: key alone at the root (path "").
func Join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// Reason says why a source yields no tree.
type Reason uint8

const (
	// NoDocument: the source holds no document (empty, or comments only).
	NoDocument Reason = iota + 1
	// SyntaxError: the (first) document is not valid YAML; Err is the parser's error.
	SyntaxError
	// ManyDocuments: a second document follows the first. Err is the parser's error
	// when that second document is itself not valid YAML; otherwise Line and Col
	// locate it.
	ManyDocuments
	// NotMapping: the document's root is not a mapping; Line and Col locate it.
	NotMapping
	// Refused: the aliases expanded past the bound or into a cycle; the Finding went
	// to Options.Report.
	Refused
)

// Refusal is a source that is not a single YAML mapping this package will expand.
// Line is also read out of Err's message ("line N") when the parser gave one.
type Refusal struct {
	Reason    Reason
	Err       error
	Line, Col int
}

func (r *Refusal) Error() string {
	switch r.Reason {
	case NoDocument:
		return "no YAML document"
	case SyntaxError:
		return r.Err.Error()
	case ManyDocuments:
		return "more than one YAML document"
	case NotMapping:
		return "the YAML document is not a mapping"
	default:
		return "aliases refused"
	}
}

// Decode turns CRLF line ends into LF, parses exactly one YAML document and returns
// its root mapping expanded: aliases within the bound (AliasExpansionFactor,
// AliasExpansionFloor, AliasExpansionCap), merge keys applied (explicit keys win over
// merged ones, earlier merge sources over later ones, merged keys stand in the place
// of the `<<` entry), duplicate and non-string keys dropped and reported, scalars resolved by
// the core schema, and an empty value positioned at its key. It returns a nil Node
// and the Refusal when there is no such tree.
func Decode(src []byte, opts Options) (*Node, *Refusal) {
	src = bytes.ReplaceAll(src, []byte("\r\n"), []byte("\n"))
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var doc, next yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &Refusal{Reason: NoDocument, Err: err}
		}
		return nil, &Refusal{Reason: SyntaxError, Err: err, Line: errorLine(err)}
	}
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, &Refusal{Reason: ManyDocuments, Err: err, Line: errorLine(err)}
	default:
		return nil, &Refusal{Reason: ManyDocuments, Line: next.Line, Col: next.Column}
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		r := &Refusal{Reason: NotMapping, Line: doc.Line, Col: doc.Column}
		if len(doc.Content) > 0 {
			r.Line, r.Col = doc.Content[0].Line, doc.Content[0].Column
		}
		return nil, r
	}
	if opts.Join == nil {
		opts.Join = Join
	}
	if opts.Index == nil {
		join := opts.Join
		opts.Index = func(path string, i int) string { return join(path, strconv.Itoa(i)) }
	}
	if opts.Report == nil {
		opts.Report = func(Finding) {}
	}
	budget := max(AliasExpansionFactor*countNodes(&doc), AliasExpansionFloor)
	x := &expander{opts: opts, budget: min(budget, AliasExpansionCap), active: map[*yaml.Node]bool{}}
	root := x.convert(doc.Content[0], "")
	if x.failed {
		return nil, &Refusal{Reason: Refused}
	}
	return root, nil
}

// errorLine is the line a parser error names ("line N"), or 0.
func errorLine(err error) int {
	line := 0
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		line, _ = strconv.Atoi(m[1])
	}
	return line
}

func countNodes(n *yaml.Node) int {
	c := 1
	for _, ch := range n.Content {
		c += countNodes(ch)
	}
	return c
}

// expander turns a yaml.Node tree into a Node tree: aliases expanded within a node
// budget, merge keys applied, duplicate and non-string keys refused.
type expander struct {
	opts   Options
	budget int
	failed bool                // the bound was hit or an alias contains itself
	active map[*yaml.Node]bool // anchored nodes being expanded (alias cycles)
}

func (x *expander) report(p Problem, path string, n *yaml.Node) {
	x.opts.Report(Finding{Problem: p, Path: path, Line: n.Line, Col: n.Column})
}

func (x *expander) convert(n *yaml.Node, path string) *Node {
	x.budget--
	if x.budget < 0 || x.failed {
		if !x.failed { // report the bound once
			x.failed = true
			x.report(AliasBomb, path, n)
		}
		return &Node{}
	}
	if n.Anchor != "" {
		x.active[n] = true
		defer delete(x.active, n)
	}
	switch n.Kind {
	case yaml.AliasNode:
		if n.Alias == nil || x.active[n.Alias] {
			x.failed = true
			x.opts.Report(Finding{Problem: AliasCycle, Path: path, Line: n.Line, Col: n.Column, Name: n.Value})
			return &Node{Line: n.Line, Col: n.Column}
		}
		return x.convert(n.Alias, path)
	case yaml.SequenceNode:
		out := &Node{Kind: Seq, Line: n.Line, Col: n.Column, Items: make([]*Node, 0, len(n.Content))}
		for i, ch := range n.Content {
			out.Items = append(out.Items, x.convert(ch, x.opts.Index(path, i)))
		}
		return out
	case yaml.MappingNode:
		return x.mapping(n, path)
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return &Node{Line: n.Line, Col: n.Column}
		}
		return x.convert(n.Content[0], path)
	default:
		return scalar(n)
	}
}

// mapping builds a mapping node. Explicit keys win over merged ones (`<<`), earlier
// merge sources over later ones; merged keys take the place of the `<<` entry in
// document order and keep the line and column of their source.
func (x *expander) mapping(n *yaml.Node, path string) *Node {
	out := &Node{Kind: Map, Line: n.Line, Col: n.Column}
	type pair struct {
		key   string
		k, v  *yaml.Node
		merge bool
	}
	pairs := make([]pair, 0, len(n.Content)/2)
	explicit := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if isMergeKey(k) {
			pairs = append(pairs, pair{k: k, v: v, merge: true})
			continue
		}
		key, ok := x.key(k, path)
		if !ok {
			continue
		}
		if first, dup := explicit[key]; dup {
			x.opts.Report(Finding{Problem: DuplicateKey, Path: path, Line: k.Line, Col: k.Column, Name: key, FirstLine: first.Line})
			continue
		}
		explicit[key] = k
		pairs = append(pairs, pair{key: key, k: k, v: v})
	}
	present := map[string]bool{}
	for _, p := range pairs {
		if !p.merge {
			present[p.key] = true
			val := x.convert(p.v, x.opts.Join(path, p.key))
			if val.Kind == Null && p.v.Kind == yaml.ScalarNode && p.v.Value == "" {
				val.Line, val.Col = p.k.Line, p.k.Column // an empty value is found at its key
			}
			out.Entries = append(out.Entries, Entry{Key: p.key, Line: p.k.Line, Col: p.k.Column, Val: val})
			continue
		}
		src := x.convert(p.v, path)
		sources := []*Node{src}
		if src.Kind == Seq {
			sources = src.Items
		}
		for _, m := range sources {
			if m.Kind != Map {
				x.report(BadMerge, path, p.k)
				continue
			}
			for _, e := range m.Entries {
				if explicit[e.Key] == nil && !present[e.Key] {
					present[e.Key] = true
					out.Entries = append(out.Entries, e)
				}
			}
		}
	}
	return out
}

func isMergeKey(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.Value == "<<" &&
		k.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) == 0 &&
		(k.Style&yaml.TaggedStyle == 0 || k.Tag == "!!merge")
}

// key resolves a mapping key, which must be a string scalar (spec 01 §2.13 rule 5).
func (x *expander) key(k *yaml.Node, path string) (string, bool) {
	if k.Kind == yaml.AliasNode && k.Alias != nil {
		k = k.Alias
	}
	if k.Kind == yaml.ScalarNode {
		if v := scalar(k); v.Kind == String {
			return v.Str, true
		}
	}
	x.opts.Report(Finding{Problem: NonStringKey, Path: path, Line: k.Line, Col: k.Column, Name: k.Value})
	return "", false
}

// scalar resolves a scalar node: quoted, block and explicitly string-like tagged
// scalars are strings; plain ones follow the YAML 1.2 core schema.
func scalar(n *yaml.Node) *Node {
	out := &Node{Kind: String, Str: n.Value, Line: n.Line, Col: n.Column}
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return out
	}
	if n.Style&yaml.TaggedStyle != 0 {
		switch n.Tag {
		case "!!null", "!!bool", "!!int", "!!float":
		default: // !!str, !!timestamp, !!binary and custom tags keep their text
			return out
		}
	}
	resolvePlain(out, n.Value)
	return out
}

// Plain resolves text as a plain (unquoted, untagged) scalar under the core schema;
// the node has no position.
func Plain(text string) *Node {
	out := &Node{Kind: String, Str: text}
	resolvePlain(out, text)
	return out
}

// resolvePlain sets out's kind and value as the core schema reads the plain text v.
func resolvePlain(out *Node, v string) {
	if v != "" && !strings.ContainsRune("0123456789+-.~nNtTfF", rune(v[0])) {
		return // no core-schema null, bool or number starts otherwise
	}
	switch {
	case coreNull.MatchString(v):
		out.Kind = Null
	case coreTrue.MatchString(v), coreFalse.MatchString(v):
		out.Kind, out.Truth = Bool, coreTrue.MatchString(v)
	case coreOct.MatchString(v), coreHex.MatchString(v):
		base := 8
		if v[1] == 'x' {
			base = 16
		}
		i, _ := new(big.Int).SetString(v[2:], base)
		out.Kind = Number
		out.Num, _ = new(big.Float).SetInt(i).Float64() // beyond 2^53 rounds, as in JavaScript
	case coreInt.MatchString(v), coreFloat.MatchString(v):
		f, _ := strconv.ParseFloat(v, 64) // out-of-range values round to ±Inf, as in JavaScript
		out.Kind, out.Num = Number, f
	case coreInf.MatchString(v):
		out.Kind, out.Num = Number, math.Inf(1)
		if v[0] == '-' {
			out.Num = math.Inf(-1)
		}
	case coreNaN.MatchString(v):
		out.Kind, out.Num = Number, math.NaN()
	}
}
