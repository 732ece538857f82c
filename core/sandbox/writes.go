package sandbox

import (
	"errors"
	"reflect"
	"slices"

	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/parser"
)

// VariableWrites is what a code-state script's source says, statically, about the variables
// it writes (for `archmax validate`'s guard.unlocked-reference): the names its literal
// archmax_set_variables calls write with `lock: true` (Locked) and without it (Unlocked),
// each sorted and listed once. A literal call is `<anything>.archmax_set_variables({ variables:
// { name: …, "name": …, name }, lock: true|false })` (or the tool by a string-literal member);
// the names of any other call — a variables object that is not a literal, a computed or
// spread key, a lock that is not a boolean literal (its names count as Unlocked), the tool
// taken as a value or destructured — are not seen. Whether a call runs, and on which path, is
// not known: the scan reads the source, it does not run it.
type VariableWrites struct {
	Locked, Unlocked []string
}

// ScanVariableWrites reads the literal archmax_set_variables calls of a code-state script
// prepared as Prepare prepares it; the error is Prepare's (the script would not run).
func ScanVariableWrites(file string, src []byte) (VariableWrites, error) {
	if err := Prepare(file, src); err != nil {
		return VariableWrites{}, err
	}
	prg, err := parseCodeState(file, string(src))
	if err != nil {
		return VariableWrites{}, err
	}
	var w VariableWrites
	inspectValue(reflect.ValueOf(prg), false, func(n ast.Node, _ bool) {
		call, ok := n.(*ast.CallExpression)
		if !ok || !namesSetVariables(call.Callee) || len(call.ArgumentList) == 0 {
			return
		}
		arg, ok := call.ArgumentList[0].(*ast.ObjectLiteral)
		if !ok {
			return
		}
		var names []string
		lock := false
		for _, p := range arg.Value {
			kp, ok := p.(*ast.PropertyKeyed)
			if !ok || kp.Computed {
				continue
			}
			switch literalKey(kp.Key) {
			case "variables":
				if vars, ok := kp.Value.(*ast.ObjectLiteral); ok {
					names = append(names, literalNames(vars)...)
				}
			case "lock":
				b, ok := kp.Value.(*ast.BooleanLiteral)
				lock = ok && b.Value
			}
		}
		if lock {
			w.Locked = append(w.Locked, names...)
		} else {
			w.Unlocked = append(w.Unlocked, names...)
		}
	})
	slices.Sort(w.Locked)
	slices.Sort(w.Unlocked)
	w.Locked, w.Unlocked = slices.Compact(w.Locked), slices.Compact(w.Unlocked)
	return w, nil
}

// namesSetVariables reports whether a callee is <x>.archmax_set_variables or
// <x>["archmax_set_variables"].
func namesSetVariables(e ast.Expression) bool {
	const tool = "archmax_set_variables"
	switch e := e.(type) {
	case *ast.DotExpression:
		return e.Identifier.Name.String() == tool
	case *ast.BracketExpression:
		s, ok := e.Member.(*ast.StringLiteral)
		return ok && s.Value.String() == tool
	}
	return false
}

// literalKey is the name of a non-computed property key ("" for any other key).
func literalKey(e ast.Expression) string {
	switch k := e.(type) {
	case *ast.StringLiteral:
		return k.Value.String()
	case *ast.Identifier:
		return k.Name.String()
	}
	return ""
}

// literalNames are the literal keys of an object literal (keyed or shorthand).
func literalNames(o *ast.ObjectLiteral) []string {
	var out []string
	for _, p := range o.Value {
		switch p := p.(type) {
		case *ast.PropertyKeyed:
			if k := literalKey(p.Key); k != "" && !p.Computed {
				out = append(out, k)
			}
		case *ast.PropertyShort:
			out = append(out, p.Name.Name.String())
		}
	}
	return out
}

// parseCodeState is prepareKind's parse for a code state, stopping at the syntax tree: the
// module statements are rewritten in place until the source parses (see prepare.go).
func parseCodeState(file, src string) (*ast.Program, error) {
	rw := &rewriter{file: file, srcName: file, kind: kindCode, src: src, srcLines: lineStarts(src), body: []byte(src)}
	for {
		lay := rw.layout(nil)
		prg, err := parser.ParseFile(nil, rw.srcName, lay.code, 0, parser.WithDisableSourceMaps)
		if err == nil {
			return prg, nil
		}
		var list parser.ErrorList
		if !errors.As(err, &list) || len(list) == 0 {
			return nil, rw.syntaxErr(0, err.Error())
		}
		first := list[0]
		off := lay.bodyOffset(lay.codeOffset(first.Position.Line, first.Position.Column))
		switch {
		case first.Message != errReservedWord:
			return nil, rw.syntaxErr(off, first.Message)
		case hasKeyword(rw.body[off:], "import"):
			err = rw.rewriteImport(off)
		case hasKeyword(rw.body[off:], "export"):
			err = rw.rewriteExport(off)
		default:
			err = rw.syntaxErr(off, first.Message)
		}
		if err != nil {
			return nil, err
		}
	}
}
