package sandbox

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// The source bound (DECISIONS Q17-19…Q17-22). goja's parser is recursive descent and its
// compiler, like the sandbox's own AST walks, recurses once per level of the syntax tree, in Go:
// a source nested deeply enough overflows the goroutine's stack, a fatal error that no recover
// reaches (the process dies, and `archmax serve` runs the session again on restart). Measured
// at Go's 1 GB stack: parentheses, brackets, object literals and template substitutions nested
// 200,000–400,000 deep crash; prefix operators, member and call chains, ternaries, assignments,
// `new` and statement prefixes (`if (a)` …) 400,000–700,000. Compilation is not interruptible
// either, and some shapes compile in quadratic time (10,000 chained `+` 0.35 s, 20,000 1.4 s;
// 20,000 chained arrows 4.8 s; 5,000 nested same-name labels 4.6 s in the parser's error list).
//
// So every source is scanned before goja's parser sees it — a script's own, an agent's
// archmax_eval code, and what eval and the Function constructors compile — by one linear pass
// that skips strings, template text, comments and regular expressions and measures, at every
// token, the depth of the tree being built:
//
//   - nesting: open brackets (`(`, `[`, `{`, `${`), plus, within each, the prefix operators,
//     member accesses and calls, arrows, ternaries, assignments, `new`, `extends`, spreads and
//     the statement prefixes (`if`, `for`, `while`, `with`, `do`, labels) of the expression or
//     statement being read — at most maxSourceNesting;
//   - chains of binary operators along the same path (`a + b + …`, left-deep trees) — at most
//     maxOperatorChain;
//   - the work of the whole source: the sum over tokens of the depth at that token, which is
//     linear for flat code and quadratic for a long chain (what makes compile times quadratic) —
//     at most maxSourceWork;
//   - labels nested in one statement — at most maxNestedLabels;
//   - the size, in bytes — at most maxSourceBytes.
//
// Counts reset where the parser's own recursion unwinds: a `,` or `;` (a statement's prefixes
// are kept when `else` or a do-while's `while` follows), a line break between two tokens that
// cannot continue one expression (automatic semicolon insertion), and a closing bracket (its
// frame's counts go). The scan overcounts rather than under: a false refusal needs code nested
// thousands deep, which no script a person or a model writes has.
//
// The scan reads strings, templates, comments and line terminators exactly as goja's lexer does
// (Q17-23), so it can differ from goja only at a "/" one reads as a division and the other as a
// regular expression. Where it cannot be sure (Q17-24) it is uncertain up to a clean line break,
// and counts that stretch's text whole: every opening bracket byte into a bracket count no closer
// of it lowers (maxBracketBound), every operator character and word into maxUncertainTokens — so
// no misread region hides from the bound more than its own text, counted byte by byte.
const (
	// maxSourceBytes bounds a source: 2 MiB compiles in well under a second as ordinary code.
	maxSourceBytes = 2 << 20
	// maxSourceNesting bounds the nesting of brackets and of the non-binary chains: 1/70 of the
	// shallowest crash point, and where the quadratic shapes (arrows, class heritage, blocks)
	// still compile in about 60 ms.
	maxSourceNesting = 3000
	// maxOperatorChain bounds the binary operators chained along one path (a 10,001-term sum).
	maxOperatorChain = 10000
	// maxSourceWork bounds the depth-weighted tokens of a source: a chain of n terms weighs
	// about n² (a 10,000-term sum 1e8, compiled in 0.35 s), a 2 MiB script of ordinary code about
	// 1e7; at the limit goja compiles the worst shapes in 1–2 s.
	maxSourceWork = 250_000_000
	// maxNestedLabels bounds labels in one statement (goja checks each against those around it).
	maxNestedLabels = 100
	// maxBracketBound bounds the conservative bracket count (Q17-23): the brackets the scan read
	// as code where it is certain of its reading, plus every opening bracket byte — code, string,
	// comment, regular expression or template text alike — where it is not. 1/7 of the shallowest
	// crash.
	maxBracketBound = 30000
	// maxUncertainTokens bounds the operator characters and words of the stretches the scan was
	// not certain how goja reads (Q17-23), summed over the source.
	maxUncertainTokens = 30000
)

// sourceLimitError is a source refused by checkSource: its message and byte offset.
type sourceLimitError struct {
	msg string
	off int
}

func (e *sourceLimitError) Error() string { return e.msg }

// scanFrame is one open bracket (the outermost frame is the source itself).
type scanFrame struct {
	open      byte // '(', '[', '{', '$' (a template's ${), 0 for the source
	object    bool // an object literal or class body: `:` is not a label there
	stmt      bool // a statement block: its "}" ends a statement
	head      bool // the parenthesis of an if/for/while/with head (its ")" starts a statement)
	base      int  // nesting at the bracket, itself included
	chainBase int  // binary operators along the path at the bracket
	labelBase int
	run       int // nesting within this frame since the last reset
	sticky    int // statement prefixes within this frame, kept past a ";" followed by else/while
	chain     int // binary operators within this frame since the last reset
	labels    int
	ternary   int  // pending `?`
	caseColon bool // a case/default expects its ":"
	epoch     int  // the scanner's epoch at the bracket: an older one is a frame it may have misread
	objHead   bool // the parenthesis after a keyword-named method in an object or class body
	params    bool // a function's parameter list (or catch's): bindings, no expressions
	declList  bool // a var/let/const declaration is being read: a binding follows its ","
	pattern   bool // a destructuring pattern of a declaration or of parameters
}

type scanTok byte

const (
	tNone  scanTok = iota // start, or after an operator or keyword: an expression may start
	tValue                // an identifier, literal, ")" "]" or object "}": an expression ended
	tHead                 // the ")" of an if/for/while/with head
	tBlock                // the "}" of a block
)

// binaryOps are the operators that make left-deep (or, for **, right-deep) binary chains.
var binaryOps = map[string]bool{
	"+": true, "-": true, "*": true, "/": true, "%": true, "**": true, "<<": true, ">>": true, ">>>": true,
	"<": true, ">": true, "<=": true, ">=": true, "==": true, "!=": true, "===": true, "!==": true,
	"&": true, "|": true, "^": true, "&&": true, "||": true, "??": true,
}

// punctuators, longest first.
var punctuators = []string{
	">>>=", "...", "===", "!==", "**=", "<<=", ">>=", ">>>", "&&=", "||=", "??=",
	"=>", "==", "!=", "<=", ">=", "&&", "||", "??", "?.", "++", "--", "+=", "-=", "*=", "/=", "%=",
	"&=", "|=", "^=", "**", "<<", ">>",
}

// checkSource refuses a source goja could not parse and compile within the process's stack and
// a bounded time, or returns nil.
func checkSource(src string) *sourceLimitError {
	if len(src) > maxSourceBytes {
		return &sourceLimitError{msg: sourceTooLarge(len(src)), off: 0}
	}
	sc := scanner{src: src, frames: []scanFrame{{}}}
	if err := sc.scan(); err != nil {
		return err
	}
	return sc.settle(len(src))
}

// unsure starts (or extends) an uncertain stretch at off; the frames open are no longer trusted.
func (sc *scanner) unsure(off int) {
	if !sc.uncertain {
		sc.uncertain, sc.uStart = true, off
	}
	sc.epoch++
}

// settle ends the uncertain stretch at end, counting what it held: every opening bracket byte
// into the bracket bound, every operator character and word into the uncertain tokens.
func (sc *scanner) settle(end int) *sourceLimitError {
	if !sc.uncertain {
		return nil
	}
	s := sc.src
	for i := sc.uStart; i < end; i++ {
		switch c := s[i]; {
		case c == '(' || c == '[' || c == '{':
			sc.brackets++
			sc.uTokens++
		case strings.IndexByte("!~+-*/%<>=&|^?:.,;)]}", c) >= 0:
			sc.uTokens++
		case isWordByte(c) && (i == sc.uStart || !isWordByte(s[i-1])):
			sc.uTokens++
		}
	}
	sc.uncertain = false
	sc.epoch++
	if sc.brackets > maxBracketBound {
		return &sourceLimitError{msg: sourceTooDeep(), off: sc.uStart}
	}
	if sc.uTokens > maxUncertainTokens {
		return &sourceLimitError{msg: sourceTooComplex(), off: sc.uStart}
	}
	return nil
}

// cleanSince reports whether src[from:to] holds nothing that could carry goja past a line break
// in a token: a template's backtick, a block comment's "/*", a backslash before a line break, and
// — if the source has a template before (templates) — a "}" that could end a substitution.
func cleanSince(s string, from, to int, templates bool) bool {
	for i := from; i < to; i++ {
		switch s[i] {
		case '`':
			return false
		case '}':
			if templates {
				return false
			}
		case '/':
			if i+1 < len(s) && s[i+1] == '*' {
				return false
			}
		case '\\':
			if i+1 < len(s) && (s[i+1] == '\n' || s[i+1] == '\r' || lineSep(s, i+1) > 0) {
				return false
			}
		}
	}
	return true
}

// lineSep is the length of a U+2028 or U+2029 (line terminators to goja) at i, or 0.
func lineSep(s string, i int) int {
	if i+2 < len(s) && s[i] == 0xe2 && s[i+1] == 0x80 && (s[i+2] == 0xa8 || s[i+2] == 0xa9) {
		return 3
	}
	return 0
}

// lineEnd is the length of a line terminator at i (\n, \r, U+2028, U+2029), or 0.
func lineEnd(s string, i int) int {
	if c := s[i]; c == '\n' || c == '\r' {
		return 1
	}
	return lineSep(s, i)
}

// spaceAt is the length of a non-ASCII white space character at i (goja skips unicode.IsSpace
// and U+FEFF between tokens), or 0. Line terminators are not spaces.
func spaceAt(s string, i int) int {
	if s[i] < utf8.RuneSelf || lineSep(s, i) > 0 {
		return 0
	}
	r, n := utf8.DecodeRuneInString(s[i:])
	if r == '\ufeff' || unicode.IsSpace(r) {
		return n
	}
	return 0
}

// wordEnd is the end of the word (identifier, keyword or number) at i.
func wordEnd(s string, i int) int {
	j := i
	for j < len(s) {
		c := s[j]
		switch {
		case c >= utf8.RuneSelf:
			if spaceAt(s, j) > 0 || lineSep(s, j) > 0 {
				return j
			}
			j++
		case isWordByte(c) || (c == '.' && j > i && s[i] >= '0' && s[i] <= '9'):
			j++
		default:
			return j
		}
	}
	return j
}

type scanner struct {
	src    string
	frames []scanFrame
	prev   scanTok
	word   string // the previous token when a keyword or identifier
	last   string // the previous token's text ("" at the start)
	dot    bool   // the previous token is "." or "?.": a property name follows
	decl   bool   // a function or class declaration's body is the next "{" of this kind
	class  bool   // a class's body is the next "{"
	// labelColon: the previous token is a label's or a case's ":" (a "{" after it is a block)
	labelColon bool
	work       int64
	nl         bool // a line break since the previous token

	// The conservative bound (Q17-23). Where goja and the scan could read a region differently
	// (a "/" that could be a division or a regular expression, a closer of a frame the scan may
	// have misread), the scan is uncertain from there to a line break at which both are certainly
	// in code (no backtick, "/*" or escaped line break since); while uncertain, every opening
	// bracket byte counts and no closer does, and every operator character and word is counted.
	kw         string // the previous token when a keyword used as one (not a property name)
	slashAmbig bool   // a "/" after the previous token could be either
	uncertain  bool
	uStart     int  // where the uncertain stretch began
	brackets   int  // the conservative bracket count
	uTokens    int  // operator characters and words of the uncertain stretches so far
	epoch      int  // incremented where the scan's frames may stop matching goja's
	fnPending  bool // after "function" (and its "*" and name): the next "(" opens parameters
	keyWord    bool // the previous word is a member's name in an object or class body
	// expect: the punctuators the next token must be (after if/for/… "(", after try/finally "{"):
	// goja's parser consumes any other token in its place and reads on, so that is uncertain
	expect string
}

func (sc *scanner) top() *scanFrame { return &sc.frames[len(sc.frames)-1] }

// nesting and chain are the depths at the current token.
func (sc *scanner) nesting() int {
	f := sc.top()
	return f.base + f.run + f.sticky
}

func (sc *scanner) chainDepth() int { f := sc.top(); return f.chainBase + f.chain }

// add counts one level of nesting (sticky: a statement prefix) or of a binary chain at off.
func (sc *scanner) add(off int, sticky, binary bool) *sourceLimitError {
	f := sc.top()
	switch {
	case binary:
		f.chain++
		if sc.chainDepth() > maxOperatorChain {
			return &sourceLimitError{msg: sourceChainTooLong(), off: off}
		}
		return nil
	case sticky:
		f.sticky++
	default:
		f.run++
	}
	if sc.nesting() > maxSourceNesting {
		return &sourceLimitError{msg: sourceTooDeep(), off: off}
	}
	return nil
}

// reset ends an expression (and, unless next continues the statement, its statement prefixes).
func (sc *scanner) reset(stmt bool, i int) {
	f := sc.top()
	f.run, f.chain, f.ternary = 0, 0, 0
	if stmt {
		f.declList = false
		if w := sc.peekWord(i); w != "else" && w != "while" {
			f.sticky, f.labels, f.caseColon = 0, 0, false
		}
	}
}

// peekWord is the word starting the next token after i (comments and spaces skipped).
func (sc *scanner) peekWord(i int) string {
	s := sc.src
	for i < len(s) {
		switch c := s[i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		case lineSep(s, i) > 0 || spaceAt(s, i) > 0:
			i += max(lineSep(s, i), spaceAt(s, i))
		case c == '/' && i+1 < len(s) && s[i+1] == '/':
			for i < len(s) && lineEnd(s, i) == 0 {
				i++
			}
		case c == '/' && i+1 < len(s) && s[i+1] == '*':
			if j := indexFrom(s, "*/", i+2); j >= 0 {
				i = j + 2
			} else {
				return ""
			}
		default:
			return s[i:wordEnd(s, i)]
		}
	}
	return ""
}

func indexFrom(s, sub string, i int) int {
	for j := i; j+len(sub) <= len(s); j++ {
		if s[j:j+len(sub)] == sub {
			return j
		}
	}
	return -1
}

func isWordByte(c byte) bool {
	return c == '_' || c == '$' || c == '\\' || c >= 0x80 || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

// push opens a bracket frame.
func (sc *scanner) push(open byte, object, head bool, off int) *sourceLimitError {
	f := sc.top()
	sc.frames = append(sc.frames, scanFrame{open: open, object: object, head: head, epoch: sc.epoch,
		base: f.base + f.run + f.sticky + 1, chainBase: f.chainBase + f.chain, labelBase: f.labelBase + f.labels})
	if !sc.uncertain { // an uncertain stretch's brackets are counted when it ends
		if sc.brackets++; sc.brackets > maxBracketBound {
			return &sourceLimitError{msg: sourceTooDeep(), off: off}
		}
	}
	if sc.nesting() > maxSourceNesting {
		return &sourceLimitError{msg: sourceTooDeep(), off: off}
	}
	return nil
}

// pop closes the innermost frame; a stray closer is left to the parser.
// A closer counts off the bracket bound only where the scan is certain it is code.
func (sc *scanner) pop() scanFrame {
	f := *sc.top()
	if len(sc.frames) > 1 {
		sc.frames = sc.frames[:len(sc.frames)-1]
	}
	if !sc.uncertain && sc.brackets > 0 {
		sc.brackets--
	}
	return f
}

// trusted reports whether the scan's reading of frame f matches goja's: opened in this epoch.
func (sc *scanner) trusted(f scanFrame) bool { return f.epoch == sc.epoch && !sc.uncertain }

// slashMisplaced reports whether a "/" here is where valid code has none: a property name goes
// here, or an object's or class's member, a parameter or a pattern's binding. goja's parser then
// consumes the "/" as an unexpected token and reads on as code: the reading is uncertain.
func (sc *scanner) slashMisplaced() bool {
	f, last := sc.top(), sc.last
	switch {
	case sc.dot:
		return true
	case f.object && sc.prev == tNone:
		return last == "{" || last == "," || last == ";"
	case f.params || f.pattern:
		return last == "(" || last == "[" || last == "{" || last == "," || last == ":" || last == "..."
	case f.declList && last == ",": // var a = 1, /x/: a binding goes there
		return true
	}
	return false
}

// regexAllowed reports whether a "/" here starts a regular expression.
func (sc *scanner) regexAllowed() bool {
	switch sc.prev {
	case tValue:
		return false
	case tNone:
		return true
	}
	return true // after a head's ")" or a block's "}" a statement starts
}

// valueWords are keywords that end an expression like an identifier.
var valueWords = map[string]bool{"this": true, "super": true, "null": true, "true": true, "false": true}

// ambiguousWords are the words after which goja may read a "/" either way: contextual keywords
// (an identifier or an operator by context) and keywords a parser's error recovery may skip.
var ambiguousWords = map[string]bool{
	"of": true, "yield": true, "await": true, "let": true, "async": true, "get": true, "set": true,
	"static": true, "break": true, "continue": true, "debugger": true, "function": true, "class": true,
	"try": true, "finally": true, "enum": true, "as": true, "from": true, "target": true, "meta": true,
}

// noSlashWords are keywords a "/" cannot follow in valid code: goja's parser, expecting "(", a
// binding or a declaration there, consumes the "/" as an unexpected token and reads on as code.
var noSlashWords = map[string]bool{
	"if": true, "for": true, "while": true, "with": true, "switch": true, "catch": true, "var": true,
	"const": true, "import": true, "export": true, "default": true,
}

// adjacentOK are the words that may follow a value on the same line in valid code.
var adjacentOK = map[string]bool{
	"in": true, "instanceof": true, "of": true, "from": true, "as": true, "extends": true,
	"else": true, "catch": true, "finally": true, "while": true, "get": true, "set": true,
	"static": true, "async": true,
}

// operatorWords are keywords after which an expression (or a regular expression) starts.
var operatorWords = map[string]bool{
	"return": true, "typeof": true, "instanceof": true, "in": true, "of": true, "new": true, "delete": true,
	"void": true, "throw": true, "case": true, "do": true, "else": true, "yield": true, "await": true,
	"extends": true, "if": true, "for": true, "while": true, "with": true, "switch": true, "catch": true,
	"let": false, "var": true, "const": true, "export": true, "import": true, "default": true,
}

func (sc *scanner) scan() *sourceLimitError {
	s := sc.src
	i := 0
	if strings.HasPrefix(s, "#!") {
		// a hashbang: a comment to goja where the source is what it parses (eval), code where
		// the source is wrapped first (a script, Function): uncertain either way
		sc.unsure(0)
	}
	for i < len(s) {
		c := s[i]
		if n := lineEnd(s, i); n > 0 {
			sc.nl = true
			if sc.uncertain && n == 1 && cleanSince(s, sc.uStart, i, indexFrom(s[:i], "`", 0) >= 0) {
				// goja too is in code here (a string, regular expression or line comment
				// ends at a line break; a template or block comment could not have begun)
				if err := sc.settle(i); err != nil {
					return err
				}
				sc.slashAmbig = true // the last token may be read differently
			}
			i += n
			continue
		}
		switch {
		case c == ' ' || c == '\t' || c == '\f' || c == '\v':
			i++
			continue
		case spaceAt(s, i) > 0:
			i += spaceAt(s, i)
			continue
		case c == '/' && i+1 < len(s) && s[i+1] == '/':
			for i < len(s) && lineEnd(s, i) == 0 {
				i++
			}
			continue
		case c == '/' && i+1 < len(s) && s[i+1] == '*':
			j := indexFrom(s, "*/", i+2)
			if j < 0 {
				return nil // unterminated: the parser's error
			}
			for k := i; k < j; k++ {
				if lineEnd(s, k) > 0 {
					sc.nl = true
				}
			}
			i = j + 2
			continue
		}
		startsValue := isWordByte(c) || c == '"' || c == '\''
		// a line break between an expression's end and a token that cannot continue it: ASI
		if sc.nl && sc.prev == tValue && startsValue {
			if w := sc.peekWord(i); w != "in" && w != "instanceof" {
				sc.reset(true, i)
			}
		}
		// two values on one line: invalid, and goja's error recovery skips a token, after
		// which it may read a "/" as a regular expression and a closer as another frame's
		// (after a "}" the scan cannot tell a block's end from an expression's: there only the
		// "/" after the word is uncertain, since a skipped word moves no bracket)
		adjacent := !sc.nl && sc.prev == tValue && startsValue && !adjacentOK[sc.peekWord(i)] &&
			!ambiguousWords[sc.word]
		if adjacent && sc.last != "}" {
			sc.unsure(i)
		}
		sc.nl = false
		switch {
		case sc.expect == "":
		case sc.last == "for" && sc.peekWord(i) == "await": // for await (…)
		default:
			if strings.IndexByte(sc.expect, c) < 0 {
				sc.unsure(i)
			}
			sc.expect = ""
		}
		sc.work += int64(sc.nesting() + sc.chainDepth())
		if sc.work > maxSourceWork {
			return &sourceLimitError{msg: sourceTooComplex(), off: i}
		}
		ambig := sc.slashAmbig
		sc.slashAmbig = false
		var err *sourceLimitError
		switch {
		case isWordByte(c):
			j := wordEnd(s, i)
			i, err = j, sc.wordToken(s[i:j], i)
		case c == '"' || c == '\'':
			i = skipString(s, i)
			sc.prev, sc.word, sc.kw, sc.last, sc.dot = tValue, "", "", "\"", false
		case c == '`':
			if sc.prev == tValue { // a tagged template: one more call in the chain
				if err = sc.add(i, false, false); err != nil {
					return err
				}
			}
			sc.kw = ""
			i, err = sc.templateText(i + 1)
		case c == '/' && (ambig || sc.slashMisplaced() || sc.regexAllowed()):
			ambig = ambig || sc.slashMisplaced()
			end, ok := sc.regexEnd(i)
			if ambig {
				sc.unsure(i)
			}
			if !ok { // no closing "/" on its line: goja reads a division
				sc.unsure(i)
				i, err = sc.punct(i)
				break
			}
			err = sc.regex(i, end)
			i = end
			sc.prev, sc.word, sc.kw, sc.last, sc.dot = tValue, "", "", "/", false
			// a "/" right after: were this a division to goja, that one starts a regex
			sc.slashAmbig = true
		default:
			i, err = sc.punct(i)
		}
		if err != nil {
			return err
		}
		if adjacent {
			sc.slashAmbig = true
		}
	}
	return nil
}

// wordToken handles an identifier, keyword or number.
func (sc *scanner) wordToken(w string, off int) *sourceLimitError {
	f := sc.top()
	defer func() { sc.word, sc.last, sc.labelColon = w, w, false }()
	sc.kw = ""
	last := sc.last
	sc.keyWord = f.object && (last == "{" || last == "," || last == ";" || last == "}" || last == "*" ||
		last == "#" || last == "get" || last == "set" || last == "static" || last == "async")
	if sc.fnPending && last != "function" && last != "*" {
		sc.fnPending = false
	}
	if sc.dot { // a property name, whatever its spelling (after ".", "?." or "#")
		sc.dot, sc.prev = false, tValue
		w = "."
		return nil
	}
	if ambiguousWords[w] || noSlashWords[w] {
		sc.slashAmbig = true
	}
	switch w {
	case "if", "for", "while", "with", "switch":
		if !sc.keyWord { // a member named so is no statement
			sc.expect = "("
		}
	case "catch":
		if !sc.keyWord {
			sc.expect = "({"
		}
	case "try", "finally":
		if !sc.keyWord {
			sc.expect = "{"
		}
	case "var", "let", "const":
		f.declList = true
	}
	switch w {
	case "function", "class":
		sc.fnPending = w == "function"
		sc.decl = sc.atStatementStart()
		sc.class = w == "class"
		sc.prev = tValue
		return nil
	case "if", "for", "while", "with", "do":
		sc.prev = tNone
		sc.kw = w
		return sc.add(off, true, false)
	case "case", "default":
		f.caseColon = true
		sc.prev = tNone
		return nil
	case "new", "typeof", "void", "delete", "await", "yield", "extends":
		if w == "await" && sc.last == "for" { // for await (…): the head follows
			sc.kw = "for"
		}
		sc.prev = tNone
		return sc.add(off, false, false)
	case "in", "instanceof":
		sc.prev = tNone
		return sc.add(off, false, true)
	}
	if valueWords[w] || !operatorWords[w] {
		sc.prev = tValue
	} else {
		sc.prev = tNone
	}
	return nil
}

// skipString returns the offset after the string literal at i (or at its unescaped line end),
// as goja reads one: \n and \r end it, U+2028 and U+2029 do not, and a backslash escapes the
// next character or line break (\r\n included).
func skipString(s string, i int) int {
	q := s[i]
	for i++; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if i+2 < len(s) && s[i+1] == '\r' && s[i+2] == '\n' {
				i++
			}
			i++
		case q, '\n', '\r':
			return i + 1
		}
	}
	return i
}

// templateText skips a template's text from i: to its closing backtick, or into a ${ frame.
func (sc *scanner) templateText(i int) (int, *sourceLimitError) {
	s := sc.src
	for ; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '`':
			sc.prev, sc.word, sc.kw = tValue, "", ""
			return i + 1, nil
		case '$':
			if i+1 < len(s) && s[i+1] == '{' {
				sc.prev, sc.word, sc.kw = tNone, "", ""
				return i + 2, sc.push('$', false, false, i)
			}
		}
	}
	return i, nil
}

// regexEnd finds the end of a regular expression literal at i as goja reads one: classes and
// escapes honoured, the flags after the closing "/"; ok is false when a line terminator (\n, \r,
// U+2028, U+2029) or the end of the source comes first — then it was not one.
func (sc *scanner) regexEnd(i int) (end int, ok bool) {
	s := sc.src
	inClass := false
	for i++; i < len(s); i++ {
		if lineEnd(s, i) > 0 {
			return i, false
		}
		switch s[i] {
		case '\\':
			if i+1 < len(s) && lineEnd(s, i+1) > 0 {
				return i, false
			}
			i++
		case '[':
			inClass = true
		case ']':
			inClass = false
		case '/':
			if !inClass {
				for i++; i < len(s) && isWordByte(s[i]) && spaceAt(s, i) == 0 && lineSep(s, i) == 0; i++ {
				}
				return i, true
			}
		}
	}
	return i, false
}

// regex counts a regular expression literal from i to end. Its brackets and operator
// characters count as if code, were it a division the scan took for a regular expression:
// the brackets and characters as nesting, the operator characters as a chain too.
func (sc *scanner) regex(i, end int) *sourceLimitError {
	s := sc.src
	depth, deepest, ops := 0, 0, 0
	for i++; i < end; i++ {
		switch s[i] {
		case '\\':
			i++
		case '[', '(', '{':
			depth++
		case '!', '~', '.', '?', '=', ',':
			depth++ // as an operator, were this a division
		case '+', '-', '<', '>', '&', '|', '^', '*', '%':
			depth++
			ops++
		}
		deepest = max(deepest, depth)
	}
	if sc.nesting()+deepest > maxSourceNesting {
		return &sourceLimitError{msg: sourceTooDeep(), off: end}
	}
	if ops > 0 {
		f := sc.top()
		f.chain += ops - 1
		return sc.add(end, false, true)
	}
	return nil
}

// punct handles a punctuator at i.
func (sc *scanner) punct(i int) (int, *sourceLimitError) {
	s := sc.src
	c := s[i]
	f := sc.top()
	prev, kw, last, labelColon, word := sc.prev, sc.kw, sc.last, sc.labelColon, sc.word
	keyWord, fnPending := sc.keyWord, sc.fnPending
	sc.word, sc.kw, sc.last, sc.dot, sc.labelColon, sc.keyWord = "", "", string(c), false, false, false
	if c != '*' {
		sc.fnPending = false
	}
	// a binding pattern: after a declaration's keyword, or where a parameter or an element of a
	// pattern goes
	pattern := (c == '[' || c == '{') && (word == "var" || word == "let" || word == "const" ||
		((f.params || f.pattern) && (last == "(" || last == "[" || last == "{" || last == "," || last == ":" || last == "...")))
	switch c {
	case '#': // a private name: the word after it is a property name, whatever its spelling
		sc.dot = true
		sc.prev = tNone
		return i + 1, nil
	case '(', '[':
		if prev == tValue { // a call or an index: one more link in the chain
			if err := sc.add(i, false, false); err != nil {
				return i, err
			}
		}
		head := c == '(' && (kw == "if" || kw == "for" || kw == "while" || kw == "with")
		// in an object or class body such a word names a method: which it is, is uncertain
		objHead := head && f.object
		sc.prev = tNone
		if err := sc.push(c, false, head && !objHead, i); err != nil {
			return i + 1, err
		}
		t := sc.top()
		t.objHead, t.pattern = objHead, pattern
		t.params = c == '(' && (fnPending || word == "catch" || (f.object && (keyWord || last == "]" || last == "\"")))
		return i + 1, nil
	case '{':
		var object, stmt bool
		switch {
		case sc.class: // a class body: no labels inside
			object, stmt, sc.class = true, sc.decl, false
		case prev == tValue: // a function's body (after its parameters' ")")
			stmt = sc.decl
		case prev == tNone && last != "" && !blockAfter[last] && !labelColon:
			object = true
		default: // a block statement
			stmt = true
		}
		sc.decl = false
		sc.prev = tNone
		if err := sc.push('{', object, false, i); err != nil {
			return i + 1, err
		}
		sc.top().stmt, sc.top().pattern = stmt, pattern
		return i + 1, nil
	case ')', ']', '}':
		trusted := sc.trusted(*f)
		if c == '}' && f.open == '$' {
			if !trusted { // goja may not be in a template here, or be in one the scan is not
				sc.unsure(i)
			}
			sc.pop()
			return sc.templateText(i + 1)
		}
		if c == '}' && !trusted {
			sc.unsure(i)
		}
		closed := sc.pop()
		// a "/" after a block's or object's "}", or after a closer of a frame the scan may
		// have misread, could be either
		sc.slashAmbig = c == '}' || !trusted || closed.objHead
		switch {
		case c == ')' && closed.head:
			sc.prev = tHead
		case c == '}' && closed.stmt:
			sc.prev = tBlock
			sc.reset(true, i+1)
		default:
			sc.prev = tValue
		}
		return i + 1, nil
	case ',', ';':
		sc.reset(c == ';', i+1)
		sc.prev = tNone
		return i + 1, nil
	case ':':
		sc.prev = tNone
		sc.labelColon = false
		switch {
		case f.ternary > 0:
			f.ternary--
			sc.last = "?:" // a conditional's, not a pattern's or an object's
		case f.object:
		case f.caseColon:
			f.caseColon = false
			sc.labelColon = true
		default: // a label
			sc.labelColon = true
			f.labels++
			if f.labelBase+f.labels > maxNestedLabels {
				return i + 1, &sourceLimitError{msg: sourceTooManyLabels(), off: i}
			}
			return i + 1, sc.add(i, true, false)
		}
		return i + 1, nil
	case '.':
		if i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9' { // a number like .5
			j := i + 1
			for j < len(s) && isWordByte(s[j]) {
				j++
			}
			sc.prev = tValue
			return j, nil
		}
	}
	op := string(c)
	for _, p := range punctuators {
		if len(p) <= len(s)-i && s[i:i+len(p)] == p {
			op = p
			break
		}
	}
	if op == "?." && i+2 < len(s) && s[i+2] >= '0' && s[i+2] <= '9' {
		op = "?" // a conditional before a number like .5
	}
	end := i + len(op)
	switch {
	case op == "++" || op == "--":
		if prev == tValue && !sc.nl {
			sc.prev = tValue // postfix
			return end, nil
		}
		sc.prev = tNone
		return end, sc.add(i, false, false)
	case op == "?":
		f.ternary++
	case binaryOps[op]:
		if prev == tValue || op == "**" {
			sc.prev = tNone
			return end, sc.add(i, false, true)
		}
		// a prefix + or -: one more level
	case op == "." || op == "?.":
		sc.prev, sc.dot = tNone, true
		return end, sc.add(i, false, false)
	}
	sc.prev = tNone
	sc.last = op
	return end, sc.add(i, false, false)
}

// blockAfter are the tokens after which a "{" opens a block, not an object literal.
var blockAfter = map[string]bool{";": true, "{": true, "}": true, "=>": true, ")": true, "else": true, "do": true, "try": true, "catch": true, "finally": true}

// atStatementStart reports whether a function or class keyword here starts a declaration.
func (sc *scanner) atStatementStart() bool {
	switch {
	case sc.last == "" || sc.prev == tHead || sc.prev == tBlock || sc.labelColon:
		return true
	case sc.prev == tNone:
		return blockAfter[sc.last] || sc.last == "export" || sc.last == "default"
	}
	return sc.nl // after a value, a line break: a new statement
}
