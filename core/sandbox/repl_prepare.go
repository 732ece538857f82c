package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/file"
	jstoken "github.com/dop251/goja/token"
	"github.com/dop251/goja/unistring"
)

// Agent-script preparation (spec 03 AS-01, AS-03, AS-05, SB-06). An agent script is prepared like
// a code state — wrapped as the body of an async function (top-level await, CS-23), harness
// imports stripped and foreign ones refused (CS-20, CS-21) — and then made REPL-shaped:
//
//   - Persistence (AS-03). Each top-level declaration of the source — var (wherever it sits in
//     the top-level scope), let, const, function and class, destructuring patterns included —
//     stays a binding of the wrapper, and the REPL's global object gets an accessor property of
//     the same name whose getter and setter read and write that binding. A later call therefore
//     sees the binding alive (a helper function, a counter it updates, a const that still refuses
//     assignment). The accessor is installed right after the declaring top-level statement ran
//     (function declarations: when the call starts, as they are hoisted), so a call that fails
//     before a declaration leaves the earlier value of that name in place.
//   - Completion value (AS-05). Every top-level expression statement stores its value in a slot
//     of the call; the program's result is the slot after the last statement ran, or the value of
//     a top-level return (which SB-06 allows in ptc contexts only).
//
// Both are AST rewrites made after the last parse, so no byte of the source moves; the export
// statements are parsed as part of the header on line 1 (before the body, like import bindings)
// and their nodes moved to where they run.

// evalFile is the file name positions of an archmax_eval source carry (it has no file).
const evalFile = "<eval>"

// evalSourceName is the name an archmax_eval program is compiled under: unique per source, so a
// stack frame of a helper an earlier call defined is never mapped through the current call's
// layout. Stack traces a script prints show it ("<eval:1a2b3c4d>:3:9").
func evalSourceName(src string) string {
	sum := sha256.Sum256([]byte(src))
	return "<eval:" + hex.EncodeToString(sum[:4]) + ">"
}

// Names whose export the header could not write in every mode; such bindings stay local to
// their call. eval and arguments cannot be assigned in strict code; the others are identifiers
// only in sloppy code.
var unexportable = map[string]bool{
	"eval": true, "arguments": true, "let": true, "yield": true, "await": true, "static": true,
	"implements": true, "interface": true, "package": true, "private": true, "protected": true, "public": true,
}

// replPlan records what planREPL added to the header, so apply can find the nodes again.
type replPlan struct {
	users   int   // top-level statements of the source itself (the last users of the body)
	funcs   int   // export statements of function declarations, run first
	groups  []int // per source statement: the number of export statements that follow it
	exports int   // all export statements (they directly precede the source's statements)
	relayed bool  // the header changed: the wrapper must be laid out and parsed again
}

func (p *replPlan) changesLayout() bool { return p != nil && p.relayed }

// planREPL finds the top-level declarations of the parsed wrapper fn and writes the statements
// exporting them into rw.exports; it also moves a "use strict" directive of the source in front
// of the header, where it stays a directive.
func (rw *rewriter) planREPL(fn *ast.FunctionLiteral, lay layout, base int) *replPlan {
	var user []ast.Statement
	for i, st := range fn.Body.List {
		if int(st.Idx1())-base > lay.bodyStart { // header statements end before the body
			user = fn.Body.List[i:]
			break
		}
	}
	plan := &replPlan{users: len(user), groups: make([]int, len(user))}
	if !rw.module && hasStrictDirective(user) {
		rw.strict, plan.relayed = true, true
	}
	groups := make([][]string, len(user))
	var funcs []string
	for i, st := range user {
		switch st := st.(type) {
		case *ast.FunctionDeclaration:
			if st.Function.Name != nil {
				funcs = append(funcs, st.Function.Name.Name.String())
			}
		case *ast.ClassDeclaration:
			if st.Class.Name != nil {
				groups[i] = append(groups[i], st.Class.Name.Name.String())
			}
		case *ast.LexicalDeclaration:
			for _, b := range st.List {
				boundNames(b.Target, func(name string) { groups[i] = append(groups[i], name) })
			}
		}
	}
	for _, d := range fn.DeclarationList { // every var of the top-level scope, nested ones too
		i := statementAt(user, int(d.Var))
		if i < 0 {
			continue
		}
		for _, b := range d.List {
			boundNames(b.Target, func(name string) { groups[i] = append(groups[i], name) })
		}
	}
	add := func(names []string) int {
		n := 0
		seen := make(map[string]bool, len(names))
		for _, name := range names {
			if seen[name] || unexportable[name] || name == csName {
				continue
			}
			seen[name] = true
			rw.exports = append(rw.exports, exportStatement(name))
			n++
		}
		return n
	}
	plan.funcs = add(funcs)
	plan.exports = plan.funcs
	for i, names := range groups {
		plan.groups[i] = add(names)
		plan.exports += plan.groups[i]
	}
	if plan.exports > 0 {
		plan.relayed = true
	}
	return plan
}

// exportStatement installs the REPL accessor of one top-level binding (__cs.x is replRuntime's
// export function).
func exportStatement(name string) string {
	quoted, _ := json.Marshal(name)
	return csName + ".x(" + string(quoted) + ",()=>" + name + ",(v)=>{" + name + "=v});"
}

// hasStrictDirective reports a "use strict" directive in the source's own directive prologue.
func hasStrictDirective(list []ast.Statement) bool {
	for _, st := range list {
		es, ok := st.(*ast.ExpressionStatement)
		if !ok {
			return false
		}
		lit, ok := es.Expression.(*ast.StringLiteral)
		if !ok {
			return false
		}
		if lit.Literal == `"use strict"` || lit.Literal == `'use strict'` {
			return true
		}
	}
	return false
}

// statementAt returns the index of the statement of list that contains the code index idx, -1
// when none does.
func statementAt(list []ast.Statement, idx int) int {
	for i, st := range list {
		if idx < int(st.Idx1()) {
			return i
		}
	}
	return -1
}

// boundNames calls add with every name a binding target declares (identifiers and the leaves of
// object and array patterns, defaults and rest elements included).
func boundNames(target ast.Expression, add func(string)) {
	switch t := target.(type) {
	case *ast.Identifier:
		add(t.Name.String())
	case *ast.ArrayPattern:
		for _, e := range t.Elements {
			if e != nil {
				boundNames(e, add)
			}
		}
		if t.Rest != nil {
			boundNames(t.Rest, add)
		}
	case *ast.ObjectPattern:
		for _, p := range t.Properties {
			switch p := p.(type) {
			case *ast.PropertyShort:
				add(p.Name.Name.String())
			case *ast.PropertyKeyed:
				boundNames(p.Value, add)
			}
		}
		if t.Rest != nil {
			boundNames(t.Rest, add)
		}
	case *ast.AssignExpression: // a target with a default value
		boundNames(t.Left, add)
	}
}

// apply rewrites the final parse (whose header holds the export statements planREPL wrote): the
// exports of function declarations run first, every other export right after its declaring
// statement, every top-level expression statement stores its value in __cs.v, and the body ends
// by returning __cs.v.
func (p *replPlan) apply(prg *ast.Program) {
	fn, _ := wrapperFunction(prg)
	list := fn.Body.List
	n := len(list)
	user := list[n-p.users:]
	exports := list[n-p.users-p.exports : n-p.users]
	out := make([]ast.Statement, 0, n+1)
	out = append(out, list[:n-p.users-p.exports]...)
	out = append(out, exports[:p.funcs]...)
	k := p.funcs
	for i, st := range user {
		if es, ok := st.(*ast.ExpressionStatement); ok {
			es.Expression = &ast.AssignExpression{Operator: jstoken.ASSIGN, Left: completionSlot(es.Expression.Idx0()), Right: es.Expression}
		}
		out = append(out, st)
		out = append(out, exports[k:k+p.groups[i]]...)
		k += p.groups[i]
	}
	out = append(out, &ast.ReturnStatement{Return: fn.Body.RightBrace, Argument: completionSlot(fn.Body.RightBrace)})
	fn.Body.List = out
}

// completionSlot is the expression __cs.v, positioned at idx.
func completionSlot(idx file.Idx) *ast.DotExpression {
	return &ast.DotExpression{
		Left:       &ast.Identifier{Name: unistring.String(csName), Idx: idx},
		Identifier: ast.Identifier{Name: "v", Idx: idx},
	}
}
