package sandbox

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
	return sc.scan()
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
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '/' && i+1 < len(s) && s[i+1] == '/':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(s) && s[i+1] == '*':
			if j := indexFrom(s, "*/", i+2); j >= 0 {
				i = j + 2
			} else {
				return ""
			}
		default:
			j := i
			for j < len(s) && isWordByte(s[j]) {
				j++
			}
			return s[i:j]
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
	sc.frames = append(sc.frames, scanFrame{open: open, object: object, head: head,
		base: f.base + f.run + f.sticky + 1, chainBase: f.chainBase + f.chain, labelBase: f.labelBase + f.labels})
	if sc.nesting() > maxSourceNesting {
		return &sourceLimitError{msg: sourceTooDeep(), off: off}
	}
	return nil
}

// pop closes the innermost frame; a stray closer is left to the parser.
func (sc *scanner) pop() scanFrame {
	f := *sc.top()
	if len(sc.frames) > 1 {
		sc.frames = sc.frames[:len(sc.frames)-1]
	}
	return f
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

// operatorWords are keywords after which an expression (or a regular expression) starts.
var operatorWords = map[string]bool{
	"return": true, "typeof": true, "instanceof": true, "in": true, "of": true, "new": true, "delete": true,
	"void": true, "throw": true, "case": true, "do": true, "else": true, "yield": true, "await": true,
	"extends": true, "if": true, "for": true, "while": true, "with": true, "switch": true, "catch": true,
	"let": false, "var": true, "const": true, "export": true, "import": true, "default": true,
}

func (sc *scanner) scan() *sourceLimitError {
	s := sc.src
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\n' || c == '\r':
			sc.nl = true
			i++
			continue
		case c == ' ' || c == '\t' || c == '\f' || c == '\v':
			i++
			continue
		case c == '/' && i+1 < len(s) && s[i+1] == '/':
			for i < len(s) && s[i] != '\n' && s[i] != '\r' {
				i++
			}
			continue
		case c == '/' && i+1 < len(s) && s[i+1] == '*':
			j := indexFrom(s, "*/", i+2)
			if j < 0 {
				return nil // unterminated: the parser's error
			}
			for k := i; k < j; k++ {
				if s[k] == '\n' || s[k] == '\r' {
					sc.nl = true
				}
			}
			i = j + 2
			continue
		}
		// a line break between an expression's end and a token that cannot continue it: ASI
		if sc.nl && sc.prev == tValue && (isWordByte(c) || c == '"' || c == '\'') {
			if w := sc.peekWord(i); w != "in" && w != "instanceof" {
				sc.reset(true, i)
			}
		}
		sc.nl = false
		sc.work += int64(sc.nesting() + sc.chainDepth())
		if sc.work > maxSourceWork {
			return &sourceLimitError{msg: sourceTooComplex(), off: i}
		}
		var err *sourceLimitError
		switch {
		case isWordByte(c):
			j := i
			for j < len(s) && (isWordByte(s[j]) || (s[j] == '.' && j > i && s[i] >= '0' && s[i] <= '9')) {
				j++
			}
			i, err = j, sc.wordToken(s[i:j], i)
		case c == '"' || c == '\'':
			i = skipString(s, i)
			sc.prev, sc.word, sc.last, sc.dot = tValue, "", "\"", false
		case c == '`':
			if sc.prev == tValue { // a tagged template: one more call in the chain
				if err = sc.add(i, false, false); err != nil {
					return err
				}
			}
			i, err = sc.templateText(i + 1)
		case c == '/' && sc.regexAllowed():
			i, err = sc.regex(i)
			sc.prev, sc.word = tValue, ""
		default:
			i, err = sc.punct(i)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// wordToken handles an identifier, keyword or number.
func (sc *scanner) wordToken(w string, off int) *sourceLimitError {
	f := sc.top()
	defer func() { sc.word, sc.last, sc.labelColon = w, w, false }()
	if sc.dot { // a property name, whatever its spelling
		sc.dot, sc.prev = false, tValue
		return nil
	}
	switch w {
	case "function", "class":
		sc.decl = sc.atStatementStart()
		sc.class = w == "class"
		sc.prev = tValue
		return nil
	case "if", "for", "while", "with", "do":
		sc.prev = tNone
		return sc.add(off, true, false)
	case "case", "default":
		f.caseColon = true
		sc.prev = tNone
		return nil
	case "new", "typeof", "void", "delete", "await", "yield", "extends":
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

// skipString returns the offset after the string literal at i (or at its unescaped line end).
func skipString(s string, i int) int {
	q := s[i]
	for i++; i < len(s); i++ {
		switch s[i] {
		case '\\':
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
			sc.prev, sc.word = tValue, ""
			return i + 1, nil
		case '$':
			if i+1 < len(s) && s[i+1] == '{' {
				sc.prev, sc.word = tNone, ""
				return i + 2, sc.push('$', false, false, i)
			}
		}
	}
	return i, nil
}

// regex skips a regular expression literal at i (classes and escapes honoured, ending at its
// line). Its brackets count as nesting: if the scan took a division for a regular expression,
// what it skipped could not hide a deep tree.
func (sc *scanner) regex(i int) (int, *sourceLimitError) {
	s := sc.src
	inClass, depth, deepest := false, 0, 0
	start := i
	for i++; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '[':
			inClass = true
			depth++
		case ']':
			inClass = false
		case '(', '{':
			depth++
		case '!', '~', '+', '-', '.', '?', '=', '<', '>', '&', '|', '^', '*', '%', ',':
			depth++ // as an operator, were this a division
		case '\n', '\r':
			return i, nil
		case '/':
			if !inClass {
				for i++; i < len(s) && isWordByte(s[i]); i++ {
				}
				if sc.nesting()+deepest > maxSourceNesting {
					return i, &sourceLimitError{msg: sourceTooDeep(), off: start}
				}
				return i, nil
			}
		}
		deepest = max(deepest, depth)
	}
	return i, nil
}

// punct handles a punctuator at i.
func (sc *scanner) punct(i int) (int, *sourceLimitError) {
	s := sc.src
	c := s[i]
	f := sc.top()
	prev, word, last, labelColon := sc.prev, sc.word, sc.last, sc.labelColon
	sc.word, sc.last, sc.dot, sc.labelColon = "", string(c), false, false
	switch c {
	case '(', '[':
		if prev == tValue { // a call or an index: one more link in the chain
			if err := sc.add(i, false, false); err != nil {
				return i, err
			}
		}
		head := c == '(' && (word == "if" || word == "for" || word == "while" || word == "with")
		sc.prev = tNone
		return i + 1, sc.push(c, false, head, i)
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
		sc.top().stmt = stmt
		return i + 1, nil
	case ')', ']', '}':
		if c == '}' && f.open == '$' {
			sc.pop()
			return sc.templateText(i + 1)
		}
		closed := sc.pop()
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
var blockAfter = map[string]bool{";": true, "{": true, "}": true, "=>": true, ")": true, "else": true, "do": true, "try": true, "finally": true}

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
