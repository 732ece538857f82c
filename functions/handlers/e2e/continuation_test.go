package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/transcript"
	"github.com/archmax-ai/archmax/functions/handlers/assembly"
	"github.com/archmax-ai/archmax/functions/handlers/continuation"
	"github.com/archmax-ai/archmax/functions/handlers/httpapi"
	"github.com/archmax-ai/archmax/functions/handlers/starts"
	"github.com/archmax-ai/archmax/local/lambdafake"
)

const turnFunction = "archmax-turn"

// DESIGN.md §4 on the real protocols: the turn function answers a start 202 once the
// opening is committed, then continues the turn by invoking itself asynchronously through
// the Lambda API (local/lambdafake); the turn completes across three invocations with every
// step committed to DynamoDB exactly once. A duplicated continuation event is a no-op.
//
// In virtual time, on the production budget: each invocation has Lambda's 15 minutes and
// starts no step in the last 4 min 20 s (ARCHMAX_MODEL_TIMEOUT 4 min + ARCHMAX_CONTINUE_MARGIN
// 20 s); each model call takes 2 minutes. An invocation makes the calls starting at 0, 2, …,
// 10 min: the HTTP start makes none (it answers after the opening), the continuations 6 and
// the last 5 of the 11.
func TestTurnContinuesAcrossLambdaInvocations(t *testing.T) {
	s := newStack(t, "long.model.yaml")
	clk := s.virtualTime()
	var modelCalls atomic.Int64
	s.onModelCall(func() { modelCalls.Add(1); clk.Advance(modelCall) })

	fake, fn := continuingTurnFunction(t, s)

	// API Gateway's invocation of the function (the HTTP start): it answers after the opening
	id, turn := startRunning(t, s, fn, "parcel", `{"message":"work through the ten steps"}`)

	wait, stop := context.WithTimeout(context.Background(), 30*time.Second)
	defer stop()
	if err := fake.Wait(wait); err != nil {
		t.Fatalf("the continuations did not finish: %v", err)
	}
	sum := s.summary(t, id)
	if sum.Status != session.StatusCompleted || sum.TurnID != turn || sum.Turn != 1 {
		t.Fatalf("after the continuations: %s turn %q (#%d), want completed in %q", sum.Status, sum.TurnID, sum.Turn, turn)
	}
	invs := fake.Invocations()
	for _, inv := range invs {
		if inv.Type != lambdafake.Event || inv.Attempt != 1 || inv.Error != "" || inv.TimedOut {
			t.Errorf("invocation %+v: want first-attempt async invocations that ended cleanly", inv)
		}
		ref, isCont, err := continuation.Parse(inv.Payload)
		if !isCont || err != nil || ref != (continuation.Ref{SessionID: id, TurnID: turn}) {
			t.Errorf("invocation payload %s is not this turn's continuation", inv.Payload)
		}
	}
	if total := 1 + len(invs); total != 3 {
		t.Errorf("the turn took %d invocations (1 HTTP + %d continuations), want 3", total, len(invs))
	}
	if got := modelCalls.Load(); got != 11 {
		t.Errorf("the model was called %d times, want 11 (each step once)", got)
	}
	msgs := s.messages(t, id, 0, 100)
	checkSteps(t, msgs, 10)
	if v := sum.Variables["step"].Value; v != float64(10) {
		t.Errorf("step = %v, want 10", v)
	}

	// Lambda or a retry delivers one continuation again: nothing changes
	lc := lambda.New(lambda.Options{Region: "us-east-1", BaseEndpoint: aws.String(s.env[assembly.EnvLambdaEndpoint]),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
	if _, err := lc.Invoke(context.Background(), &lambda.InvokeInput{FunctionName: aws.String(turnFunction),
		InvocationType: types.InvocationTypeEvent, Payload: invs[0].Payload}); err != nil {
		t.Fatal(err)
	}
	if err := fake.Wait(wait); err != nil {
		t.Fatal(err)
	}
	after := fake.Invocations()
	if len(after) != len(invs)+1 || after[len(after)-1].Error != "" {
		t.Fatalf("the duplicate invocation: %+v", after[len(after)-1])
	}
	if got := modelCalls.Load(); got != 11 {
		t.Errorf("the duplicate made %d more model calls", got-11)
	}
	if again := s.messages(t, id, 0, 100); len(again) != len(msgs) {
		t.Errorf("the duplicate wrote %d messages", len(again)-len(msgs))
	}
	if h := s.head(t, id); h.Status != string(session.StatusCompleted) {
		t.Errorf("after the duplicate the session is %s", h.Status)
	}
}

// checkSteps asserts the transcript is the person's message, steps × (assistant with one
// archmax_set_variables call, its tool result), then the closing answer — each step once.
func checkSteps(t *testing.T, msgs []transcript.Message, steps int) {
	t.Helper()
	if len(msgs) != 2+2*steps {
		t.Fatalf("stored %d messages, want %d", len(msgs), 2+2*steps)
	}
	seen := map[string]bool{}
	for i, m := range msgs {
		if seen[m.ID] {
			t.Errorf("message %d (%s) stored twice", i, m.ID)
		}
		seen[m.ID] = true
	}
	for i := range steps {
		a, r := msgs[1+2*i], msgs[2+2*i]
		if a.Role != transcript.RoleAssistant || len(a.ToolCalls) != 1 || r.Role != transcript.RoleTool {
			t.Fatalf("step %d stored as %s/%s", i+1, a.Role, r.Role)
		}
		vars, _ := a.ToolCalls[0].Args["variables"].(map[string]any)
		if vars["step"] != float64(i+1) {
			t.Errorf("step %d's call is %v", i+1, a.ToolCalls[0].Args)
		}
	}
	if last := msgs[len(msgs)-1]; last.Text != "All ten steps are done." {
		t.Errorf("last message = %q", last.Text)
	}
}

// DESIGN.md §1, §4 (C6-17): the decide function, continuing its own turns, answers a
// decision 202 as soon as the decision is committed — before the model is asked anything —
// and its continuation (an asynchronous self-invocation) runs the target state to the end.
func TestDecisionIsAcceptedAndContinued(t *testing.T) {
	s := newStack(t, "approve.model.yaml")
	l := s.boot(t) // synchronous functions for the setup
	id, parked := parkAtSignoff(t, l)
	var modelCalls atomic.Int64
	s.onModelCall(func() { modelCalls.Add(1) })

	fake, decide := continuingDecideFunction(t, s)

	ans := call(t, decide, decisionReq(id, jsonText(t, map[string]string{"to": "publish", "parkId": parked.parkID()})))
	if ans.status != http.StatusAccepted || ans.body["kind"] != "running" || ans.body["state"] != "publish" || ans.body["disposition"] != "decide" {
		t.Fatalf("decision = %d %v, want 202 running in publish", ans.status, ans.body)
	}
	if n := modelCalls.Load(); n != 0 {
		t.Errorf("the model was called %d times before the 202", n)
	}
	wait, stop := context.WithTimeout(context.Background(), 30*time.Second)
	defer stop()
	if err := fake.Wait(wait); err != nil {
		t.Fatal(err)
	}
	sum := s.summary(t, id)
	if sum.Status != session.StatusCompleted || sum.TurnID != ans.body["turnId"] || sum.Pending != nil {
		t.Fatalf("after the continuation: %s turn %q, want completed in %v", sum.Status, sum.TurnID, ans.body["turnId"])
	}
	if got := s.trail(t, id); got != "trigger:draft agent:review human:publish" {
		t.Errorf("trail = %s", got)
	}
	again := call(t, decide, decisionReq(id, jsonText(t, map[string]string{"to": "publish", "parkId": parked.parkID()})))
	if again.status != http.StatusConflict {
		t.Errorf("the same decision again = %d %v, want 409", again.status, again.body)
	}
}

// Virtual time of the continuing functions (DECISIONS T18-3): Lambda's 15-minute invocation
// with the production budget (ARCHMAX_MODEL_TIMEOUT and ARCHMAX_CONTINUE_MARGIN unset), and
// a model call that takes 2 minutes of it when a test advances the clock by modelCall.
const (
	invocation = 15 * time.Minute
	modelCall  = 2 * time.Minute
	// hangGuard is the Lambda fake's real timeout: an invocation still running after it
	// has hung (a failure), it is no budget.
	hangGuard = 2 * time.Minute
)

// lambdaAssembly points the stack's functions at a Lambda fake as their continuation
// starter, named function, and assembles them as their main does, on the stack's virtual
// clock (virtualTime).
func lambdaAssembly(t *testing.T, s *stack, function string) (*lambdafake.Fake, *assembly.Assembly) {
	t.Helper()
	s.virtualTime()
	fake := lambdafake.New(lambdafake.WithTimeout(hangGuard), lambdafake.WithRetryDelays(100*time.Millisecond))
	t.Cleanup(fake.Close)
	lambdaAPI := httptest.NewServer(fake)
	t.Cleanup(lambdaAPI.Close)
	s.env[assembly.EnvLambdaEndpoint] = lambdaAPI.URL
	s.env["AWS_LAMBDA_FUNCTION_NAME"] = function
	a := s.assemble(t)
	if !a.Runner.Async() {
		t.Fatal("AWS_LAMBDA_FUNCTION_NAME did not give the assembly a continuation starter")
	}
	return fake, a
}

// register serves function name on the Lambda fake with handle, each invocation given the
// virtual deadline of an invocation on the stack's clock — as Lambda gives its handler the
// real one.
func (s *stack) register(fake *lambdafake.Fake, name string, handle func(context.Context, []byte) (any, error)) {
	fake.Register(name, func(ctx context.Context, payload []byte) ([]byte, error) {
		out, err := handle(continuation.WithInvocationDeadline(ctx, s.clock.Now().Add(invocation)), payload)
		if err != nil {
			return nil, err
		}
		return json.Marshal(out)
	})
}

// continuingTurnFunction is the turn function as its main builds it, serving API Gateway
// and its own continuation events through the Lambda fake.
func continuingTurnFunction(t *testing.T, s *stack) (*lambdafake.Fake, *starts.Handler) {
	t.Helper()
	fake, a := lambdaAssembly(t, s, turnFunction)
	fn := starts.New(a.Engines, a.Runner, nil, nil, httpapi.WithPolicy(a.Access))
	s.register(fake, turnFunction, func(ctx context.Context, payload []byte) (any, error) { return fn.Handle(ctx, payload) })
	return fake, fn
}

// continuingDecideFunction is the decide function as its main builds it, serving API
// Gateway and its own continuation events through the Lambda fake.
func continuingDecideFunction(t *testing.T, s *stack) (*lambdafake.Fake, *httpapi.Handler) {
	t.Helper()
	fake, a := lambdaAssembly(t, s, "archmax-decide")
	decide := httpapi.New(a.Engines, a.Runner, nil, httpapi.WithPolicy(a.Access))
	s.register(fake, "archmax-decide", func(ctx context.Context, payload []byte) (any, error) {
		return decide.HandleOrEvent(ctx, payload, "decide", nil)
	})
	return fake, decide
}

// startRunning sends API Gateway's start request for workflow to the turn function, in an
// invocation of the stack's virtual time, and checks it is answered 202 running; it returns
// the session and turn ids.
func startRunning(t *testing.T, s *stack, fn *starts.Handler, workflow, body string) (id, turn string) {
	t.Helper()
	ctx := continuation.WithInvocationDeadline(context.Background(), s.clock.Now().Add(invocation))
	raw, _ := json.Marshal(startReq(workflow, body))
	out, err := fn.Handle(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	resp, ok := out.(events.APIGatewayV2HTTPResponse)
	if !ok {
		t.Fatalf("the turn function answered an HTTP request with %T", out)
	}
	started := decodeAnswer(t, resp)
	id, _ = started.body["sessionId"].(string)
	turn, _ = started.body["turnId"].(string)
	if started.status != http.StatusAccepted || started.body["kind"] != "running" || id == "" || turn == "" {
		t.Fatalf("start = %d %v, want 202 running", started.status, started.body)
	}
	return id, turn
}
