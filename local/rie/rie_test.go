//go:build linux

package rie

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/archmax-ai/archmax/core/model/scripted"
	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/functions/handlers/assembly"
	"github.com/archmax-ai/archmax/functions/handlers/continuation"
	"github.com/archmax-ai/archmax/functions/handlers/starts"
	"github.com/archmax-ai/archmax/functions/handlers/wakes"
	"github.com/archmax-ai/archmax/local/conversefake"
	"github.com/archmax-ai/archmax/local/dynamotest"
	"github.com/archmax-ai/archmax/local/lambdafake"
	"github.com/archmax-ai/archmax/local/s3test"
	"github.com/archmax-ai/archmax/local/schedulerfake"
)

const (
	root      = "../.."
	eventsDir = root + "/fixtures/events"
	workspace = root + "/fixtures/access-desk"
	// badge-renewal, the workflow turn-signature.json targets (functions/turn's e2e test uses it too)
	turnSpecs = root + "/functions/turn/testdata/specs"

	bucket        = "archmax-rie"
	modelID       = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
	schedulerRole = "arn:aws:iam::123456789012:role/archmax-scheduler"
	// the turn function's EventBridge route for start-eventbridge.json
	eventRoutes = `[{"source":"hr.portal","detailType":"Access Requested","workflow":"access-request","trigger":"manual"}]`
)

// The fixture events name session demo-1 and park p3kq9x2m7v1c8d5f0a4b6e2h9j; the test puts
// the ids of the sessions it made in their place.
const (
	fixtureSession = "demo-1"
	fixturePark    = "p3kq9x2m7v1c8d5f0a4b6e2h9j"
	fixtureTurn    = "tq3kz7m2x4c6v8b1n"
)

// builds holds the bootstraps, built once per test binary.
var builds struct {
	once  sync.Once
	dir   string
	paths map[string]string
	took  time.Duration
	err   error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if builds.dir != "" {
		os.RemoveAll(builds.dir)
	}
	os.Exit(code)
}

// bootstraps builds linux/<host arch> bootstraps of every function (the emulator runs the
// host's architecture only) with the flags of `make build`, once per test binary.
func bootstraps(t testing.TB) map[string]string {
	t.Helper()
	builds.once.Do(func() {
		if builds.dir, builds.err = os.MkdirTemp("", "archmax-bootstraps-"); builds.err != nil {
			return
		}
		abs, err := filepath.Abs(root)
		if err != nil {
			builds.err = err
			return
		}
		start := time.Now()
		builds.paths, builds.err = Build(context.Background(), abs, builds.dir, runtime.GOARCH, Functions...)
		builds.took = time.Since(start)
	})
	if builds.err != nil {
		t.Fatal(builds.err)
	}
	return builds.paths
}

// emulator installs (or finds) the pinned aws-lambda-rie. The test skips only when the Go
// module proxy cannot be reached, and says so.
func emulator(t testing.TB) string {
	t.Helper()
	dir, err := CacheDir()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	p, err := Install(ctx, dir)
	if IsUnreachable(err) {
		t.Skipf("SKIPPED: cannot install aws-lambda-rie %s because the Go module proxy is unreachable "+
			"(set %s to an installed aws-lambda-rie to run this test offline): %v", Version, EnvBinary, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// stack is the five functions, each a bootstrap under its own emulator, over the local test
// engines: DynamoDB Local, gofakes3 holding the fixture workspace under specs/, the Converse
// fake serving testdata/emulator.model.yaml, the EventBridge Scheduler fake, and the Lambda
// Invoke fake, which runs each continuation (a function invoking itself asynchronously) in a
// fresh emulator of that function, as Lambda runs it in another execution environment.
type stack struct {
	rie    string
	boots  map[string]string
	base   []string
	emus   map[string]*Emulator
	script *scripted.Script
	sched  *schedulerfake.Fake
	lambda *lambdafake.Fake

	mu   sync.Mutex
	more map[string][]*Emulator // the continuations' emulators, by function
}

func newStack(t *testing.T) *stack {
	t.Helper()
	_, table := dynamotest.NewTable(t) // skips without DynamoDB Local: `make test` starts it
	s := &stack{rie: emulator(t), boots: bootstraps(t), emus: map[string]*Emulator{}, more: map[string][]*Emulator{}}
	t.Logf("bootstraps (linux/%s, %s) built in %s", runtime.GOARCH, strings.Join(BuildFlags, " "), builds.took.Round(time.Millisecond))
	ctx := t.Context()

	s3c, s3URL := s3test.NewBucket(t, bucket)
	// the authored tree as the functions read it: <ARCHMAX_SPEC_PREFIX>workflows/<slug>/…, skills/…, AGENTS.md
	s3test.Upload(t, s3c, bucket, workspace, assembly.DefaultSpecPrefix)
	s3test.Upload(t, s3c, bucket, turnSpecs, assembly.DefaultSpecPrefix)

	file := filepath.Join("testdata", "emulator.model.yaml")
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if s.script, err = scripted.Parse(file, src); err != nil {
		t.Fatal(err)
	}
	model := httptest.NewServer(conversefake.New(s.script))
	t.Cleanup(model.Close)
	s.sched = schedulerfake.New()
	sched := httptest.NewServer(s.sched)
	t.Cleanup(sched.Close)
	// one retry, soon: a continuation invoked while its caller still holds the lease is
	// retried as Lambda retries it (after minutes there)
	s.lambda = lambdafake.New(lambdafake.WithTimeout(time.Minute), lambdafake.WithRetryDelays(time.Second))
	invoke := httptest.NewServer(s.lambda)

	s.base = []string{
		assembly.EnvTable + "=" + table,
		assembly.EnvBucket + "=" + bucket,
		assembly.EnvModel + "=" + modelID,
		assembly.EnvDynamoDBEndpoint + "=" + os.Getenv(dynamotest.EndpointEnv),
		assembly.EnvS3Endpoint + "=" + s3URL,
		assembly.EnvBedrockEndpoint + "=" + model.URL,
		assembly.EnvSchedulerEndpoint + "=" + sched.URL,
		assembly.EnvSchedulerGroup + "=archmax",
		assembly.EnvWakeTargetARN + "=" + lambdafake.FunctionARN("archmax-wake"),
		assembly.EnvSchedulerRoleARN + "=" + schedulerRole,
		assembly.EnvLambdaEndpoint + "=" + invoke.URL,
		assembly.EnvModelTimeout + "=10s",
		assembly.EnvContinueMargin + "=5s",
		// decide-decision.json is signed by the approver role; every other request by the client's
		// (the test reads summaries as the operator role, an admin: event-started sessions are nobody's)
		assembly.EnvIAMDeciders + "=arn:aws:iam::123456789012:role/archmax-approver",
		assembly.EnvIAMAdmins + "=arn:aws:iam::123456789012:role/archmax-operator",
		"AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local", "AWS_REGION=us-east-1",
		"AWS_LAMBDA_FUNCTION_TIMEOUT=60", // the emulator's invocation deadline, in seconds
	}
	for _, fn := range Functions {
		s.lambda.Register("archmax-"+fn, s.continuation(fn))
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, fn := range Functions {
		wg.Go(func() {
			e, err := Start(ctx, s.rie, s.boots[fn], s.env(fn))
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("start the %s emulator: %v", fn, err)
				return
			}
			s.emus[fn] = e
		})
	}
	wg.Wait()
	t.Cleanup(func() {
		s.lambda.Close() // first: waits for the continuations still running
		invoke.Close()
		for _, fn := range Functions {
			e := s.emus[fn]
			if e == nil {
				continue
			}
			e.Stop()
			if t.Failed() {
				t.Logf("--- the %s emulator's output:\n%s", fn, e.Output())
			}
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, fn := range Functions {
			for i, e := range s.more[fn] {
				if t.Failed() {
					t.Logf("--- the output of %s continuation emulator %d:\n%s", fn, i+1, e.Output())
				}
			}
		}
	})
	if t.Failed() {
		t.FailNow()
	}
	return s
}

// env is function fn's configuration, as its Lambda would have it.
func (s *stack) env(fn string) []string {
	env := append(slices.Clone(s.base), "AWS_LAMBDA_FUNCTION_NAME=archmax-"+fn)
	if fn == "turn" {
		env = append(env, starts.EnvEventRoutes+"="+eventRoutes)
	}
	return env
}

// continuation runs one asynchronous invocation of fn in a fresh emulator.
func (s *stack) continuation(fn string) lambdafake.Handler {
	return func(ctx context.Context, payload []byte) ([]byte, error) {
		e, err := Start(ctx, s.rie, s.boots[fn], s.env(fn))
		if err != nil {
			return nil, err
		}
		defer e.Stop()
		s.mu.Lock()
		s.more[fn] = append(s.more[fn], e)
		s.mu.Unlock()
		status, body, err := e.Invoke(ctx, payload)
		if err != nil {
			return nil, err
		}
		if err := functionError(status, body); err != nil {
			return nil, err
		}
		return body, nil
	}
}

// functionError is the emulator's answer as an error when the invocation failed.
func functionError(status int, body []byte) error {
	if status != http.StatusOK {
		return fmt.Errorf("the emulator answered %d: %s", status, body)
	}
	var fe struct {
		Message string `json:"errorMessage"`
		Type    string `json:"errorType"`
	}
	if json.Unmarshal(body, &fe) == nil && fe.Type != "" {
		return fmt.Errorf("the function failed: %s: %s", fe.Type, fe.Message)
	}
	return nil
}

// invoke sends event to function fn's emulator and returns the function's response.
func (s *stack) invoke(t *testing.T, fn string, event []byte) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	status, body, err := s.emus[fn].Invoke(ctx, event)
	if err == nil {
		err = functionError(status, body)
	}
	if err != nil {
		t.Fatalf("invoke %s: %v", fn, err)
	}
	return body
}

// answer is an API Gateway response: the status, the headers and the JSON body.
type answer struct {
	status  int
	headers map[string]string
	body    []byte
}

// code is an error answer's error.code.
func (a answer) code() string {
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(a.body, &e)
	return e.Error.Code
}

// http invokes fn with an API Gateway HTTP API event and decodes the API Gateway response.
func (s *stack) http(t *testing.T, fn string, event []byte) answer {
	t.Helper()
	out := s.invoke(t, fn, event)
	var resp events.APIGatewayV2HTTPResponse
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&resp); err != nil || resp.StatusCode == 0 {
		t.Fatalf("%s answered an API Gateway request with %s (%v)", fn, out, err)
	}
	if !json.Valid([]byte(resp.Body)) || resp.Headers["Content-Type"] != "application/json" {
		t.Fatalf("%s answered %d with a body that is not JSON: %v %q", fn, resp.StatusCode, resp.Headers, resp.Body)
	}
	return answer{status: resp.StatusCode, headers: resp.Headers, body: []byte(resp.Body)}
}

// accepted decodes a 202: the turn goes on in a continuation (DESIGN.md §1, §4).
func accepted(t *testing.T, what string, a answer) session.OutcomeSummary {
	t.Helper()
	var sum session.OutcomeSummary
	if err := json.Unmarshal(a.body, &sum); err != nil || a.status != http.StatusAccepted || sum.Kind != session.KindRunning ||
		sum.SessionID == "" || sum.TurnID == "" || a.headers["Location"] != "/v1/sessions/"+sum.SessionID {
		t.Fatalf("%s: %d %v %s, want 202 running with the session, its turn and a Location", what, a.status, a.headers, a.body)
	}
	return sum
}

// settle waits until every continuation has ended.
func (s *stack) settle(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	if err := s.lambda.Wait(ctx); err != nil {
		t.Fatalf("continuations still running: %v", err)
	}
}

// summary reads session id through the sessions function with sessions-get.json.
func (s *stack) summary(t *testing.T, id string) session.SessionSummary {
	t.Helper()
	a := s.http(t, "sessions", fixture(t, "sessions-get.json", fixtureSession, id, "assumed-role/archmax-client/", "assumed-role/archmax-operator/"))
	var sum session.SessionSummary
	if err := json.Unmarshal(a.body, &sum); err != nil || a.status != http.StatusOK || sum.SessionID != id {
		t.Fatalf("sessions-get.json for %s: %d %s", id, a.status, a.body)
	}
	return sum
}

// schedules are the Scheduler fake's schedules whose target input names session id.
func (s *stack) schedules(id string) []schedulerfake.Schedule {
	var out []schedulerfake.Schedule
	for _, sc := range s.sched.Schedules() {
		var in struct{ SessionID string }
		if json.Unmarshal([]byte(sc.Target.Input), &in) == nil && in.SessionID == id {
			out = append(out, sc)
		}
	}
	return out
}

// fixture reads an event of fixtures/events with each old string replaced by its new one
// (pairs, as strings.NewReplacer takes them).
func fixture(t *testing.T, name string, oldnew ...string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(eventsDir, name))
	if err != nil {
		t.Fatal(err)
	}
	if len(oldnew) > 0 {
		raw = []byte(strings.NewReplacer(oldnew...).Replace(string(raw)))
	}
	if !json.Valid(raw) {
		t.Fatalf("%s is not JSON", name)
	}
	return raw
}

func decode[T any](t *testing.T, what string, raw []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %s: %v", what, raw, err)
	}
	return v
}

// The issue's acceptance: the five bootstraps, built as `make build` builds them, run under
// the Lambda Runtime Interface Emulator and answer every event of fixtures/events over the
// emulator's invoke API, against DynamoDB Local, S3 (gofakes3), Bedrock (the Converse fake),
// EventBridge Scheduler (its fake) and Lambda itself (the Invoke fake, for the functions'
// continuations). Sessions are made first (through the turn function) so that the events
// that read or resume one find it; the fixture's session and park ids are replaced by theirs.
func TestLambdasUnderEmulator(t *testing.T) {
	began := time.Now()
	s := newStack(t)
	ready := time.Now()
	continued := map[string]string{} // turn id → the function that must have continued it

	// turn-start.json: 202 at once — the opening is committed and the turn goes on in an
	// asynchronous self-invocation of the turn function; it settles in clarify.
	start := accepted(t, "turn-start.json", s.http(t, "turn", fixture(t, "turn-start.json")))
	idPrint := start.SessionID
	if !strings.HasPrefix(idPrint, "session-") {
		t.Errorf("turn-start.json minted %q, want session-…", idPrint)
	}
	continued[start.TurnID] = "turn"
	s.settle(t)
	if sum := s.summary(t, idPrint); sum.Status != session.StatusCompleted || sum.LastTurn == nil || sum.LastTurn.TurnID != start.TurnID ||
		sum.LastTurn.State != "clarify" || sum.LastTurn.Reply != "Happy to help — which area do you need access to?" || sum.Turn != 1 {
		t.Fatalf("after turn-start.json: %+v %+v", sum, sum.LastTurn)
	}

	// turn-continue.json on that session: the print room, finance: approved, and the agent
	// waits an hour for the badge printer — a timed park with its one-time schedule.
	cont := accepted(t, "turn-continue.json", s.http(t, "turn", fixture(t, "turn-continue.json", fixtureSession, idPrint)))
	if cont.SessionID != idPrint || cont.TurnID == start.TurnID {
		t.Fatalf("turn-continue.json answered %+v for session %s", cont, idPrint)
	}
	continued[cont.TurnID] = "turn"
	s.settle(t)

	// sessions-get.json: the summary of the parked session.
	sum := s.summary(t, idPrint)
	if sum.Workflow != "access-request" || sum.Status != session.StatusAwaitingInput || sum.State != "approve" || sum.Turn != 2 ||
		sum.Pending == nil || sum.Pending.Input == nil || sum.Pending.ParkID == "" || sum.ResumeAt != sum.Pending.Input.ResumeAt ||
		sum.WaitReason != "the badge printer's confirmation" || sum.Variables["team"].Value != "finance" || sum.Variables["area"].Value != "print-room" ||
		sum.LastTurn == nil || sum.LastTurn.TurnID != cont.TurnID || sum.LastTurn.Kind != session.KindParked ||
		sum.LastTurn.Reply != "Approved — I'll tell you as soon as your Print Room badge is printed." {
		t.Fatalf("sessions-get.json of the parked session: %+v", sum)
	}
	park1 := sum.Pending.ParkID
	// an hour after the park (until: 1h; the two instants are read a moment apart, in either
	// order, and kept to the millisecond) — measured from the park, not from how long the test has taken
	at, err := time.Parse(time.RFC3339, sum.ResumeAt)
	parked, perr := time.Parse(time.RFC3339, sum.Pending.Input.ParkedAt)
	if d := at.Sub(parked); err != nil || perr != nil || d < time.Hour-time.Second || d > time.Hour+time.Second {
		t.Errorf("resumeAt %q, parked at %q: want an hour after the park (%v, %v)", sum.ResumeAt, sum.Pending.Input.ParkedAt, err, perr)
	}
	// the wake's schedule: the Scheduler will invoke the wake function with wake-schedule.json's shape
	wakeEvent := fixture(t, "wake-schedule.json", fixtureSession, idPrint, fixturePark, park1)
	if sc := s.schedules(idPrint); len(sc) != 1 || sc[0].Target.Arn != lambdafake.FunctionARN("archmax-wake") || sc[0].Target.RoleArn != schedulerRole ||
		!sameJSON(sc[0].Target.Input, string(wakeEvent)) {
		t.Errorf("schedules of %s = %+v, want one invoking archmax-wake with %s", idPrint, sc, wakeEvent)
	}

	// sessions-messages.json: the transcript's first page.
	msgs := s.http(t, "sessions", fixture(t, "sessions-messages.json", fixtureSession, idPrint))
	page := decode[struct {
		Messages []struct{ Role, Text string }
		Next     int64
	}](t, "sessions-messages.json", msgs.body)
	if msgs.status != http.StatusOK || len(page.Messages) == 0 || int64(len(page.Messages)) != sum.MessageCount || page.Next != sum.MessageCount ||
		page.Messages[0].Role != "user" || page.Messages[0].Text != "Hi, I need a new badge please." {
		t.Errorf("sessions-messages.json: %d %s (messageCount %d)", msgs.status, msgs.body, sum.MessageCount)
	}

	// sessions-artifact.json: the parked session's trajectory.json, rendered from the stores by
	// the sessions function, as hostile content (base64, nosniff, a sandbox CSP).
	var art events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(s.invoke(t, "sessions", fixture(t, "sessions-artifact.json", fixtureSession, idPrint)), &art); err != nil {
		t.Fatalf("sessions-artifact.json: %v", err)
	}
	traj, derr := base64.StdEncoding.DecodeString(art.Body)
	var tr struct {
		SessionID string `json:"sessionId"`
		Prompt    string `json:"prompt"`
	}
	if art.StatusCode != http.StatusOK || !art.IsBase64Encoded || derr != nil || json.Unmarshal(traj, &tr) != nil || tr.SessionID != idPrint ||
		tr.Prompt != "Hi, I need a new badge please." || art.Headers["X-Content-Type-Options"] != "nosniff" || art.Headers["Content-Security-Policy"] != "sandbox" {
		t.Errorf("sessions-artifact.json: %d %v %s", art.StatusCode, art.Headers, traj)
	}

	// turn-signature.json: a start whose variables break the trigger's signature — 422 with
	// the issues, before anything is written.
	sig := s.http(t, "turn", fixture(t, "turn-signature.json"))
	issues := decode[struct {
		Error struct {
			Details struct{ Issues []struct{ Name, Kind string } }
		}
	}](t, "turn-signature.json", sig.body).Error.Details.Issues
	var names []string
	for _, is := range issues {
		names = append(names, is.Name+":"+is.Kind)
	}
	if sig.status != http.StatusUnprocessableEntity || sig.code() != "SignatureIssuesError" || strings.Join(names, " ") != "badge_id:invalid expires_on:missing" {
		t.Errorf("turn-signature.json: %d %s", sig.status, sig.body)
	}

	// turn-bad-json.json: 400 InvalidRequestError.
	if bad := s.http(t, "turn", fixture(t, "turn-bad-json.json")); bad.status != http.StatusBadRequest || bad.code() != "InvalidRequestError" {
		t.Errorf("turn-bad-json.json: %d %s", bad.status, bad.body)
	}

	// start-eventbridge.json: ARCHMAX_EVENT_ROUTES maps hr.portal to access-request; Dana's
	// East Lab request is approved and waits a second for the printer.
	ev := decode[starts.Result](t, "start-eventbridge.json", s.invoke(t, "turn", fixture(t, "start-eventbridge.json")))
	idLab := ev.SessionID
	if !strings.HasPrefix(idLab, "session-") || idLab == idPrint || ev.Outcome != session.KindParked || ev.State != "approve" || ev.Duplicate {
		t.Fatalf("start-eventbridge.json: %+v", ev)
	}
	// the event's source owns it: the client's role does not see it, the operator (an admin) does
	if a := s.http(t, "sessions", fixture(t, "sessions-get.json", fixtureSession, idLab)); a.status != http.StatusNotFound || a.code() != "SessionNotFoundError" {
		t.Errorf("the client reads an event-started session: %d %s", a.status, a.body)
	}
	if sum := s.summary(t, idLab); sum.Owner == nil || sum.Owner.Kind != "event" || sum.Owner.ID != "hr.portal" {
		t.Errorf("the event-started session's owner: %+v", sum.Owner)
	}

	// A session parked at a human state for decide-decision.json: Sam's Server Room badge
	// through the badge-approval workflow (a start on the turn function).
	var req events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(fixture(t, "turn-start.json", "/access-request/", "/badge-approval/", `"access-request"`, `"badge-approval"`), &req); err != nil {
		t.Fatal(err)
	}
	req.Body = `{"message": "Please get Sam a Server Room badge.", "variables": {"person": "Sam", "area": "server-room", "reason": "Replace a failed disk."}}`
	req.Headers["content-length"] = fmt.Sprint(len(req.Body))
	raw, _ := json.Marshal(req)
	approval := accepted(t, "badge-approval start", s.http(t, "turn", raw))
	idSam := approval.SessionID
	continued[approval.TurnID] = "turn"
	s.settle(t)
	if sum := s.summary(t, idSam); sum.Status != session.StatusAwaitingDecision || sum.State != "owner-sign-off" || sum.Pending == nil ||
		sum.Pending.Decision == nil || !slices.ContainsFunc(sum.Pending.Decision.Transitions, func(tr session.DecisionTransition) bool { return tr.To == "badge-granted" }) {
		t.Fatalf("badge-approval start: %+v", sum)
	}

	// wake-schedule.json, as the Scheduler would fire it early (or twice): the park is not
	// due, so the wake changes nothing and says why.
	wake := decode[wakes.Result](t, "wake-schedule.json", s.invoke(t, "wake", wakeEvent))
	if wake.Action != "wake" || wake.SessionID != idPrint || wake.ParkID != park1 || wake.Outcome != "" ||
		!strings.HasPrefix(wake.Skipped, "the park is not due until "+sum.ResumeAt) {
		t.Errorf("wake-schedule.json: %+v", wake)
	}

	// deliver-delivery.json: badge-printed with badge_id resumes the wait in place (202, the
	// resume committed); the agent waits again, for the pickup.
	del := accepted(t, "deliver-delivery.json", s.http(t, "deliver", fixture(t, "deliver-delivery.json", fixtureSession, idPrint)))
	if del.SessionID != idPrint || del.Disposition != session.DispositionDeliver {
		t.Errorf("deliver-delivery.json: %+v", del)
	}
	continued[del.TurnID] = "deliver"
	s.settle(t)
	sum = s.summary(t, idPrint)
	if sum.Status != session.StatusAwaitingInput || sum.Pending == nil || sum.Pending.ParkID == park1 || sum.Turn != 3 ||
		sum.Variables["badge_id"].Value != "B-4471" || !sum.Variables["badge_id"].Locked ||
		sum.LastTurn == nil || sum.LastTurn.Disposition != session.DispositionDeliver || sum.LastTurn.Reply != "Your badge B-4471 is printed — pick it up at the front desk." {
		t.Fatalf("after deliver-delivery.json: %+v %+v", sum, sum.LastTurn)
	}
	park2 := sum.Pending.ParkID
	if sc := s.schedules(idPrint); len(sc) != 1 || !strings.Contains(sc[0].Target.Input, park2) {
		t.Errorf("schedules of %s after the delivery = %+v, want only park %s's", idPrint, sc, park2)
	}

	// deliver-eventbridge.json: the pickup event (detail-type badge-printed) ends the wait;
	// EventBridge deliveries run to their end in the invocation.
	devt := decode[starts.Result](t, "deliver-eventbridge.json", s.invoke(t, "deliver", fixture(t, "deliver-eventbridge.json", fixtureSession, idPrint)))
	if devt.SessionID != idPrint || devt.Outcome != session.KindCompleted || devt.State != "approve" || devt.Duplicate {
		t.Errorf("deliver-eventbridge.json: %+v", devt)
	}
	sum = s.summary(t, idPrint)
	if sum.Status != session.StatusCompleted || sum.Turn != 4 || sum.LastTurn == nil ||
		sum.LastTurn.Reply != "Thanks — badge B-4471 is yours; it opens the Print Room within the hour." {
		t.Errorf("after deliver-eventbridge.json: %+v", sum)
	}
	if sc := s.schedules(idPrint); len(sc) != 0 {
		t.Errorf("the delivered park's schedule is left: %+v", sc)
	}

	// continuation.json: a continuation of a turn that is no longer the session's is a skip.
	c := decode[continuation.Result](t, "continuation.json", s.invoke(t, "turn", fixture(t, "continuation.json", fixtureSession, idPrint)))
	if c.Action != "continue" || c.SessionID != idPrint || c.TurnID != fixtureTurn || c.Outcome != "" ||
		!strings.HasPrefix(c.Skipped, "turn '"+fixtureTurn+"' is no longer the session's current turn") {
		t.Errorf("continuation.json: %+v", c)
	}
	if after := s.summary(t, idPrint); after.MessageCount != sum.MessageCount || after.UpdatedAt != sum.UpdatedAt {
		t.Errorf("a skipped continuation changed the session: %+v", after)
	}

	// decide-decision.json: the area owner grants Sam's badge (202; the decision committed).
	dec := accepted(t, "decide-decision.json", s.http(t, "decide", fixture(t, "decide-decision.json", fixtureSession, idSam)))
	if dec.SessionID != idSam || dec.Disposition != session.DispositionDecide {
		t.Errorf("decide-decision.json: %+v", dec)
	}
	continued[dec.TurnID] = "decide"
	s.settle(t)
	if sum := s.summary(t, idSam); sum.Status != session.StatusCompleted || sum.WorkflowState != "badge-granted" || sum.Variables["approved"].Value != true ||
		sum.LastTurn == nil || sum.LastTurn.Disposition != session.DispositionDecide || sum.LastTurn.Reply != "The Server Room's owner approved Sam's badge." {
		t.Errorf("after decide-decision.json: %+v %+v", sum, sum.LastTurn)
	}

	// wake-sweep.json: once the East Lab wait is overdue the sweep wakes it; the woken turn
	// goes on in a continuation of the wake function.
	sum2 := s.summary(t, idLab)
	due, err := time.Parse(time.RFC3339, sum2.ResumeAt)
	if err != nil || sum2.Status != session.StatusAwaitingInput {
		t.Fatalf("the East Lab session before the sweep: %+v (%v)", sum2, err)
	}
	time.Sleep(time.Until(due.Add(50 * time.Millisecond)))
	sweep := decode[wakes.Result](t, "wake-sweep.json", s.invoke(t, "wake", fixture(t, "wake-sweep.json")))
	if sweep.Action != "sweep" || sweep.Sweep == nil || sweep.Sweep.Due != 1 || sweep.Sweep.Woken != 1 || sweep.Sweep.Failed != 0 {
		t.Errorf("wake-sweep.json: %+v %+v", sweep, sweep.Sweep)
	}
	s.settle(t)
	if sum := s.summary(t, idLab); sum.Status != session.StatusCompleted || sum.Turn != 2 || sum.LastTurn == nil ||
		sum.LastTurn.Reply != "Your East Lab badge is ready, Dana." {
		t.Errorf("the East Lab session after the sweep: %+v %+v", sum, sum.LastTurn)
	}

	// Every continuation ran in a fresh emulator of the function that answered 202 and
	// succeeded (at its last attempt); the woken session's went to the wake function.
	last := map[string]lambdafake.Invocation{}
	for _, inv := range s.lambda.Invocations() {
		last[inv.RequestID] = inv
	}
	ran := map[string]string{}
	for _, inv := range last {
		ref, ok, err := continuation.Parse(inv.Payload)
		if !ok || err != nil || inv.Type != lambdafake.Event || inv.Error != "" {
			t.Errorf("invocation of %s: %+v (%s)", inv.Function, inv, inv.Payload)
			continue
		}
		if ref.SessionID == idLab && inv.Function == "archmax-wake" {
			ran["sweep"] = "wake"
		}
		ran[ref.TurnID] = strings.TrimPrefix(inv.Function, "archmax-")
	}
	for turn, fn := range continued {
		if ran[turn] != fn {
			t.Errorf("turn %s was not continued by %s (continuations: %v)", turn, fn, ran)
		}
	}
	if ran["sweep"] != "wake" {
		t.Errorf("the woken session was not continued by the wake function (continuations: %v)", ran)
	}
	if unused := s.script.Unused(); len(unused) > 0 {
		t.Errorf("scripted model entries no call used:\n%s", strings.Join(unused, "\n"))
	}

	// The init phase of each bootstrap, process start → its first request for an invocation.
	s.mu.Lock()
	n := 0
	for _, es := range s.more {
		n += len(es)
	}
	s.mu.Unlock()
	var lines []string
	for _, fn := range Functions {
		fi, err := os.Stat(s.boots[fn])
		if err != nil {
			t.Fatal(err)
		}
		d, err := MeasureInit(t.Context(), s.boots[fn], s.env(fn))
		if err != nil {
			t.Errorf("init of %s: %v", fn, err)
			continue
		}
		lines = append(lines, fmt.Sprintf("%-9s %5.1f MB  init %5.1f ms", fn, float64(fi.Size())/1e6, float64(d.Microseconds())/1000))
	}
	t.Logf("linux/%s bootstraps:\n%s", runtime.GOARCH, strings.Join(lines, "\n"))
	t.Logf("%d emulators (5 + %d for continuations); the stack was up in %s, the events took %s",
		5+n, n, ready.Sub(began).Round(time.Millisecond), time.Since(ready).Round(time.Millisecond))
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}

// BenchmarkInit reports each bootstrap's init phase (process start until it asks the
// Runtime API for its first invocation) with a local configuration; no engine is needed,
// as the functions make no call at init.
//
//	go test -run '^$' -bench Init -benchtime 20x ./local/rie/
func BenchmarkInit(b *testing.B) {
	boots := bootstraps(b)
	env := []string{
		assembly.EnvTable + "=archmax", assembly.EnvBucket + "=archmax", assembly.EnvModel + "=" + modelID,
		assembly.EnvDynamoDBEndpoint + "=http://127.0.0.1:1", assembly.EnvS3Endpoint + "=http://127.0.0.1:1",
		assembly.EnvBedrockEndpoint + "=http://127.0.0.1:1", assembly.EnvLambdaEndpoint + "=http://127.0.0.1:1",
		"AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local", "AWS_REGION=us-east-1",
	}
	for _, fn := range Functions {
		b.Run(fn, func(b *testing.B) {
			fi, err := os.Stat(boots[fn])
			if err != nil {
				b.Fatal(err)
			}
			var total time.Duration
			for range b.N {
				d, err := MeasureInit(context.Background(), boots[fn], append(slices.Clone(env), "AWS_LAMBDA_FUNCTION_NAME=archmax-"+fn))
				if err != nil {
					b.Fatal(err)
				}
				total += d
			}
			b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "init-ms")
			b.ReportMetric(float64(fi.Size())/1e6, "MB")
		})
	}
}
