package session

// Runtime-emitted texts that are part of the workflow contract (DESIGN.md §9): runtime
// notes, control-tool replies and refusals, failure reasons. Scripts and cases match on
// them. They follow the reference implementation @archmax-ai/harness (MIT; see NOTICE);
// the spec section each comes from is named beside it.

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
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

// noteDecision is the [decision] note (spec 02 §5.3).
func noteDecision(state, to, typ, comment string) string {
	label := fmt.Sprintf("'%s'", to)
	if typ != "" && typ != "none" {
		label = fmt.Sprintf("%s → '%s'", typ, to)
	}
	s := fmt.Sprintf("[decision] A human selected %s at the '%s' checkpoint", label, state)
	if comment != "" {
		s += ": " + comment + "."
	} else {
		s += "."
	}
	return s + fmt.Sprintf(" The run has already been routed: you are now in '%s'. Do its work and continue from here.", to)
}

// noteEvent is the [event] note (spec 02 §5.3); delivered values are quoted as JSON in
// name order.
func noteEvent(trigger, state string, vars map[string]any, withMessage bool) string {
	s := fmt.Sprintf("[event] '%s' arrived while the run waited in '%s'", trigger, state)
	if len(vars) > 0 {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(vars)) {
			b, _ := json.Marshal(vars[k])
			parts = append(parts, k+"="+string(b))
		}
		s += ": " + strings.Join(parts, ", ") + " (also readable as run variables)"
	} else {
		s += "."
	}
	s += fmt.Sprintf(" You are still in '%s'; continue from here.", state)
	if withMessage {
		s += " The person's message that came with it follows."
	}
	return s
}

// Reply-only situations and directive (spec 02 §14.3).
type replySituation int

const (
	handoffFresh  replySituation = iota // a fresh handoff into a human state
	handoffRouted                       // a decision routed the run into another human state
	replyOnPark                         // a person's message on a decision park
	inputPark                           // a wait's closing message
)

func replyOnlyDirective(s replySituation, label, reason string) string {
	var first string
	switch s {
	case replyOnPark:
		first = fmt.Sprintf("This run is parked at the %s checkpoint and a person is deciding what happens next. Answer the message in front of you from what the conversation already shows: what has been done, and that the decision is with them. You cannot make that decision, predict it, or announce it.", label)
	case inputPark:
		first = fmt.Sprintf("You have parked this run: it stays in %s until something arrives from outside (%s). Tell whoever you are talking to what you have done and what you are waiting for.", label, reason)
	case handoffRouted:
		first = fmt.Sprintf("A decision has routed this run to %s, which is now waiting for a person's decision. Tell whoever you are talking to where the run stands and that it is with a reviewer — do not promise what they will decide.", label)
	default:
		first = fmt.Sprintf("You have just handed this run to a person: %s is now waiting for their decision, and your own work here is finished. Tell whoever you are talking to what you did and that it is now with a reviewer — do not promise what they will decide.", label)
	}
	return first + "\n\nWrite one short message to them, in your own voice, and nothing else. This turn has no tools: you cannot read, write, move the run, or do any further work, and the run does not continue when you finish — it stays parked until someone else acts."
}

// archmax_wait texts (spec 01 §7.2, 02 §4.2; the scheduled-wake sentence is this bundle's).
const waitNoReason = "archmax_wait rejected: a non-empty 'reason' is required — say what the run is waiting for."

func replyWaiting(state, resumeAt string) string {
	s := fmt.Sprintf("Waiting in state '%s'. The run is parked here and will continue in this same state when an event is delivered; stop working now.", state)
	if resumeAt != "" {
		s += fmt.Sprintf(" It will be woken at %s if nothing arrives first; an earlier event resumes it just the same.", resumeAt)
	}
	return s
}

// replyIgnores is the warning of a reply that carried variables or a trigger: a person holds
// the session, so neither is applied (spec 02 §1.3 step 6 [P]).
func replyIgnores(variables []string, trigger string) string {
	var parts []string
	if len(variables) > 0 {
		parts = append(parts, "variables "+strings.Join(variables, ", "))
	}
	if trigger != "" {
		parts = append(parts, "trigger '"+trigger+"'")
	}
	return "The session is parked at a human state, so this message is a reply and its " + strings.Join(parts, " and ") + " were not applied."
}

// deliveredTriggerIgnored warns that a delivery carried a variable named `trigger`, which
// is the delivered trigger id (spec 02 §4.3 step 3).
const deliveredTriggerIgnored = "Delivered variable 'trigger' ignored: the run's `trigger` is the delivered trigger id."

// Grader states (spec 03 §3.2–§3.3). The preamble and the opening message are ours (GR-11,
// GR-12 leave the text to the implementation); the note and the undecided failure are exact.
func noteGrader(state, to, reason string) string {
	return fmt.Sprintf("[grader] '%s' moved the run to '%s': %s. You are now in '%s'.", state, to, trimReason(reason), to)
}

func graderUndecided(state string) string {
	return fmt.Sprintf("grader state '%s' finished without calling archmax_advance or archmax_raise", state)
}

func replyGraderAdvance(to string) string {
	return fmt.Sprintf("Recorded: the session moves to '%s' when the grader finishes.", to)
}

func replyGraderRaise(code string) string {
	return fmt.Sprintf("Recorded: the session ends as failed (%s) when the grader finishes.", code)
}

func graderAlreadyDecided(state string) string {
	return fmt.Sprintf("grader state '%s' has already decided this run", state)
}

func graderOverTurns(state string, n int) string {
	return fmt.Sprintf("grader state '%s' exhausted its turn budget (maxTurns: %d) without calling archmax_advance or archmax_raise", state, n)
}

func graderTimedOut(state string, ms int) string {
	return fmt.Sprintf("grader state '%s' exceeded its time budget (timeoutMs: %d)", state, ms)
}

func graderModelFailed(state, cause string) string {
	return fmt.Sprintf("grader state '%s' could not run its model: %s", state, cause)
}

// graderPreamble is the grader's system prompt before the state's instructions (GR-11): it
// judges work it was not shown, reads the session with archmax_get_history and the work
// with its tools, and must decide along a listed transition or raise.
func graderPreamble(state string, transitions []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "You are the grader of the workflow state '%s': an independent judge of work you did not do and were not shown.\n\n", state)
	b.WriteString("Read what happened with `archmax_get_history` (the session's messages and its trail) and inspect the work itself with your other tools. ")
	b.WriteString("Judge it only against the criteria below; you do not talk to the person, and nothing you write reaches them.\n\n")
	b.WriteString("End by calling exactly one decision:\n")
	for _, t := range transitions {
		b.WriteString("- " + t + "\n")
	}
	b.WriteString("- `archmax_raise` with a short `code` and a `reason`, when the run cannot go on at all.\n\n")
	b.WriteString("Call `archmax_advance` with `to` set to one of the targets above and a `reason` the next state will read: say what you checked and, when you send the work back, exactly what must change. ")
	b.WriteString("Your decision is final once accepted; answering in text without a decision fails the state.\n\n## Criteria\n\n")
	return b.String()
}

// graderOpening is the grader's first user message (GR-12): the state it judges, the state
// the run came from and the reason it was sent here.
func graderOpening(state, from, reason string) string {
	s := fmt.Sprintf("Grade the work that brought the run into '%s'", state)
	if from != "" {
		s += fmt.Sprintf(" from '%s'", from)
	}
	s += "."
	if r := strings.TrimSpace(reason); r != "" {
		s += " The reason given: " + r
	}
	return s + "\nRead the history and the work, then decide."
}

// Agent scripts (spec 03 §4.7: the two tools' descriptions are model-facing protocol, emitted
// verbatim; AS-05: the unreadable-file answer).
const (
	evalDescription = "Evaluate JavaScript in a sandboxed REPL with persistent state across calls, console capture, and `tools.*` for calls to this state's tools. Prefer it over many small tool calls when work is loops, filtering, or arithmetic. Every `tools.*` call is governed by the workflow graph exactly as a direct call is."
	evalCodeParam   = "JavaScript to evaluate. The last expression is returned."
	runDescription  = "Run an authored workspace JavaScript file in the same sandboxed REPL as `archmax_eval`, with `tools.*` for calls to this state's tools. The script reads its input as the global `args`: the arguments you pass plus `args.variables`, the session's variables by name. Which files may run is enforced by the workflow graph."
	runPathParam    = "Workspace-relative path, e.g. skills/orders/scripts/check.js."
	runArgsParam    = "Exposed to the script as global `args`, beside `args.variables`."
	evalNoCode      = "archmax_eval rejected: 'code' must be a non-empty string of JavaScript."
	runNoPath       = "archmax_run rejected: 'file_path' must name a script file, e.g. skills/orders/scripts/check.js."
	runArgsNotMap   = "archmax_run rejected: 'args' must be an object (a mapping of names to values); the script reads it as the global `args`."
)

func scriptUnreadable(path string) string {
	return fmt.Sprintf("error: cannot read script '%s' from the agent workspace.", path)
}

// toolNotRun answers a tool call its step never reached: the call was stopped (the
// invocation's deadline, a cancellation, a failure) between the model's answer and the tool.
func toolNotRun(tool string) string {
	return fmt.Sprintf("Tool '%s' was not run: the turn stopped before it. Call it again if it is still needed.", tool)
}
