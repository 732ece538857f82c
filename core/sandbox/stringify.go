package sandbox

import (
	"math"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/dop251/goja"
)

// JSON.stringify, bounded (DECISIONS "Issue 17 — sandbox quotas"). goja's own is native Go that
// no interrupt reaches: its cycle check is quadratic in the depth, and a value that holds one
// subtree twice is written twice, so `o = [o, o]` forty times over asks for terabytes. This is
// ECMAScript's JSON.stringify in Go — SerializeJSONProperty, SerializeJSONObject,
// SerializeJSONArray, QuoteJSONString — over goja's public API, writing what goja's writes (the
// same keys in the same order, goja's number texts, the same script code run in the same
// order) and measuring as it goes: it refuses, with the guards' RangeError, a result over
// maxStringUnits, nesting deeper than maxJSONDepth, more than maxElements omitted properties
// (work that writes nothing), and a typed array or replacer array longer than maxElements
// (their key lists are allocated whole). What no count sees — an object whose non-enumerable
// properties make each reading of its keys slow, visited again and again — is reached by the
// run's stop: the walk checks it at every object and every 16 values.
//
// Where goja departs from the language it follows the language: the indentation after an empty
// array or object, a gap cut at 10 UTF-16 units (goja cuts bytes), a gap of Infinity (10
// spaces; goja none), a gap holding a lone surrogate, and a Symbol object (serialised as an
// object, "{}"; goja leaves it out).

// stringifier is one JSON.stringify call.
type stringifier struct {
	g        *guards
	vm       *goja.Runtime
	buf      strings.Builder // the text so far, UTF-8 (WTF-8 when wtf)
	units    int64           // its length in UTF-16 units
	wtf      bool            // the gap holds a lone surrogate: buf encodes it as WTF-8
	replacer goja.Callable
	list     []jsonKey // the replacer array's names; nil: each object's own keys
	gap      string    // the gap's text (UTF-8 or WTF-8)
	gapUnits int64
	indent   []byte // the gap repeated, at least as deep as the walk has gone
	stack    []*goja.Object
	onStack  map[*goja.Object]struct{} // the stack as a set, once it is deep
	omitted  int64
	ticks    int
	scratch  []byte
}

// jsonKey is a property key: name as Go text, value the key itself when known (nil: made from
// name when a script needs it), and exact when name lost a lone surrogate of value.
type jsonKey struct {
	name  string
	value goja.Value
	exact bool
}

// onStackSet is the depth from which the cycle check uses a set rather than a scan.
const onStackSet = 32

var (
	proxyType  = reflect.TypeOf(goja.Proxy{})
	bigIntType = reflect.TypeOf((*big.Int)(nil))
	plainType  = reflect.TypeOf(map[string]any(nil))
	spaces     = strings.Repeat(" ", 10)
	errJSONBig = "Do not know how to serialize a BigInt"
	errJSONCyc = "Converting circular structure to JSON"
)

// stringify is the guarded JSON.stringify(value, replacer, space).
func (g *guards) stringify(call goja.FunctionCall) goja.Value {
	s := &stringifier{g: g, vm: g.vm}
	before := g.nest // push takes a level of the run's native recursion budget (enterNative)
	defer func() { g.nest = before }()
	s.setReplacer(call.Argument(1))
	s.setGap(call.Argument(2))
	v := call.Argument(0)
	var holder *goja.Object
	if s.replacer != nil { // the wrapper {"": value} is observable only as the replacer's this
		holder = g.vm.NewObject()
		_ = holder.DefineDataProperty("", v, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_TRUE)
	}
	v = s.prepare(holder, jsonKey{}, v)
	if !s.emits(v) {
		return goja.Undefined()
	}
	s.serialize(v)
	if s.wtf {
		return goja.StringFromUTF16(decodeWTF8(s.buf.String()))
	}
	return g.vm.ToValue(s.buf.String())
}

// setReplacer takes a function, or an array's names (strings, numbers, String and Number
// objects, each once, in order).
func (s *stringifier) setReplacer(r goja.Value) {
	o, ok := r.(*goja.Object)
	if !ok {
		return
	}
	if f, ok := goja.AssertFunction(o); ok {
		s.replacer = f
		return
	}
	if !isArray(s.vm, o) {
		return
	}
	n := toLength(o.Get("length"))
	if n > maxElements {
		s.g.refuse(guardArrayLength("JSON.stringify", n))
	}
	s.list = make([]jsonKey, 0, min(n, 64))
	seen := make(map[string]bool)
	for i := int64(0); i < n; i++ {
		s.tick()
		var name goja.String
		switch v := o.Get(strconv.FormatInt(i, 10)).(type) {
		case goja.String:
			name = v
		case *goja.Object:
			if c := v.ClassName(); c != "String" && c != "Number" {
				continue
			}
			name = s.g.str(v)
		default:
			if v == nil || !goja.IsNumber(v) {
				continue
			}
			name = s.g.str(v)
		}
		k := keyOf(name)
		id := k.name
		if k.exact {
			id = "\x00" + string(utf16Bytes(name))
		}
		if !seen[id] {
			seen[id] = true
			s.list = append(s.list, k)
		}
	}
}

// keyOf is a string as a key (exact when its Go text loses a lone surrogate).
func keyOf(v goja.String) jsonKey {
	name := v.String()
	return jsonKey{name: name, value: v, exact: reflect.TypeOf(v).Kind() != reflect.String && strings.ContainsRune(name, utf8.RuneError)}
}

func utf16Bytes(s goja.String) []byte {
	b := make([]byte, 0, 2*s.Length())
	for i := 0; i < s.Length(); i++ {
		c := s.CharAt(i)
		b = append(b, byte(c>>8), byte(c))
	}
	return b
}

// setGap takes the space argument: a number of spaces (at most 10) or a string's first 10 units.
func (s *stringifier) setGap(space goja.Value) {
	if o, ok := space.(*goja.Object); ok {
		switch o.ClassName() {
		case "Number":
			space = o.ToNumber()
		case "String":
			space = s.g.str(o)
		}
	}
	if goja.IsNumber(space) {
		if f := space.ToFloat(); f >= 1 {
			s.gap = spaces[:int(math.Min(f, 10))]
		}
		s.gapUnits = int64(len(s.gap))
		return
	}
	str, ok := space.(goja.String)
	if !ok || str.Length() == 0 {
		return
	}
	if str.Length() > 10 {
		str = str.Substring(0, 10)
	}
	s.gapUnits = int64(str.Length())
	var b []byte
	for i := 0; i < str.Length(); i++ {
		c := rune(str.CharAt(i))
		if utf16.IsSurrogate(c) && i+1 < str.Length() {
			if r := utf16.DecodeRune(c, rune(str.CharAt(i+1))); r != utf8.RuneError {
				b = utf8.AppendRune(b, r)
				i++
				continue
			}
		}
		if utf16.IsSurrogate(c) { // alone: WTF-8
			s.wtf = true
			b = append(b, 0xED, byte(0x80|(c>>6)&0x3F), byte(0x80|c&0x3F))
			continue
		}
		b = utf8.AppendRune(b, c)
	}
	s.gap = string(b)
}

// decodeWTF8 is the UTF-16 of a text whose lone surrogates are WTF-8.
func decodeWTF8(s string) []uint16 {
	out := make([]uint16, 0, len(s))
	for i := 0; i < len(s); {
		if s[i] == 0xED && i+2 < len(s) && s[i+1] >= 0xA0 && s[i+1] <= 0xBF {
			out = append(out, 0xD000|uint16(s[i+1]&0x3F)<<6|uint16(s[i+2]&0x3F))
			i += 3
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		out = utf16.AppendRune(out, r)
		i += n
	}
	return out
}

// tick counts one value walked; every 16th checks whether the run has stopped.
func (s *stringifier) tick() {
	if s.ticks++; s.ticks&15 == 0 {
		s.g.checkStop()
	}
}

// checkStop lets the run's stop (its timeout, the heap watchdog, an abort) reach a walk that
// calls no script code: once the run's context has ended, a call of a script function raises
// the interrupt the runner set.
func (g *guards) checkStop() {
	select {
	case <-g.done:
		if g.numeric != nil {
			must(g.numeric(goja.Undefined(), goja.Undefined()))
		}
	default:
	}
}

// get reads holder[key].
func (s *stringifier) get(holder *goja.Object, k jsonKey) goja.Value {
	var v goja.Value
	if k.exact {
		v = must(s.g.reflectGet(goja.Undefined(), holder, k.value))
	} else {
		v = holder.Get(k.name)
	}
	if v == nil {
		return goja.Undefined()
	}
	return v
}

// keyValue is the key as the script sees it (toJSON's and the replacer's argument).
func (s *stringifier) keyValue(k jsonKey) goja.Value {
	if k.value != nil {
		return k.value
	}
	return s.vm.ToValue(k.name)
}

// prepare is SerializeJSONProperty's first steps: toJSON, the replacer, then a Number, String,
// Boolean or BigInt object's value.
func (s *stringifier) prepare(holder *goja.Object, k jsonKey, v goja.Value) goja.Value {
	s.tick()
	if v == nil {
		v = goja.Undefined()
	}
	var toJSON goja.Value
	if o, ok := v.(*goja.Object); ok {
		toJSON = o.Get("toJSON")
	} else if goja.IsBigInt(v) {
		toJSON = v.ToObject(s.vm).Get("toJSON")
	}
	if toJSON != nil {
		if f, ok := goja.AssertFunction(toJSON); ok {
			v = must(f(v, s.keyValue(k)))
		}
	}
	if s.replacer != nil {
		v = must(s.replacer(holder, s.keyValue(k), v))
	}
	o, ok := v.(*goja.Object)
	if !ok {
		return v
	}
	switch o.ClassName() { // a proxy's class is "Object" (or "Function"), whatever its target
	case "Number":
		return o.ToNumber()
	case "String":
		return s.g.str(o)
	case "Boolean":
		b, _ := o.Export().(bool)
		return s.vm.ToValue(b)
	}
	return v // a BigInt object (class "Object" in goja) throws in properties
}

// isArray is ECMAScript's IsArray: an array, or a proxy whose target is one.
func isArray(vm *goja.Runtime, o *goja.Object) bool {
	for o.ExportType() == proxyType {
		if o = o.Export().(goja.Proxy).Target(); o == nil {
			panic(vm.NewTypeError("Cannot perform 'IsArray' on a proxy that has been revoked"))
		}
	}
	return o.ClassName() == "Array"
}

// emits reports whether a prepared value is written (undefined, symbols and functions are not).
func (s *stringifier) emits(v goja.Value) bool {
	switch x := v.(type) {
	case *goja.Object:
		return !callable(x)
	case *goja.Symbol:
		return false
	}
	return !goja.IsUndefined(v)
}

func callable(o *goja.Object) bool {
	switch o.ClassName() {
	case "Object", "Array":
		return false
	}
	_, ok := goja.AssertFunction(o)
	return ok
}

// grow accounts for n more units of text, refusing past maxStringUnits.
func (s *stringifier) grow(n int64) {
	if s.units += n; s.units > maxStringUnits {
		s.g.refuse(guardTooLongResult("JSON.stringify"))
	}
}

func (s *stringifier) ascii(text string) {
	s.grow(int64(len(text)))
	s.buf.WriteString(text)
}

func (s *stringifier) byte1(c byte) {
	s.grow(1)
	s.buf.WriteByte(c)
}

// newline starts a line indented depth times (with a gap only).
func (s *stringifier) newline(depth int) {
	s.grow(1 + int64(depth)*s.gapUnits)
	for len(s.indent) < depth*len(s.gap) {
		s.indent = append(s.indent, s.gap...)
	}
	s.buf.WriteByte('\n')
	s.buf.Write(s.indent[:depth*len(s.gap)])
}

// serialize writes a prepared value that emits.
func (s *stringifier) serialize(v goja.Value) {
	switch x := v.(type) {
	case *goja.Object:
		s.object(x)
		return
	case goja.String:
		s.quote(x)
		return
	}
	switch {
	case goja.IsNumber(v):
		s.number(v)
	case goja.IsNull(v):
		s.ascii("null")
	case goja.IsBigInt(v):
		panic(s.vm.NewTypeError(errJSONBig))
	case v.ToBoolean():
		s.ascii("true")
	default:
		s.ascii("false")
	}
}

// number writes a finite number as goja writes it (integers below 2^53 directly), else null.
func (s *stringifier) number(v goja.Value) {
	f := v.ToFloat()
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		s.ascii("null")
	case f == math.Trunc(f) && math.Abs(f) < 1<<53:
		s.scratch = strconv.AppendInt(s.scratch[:0], int64(f), 10)
		s.grow(int64(len(s.scratch)))
		s.buf.Write(s.scratch)
	default:
		s.ascii(v.String())
	}
}

// object writes an array, a raw JSON text or an object.
func (s *stringifier) object(o *goja.Object) {
	var t reflect.Type
	switch o.ClassName() {
	case "Array":
		s.push(o)
		s.array(o)
		s.pop()
		return
	case "RawJSON":
		text := o.Get("rawJSON").String()
		s.grow(int64(utf16Len(text)))
		s.buf.WriteString(text)
		return
	case "Object":
		if t = o.ExportType(); t == proxyType && isArray(s.vm, o) {
			s.push(o)
			s.array(o)
			s.pop()
			return
		}
	default:
		t = o.ExportType()
	}
	s.push(o)
	s.properties(o, t)
	s.pop()
}

// push enters o: a cycle is a TypeError, nesting past maxJSONDepth a refusal.
func (s *stringifier) push(o *goja.Object) {
	s.g.checkStop()
	if s.onStack != nil {
		if _, ok := s.onStack[o]; ok {
			panic(s.vm.NewTypeError(errJSONCyc))
		}
	} else {
		for _, p := range s.stack {
			if p == o {
				panic(s.vm.NewTypeError(errJSONCyc))
			}
		}
	}
	s.g.enterNative("JSON.stringify", 1) // maxJSONDepth levels, with the walks this one is inside
	s.stack = append(s.stack, o)
	if s.onStack != nil {
		s.onStack[o] = struct{}{}
	} else if len(s.stack) > onStackSet {
		s.onStack = make(map[*goja.Object]struct{}, 2*len(s.stack))
		for _, p := range s.stack {
			s.onStack[p] = struct{}{}
		}
	}
}

func (s *stringifier) pop() {
	o := s.stack[len(s.stack)-1]
	s.stack = s.stack[:len(s.stack)-1]
	s.g.nest--
	if s.onStack != nil {
		delete(s.onStack, o)
	}
}

// array is SerializeJSONArray: every index up to the length, null for what does not emit.
func (s *stringifier) array(o *goja.Object) {
	n := toLength(o.Get("length"))
	if n == 0 {
		s.ascii("[]")
		return
	}
	if 2*n+1 > maxStringUnits { // a value and a comma each at the least
		s.g.refuse(guardTooLongResult("JSON.stringify"))
	}
	depth := len(s.stack)
	s.byte1('[')
	for i := int64(0); i < n; i++ {
		if i > 0 {
			s.byte1(',')
		}
		if s.gap != "" {
			s.newline(depth)
		}
		k := jsonKey{name: strconv.FormatInt(i, 10)}
		v := s.prepare(o, k, s.get(o, k))
		if s.emits(v) {
			s.serialize(v)
		} else {
			s.ascii("null")
		}
	}
	if s.gap != "" {
		s.newline(depth - 1)
	}
	s.byte1(']')
}

// properties is SerializeJSONObject: the replacer array's names, or the object's own
// enumerable string keys in goja's order, each that emits as "key":value.
func (s *stringifier) properties(o *goja.Object, t reflect.Type) {
	if t == bigIntType {
		panic(s.vm.NewTypeError(errJSONBig))
	}
	keys, names := s.list, []string(nil)
	if keys == nil {
		keys, names = s.ownKeys(o, t)
	}
	depth := len(s.stack)
	s.byte1('{')
	first := true
	for i, n := 0, len(keys)+len(names); i < n; i++ {
		var k jsonKey
		if names != nil {
			k.name = names[i]
		} else {
			k = keys[i]
		}
		v := s.prepare(o, k, s.get(o, k))
		if !s.emits(v) {
			if s.omitted++; s.omitted > maxElements {
				s.g.refuse(guardTooMany("JSON.stringify", "omitted properties", maxElements))
			}
			continue
		}
		if !first {
			s.byte1(',')
		}
		first = false
		if s.gap != "" {
			s.newline(depth)
		}
		if k.exact {
			s.quote(k.value.(goja.String))
		} else {
			s.quoteText(k.name)
		}
		if s.gap != "" {
			s.ascii(": ")
		} else {
			s.byte1(':')
		}
		s.serialize(v)
	}
	if !first && s.gap != "" {
		s.newline(depth - 1)
	}
	s.byte1('}')
}

// ownKeys lists o's own enumerable string keys as goja's stringify does: a proxy's through
// Object.keys (its traps run once, as they would), other objects' through Keys (a third faster:
// no array is made) unless a key holds a lone surrogate its Go text loses. A typed array longer
// than maxElements is refused first (its indices are keys, listed whole).
func (s *stringifier) ownKeys(o *goja.Object, t reflect.Type) ([]jsonKey, []string) {
	if t == proxyType {
		return s.exactKeys(o), nil
	}
	if t != plainType && t != nil && t.Kind() == reflect.Slice { // a typed array
		if n := int64(reflect.ValueOf(o.Export()).Len()); n > maxElements {
			s.g.refuse(guardArrayLength("JSON.stringify", n))
		}
	}
	names := o.Keys()
	for _, name := range names {
		if strings.ContainsRune(name, utf8.RuneError) {
			return s.exactKeys(o), nil // read again (no script code runs for a non-proxy)
		}
	}
	return nil, names
}

// exactKeys lists the keys through Object.keys, as JavaScript strings.
func (s *stringifier) exactKeys(o *goja.Object) []jsonKey {
	arr := must(s.g.objectKeys(goja.Undefined(), o)).(*goja.Object)
	keys := make([]jsonKey, toLength(arr.Get("length")))
	for i := range keys {
		keys[i] = keyOf(arr.Get(strconv.Itoa(i)).(goja.String))
	}
	return keys
}

// quote is QuoteJSONString of a JavaScript string.
func (s *stringifier) quote(str goja.String) {
	switch reflect.TypeOf(str).Kind() {
	case reflect.String: // goja's ASCII strings
		s.quoteText(str.String())
	case reflect.Pointer: // a Go string held as it is (valid UTF-8 or not: goja reads bad bytes as U+FFFD)
		s.quoteText(str.String())
	default: // UTF-16: lone surrogates are escaped
		s.grow(int64(str.Length()) + 2)
		s.buf.WriteByte('"')
		r := str.Reader()
		for {
			c, _, err := r.ReadRune()
			if err != nil && err != goja.InvalidRuneError {
				break
			}
			if utf16.IsSurrogate(c) {
				s.grow(5)
				s.buf.WriteString(`\u`)
				s.buf.WriteString(strconv.FormatInt(int64(c), 16))
				continue
			}
			s.quoteRune(c)
		}
		s.buf.WriteByte('"')
	}
}

// quoteText is QuoteJSONString of a Go text (UTF-8; a bad byte reads as U+FFFD, as in goja).
func (s *stringifier) quoteText(text string) {
	s.grow(2)
	s.buf.WriteByte('"')
	start := 0
	for i := 0; i < len(text); {
		c := text[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		s.grow(int64(i - start))
		s.buf.WriteString(text[start:i])
		if c < utf8.RuneSelf {
			s.grow(1)
			s.escape(c)
			i++
		} else {
			r, n := utf8.DecodeRuneInString(text[i:])
			s.grow(int64(utf16.RuneLen(r)))
			s.buf.WriteRune(r)
			i += n
		}
		start = i
	}
	s.grow(int64(len(text) - start))
	s.buf.WriteString(text[start:])
	s.buf.WriteByte('"')
}

// quoteRune writes one character of a UTF-16 string (its unit already counted).
func (s *stringifier) quoteRune(r rune) {
	if r < utf8.RuneSelf {
		if r >= 0x20 && r != '"' && r != '\\' {
			s.buf.WriteByte(byte(r))
			return
		}
		s.escape(byte(r))
		return
	}
	s.buf.WriteRune(r)
}

// escape writes the escape of an ASCII character (its one unit already counted).
func (s *stringifier) escape(c byte) {
	switch c {
	case '"', '\\':
		s.grow(1)
		s.buf.WriteByte('\\')
		s.buf.WriteByte(c)
	case '\b':
		s.grow(1)
		s.buf.WriteString(`\b`)
	case '\t':
		s.grow(1)
		s.buf.WriteString(`\t`)
	case '\n':
		s.grow(1)
		s.buf.WriteString(`\n`)
	case '\f':
		s.grow(1)
		s.buf.WriteString(`\f`)
	case '\r':
		s.grow(1)
		s.buf.WriteString(`\r`)
	default:
		s.grow(5)
		s.buf.WriteString(`\u00`)
		s.buf.WriteByte(hexDigits[c>>4])
		s.buf.WriteByte(hexDigits[c&0xF])
	}
}

const hexDigits = "0123456789abcdef"
