package session

// Runtime-emitted texts that are part of the workflow contract (DESIGN.md §9): runtime
// notes, control-tool replies and refusals, failure reasons. Scripts and cases match on
// them. They follow the reference implementation @archmax-ai/harness (MIT; see NOTICE);
// the spec section each comes from is named beside it.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/archmax-ai/archmax/core/spec"
)

// Notes (spec 02 §5.3; 03 CS-46 and OQ-19).
func noteCode(state, to, reason string) string {
	return fmt.Sprintf("[code] '%s' moved the run to '%s': %s. You are now in '%s'.", state, to, trimReason(reason), to)
}

// quotaWaitReason is the reason of a quota park (R18-5): what ran out, and when the turn
// goes on by itself.
func quotaWaitReason(code string, wait time.Duration) string {
	return fmt.Sprintf("the model's quota is used up (%s: a daily token or service quota); the turn waits and goes on by itself in %s, or at the next message", code, wait)
}

// noteCutOff tells the model that its answer was cut off at the output token limit in the
// middle of a call to tool, which was not run (R18-4).
func noteCutOff(tool string) string {
	return fmt.Sprintf("[cut-off] Your last answer reached the model's output token limit in the middle of a call to '%s', so that call was not run. Make the call again (with shorter arguments if they were long), or answer in text.", tool)
}

// maxCutOffs is how many answers in a row a state may lose to the output token limit before
// it fails (R18-4).
const maxCutOffs = 3

func cutOffFailure(state string) string {
	return fmt.Sprintf("state '%s': the model's answers were cut off at its output token limit in the middle of a tool call %d times in a row", state, maxCutOffs)
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
	raiseRejectedPrefix   = "archmax_raise rejected: "
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

// repeatedToolCallID is the warning when a model answer reuses a toolUse id (of the same
// answer or an earlier one): the call runs under a fresh id (docs/DECISIONS.md R18-1).
const repeatedToolCallID = "the model reused a tool call id; the call was given a fresh id so the session's history stays valid"

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

// Sub-workflows (spec 01 §7.5, 02 §3.7, §5.3, §8; 03 AS-44). The refusal and failure texts,
// the delegation tool's description and the opening note follow the reference's
// src/workflow/sub-workflow.ts and src/workflow/workflow-tools.ts.
const (
	// noClosingMessage is the result message of a child that said nothing (02 §8.4).
	noClosingMessage = "(the sub-workflow completed without a closing message)"
	// openingBegin leads a child's opening note (02 §5.3).
	openingBegin = "Begin. Your instructions are already in context."
)

func delegationDepthExceeded(wf string, depth, max int, chain string) string {
	return fmt.Sprintf("Refusing to run sub-workflow '%s': it would be %d delegations deep, past the dispatcher's limit of %d. Chain so far: %s.", wf, depth, max, chain)
}

func delegationCycle(wf, chain string) string {
	return fmt.Sprintf("Refusing to run sub-workflow '%s': it is already running in this chain (%s), so the run would not terminate.", wf, chain)
}

func delegationUnresolved(wf, param, detail string) string {
	return fmt.Sprintf("Cannot run sub-workflow '%s': its param '%s' references %s.", wf, param, detail)
}

func delegationUnknown(wf, detail string) string {
	return fmt.Sprintf("Cannot run sub-workflow '%s': %s.", wf, detail)
}

func delegationNoManual(wf string) string {
	return fmt.Sprintf("Cannot run sub-workflow '%s': it declares no 'manual' trigger entry, so it has no state to start in. Add 'manual:' under 'triggers:' of the state a session should start in.", wf)
}

func delegationDisabled(wf string) string {
	return fmt.Sprintf("Refusing to run sub-workflow '%s': it is disabled ('disabled: true' in its workflow.yaml), so it starts no run. Remove that flag to re-enable it.", wf)
}

func delegationMissingParams(wf string, names []string) string {
	which := "that argument"
	if len(names) > 1 {
		which = "those arguments"
	}
	return fmt.Sprintf("Refusing to run sub-workflow '%s': it requires %s, which this call does not supply. Call it again with %s.", wf, quotedComma(names), which)
}

func delegationInvalidParams(wf string, issues []string) string {
	which := "a value"
	if len(issues) > 1 {
		which = "values"
	}
	return fmt.Sprintf("Refusing to run sub-workflow '%s': %s. Call it again with %s of the declared type.", wf, strings.Join(issues, "; "), which)
}

func delegationRejected(wf, state, reason string) string {
	return fmt.Sprintf("Sub-workflow '%s' was rejected in state '%s': %s", wf, state, reason)
}

func delegationRaised(wf, code, state, reason string) string {
	return fmt.Sprintf("Sub-workflow '%s' failed: its agent raised '%s' in state '%s': %s", wf, code, state, reason)
}

func delegationFailed(wf, message string) string {
	return fmt.Sprintf("Sub-workflow '%s' failed: %s", wf, message)
}

func delegationInvalidReturns(wf, where string, issues []string) string {
	return fmt.Sprintf("Sub-workflow '%s' settled %s with returns its 'manual' trigger types otherwise: %s.", wf, where, strings.Join(issues, "; "))
}

// delegationMissingReturnsNote is the `note` return of a child that left declared returns
// unset (01 §7.5; several names: each quoted, comma-separated, "were not set" — 03 §2).
func delegationMissingReturnsNote(names []string) string {
	verb := "was"
	if len(names) > 1 {
		verb = "were"
	}
	return fmt.Sprintf("Not all return variables were set by the sub-workflow: %s %s not set.", quotedComma(names), verb)
}

func delegationUnsettled(wf, state string, status Status) string {
	return fmt.Sprintf("Sub-workflow '%s' settled in state '%s' with status '%s' but no pending suspension, so nothing could resume it.", wf, state, status)
}

// delegationScriptParked is AS-44's exact text: a script's delegation reached a park.
func delegationScriptParked(wf string) string {
	return fmt.Sprintf("Sub-workflow '%s' stopped for a person, and a script cannot wait for one: the sandbox has no way to resume. Call it from the state's agent, or move the decision to a human node in the calling workflow.", wf)
}

// delegationAgentParked answers an agent's delegation call whose child parked (02 §3.7: the
// call settles with an error status and the parent parks with the child) [decision D8-4]:
// p is the child's park (a person's decision, or an outside event it waits for).
func delegationAgentParked(wf string, p *Park) string {
	if p.Input != nil {
		return fmt.Sprintf("Sub-workflow '%s' is waiting at '%s' for: %s. This run waits with it; when that arrives, the sub-workflow continues and its result arrives as a [sub-workflow] note.", wf, p.Input.State, p.Input.Reason)
	}
	state := ""
	if p.Decision != nil {
		state = p.Decision.State
	}
	return fmt.Sprintf("Sub-workflow '%s' stopped for a person at '%s'. This run waits with it; when the person answers, the sub-workflow continues and its result arrives as a [sub-workflow] note.", wf, state)
}

// notRunAfterDelegatedPark answers a call that followed, in one message, a delegation whose
// child parked: the run now waits for a person [decision D8-4].
func notRunAfterDelegatedPark(tool string) string {
	return fmt.Sprintf("Tool '%s' was not run: a sub-workflow called before it stopped for a person, and this run now waits with it.", tool)
}

// delegationAbandoned answers a delegation call a new turn left behind (02 §3.7: a new turn
// abandons pending delegations) [decision D8-5].
func delegationAbandoned(wf string) string {
	return fmt.Sprintf("Sub-workflow '%s' was abandoned: a new turn began before it finished.", wf)
}

func noteSubWorkflow(wf, closing string) string {
	return fmt.Sprintf("[sub-workflow: %s] %s", wf, closing)
}

func noteSubWorkflowFailed(wf, message string) string {
	return fmt.Sprintf("[error] sub-workflow '%s' failed after the decision: %s", wf, message)
}

// delegationToolDescription is the model-facing description of archmax_workflow_<slug>
// (02 §8.1): led by the child's manual trigger description (01 §4.8), then what the call does.
func delegationToolDescription(wf, title, description string, requires, returns []string) string {
	var parts []string
	if d := strings.TrimSpace(description); d != "" {
		if !strings.HasSuffix(d, ".") && !strings.HasSuffix(d, "!") && !strings.HasSuffix(d, "?") {
			d += "."
		}
		parts = append(parts, d)
	}
	label := ""
	if t := strings.TrimSpace(title); t != "" {
		label = " (" + t + ")"
	}
	parts = append(parts, fmt.Sprintf("Run the '%s' workflow%s to completion and return its result. It runs as its own governed machine with its own states and tools; your run stays where it is and continues when the call answers.", wf, label))
	if len(requires) > 0 {
		parts = append(parts, fmt.Sprintf("It requires %s, which the call must supply.", quotedAnd(requires)))
	}
	if len(returns) > 0 {
		parts = append(parts, fmt.Sprintf("The result carries %s under 'returns', alongside the workflow's closing message under 'message'.", quotedAnd(returns)))
	} else {
		parts = append(parts, "The result is the workflow's closing message.")
	}
	parts = append(parts, "One call runs it once; call it again (in the same turn) to run several at once.")
	return strings.Join(parts, " ")
}

// delegationParamDescription describes one delegation argument in the tool's input schema.
func delegationParamDescription(name, declared string) string {
	if d := strings.TrimSpace(declared); d != "" {
		if !strings.HasSuffix(d, ".") && !strings.HasSuffix(d, "!") && !strings.HasSuffix(d, "?") {
			d += "."
		}
		return d + " Seeded as a locked run variable."
	}
	return fmt.Sprintf("Required input '%s', seeded as a locked run variable.", name)
}

func quotedComma(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "'" + n + "'"
	}
	return strings.Join(q, ", ")
}

func quotedAnd(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "'" + n + "'"
	}
	if len(q) <= 1 {
		return strings.Join(q, "")
	}
	return strings.Join(q[:len(q)-1], ", ") + " and " + q[len(q)-1]
}

// openingNote is a child's first message (02 §5.3 `opening`): the inputs in name order, a
// string JSON-quoted (U+2028/U+2029 escaped), a finite number or boolean as written; a value
// of another kind, one rendering longer than 200 characters, or one taking the shown values
// past 1,000 characters in all is only named.
func openingNote(inputs map[string]any) string {
	var shown, hidden []string
	total := 0
	for _, name := range slices.Sorted(maps.Keys(inputs)) {
		text, ok := openingValue(inputs[name])
		if ok && len([]rune(text)) <= 200 && total+len([]rune(text)) <= 1000 {
			total += len([]rune(text))
			shown = append(shown, "- "+name+": "+text)
			continue
		}
		hidden = append(hidden, name)
	}
	lines := []string{openingBegin}
	if len(shown) > 0 {
		lines[0] += " You were started with these inputs:"
		lines = append(lines, shown...)
	}
	if len(hidden) > 0 {
		lead := "Not shown here: "
		if len(shown) == 0 {
			lead = "Your inputs are not shown here: "
		}
		lines = append(lines, lead+strings.Join(hidden, ", ")+". Read one with archmax_get_variables when you need its value.")
	}
	return strings.Join(lines, "\n")
}

func openingValue(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false) // JSON.stringify's quoting; U+2028/U+2029 still escaped
		_ = enc.Encode(x)
		return strings.TrimSuffix(b.String(), "\n"), true
	case bool, json.Number, float64, float32, int, int64, int32:
		if f, ok := x.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
			return "", false
		}
		return spec.ScalarString(x)
	}
	return "", false
}

// sessionDeletingMessage is SessionDeletingError's text (RD22-2).
func sessionDeletingMessage(id, leaseExpiresAt string) string {
	if leaseExpiresAt != "" {
		return fmt.Sprintf("Session '%s' is being deleted: no call runs on it. Another delete holds it until %s; repeat the delete after that if the session is still there.", id, leaseExpiresAt)
	}
	return fmt.Sprintf("Session '%s' is being deleted: no call runs on it. Repeat the delete to finish it.", id)
}

// budgetExceededMessage is BudgetExceededError's text (BU22-1): which budget, its limit and
// what was used, and what to do next.
func budgetExceededMessage(e *BudgetExceededError) string {
	amount := func(v float64) string {
		if e.Unit == BudgetTokens {
			return fmt.Sprintf("%d tokens", int64(v))
		}
		return usdAmount(v)
	}
	var what, next string
	switch e.Kind {
	case BudgetTurn:
		what = fmt.Sprintf("session '%s' reached its budget per turn", e.SessionID)
		next = "or send a new message to start a new turn"
	case BudgetLifetime:
		what = fmt.Sprintf("session '%s' reached its lifetime budget (its sub-workflows included)", e.SessionID)
		next = "or start a new session"
	default:
		what = fmt.Sprintf("workflow '%s' reached its daily budget for %s (UTC, every session of the workflow)", e.Workflow, e.Day)
		next = "or wait for the next UTC day"
	}
	stops := "so it stops before its next step"
	switch {
	case e.Refused:
		stops = "so this call is refused: nothing ran and the session is left as it was"
	case e.Via != "":
		stops = fmt.Sprintf("so its sub-workflow session '%s' stops before its next step", e.Via)
	}
	return fmt.Sprintf("Budget exceeded: %s of %s (used %s), %s. Raise %s in %s to let it go on, %s.",
		what, amount(e.Limit), amount(e.Used), stops, e.Field, spec.HostFile, next)
}

// budgetCountFailed is the warning of a daily usage counter that could not be read or added to.
func budgetCountFailed(err error) string {
	return "the workflow's daily usage counter could not be read or updated, so this call runs without its daily budget (steps are not stopped on it): " + err.Error()
}
