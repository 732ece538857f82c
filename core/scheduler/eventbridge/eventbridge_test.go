package eventbridge_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/scheduler/types"

	"github.com/archmax-ai/archmax/core/scheduler/eventbridge"
	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/local/schedulerfake"
)

var _ session.Scheduler = (*eventbridge.Scheduler)(nil)

var cfg = eventbridge.Config{
	Group:     "archmax-wakes",
	TargetARN: "arn:aws:lambda:us-east-1:000000000000:function:wake",
	RoleARN:   "arn:aws:iam::000000000000:role/scheduler-wake",
}

// newClient is a real *scheduler.Client talking to fake.
func newClient(t *testing.T, fake *schedulerfake.Fake) *scheduler.Client {
	t.Helper()
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	return scheduler.New(scheduler.Options{
		Region:           "us-east-1",
		BaseEndpoint:     aws.String(srv.URL),
		Credentials:      credentials.NewStaticCredentialsProvider("test", "test", ""),
		RetryMaxAttempts: 1,
	})
}

func newScheduler(t *testing.T) (*eventbridge.Scheduler, *schedulerfake.Fake, *scheduler.Client) {
	fake := schedulerfake.New()
	client := newClient(t, fake)
	return eventbridge.New(client, cfg), fake, client
}

func only(t *testing.T, fake *schedulerfake.Fake) schedulerfake.Schedule {
	t.Helper()
	all := fake.Schedules()
	if len(all) != 1 {
		t.Fatalf("fake holds %d schedules, want 1: %+v", len(all), all)
	}
	return all[0]
}

// Spec 02 §4.4: a park with a resumeAt gets a one-time schedule at(resumeAt) targeting
// functions/wake with {sessionId, parkId}, deleted after it fires.
func TestSchedule_CreatesOneTimeScheduleForThePark(t *testing.T) {
	s, fake, _ := newScheduler(t)
	at := time.Date(2031, 5, 6, 7, 8, 9, 0, time.FixedZone("CEST", 2*3600))
	if err := s.Schedule(context.Background(), "s~1~2", "pk_A1", at); err != nil {
		t.Fatal(err)
	}
	got := only(t, fake)
	want := schedulerfake.Schedule{
		Name:                  eventbridge.Name("s~1~2", "pk_A1"),
		Group:                 cfg.Group,
		Expression:            "at(2031-05-06T05:08:09)",
		Timezone:              "UTC",
		At:                    at.UTC(),
		FlexibleTimeWindow:    "OFF",
		ActionAfterCompletion: "DELETE",
		State:                 "ENABLED",
		Target:                schedulerfake.Target{Arn: cfg.TargetARN, RoleArn: cfg.RoleARN, Input: got.Target.Input},
		Created:               got.Created,
	}
	if got != want {
		t.Fatalf("schedule\n got %+v\nwant %+v", got, want)
	}
	var wake eventbridge.Wake
	if err := json.Unmarshal([]byte(got.Target.Input), &wake); err != nil {
		t.Fatalf("target input %q: %v", got.Target.Input, err)
	}
	if wake != (eventbridge.Wake{SessionID: "s~1~2", ParkID: "pk_A1"}) {
		t.Fatalf("wake input = %+v", wake)
	}
	if !strings.Contains(got.Target.Input, `"sessionId":"s~1~2"`) || !strings.Contains(got.Target.Input, `"parkId":"pk_A1"`) {
		t.Fatalf("target input %s lacks the sessionId/parkId keys", got.Target.Input)
	}
}

// A fractional resumeAt rounds up: EventBridge fires at or after the named second, never
// before resumeAt.
func TestSchedule_RoundsUpToTheSecond(t *testing.T) {
	for _, tc := range []struct {
		at   time.Time
		want string
	}{
		{time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC), "at(2031-01-02T03:04:05)"},
		{time.Date(2031, 1, 2, 3, 4, 5, 1, time.UTC), "at(2031-01-02T03:04:06)"},
		{time.Date(2031, 12, 31, 23, 59, 59, 999_000_000, time.UTC), "at(2032-01-01T00:00:00)"},
	} {
		s, fake, _ := newScheduler(t)
		if err := s.Schedule(context.Background(), "s", "p", tc.at); err != nil {
			t.Fatal(err)
		}
		if got := only(t, fake); got.Expression != tc.want || got.At.Before(tc.at) {
			t.Errorf("%v: expression %s (at %v), want %s", tc.at, got.Expression, got.At, tc.want)
		}
	}
}

// Schedule is idempotent per (sessionId, parkId): the second create meets a ConflictException
// and updates the schedule in place; the latest time wins.
func TestSchedule_TwiceIsOneScheduleLatestTimeWins(t *testing.T) {
	s, fake, _ := newScheduler(t)
	ctx := context.Background()
	first := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, at := range []time.Time{first, first, first.Add(time.Hour)} {
		if err := s.Schedule(ctx, "sess", "park", at); err != nil {
			t.Fatalf("Schedule(%v): %v", at, err)
		}
	}
	if got := only(t, fake); got.Expression != "at(2031-01-01T01:00:00)" {
		t.Fatalf("expression %s, want the latest time", got.Expression)
	}
}

// Distinct parks of one session, and one park id in two sessions, are distinct schedules.
func TestSchedule_DistinctParksAreDistinctSchedules(t *testing.T) {
	s, fake, _ := newScheduler(t)
	at := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, k := range [][2]string{{"a", "p1"}, {"a", "p2"}, {"b", "p1"}} {
		if err := s.Schedule(context.Background(), k[0], k[1], at); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(fake.Schedules()); n != 3 {
		t.Fatalf("%d schedules, want 3", n)
	}
}

// EventBridge refuses at() in the past: a past (or imminent) resumeAt is scheduled MinLead
// from now, so the wake still comes (the wake itself finds the park due).
func TestSchedule_PastResumeAtIsScheduledOneMinuteFromNow(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 250e6, time.UTC)
	for _, at := range []time.Time{
		time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC),
		now.Add(-time.Second),
		now.Add(10 * time.Second),
	} {
		fake := schedulerfake.New()
		c := cfg
		c.Now = func() time.Time { return now }
		s := eventbridge.New(newClient(t, fake), c)
		if err := s.Schedule(context.Background(), "s", "p", at); err != nil {
			t.Fatal(err)
		}
		// now + MinLead, rounded up to the whole second
		if got := only(t, fake); got.Expression != "at(2026-11-30T12:01:01)" {
			t.Errorf("resumeAt %v scheduled %s, want at(2026-11-30T12:01:01)", at, got.Expression)
		}
	}
}

func TestCancel(t *testing.T) {
	s, fake, _ := newScheduler(t)
	ctx := context.Background()
	at := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := s.Schedule(ctx, "sess", "keep", at); err != nil {
		t.Fatal(err)
	}
	if err := s.Schedule(ctx, "sess", "park", at); err != nil {
		t.Fatal(err)
	}
	if err := s.Cancel(ctx, "sess", "park"); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	if got := only(t, fake); got.Name != eventbridge.Name("sess", "keep") {
		t.Fatalf("Cancel removed the wrong schedule; left %s", got.Name)
	}
	// Unknown: never created, already cancelled, already fired (deleted after completion).
	for _, park := range []string{"never", "park"} {
		if err := s.Cancel(ctx, "sess", park); err != nil {
			t.Fatalf("Cancel of unknown %q: %v", park, err)
		}
	}
	if len(fake.Due(at)) != 1 {
		t.Fatal("keep did not fire")
	}
	if err := s.Cancel(ctx, "sess", "keep"); err != nil {
		t.Fatalf("Cancel after fire: %v", err)
	}
}

// A schedule that fired (and deleted itself) between the create and the update is created
// again, so the newer time is not lost.
func TestSchedule_RecreatesWhenFiredDuringUpsert(t *testing.T) {
	fake := schedulerfake.New()
	client := newClient(t, fake)
	at := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	racing := &racingAPI{Client: client, fake: fake, now: at}
	s := eventbridge.New(racing, cfg)
	if err := s.Schedule(context.Background(), "sess", "park", at); err != nil {
		t.Fatal(err)
	}
	if err := s.Schedule(context.Background(), "sess", "park", at.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if racing.fired != 1 {
		t.Fatalf("race injected %d times, want 1", racing.fired)
	}
	if got := only(t, fake); got.Expression != "at(2031-01-01T01:00:00)" {
		t.Fatalf("expression %s, want the new time", got.Expression)
	}
}

// racingAPI fires the due schedules just before an UpdateSchedule reaches the fake.
type racingAPI struct {
	*scheduler.Client
	fake  *schedulerfake.Fake
	now   time.Time
	fired int
}

func (r *racingAPI) UpdateSchedule(ctx context.Context, in *scheduler.UpdateScheduleInput, optFns ...func(*scheduler.Options)) (*scheduler.UpdateScheduleOutput, error) {
	r.fired += len(r.fake.Due(r.now))
	return r.Client.UpdateSchedule(ctx, in, optFns...)
}

// Errors other than Conflict/NotFound are returned wrapped, the SDK's typed error intact.
func TestErrorsAreWrapped(t *testing.T) {
	s := eventbridge.New(newClient(t, schedulerfake.New()), eventbridge.Config{Group: cfg.Group, TargetARN: cfg.TargetARN})
	err := s.Schedule(context.Background(), "sess", "park", time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC))
	var invalid *types.ValidationException
	if !errors.As(err, &invalid) {
		t.Fatalf("error %v, want a wrapped ValidationException (no RoleArn)", err)
	}
	if !strings.Contains(err.Error(), "create schedule "+eventbridge.Name("sess", "park")) {
		t.Fatalf("error %q lacks the context", err)
	}
}

var validName = regexp.MustCompile(`^[0-9A-Za-z_.-]{1,64}$`)

// Names are deterministic, valid for EventBridge whatever the ids, and distinct per park.
func TestName(t *testing.T) {
	long := strings.Repeat("x", 512)
	ids := [][2]string{
		{"s~1~2", "pk_A1"},
		{"s~1~2", "pk_A2"},
		{"s~1~3", "pk_A1"},
		{long, "p"},
		{long + "y", "p"},
		{"sess", long},
		{"sess", long + "y"},
		{"séance ✓", "park/ü"},
		{"", ""},
		{"sess", strings.Repeat("a", 31)},
		{"sess", strings.Repeat("a", 32)},
		{"sess", "a.b-c_d"},
		{"sess", "a b"},
		{"sess", "a_b"},
	}
	seen := map[string][2]string{}
	for _, k := range ids {
		name := eventbridge.Name(k[0], k[1])
		if !validName.MatchString(name) || !strings.HasPrefix(name, "archmax-") {
			t.Errorf("Name(%.20q, %.20q) = %q: not a valid schedule name", k[0], k[1], name)
		}
		if name != eventbridge.Name(k[0], k[1]) {
			t.Errorf("Name(%.20q, %.20q) is not deterministic", k[0], k[1])
		}
		if prev, dup := seen[name]; dup {
			t.Errorf("Name(%.20q, %.20q) = Name(%.20q, %.20q) = %s", k[0], k[1], prev[0], prev[1], name)
		}
		seen[name] = k
	}
	// A plain park id stays readable in the console.
	if name := eventbridge.Name("sess", "pk_A1"); !strings.HasSuffix(name, "-pk_A1") || len(name) != len("archmax-")+24+len("-pk_A1") {
		t.Errorf("Name(sess, pk_A1) = %s, want archmax-<24 hex>-pk_A1", name)
	}
}

// Odd and long ids round-trip through the real client and the fake's name validation.
func TestSchedule_OddIDsRoundTrip(t *testing.T) {
	s, fake, client := newScheduler(t)
	ctx := context.Background()
	at := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	sessionID, park := strings.Repeat("ß", 256), "park/ü ✓"
	if err := s.Schedule(ctx, sessionID, park, at); err != nil {
		t.Fatal(err)
	}
	got, err := client.GetSchedule(ctx, &scheduler.GetScheduleInput{Name: aws.String(eventbridge.Name(sessionID, park)), GroupName: aws.String(cfg.Group)})
	if err != nil {
		t.Fatalf("GetSchedule: %v", err)
	}
	var wake eventbridge.Wake
	if err := json.Unmarshal([]byte(aws.ToString(got.Target.Input)), &wake); err != nil || wake.SessionID != sessionID || wake.ParkID != park {
		t.Fatalf("wake input %q (%v), want the ids back", aws.ToString(got.Target.Input), err)
	}
	if err := s.Cancel(ctx, sessionID, park); err != nil {
		t.Fatal(err)
	}
	if n := len(fake.Schedules()); n != 0 {
		t.Fatalf("%d schedules left after Cancel", n)
	}
}

// End to end: the schedule fires once at its time, with the Wake input, then is gone
// (ActionAfterCompletion DELETE); without a Group it lives in the default group.
func TestSchedule_FiresOnceIntoTheWake(t *testing.T) {
	fake := schedulerfake.New()
	s := eventbridge.New(newClient(t, fake), eventbridge.Config{TargetARN: cfg.TargetARN, RoleARN: cfg.RoleARN})
	at := time.Date(2031, 1, 1, 0, 0, 0, 500_000_000, time.UTC)
	if err := s.Schedule(context.Background(), "sess", "park", at); err != nil {
		t.Fatal(err)
	}
	if early := fake.Due(at); len(early) != 0 {
		t.Fatalf("fired before resumeAt: %+v", early)
	}
	fired := fake.Due(at.Add(time.Second))
	if len(fired) != 1 || fired[0].Group != "default" || fired[0].Target.Arn != cfg.TargetARN {
		t.Fatalf("fired %+v, want one wake in the default group", fired)
	}
	var wake eventbridge.Wake
	if err := json.Unmarshal([]byte(fired[0].Target.Input), &wake); err != nil || wake != (eventbridge.Wake{SessionID: "sess", ParkID: "park"}) {
		t.Fatalf("wake input %q (%v)", fired[0].Target.Input, err)
	}
	if again := fake.Due(at.Add(time.Hour)); len(again) != 0 || len(fake.Schedules()) != 0 {
		t.Fatalf("fired again %+v / left %+v", again, fake.Schedules())
	}
	if err := s.Cancel(context.Background(), "sess", "park"); err != nil {
		t.Fatalf("Cancel after the fire: %v", err)
	}
}

// With a DeadLetterARN every schedule's target names that queue as its dead letter queue,
// on the create and on the update of an existing schedule, as the real client sends it and
// as Scheduler answers it back: a wake Scheduler cannot deliver lands there instead of
// vanishing. Without one the target names none.
func TestSchedule_TargetNamesTheDeadLetterQueue(t *testing.T) {
	const dlq = "arn:aws:sqs:us-east-1:000000000000:archmax-test-schedules-dlq"
	fake := schedulerfake.New()
	client := newClient(t, fake)
	withDLQ := cfg
	withDLQ.DeadLetterARN = dlq
	s := eventbridge.New(client, withDLQ)
	ctx := context.Background()
	at := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := s.Schedule(ctx, "sess", "park", at); err != nil {
		t.Fatal(err)
	}
	if got := only(t, fake).Target; got.DeadLetterArn != dlq || got.Arn != cfg.TargetARN || got.RoleArn != cfg.RoleARN {
		t.Fatalf("created target %+v, want the dead letter queue %s", got, dlq)
	}
	if err := s.Schedule(ctx, "sess", "park", at.Add(time.Hour)); err != nil { // the update path
		t.Fatal(err)
	}
	got := only(t, fake)
	if got.Expression != "at(2031-01-01T01:00:00)" || got.Target.DeadLetterArn != dlq {
		t.Fatalf("updated schedule %+v, want the later time and the dead letter queue %s", got, dlq)
	}
	out, err := client.GetSchedule(ctx, &scheduler.GetScheduleInput{Name: aws.String(got.Name), GroupName: aws.String(cfg.Group)})
	if err != nil {
		t.Fatal(err)
	}
	if out.Target == nil || out.Target.DeadLetterConfig == nil || aws.ToString(out.Target.DeadLetterConfig.Arn) != dlq {
		t.Fatalf("GetSchedule target %+v, want DeadLetterConfig.Arn %s", out.Target, dlq)
	}

	plain, fake2, _ := newScheduler(t)
	if err := plain.Schedule(ctx, "sess", "park", at); err != nil {
		t.Fatal(err)
	}
	if got := only(t, fake2).Target.DeadLetterArn; got != "" {
		t.Fatalf("no DeadLetterARN configured, target names %q", got)
	}
}
