package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/spf13/cobra"
)

// `archmax redrive` re-submits the dead letters of a deployed stage (DECISIONS RV22-1…):
// each message of the stage's queues is read, its original payload and the function it
// was meant for are worked out from the message's format, the payload is invoked on that
// function asynchronously (Lambda Invoke, InvocationType Event) and the message deleted
// once Lambda accepted it. Never a new PutEvents: a start and a delivery are idempotent by
// their EventBridge event id, which only the original event carries.

// redriveQueues are the queue keys of a stage, in the order --queue all reads them: the
// on-failure destination of every asynchronously invoked function, then the EventBridge
// rules' and the Scheduler's dead letter queues (infra/operations.go names them).
var redriveQueues = []string{"turn-failed", "decide-failed", "deliver-failed", "wake-failed", "stream-failed", "events-dlq", "schedules-dlq"}

// The --json codes redrive's own failures carry.
const (
	codeRedriveQueue    = "QueueReadError"
	codeRedriveFunction = "FunctionReadError"
)

// exitInterrupted is the exit status of a run stopped by an interrupt (Ctrl-C): 128 + SIGINT,
// as a shell reports a command the signal ended.
const exitInterrupted = 130

// redrivePermissions is what a run needs of the credentials.
const redrivePermissions = "sqs:GetQueueUrl, sqs:ReceiveMessage, sqs:DeleteMessage and sqs:ChangeMessageVisibility on the stage's queues, " +
	"lambda:GetFunctionConfiguration and lambda:InvokeFunction on its functions"

// redriveCredentialsHint is what to do without credentials: the stage's account's.
const redriveCredentialsHint = "no usable AWS credentials: redrive needs credentials for the account the stage is deployed in — set AWS_PROFILE to a profile of " +
	"~/.aws/config for that account (`aws sso login` refreshes an SSO profile), or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY; they need " + redrivePermissions

// Tunables of a run (tests shorten the wait).
var (
	// redriveWait is each receive's long poll, in seconds: long polling asks every SQS
	// server, so an empty answer means the queue has nothing visible.
	redriveWait int32 = 1
	// redriveVisibility is how long a received message stays hidden while the run works
	// on it, in seconds; a message kept (unknown, dry run, failed) is made visible again
	// when its queue is done.
	redriveVisibility int32 = 120
)

// stageRe is a stage name as the stack accepts it.
var stageRe = regexp.MustCompile(`^[a-z][a-z0-9-]{0,19}$`)

// Actions of a message.
const (
	actRedriven = "redriven"      // invoked (accepted) and deleted
	actWould    = "would-redrive" // --dry-run: what would be invoked; nothing sent, nothing deleted
	actKept     = "kept"          // not a format redrive knows, or not this stage's: left in the queue
	actFailed   = "failed"        // the invocation was refused (the message stays), or the delete failed
	// actDiscarded, actWouldDiscard: a retention-batch deleted with --discard-retention (with
	// --dry-run: would be); it is never re-submitted (DECISIONS RV22-13).
	actDiscarded    = "discarded"
	actWouldDiscard = "would-discard"
	// actInterrupted: the run was interrupted while it re-submitted the message; Lambda may
	// have accepted the invocation, and the message is left in the queue.
	actInterrupted = "interrupted"
)

// redriveRecord is one message's line, and its --json record {"type": "message", …}.
type redriveRecord struct {
	Type      string `json:"type"`
	Queue     string `json:"queue"`
	MessageID string `json:"messageId"`
	// Kind is what the payload is: start, delivery, continuation, wake, sweep,
	// retention-batch; unknown when redrive does not recognise the message.
	Kind string `json:"kind"`
	// Target is the ARN of the stage's function the payload is (or would be) re-submitted to,
	// as Lambda names it (for a retention-batch, the wake function it failed on); absent when
	// there is none to name: another kept message (its reason says what the message names),
	// a function the stage lacks, a run interrupted before it asked.
	Target    string `json:"target,omitempty"`
	SessionID string `json:"sessionId,omitempty"`
	Action    string `json:"action"`
	Reason    string `json:"reason,omitempty"` // why kept or failed
	Cause     string `json:"cause,omitempty"`  // the original failure, as the message records it
	// Batch is a retention-batch's stream records: shard, sequence range, stream ARN.
	Batch *streamBatch `json:"batch,omitempty"`
}

// redriveSummary is the run's last line, and its --json record {"type": "summary", …}.
type redriveSummary struct {
	Type         string   `json:"type"`
	Stage        string   `json:"stage"`
	DryRun       bool     `json:"dryRun"`
	Redriven     int      `json:"redriven"`
	WouldRedrive int      `json:"wouldRedrive"`
	Kept         int      `json:"kept"`
	Failed       int      `json:"failed"`
	Discarded    int      `json:"discarded"`     // retention-batches deleted (--discard-retention)
	WouldDiscard int      `json:"wouldDiscard"`  // with --dry-run: would be
	Missing      []string `json:"missingQueues"` // queues the stage does not have
	Interrupted  bool     `json:"interrupted"`   // the run was interrupted: what it did not reach is left in the queues
	inFlight     int      // messages reported interrupted
}

func newRedriveCommand(code *int) *cobra.Command {
	var stage, region string
	var queues []string
	var dryRun, jsonOut, discardRetention bool
	var maxN int
	cmd := &cobra.Command{
		Use:   "redrive --stage STAGE [--queue NAME|all] [--dry-run] [--discard-retention] [--max N] [--region R]",
		Short: "Re-submit a deployed stage's dead letters to their functions",
		Long: `Re-submit the messages of a deployed stage's dead letter queues (archmax-<stage>-<queue>):
each message's original payload is invoked asynchronously on the function it was meant for,
and the message is deleted once Lambda accepted the invocation. Nothing is put on the event
bus again: a start and a delivery are recorded once by their EventBridge event id, which only
the original event carries, so re-driving a message twice is harmless.

  <fn>-failed      (turn, decide, deliver, wake, stream) Lambda's record of a failed
                   asynchronous invocation: its requestPayload, on the function it names,
                   which must be the queue's function
  events-dlq       an event EventBridge could not hand over: the event, on the function of
                   its TARGET_ARN attribute
  schedules-dlq    a timed wake Scheduler could not hand over: {sessionId, parkId}, on the
                   stage's wake function

A function must be the stage's own: its partition, region and account (as Lambda names the
stage's functions to these credentials), unqualified or $LATEST. Each queue re-submits only
what it can carry: turn-failed starts (an event, not the sweep's Scheduled Event) and
continuations; deliver-failed deliveries and continuations; wake-failed wakes, sweeps and
continuations; decide-failed and stream-failed continuations; events-dlq starts on turn,
deliveries on deliver, sweeps on wake; schedules-dlq wakes. A message of any other shape or
kind, or naming another function, is kept in its queue and reported, never deleted; so is
one whose invocation was refused. --dry-run reads and reports and changes nothing. Messages a
run keeps are visible in their queue again once that queue is done.

wake-failed also holds the retention consumer's failures: Lambda's record of a DynamoDB
stream batch the wake function gave up on (kind retention-batch). It names the stream's
shard and sequence numbers, not the records, and is never re-submitted: it is kept and
reported with them. Read the sessions' ids from the wake function's log lines "expired
session not deleted" of that time, delete what is left with
"archmax sessions --aws --delete ID", then clear those messages with --discard-retention
(which deletes retention-batches and nothing else; they count as handled).

One line per message on stdout (queue, kind, target, session id when known, action), then
a summary; with --json one record per message {"type": "message", "queue", "messageId",
"kind", "target", "sessionId", "action", "reason", "cause", "batch"} and {"type": "summary", …}.
The region is --region, else the AWS configuration; AWS_ENDPOINT_URL_SQS and
AWS_ENDPOINT_URL_LAMBDA point the calls at local peers.

Exit status: 0 every message re-submitted or discarded (or, with --dry-run, would be), 1 a message
kept or failed, or a queue that cannot be read, 2 usage error, 130 interrupted (Ctrl-C: the
message in flight is reported interrupted — it may have been re-submitted — and left in its
queue, then the summary). Find the cause before you re-drive: a failure no retry fixes fails
again.`,
		Example: `  archmax redrive --stage dev --dry-run
  archmax redrive --stage dev --queue turn-failed --max 10
  archmax redrive --stage dev --queue wake-failed --discard-retention`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !stageRe.MatchString(stage) {
				if stage == "" {
					return usageError{errors.New("--stage STAGE is required: the deployed stage whose queues to read (archmax-<stage>-…)")}
				}
				return usageError{fmt.Errorf("--stage %q is not a stage name (lower-case letters, digits and '-', starting with a letter, at most 20)", stage)}
			}
			names, err := redriveQueueNames(queues)
			if err != nil {
				return usageError{err}
			}
			if maxN < 0 {
				return usageError{fmt.Errorf("--max %d: give a count of messages, 0 for all", maxN)}
			}
			r, err := newRedriver(cmd.Context(), region, stage)
			if err != nil {
				return err
			}
			r.dryRun, r.max, r.discardRetention = dryRun, maxN, discardRetention
			r.emit = redrivePrinter(cmd.OutOrStdout(), jsonOut)
			sum, err := r.run(cmd.Context(), names)
			if err != nil {
				return err
			}
			printRedriveSummary(cmd.OutOrStdout(), jsonOut, sum)
			switch {
			case sum.Interrupted:
				*code = exitInterrupted
			case sum.Kept+sum.Failed+len(sum.Missing) > 0:
				*code = exitFail
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&stage, "stage", "", "the deployed stage (its queues and functions are archmax-<stage>-…)")
	fl.StringSliceVar(&queues, "queue", []string{"all"}, "the queues to read: "+strings.Join(redriveQueues, ", ")+", or all (a comma-separated list)")
	fl.BoolVar(&dryRun, "dry-run", false, "report what would be re-submitted; invoke nothing, delete nothing")
	fl.BoolVar(&discardRetention, "discard-retention", false, "delete wake-failed's retention stream batches (kind retention-batch, never re-submitted) once their sessions are deleted by hand")
	fl.IntVar(&maxN, "max", 0, "handle at most N messages over all the queues (0: all)")
	fl.StringVar(&region, "region", "", "the AWS region (else the AWS configuration's)")
	fl.BoolVar(&jsonOut, "json", false, "one JSON record per message, then the summary record")
	_ = cmd.RegisterFlagCompletionFunc("queue", fixed(append(slices.Clone(redriveQueues), "all")...))
	return cmd
}

// redriveQueueNames resolves --queue values to queue keys, in redriveQueues' order.
func redriveQueueNames(values []string) ([]string, error) {
	want := map[string]bool{}
	for _, v := range values {
		v = strings.TrimSpace(v)
		switch {
		case v == "all":
			for _, q := range redriveQueues {
				want[q] = true
			}
		case slices.Contains(redriveQueues, v):
			want[v] = true
		default:
			return nil, fmt.Errorf("--queue %q is not a queue of the stage: %s, or all", v, strings.Join(redriveQueues, ", "))
		}
	}
	var out []string
	for _, q := range redriveQueues {
		if want[q] {
			out = append(out, q)
		}
	}
	return out, nil
}

// redriver is one run over a stage's queues.
type redriver struct {
	sqs    *sqs.Client
	lambda *lambda.Client
	stage  string
	dryRun bool
	// discardRetention: delete retention-batch messages (reported and kept without it)
	discardRetention bool
	max              int // 0: no limit
	emit             func(redriveRecord)
	own              map[string]*stageFunction // the stage's functions, by key, as resolved (once each)
}

// stageFunction is one of the stage's functions as Lambda names it to these credentials:
// its ARN (GetFunctionConfiguration's FunctionArn, unqualified), or missing when Lambda has
// no function of that name.
type stageFunction struct {
	arn     string
	parts   lambdaARN
	missing bool
}

// newRedriver loads the AWS configuration (region from the flag, else the configuration;
// endpoints from AWS_ENDPOINT_URL_SQS / AWS_ENDPOINT_URL_LAMBDA, read by the SDK) and checks
// the region and the credentials before any call.
func newRedriver(ctx context.Context, region, stage string) (*redriver, error) {
	var opts []func(*config.LoadOptions) error
	if region != "" {
		opts = append(opts, config.WithRegion(region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, codedHint(codeAWSConfig, fmt.Errorf("load the AWS configuration: %w", err),
			"check AWS_PROFILE and ~/.aws/config (`aws configure list` shows what is read)")
	}
	if cfg.Region == "" {
		return nil, usageError{codedHint(codeNoRegion, errors.New("no AWS region for the stage's queues"),
			"pass --region REGION (the stage's region) or set AWS_REGION, or a region in your AWS profile")}
	}
	if err := checkCredentialsHint(ctx, cfg, "SQS and Lambda", redriveCredentialsHint); err != nil {
		return nil, err
	}
	return &redriver{sqs: sqs.NewFromConfig(cfg), lambda: lambda.NewFromConfig(cfg), stage: stage, own: map[string]*stageFunction{}}, nil
}

// queueName is the full name of a queue key: archmax-<stage>-<key>.
func (r *redriver) queueName(key string) string { return "archmax-" + r.stage + "-" + key }

// functionName is the Lambda name of a function of the stage: archmax-<stage>-<fn>.
func (r *redriver) functionName(fn string) string { return "archmax-" + r.stage + "-" + fn }

// resolve is the stage's function fn as Lambda names it (GetFunctionConfiguration of
// archmax-<stage>-<fn>), asked once a run. A function Lambda does not have is missing; any
// other failure is the error (the caller stops the run, or reports an interruption).
func (r *redriver) resolve(ctx context.Context, fn string) (*stageFunction, error) {
	if f, ok := r.own[fn]; ok {
		return f, nil
	}
	name := r.functionName(fn)
	out, err := r.lambda.GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String(name)})
	var f stageFunction
	switch {
	case errors.As(err, new(*lambdatypes.ResourceNotFoundException)):
		f.missing = true
	case err != nil:
		return nil, err
	default:
		f.arn = aws.ToString(out.FunctionArn)
		var ok bool
		if f.parts, ok = parseLambdaARN(f.arn); !ok || f.parts.name != name {
			return nil, fmt.Errorf("Lambda names the function %s %q, not an ARN of it", name, f.arn)
		}
		f.parts.qualifier, f.arn = "", strings.TrimSuffix(f.arn, ":"+f.parts.qualifier)
	}
	r.own[fn] = &f
	return &f, nil
}

// interrupted reports whether err is the run's interruption rather than a failure.
func interrupted(ctx context.Context, err error) bool {
	return ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ctx.Err()))
}

// run reads the queues in turn and handles each message once, up to r.max. A queue the
// stage does not have is listed in the summary; any other failure to read a queue, or to
// resolve a function of the stage, stops the run with the error (the credentials, the
// network, a permission). An interruption (ctx cancelled) stops it too, with the summary
// of what was done.
func (r *redriver) run(ctx context.Context, keys []string) (redriveSummary, error) {
	sum := redriveSummary{Type: "summary", Stage: r.stage, DryRun: r.dryRun, Missing: []string{}}
	handled := 0
	for _, key := range keys {
		if r.max > 0 && handled >= r.max {
			break
		}
		if ctx.Err() != nil {
			sum.Interrupted = true
			return sum, nil
		}
		name := r.queueName(key)
		out, err := r.sqs.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
		if errors.As(err, new(*sqstypes.QueueDoesNotExist)) {
			sum.Missing = append(sum.Missing, name)
			continue
		}
		if interrupted(ctx, err) {
			sum.Interrupted = true
			return sum, nil
		}
		if err != nil {
			return sum, codedHint(codeRedriveQueue, fmt.Errorf("read queue %s: %w", name, err),
				"the credentials need "+redrivePermissions+"; check --region")
		}
		n, err := r.drain(ctx, key, name, *out.QueueUrl, handled, &sum)
		handled += n
		if err != nil || sum.Interrupted {
			return sum, err
		}
	}
	return sum, nil
}

// drain handles the visible messages of one queue; it returns how many it handled.
func (r *redriver) drain(ctx context.Context, key, name, url string, handled int, sum *redriveSummary) (int, error) {
	seen := map[string]bool{}
	var keep []string // receipt handles of the messages left in the queue
	defer func() {
		// what the run keeps is visible again at once, not after the run's visibility timeout
		for _, h := range keep {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			_, _ = r.sqs.ChangeMessageVisibility(cctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String(h), VisibilityTimeout: 0})
			cancel()
		}
	}()
	n := 0
	for {
		want := int32(10)
		if r.max > 0 {
			want = int32(min(10, r.max-handled-n))
		}
		if want <= 0 {
			return n, nil
		}
		out, err := r.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(url),
			MaxNumberOfMessages:         want,
			VisibilityTimeout:           redriveVisibility,
			WaitTimeSeconds:             redriveWait,
			MessageAttributeNames:       []string{"All"},
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		})
		if interrupted(ctx, err) {
			sum.Interrupted = true
			return n, nil
		}
		if err != nil {
			return n, codedHint(codeRedriveQueue, fmt.Errorf("receive from %s: %w", name, err),
				"the credentials need sqs:ReceiveMessage on the stage's queues")
		}
		fresh := 0
		for _, m := range out.Messages {
			if sum.Interrupted || ctx.Err() != nil {
				// received but not reached: visible again at once, not reported
				sum.Interrupted = true
				keep = append(keep, aws.ToString(m.ReceiptHandle))
				continue
			}
			id := aws.ToString(m.MessageId)
			if seen[id] {
				continue // back after the visibility timeout of a long run: handled already
			}
			seen[id] = true
			fresh++
			n++
			rec, kept, err := r.handle(ctx, key, name, url, m)
			if err != nil {
				keep = append(keep, aws.ToString(m.ReceiptHandle))
				return n, err
			}
			switch rec.Action {
			case actRedriven:
				sum.Redriven++
			case actWould:
				sum.WouldRedrive++
			case actKept:
				sum.Kept++
			case actFailed:
				sum.Failed++
			case actDiscarded:
				sum.Discarded++
			case actWouldDiscard:
				sum.WouldDiscard++
			case actInterrupted:
				sum.Interrupted = true
				sum.inFlight++
			}
			if kept {
				keep = append(keep, aws.ToString(m.ReceiptHandle))
			}
			r.emit(rec)
		}
		if fresh == 0 || sum.Interrupted {
			return n, nil
		}
	}
}

// handle re-submits one message (or, with --dry-run, says it would) and deletes it once
// the invocation was accepted; kept reports a message left in the queue untouched (made
// visible again when the queue is done). A message re-submitted whose delete failed is not
// kept: it comes back after the run's visibility timeout, and a second re-submission is
// harmless. err is a failure to resolve the stage's function that stops the run.
func (r *redriver) handle(ctx context.Context, key, name, url string, m sqstypes.Message) (rec redriveRecord, kept bool, err error) {
	rec = redriveRecord{Type: "message", Queue: name, MessageID: aws.ToString(m.MessageId)}
	p := r.classify(key, m)
	rec.Kind, rec.SessionID, rec.Cause = p.kind, p.sessionID, p.cause
	if p.reason != "" {
		rec.Action, rec.Reason = actKept, p.reason
		return rec, true, nil
	}
	own, err := r.resolve(ctx, p.fn)
	switch {
	case interrupted(ctx, err):
		rec.Action, rec.Reason = actInterrupted, "not re-submitted; left in the queue"
		return rec, true, nil
	case err != nil:
		return rec, true, codedHint(codeRedriveFunction, fmt.Errorf("read function %s: %w", r.functionName(p.fn), err),
			"the credentials need "+redrivePermissions+"; check --region")
	case own.missing:
		rec.Action = actFailed
		rec.Reason = fmt.Sprintf("the stage has no function %s in this region (ResourceNotFoundException); the message stays", r.functionName(p.fn))
		return rec, true, nil
	}
	if p.named != "" {
		if named, _ := parseLambdaARN(p.named); !sameFunction(named, own.parts) {
			rec.Kind, rec.SessionID, rec.Action = "unknown", "", actKept
			rec.Reason = fmt.Sprintf("the message names function %q, not the stage's %s (another partition, region, account, version or alias)", p.named, own.arn)
			return rec, true, nil
		}
	}
	rec.Target = own.arn
	if p.batch != nil {
		return r.handleRetention(ctx, url, m, rec, p.batch)
	}
	if r.dryRun {
		rec.Action = actWould
		return rec, true, nil
	}
	ictx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := r.lambda.Invoke(ictx, &lambda.InvokeInput{FunctionName: aws.String(own.arn), InvocationType: lambdatypes.InvocationTypeEvent, Payload: p.payload})
	if err == nil && out.StatusCode != 202 {
		err = fmt.Errorf("Lambda answered %d, not 202 (accepted)", out.StatusCode)
	}
	if interrupted(ctx, err) {
		rec.Action, rec.Reason = actInterrupted, "may have been re-submitted; left in the queue (re-driving it again is harmless)"
		return rec, true, nil
	}
	if err != nil {
		rec.Action, rec.Reason = actFailed, "the invocation was refused, the message stays: "+err.Error()
		return rec, true, nil
	}
	// accepted: the delete runs even if the run is interrupted now
	dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer dcancel()
	if _, err := r.sqs.DeleteMessage(dctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
		rec.Action, rec.Reason = actFailed, "re-submitted, but the message could not be deleted (re-driving it again is harmless): "+err.Error()
		return rec, false, nil
	}
	rec.Action = actRedriven
	return rec, false, nil
}

// handleRetention reports a retention-batch (its records are not in the message, and the
// stream keeps them 24 hours: nothing is re-submitted) and, with --discard-retention, deletes
// it (DECISIONS RV22-13).
func (r *redriver) handleRetention(ctx context.Context, url string, m sqstypes.Message, rec redriveRecord, b *streamBatch) (redriveRecord, bool, error) {
	rec.Batch = b
	what := fmt.Sprintf("stream batch of %d records, shard %s, sequence numbers %s to %s, stream %s", b.BatchSize, b.ShardID, b.StartSequenceNumber, b.EndSequenceNumber, b.StreamARN)
	switch {
	case !r.discardRetention:
		rec.Action = actKept
		rec.Reason = what + ": not re-submitted (the records are not in the message) — the expired sessions' remaining items are removed by re-running the delete: " +
			"read their ids from the wake function's log lines \"expired session not deleted\" of that time, run `archmax sessions --aws --delete ID`, " +
			"then clear this message with --discard-retention"
		return rec, true, nil
	case r.dryRun:
		rec.Action, rec.Reason = actWouldDiscard, what
		return rec, true, nil
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if _, err := r.sqs.DeleteMessage(dctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
		rec.Action, rec.Reason = actFailed, what+": the message could not be deleted: "+err.Error()
		return rec, true, nil
	}
	rec.Action, rec.Reason = actDiscarded, what
	return rec, false, nil
}

// redrivePrinter writes each record: a line, or with --json a JSON record. In a line every
// value a message carries (or Lambda's or SQS's answer about it) is written as is when it is
// printable, else quoted, so no message can forge a line or drive the terminal.
func redrivePrinter(w io.Writer, jsonOut bool) func(redriveRecord) {
	return func(rec redriveRecord) {
		if jsonOut {
			b, _ := json.Marshal(rec)
			fmt.Fprintf(w, "%s\n", b)
			return
		}
		line := fmt.Sprintf("%s %s: %s", rec.Queue, shown(rec.MessageID), rec.Kind)
		if rec.Target != "" {
			line += " → " + shown(rec.Target)
		}
		if rec.SessionID != "" {
			line += " (session " + shown(rec.SessionID) + ")"
		}
		line += ": " + strings.ReplaceAll(rec.Action, "-", " ")
		if rec.Reason != "" {
			line += " — " + shown(rec.Reason)
		}
		fmt.Fprintln(w, line)
	}
}

// shown is s when every character of it prints (no control, format or separator
// character but the space, valid UTF-8), else s quoted with its escapes.
func shown(s string) string {
	if !utf8.ValidString(s) || strings.IndexFunc(s, func(r rune) bool { return !strconv.IsPrint(r) }) >= 0 {
		return strconv.Quote(s)
	}
	return s
}

func printRedriveSummary(w io.Writer, jsonOut bool, sum redriveSummary) {
	if jsonOut {
		b, _ := json.Marshal(sum)
		fmt.Fprintf(w, "%s\n", b)
		return
	}
	for _, q := range sum.Missing {
		fmt.Fprintf(w, "%s: no such queue in the region (is the stage deployed there?)\n", q)
	}
	var line string
	if sum.DryRun {
		line = fmt.Sprintf("dry run: %d would be re-submitted, %d kept", sum.WouldRedrive, sum.Kept)
		if sum.WouldDiscard > 0 {
			line += fmt.Sprintf(", %d would be discarded", sum.WouldDiscard)
		}
	} else {
		line = fmt.Sprintf("%d redriven, %d kept, %d failed", sum.Redriven, sum.Kept, sum.Failed)
		if sum.Discarded > 0 {
			line += fmt.Sprintf(", %d discarded", sum.Discarded)
		}
	}
	if sum.Interrupted {
		line += fmt.Sprintf(", %d interrupted — the run was interrupted: what it did not reach is left in the queues", sum.inFlight)
	}
	fmt.Fprintln(w, line)
}
