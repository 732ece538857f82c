package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/local/runner"
)

// newDecideCommand is `archmax decide SESSION --to STATE`: a person's decision at a human park
// (spec 02 §3.4), the same call as POST /v1/sessions/{id}/decision.
func newDecideCommand(code *int) *cobra.Command {
	var f runFlags
	var to, comment, parkID string
	cmd := &cobra.Command{
		Use:   "decide [flags] SESSION --to STATE",
		Short: "Decide a session parked at a human state",
		Long: `Decide SESSION, parked at a human state, along its transition to --to STATE (the positional
form 'decide SESSION STATE' is the same), with an optional --comment (the reason of the human
trail step) and --park (the park id it answers: refused when another park is live). The turn
continues at STATE: the narration goes to stderr as for 'archmax run', and what the session
said to stdout (or, when it said nothing, a line saying where it stands). --workflow names the
workflow the session must belong to (it is read from the session otherwise).

What to decide on: the park report of the command that parked it, and 'archmax sessions
SESSION', show the state's title, summary and instructions, every transition it may take with
its description, and each evidence file's content (its first 40 lines or 8 KiB, with its size
and where it lies under the store's files/ folder).

Exit status: 0 done (a new park included), 1 refused (not parked, not a declared transition)
or the session ended failed or rejected, 2 usage error. With --json a refusal is one line
{"error": {"code", "message", "details"}} on stdout (e.g. InvalidDecisionTargetError with
details.validTargets, SessionNotParkedError, ParkNotLiveError).`,
		Example: `  archmax decide session-… --to approved --comment "Looks right"`,
		Args: func(_ *cobra.Command, args []string) error {
			if err := sessionArg("decide", args, 2); err != nil {
				return err
			}
			switch {
			case len(args) == 2 && to != "" && args[1] != to:
				return usageError{fmt.Errorf("the target is given twice, '%s' and --to '%s': give it once", args[1], to)}
			case len(args) == 2:
				to = args[1]
			case strings.TrimSpace(to) == "":
				return usageError{errors.New("--to STATE is required: the transition the person picks")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.resume(cmd, code, args[0], verbDecided, func(ctx context.Context, eng *session.Engine) (*session.Outcome, error) {
				return eng.Decide(ctx, args[0], session.Decision{To: to, Comment: comment, ParkID: parkID})
			})
		},
	}
	f.addEnvFlags(cmd)
	cmd.Flags().StringVar(&to, "to", "", "the state to route to (the person's choice)")
	cmd.Flags().StringVar(&comment, "comment", "", "the person's comment")
	cmd.Flags().StringVar(&parkID, "park", "", "the park id the decision answers")
	cmd.Flags().StringVar(&f.workflow, "workflow", "", "the workflow the session must belong to")
	return cmd
}

// newDeliverCommand is `archmax deliver SESSION --trigger ID`: an outside event into an
// archmax_wait park (spec 02 §4.3), the same call as POST /v1/sessions/{id}/deliveries.
func newDeliverCommand(code *int) *cobra.Command {
	var f runFlags
	var trigger, message, parkID string
	cmd := &cobra.Command{
		Use:   "deliver [flags] SESSION --trigger ID",
		Short: "Deliver an event to a session parked awaiting input",
		Long: `Deliver the firing of --trigger ID to SESSION, parked by archmax_wait (the positional form
'deliver SESSION ID' is the same): --variables JSON and --var NAME=VALUE seed what the event
carried as locked variables, --message adds a person's message, --park names the park it
answers. Any trigger id resumes a park. The session continues in the state it waited in: the
narration goes to stderr as for 'archmax run', and what the session said to stdout.

Exit status: 0 done (a new park included), 1 refused (not parked for input) or the session
ended failed or rejected, 2 usage error. With --json a refusal is one line {"error": {"code",
"message", "details"}} on stdout (e.g. SessionNotAwaitingInputError, DuplicateDeliveryError,
ParkNotLiveError).`,
		Example: `  archmax deliver conv-7 --trigger email_reply --variables '{"reply_text":"It is ORD-1003"}'`,
		Args: func(_ *cobra.Command, args []string) error {
			if err := sessionArg("deliver", args, 2); err != nil {
				return err
			}
			switch {
			case len(args) == 2 && trigger != "" && args[1] != trigger:
				return usageError{fmt.Errorf("the trigger is given twice, '%s' and --trigger '%s': give it once", args[1], trigger)}
			case len(args) == 2:
				trigger = args[1]
			case strings.TrimSpace(trigger) == "":
				return usageError{errors.New("--trigger ID is required: the event that arrived")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			vars, err := f.seedVariables()
			if err != nil {
				return usageError{err}
			}
			return f.resume(cmd, code, args[0], verbDeliver, func(ctx context.Context, eng *session.Engine) (*session.Outcome, error) {
				return eng.Deliver(ctx, args[0], session.Delivery{Trigger: trigger, Variables: vars, Message: message, ParkID: parkID})
			})
		},
	}
	f.addEnvFlags(cmd)
	f.addVariableFlags(cmd, "deliver")
	cmd.Flags().StringVar(&trigger, "trigger", "", "the trigger delivered (the event that arrived)")
	cmd.Flags().StringVar(&message, "message", "", "a person's message delivered with the event")
	cmd.Flags().StringVar(&parkID, "park", "", "the park id the delivery answers")
	cmd.Flags().StringVar(&f.workflow, "workflow", "", "the workflow the session must belong to")
	return cmd
}

// newReplyCommand is `archmax reply SESSION MESSAGE...`: a message to a session parked at a
// human state, answered on a reply-only turn; the park stays (spec 02 §3.6).
func newReplyCommand(code *int) *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "reply [flags] SESSION MESSAGE...",
		Short: "Send a message to a session parked at a human state; it stays parked",
		Long: `Send MESSAGE (the rest of the line) to SESSION, parked at a human state. The session answers on
a turn with no tools and stays parked at the same state with the same decision pending: this is
how to talk to a parked session, not how to move it ('archmax decide' does that; no wording here
picks a transition). The answer goes to stdout, the still-parked reminder to stderr.

Exit status: 0 answered, 1 the session is not awaiting a decision, 2 usage error (an empty
message included).`,
		Example: `  archmax reply session-… any news?`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError{errors.New("reply needs SESSION and MESSAGE")}
			}
			if _, err := spec.CheckSessionID(args[0]); err != nil {
				return usageError{err}
			}
			if strings.TrimSpace(strings.Join(args[1:], " ")) == "" {
				return usageError{errors.New("a message is required: there is nothing to answer otherwise")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			msg := strings.TrimSpace(strings.Join(args[1:], " "))
			return f.resume(cmd, code, args[0], verbReply, func(ctx context.Context, eng *session.Engine) (*session.Outcome, error) {
				return eng.Reply(ctx, args[0], msg)
			})
		},
	}
	f.addEnvFlags(cmd)
	cmd.Flags().StringVar(&f.workflow, "workflow", "", "the workflow the session must belong to")
	return cmd
}

// sessionArg checks a session command's arguments: a valid session id first, at most max.
func sessionArg(verb string, args []string, max int) error {
	if len(args) == 0 || strings.TrimSpace(args[0]) == "" {
		return usageError{errors.New(verb + " needs SESSION, the session id ('archmax sessions' lists them)")}
	}
	if len(args) > max {
		return usageError{fmt.Errorf("unexpected argument '%s'", args[max])}
	}
	for _, a := range args[1:] {
		if strings.TrimSpace(a) == "" {
			return usageError{fmt.Errorf("%s: an empty argument", verb)}
		}
	}
	if _, err := spec.CheckSessionID(args[0]); err != nil {
		return usageError{err}
	}
	return nil
}

// resume opens the environment, finds the session's workflow (held to --workflow when
// given) and runs call on its engine, printing the flow and the outcome.
func (f *runFlags) resume(cmd *cobra.Command, code *int, sessionID, verb string, call func(context.Context, *session.Engine) (*session.Outcome, error)) error {
	if f.workflow != "" {
		if err := checkWorkflowArg(f.workflow); err != nil {
			return err
		}
	}
	r := f.renderer(cmd)
	defer r.stop()
	env, err := f.open(cmd, r)
	if err != nil {
		return err
	}
	defer env.Close()
	f.withParkReader(r, env)
	eng, workflow, err := sessionEngine(cmd.Context(), env, sessionID, f.workflow)
	if err != nil {
		return err
	}
	r.header(sessionID, workflow)
	out, err := call(cmd.Context(), eng)
	if err != nil {
		return f.turnError(cmd.Context(), env, sessionID, nil, err)
	}
	*code = r.outcome(out, verb)
	return nil
}

// sessionEngine is the engine of the workflow a stored session belongs to; want, when set, is
// the workflow it must be.
func sessionEngine(ctx context.Context, env *runner.Env, sessionID, want string) (*session.Engine, string, error) {
	engines, err := env.Engines()
	if err != nil {
		return nil, "", err
	}
	eng, _, err := session.EngineOf(ctx, engines, sessionID)
	if err != nil {
		return nil, "", err
	}
	if want != "" && eng.Workflow() != want {
		return nil, "", fmt.Errorf("session '%s' belongs to workflow '%s', not '%s'", sessionID, eng.Workflow(), want)
	}
	return eng, eng.Workflow(), nil
}
