package sandbox

// The texts scripts and the engine read from a run (spec 03 §1.4, §1.10, §5.2, §8): the import
// refusal, cancellation, quota, timeout and definition errors, the preparation diagnostics and
// the console cut line. They follow the reference implementation @archmax-ai/harness (MIT; see
// NOTICE) for compatibility; changing one is a contract change.

import (
	"errors"
	"strconv"
	"time"
)

// importRefusal is CS-21's exact ForbiddenSandboxImportError message; " in <file>" only when the
// file is known.
func importRefusal(specifier, file string) string {
	in := ""
	if file != "" {
		in = " in " + file
	}
	return "sandbox scripts may import only from '@archmax-ai/harness/*' type-carrier entry points; found 'import ... from \"" +
		specifier + "\"'" + in + ". Sandbox scripts are self-contained — inline the logic or use the tools bridge."
}

// turnAborted is CS-62's AbortError text, followed by ": <cause>" when the cause is known.
const turnAborted = "the turn was aborted"

// toolAborted is CS-62's rejection of a host call in flight or made after the abort (BR-13
// class 4): "Tool '<name>' failed: the turn was aborted".
func toolAborted(tool string) string { return "Tool '" + tool + "' failed: " + turnAborted }

// errRunEnded is the cause a host call's context carries when the run ended first (SB-05).
var errRunEnded = errors.New("the script finished before the tool call completed")

// timedOut is the TimeoutError text (CS-61, SB-04, OQ-2): "timed out after <ms> ms".
func timedOut(ms int) string { return "timed out after " + strconv.Itoa(ms) + " ms" }

// maxPtcCallsExceeded is CS-61's rejection of the host call over maxPtcCalls.
func maxPtcCallsExceeded(max int) string {
	return "script exceeded maxPtcCalls (" + strconv.Itoa(max) + ")"
}

// resultTooLong is CS-61's rejection of a host result over maxResultChars (OQ-5: reject, never
// truncate); n and max count UTF-16 units.
func resultTooLong(n, max int) string {
	return "tool result of " + strconv.Itoa(n) + " characters exceeds maxResultChars (" + strconv.Itoa(max) + ")"
}

// memoryExceeded is OQ-3's QuotaError text for a run over memoryLimitBytes.
func memoryExceeded(limit int64) string {
	return "script exceeded memoryLimitBytes (" + strconv.FormatInt(limit, 10) + ")"
}

// callStackExceeded is OQ-2's QuotaError text for runaway recursion.
func callStackExceeded(frames int) string {
	return "script exceeded the maximum call stack size (" + strconv.Itoa(frames) + " frames)"
}

// deadlockMessage is the ScriptError of a run awaiting what nothing can settle (SB-03).
const deadlockMessage = "the script awaits a promise that can never settle: no tool call is pending"

// uncaughtException is the ScriptError text of a thrown value that has no text at all (CS-43).
const uncaughtException = "uncaught exception"

// maxFailureMessage caps, in UTF-16 units, how much of a thrown value's description a failure
// carries into the [error] note, the trail and the events (and so the next model request).
const maxFailureMessage = 2000

// failureTruncated ends a failure message cut to maxFailureMessage; over counts the units
// left out: "… [<over> more characters]".
func failureTruncated(over int) string {
	return "… [" + strconv.Itoa(over) + " more characters]"
}

// DefinitionError texts (CS-25) and the TypeError of defineCodeState's wrong argument.
const (
	defaultNotFunction = "the default export is not a function"
	twoStateFunctions  = "two different state functions were registered"
	defineNotFunction  = "defineCodeState expects a function"
)

// argNotJSON is BR-10's TypeError for a tool argument JSON.stringify gives no text for.
func argNotJSON(tool string) string {
	return "the argument of tool '" + tool + "' is not JSON-serialisable"
}

// argTooLarge is BR-10's TypeError for a tool argument over MaxArgBytes (sizes in bytes).
func argTooLarge(tool string, n, max int) string {
	return "the argument of tool '" + tool + "' is " + strconv.Itoa(n) + " bytes of JSON, over the limit of " + strconv.Itoa(max)
}

// logCutLine is the last console line of a run over its console budget (CS-50); 65536 is
// maxLogBytes.
const logCutLine = "[console output truncated: more than 65536 bytes]"

// syntaxErrorText renders a SyntaxError (CS-20…CS-23, SB-06): "SyntaxError: <file>:<line>:<col>: <msg>".
func syntaxErrorText(file string, line, col int, msg string) string {
	return "SyntaxError: " + file + ":" + strconv.Itoa(line) + ":" + strconv.Itoa(col) + ": " + msg
}

// Preparation diagnostics (SB-06; CS-20, CS-22 module syntax the sandbox does not offer). The
// plain ones keep the wording JavaScript parsers use.
const (
	msgDynamicImport    = "dynamic import() is not available in the sandbox"
	msgImportMeta       = "import.meta is not available in the sandbox"
	msgImportAttributes = "import attributes are not supported in the sandbox"
	msgReexportAll      = "re-exports (export * from) are not available in the sandbox"
	msgReexport         = "re-exports (export … from) are not available in the sandbox"
	msgNestedImport     = "'import' and 'export' may only appear at the top level"
	msgDuplicateDefault = "Duplicate export of 'default'"
	msgIllegalReturn    = "Illegal return statement"
	msgUnexpectedEnd    = "Unexpected end of input"
)

// unexpectedToken is SB-06's diagnostic for a token a module statement cannot hold.
func unexpectedToken(raw string) string { return "Unexpected token " + raw }

// reservedName is SB-06's diagnostic for a script using the wrapper's own parameter name.
func reservedName(name string) string { return "'" + name + "' is reserved in sandbox scripts" }

// msgNoDefaultExport is the SyntaxError of an `export default` in an agent script (AS-01, AS-05,
// decision): an agent script has no state function; its result is its completion value.
const msgNoDefaultExport = "export default is not available in agent scripts: the last expression statement (or a top-level return) is the result"

// errorPrefix starts the text of every failed agent-script call (AS-05): "Error: <message>".
const errorPrefix = "Error: "

// replResetNote follows the error of an agent-script call that ended its REPL runtime (SB-04:
// a timeout, a quota, an abort), so the model knows its earlier definitions are gone (AS-03).
const replResetNote = "(The REPL was reset: variables and functions defined by earlier calls are gone.)"

// truncationMarker ends an agent-script result cut to maxResultChars (AS-05); over counts the
// UTF-16 units left out, max is the quota: "… [truncated: <over> characters over maxResultChars <max>]".
func truncationMarker(over, max int) string {
	return "\n… [truncated: " + strconv.Itoa(over) + " characters over maxResultChars " + strconv.Itoa(max) + "]"
}

// The guards of natives that no interrupt reaches (CS-61, goja.md §4–§5) throw a RangeError
// with one of these texts; uncaught, it fails the run as a QuotaError with the same message.
// Each names the builtin (or the operation) and the sandbox's limit.

// limitText renders a limit with thousands separators: 65535 => "65,535".
func limitText(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// guardArgCount is the refusal of a call with more arguments than maxArguments.
func guardArgCount(builtin string, n int64) string {
	return builtin + ": argument count " + strconv.FormatInt(n, 10) + " exceeds the sandbox's limit of " + limitText(maxArguments)
}

// guardTooLarge is the refusal of a result over a limit, n and limit in unit (characters,
// elements, bytes, bits).
func guardTooLarge(builtin string, n int64, unit string, limit int64) string {
	return builtin + ": result too large (" + strconv.FormatInt(n, 10) + " " + unit + ", over the sandbox's limit of " + limitText(limit) + ")"
}

// guardArrayLength is the refusal of an array (or array-like) longer than maxElements.
func guardArrayLength(builtin string, n int64) string {
	return builtin + ": array length " + strconv.FormatInt(n, 10) + " exceeds the sandbox's limit of " + limitText(maxElements)
}

// guardTooMany is the refusal of a count the guard stopped counting at (what: "matches",
// "elements", "replacements").
func guardTooMany(builtin, what string, limit int64) string {
	return builtin + ": too many " + what + " (more than the sandbox's limit of " + limitText(limit) + ")"
}

// guardTooManyCounted is guardTooMany for a count the guard knows.
func guardTooManyCounted(builtin, what string, n, limit int64) string {
	return builtin + ": too many " + what + " (" + strconv.FormatInt(n, 10) + ", over the sandbox's limit of " + limitText(limit) + ")"
}

// guardDepth is the refusal of a JSON text nested deeper than maxJSONDepth.
func guardDepth(builtin string, n int64) string {
	return builtin + ": nesting depth " + strconv.FormatInt(n, 10) + " exceeds the sandbox's limit of " + limitText(maxJSONDepth)
}

// guardTooLongResult is the refusal of a result a guard stopped building at maxStringUnits
// (its full length unknown).
func guardTooLongResult(builtin string) string {
	return builtin + ": result too large (over the sandbox's limit of " + limitText(maxStringUnits) + " characters)"
}

// guardTooDeep is the refusal of a value a guard stopped walking at maxJSONDepth levels.
func guardTooDeep(builtin string) string {
	return builtin + ": nesting deeper than the sandbox's limit of " + limitText(maxJSONDepth)
}

// guardRegexTimeout is the failure of a backtracking match that ran out regexMatchTimeout.
func guardRegexTimeout(op string, timeout time.Duration) string {
	return op + ": the regular expression ran past the sandbox's match timeout of " + limitText(timeout.Milliseconds()) + " ms"
}

// Refusals of source the guards could not cover (SB-06).
const (
	msgWithStatement = "'with' statements are not available in the sandbox"
)

// Refusals of a source before goja parses it (sourcecheck.go). A script's own source fails with
// them as its SyntaxError; eval and the Function constructors throw them as a guard's RangeError,
// prefixed with the builtin.

func sourceTooLarge(n int) string {
	return "source too large (" + strconv.Itoa(n) + " bytes, over the sandbox's limit of " + limitText(maxSourceBytes) + ")"
}

func sourceTooDeep() string {
	return "source nested too deeply (more than the sandbox's limit of " + limitText(maxSourceNesting) + " levels)"
}

func sourceChainTooLong() string {
	return "expression too long (more than the sandbox's limit of " + limitText(maxOperatorChain) + " chained operators)"
}

func sourceTooComplex() string {
	return "source too complex to compile (nested and chained past the sandbox's limit)"
}

func sourceTooManyLabels() string {
	return "too many nested labels (more than the sandbox's limit of " + limitText(maxNestedLabels) + ")"
}
