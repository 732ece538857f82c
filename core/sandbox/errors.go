package sandbox

// ImportError is ForbiddenSandboxImportError (spec 03 CS-21): the script imports a module
// whose specifier is neither "@archmax-ai/harness" nor "@archmax-ai/harness/…".
// Line and Column (1-based, Column in UTF-16 units) locate the import keyword in File.
type ImportError struct {
	Specifier string
	File      string
	Line      int
	Column    int
}

// Name is the error's name in the reference runtime.
func (e *ImportError) Name() string { return "ForbiddenSandboxImportError" }

// Error returns the exact CS-21 message; " in <file>" appears only when File is known.
func (e *ImportError) Error() string { return importRefusal(e.Specifier, e.File) }

// SyntaxError is source that cannot be prepared (spec 03 CS-20…CS-23, SB-06): a parse error,
// module syntax the sandbox does not offer (re-exports, dynamic import(), import.meta,
// import attributes, nested import/export), or a top-level return. Line and Column are
// 1-based positions in File, Column in UTF-16 units.
type SyntaxError struct {
	File    string
	Line    int
	Column  int
	Message string
}

// Error renders "SyntaxError: <file>:<line>:<col>: <msg>".
func (e *SyntaxError) Error() string {
	return syntaxErrorText(e.File, e.Line, e.Column, e.Message)
}

// ScriptError is an uncaught throw or a rejected completion promise (spec 03 CS-43, CS-44).
// Message is "<Name>: <message>" for Error values (e.g. "TypeError: x is not a function") and
// the JSON text of any other thrown value. File/Line/Column locate the first stack frame in
// the script (Column in UTF-16 units); all are zero/empty when no frame is known.
type ScriptError struct {
	Message string
	File    string
	Line    int
	Column  int
}

// Error returns Message; the position stays in the fields so callers decide how to render it.
func (e *ScriptError) Error() string { return e.Message }

// TimeoutError reports a run that outlived Quotas.TimeoutMs (spec 03 CS-61, SB-04, OQ-2).
type TimeoutError struct {
	TimeoutMs int
}

// Error renders "timed out after <ms> ms".
func (e *TimeoutError) Error() string { return timedOut(e.TimeoutMs) }

// QuotaError reports a breached quota (spec 03 CS-61, OQ-3, OQ-5): maxPtcCalls, maxResultChars,
// memoryLimitBytes, the call-stack depth, or a guard of a native builtin that refused work past
// the sandbox's limits (quotas.go; its message names the builtin and the limit). Message is the
// spec's exact text where it has one. File/Line/Column locate a guard's refusal in the script
// like ScriptError's (zero when unknown, and for the other quotas).
type QuotaError struct {
	Message string
	File    string
	Line    int
	Column  int
}

// Error returns Message.
func (e *QuotaError) Error() string { return e.Message }

// AbortError reports that the caller's context ended the run (spec 03 CS-62): the turn was
// aborted. Cause is context.Cause of the caller's context.
type AbortError struct {
	Cause error
}

// Error renders "the turn was aborted", followed by the cause when there is one.
func (e *AbortError) Error() string {
	if e.Cause == nil {
		return turnAborted
	}
	return turnAborted + ": " + e.Cause.Error()
}

// Unwrap returns Cause, so errors.Is(err, context.Canceled) works.
func (e *AbortError) Unwrap() error { return e.Cause }

// DefinitionError reports a script that registered its state function wrongly (spec 03 CS-25):
// an `export default` of a non-function, or two different functions registered in one run.
type DefinitionError struct {
	Message string
}

// Error returns Message.
func (e *DefinitionError) Error() string { return e.Message }

// toolAbortedError is the cause a host call's context carries when the turn is aborted, and
// the refusal of any call made after that (spec 03 CS-62, BR-13 class 4).
type toolAbortedError struct {
	tool  string
	cause error
}

func (e *toolAbortedError) Error() string { return toolAborted(e.tool) }

func (e *toolAbortedError) Unwrap() error { return e.cause }
