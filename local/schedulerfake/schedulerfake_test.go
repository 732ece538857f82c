package schedulerfake_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/scheduler/types"

	"github.com/archmax-ai/archmax/local/schedulerfake"
)

func setup(t *testing.T) (*schedulerfake.Fake, *scheduler.Client) {
	t.Helper()
	fake := schedulerfake.New()
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	return fake, scheduler.New(scheduler.Options{
		Region:           "us-east-1",
		BaseEndpoint:     aws.String(srv.URL),
		Credentials:      credentials.NewStaticCredentialsProvider("test", "test", ""),
		RetryMaxAttempts: 1,
	})
}

func input(name, expr string, mutate ...func(*scheduler.CreateScheduleInput)) *scheduler.CreateScheduleInput {
	in := &scheduler.CreateScheduleInput{
		Name:                  aws.String(name),
		GroupName:             aws.String("g"),
		ScheduleExpression:    aws.String(expr),
		FlexibleTimeWindow:    &types.FlexibleTimeWindow{Mode: types.FlexibleTimeWindowModeOff},
		ActionAfterCompletion: types.ActionAfterCompletionDelete,
		Target:                &types.Target{Arn: aws.String("arn:target"), RoleArn: aws.String("arn:role"), Input: aws.String(`{"n":"` + name + `"}`)},
	}
	for _, m := range mutate {
		m(in)
	}
	return in
}

func TestCreateGetDelete(t *testing.T) {
	fake, c := setup(t)
	ctx := context.Background()
	out, err := c.CreateSchedule(ctx, input("a", "at(2031-01-02T03:04:05)"))
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(out.ScheduleArn) != "arn:aws:scheduler:us-east-1:000000000000:schedule/g/a" {
		t.Errorf("ScheduleArn = %s", aws.ToString(out.ScheduleArn))
	}
	got, err := c.GetSchedule(ctx, &scheduler.GetScheduleInput{Name: aws.String("a"), GroupName: aws.String("g")})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(got.ScheduleExpression) != "at(2031-01-02T03:04:05)" || got.ActionAfterCompletion != types.ActionAfterCompletionDelete ||
		got.State != types.ScheduleStateEnabled || aws.ToString(got.GroupName) != "g" || aws.ToString(got.Target.Input) != `{"n":"a"}` ||
		got.FlexibleTimeWindow.Mode != types.FlexibleTimeWindowModeOff || got.CreationDate == nil {
		t.Errorf("GetSchedule = %+v", got)
	}
	if _, err := c.GetSchedule(ctx, &scheduler.GetScheduleInput{Name: aws.String("a")}); !isNotFound(err) {
		t.Errorf("GetSchedule in the default group: %v, want ResourceNotFoundException", err)
	}
	if _, err := c.DeleteSchedule(ctx, &scheduler.DeleteScheduleInput{Name: aws.String("a"), GroupName: aws.String("g")}); err != nil {
		t.Fatal(err)
	}
	if n := len(fake.Schedules()); n != 0 {
		t.Fatalf("%d schedules after delete", n)
	}
}

func isNotFound(err error) bool {
	var nf *types.ResourceNotFoundException
	return errors.As(err, &nf)
}

// The errors reach the SDK as the typed exceptions, exactly as from EventBridge.
func TestErrors(t *testing.T) {
	_, c := setup(t)
	ctx := context.Background()
	if _, err := c.CreateSchedule(ctx, input("a", "at(2031-01-02T03:04:05)")); err != nil {
		t.Fatal(err)
	}
	var conflict *types.ConflictException
	if _, err := c.CreateSchedule(ctx, input("a", "at(2031-01-02T03:04:06)")); !errors.As(err, &conflict) || aws.ToString(conflict.Message) == "" {
		t.Errorf("second create: %v, want ConflictException with a message", err)
	}
	if _, err := c.DeleteSchedule(ctx, &scheduler.DeleteScheduleInput{Name: aws.String("b"), GroupName: aws.String("g")}); !isNotFound(err) {
		t.Errorf("delete missing: %v", err)
	}
	if _, err := c.GetSchedule(ctx, &scheduler.GetScheduleInput{Name: aws.String("b"), GroupName: aws.String("g")}); !isNotFound(err) {
		t.Errorf("get missing: %v", err)
	}
	up := &scheduler.UpdateScheduleInput{Name: aws.String("b"), GroupName: aws.String("g"), ScheduleExpression: aws.String("at(2031-01-02T03:04:05)"),
		FlexibleTimeWindow: &types.FlexibleTimeWindow{Mode: types.FlexibleTimeWindowModeOff}, Target: &types.Target{Arn: aws.String("t"), RoleArn: aws.String("r")}}
	if _, err := c.UpdateSchedule(ctx, up); !isNotFound(err) {
		t.Errorf("update missing: %v", err)
	}
	for name, in := range map[string]*scheduler.CreateScheduleInput{
		"bad name":       input("a~b", "at(2031-01-02T03:04:05)"),
		"65-char name":   input(strings.Repeat("a", 65), "at(2031-01-02T03:04:05)"),
		"rate":           input("c", "rate(5 minutes)"),
		"zoned at":       input("c", "at(2031-01-02T03:04:05Z)"),
		"no role":        input("c", "at(2031-01-02T03:04:05)", func(in *scheduler.CreateScheduleInput) { in.Target.RoleArn = aws.String("") }),
		"bad time zone":  input("c", "at(2031-01-02T03:04:05)", func(in *scheduler.CreateScheduleInput) { in.ScheduleExpressionTimezone = aws.String("Mars/Base") }),
		"invalid second": input("c", "at(2031-01-02T03:04:61)"),
		"dead letter not a queue": input("c", "at(2031-01-02T03:04:05)", func(in *scheduler.CreateScheduleInput) {
			in.Target.DeadLetterConfig = &types.DeadLetterConfig{Arn: aws.String("arn:aws:sns:us-east-1:000000000000:topic")}
		}),
	} {
		var invalid *types.ValidationException
		if _, err := c.CreateSchedule(ctx, in); !errors.As(err, &invalid) {
			t.Errorf("%s: %v, want ValidationException", name, err)
		}
	}
}

func TestUpdateReplaces(t *testing.T) {
	fake, c := setup(t)
	ctx := context.Background()
	if _, err := c.CreateSchedule(ctx, input("a", "at(2031-01-02T03:04:05)")); err != nil {
		t.Fatal(err)
	}
	up := &scheduler.UpdateScheduleInput{Name: aws.String("a"), GroupName: aws.String("g"), ScheduleExpression: aws.String("at(2031-01-02T04:00:00)"),
		FlexibleTimeWindow: &types.FlexibleTimeWindow{Mode: types.FlexibleTimeWindowModeOff}, Target: &types.Target{Arn: aws.String("t2"), RoleArn: aws.String("r2"), Input: aws.String("{}")}}
	if _, err := c.UpdateSchedule(ctx, up); err != nil {
		t.Fatal(err)
	}
	all := fake.Schedules()
	if len(all) != 1 || all[0].At != time.Date(2031, 1, 2, 4, 0, 0, 0, time.UTC) || all[0].Target != (schedulerfake.Target{Arn: "t2", RoleArn: "r2", Input: "{}"}) ||
		all[0].ActionAfterCompletion != "NONE" {
		t.Fatalf("after update: %+v", all)
	}
}

// Due fires each due schedule exactly once, in time order; DELETE schedules go, NONE ones
// stay completed; disabled and future ones do not fire.
func TestDue(t *testing.T) {
	fake, c := setup(t)
	ctx := context.Background()
	for _, in := range []*scheduler.CreateScheduleInput{
		input("late", "at(2031-01-01T00:00:02)"),
		input("early", "at(2031-01-01T00:00:01)"),
		input("future", "at(2031-01-01T00:00:03)"),
		input("keep", "at(2031-01-01T00:00:00)", func(in *scheduler.CreateScheduleInput) { in.ActionAfterCompletion = types.ActionAfterCompletionNone }),
		input("off", "at(2031-01-01T00:00:00)", func(in *scheduler.CreateScheduleInput) { in.State = types.ScheduleStateDisabled }),
		input("zoned", "at(2031-01-01T01:00:01)", func(in *scheduler.CreateScheduleInput) { in.ScheduleExpressionTimezone = aws.String("Etc/GMT-1") }),
	} {
		if _, err := c.CreateSchedule(ctx, in); err != nil {
			t.Fatalf("create %s: %v", *in.Name, err)
		}
	}
	now := time.Date(2031, 1, 1, 0, 0, 2, 0, time.UTC)
	fired := fake.Due(now)
	var names []string
	for _, f := range fired {
		names = append(names, f.Name)
	}
	if want := []string{"keep", "early", "zoned", "late"}; !slices.Equal(names, want) {
		t.Fatalf("Due fired %v, want %v", names, want)
	}
	if fired[1].Target.Input != `{"n":"early"}` || fired[1].Group != "g" || fired[1].At != time.Date(2031, 1, 1, 0, 0, 1, 0, time.UTC) {
		t.Errorf("fired %+v", fired[1])
	}
	if again := fake.Due(now); len(again) != 0 {
		t.Fatalf("Due fired again: %+v", again)
	}
	var left []string
	for _, s := range fake.Schedules() {
		left = append(left, s.Name)
	}
	if want := []string{"future", "keep", "off"}; !slices.Equal(left, want) {
		t.Fatalf("left %v, want %v", left, want)
	}
}
