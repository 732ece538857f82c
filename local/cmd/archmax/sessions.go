package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/transcript"
	"github.com/archmax-ai/archmax/local/runner"
)

// sessionsPage is how many transcript messages `archmax sessions SESSION` prints by default.
const sessionsPage = 20

// newSessionsCommand is `archmax sessions [SESSION]`: the stored sessions as a table, or one
// session in full — the same reads as GET /v1/sessions and GET /v1/sessions/{id}.
func newSessionsCommand(code *int) *cobra.Command {
	var f runFlags
	var status string
	var after, limit int
	var artifactsDir, deleteID, keepID string
	cmd := &cobra.Command{
		Use:   "sessions [flags] [SESSION]",
		Short: "List stored sessions, show one in full, or delete one",
		Long: `Without SESSION, list the stored sessions newest first as a table on stdout: id, workflow,
status (open or finished), state, when it last changed, what a parked session awaits (a
decision and its choices, or input with its reason and due time), and its variable names.
--workflow and --status narrow the list; sub-workflow child sessions are included.

With SESSION, print that session in full: its summary (status, state, turn, title, spec hash,
usage, exit or rejection), the pending park with its choices and the content of its evidence
files, every variable with its value and whether it is locked (locked: established by the
host — a seed, a delivery, or the built-in trigger), the trail, and the transcript, 20
messages a page (--after N --limit N page through it).

--artifacts DIR writes the session's artifacts into DIR instead — graph.json, graph.mmd,
trajectory.json, trail.json, variables.json, metadata.json, as GET
/v1/sessions/{id}/artifacts/{name} serves them — and prints each file's path.

--json prints the session summary of the HTTP API instead (GET /v1/sessions/{id}), or for the
list a JSON array of them; the summary is documented in docs/openapi.yaml.

--delete SESSION deletes that session and everything of it, as DELETE /v1/sessions/{id} does:
its sub-workflow child sessions, its files (scratchpad, artifacts, attachments), its stored
large values, its transcript, trail and events. The workflow snapshots sessions share are
kept. There is no confirmation, and deleting a session that is not there (never ran, deleted
already) succeeds too, so the command can be repeated. A session whose turn is running (its
own or a child's) is refused: retry once the turn parks or ends. A sub-workflow child is
deleted with its root session. A deletion interrupted part-way leaves the session with status
'deleting'; deleting it again finishes it.

--keep SESSION clears the session's retention expiry: after turning retention off, a session
idle since still carries the expiry it got, which DynamoDB's TTL acts on. With retention still
configured the session's next step sets a new one.

No model is needed. Sessions are read from --store (default .archmax/) or, with --aws, from
DynamoDB and S3 as 'archmax run --aws' keeps them.

Exit status: 0 listed (or deleted, or nothing to delete), 1 no such session to show, a
refused delete (or the store failed), 2 usage error.`,
		Example: `  archmax sessions
  archmax sessions --workflow order-lookup --status awaiting_decision
  archmax sessions conv-7 --after 20
  archmax sessions conv-7 --artifacts out/conv-7
  archmax sessions --delete conv-7
  archmax sessions --keep conv-7`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageError{fmt.Errorf("unexpected argument '%s': sessions takes at most one SESSION", args[1])}
			}
			if len(args) == 1 {
				if _, err := spec.CheckSessionID(args[0]); err != nil {
					return usageError{err}
				}
			}
			if cmd.Flags().Changed("keep") {
				if len(args) > 0 || cmd.Flags().Changed("delete") {
					return usageError{errors.New("--keep names the one session to keep: no SESSION argument, no --delete")}
				}
				for _, other := range []string{"workflow", "status", "after", "limit", "json", "artifacts"} {
					if cmd.Flags().Changed(other) {
						return usageError{fmt.Errorf("--keep cannot be combined with --%s", other)}
					}
				}
				if _, err := spec.CheckSessionID(keepID); err != nil {
					return usageError{err}
				}
			}
			if cmd.Flags().Changed("delete") {
				if len(args) > 0 {
					return usageError{fmt.Errorf("unexpected argument '%s': --delete names the session to delete", args[0])}
				}
				for _, other := range []string{"workflow", "status", "after", "limit", "json", "artifacts"} {
					if cmd.Flags().Changed(other) {
						return usageError{fmt.Errorf("--delete cannot be combined with --%s", other)}
					}
				}
				if _, err := spec.CheckSessionID(deleteID); err != nil {
					return usageError{err}
				}
			}
			if f.workflow != "" {
				if err := checkWorkflowArg(f.workflow); err != nil {
					return err
				}
			}
			switch session.Status(status) {
			case "", session.StatusRunning, session.StatusCompleted, session.StatusFailed, session.StatusRejected,
				session.StatusAwaitingDecision, session.StatusAwaitingInput, session.StatusDeleting:
			default:
				return usageError{errors.New("--status must be one of running, completed, failed, rejected, awaiting_decision, awaiting_input, deleting")}
			}
			if artifactsDir != "" && len(args) == 0 {
				return usageError{errors.New("--artifacts DIR needs a SESSION")}
			}
			if after < 0 || limit < 1 {
				return usageError{errors.New("--after must be 0 or more and --limit at least 1")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			sessions, closeEnv, err := f.openSessions(cmd)
			if err != nil {
				return err
			}
			defer closeEnv()
			ctx, out := cmd.Context(), cmd.OutOrStdout()
			if cmd.Flags().Changed("delete") {
				return deleteSession(ctx, sessions, deleteID, out, cmd.ErrOrStderr())
			}
			if cmd.Flags().Changed("keep") {
				return keepSession(ctx, sessions, keepID, out)
			}
			if sessions == nil && len(args) == 0 {
				return listSessions(ctx, nil, session.ListOptions{}, f.jsonOut, out)
			}
			if sessions == nil {
				return sessionsError(&session.SessionNotFoundError{SessionID: args[0]}, args[0])
			}
			if len(args) == 0 {
				return listSessions(ctx, sessions, session.ListOptions{Workflow: f.workflow, Status: session.Status(status), IncludeChildren: true}, f.jsonOut, out)
			}
			sum, err := sessions.Get(ctx, args[0])
			if err != nil {
				return sessionsError(err, args[0])
			}
			if f.workflow != "" && sum.Workflow != f.workflow {
				return fmt.Errorf("session '%s' belongs to workflow '%s', not '%s'", args[0], sum.Workflow, f.workflow)
			}
			if artifactsDir != "" {
				return writeArtifacts(ctx, sessions, sum.SessionID, artifactsDir, out, cmd.ErrOrStderr())
			}
			if f.jsonOut {
				return printJSON(out, sum)
			}
			return showSession(ctx, sessions, sum, after, limit, out, parkReader{texts: stateTexts(f.workspace), file: sessions.File, where: f.filesWhere(), folder: f.filesFolder()})
		},
	}
	fl := cmd.Flags()
	fl.SetNormalizeFunc(rootAlias)
	fl.StringVar(&f.workspace, "workspace", ".", "the workspace whose .env is loaded (also --root DIR)")
	fl.StringVar(&f.store, "store", "", "directory of the local session store (default: .archmax/ in the workspace)")
	fl.StringVar(&f.region, "region", "", "AWS region for --aws (else AWS_REGION)")
	f.addAWSFlags(cmd)
	fl.StringVar(&f.workflow, "workflow", "", "only sessions of this workflow")
	fl.StringVar(&status, "status", "", "only sessions with this status")
	fl.IntVar(&after, "after", 0, "with SESSION: print the transcript after this many messages")
	fl.IntVar(&limit, "limit", sessionsPage, "with SESSION: how many transcript messages to print")
	fl.BoolVar(&f.jsonOut, "json", false, "print the session summary (or a JSON array of them) of the HTTP API")
	fl.StringVar(&artifactsDir, "artifacts", "", "with SESSION: write its artifacts (graph.json, trajectory.json, …) into this directory")
	fl.StringVar(&keepID, "keep", "", "clear this session's retention expiry (after turning retention off: DynamoDB's TTL would still delete it)")
	fl.StringVar(&deleteID, "delete", "", "delete this session and everything of it (its sub-workflow sessions, files, transcript); no confirmation, repeatable")
	return cmd
}

// openSessions opens the session store read-only (no model); a local store that does not
// exist yet reads as empty and is not created.
func (f *runFlags) openSessions(cmd *cobra.Command) (*session.Sessions, func(), error) {
	if _, err := loadDotenv(f.workspace); err != nil {
		return nil, nil, usageError{err}
	}
	if !f.aws {
		if _, err := os.Stat(f.storeDir()); errors.Is(err, os.ErrNotExist) {
			return nil, func() {}, nil // nothing stored yet: not created by a read
		}
	}
	env, err := f.openWith(cmd, runner.Options{Workspace: f.workspace, StoreDir: f.storeDir(), Region: f.region, NoModel: true})
	if err != nil {
		return nil, nil, err
	}
	s, err := env.Sessions()
	if err != nil {
		_ = env.Close()
		return nil, nil, err
	}
	return s, func() { _ = env.Close() }, nil
}

// deleteSession is `archmax sessions --delete SESSION` (session.Sessions.Delete; RD22-6):
// one line on stdout — deleted, or nothing to delete — and exit 0 either way; a refusal (a
// turn running, a child session) is an error naming what to do.
//
// The delete's audit line (RD22-20: "session deleted", the id, the counts of sub-workflow
// sessions and files removed) goes to stderr.
func deleteSession(ctx context.Context, sessions *session.Sessions, id string, out, errOut io.Writer) error {
	existed := false
	if sessions != nil { // no store yet: nothing to delete, and none is created
		var err error
		sessions.WithAuditLog(slog.New(slog.NewTextHandler(errOut, nil)))
		if existed, err = sessions.Delete(ctx, id); err != nil {
			var busy *session.SessionNotResumableError
			var deleting *session.SessionDeletingError
			switch {
			case errors.As(err, &deleting) && deleting.LeaseExpiresAt != "":
				return &worded{msg: fmt.Sprintf("session '%s' is being deleted by another delete, which holds it until %s: repeat the delete after that if it is still there", id, deleting.LeaseExpiresAt), err: err}
			case errors.As(err, &busy) && busy.LeaseExpiresAt != "":
				return &worded{msg: fmt.Sprintf("session '%s' has a turn running (its own or a sub-workflow's): retry the delete once the turn parks or ends (its writer's lease expires at %s)", id, busy.LeaseExpiresAt), err: err}
			case errors.As(err, &busy):
				return &worded{msg: fmt.Sprintf("session '%s' has a turn running (its own or a sub-workflow's): retry the delete once the turn parks or ends", id), err: err}
			}
			return err
		}
	}
	if existed {
		fmt.Fprintf(out, "deleted session '%s'\n", id)
	} else {
		fmt.Fprintf(out, "no session '%s' in this store: nothing to delete\n", id)
	}
	return nil
}

// keepSession is `archmax sessions --keep SESSION` (session.Sessions.Keep; RD22-22): one line
// on stdout, exit 0 also when there is no such session.
func keepSession(ctx context.Context, sessions *session.Sessions, id string, out io.Writer) error {
	existed := false
	if sessions != nil {
		var err error
		if existed, err = sessions.Keep(ctx, id); err != nil {
			return err
		}
	}
	if existed {
		fmt.Fprintf(out, "session '%s' has no retention expiry now; with retention configured its next step sets one\n", id)
	} else {
		fmt.Fprintf(out, "no session '%s' in this store: nothing to keep\n", id)
	}
	return nil
}

// sessionsError words a failed read of one session.
func sessionsError(err error, id string) error {
	var nf *session.SessionNotFoundError
	if errors.As(err, &nf) {
		return &worded{msg: fmt.Sprintf("no session '%s' in this store; 'archmax sessions' lists them", id), err: err}
	}
	return err
}

// listSessions prints every session the options select (all pages), as a table or a JSON array.
func listSessions(ctx context.Context, sessions *session.Sessions, opts session.ListOptions, jsonOut bool, out io.Writer) error {
	var all []session.SessionSummary
	for sessions != nil {
		page, next, err := sessions.List(ctx, opts)
		if err != nil {
			return err
		}
		all = append(all, page...)
		if next == "" {
			break
		}
		opts.Cursor = next
	}
	if jsonOut {
		if all == nil {
			all = []session.SessionSummary{}
		}
		return printJSON(out, all)
	}
	if len(all) == 0 {
		fmt.Fprintln(out, "No durable sessions found.")
		return nil
	}
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tWORKFLOW\tSTATUS\tSTATE\tUPDATED\tAWAITING\tVARIABLES")
	for _, s := range all {
		vars := sortedNames(s.Variables)
		fmt.Fprintf(tw, "%s\t%s\t%s (%s)\t%s\t%s\t%s\t%s\n", s.SessionID, s.Workflow, s.Status, s.Classification,
			dash(s.WorkflowState), dash(s.UpdatedAt), dash(awaiting(&s)), dash(strings.Join(vars, ",")))
	}
	return tw.Flush()
}

// awaiting is a parked session's wait in one cell: "decision: a|b" or "input: reason (due …)".
func awaiting(s *session.SessionSummary) string {
	p := s.Pending
	switch {
	case p == nil:
		return ""
	case p.Decision != nil:
		var to []string
		for _, t := range p.Decision.Transitions {
			to = append(to, t.To)
		}
		return "decision in " + p.Decision.State + ": " + strings.Join(to, "|")
	case p.Input != nil:
		w := "input in " + p.Input.State + ": " + oneLine(p.Input.Reason, 60)
		if p.Input.ResumeAt != "" {
			w += " (due " + p.Input.ResumeAt + ")"
		}
		return w
	}
	return ""
}

// showSession prints one session in full (see the command's help).
func showSession(ctx context.Context, sessions *session.Sessions, s *session.SessionSummary, after, limit int, out io.Writer, pr parkReader) error {
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "%s\t%s\n", k, v)
		}
	}
	row("session", s.SessionID)
	row("workflow", s.Workflow)
	row("parent", s.ParentID)
	st := string(s.Status) + " (" + s.Classification + ")"
	if s.Interrupted {
		st += ", interrupted"
	}
	row("status", st)
	row("state", s.WorkflowState)
	row("title", clean(s.Title))
	row("turn", strconv.Itoa(s.Turn))
	row("created", s.CreatedAt)
	row("updated", s.UpdatedAt)
	row("spec", s.SpecHash)
	if pr.folder != nil {
		row("files", pr.folder(s.SessionID)) // where its files lie (decider.go)
	}
	if u := s.Usage; u != nil {
		row("usage", usageText(u))
	}
	if s.Exit != nil && !s.Exit.Success {
		row("exit", clean(s.Exit.Code+": "+s.Exit.Reason))
	}
	row("rejected", clean(s.Rejected))
	if e := s.LastError; e != nil {
		b, _ := json.Marshal(e)
		row("last error", string(b))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	showPark(ctx, s, out, pr)
	fmt.Fprintln(out, "variables")
	if len(s.Variables) == 0 {
		fmt.Fprintln(out, "  none set")
	}
	for _, name := range sortedNames(s.Variables) {
		v := s.Variables[name]
		lock := ""
		if v.Locked {
			lock = " (locked)"
		}
		b, _ := json.Marshal(v.Value)
		fmt.Fprintf(out, "  %s%s = %s\n", name, lock, clean(oneLine(string(b), 200)))
	}
	trail, err := sessions.Trail(ctx, s.SessionID)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "trail")
	for i, step := range trail {
		line := fmt.Sprintf("  %d. %s → %s", i+1, step.Kind, step.To)
		if step.Workflow != "" {
			line += " (" + step.Workflow + " " + step.Status + ")"
		}
		if step.Reason != "" {
			line += ": " + clean(oneLine(step.Reason, 160))
		}
		if step.TS > 0 {
			line += "  " + time.UnixMilli(step.TS).UTC().Format(time.RFC3339)
		}
		fmt.Fprintln(out, line)
	}
	msgs, next, err := sessions.Messages(ctx, s.SessionID, int64(after), limit)
	if err != nil {
		return err
	}
	first := min(int64(after), s.MessageCount)
	if len(msgs) == 0 {
		fmt.Fprintf(out, "transcript (%d messages; none after %d)\n", s.MessageCount, after)
		return nil
	}
	fmt.Fprintf(out, "transcript (messages %d–%d of %d)\n", first+1, next, s.MessageCount)
	for i, m := range msgs {
		fmt.Fprintf(out, "  [%d] %s\n", first+int64(i)+1, messageLine(m))
	}
	if next < s.MessageCount {
		more := fmt.Sprintf("archmax sessions %s --after %d", s.SessionID, next)
		if limit != sessionsPage {
			more += " --limit " + strconv.Itoa(limit)
		}
		fmt.Fprintf(out, "  … more: %s\n", more)
	}
	return nil
}

// showPark prints a parked session's pending park: its choices and how to answer, and the
// content of its evidence files (decider.go).
func showPark(ctx context.Context, s *session.SessionSummary, out io.Writer, pr parkReader) {
	p := s.Pending
	if p == nil {
		return
	}
	switch {
	case p.Decision != nil:
		d := p.Decision
		where, workflow := d.State, s.Workflow
		if dp := innermost(s.Delegation); dp != nil {
			where += " of sub-workflow " + dp.Workflow + " (" + dp.SessionID + ")"
		}
		fmt.Fprintf(out, "awaiting a decision in %s (park %s)\n", where, p.ParkID)
		workflow, owner := decisionWorkflowAndOwner(s.SessionID, workflow, s.Delegation)
		writeChoices(out, "  ", d, workflow, pr)
		fmt.Fprintf(out, "  decide: archmax decide %s --to <state> [--comment TEXT]; answer without deciding: archmax reply %s <message…>\n", s.SessionID, s.SessionID)
		writeEvidence(ctx, out, "  ", d, owner, pr)
	case p.Input != nil:
		fmt.Fprintf(out, "awaiting input in %s (park %s)\n", p.Input.State, p.ParkID)
		fmt.Fprintf(out, "  waiting for: %s\n", clean(p.Input.Reason))
		if p.Input.ResumeAt != "" {
			fmt.Fprintf(out, "  due: %s\n", p.Input.ResumeAt)
		}
		fmt.Fprintf(out, "  resume: archmax deliver %s --trigger <id> [--variables JSON]\n", s.SessionID)
	}
}

// messageLine renders one transcript message on a line.
func messageLine(m transcript.Message) string {
	role := m.Role
	switch {
	case m.Note != "":
		role += " [" + string(m.Note) + "]"
	case m.Tool != "":
		role += " " + m.Tool
		if m.Blocked {
			role += " (refused)"
		} else if m.Error {
			role += " (error)"
		}
	}
	text := clean(oneLine(m.Text, 160))
	if len(m.ToolCalls) > 0 {
		var names []string
		for _, c := range m.ToolCalls {
			names = append(names, c.Name)
		}
		calls := "calls " + strings.Join(names, ", ")
		if text == "" {
			text = calls
		} else {
			text += "  (" + calls + ")"
		}
	}
	return role + ": " + text
}

func sortedNames(m map[string]spec.VariableEntry) []string { return slices.Sorted(maps.Keys(m)) }

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// printJSON writes v as indented JSON and a newline.
func printJSON(out io.Writer, v any) error {
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
