package cases

// Matching rules (04-cases.md §8): the `/pattern/flags` regex form (MT-01…MT-06),
// partialMatch (MT-10, MT-11) and deep equality (MT-20). Pure: no I/O, no clock
// other than the regex engine's match timeout.

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dlclark/regexp2/v2"
	"github.com/dlclark/regexp2/v2/syntax"

	"github.com/archmax-ai/archmax/core/spec"
)

// ErrRegexAborted is wrapped by the error TextMatches and PartialMatchErr return
// when the regex engine gave up on a match: the match outlived its timeout (a
// catastrophically backtracking pattern) or exhausted the backtracking stack. The
// result of such a match is unknown, never "no match": a caller must not read it
// as a pass (an `excludes` token that timed out has not shown that the text is
// absent). Test with errors.Is.
var ErrRegexAborted = errors.New("match aborted")

// regexMatchTimeout bounds one regex search (MT-03 engine is backtracking, so a
// hostile pattern such as /^(a+)+$/ would otherwise hang a case). It is read when
// a pattern is compiled; tests shorten it and reset the cache.
var regexMatchTimeout = time.Second

const (
	// regexBacktrackLimit is the backtracking-stack budget of one match, in
	// integer slots (the engine's default of 100k trips on ordinary patterns such
	// as /(a|b)*c/ over a reply of a few tens of kilobytes).
	regexBacktrackLimit = 1 << 20
	// regexCacheMax bounds the number of compiled patterns kept; regexCacheMaxLen
	// keeps very long patterns out of the cache altogether.
	regexCacheMax    = 512
	regexCacheMaxLen = 4096
	// regexAllowedFlags are the flags JavaScript's RegExp accepts (MT-02).
	regexAllowedFlags = "dgimsuvy"
)

func init() {
	// document.go declares the hook with a no-op default so that parsing does not
	// depend on this file's initialisation order; the real check is installed here.
	validateRegexForm = compileRegexForm
}

// splitRegexForm reports whether s is regex-shaped (MT-01) — it matches
// /^\/(.*)\/([a-z]*)$/s — and splits it into pattern and flags. The pattern runs
// up to the last '/', so escaped slashes and line breaks inside it are ordinary
// pattern text; `//` is the empty pattern; any character after the last '/'
// that is not a lower-case ASCII letter makes s a plain string.
func splitRegexForm(s string) (pattern, flags string, ok bool) {
	if len(s) < 2 || s[0] != '/' {
		return "", "", false
	}
	end := strings.LastIndexByte(s, '/')
	if end < 1 {
		return "", "", false
	}
	for i := end + 1; i < len(s); i++ {
		if s[i] < 'a' || s[i] > 'z' {
			return "", "", false
		}
	}
	return s[1:end], s[end+1:], true
}

// malformedRegexError is the engine message for a regex-shaped string that
// does not compile (MT-04). Its Error() is the message alone — the parser frames
// it as `malformed regex "<raw, JSON-quoted>": <message>` (document.go's
// validateRegexForm contract); schemaMessage gives the framed text.
type malformedRegexError struct {
	raw    string
	reason string
}

func (e *malformedRegexError) Error() string { return e.reason }

// schemaMessage is the complete MT-04 text:
// `malformed regex "<raw, JSON-quoted>": <engine message>`.
func (e *malformedRegexError) schemaMessage() string {
	return "malformed regex " + jsonQuote(e.raw) + ": " + e.reason
}

// malformedRegexFailure is the error TextMatches returns for a malformed
// regex-shaped pattern: the full MT-04 schema message, unwrapping to the engine
// message.
type malformedRegexFailure struct{ *malformedRegexError }

func (e malformedRegexFailure) Error() string { return e.schemaMessage() }
func (e malformedRegexFailure) Unwrap() error { return e.malformedRegexError }

type regexCacheEntry struct {
	re  *regexp2.Regexp
	err error
}

var regexCache = struct {
	sync.RWMutex
	m map[string]regexCacheEntry
}{m: make(map[string]regexCacheEntry)}

// resetRegexCache empties the compiled-pattern cache (tests).
func resetRegexCache() {
	regexCache.Lock()
	regexCache.m = make(map[string]regexCacheEntry)
	regexCache.Unlock()
}

// compileRegexForm validates s at parse time (MT-04; installed as
// validateRegexForm): nil when s is a plain string or a regex-shaped string that
// compiles; otherwise an error whose text is the engine message alone, which the
// parser frames as `malformed regex "<raw, JSON-quoted>": <message>`.
// The engine message follows V8's wording where the cause is the flags
// (`Invalid flags supplied to RegExp constructor '<flags>'`) and is
// `Invalid regular expression: /<pattern>/<flags>: <regexp2 reason>` otherwise.
func compileRegexForm(s string) error {
	pattern, flags, ok := splitRegexForm(s)
	if !ok {
		return nil
	}
	_, err := compileRegexCached(s, pattern, flags)
	return err
}

// compileRegexCached compiles a regex-shaped string (split by splitRegexForm),
// memoising both outcomes under the raw string in a bounded cache.
func compileRegexCached(raw, pattern, flags string) (*regexp2.Regexp, error) {
	regexCache.RLock()
	e, hit := regexCache.m[raw]
	regexCache.RUnlock()
	if hit {
		return e.re, e.err
	}
	e.re, e.err = compileRegex(raw, pattern, flags)
	if len(raw) <= regexCacheMaxLen {
		regexCache.Lock()
		if len(regexCache.m) >= regexCacheMax {
			for k := range regexCache.m { // evict an arbitrary entry
				delete(regexCache.m, k)
				break
			}
		}
		regexCache.m[raw] = e
		regexCache.Unlock()
	}
	return e.re, e.err
}

// compileRegex maps the JavaScript flags onto regexp2 options (MT-02) and
// compiles the pattern with ECMAScript semantics (MT-03).
func compileRegex(raw, pattern, flags string) (re *regexp2.Regexp, err error) {
	opts, ok := regexOptions(flags)
	if !ok {
		return nil, &malformedRegexError{raw: raw,
			reason: "Invalid flags supplied to RegExp constructor '" + flags + "'"}
	}
	defer func() { // a parser panic on hostile input is a malformed regex, not a crash
		if r := recover(); r != nil {
			re, err = nil, &malformedRegexError{raw: raw,
				reason: fmt.Sprintf("Invalid regular expression: /%s/%s: %v", pattern, flags, r)}
		}
	}()
	re, cerr := regexp2.Compile(pattern, opts, regexp2.OptionMaxBacktrackingStackSize(regexBacktrackLimit))
	if cerr != nil {
		reason := cerr.Error()
		var se *syntax.Error
		if errors.As(cerr, &se) {
			reason = se.Code.String()
			if len(se.Args) > 0 {
				reason = fmt.Sprintf(reason, se.Args...)
			}
		}
		return nil, &malformedRegexError{raw: raw,
			reason: "Invalid regular expression: /" + pattern + "/" + flags + ": " + reason}
	}
	re.MatchTimeout = regexMatchTimeout
	return re, nil
}

// regexOptions validates flags as JavaScript's RegExp does (each of d g i m s u v
// y at most once, and not both u and v) and maps them: i, m, s → IgnoreCase,
// Multiline, Singleline; u and v → Unicode (ECMAScript /u semantics: \p{…},
// \u{…}, Unicode case folding; regexp2 has no /v set notation, so v gets the /u
// reading); d, g, y → nothing (MT-02 decision: no lastIndex state, no sticky).
func regexOptions(flags string) (regexp2.RegexOptions, bool) {
	opts := regexp2.ECMAScript
	var seen [26]bool
	for i := 0; i < len(flags); i++ {
		c := flags[i]
		if !strings.ContainsRune(regexAllowedFlags, rune(c)) || seen[c-'a'] {
			return 0, false
		}
		seen[c-'a'] = true
		switch c {
		case 'i':
			opts |= regexp2.IgnoreCase
		case 'm':
			opts |= regexp2.Multiline
		case 's':
			opts |= regexp2.Singleline
		case 'u', 'v':
			opts |= regexp2.Unicode
		}
	}
	if seen['u'-'a'] && seen['v'-'a'] {
		return 0, false
	}
	return opts, true
}

// regexSearch runs a search (MT-06) and turns an engine abort into an error
// wrapping ErrRegexAborted.
func regexSearch(raw string, re *regexp2.Regexp, subject string) (bool, error) {
	ok, err := re.MatchString(subject)
	if err == nil {
		return ok, nil
	}
	why := "timed out after " + re.MatchTimeout.String()
	if errors.Is(err, regexp2.ErrBacktrackingStackLimit) {
		why = "backtracking limit exceeded"
	}
	return false, fmt.Errorf("regex %s: %w (%s)", jsonQuote(raw), ErrRegexAborted, why)
}

// TextMatches reports whether one text token matches text (MT-01…MT-06, the
// `reply` and `raised.reason` matcher):
//   - a plain string (anything not regex-shaped, MT-01) is a case-sensitive
//     substring: TextMatches("refund", "no refund today") == true;
//   - a `/pattern/flags` string is an ECMAScript regex searched anywhere in text
//     (MT-03, MT-06): TextMatches("/^no/i", "No refund") == true.
//
// The error is non-nil, with false, when a regex-shaped pattern is malformed
// (text: the full MT-04 message `malformed regex "<raw>": <engine message>`;
// the parser rejects these, so a malformed pattern is never
// matched as a literal) or when the engine aborted the match (ErrRegexAborted;
// timeout or backtracking limit). Compiled patterns are cached.
func TextMatches(pattern, text string) (bool, error) {
	p, flags, ok := splitRegexForm(pattern)
	if !ok {
		return strings.Contains(text, pattern), nil
	}
	re, err := compileRegexCached(pattern, p, flags)
	if err != nil {
		var me *malformedRegexError
		if errors.As(err, &me) {
			return false, malformedRegexFailure{me}
		}
		return false, err
	}
	return regexSearch(pattern, re, text)
}

// PartialMatch reports whether actual satisfies the declared expected shape —
// the one matcher of `calledTool`/`notCalledTool`/`blockedTool` `input` and of
// `mocks[].whenInput` (MT-10; API-05):
//   - expected mapping → actual is a mapping holding every expected key, each
//     value matching recursively; extra actual keys are ignored (MT-10.1);
//   - expected list → actual is a list of the same length, matched element-wise
//     in order by these same rules (MT-10.2);
//   - expected `/pattern/flags` string → the regex is searched in the
//     stringified actual — JavaScript's String(actual), with null read as ""
//     (42 → "42", [1,2] → "1,2", a mapping → "[object Object]") (MT-10.3);
//   - expected plain string → actual is an equal string (MT-10.4);
//   - expected number → actual is a number of the same value, across Go numeric
//     types and json.Number (1 matches 1.0; integers compare exactly, anything
//     else as float64; NaN matches nothing) (MT-10.5);
//   - expected boolean / null → actual is identical (MT-10.6).
//
// There is no other coercion ("4" does not match 4). Shapes: mappings are
// map[string]any or any map (keys read as JavaScript property names), lists are
// []any or any slice/array, json.RawMessage is decoded, nil maps, slices and
// pointers are null. actual is the argument object as the transcript records it,
// `${{…}}` references in reference form (MT-11). A malformed regex-shaped
// expected string (rejected at parse time, MT-04) compares as a literal, as the
// reference does. An aborted regex match (ErrRegexAborted) yields false; use
// PartialMatchErr to tell it apart from a mismatch.
func PartialMatch(expected, actual any) bool {
	ok, err := PartialMatchErr(expected, actual)
	return ok && err == nil
}

// PartialMatchErr is PartialMatch that also reports an aborted regex match: the
// result is (false, err wrapping ErrRegexAborted) when a regex leaf timed out or
// exhausted its backtracking budget before any definite mismatch was found.
// Mapping keys are visited in sorted order, list elements in order, so the
// outcome is deterministic.
func PartialMatchErr(expected, actual any) (bool, error) {
	ek, ev := mtClassify(expected)
	switch ek {
	case mtkList:
		ak, av := mtClassify(actual)
		if ak != mtkList {
			return false, nil
		}
		el, al := ev.([]any), av.([]any)
		if len(el) != len(al) {
			return false, nil
		}
		for i := range el {
			if ok, err := PartialMatchErr(el[i], al[i]); !ok || err != nil {
				return false, err
			}
		}
		return true, nil
	case mtkMap:
		ak, av := mtClassify(actual)
		if ak != mtkMap {
			return false, nil
		}
		em, am := ev.(map[string]any), av.(map[string]any)
		keys := make([]string, 0, len(em))
		for k := range em {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			a, present := am[k]
			if !present {
				return false, nil
			}
			if ok, err := PartialMatchErr(em[k], a); !ok || err != nil {
				return false, err
			}
		}
		return true, nil
	case mtkString:
		s := ev.(string)
		if p, flags, ok := splitRegexForm(s); ok {
			if re, err := compileRegexCached(s, p, flags); err == nil {
				return regexSearch(s, re, mtString(actual))
			}
		}
		ak, av := mtClassify(actual)
		return ak == mtkString && av.(string) == s, nil
	case mtkNumber:
		ak, av := mtClassify(actual)
		return ak == mtkNumber && mtNumbersEqual(ev, av), nil
	default:
		return mtScalarsIdentical(ek, ev, actual), nil
	}
}

// InputMatches applies a declared input matcher to a tool call's arguments:
// an absent matcher (nil, or a nil map) matches every call — `calledTool`
// without `input` (AX-07), a mock without `whenInput` (CD-50) — and any other
// matcher is PartialMatch(want, args) (MT-10, MT-11; CD-52: args are the
// arguments at the mock seam, after governance, or a delegation's resolved
// arguments).
func InputMatches(want, args any) bool {
	if k, _ := mtClassify(want); k == mtkNull {
		return true
	}
	return PartialMatch(want, args)
}

// DeepEqual is JSON-shaped structural equality between a YAML expectation and
// a stored JSON value (MT-20; `variables.expect`, AX-04): mappings have the
// same key set and pairwise deep-equal values (key order irrelevant); lists have
// the same length and pairwise deep-equal elements in order; numbers compare by
// value across Go numeric types and json.Number (as in PartialMatch); strings
// exactly — never as regexes; booleans and null by identity. Shapes as in
// PartialMatch.
func DeepEqual(a, b any) bool {
	ak, av := mtClassify(a)
	bk, bv := mtClassify(b)
	if ak != bk {
		return false
	}
	switch ak {
	case mtkMap:
		am, bm := av.(map[string]any), bv.(map[string]any)
		if len(am) != len(bm) {
			return false
		}
		for k, x := range am {
			y, present := bm[k]
			if !present || !DeepEqual(x, y) {
				return false
			}
		}
		return true
	case mtkList:
		al, bl := av.([]any), bv.([]any)
		if len(al) != len(bl) {
			return false
		}
		for i := range al {
			if !DeepEqual(al[i], bl[i]) {
				return false
			}
		}
		return true
	case mtkNumber:
		return mtNumbersEqual(av, bv)
	default:
		return mtScalarsIdentical(ak, av, b)
	}
}

// mtKind is the JSON kind of a Go value.
type mtKind int

const (
	mtkOther mtKind = iota
	mtkNull
	mtkBool
	mtkNumber
	mtkString
	mtkList
	mtkMap
)

// mtClassify returns v's JSON kind and a canonical form: nil, bool, string, a
// number (a Go numeric value or json.Number), []any or map[string]any.
func mtClassify(v any) (mtKind, any) {
	switch x := v.(type) {
	case nil:
		return mtkNull, nil
	case string:
		return mtkString, x
	case bool:
		return mtkBool, x
	case map[string]any:
		if x == nil {
			return mtkNull, nil
		}
		return mtkMap, x
	case []any:
		if x == nil {
			return mtkNull, nil
		}
		return mtkList, x
	case float64, int, int64, float32, int8, int16, int32, uint, uint8, uint16, uint32, uint64, uintptr:
		return mtkNumber, x
	case json.Number:
		if _, err := strconv.ParseFloat(string(x), 64); err != nil && !errors.Is(err, strconv.ErrRange) {
			return mtkOther, x
		}
		return mtkNumber, x
	case json.RawMessage:
		if x == nil {
			return mtkNull, nil
		}
		dec := json.NewDecoder(strings.NewReader(string(x)))
		dec.UseNumber()
		var d any
		if err := dec.Decode(&d); err != nil {
			return mtkOther, x
		}
		return mtClassify(d)
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return mtkNull, nil
		}
		return mtClassify(rv.Elem().Interface())
	case reflect.Map:
		if rv.IsNil() {
			return mtkNull, nil
		}
		m := make(map[string]any, rv.Len())
		for it := rv.MapRange(); it.Next(); {
			m[mtString(it.Key().Interface())] = it.Value().Interface()
		}
		return mtkMap, m
	case reflect.Slice:
		if rv.IsNil() {
			return mtkNull, nil
		}
		fallthrough
	case reflect.Array:
		l := make([]any, rv.Len())
		for i := range l {
			l[i] = rv.Index(i).Interface()
		}
		return mtkList, l
	case reflect.String:
		return mtkString, rv.String()
	case reflect.Bool:
		return mtkBool, rv.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return mtkNumber, rv.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return mtkNumber, rv.Uint()
	case reflect.Float32, reflect.Float64:
		return mtkNumber, rv.Float()
	}
	return mtkOther, v
}

// mtScalarsIdentical compares a classified bool/null/other expected value with
// actual by identity (MT-10.6, MT-20).
func mtScalarsIdentical(ek mtKind, ev, actual any) bool {
	ak, av := mtClassify(actual)
	if ak != ek {
		return false
	}
	switch ek {
	case mtkNull:
		return true
	case mtkBool:
		return ev.(bool) == av.(bool)
	case mtkString:
		return ev.(string) == av.(string)
	}
	// mtkOther: values JSON cannot express compare with Go equality when comparable.
	ta, tb := reflect.TypeOf(ev), reflect.TypeOf(av)
	return ta == tb && ta != nil && ta.Comparable() && ev == av
}

// mtNumbersEqual compares two classified numbers: exactly when both are
// integers (Go integer types, or json.Number written without fraction or
// exponent), otherwise as float64 (so 1 == 1.0, -0 == 0, NaN != NaN).
func mtNumbersEqual(a, b any) bool {
	if x, ok := a.(float64); ok { // the common JSON case, without allocation
		return x == mtFloat(b)
	}
	if y, ok := b.(float64); ok {
		return mtFloat(a) == y
	}
	ai, aInt := mtExactInt(a)
	if !aInt {
		return mtFloat(a) == mtFloat(b)
	}
	bi, bInt := mtExactInt(b)
	if !bInt {
		return mtFloat(a) == mtFloat(b)
	}
	return ai.Cmp(bi) == 0
}

func mtExactInt(v any) (*big.Int, bool) {
	switch x := v.(type) {
	case int:
		return big.NewInt(int64(x)), true
	case int8:
		return big.NewInt(int64(x)), true
	case int16:
		return big.NewInt(int64(x)), true
	case int32:
		return big.NewInt(int64(x)), true
	case int64:
		return big.NewInt(x), true
	case uint:
		return new(big.Int).SetUint64(uint64(x)), true
	case uint8:
		return new(big.Int).SetUint64(uint64(x)), true
	case uint16:
		return new(big.Int).SetUint64(uint64(x)), true
	case uint32:
		return new(big.Int).SetUint64(uint64(x)), true
	case uint64:
		return new(big.Int).SetUint64(x), true
	case uintptr:
		return new(big.Int).SetUint64(uint64(x)), true
	case json.Number:
		if strings.ContainsAny(string(x), ".eE") {
			return nil, false
		}
		return new(big.Int).SetString(string(x), 10)
	}
	return nil, false
}

func mtFloat(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case float32:
		return float64(x)
	case int:
		return float64(x)
	case int8:
		return float64(x)
	case int16:
		return float64(x)
	case int32:
		return float64(x)
	case int64:
		return float64(x)
	case uint:
		return float64(x)
	case uint8:
		return float64(x)
	case uint16:
		return float64(x)
	case uint32:
		return float64(x)
	case uint64:
		return float64(x)
	case uintptr:
		return float64(x)
	case json.Number:
		f, _ := strconv.ParseFloat(string(x), 64) // ±Inf on overflow, as JSON.parse
		return f
	}
	return math.NaN()
}

// mtString is JavaScript's String(v) for a JSON-shaped value, with null (and an
// absent value) read as "" (MT-10.3: `String(actual ?? "")`): numbers in
// Number#toString form, lists joined with "," (null elements empty), mappings
// "[object Object]".
func mtString(v any) string {
	k, x := mtClassify(v)
	switch k {
	case mtkNull:
		return ""
	case mtkString:
		return x.(string)
	case mtkBool:
		return strconv.FormatBool(x.(bool))
	case mtkNumber:
		return mtNumberString(mtFloat(x))
	case mtkList:
		l := x.([]any)
		parts := make([]string, len(l))
		for i, e := range l {
			parts[i] = mtString(e)
		}
		return strings.Join(parts, ",")
	case mtkMap:
		return "[object Object]"
	}
	return fmt.Sprint(x)
}

// mtNumberString is JavaScript's Number.prototype.toString() (radix 10).
func mtNumberString(f float64) string { return spec.FormatJSNumber(f) }

func mtAbs(i int) int {
	if i < 0 {
		return -i
	}
	return i
}
