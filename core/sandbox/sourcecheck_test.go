package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// deepSources are sources nested or chained far past the scan's limits — each overflowed the Go
// stack in goja's parser or compiler (a fatal error, the process died) or compiled for minutes
// — as dynamic code: what JavaScript builds them from, and the refusal's text after the builtin.
var deepSources = []struct{ name, js, want string }{
	{"sum", `'1' + '+1'.repeat(1e6)`, sourceChainTooLong()},
	{"nots", `'!'.repeat(1e6) + '1'`, sourceTooDeep()},
	{"members", `'a' + '.a'.repeat(1e6)`, sourceTooDeep()},
	{"parentheses", `'('.repeat(1e6) + '1' + ')'.repeat(1e6)`, sourceTooDeep()},
	{"brackets", `'['.repeat(1e6)`, sourceTooDeep()},
	{"braces", `'{'.repeat(1e6)`, sourceTooDeep()},
	{"objects", `'x=' + '{a:'.repeat(4e5) + '1' + '}'.repeat(4e5)`, sourceTooDeep()},
	{"arrows", `'x=>'.repeat(1e5) + '1'`, sourceTooDeep()},
	{"templates", "'`${'.repeat(1e5) + '1' + '}`'.repeat(1e5)", sourceTooDeep()},
	{"ternaries", `'a?b:'.repeat(4e5) + 'c'`, sourceTooDeep()},
	{"assignments", `'a='.repeat(1e6) + '1'`, sourceTooDeep()},
	{"calls", `'f' + '()'.repeat(1e6)`, sourceTooDeep()},
	{"ifs", `'if(a)'.repeat(4e5) + 'b;'`, sourceTooDeep()},
	{"else ifs", `'if(a)b;' + 'else if(a)b;'.repeat(1.5e5)`, sourceTooDeep()},
	{"news", `'new '.repeat(5e5) + 'X'`, sourceTooDeep()},
	{"powers", `'2' + '**2'.repeat(6e5)`, sourceChainTooLong()},
	{"labels", `'a:'.repeat(5000) + '1'`, sourceTooManyLabels()},
	{"class heritage", `'x=' + 'class extends '.repeat(1e5) + 'Object' + '{}'.repeat(1e5)`, sourceTooDeep()},
	{"many chains", `('x=' + 'a+'.repeat(9000) + 'a;').repeat(10)`, sourceTooComplex()},
	{"size", `'1;'.repeat(1.1e6)`, sourceTooLarge(2_200_000)},
	// the bypasses of Q17-23: U+2028/U+2029 end a line comment in goja
	{"LS in a comment", `'//x\u2028' + '('.repeat(3e5) + '1' + ')'.repeat(3e5)`, sourceTooDeep()},
	{"PS in a comment", `'//x\u2029' + '['.repeat(3e5) + '1' + ']'.repeat(3e5)`, sourceTooDeep()},
	{"LS in a comment, arrows", `'//\u2028' + 'x=>'.repeat(3e4) + '1'`, sourceTooDeep()},
	{"CR in a comment", `'//x\r' + '('.repeat(5000) + '1' + ')'.repeat(5000)`, sourceTooDeep()},
	// and a regular expression: there it was no regular expression
	{"LS in a regular expression", `'if (a) /x\u2028' + '('.repeat(3e5) + '1' + ')'.repeat(3e5) + '/'`, sourceTooDeep()},
	{"PS in a regular expression", `'if (a) /x\u2029' + '['.repeat(5000) + ']'.repeat(5000) + '/'`, sourceTooDeep()},
	// a string goes on past U+2028 and a backslash before CRLF, as goja reads one
	{"LS in a string", `"x = 'a\u2028'; " + '('.repeat(5000) + '1' + ')'.repeat(5000)`, sourceTooDeep()},
	{"backslash CRLF in a string", `"x = 'a\\\r\n'; " + '('.repeat(5000) + '1' + ')'.repeat(5000)`, sourceTooDeep()},
	{"backslash LS in a string", `"x = 'a\\\u2028'; " + '('.repeat(5000) + '1' + ')'.repeat(5000)`, sourceTooDeep()},
	// a division read as a regular expression: the tester's four
	{"keyword method then a division", `'a={if(){return 1}}; x = a.if() / ' + '('.repeat(3e5) + '1' + ')'.repeat(3e5) + '\n'`, sourceTooDeep()},
	{"private keyword method then a division", `'class K { #if(){return 1} m(){ return this.#if() / ' + '('.repeat(3e5) + '1' + ')'.repeat(3e5) + '\n}}'`, sourceTooDeep()},
	{"of then a division", `'var of = 1; x = of / ' + '('.repeat(3e5) + '1' + ')'.repeat(3e5) + '\n'`, sourceTooDeep()},
	{"yield then a division", `'var yield = 1; x = yield / ' + '('.repeat(3e5) + '1' + ')'.repeat(3e5) + '\n'`, sourceTooDeep()},
	// an unterminated "regular expression" before a line break or the end
	{"unterminated before a line break", `'if (a) /' + '('.repeat(5000) + '1' + ')'.repeat(5000) + '\n'`, sourceTooDeep()},
	{"unterminated at the end", `'if (a) /' + '('.repeat(5000) + '1' + ')'.repeat(5000)`, sourceTooDeep()},
	// a division the scan may read as a regular expression, holding a chain
	{"fake regular expression of nots", `'var of = 1; x = of /' + '!'.repeat(5000) + '1/ 1\n'`, sourceTooDeep()},
	{"fake regular expression of arrows", `'var of = 1; x = of /' + 'x=>'.repeat(5000) + '1/ 1\n'`, sourceTooDeep()},
	{"fake regular expression of members", `'var of = 1; x = of /a' + '.a'.repeat(5000) + '/ 1\n'`, sourceTooDeep()},
	{"fake regular expression of a sum", `'var of = 1; x = of /1' + '+1'.repeat(12000) + '/ 1\n'`, sourceTooDeep()},
	// two values on one line: goja's error recovery skips one and reads the "/" as a regex
	{"a hashbang", `'#!' + ')'.repeat(5000) + '\n' + '('.repeat(5000) + '1' + ')'.repeat(5000)`, sourceTooDeep()},
	{"adjacent values", `'if (a b) /' + '('.repeat(5000) + '/\n' + ')'.repeat(5000)`, sourceTooDeep()},
	// what an uncertain reading could hide, line after line, is counted conservatively
	{"hidden brackets", `'var of = 1; x = ' + 'of / (((((/ 1 /.source +\n'.repeat(7e4) + '1'`, sourceTooComplex()},
	// a "/" where valid code has none: goja's parser consumes it as an unexpected token and reads
	// on as code, so the scan's regular expression there is uncertain
	{"a regex after if", `'if /(((((/\n'.repeat(7e4)`, sourceTooComplex()},
	{"a regex after a dot", `'x = a./(((((/\n'.repeat(7e4)`, sourceTooComplex()},
	{"a regex as an object's key", `'x = {/(((((/: 1}\n'.repeat(7e4)`, sourceTooComplex()},
	{"a regex as a parameter", `'function f(/(((((/) {}\n'.repeat(7e4)`, sourceTooComplex()},
	{"a regex as a private method's parameter", `'class K { #m(/(((((/) {} }\n'.repeat(7e4)`, sourceTooComplex()},
	{"a regex as a string-named method's parameter", `'x = { "m"(/(((((/) {} }\n'.repeat(7e4)`, sourceTooComplex()},
	{"a regex in a pattern", `'let [/(((((/] = a\n'.repeat(7e4)`, sourceTooComplex()},
	{"a regex after a regex", `'x = /a/ /(((((/\n'.repeat(7e4)`, sourceTooComplex()},
	{"a regex after if and a token", `'if 1 /(((((/\n'.repeat(7e4)`, sourceTooDeep()},
	{"a regex after try and a token", `'try 1 /(((((/\n'.repeat(7e4)`, sourceTooDeep()},
	{"a regex as a declaration's binding", `'var a = 1, /(((((/\n'.repeat(7e4)`, sourceTooComplex()},
	{"hidden nots", `'var of = 1; x = ' + 'of / !!!!!/ 1 /.source +\n'.repeat(7e4) + '1'`, sourceTooComplex()},
}

// keywordSources are, for every keyword and contextual word, the shapes that once made the scan
// take a division for a regular expression: the word as a property name after ".", "?." and "#"
// (a method call, then a division), and as a plain identifier before a division.
func keywordSources() []struct{ name, js, want string } {
	words := []string{"if", "for", "while", "with", "do", "switch", "catch", "return", "typeof", "instanceof",
		"in", "of", "new", "delete", "void", "throw", "case", "else", "yield", "await", "extends", "let",
		"var", "const", "export", "import", "default", "function", "class", "break", "continue", "try",
		"finally", "debugger", "async", "get", "set", "static", "this", "super", "null", "true", "false",
		"enum", "from", "as"}
	deep := ` + '('.repeat(5000) + '1' + ')'.repeat(5000) + '\n'`
	var out []struct{ name, js, want string }
	for _, w := range words {
		out = append(out,
			struct{ name, js, want string }{w + " after .", `'x = a.` + w + `() / '` + deep, sourceTooDeep()},
			struct{ name, js, want string }{w + " after ?.", `'x = a?.` + w + `() / '` + deep, sourceTooDeep()},
			struct{ name, js, want string }{w + " after #", `'class K { #` + w + `(){} m(){ return this.#` + w + `() / '` + deep + ` + '}}'`, sourceTooDeep()},
			struct{ name, js, want string }{w + " as a method", `'x = {` + w + `(){}}.` + w + `() / '` + deep, sourceTooDeep()},
			struct{ name, js, want string }{w + " before /", `'x = ` + w + ` / '` + deep, sourceTooDeep()},
		)
	}
	return out
}

// The child of TestSourceBoundRefusesDeepSources: every payload in one process, each announced
// first, so a crash names it.
func TestSourceBoundChild(t *testing.T) {
	if os.Getenv("SANDBOX_SOURCE_CHILD") == "" {
		return // not a test of its own: the child process TestSourceBoundRefusesDeepSources starts
	}
	for _, p := range append(deepSources, keywordSources()...) {
		for _, entry := range []struct{ name, call string }{
			{"eval", "eval(%s)"}, {"Function", "Function(%s)"}, {"new Function", "new Function('return 1', %s)"},
			{"AsyncFunction", "new (Object.getPrototypeOf(async function () {}).constructor)(%s)"},
		} {
			if entry.name != "eval" && p.name == "size" {
				continue
			}
			fmt.Printf("payload %s/%s\n", p.name, entry.name)
			builtin := map[string]string{"eval": "eval", "Function": "Function", "new Function": "Function", "AsyncFunction": "AsyncFunction"}[entry.name]
			src := `const src = ` + p.js + `; let caught = "none"; try { ` + fmt.Sprintf(entry.call, "src") + ` } catch (e) { caught = (e instanceof RangeError) + " " + e.message }
if (caught !== "true ` + builtin + `: ` + p.want + `") throw new Error("caught " + caught);
` + fmt.Sprintf(entry.call, "src")
			r := runWith(t, context.Background(), &testHost{}, src, func(c *CodeStateRun) { c.Quotas.TimeoutMs, c.Quotas.MemoryLimitBytes = nativesTimeoutMs, 1<<30 })
			wantQuota(t, r.err, builtin+": "+p.want)
		}
		// the same shape as the script's own source, a code state's and an agent script's
		fmt.Printf("payload %s/source\n", p.name)
		vm := newGuardedRuntime(t)
		text := must(vm.RunString(p.js)).String()
		r := runWith(t, context.Background(), &testHost{}, text, nil)
		se := as[*SyntaxError](t, r.err)
		if se.Message != p.want || se.File != "scripts/test.js" || se.Line < 1 {
			t.Errorf("%s: %+v", p.name, se)
		}
		res := replCall(t, newTestREPL(t), &testHost{}, text, nil)
		if !res.Error || !strings.Contains(res.Text, p.want) {
			t.Errorf("%s: agent script answered %.200q", p.name, res.Text)
		}
	}
	fmt.Println("payloads done")
}

// Sources nested or chained past the limits are refused before goja's parser recurses through
// them: dynamic code with the guard's catchable RangeError (uncaught, a QuotaError), a script's
// own source with a SyntaxError. The payloads run in a child process: were one to overflow the
// stack again, the fatal error kills the child, and this test fails naming it.
func TestSourceBoundRefusesDeepSources(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run", "^TestSourceBoundChild$", "-test.v", "-test.timeout", "600s")
	cmd.Env = append(os.Environ(), "SANDBOX_SOURCE_CHILD=1")
	out, err := cmd.CombinedOutput()
	text := string(out)
	if err != nil || !strings.Contains(text, "payloads done") || !strings.Contains(text, "--- PASS: TestSourceBoundChild") {
		last := text[max(0, strings.LastIndex(text, "payload ")):]
		t.Fatalf("child failed (%v) at %.300s\n%s", err, last, tail(text, 3000))
	}
}

func tail(s string, n int) string { return s[max(0, len(s)-n):] }

// ordinarySources are deep-ish or long code a person or a model writes: each runs, as a code
// state's source and through eval, and gives "ok".
var ordinarySources = []struct{ name, src string }{
	{"500 nested arrays", "const a = " + strings.Repeat("[", 500) + strings.Repeat("]", 500) + "; 'ok'"},
	{"1,000 nested parentheses", "const v = " + strings.Repeat("(", 1000) + "1" + strings.Repeat(")", 1000) + "; v === 1 ? 'ok' : 'bad'"},
	{"a 10,000-term sum", "const a = 1, b = 2; const v = a" + strings.Repeat("+b+a", 4999) + "+b; v === 15000 ? 'ok' : 'bad ' + v"},
	{"a method chain of 200", "const o = { m() { return this; } }; o" + strings.Repeat(".m()", 200) + " === o ? 'ok' : 'bad'"},
	{"500 else ifs", "let x = 499, r = ''; if (x === -1) r = 'no';" + elseIfs(500) + " r"},
	{"an object of 10,000 keys", "const o = {" + keys(10000) + "}; Object.keys(o).length === 10000 ? 'ok' : 'bad'"},
	{"5,000 lines without semicolons", strings.Repeat("x = (typeof x === 'number' ? x : 0) + 1\n", 5000) + "x === 5000 ? 'ok' : 'bad'"},
	{"regexes and divisions", "const re = /[(\\[{]+\\/(?:a|b)?/g, d = 10 / 2 / 5; if (d) /x/.test('x'); `${'(('}` + '((' + \"[[\" && re.test('((/a') && d === 1 ? 'ok' : 'bad'"},
	{"nested templates", "let t = " + strings.Repeat("`${", 50) + "'ok'" + strings.Repeat("}`", 50) + "; t"},
	{"labels and cases", "let r = ''; outer: for (const i of [1, 2]) { inner: for (const j of [1]) { switch (i) { case 1: { r += 'o'; continue outer; } default: r += 'k'; break outer; } } } r"},
	{"line and paragraph separators in strings", "const s = 'a\u2028b\u2029c', t = \"(\u2028[\"; s.length === 5 && t.length === 3 ? 'ok' : 'bad'"},
	{"a backslash and CRLF in a string", "const s = 'a\\\r\nb'; s === 'ab' ? 'ok' : 'bad'"},
	{"divisions after calls", "const f = () => 8, o = { m() { return 4; } }; const v = f() / 2 / o.m() * Math.max(1, 2) / 2; v === 1 ? 'ok' : 'bad ' + v"},
	{"of, get, set and async as identifiers", "var of = 8, get = 4, set = 2, async = 1; const v = of / get / set / async; v === 1 ? 'ok' : 'bad'"},
	{"keywords as properties", "const o = { if() { return 8; }, for: 4, while: 2 }; const v = o.if() / o.for / o?.while; class K { #do() { return 1; } m() { return this.#do() / 1; } } v === 1 && new K().m() === 1 ? 'ok' : 'bad'"},
	{"regexes after if heads", "let r = ''; if (true) /a/.test('a') && (r += 'o'); for (const x of [1]) /b/g.test('b') && (r += 'k'); while (false) /c/; r"},
	{"a division and a regex on a line after a block", "let r = 0; { r = 6 }\n/x/.test('x') && (r = r / 3 / 2); r === 1 ? 'ok' : 'bad'"},
	{"a conditional in a pattern's default, catch without a binding", "const { a = true ? /x/.test('x') : /y/.test('y') } = {}; let r = 'bad'; try { throw 1; } catch { if (a) /z/.test('z') && (r = 'ok'); } r"},
	{"keywords as object keys", "const o = { if: 8, catch: 4, try: 2, for: 1 }; o.if / o.catch / o.try / o.for === 1 ? 'ok' : 'bad'"},
	{"functions and classes", "function f() { return { a: { b: 1 } }; }\n/x/.test('x');\nclass C extends Object { m() { return f().a.b; } }\nconst g = function () {} / 1; new C().m() === 1 && isNaN(g) ? 'ok' : 'bad'"},
}

func elseIfs(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, " else if (x === %d) r = 'ok';", i)
	}
	return b.String()
}

func keys(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "k%d: { v: %d, w: [%d] },", i, i, i)
	}
	return b.String()
}

// What people and models write stays under the limits by orders of magnitude: none of these is
// refused, as a script (an agent script's completion value) or as dynamic code.
func TestSourceBoundAcceptsOrdinaryCode(t *testing.T) {
	for _, c := range ordinarySources {
		t.Run(c.name, func(t *testing.T) {
			if e := checkSource(c.src); e != nil {
				t.Fatalf("refused: %s at %d", e.msg, e.off)
			}
			wantOK(t, replCall(t, newTestREPL(t), &testHost{}, c.src, nil), "ok")
			src := "const src = " + jsString(c.src) + "; if (eval(src) !== 'ok') throw new Error('eval: ' + eval(src));"
			mustSucceed(t, runScript(t, src))
		})
	}
}

func jsString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`)
	return `"` + r.Replace(s) + `"`
}
