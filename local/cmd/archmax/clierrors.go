package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/functions/handlers/httpapi"
	"github.com/archmax-ai/archmax/local/runner"
)

// How a failed command reports: one line on stderr, "archmax: <message>", then what to do
// about it ("  hint: …") when the CLI knows; with --json also one typed record on stdout,
// {"error": {"code", "message", "details"}} — the HTTP API's error shape and codes, details
// carrying the exit status and the hint — and, after a failed model call, the session's
// outcome line, so a --json stream always ends with the outcome of the turn it began.

// hinted is an error with what the person can do about it, and the --json code of a
// failure the CLI itself finds ("" for the wrapped error's).
type hinted struct {
	err  error
	hint string
	code string
}

func (h *hinted) Error() string { return h.err.Error() }
func (h *hinted) Unwrap() error { return h.err }

// withHint attaches hint to err (nil stays nil).
func withHint(err error, hint string) error {
	if err == nil {
		return nil
	}
	return &hinted{err: err, hint: hint}
}

// turnFailed is a turn that stopped on a failure after it began: the error, and the
// session's outcome record as stored after it (printed last with --json).
type turnFailed struct {
	err     error
	outcome map[string]any
}

func (t *turnFailed) Error() string { return t.err.Error() }
func (t *turnFailed) Unwrap() error { return t.err }

// codedHint is withHint with the --json code of a failure the CLI finds itself.
func codedHint(code string, err error, hint string) error {
	return &hinted{err: err, hint: hint, code: code}
}

// hintOf is the hint for err: an attached one, else one the CLI knows for the error.
func hintOf(err error) string {
	var ue usageError
	if errors.As(err, &ue) && ue.error != nil {
		err = ue.error // usageError does not unwrap (cobra's own errors are matched by text)
	}
	var h *hinted
	if errors.As(err, &h) {
		return h.hint
	}
	var call *model.CallError
	if errors.As(err, &call) {
		return modelCallHint(call)
	}
	var budget *session.BudgetExceededError
	if errors.As(err, &budget) {
		return budgetHint(budget)
	}
	var unpriced *session.BudgetPricingError
	if errors.As(err, &unpriced) {
		return unpriced.Problem.Hint
	}
	if noCredentials(strings.ToLower(err.Error())) {
		return credentialsHint // an AWS call of the store (--aws) or a host tool
	}
	return ""
}

// noCredentials reports whether an AWS SDK error's text (lower-cased) says no credentials
// were found or they were refused.
func noCredentials(text string) bool {
	for _, s := range []string{"get credentials", "no ec2 imds role", "failed to refresh cached credentials", "security token included in the request is invalid",
		"the sso session", "expiredtoken"} {
		if strings.Contains(text, s) {
			return true
		}
	}
	return false
}

// distinctLines drops the repeats of a line in a message (errors joined from parallel calls
// that failed alike), keeping the first of each in order.
func distinctLines(msg string) string {
	lines := strings.Split(msg, "\n")
	seen := map[string]bool{}
	out := lines[:0]
	for _, l := range lines {
		if !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// modelCallHint is what to do about a failed model call the CLI recognises: no AWS
// credentials, a model id Bedrock does not know in the region (often an inference profile
// of another geography), access not granted.
func modelCallHint(call *model.CallError) string {
	text := strings.ToLower(call.Message + " " + fmt.Sprint(call.Err))
	switch {
	case noCredentials(text) || call.Code == "UnrecognizedClientException" || call.Code == "ExpiredTokenException":
		return credentialsHint
	case call.Code == "ValidationException" && (strings.Contains(text, "model identifier") || strings.Contains(text, "inference profile") ||
		strings.Contains(text, "on-demand throughput")):
		return "the model id is not one Bedrock serves in this region: a 'us.'/'eu.'/'apac.' id is a cross-region inference profile, " +
			"callable only from a region of that geography — use the profile for your region (e.g. eu.… in eu-west-1), " +
			"or pass --region of that geography; --model or ARCHMAX_MODEL names the model"
	case call.Code == "AccessDeniedException":
		return "the credentials may not invoke this model: grant bedrock:InvokeModel on it, and request access to the model in the Bedrock console (Model access) of this region"
	}
	return ""
}

// budgetHint is what to do about a spent budget: raise the key that set it in the host file
// (BU22-5), or wait for the next day or start a new session.
func budgetHint(e *session.BudgetExceededError) string {
	h := "raise " + e.Field + " in archmax.host.yaml (the workspace's host file) and repeat the command (a message, reply, decision or delivery)"
	switch e.Kind {
	case session.BudgetDaily:
		h += ", or wait until 00:00 UTC, when the workflow's daily budget starts again"
	case session.BudgetLifetime:
		h += ", or start a new session"
	}
	return h
}

// credentialsHint is what to do when no AWS credentials were found.
const credentialsHint = "no usable AWS credentials: set AWS_PROFILE to a profile of ~/.aws/config (`aws configure` writes one; `aws sso login` refreshes an SSO profile), " +
	"or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY — in the environment or the workspace's .env; or run offline with --model-script FILE"

// errorRecord is the --json record of a failure.
type errorRecord struct {
	Error struct {
		Code    string         `json:"code"`
		Message string         `json:"message"`
		Details map[string]any `json:"details"`
	} `json:"error"`
}

// newErrorRecord types err as the HTTP API does (its code and details), else by the spec
// error name it carries, else "UsageError" (exit 2) or "Error"; details add the exit status
// and the hint.
func newErrorRecord(err error, exit int, hint string) errorRecord {
	var rec errorRecord
	rec.Error.Message = err.Error()
	rec.Error.Details = map[string]any{}
	var ue usageError
	var h *hinted
	if errors.As(err, &ue) && ue.error != nil {
		errors.As(ue.error, &h)
	}
	switch body, internal := httpapi.BodyOf(err); {
	case h != nil && h.code != "":
		rec.Error.Code = h.code
	case errors.As(err, &h) && h.code != "":
		rec.Error.Code = h.code
	case errors.As(err, &ue):
		rec.Error.Code = "UsageError"
	case !internal:
		rec.Error.Code = body.Error.Code
		for k, v := range body.Error.Details {
			rec.Error.Details[k] = v
		}
		if errors.As(err, new(*model.CallError)) {
			rec.Error.Message = err.Error() // the provider's own words, which the API keeps to its log
		}
	default:
		rec.Error.Code = "Error"
		var named interface{ Name() string }
		if errors.As(err, &named) {
			rec.Error.Code = named.Name()
		}
	}
	rec.Error.Details["exitCode"] = exit
	if hint != "" {
		rec.Error.Details["hint"] = hint
	}
	return rec
}

// reportError prints a failed command's error — the stderr line and hint, and with --json
// the typed record (and a failed turn's outcome) on stdout — and returns the exit status.
// help is the command whose --help a usage error points at.
func reportError(stdout, stderr io.Writer, args []string, err error, help string) int {
	exit := exitFail
	var ue usageError
	if errors.As(err, &ue) || isCobraUsage(err) {
		exit = exitUsage
		if !errors.As(err, &ue) {
			err = usageError{err}
		}
	}
	hint := hintOf(err)
	msg := distinctLines(err.Error())
	fmt.Fprintf(stderr, "archmax: %s\n", msg)
	if hint != "" {
		fmt.Fprintf(stderr, "  hint: %s\n", hint)
	}
	if exit == exitUsage {
		fmt.Fprintf(stderr, "Run '%s' for usage.\n", help)
	}
	if wantsJSON(args) {
		rec := newErrorRecord(err, exit, hint)
		rec.Error.Message = distinctLines(rec.Error.Message)
		b, _ := json.Marshal(rec)
		fmt.Fprintf(stdout, "%s\n", b)
		var tf *turnFailed
		if errors.As(err, &tf) && tf.outcome != nil {
			b, _ := json.Marshal(tf.outcome)
			fmt.Fprintf(stdout, "%s\n", b)
		}
	}
	return exit
}

// wantsJSON reports whether --json is set among args (before a "--").
func wantsJSON(args []string) bool {
	on := false
	for _, a := range args {
		switch a {
		case "--":
			return on
		case "--json", "--json=true", "--json=1":
			on = true
		case "--json=false", "--json=0":
			on = false
		}
	}
	return on
}

// failedTurnOutcome is the outcome record of a session whose turn stopped on a failure, as
// stored after it (nil when it cannot be read): the --json stream's last line.
func failedTurnOutcome(sum *session.SessionSummary) map[string]any {
	if sum == nil {
		return nil
	}
	rec := map[string]any{"type": "outcome", "sessionId": sum.SessionID, "kind": string(sum.Status), "state": sum.WorkflowState,
		"turn": sum.Turn, "interrupted": sum.Interrupted, "usage": sum.Usage, "pending": sum.Pending}
	if sum.LastError != nil {
		rec["lastError"] = sum.LastError
	}
	return rec
}

// worded is an error reworded for the CLI that keeps its type (for --json's code).
type worded struct {
	msg string
	err error
}

func (w *worded) Error() string { return w.msg }
func (w *worded) Unwrap() error { return w.err }

// priorSession is the stored summary of a session a command names before it runs a turn
// (nil when it has not run yet or cannot be read).
func priorSession(ctx context.Context, env *runner.Env, sessionID string) *session.SessionSummary {
	s, err := env.Sessions()
	if err != nil {
		return nil
	}
	sum, err := s.Get(ctx, sessionID)
	if err != nil {
		return nil
	}
	return sum
}

// turnError is err from a turn on sessionID, made telling: a session id used before (prior,
// its summary before the turn) whose scripted model has nothing left for it gets the hint to
// start a new session (a turn stopped on a failure holds nothing: the next run goes on from
// it, SS21-12; a live writer's refusal says when its lease ends); with --json a failed
// model call carries the session's outcome as stored after it.
func (f *runFlags) turnError(ctx context.Context, env *runner.Env, sessionID string, prior *session.SessionSummary, err error) error {
	var call *model.CallError
	isCall := errors.As(err, &call)
	switch {
	case prior != nil && isCall && call.Code == "ScriptedModelException" && strings.Contains(call.Message, "no remaining entry matches"):
		where := string(prior.Status)
		if prior.WorkflowState != "" {
			where += " in '" + prior.WorkflowState + "'"
		}
		err = withHint(err, fmt.Sprintf("session '%s' was used before (turn %d, %s): a model script answers a run from its first entry, "+
			"so it has nothing for a session that goes on — start a new one (another --session id, or none for a new session-<uuid>), "+
			"or remove the store %s (`make clean` in this repository removes the demos' stores)", sessionID, prior.Turn, where, f.storeDir()))
	}
	if f.jsonOut && isCall {
		if sum := priorSession(ctx, env, sessionID); sum != nil {
			err = &turnFailed{err: err, outcome: failedTurnOutcome(sum)}
		}
	}
	return err
}
