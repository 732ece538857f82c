package sandbox

import (
	"bytes"
	"container/list"
	"crypto/sha256"
	"errors"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/dop251/goja"
	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/parser"
)

// Source preparation (spec 03 §1.4, SB-06; research/goja.md §2). The source is wrapped as the
// body of an async function, so top-level await is legal (CS-23), and goja's own parser finds
// module syntax: its first error on a module statement is "Unexpected reserved word" exactly at
// the import/export keyword of real code (strings, comments, templates and regexes already
// skipped). That one statement is rewritten in place, keeping every byte offset and line break,
// and the source is parsed again until it parses cleanly. Import bindings go into a header on
// line 1 and default-export assignments of named declarations into a suffix, so positions in the
// source stay those of the file; only line 1 is shifted by the wrapper, which is corrected.
const (
	wrapOpen  = "(async function(__cs){"
	wrapClose = "\n})"
	// csName is the wrapper's parameter: {h: harness module object, d: default export}.
	csName = "__cs"
	// defaultMarker replaces the 7-byte `default` keyword of `export default <expr>`.
	defaultMarker = "__cs.d="
	// unicodeEscapeFix goes after the opening slash of a /\p{…}/u literal: a lookahead routes
	// the pattern to goja's regexp2 engine, which handles property escapes correctly (goja.md §1).
	unicodeEscapeFix = "(?=)"
	harnessModule    = "@archmax-ai/harness"
	errReservedWord  = "Unexpected reserved word"
	prepCacheEntries = 128
)

// Prepare runs the same source preparation as RunCodeState, for validation (spec 03 CS-06,
// CS-20…CS-22): nil when the source would run, else *ImportError for a foreign import or
// *SyntaxError (positions 1-based, columns in UTF-16 units). Results are cached by content.
func Prepare(file string, src []byte) error {
	return prepareCached(file, src).err
}

// prepared is a source made runnable, or the reason it cannot be.
type prepared struct {
	program    *goja.Program
	module     bool // import/export present: strict, called with this = undefined
	hasDefault bool // an `export default` (or `export {x as default}`) exists
	layout     layout
	err        error
	// srcName is the name the program was compiled under, which its stack frames carry: the file
	// for code states and archmax_run files, "<eval:…>" (unique per source) for archmax_eval.
	srcName string
	// generators: the program defines a generator function, so the runtime must guard the
	// GeneratorFunction constructor before it runs (guards.cover).
	generators bool
}

// prepKind selects the preparation of a sandbox context (SB-06): a code state's, or an agent
// script's (kind ptc: top-level return allowed, declarations exported to the REPL's global
// object, expression statements captured as the completion value; see repl_prepare.go).
type prepKind byte

const (
	kindCode prepKind = iota
	kindPTC
)

// prepCache holds code-state programs; agent scripts (mostly one-off evals) have their own, so
// they never evict a workflow's code states.
var prepCache, replPrepCache = newLRU(prepCacheEntries), newLRU(prepCacheEntries)

func prepareCached(file string, src []byte) *prepared {
	return prepareKindCached(kindCode, file, src)
}

func prepareKindCached(kind prepKind, file string, src []byte) *prepared {
	cache := prepCache
	if kind != kindCode {
		cache = replPrepCache
	}
	h := sha256.New()
	h.Write([]byte(file))
	h.Write([]byte{0})
	h.Write(src)
	var key [sha256.Size]byte
	h.Sum(key[:0])
	if p, ok := cache.get(key); ok {
		return p
	}
	p := prepareKind(kind, file, string(src))
	cache.put(key, p)
	return p
}

func prepare(file, src string) *prepared {
	return prepareKind(kindCode, file, src)
}

func prepareKind(kind prepKind, file, src string) *prepared {
	rw := &rewriter{file: file, srcName: file, kind: kind, src: src, srcLines: lineStarts(src), body: []byte(src)}
	if kind == kindPTC && file == evalFile {
		rw.srcName = evalSourceName(src)
	}
	if e := checkSource(src); e != nil { // before goja's parser recurses through it
		return &prepared{err: rw.syntaxErr(e.off, e.msg)}
	}
	for {
		lay := rw.layout(nil)
		prg, err := parser.ParseFile(nil, rw.srcName, lay.code, 0, parser.WithDisableSourceMaps)
		if err == nil {
			if kind == kindPTC && rw.hasDefault {
				return &prepared{err: rw.syntaxErr(rw.defaultAt, msgNoDefaultExport)}
			}
			return rw.finish(prg, lay)
		}
		var list parser.ErrorList
		if !errors.As(err, &list) || len(list) == 0 {
			return &prepared{err: rw.syntaxErr(0, err.Error())}
		}
		first := list[0]
		off := lay.bodyOffset(lay.codeOffset(first.Position.Line, first.Position.Column))
		if first.Message == errReservedWord {
			switch {
			case hasKeyword(rw.body[off:], "import"):
				err = rw.rewriteImport(off)
			case hasKeyword(rw.body[off:], "export"):
				err = rw.rewriteExport(off)
			default:
				err = rw.syntaxErr(off, first.Message)
			}
			if err != nil {
				return &prepared{err: err}
			}
			continue
		}
		return &prepared{err: rw.syntaxErr(off, first.Message)}
	}
}

// rewriter holds one source's preparation state. body has the source's exact length.
type rewriter struct {
	file       string
	srcName    string // the name the program is parsed and compiled under
	kind       prepKind
	src        string
	srcLines   []int
	body       []byte
	module     bool
	hasDefault bool
	defaultAt  int      // body offset of the first default export
	strict     bool     // ptc: the source's own "use strict" directive, moved before the header
	header     []string // binding statements for harness imports
	exports    []string // ptc: statements exporting top-level declarations (repl_prepare.go)
	suffix     []string // `__cs.d=name;` for default exports of named declarations
	sites      []int    // body offsets of rewritten import/export keywords
	markers    []int    // body offsets where defaultMarker was written
}

// layout assembles the wrapped code around body (or around rw.body when body is nil).
func (rw *rewriter) layout(body []byte) layout {
	if body == nil {
		body = rw.body
	}
	var b strings.Builder
	b.WriteString(wrapOpen)
	if rw.module || rw.strict {
		b.WriteString(`"use strict";`)
	}
	for _, h := range rw.header {
		b.WriteString(h)
	}
	for _, e := range rw.exports {
		b.WriteString(e)
	}
	start := b.Len()
	b.Write(body)
	for _, s := range rw.suffix {
		b.WriteString("\n;")
		b.WriteString(s)
	}
	b.WriteString(wrapClose)
	code := b.String()
	return layout{code: code, codeLines: lineStarts(code), bodyStart: start, bodyLen: len(body), src: rw.src, srcLines: rw.srcLines}
}

func (rw *rewriter) syntaxErr(off int, msg string) *SyntaxError {
	line, col := position(rw.src, rw.srcLines, off)
	return &SyntaxError{File: rw.file, Line: line, Column: col, Message: msg}
}

func (rw *rewriter) unexpected(t token) *SyntaxError {
	if t.kind == tokEOF {
		return rw.syntaxErr(t.start, msgUnexpectedEnd)
	}
	return rw.syntaxErr(t.start, unexpectedToken(t.raw))
}

// blank overwrites body[from:to] with spaces, keeping every line terminator.
func (rw *rewriter) blank(from, to int) {
	for i := from; i < to; i++ {
		switch c := rw.body[i]; {
		case c == '\n' || c == '\r':
		case c == 0xE2 && i+2 < to && rw.body[i+1] == 0x80 && (rw.body[i+2] == 0xA8 || rw.body[i+2] == 0xA9):
			i += 2 // U+2028 / U+2029
		default:
			rw.body[i] = ' '
		}
	}
}

// rewriteImport handles the import statement at off (CS-20, CS-21): a harness import is blanked
// and its bindings hoisted into the header; anything else is refused.
func (rw *rewriter) rewriteImport(off int) error {
	lx := lexer{b: rw.body, pos: off + len("import")}
	t := lx.next()
	switch {
	case t.is("("):
		return rw.syntaxErr(off, msgDynamicImport)
	case t.is("."):
		return rw.syntaxErr(off, msgImportMeta)
	}
	typeOnly := false
	var whole []string    // default and namespace bindings
	var named [][2]string // {imported, local}
	if t.kind != tokString {
		if t.isIdent("type") {
			save := lx.pos
			if u := lx.next(); u.is("{") || u.is("*") || (u.kind == tokIdent && u.text != "from") {
				typeOnly, t = true, u
			} else {
				lx.pos = save
			}
		}
		if t.kind == tokIdent && t.text != "from" {
			whole = append(whole, t.text)
			if t = lx.next(); t.is(",") {
				t = lx.next()
			}
		}
		switch {
		case t.is("*"):
			if a := lx.next(); !a.isIdent("as") {
				return rw.unexpected(a)
			}
			n := lx.next()
			if n.kind != tokIdent {
				return rw.unexpected(n)
			}
			whole = append(whole, n.text)
			t = lx.next()
		case t.is("{"):
			for {
				t = lx.next()
				if t.is("}") {
					break
				}
				itemType := false
				if t.isIdent("type") {
					save := lx.pos
					if u := lx.next(); (u.kind == tokIdent && u.text != "as") || u.kind == tokString {
						itemType, t = true, u
					} else {
						lx.pos = save
					}
				}
				if t.kind != tokIdent && t.kind != tokString {
					return rw.unexpected(t)
				}
				imported, local := t.text, t.text
				isString := t.kind == tokString
				if t = lx.next(); t.isIdent("as") {
					n := lx.next()
					if n.kind != tokIdent {
						return rw.unexpected(n)
					}
					local, t = n.text, lx.next()
				} else if isString {
					return rw.unexpected(t)
				}
				if !itemType {
					named = append(named, [2]string{imported, local})
				}
				if t.is("}") {
					break
				}
				if !t.is(",") {
					return rw.unexpected(t)
				}
			}
			t = lx.next()
		}
		if !t.isIdent("from") {
			return rw.unexpected(t)
		}
		t = lx.next()
	}
	if t.kind != tokString {
		return rw.unexpected(t)
	}
	spec, end := t.text, t.end
	if a := lx.next(); a.isIdent("with") || (a.isIdent("assert") && !a.newline) {
		if lx.next().is("{") {
			return rw.syntaxErr(a.start, msgImportAttributes)
		}
	}
	if spec != harnessModule && !strings.HasPrefix(spec, harnessModule+"/") {
		line, col := position(rw.src, rw.srcLines, off)
		return &ImportError{Specifier: spec, File: rw.file, Line: line, Column: col}
	}
	rw.blank(off, statementEnd(rw.body, end))
	rw.sites = append(rw.sites, off)
	rw.module = true
	if typeOnly {
		return nil
	}
	for _, name := range whole {
		rw.header = append(rw.header, "const "+name+"="+csName+".h;")
	}
	if len(named) > 0 {
		parts := make([]string, len(named))
		for i, n := range named {
			parts[i] = strconv.Quote(n[0]) + ":" + n[1]
		}
		rw.header = append(rw.header, "const {"+strings.Join(parts, ",")+"}="+csName+".h;")
	}
	return nil
}

// rewriteExport handles the export statement at off (CS-22): `export default <expr>` becomes
// an assignment to the default slot, a named default declaration stays a declaration (hoisted
// and bound) with the assignment in the suffix, `export` before other declarations is dropped
// and `export {…}` lists are removed (a `… as default` entry assigns the default slot).
func (rw *rewriter) rewriteExport(off int) error {
	lx := lexer{b: rw.body, pos: off + len("export")}
	t := lx.next()
	switch {
	case t.is("*"):
		return rw.syntaxErr(off, msgReexportAll)
	case t.isIdent("default"):
		if err := rw.claimDefault(off); err != nil {
			return err
		}
		rw.blank(off, off+len("export"))
		if name := declarationName(&lx); name != "" {
			rw.blank(t.start, t.end)
			rw.suffix = append(rw.suffix, defaultMarker+name+";")
		} else {
			copy(rw.body[t.start:t.end], defaultMarker)
			rw.markers = append(rw.markers, t.start)
		}
	case t.is("{"):
		var defaults []string
		for {
			t = lx.next()
			if t.is("}") {
				break
			}
			if t.kind != tokIdent && t.kind != tokString {
				return rw.unexpected(t)
			}
			local, exported := t.text, t.text
			if t = lx.next(); t.isIdent("as") {
				n := lx.next()
				if n.kind != tokIdent && n.kind != tokString {
					return rw.unexpected(n)
				}
				exported, t = n.text, lx.next()
			}
			if exported == "default" {
				defaults = append(defaults, local)
			}
			if t.is("}") {
				break
			}
			if !t.is(",") {
				return rw.unexpected(t)
			}
		}
		closeEnd := t.end
		if lx.next().isIdent("from") {
			return rw.syntaxErr(off, msgReexport)
		}
		for _, local := range defaults {
			if err := rw.claimDefault(off); err != nil {
				return err
			}
			rw.suffix = append(rw.suffix, defaultMarker+local+";")
		}
		rw.blank(off, statementEnd(rw.body, closeEnd))
	case t.isIdent("async"):
		if u := lx.next(); !u.isIdent("function") || u.newline {
			return rw.unexpected(u)
		}
		rw.blank(off, off+len("export"))
	case t.isIdent("const"), t.isIdent("let"), t.isIdent("var"), t.isIdent("function"), t.isIdent("class"):
		rw.blank(off, off+len("export"))
	default:
		return rw.unexpected(t)
	}
	rw.sites = append(rw.sites, off)
	rw.module = true
	return nil
}

func (rw *rewriter) claimDefault(off int) error {
	if rw.hasDefault {
		return rw.syntaxErr(off, msgDuplicateDefault)
	}
	rw.hasDefault, rw.defaultAt = true, off
	return nil
}

// declarationName returns the name of a named `function`/`async function`/`function*`/`class`
// declaration at the lexer's position, or "" for an expression.
func declarationName(lx *lexer) string {
	u := lx.next()
	if u.isIdent("async") {
		if u = lx.next(); !u.isIdent("function") || u.newline {
			return ""
		}
	}
	switch {
	case u.isIdent("function"):
		w := lx.next()
		if w.is("*") {
			w = lx.next()
		}
		if w.kind == tokIdent {
			return w.text
		}
	case u.isIdent("class"):
		if w := lx.next(); w.kind == tokIdent && w.text != "extends" {
			return w.text
		}
	}
	return ""
}

// finish validates the cleanly parsed wrapper, applies the \p{…} fix and compiles.
func (rw *rewriter) finish(prg *ast.Program, lay layout) *prepared {
	base := prg.File.Base()
	offsetOf := func(idx int) int { return lay.bodyOffset(idx - base) }
	fn, exact := wrapperFunction(prg)
	if !exact {
		at := 0
		if fn != nil {
			at = offsetOf(int(fn.Body.RightBrace))
		}
		return &prepared{err: rw.syntaxErr(at, unexpectedToken("}"))}
	}
	if site, nested := nestedSite(lay, rw.sites, fn, base); nested {
		return &prepared{err: rw.syntaxErr(site, msgNestedImport)}
	}
	var fixes []int
	var fail *SyntaxError
	inspectBody(fn.Body, func(n ast.Node, inFunc bool) {
		if fail != nil {
			return
		}
		switch n := n.(type) {
		case *ast.Identifier:
			if off := int(n.Idx) - base - lay.bodyStart; n.Name == csName && off >= 0 && off < lay.bodyLen && !containsInt(rw.markers, off) {
				fail = rw.syntaxErr(off, reservedName(csName))
			}
		case *ast.WithStatement: // it could shadow __cs, which the guard rewrite's helpers hang on
			fail = rw.syntaxErr(offsetOf(int(n.With)), msgWithStatement)
		case *ast.ReturnStatement:
			if !inFunc && rw.kind != kindPTC { // AS-05: an agent script may return its result
				fail = rw.syntaxErr(offsetOf(int(n.Return)), msgIllegalReturn)
			}
		case *ast.RegExpLiteral:
			if strings.ContainsRune(n.Flags, 'u') && (strings.Contains(n.Pattern, `\p{`) || strings.Contains(n.Pattern, `\P{`)) {
				fixes = append(fixes, offsetOf(int(n.Idx))+1)
			}
		}
	})
	if fail != nil {
		return &prepared{err: fail}
	}
	var plan *replPlan
	if rw.kind == kindPTC {
		plan = rw.planREPL(fn, lay, base) // may add the export header and the strict prefix
	}
	if len(fixes) > 0 || plan.changesLayout() {
		sort.Ints(fixes)
		fixes = dedupe(fixes)
		body := make([]byte, 0, len(rw.body)+len(fixes)*len(unicodeEscapeFix))
		inserts := make([]int, len(fixes))
		prev := 0
		for i, at := range fixes {
			body = append(body, rw.body[prev:at]...)
			inserts[i] = len(body)
			body = append(body, unicodeEscapeFix...)
			prev = at
		}
		body = append(body, rw.body[prev:]...)
		lay = rw.layout(body)
		lay.inserts = inserts
		var err error
		if prg, err = parser.ParseFile(nil, rw.srcName, lay.code, 0, parser.WithDisableSourceMaps); err != nil {
			at := 0
			if len(fixes) > 0 {
				at = fixes[0]
			}
			return &prepared{err: rw.syntaxErr(at, err.Error())}
		}
	}
	if plan != nil {
		plan.apply(prg)
	}
	generators := guardRewrite(prg) // CS-61: spreads, BigInt operators and exec calls behind their guards
	program, err := goja.CompileAST(prg, false)
	if err != nil {
		off := 0
		var se *goja.CompilerSyntaxError
		var re *goja.CompilerReferenceError
		switch {
		case errors.As(err, &se):
			off, err = lay.bodyOffset(se.Offset), errors.New(se.Message)
		case errors.As(err, &re):
			off, err = lay.bodyOffset(re.Offset), errors.New(re.Message)
		}
		return &prepared{err: rw.syntaxErr(off, err.Error())}
	}
	return &prepared{program: program, module: rw.module, hasDefault: rw.hasDefault, layout: lay, srcName: rw.srcName, generators: generators}
}

// nestedSite reports the first rewritten import/export keyword that lies inside a top-level
// statement of the wrapper rather than between two of them. A statement's start is found by
// skipping whitespace, comments and semicolons after the previous statement's end, because goja leaves
// Idx0 unset on some statements (an IfStatement reports 0).
func nestedSite(lay layout, sites []int, fn *ast.FunctionLiteral, base int) (int, bool) {
	code := []byte(lay.code)
	prevEnd := int(fn.Body.LeftBrace) - base + 1
	for _, st := range fn.Body.List {
		lx := lexer{b: code, pos: prevEnd}
		for lx.skipSpace(); lx.pos < len(code) && code[lx.pos] == ';'; lx.skipSpace() {
			lx.pos++ // the terminator of the previous statement, outside its Idx1
		}
		start, end := lx.pos, int(st.Idx1())-base
		for _, site := range sites {
			if at := site + lay.bodyStart; start < at && at < end {
				return site, true
			}
		}
		prevEnd = end
	}
	return 0, false
}

// wrapperFunction returns the wrapper's function literal and whether the program is exactly
// that one expression: false when the source closed the wrapper early (`})(); (function(){`).
// fn may then be nil, when the wrapper ended up inside an expression form not searched here.
func wrapperFunction(prg *ast.Program) (fn *ast.FunctionLiteral, exact bool) {
	if len(prg.Body) == 0 {
		return nil, false
	}
	es, ok := prg.Body[0].(*ast.ExpressionStatement)
	if !ok {
		return nil, false
	}
	fn, exact = es.Expression.(*ast.FunctionLiteral)
	if !exact {
		fn = firstFunction(es.Expression)
	}
	exact = exact && len(prg.Body) == 1 && int(fn.Idx1())-prg.File.Base() == len(prg.File.Source())-1
	return fn, exact
}

// firstFunction finds the leftmost function literal of an expression (the wrapper, inside an
// expression the source appended to it).
func firstFunction(e ast.Expression) *ast.FunctionLiteral {
	switch e := e.(type) {
	case *ast.FunctionLiteral:
		return e
	case *ast.CallExpression:
		return firstFunction(e.Callee)
	case *ast.DotExpression:
		return firstFunction(e.Left)
	case *ast.BracketExpression:
		return firstFunction(e.Left)
	case *ast.BinaryExpression:
		return firstFunction(e.Left)
	case *ast.ConditionalExpression:
		return firstFunction(e.Test)
	case *ast.SequenceExpression:
		return firstFunction(e.Sequence[0])
	}
	return nil
}

// layout maps positions in the wrapped code back to the original source.
type layout struct {
	code      string
	codeLines []int
	bodyStart int
	bodyLen   int
	inserts   []int // body offsets where unicodeEscapeFix was inserted, ascending
	src       string
	srcLines  []int
}

// codeOffset converts goja's 1-based line and byte column into a byte offset of the code.
func (l *layout) codeOffset(line, col int) int {
	if line < 1 || line > len(l.codeLines) {
		return 0
	}
	return l.codeLines[line-1] + col - 1
}

// bodyOffset converts a code offset into a source offset, clamped to the source.
func (l *layout) bodyOffset(codeOff int) int {
	off := min(max(codeOff-l.bodyStart, 0), l.bodyLen)
	shift := 0
	for _, at := range l.inserts {
		switch {
		case off >= at+len(unicodeEscapeFix):
			shift += len(unicodeEscapeFix)
		case off >= at:
			off = at
		}
	}
	return min(off-shift, len(l.src))
}

// sourcePosition maps goja's code position (1-based line, byte column) to the source's
// 1-based line and UTF-16 column.
func (l *layout) sourcePosition(line, col int) (int, int) {
	return position(l.src, l.srcLines, l.bodyOffset(l.codeOffset(line, col)))
}

// lineStarts returns the byte offset of every line, splitting lines as goja does
// (\r\n, \r, \n, U+2028, U+2029).
func lineStarts(s string) []int {
	starts := []int{0}
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\r':
			if i+1 < len(s) && s[i+1] == '\n' {
				i++
			}
			starts = append(starts, i+1)
		case '\n':
			starts = append(starts, i+1)
		case 0xE2:
			if i+2 < len(s) && s[i+1] == 0x80 && (s[i+2] == 0xA8 || s[i+2] == 0xA9) {
				i += 2
				starts = append(starts, i+1)
			}
		}
	}
	return starts
}

// position returns the 1-based line and UTF-16 column of byte offset off in src.
func position(src string, lines []int, off int) (int, int) {
	line := sort.Search(len(lines), func(i int) bool { return lines[i] > off }) - 1
	return line + 1, utf16Len(src[lines[line]:off]) + 1
}

// utf16Len counts UTF-16 code units; invalid UTF-8 bytes count one unit each (U+FFFD).
func utf16Len(s string) int {
	n := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			n++
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		n += max(utf16.RuneLen(r), 1)
		i += size
	}
	return n
}

// statementEnd extends end over trailing spaces/tabs and one semicolon.
func statementEnd(b []byte, end int) int {
	i := end
	for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
		i++
	}
	if i < len(b) && b[i] == ';' {
		return i + 1
	}
	return end
}

func hasKeyword(b []byte, word string) bool {
	if !bytes.HasPrefix(b, []byte(word)) {
		return false
	}
	if len(b) == len(word) {
		return true
	}
	r, _ := utf8.DecodeRune(b[len(word):])
	return !isIdentPart(r)
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func dedupe(sorted []int) []int {
	out := sorted[:0]
	for i, v := range sorted {
		if i == 0 || v != sorted[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// lru is a bounded, goroutine-safe least-recently-used cache of prepared sources.
type lru struct {
	mu    sync.Mutex
	max   int
	order *list.List // front = most recent; values are *lruEntry
	items map[[sha256.Size]byte]*list.Element
}

type lruEntry struct {
	key [sha256.Size]byte
	val *prepared
}

func newLRU(max int) *lru {
	return &lru{max: max, order: list.New(), items: make(map[[sha256.Size]byte]*list.Element)}
}

func (c *lru) get(key [sha256.Size]byte) (*prepared, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*lruEntry).val, true
}

func (c *lru) put(key [sha256.Size]byte, val *prepared) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		c.order.MoveToFront(el)
		el.Value.(*lruEntry).val = val
		return
	}
	c.items[key] = c.order.PushFront(&lruEntry{key: key, val: val})
	if c.order.Len() > c.max {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		delete(c.items, oldest.Value.(*lruEntry).key)
	}
}
