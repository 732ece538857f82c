package sandbox

import (
	"reflect"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dop251/goja/ast"
)

// lexer tokenises just enough of one import/export statement for the rewrite: identifiers,
// string literals and single punctuators, skipping whitespace and comments.
type lexer struct {
	b   []byte
	pos int
}

type tokenKind uint8

const (
	tokEOF tokenKind = iota
	tokIdent
	tokString
	tokPunct
)

type token struct {
	kind       tokenKind
	text       string // identifier name, decoded string value, or the punctuator
	raw        string // the token as written
	start, end int
	newline    bool // a line terminator precedes the token
}

func (t token) is(punct string) bool     { return t.kind == tokPunct && t.text == punct }
func (t token) isIdent(name string) bool { return t.kind == tokIdent && t.text == name }

func (l *lexer) next() token {
	newline := l.skipSpace()
	t := token{start: l.pos, newline: newline}
	if l.pos >= len(l.b) {
		t.end = l.pos
		return t
	}
	r, size := utf8.DecodeRune(l.b[l.pos:])
	switch {
	case r == '"' || r == '\'':
		t.kind = tokString
		t.text, t.end = l.scanString(byte(r))
	case isIdentStart(r):
		end := l.pos + size
		for end < len(l.b) {
			r, n := utf8.DecodeRune(l.b[end:])
			if !isIdentPart(r) {
				break
			}
			end += n
		}
		t.kind, t.text, t.end = tokIdent, string(l.b[l.pos:end]), end
	default:
		t.kind, t.text, t.end = tokPunct, string(r), l.pos+size
	}
	t.raw = string(l.b[t.start:t.end])
	l.pos = t.end
	return t
}

// skipSpace skips whitespace and comments and reports whether a line terminator was crossed.
func (l *lexer) skipSpace() (newline bool) {
	for l.pos < len(l.b) {
		rest := l.b[l.pos:]
		switch {
		case rest[0] == '\n' || rest[0] == '\r':
			newline = true
			l.pos++
		case rest[0] == '/' && len(rest) > 1 && rest[1] == '/':
			for l.pos < len(l.b) && l.b[l.pos] != '\n' && l.b[l.pos] != '\r' {
				l.pos++
			}
		case rest[0] == '/' && len(rest) > 1 && rest[1] == '*':
			end := strings.Index(string(rest[2:]), "*/")
			if end < 0 {
				l.pos = len(l.b)
				return newline
			}
			comment := string(rest[:end+4])
			newline = newline || strings.ContainsAny(comment, "\n\r\u2028\u2029")
			l.pos += len(comment)
		default:
			r, size := utf8.DecodeRune(rest)
			switch {
			case r == '\u2028' || r == '\u2029':
				newline = true
			case r != '\uFEFF' && !unicode.IsSpace(r):
				return newline
			}
			l.pos += size
		}
	}
	return newline
}

// scanString reads a quoted literal at l.pos; escapes are decoded as the escaped character,
// enough for module specifiers and export names.
func (l *lexer) scanString(quote byte) (string, int) {
	var b strings.Builder
	for i := l.pos + 1; i < len(l.b); i++ {
		switch c := l.b[i]; c {
		case '\\':
			if i+1 < len(l.b) {
				i++
				b.WriteByte(l.b[i])
			}
		case quote:
			return b.String(), i + 1
		case '\n', '\r':
			return b.String(), i
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), len(l.b)
}

func isIdentStart(r rune) bool {
	return r == '$' || r == '_' || unicode.IsLetter(r)
}

func isIdentPart(r rune) bool {
	return isIdentStart(r) || unicode.IsDigit(r) || r == '\u200C' || r == '\u200D' ||
		unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Mc, r) || unicode.Is(unicode.Pc, r)
}

// inspectBody visits every AST node under body (goja/ast has no walker), reporting whether the
// node sits inside a nested function or class. DeclarationList fields are skipped: they repeat
// declarations that the statement lists already hold.
func inspectBody(body *ast.BlockStatement, visit func(n ast.Node, inFunc bool)) {
	inspectValue(reflect.ValueOf(body), false, visit)
}

var (
	astPkg  = reflect.TypeFor[ast.Program]().PkgPath()
	nodeTyp = reflect.TypeFor[ast.Node]()
)

// inspectValue walks the tree under v in preorder (each node before its fields, fields and
// elements in order) with an explicit stack, not Go recursion: a deep tree costs heap, not the
// goroutine's stack (whose overflow is fatal).
func inspectValue(v reflect.Value, inFunc bool, visit func(ast.Node, bool)) {
	type item struct {
		v      reflect.Value
		inFunc bool
	}
	stack := []item{{v, inFunc}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		v, inFunc := it.v, it.inFunc
		switch v.Kind() {
		case reflect.Interface:
			if !v.IsNil() {
				stack = append(stack, item{v.Elem(), inFunc})
			}
		case reflect.Pointer:
			if v.IsNil() || v.Type().Elem().PkgPath() != astPkg {
				continue
			}
			if v.Type().Implements(nodeTyp) {
				n := v.Interface().(ast.Node)
				visit(n, inFunc)
				switch n.(type) {
				case *ast.FunctionLiteral, *ast.ArrowFunctionLiteral, *ast.ClassLiteral:
					inFunc = true
				}
			}
			stack = append(stack, item{v.Elem(), inFunc})
		case reflect.Struct:
			if v.Type().PkgPath() != astPkg {
				continue
			}
			for i := v.NumField() - 1; i >= 0; i-- { // pushed last to first: popped in order
				if v.Type().Field(i).Name != "DeclarationList" {
					stack = append(stack, item{v.Field(i), inFunc})
				}
			}
		case reflect.Slice:
			for i := v.Len() - 1; i >= 0; i-- {
				stack = append(stack, item{v.Index(i), inFunc})
			}
		}
	}
}
