package main

import (
	"context"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/archmax-ai/archmax/core/session"
)

// Shell completion (cobra's `archmax completion bash|zsh|fish|powershell`): workflow names
// from the workspace (--workspace, else the current directory), session ids from the local
// store (--store, else the workspace's .archmax/) — for decide and reply those parked for a
// decision, for deliver those parked for input — and decide's targets from the session's
// pending decision. Nothing is read from AWS (--aws completes no session ids).

// addCompletions wires the completions into root's commands.
func addCompletions(root *cobra.Command) {
	for _, c := range root.Commands() {
		switch c.Name() {
		case "run":
			c.ValidArgsFunction = firstArg(completeWorkflows)
			_ = c.RegisterFlagCompletionFunc("session", sessionsWith(""))
		case "test", "graph":
			c.ValidArgsFunction = firstArg(completeWorkflows)
		case "validate":
			c.ValidArgsFunction = completeWorkflows
		case "sessions":
			c.ValidArgsFunction = firstArg(sessionsWith(""))
			_ = c.RegisterFlagCompletionFunc("status", fixed("running", "completed", "failed", "rejected", "awaiting_decision", "awaiting_input"))
		case "decide":
			c.ValidArgsFunction = func(cmd *cobra.Command, args []string, to string) ([]string, cobra.ShellCompDirective) {
				if len(args) == 1 {
					return decisionTargets(cmd, args[0])
				}
				return firstArg(sessionsWith(session.StatusAwaitingDecision))(cmd, args, to)
			}
			_ = c.RegisterFlagCompletionFunc("to", func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
				if len(args) == 0 {
					return nil, cobra.ShellCompDirectiveNoFileComp
				}
				return decisionTargets(cmd, args[0])
			})
		case "reply":
			c.ValidArgsFunction = firstArg(sessionsWith(session.StatusAwaitingDecision))
		case "deliver":
			c.ValidArgsFunction = firstArg(sessionsWith(session.StatusAwaitingInput))
		}
		if c.Flags().Lookup("workflow") != nil {
			_ = c.RegisterFlagCompletionFunc("workflow", completeWorkflows)
		}
	}
}

type completer = func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective)

// firstArg completes the first argument with c, and nothing after it.
func firstArg(c completer) completer {
	return func(cmd *cobra.Command, args []string, to string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return c(cmd, args, to)
	}
}

func fixed(values ...string) completer {
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return values, cobra.ShellCompDirectiveNoFileComp
	}
}

// completionFlags are the workspace and store the command line names so far.
func completionFlags(cmd *cobra.Command) runFlags {
	var f runFlags
	f.workspace = "."
	if v, err := cmd.Flags().GetString("workspace"); err == nil && v != "" {
		f.workspace = v
	}
	if v, err := cmd.Flags().GetString("store"); err == nil {
		f.store = v
	}
	f.aws, _ = cmd.Flags().GetBool("aws")
	return f
}

// completeWorkflows completes the workspace's workflows not already named.
func completeWorkflows(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	slugs, _ := workspaceWorkflows(completionFlags(cmd).workspace)
	return slices.DeleteFunc(slugs, func(s string) bool { return slices.Contains(args, s) }), cobra.ShellCompDirectiveNoFileComp
}

// sessionsWith completes the stored session ids with status (any when ""), each with its
// workflow and state as the description.
func sessionsWith(status session.Status) completer {
	return func(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
		f := completionFlags(cmd)
		if f.aws {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		sessions, closeEnv, err := f.openSessions(cmd)
		if err != nil || sessions == nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		defer closeEnv()
		var out []string
		opts := session.ListOptions{Status: status, IncludeChildren: false}
		for {
			page, next, err := sessions.List(context.Background(), opts)
			if err != nil {
				break
			}
			for _, s := range page {
				out = append(out, s.SessionID+"\t"+strings.TrimSpace(s.Workflow+" "+string(s.Status)+" "+s.WorkflowState))
			}
			if next == "" {
				break
			}
			opts.Cursor = next
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// decisionTargets completes the states a session's pending decision may go to, each with
// its description.
func decisionTargets(cmd *cobra.Command, sessionID string) ([]string, cobra.ShellCompDirective) {
	f := completionFlags(cmd)
	if f.aws {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	sessions, closeEnv, err := f.openSessions(cmd)
	if err != nil || sessions == nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	defer closeEnv()
	sum, err := sessions.Get(context.Background(), sessionID)
	if err != nil || sum.Pending == nil || sum.Pending.Decision == nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, t := range sum.Pending.Decision.Transitions {
		out = append(out, t.To+"\t"+oneLine(t.Description, 80))
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
