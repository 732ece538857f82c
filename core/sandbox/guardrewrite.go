package sandbox

import (
	"reflect"

	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/file"
	jstoken "github.com/dop251/goja/token"
	"github.com/dop251/goja/unistring"
)

// The guard rewrite (CS-61; goja.md §4–§5). Some natives that no interrupt reaches are not
// builtins a prelude can wrap but syntax: a spread iterates its operand to the end natively, and
// the BigInt operators *, ** and << compute their result in one native step however large it is.
// After the last parse, every such node of a prepared program — and of code made at run time
// through eval or the Function constructors — is rewritten into a call of a guard helper that
// checks the operand first and then does what the syntax did:
//
//	f(...x), new F(...x), super(...x)   ...__cs.a(x)      at most maxArguments arguments
//	[...x]                              ...__cs.s(x)      at most maxElements elements
//	{...x}                              ...__cs.o(x)      at most maxElements properties
//	a * b, a ** b, a << b               __cs.m(a, b), __cs.p(a, b), __cs.l(a, b)   BigInt results of at most maxBigIntBits
//	x *= y (**=, <<=)                   x = __cs.m(x, y); members through a one-off arrow
//	o.exec(...)                         __cs.e(o, ...)    a timed-out match throws (regexMatchTimeout)
//
// Nodes keep the positions of the code they replace, so stack frames and errors point at the
// source. __cs is the wrapper's parameter (its prototype holds the helpers) or, in dynamic code,
// a global holding the same frozen helpers; scripts may not name it (reservedName) and may not
// use `with`, which could shadow it.

// Helper names on __cs.
const (
	helperSpreadArgs   = "a"
	helperSpreadArray  = "s"
	helperSpreadObject = "o"
	helperMul          = "m"
	helperPow          = "p"
	helperShl          = "l"
	helperExec         = "e"
)

// binaryHelpers maps the operators whose BigInt result the guards bound to their helper.
var binaryHelpers = map[jstoken.Token]string{
	jstoken.MULTIPLY:   helperMul,
	jstoken.EXPONENT:   helperPow,
	jstoken.SHIFT_LEFT: helperShl,
}

// guardRewrite rewrites the program in place (see above) and reports whether it defines a
// generator function (guards.coverGenerators must then run before it).
func guardRewrite(prg *ast.Program) (generators bool) {
	rewriteNode(reflect.ValueOf(prg), &generators)
	return generators
}

// rewriteNode walks v (a node pointer, an interface, a slice or a struct of the ast package)
// children first, replacing every expression transform returns anew.
func rewriteNode(v reflect.Value, generators *bool) {
	switch v.Kind() {
	case reflect.Interface:
		if !v.IsNil() {
			rewriteNode(v.Elem(), generators)
		}
	case reflect.Pointer:
		if v.IsNil() || v.Type().Elem().PkgPath() != astPkg {
			return
		}
		if fn, ok := v.Interface().(*ast.FunctionLiteral); ok && fn.Generator {
			*generators = true
		}
		rewriteNode(v.Elem(), generators)
	case reflect.Struct:
		if v.Type().PkgPath() != astPkg {
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).Name == "DeclarationList" {
				continue // the var declarations again (visited in the body)
			}
			rewriteField(v.Field(i), generators)
		}
	case reflect.Slice:
		for i := range v.Len() {
			rewriteField(v.Index(i), generators)
		}
	}
}

// rewriteField rewrites one settable field or slice element.
func rewriteField(f reflect.Value, generators *bool) {
	rewriteNode(f, generators)
	if f.Kind() != reflect.Interface || f.IsNil() || !f.CanSet() {
		return
	}
	e, ok := f.Interface().(ast.Expression)
	if !ok {
		return
	}
	if n := transform(e); n != e && reflect.TypeOf(n).AssignableTo(f.Type()) {
		f.Set(reflect.ValueOf(n))
	}
}

// transform returns the guarded form of e (e itself when it needs none), its children already
// rewritten.
func transform(e ast.Expression) ast.Expression {
	switch n := e.(type) {
	case *ast.BinaryExpression:
		if h, ok := binaryHelpers[n.Operator]; ok {
			return helperCall(h, n.Left.Idx0(), n.Left, n.Right)
		}
	case *ast.AssignExpression:
		if h, ok := binaryHelpers[n.Operator]; ok {
			return compoundAssignment(h, n)
		}
	case *ast.CallExpression:
		guardSpreads(n.ArgumentList, helperSpreadArgs)
		if dot, ok := n.Callee.(*ast.DotExpression); ok && dot.Identifier.Name == "exec" {
			if _, super := dot.Left.(*ast.SuperExpression); !super {
				args := append([]ast.Expression{dot.Left}, n.ArgumentList...)
				return &ast.CallExpression{Callee: helperRef(helperExec, dot.Identifier.Idx), LeftParenthesis: n.LeftParenthesis,
					ArgumentList: args, RightParenthesis: n.RightParenthesis}
			}
		}
	case *ast.NewExpression:
		guardSpreads(n.ArgumentList, helperSpreadArgs)
	case *ast.ArrayLiteral:
		guardSpreads(n.Value, helperSpreadArray)
	case *ast.ObjectLiteral:
		for _, p := range n.Value {
			if sp, ok := p.(*ast.SpreadElement); ok {
				sp.Expression = helperCall(helperSpreadObject, sp.Idx0(), sp.Expression)
			}
		}
	}
	return e
}

// guardSpreads wraps the operand of every spread element of list in the helper.
func guardSpreads(list []ast.Expression, helper string) {
	for _, a := range list {
		if sp, ok := a.(*ast.SpreadElement); ok {
			sp.Expression = helperCall(helper, sp.Idx0(), sp.Expression)
		}
	}
}

// compoundAssignment rewrites `target op= value` into a plain assignment of the helper's
// result. The target's object and key are evaluated once: an identifier or a super property
// is assigned directly; any other member goes through a one-off arrow (inside a class body it
// may name the class's private fields), which evaluates the value before reading the member —
// the one difference from the native order, visible only to a value expression that changes
// the member it is combined with.
func compoundAssignment(h string, n *ast.AssignExpression) ast.Expression {
	idx := n.Left.Idx0()
	assign := func(target, read ast.Expression, value ast.Expression) ast.Expression {
		return &ast.AssignExpression{Operator: jstoken.ASSIGN, Left: target, Right: helperCall(h, idx, read, value)}
	}
	switch t := n.Left.(type) {
	case *ast.Identifier:
		return assign(t, &ast.Identifier{Name: t.Name, Idx: t.Idx}, n.Right)
	case *ast.DotExpression:
		if _, super := t.Left.(*ast.SuperExpression); super {
			return assign(t, &ast.DotExpression{Left: t.Left, Identifier: t.Identifier}, n.Right)
		}
		o, v := param("o", idx), param("v", idx)
		member := func() ast.Expression { return &ast.DotExpression{Left: ident("o", idx), Identifier: t.Identifier} }
		return arrowCall(idx, []*ast.Identifier{o, v}, assign(member(), member(), ident("v", idx)), t.Left, n.Right)
	case *ast.PrivateDotExpression:
		o, v := param("o", idx), param("v", idx)
		member := func() ast.Expression {
			return &ast.PrivateDotExpression{Left: ident("o", idx), Identifier: t.Identifier}
		}
		return arrowCall(idx, []*ast.Identifier{o, v}, assign(member(), member(), ident("v", idx)), t.Left, n.Right)
	case *ast.BracketExpression:
		if _, super := t.Left.(*ast.SuperExpression); super {
			return assign(t, &ast.BracketExpression{Left: t.Left, Member: t.Member, LeftBracket: t.LeftBracket, RightBracket: t.RightBracket}, n.Right)
		}
		o, k, v := param("o", idx), param("k", idx), param("v", idx)
		member := func() ast.Expression {
			return &ast.BracketExpression{Left: ident("o", idx), Member: ident("k", idx), LeftBracket: t.LeftBracket, RightBracket: t.RightBracket}
		}
		return arrowCall(idx, []*ast.Identifier{o, k, v}, assign(member(), member(), ident("v", idx)), t.Left, t.Member, n.Right)
	}
	return n
}

// helperCall is __cs.<h>(args…), positioned at idx.
func helperCall(h string, idx file.Idx, args ...ast.Expression) *ast.CallExpression {
	return &ast.CallExpression{Callee: helperRef(h, idx), LeftParenthesis: idx, ArgumentList: args, RightParenthesis: idx}
}

func helperRef(h string, idx file.Idx) *ast.DotExpression {
	return &ast.DotExpression{Left: ident(csName, idx), Identifier: ast.Identifier{Name: unistring.String(h), Idx: idx}}
}

func ident(name string, idx file.Idx) *ast.Identifier {
	return &ast.Identifier{Name: unistring.String(name), Idx: idx}
}

func param(name string, idx file.Idx) *ast.Identifier { return ident(name, idx) }

// arrowCall is ((params…) => body)(args…).
func arrowCall(idx file.Idx, params []*ast.Identifier, body ast.Expression, args ...ast.Expression) *ast.CallExpression {
	list := make([]*ast.Binding, len(params))
	for i, p := range params {
		list[i] = &ast.Binding{Target: p}
	}
	fn := &ast.ArrowFunctionLiteral{Start: idx, ParameterList: &ast.ParameterList{Opening: idx, List: list, Closing: idx},
		Body: &ast.ExpressionBody{Expression: body}}
	return &ast.CallExpression{Callee: fn, LeftParenthesis: idx, ArgumentList: args, RightParenthesis: idx}
}
