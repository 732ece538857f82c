package session

// Runtime-emitted texts that are part of the workflow contract (DESIGN.md §9): runtime
// notes, control-tool replies and refusals, failure reasons. Scripts and cases match on
// them. They follow the reference implementation @archmax-ai/harness (MIT; see NOTICE);
// the spec section each comes from is named beside it.

import (
	"fmt"
	"strings"
)

// Notes (spec 02 §5.3; 03 CS-46 and OQ-19).
func noteCode(state, to, reason string) string {
	return fmt.Sprintf("[code] '%s' moved the run to '%s': %s. You are now in '%s'.", state, to, trimReason(reason), to)
}

func noteError(state, reason, to string) string {
	return fmt.Sprintf("[error] The '%s' state failed: %s. Routing to the '%s' error handler.", state, trimReason(reason), to)
}

// trimReason drops trailing whitespace and one trailing '.' so templates that append ". "
// never produce ".." (03 OQ-19).
func trimReason(r string) string {
	r = strings.TrimRight(r, " \t\r\n")
	return strings.TrimSuffix(r, ".")
}

// Control replies and refusals (spec 01 §7.2, 02 §1.7, 03 CS-35, CS-39a, CS-42).
const (
	advanceRejectedPrefix = "archmax_advance rejected: "
	resetRejectedNoReason = "archmax_reset rejected: a non-empty 'reason' is required — say why the run has to start over."
)

func replyAdvanced(to string) string {
	return fmt.Sprintf("Advanced to state '%s'. You may now use the tools allowed in this state.", to)
}

func replyReset(entry string) string {
	return fmt.Sprintf("Reset to state '%s'. The run continues from its entry state; earlier messages, files and variables are unchanged.", entry)
}

func replyScriptAdvance(to string) string {
	return fmt.Sprintf("Recorded: the session moves to '%s' when the script finishes.", to)
}

func replyScriptRaise(code string) string {
	return fmt.Sprintf("Recorded: the session ends as failed (%s) when the script finishes.", code)
}

func replyRaised(code string) string {
	return fmt.Sprintf("Raised '%s': the run ends as failed.", code)
}

func alreadyDecided(state string) string {
	return fmt.Sprintf("code state '%s' has already decided this run", state)
}

const raiseNotAlone = "archmax_raise rejected: it must be the only tool call in its message — call it on its own to end the run."

func notATool(name string) string {
	return fmt.Sprintf("[workflow] '%s' is not a tool. Call one of the tools you were given, by its exact name.", name)
}

func notRunAfterMove(tool, to string) string {
	return fmt.Sprintf("'%s' did not run: an earlier call in this message already moved the run to '%s'. Call it again there if it is still needed.", tool, to)
}

func pathEscapeRefusal(tool, raw string) string {
	return fmt.Sprintf("Error: '%s' on '%s': it resolves outside the workspace root.", tool, raw)
}

// Failure reasons (03 CS-40, CS-44; 02 §1.5, §3.3.13).
func codeUndecided(state string) string {
	return fmt.Sprintf("code state '%s' finished without calling archmax_advance or archmax_raise", state)
}

func codeUnreadable(state, path, cause string) string {
	return fmt.Sprintf("code state '%s': script '%s' could not be read: %s", state, path, cause)
}

func codeTimedOut(state string, ms int) string {
	return fmt.Sprintf("code state '%s' timed out after %d ms", state, ms)
}

func codeFailed(state, msg string) string {
	return fmt.Sprintf("code state '%s' failed: %s", state, msg)
}

func codeDefinition(state, msg string) string {
	return fmt.Sprintf("code state '%s': %s", state, msg)
}

const stepLimitExceeded = "step limit exceeded"

func maxTurnsExhausted(state string, n int) string {
	return fmt.Sprintf("state '%s' exhausted its turn budget (maxTurns: %d)", state, n)
}

func modelTimedOut(state string, ms int) string {
	return fmt.Sprintf("state '%s' model call exceeded its time budget (timeoutMs: %d)", state, ms)
}

func notSupportedYet(stateType, state string) string {
	return fmt.Sprintf("state '%s' is a %s state, which this runtime does not support yet", state, stateType)
}

func disabledRefusal(slug string) string {
	return fmt.Sprintf("Refusing to start: workflow '%s' is disabled.", slug)
}

const malformedToolCall = "the model produced a tool call whose name or id no model endpoint accepts; it was not run"

const truncatedToolCall = "the model's answer was cut off at its token limit in the middle of a tool call; the incomplete call was not run"
