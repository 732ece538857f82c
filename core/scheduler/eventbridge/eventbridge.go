// Package eventbridge implements the session.Scheduler port on Amazon EventBridge Scheduler
// (DESIGN.md §5, spec 02 §4.4): each park with a resumeAt gets one one-time schedule
// `at(yyyy-mm-ddThh:mm:ss)` in UTC, FlexibleTimeWindow OFF, ActionAfterCompletion DELETE,
// whose target (the functions/wake Lambda) receives the JSON Wake {sessionId, parkId} and,
// when configured, names a dead letter queue for a wake Scheduler could not deliver.
//
// A wake is a Deliver of the timer trigger to that park only, so a late, early or duplicate
// fire is harmless; the periodic sweep over the sparse resumeAt index backs up a lost one.
package eventbridge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/scheduler/types"
)

// API is the part of *scheduler.Client the Scheduler uses.
type API interface {
	CreateSchedule(ctx context.Context, in *scheduler.CreateScheduleInput, optFns ...func(*scheduler.Options)) (*scheduler.CreateScheduleOutput, error)
	UpdateSchedule(ctx context.Context, in *scheduler.UpdateScheduleInput, optFns ...func(*scheduler.Options)) (*scheduler.UpdateScheduleOutput, error)
	DeleteSchedule(ctx context.Context, in *scheduler.DeleteScheduleInput, optFns ...func(*scheduler.Options)) (*scheduler.DeleteScheduleOutput, error)
}

// Config names where schedules live and what they invoke.
type Config struct {
	// Group is the schedule group; "" means the account's "default" group.
	Group string
	// TargetARN is the ARN of the functions/wake Lambda.
	TargetARN string
	// RoleARN is the IAM role EventBridge Scheduler assumes to invoke TargetARN.
	RoleARN string
	// DeadLetterARN, when set, is the SQS queue every schedule's target names as its dead
	// letter queue: where Scheduler puts the wake it failed to deliver after its retries (the
	// role must be allowed sqs:SendMessage on it). "" sets none.
	DeadLetterARN string
	// Now is the clock MinLead counts from: nil is time.Now (production); a test passes the
	// engine's fake clock, so a re-arranged wake lands where the first one did.
	Now func() time.Time
}

// Wake is the target Input of every schedule, as JSON: {"sessionId": …, "parkId": …}.
type Wake struct {
	SessionID string `json:"sessionId"`
	ParkID    string `json:"parkId"`
}

// MinLead is the earliest a schedule is set for, counted from the call: EventBridge refuses
// at() times in the past, and fires with one-minute precision anyway, so a resumeAt that is
// past or less than a minute away is scheduled one minute from now.
const MinLead = time.Minute

// Scheduler is the EventBridge Scheduler adapter of session.Scheduler. It is safe for
// concurrent use.
type Scheduler struct {
	api API
	cfg Config
}

// New returns a Scheduler creating schedules through client as cfg says.
func New(client API, cfg Config) *Scheduler {
	return &Scheduler{api: client, cfg: cfg}
}

// Schedule arranges one wake of park parkID of session sessionID at at (spec 02 §4.4).
// The schedule's time is at in UTC rounded up to the whole second, so the wake never fires
// before resumeAt, and no sooner than MinLead from now. It is an upsert keyed by
// Name(sessionID, parkID): when the schedule exists (ConflictException) it is updated to the
// new time, so calling Schedule again is harmless and the latest time wins. Other errors are
// returned wrapped, the SDK's typed error (*types.ValidationException, …) reachable through
// errors.As.
func (s *Scheduler) Schedule(ctx context.Context, sessionID, parkID string, at time.Time) error {
	// Marshalling a struct of two strings cannot fail.
	input, _ := json.Marshal(Wake{SessionID: sessionID, ParkID: parkID})
	in := &scheduler.CreateScheduleInput{
		Name:                       aws.String(Name(sessionID, parkID)),
		GroupName:                  s.group(),
		ScheduleExpression:         aws.String(expression(fireTime(at, s.now()))),
		ScheduleExpressionTimezone: aws.String("UTC"),
		FlexibleTimeWindow:         &types.FlexibleTimeWindow{Mode: types.FlexibleTimeWindowModeOff},
		ActionAfterCompletion:      types.ActionAfterCompletionDelete,
		Target: &types.Target{
			Arn:     aws.String(s.cfg.TargetARN),
			RoleArn: aws.String(s.cfg.RoleARN),
			Input:   aws.String(string(input)),
		},
	}
	if s.cfg.DeadLetterARN != "" {
		in.Target.DeadLetterConfig = &types.DeadLetterConfig{Arn: aws.String(s.cfg.DeadLetterARN)}
	}
	err := s.create(ctx, in)
	if !isErr[*types.ConflictException](err) {
		return err
	}
	_, err = s.api.UpdateSchedule(ctx, &scheduler.UpdateScheduleInput{
		Name:                       in.Name,
		GroupName:                  in.GroupName,
		ScheduleExpression:         in.ScheduleExpression,
		ScheduleExpressionTimezone: in.ScheduleExpressionTimezone,
		FlexibleTimeWindow:         in.FlexibleTimeWindow,
		ActionAfterCompletion:      in.ActionAfterCompletion,
		Target:                     in.Target,
	})
	switch {
	case err == nil:
		return nil
	case isErr[*types.ResourceNotFoundException](err):
		// It fired (deleting itself) or was cancelled between the create and the update.
		if err := s.create(ctx, in); !isErr[*types.ConflictException](err) {
			return err
		}
		return nil // a concurrent Schedule created it
	default:
		return fmt.Errorf("eventbridge scheduler: update schedule %s to %s: %w", *in.Name, *in.ScheduleExpression, err)
	}
}

// create creates the schedule; a ConflictException is returned unwrapped.
func (s *Scheduler) create(ctx context.Context, in *scheduler.CreateScheduleInput) error {
	_, err := s.api.CreateSchedule(ctx, in)
	if err == nil || isErr[*types.ConflictException](err) {
		return err
	}
	return fmt.Errorf("eventbridge scheduler: create schedule %s at %s: %w", *in.Name, *in.ScheduleExpression, err)
}

// Cancel deletes the schedule of park parkID of session sessionID. A schedule that does not
// exist (never created, already fired, already cancelled) is not an error.
func (s *Scheduler) Cancel(ctx context.Context, sessionID, parkID string) error {
	name := Name(sessionID, parkID)
	_, err := s.api.DeleteSchedule(ctx, &scheduler.DeleteScheduleInput{Name: aws.String(name), GroupName: s.group()})
	if err == nil || isErr[*types.ResourceNotFoundException](err) {
		return nil
	}
	return fmt.Errorf("eventbridge scheduler: delete schedule %s: %w", name, err)
}

func (s *Scheduler) now() time.Time {
	if s.cfg.Now != nil {
		return s.cfg.Now()
	}
	return time.Now()
}

func (s *Scheduler) group() *string {
	if s.cfg.Group == "" {
		return nil
	}
	return aws.String(s.cfg.Group)
}

func isErr[T error](err error) bool {
	var target T
	return err != nil && errors.As(err, &target)
}

// expression is the one-time schedule expression for t: `at(yyyy-mm-ddThh:mm:ss)` of t in
// UTC, truncated to the second.
func expression(t time.Time) string {
	return "at(" + t.UTC().Format("2006-01-02T15:04:05") + ")"
}

// fireTime is at, raised to now+MinLead when earlier, in UTC rounded up to the whole second.
func fireTime(at, now time.Time) time.Time {
	if earliest := now.Add(MinLead); at.Before(earliest) {
		at = earliest
	}
	at = at.UTC()
	if whole := at.Truncate(time.Second); whole.Before(at) {
		return whole.Add(time.Second)
	}
	return at
}

const (
	namePrefix  = "archmax-"
	sessionHex  = 24
	maxParkPart = 64 - len(namePrefix) - sessionHex - 1
)

var plainParkID = regexp.MustCompile(`^[0-9A-Za-z_.-]{1,31}$`)

// Name is the deterministic schedule name of a park, valid for EventBridge (1–64 characters of
// [0-9A-Za-z_.-]): "archmax-" + the first 24 hex digits of sha256(sessionID) + "-" + the
// park part. The park part is parkID itself when it is 1–31 characters of [0-9A-Za-z_.-]
// (the usual URL-safe park id, readable in the console), else "h" + the first 30 hex digits
// of sha256(parkID), so distinct ids never share a name by sanitising.
func Name(sessionID, parkID string) string {
	sum := sha256.Sum256([]byte(sessionID))
	park := parkID
	if !plainParkID.MatchString(parkID) {
		psum := sha256.Sum256([]byte(parkID))
		park = "h" + hex.EncodeToString(psum[:])[:maxParkPart-1]
	}
	return namePrefix + hex.EncodeToString(sum[:])[:sessionHex] + "-" + park
}
