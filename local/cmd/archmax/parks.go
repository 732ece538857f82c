package main

import (
	"context"
	"errors"
	"strings"

	"github.com/spf13/cobra"

	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/local/runner"
)

// newDecideCommand is `archmax decide SESSION TARGET`: a person's decision at a human park
// (spec 02 §3.4), the same call as POST /v1/sessions/{id}/decision.
func newDecideCommand(code *int) *cobra.Command {
	var f runFlags
	var comment, parkID string
	cmd := &cobra.Command{
		Use:   "decide [flags] SESSION TARGET",
		Short: "Decide a session parked at a human state",
		Long: `Decide SESSION, parked at a human state, along its transition to TARGET, with an optional
--comment (the reason of the human trail step) and --park (the park id it answers: refused when
another park is live). The turn continues at TARGET and prints like 'archmax run'.`,
		Example: `  archmax decide --model-script m.model.yaml session-… approved --comment "Looks right"`,
		Args:    sessionArgs("decide", "SESSION and TARGET"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.resume(cmd, code, args[0], func(ctx context.Context, eng *session.Engine) (*session.Outcome, error) {
				return eng.Decide(ctx, args[0], session.Decision{To: args[1], Comment: comment, ParkID: parkID})
			})
		},
	}
	f.addEnvFlags(cmd)
	cmd.Flags().StringVar(&comment, "comment", "", "the person's comment")
	cmd.Flags().StringVar(&parkID, "park", "", "the park id the decision answers")
	return cmd
}

// newDeliverCommand is `archmax deliver SESSION TRIGGER`: an outside event into an
// archmax_wait park (spec 02 §4.3), the same call as POST /v1/sessions/{id}/deliveries.
func newDeliverCommand(code *int) *cobra.Command {
	var f runFlags
	var message, parkID string
	cmd := &cobra.Command{
		Use:   "deliver [flags] SESSION TRIGGER",
		Short: "Deliver an event to a session parked awaiting input",
		Long: `Deliver the firing of TRIGGER to SESSION, parked by archmax_wait: --var NAME=VALUE seeds locked
variables, --message adds a person's message, --park names the park it answers. The session
continues in the state it waited in and prints like 'archmax run'.`,
		Example: `  archmax deliver --model-script m.model.yaml session-… courier --var scan=delivered`,
		Args:    sessionArgs("deliver", "SESSION and TRIGGER"),
		RunE: func(cmd *cobra.Command, args []string) error {
			vars, err := parseVars(f.vars)
			if err != nil {
				return usageError{err}
			}
			return f.resume(cmd, code, args[0], func(ctx context.Context, eng *session.Engine) (*session.Outcome, error) {
				return eng.Deliver(ctx, args[0], session.Delivery{Trigger: args[1], Variables: vars, Message: message, ParkID: parkID})
			})
		},
	}
	f.addEnvFlags(cmd)
	cmd.Flags().StringArrayVar(&f.vars, "var", nil, "deliver a variable, NAME=VALUE (JSON when it parses, else a string); repeatable")
	cmd.Flags().StringVar(&message, "message", "", "a person's message delivered with the event")
	cmd.Flags().StringVar(&parkID, "park", "", "the park id the delivery answers")
	return cmd
}

// sessionArgs checks two non-blank arguments, the first a valid session id.
func sessionArgs(verb, names string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != 2 || strings.TrimSpace(args[0]) == "" || strings.TrimSpace(args[1]) == "" {
			return usageError{errors.New(verb + " needs exactly two arguments, " + names)}
		}
		if _, err := spec.CheckSessionID(args[0]); err != nil {
			return usageError{err}
		}
		return nil
	}
}

// resume opens the environment, finds the session's workflow and runs call on its engine,
// printing the flow and the outcome.
func (f *runFlags) resume(cmd *cobra.Command, code *int, sessionID string, call func(context.Context, *session.Engine) (*session.Outcome, error)) error {
	r := newRenderer(cmd.OutOrStdout(), f.jsonOut)
	env, err := f.open(cmd, r)
	if err != nil {
		return err
	}
	defer env.Close()
	eng, workflow, err := sessionEngine(cmd.Context(), env, sessionID)
	if err != nil {
		return err
	}
	r.header(sessionID, workflow)
	out, err := call(cmd.Context(), eng)
	if err != nil {
		return err
	}
	r.outcome(out)
	if out.Kind == session.KindFailed || out.Kind == session.KindRejected {
		*code = exitFail
	}
	return nil
}

// sessionEngine is the engine of the workflow a stored session belongs to.
func sessionEngine(ctx context.Context, env *runner.Env, sessionID string) (*session.Engine, string, error) {
	engines, err := env.Engines()
	if err != nil {
		return nil, "", err
	}
	eng, _, err := session.EngineOf(ctx, engines, sessionID)
	if err != nil {
		return nil, "", err
	}
	return eng, eng.Workflow(), nil
}
