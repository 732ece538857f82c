package lambdafake_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"
	smithy "github.com/aws/smithy-go"
	"github.com/google/uuid"

	"github.com/archmax-ai/archmax/local/lambdafake"
)

func setup(t *testing.T, opts ...lambdafake.Option) (*lambdafake.Fake, *lambda.Client, string) {
	t.Helper()
	fake := lambdafake.New(opts...)
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	t.Cleanup(fake.Close) // runs first: no handler outlives the test
	client := lambda.NewFromConfig(aws.Config{
		Region:      "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""),
	}, func(o *lambda.Options) {
		o.BaseEndpoint = aws.String(srv.URL)
		o.RetryMaxAttempts = 1 // an error from the fake must reach the test as sent
	})
	return fake, client, srv.URL
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// gate returns a channel that blocks handlers until open is called; the test's cleanup opens
// it before Close, so a failing test does not hang waiting for a blocked handler.
func gate(t *testing.T) (<-chan struct{}, func()) {
	ch := make(chan struct{})
	var once sync.Once
	open := func() { once.Do(func() { close(ch) }) }
	t.Cleanup(open)
	return ch, open
}

func event(name string, payload []byte) *lambda.InvokeInput {
	return &lambda.InvokeInput{FunctionName: aws.String(name), InvocationType: types.InvocationTypeEvent, Payload: payload}
}

func invoke(name string, payload []byte) *lambda.InvokeInput {
	return &lambda.InvokeInput{FunctionName: aws.String(name), Payload: payload}
}

// apiError returns the error code and HTTP status the SDK decoded, or fails the test.
func apiError(t *testing.T, err error) (string, int) {
	t.Helper()
	var ae smithy.APIError
	var re *awshttp.ResponseError
	if !errors.As(err, &ae) || !errors.As(err, &re) {
		t.Fatalf("error %v (%T) is not an API error", err, err)
	}
	return ae.ErrorCode(), re.HTTPStatusCode()
}

func wait(t *testing.T, f *lambdafake.Fake) {
	t.Helper()
	if err := f.Wait(ctxT(t, 10*time.Second)); err != nil {
		t.Fatalf("Wait: %v", err)
	}
}

func TestEventAnswers202AndHandlerSeesLambdaContext(t *testing.T) {
	const timeout = time.Minute // the handler is released long before: the test never races it
	fake, c, _ := setup(t, lambdafake.WithTimeout(timeout))
	type seen struct {
		payload  []byte
		deadline time.Time
		ok       bool
		lc       *lambdacontext.LambdaContext
		at       time.Time
	}
	seenc := make(chan seen, 1)
	release, open := gate(t)
	fake.Register("worker", func(ctx context.Context, p []byte) ([]byte, error) {
		dl, ok := ctx.Deadline()
		lc, _ := lambdacontext.FromContext(ctx)
		seenc <- seen{p, dl, ok, lc, time.Now()}
		<-release
		return []byte(`"ignored"`), nil
	})

	payload := []byte(`{"job":"j-1","cursor":42,"s":"ü"}`)
	before := time.Now()
	out, err := c.Invoke(ctxT(t, 5*time.Second), event("worker", payload))
	if err != nil {
		t.Fatal(err) // the handler is still blocked: Event must not wait for it
	}
	if out.StatusCode != 202 || len(out.Payload) != 0 || out.FunctionError != nil {
		t.Errorf("Invoke = status %d, payload %q, function error %v; want 202, empty, none", out.StatusCode, out.Payload, aws.ToString(out.FunctionError))
	}
	reqID, _ := awsmiddleware.GetRequestIDMetadata(out.ResultMetadata)

	var s seen
	select {
	case s = <-seenc:
	case <-time.After(5 * time.Second):
		t.Fatal("handler not called")
	}
	if !bytes.Equal(s.payload, payload) {
		t.Errorf("handler payload = %q, want %q", s.payload, payload)
	}
	if !s.ok || s.deadline.Before(before.Add(timeout)) || s.deadline.After(s.at.Add(timeout)) {
		t.Errorf("deadline = %v (set %v), want within [%v, %v]", s.deadline, s.ok, before.Add(timeout), s.at.Add(timeout))
	}
	if s.lc == nil {
		t.Fatal("no lambdacontext in the handler's context")
	}
	if _, err := uuid.Parse(s.lc.AwsRequestID); err != nil || s.lc.AwsRequestID != reqID {
		t.Errorf("AwsRequestID = %q, want a uuid equal to the response's x-amzn-RequestId %q", s.lc.AwsRequestID, reqID)
	}
	if want := "arn:aws:lambda:us-east-1:123456789012:function:worker"; s.lc.InvokedFunctionArn != want {
		t.Errorf("InvokedFunctionArn = %q, want %q", s.lc.InvokedFunctionArn, want)
	}

	if err := fake.Wait(ctxT(t, 50*time.Millisecond)); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait while the handler runs = %v, want DeadlineExceeded", err)
	}
	if inv := fake.Invocations(); len(inv) != 1 || !inv[0].End.IsZero() {
		t.Errorf("running invocation = %+v, want one with zero End", inv)
	}
	open()
	wait(t, fake)
	inv := fake.Invocations()
	if len(inv) != 1 {
		t.Fatalf("%d invocations, want 1", len(inv))
	}
	if i := inv[0]; i.Function != "worker" || i.Type != "Event" || i.Attempt != 1 || i.RequestID != reqID ||
		!bytes.Equal(i.Payload, payload) || i.Error != "" || i.TimedOut || i.End.Before(i.Start) || i.Qualifier != "" {
		t.Errorf("invocation = %+v", i)
	}
}

func TestRequestResponseReturnsHandlerPayload(t *testing.T) {
	fake, c, _ := setup(t)
	fake.Register("echo", func(ctx context.Context, p []byte) ([]byte, error) {
		lc, _ := lambdacontext.FromContext(ctx)
		return fmt.Appendf(nil, `{"got":%s,"custom":%q}`, p, lc.ClientContext.Custom["k"]), nil
	})
	fake.Register("void", func(context.Context, []byte) ([]byte, error) { return nil, nil })
	ctx := ctxT(t, 5*time.Second)

	in := invoke("echo", []byte(`{"a":[1,2]}`))
	in.LogType = types.LogTypeTail
	in.ClientContext = aws.String(base64.StdEncoding.EncodeToString([]byte(`{"custom":{"k":"v"}}`)))
	out, err := c.Invoke(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if string(out.Payload) != `{"got":{"a":[1,2]},"custom":"v"}` || out.StatusCode != 200 ||
		aws.ToString(out.ExecutedVersion) != "$LATEST" || out.FunctionError != nil {
		t.Errorf("Invoke = %d %q version %q error %q", out.StatusCode, out.Payload, aws.ToString(out.ExecutedVersion), aws.ToString(out.FunctionError))
	}
	reqID, _ := awsmiddleware.GetRequestIDMetadata(out.ResultMetadata)
	log, err := base64.StdEncoding.DecodeString(aws.ToString(out.LogResult))
	if err != nil || !strings.Contains(string(log), "START RequestId: "+reqID) {
		t.Errorf("LogResult = %q (%v), want a START line for %s", log, err, reqID)
	}

	out, err = c.Invoke(ctx, invoke("echo", nil))
	if err != nil || string(out.Payload) != `{"got":{},"custom":""}` {
		t.Errorf("empty payload: %q, %v; want the handler to get {} and no client context", out.Payload, err)
	}
	out, err = c.Invoke(ctx, invoke("void", []byte(`1`)))
	if err != nil || string(out.Payload) != "null" {
		t.Errorf("nil response: %q, %v; want null", out.Payload, err)
	}
	if n := len(fake.Invocations()); n != 3 {
		t.Errorf("%d invocations, want 3", n)
	}
}

func TestFunctionErrorUnhandled(t *testing.T) {
	fake, c, _ := setup(t, lambdafake.WithRetryDelays(time.Millisecond))
	fake.Register("fails", func(context.Context, []byte) ([]byte, error) { return nil, errors.New("boom") })
	fake.Register("panics", func(context.Context, []byte) ([]byte, error) { panic("kaboom") })
	ctx := ctxT(t, 5*time.Second)

	for _, tc := range []struct{ fn, msg, typ string }{{"fails", "boom", "errorString"}, {"panics", "kaboom", "string"}} {
		out, err := c.Invoke(ctx, invoke(tc.fn, []byte(`{}`)))
		if err != nil {
			t.Fatalf("%s: %v (a function error is not an API error)", tc.fn, err)
		}
		var body struct{ ErrorMessage, ErrorType string }
		if err := json.Unmarshal(out.Payload, &body); err != nil {
			t.Fatalf("%s: payload %q: %v", tc.fn, out.Payload, err)
		}
		if out.StatusCode != 200 || aws.ToString(out.FunctionError) != "Unhandled" || body.ErrorMessage != tc.msg || body.ErrorType != tc.typ {
			t.Errorf("%s: status %d, FunctionError %q, body %+v; want 200 Unhandled %s/%s", tc.fn, out.StatusCode, aws.ToString(out.FunctionError), body, tc.msg, tc.typ)
		}
	}
	wait(t, fake)
	time.Sleep(20 * time.Millisecond) // a (wrong) retry would have run by now
	inv := fake.Invocations()
	if len(inv) != 2 || inv[0].Error != "boom" || inv[1].Error != "kaboom" || inv[0].Type != "RequestResponse" {
		t.Errorf("invocations = %+v, want boom then kaboom, no retries", inv)
	}
}

func TestResourceNotFound(t *testing.T) {
	fake, c, _ := setup(t)
	fake.Register("there", func(context.Context, []byte) ([]byte, error) { return nil, nil })
	for _, in := range []*lambda.InvokeInput{invoke("nope", []byte(`{}`)), event("nope", []byte(`{}`))} {
		_, err := c.Invoke(ctxT(t, 5*time.Second), in)
		var nf *types.ResourceNotFoundException
		if !errors.As(err, &nf) {
			t.Fatalf("%s: err = %v (%T), want *types.ResourceNotFoundException", in.InvocationType, err, err)
		}
		if want := "Function not found: arn:aws:lambda:us-east-1:123456789012:function:nope"; aws.ToString(nf.Message) != want {
			t.Errorf("Message = %q, want %q", aws.ToString(nf.Message), want)
		}
		if _, status := apiError(t, err); status != 404 {
			t.Errorf("status %d, want 404", status)
		}
	}
	if n := len(fake.Invocations()); n != 0 {
		t.Errorf("%d invocations, want 0", n)
	}
}

// jsonOfSize returns a JSON string literal n bytes long.
func jsonOfSize(n int) []byte { return []byte(`"` + strings.Repeat("a", n-2) + `"`) }

func TestPayloadTooLarge(t *testing.T) {
	fake, c, _ := setup(t)
	var calls atomic.Int32
	fake.Register("big", func(context.Context, []byte) ([]byte, error) { calls.Add(1); return nil, nil })
	ctx := ctxT(t, 30*time.Second)

	tooLarge := func(in *lambda.InvokeInput) {
		t.Helper()
		_, err := c.Invoke(ctx, in)
		if err == nil {
			t.Fatalf("%s of %d bytes accepted", in.InvocationType, len(in.Payload))
		}
		if code, status := apiError(t, err); code != "RequestEntityTooLargeException" || status != 413 {
			t.Errorf("%s of %d bytes: %s %d, want RequestEntityTooLargeException 413", in.InvocationType, len(in.Payload), code, status)
		}
		// What Lambda sends is not the SDK's modelled RequestTooLargeException.
		var modelled *types.RequestTooLargeException
		if errors.As(err, &modelled) {
			t.Errorf("decoded as *types.RequestTooLargeException; real Lambda's code does not decode so")
		}
	}
	tooLarge(event("big", jsonOfSize(lambdafake.MaxAsyncPayload+1)))
	tooLarge(invoke("big", jsonOfSize(lambdafake.MaxSyncPayload+1)))

	if out, err := c.Invoke(ctx, event("big", jsonOfSize(lambdafake.MaxAsyncPayload))); err != nil || out.StatusCode != 202 {
		t.Errorf("Event at the limit: %v", err)
	}
	if _, err := c.Invoke(ctx, invoke("big", jsonOfSize(lambdafake.MaxAsyncPayload+1))); err != nil {
		t.Errorf("RequestResponse over the async limit: %v, want accepted", err)
	}
	wait(t, fake)
	if n := calls.Load(); n != 2 {
		t.Errorf("handler called %d times, want 2", n)
	}
	if lambdafake.MaxSyncPayload != 6291456 || lambdafake.MaxAsyncPayload != 1048576 {
		t.Errorf("limits %d, %d", lambdafake.MaxSyncPayload, lambdafake.MaxAsyncPayload)
	}
}

func TestInvalidJSONPayload(t *testing.T) {
	fake, c, _ := setup(t)
	var calls atomic.Int32
	fake.Register("f", func(context.Context, []byte) ([]byte, error) { calls.Add(1); return nil, nil })
	for _, in := range []*lambda.InvokeInput{
		invoke("f", []byte(`not json`)),
		event("f", []byte(`{"a":1`)),
		event("f", []byte(`{"a":1} {"b":2}`)),
	} {
		_, err := c.Invoke(ctxT(t, 5*time.Second), in)
		var ire *types.InvalidRequestContentException
		if !errors.As(err, &ire) || !strings.HasPrefix(aws.ToString(ire.Message), "Could not parse request body into json") {
			t.Errorf("%q: err = %v, want *types.InvalidRequestContentException", in.Payload, err)
		}
	}
	wait(t, fake)
	if calls.Load() != 0 || len(fake.Invocations()) != 0 {
		t.Errorf("handler called %d times", calls.Load())
	}
}

func TestValidationAndDryRun(t *testing.T) {
	fake, c, _ := setup(t)
	fake.Register("f", func(context.Context, []byte) ([]byte, error) { return nil, nil })
	ctx := ctxT(t, 5*time.Second)

	in := invoke("f", []byte(`{}`))
	in.InvocationType = "Bogus"
	_, err := c.Invoke(ctx, in)
	if code, status := apiError(t, err); code != "ValidationException" || status != 400 || !strings.Contains(err.Error(), "invocationType") {
		t.Errorf("InvocationType Bogus: %s %d %v, want ValidationException 400", code, status, err)
	}
	in = invoke("f", []byte(`{}`))
	in.LogType = "Loud"
	_, err = c.Invoke(ctx, in)
	if code, _ := apiError(t, err); code != "ValidationException" {
		t.Errorf("LogType Loud: %v, want ValidationException", err)
	}
	_, err = c.Invoke(ctx, invoke("bad name!", []byte(`{}`)))
	if code, _ := apiError(t, err); code != "ValidationException" {
		t.Errorf("bad name: %v, want ValidationException", err)
	}
	in = invoke("f:live", []byte(`{}`))
	in.Qualifier = aws.String("prod")
	_, err = c.Invoke(ctx, in)
	var ipv *types.InvalidParameterValueException
	if !errors.As(err, &ipv) {
		t.Errorf("mismatched qualifiers: %v, want *types.InvalidParameterValueException", err)
	}

	in = invoke("f", []byte(`{}`))
	in.InvocationType = types.InvocationTypeDryRun
	out, err := c.Invoke(ctx, in)
	if err != nil || out.StatusCode != 204 {
		t.Errorf("DryRun: %v, %+v; want 204", err, out)
	}
	in.FunctionName = aws.String("nope")
	if _, err := c.Invoke(ctx, in); !errors.As(err, new(*types.ResourceNotFoundException)) {
		t.Errorf("DryRun of a missing function: %v, want ResourceNotFoundException", err)
	}
	if n := len(fake.Invocations()); n != 0 {
		t.Errorf("%d invocations, want 0", n)
	}

	resp, err := http.Get(mustURL(t, c) + "/2015-03-31/functions")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 || resp.Header.Get("X-Amzn-Errortype") != "UnknownOperationException" {
		t.Errorf("other operation: %d %q", resp.StatusCode, resp.Header.Get("X-Amzn-Errortype"))
	}
}

func mustURL(t *testing.T, c *lambda.Client) string {
	t.Helper()
	return aws.ToString(c.Options().BaseEndpoint)
}

func TestAsyncRetriesWithDelays(t *testing.T) {
	const d1, d2 = 40 * time.Millisecond, 80 * time.Millisecond
	fake, c, _ := setup(t, lambdafake.WithRetryDelays(d1, d2))
	var calls atomic.Int32
	fake.Register("flaky", func(context.Context, []byte) ([]byte, error) {
		if calls.Add(1) == 2 {
			panic("second attempt panics")
		}
		return nil, errors.New("still failing")
	})
	out, err := c.Invoke(ctxT(t, 5*time.Second), event("flaky", []byte(`{"n":1}`)))
	if err != nil {
		t.Fatal(err)
	}
	reqID, _ := awsmiddleware.GetRequestIDMetadata(out.ResultMetadata)
	wait(t, fake)
	time.Sleep(2 * d2) // a fourth attempt would start by now
	inv := fake.Invocations()
	if len(inv) != 3 {
		t.Fatalf("%d attempts, want 3: %+v", len(inv), inv)
	}
	for i, want := range []string{"still failing", "second attempt panics", "still failing"} {
		if inv[i].Attempt != i+1 || inv[i].Error != want || inv[i].RequestID != reqID || string(inv[i].Payload) != `{"n":1}` || inv[i].End.IsZero() {
			t.Errorf("attempt %d = %+v", i+1, inv[i])
		}
	}
	if gap := inv[1].Start.Sub(inv[0].End); gap < d1 {
		t.Errorf("second attempt %v after the first, want >= %v", gap, d1)
	}
	if gap := inv[2].Start.Sub(inv[1].End); gap < d2 {
		t.Errorf("third attempt %v after the second, want >= %v", gap, d2)
	}
}

func TestAsyncRetryStopsOnSuccessOrWithoutDelays(t *testing.T) {
	fake, c, _ := setup(t, lambdafake.WithRetryDelays(time.Millisecond, time.Millisecond))
	var calls atomic.Int32
	fake.Register("once", func(context.Context, []byte) ([]byte, error) {
		if calls.Add(1) == 1 {
			return nil, errors.New("first fails")
		}
		return nil, nil
	})
	if _, err := c.Invoke(ctxT(t, 5*time.Second), event("once", []byte(`{}`))); err != nil {
		t.Fatal(err)
	}
	wait(t, fake)
	if inv := fake.Invocations(); len(inv) != 2 || inv[1].Attempt != 2 || inv[1].Error != "" {
		t.Errorf("invocations = %+v, want a failed attempt then a successful second", inv)
	}

	fake2, c2, _ := setup(t, lambdafake.WithRetryDelays())
	fake2.Register("f", func(context.Context, []byte) ([]byte, error) { return nil, errors.New("x") })
	if _, err := c2.Invoke(ctxT(t, 5*time.Second), event("f", []byte(`{}`))); err != nil {
		t.Fatal(err)
	}
	wait(t, fake2)
	if n := len(fake2.Invocations()); n != 1 {
		t.Errorf("no retry delays: %d attempts, want 1", n)
	}
}

func TestDeadlineOverrunIsRecordedAndRetried(t *testing.T) {
	const timeout = 100 * time.Millisecond
	fake, c, _ := setup(t, lambdafake.WithTimeout(timeout), lambdafake.WithRetryDelays(10*time.Millisecond))
	release, open := gate(t)
	var calls, lateReturns atomic.Int32
	fake.Register("slow", func(ctx context.Context, _ []byte) ([]byte, error) {
		if calls.Add(1) == 1 {
			<-ctx.Done() // overrun; return only when the test says so
			<-release
			lateReturns.Add(1)
			return []byte(`"too late"`), nil
		}
		return nil, nil
	})
	if _, err := c.Invoke(ctxT(t, 5*time.Second), event("slow", []byte(`{}`))); err != nil {
		t.Fatal(err)
	}
	wait(t, fake) // the cut attempt counts as ended though its goroutine is blocked
	inv := fake.Invocations()
	if len(inv) != 2 {
		t.Fatalf("%d attempts, want 2: %+v", len(inv), inv)
	}
	if !inv[0].TimedOut || !strings.Contains(inv[0].Error, "Task timed out after 0.10 seconds") || inv[0].End.Sub(inv[0].Start) < timeout {
		t.Errorf("first attempt = %+v, want timed out at its deadline", inv[0])
	}
	if inv[1].TimedOut || inv[1].Error != "" || inv[1].Attempt != 2 {
		t.Errorf("retry = %+v, want a success", inv[1])
	}
	if lateReturns.Load() != 0 {
		t.Fatal("handler returned before release")
	}

	// Synchronously, the caller gets the timeout at the deadline, not at the late return.
	fake.Register("stuck", func(context.Context, []byte) ([]byte, error) { <-release; return nil, nil })
	start := time.Now()
	out, err := c.Invoke(ctxT(t, 5*time.Second), invoke("stuck", []byte(`{}`)))
	if err != nil {
		t.Fatal(err)
	}
	var body struct{ ErrorMessage, ErrorType string }
	_ = json.Unmarshal(out.Payload, &body)
	if aws.ToString(out.FunctionError) != "Unhandled" || body.ErrorType != "Sandbox.Timedout" || !strings.Contains(body.ErrorMessage, "Task timed out") {
		t.Errorf("sync overrun: %q %q", aws.ToString(out.FunctionError), out.Payload)
	}
	// at the deadline: not before it, and while the handler is still blocked (it returns only
	// at open, below) — an ordering, not a measured upper bound
	if el := time.Since(start); el < timeout || lateReturns.Load() != 0 {
		t.Errorf("sync overrun answered after %v (late returns %d), want at the %v deadline, before the handler returned", el, lateReturns.Load(), timeout)
	}
	if inv := fake.Invocations(); len(inv) != 3 || !inv[2].TimedOut {
		t.Errorf("sync overrun not recorded: %+v", inv)
	}

	open()
	fake.Close() // waits for the abandoned handlers
	if n := lateReturns.Load(); n != 1 {
		t.Errorf("Close returned before the abandoned handler (%d late returns)", n)
	}
	if n := len(fake.Invocations()); n != 3 {
		t.Errorf("late return changed the record: %d invocations", n)
	}
}

// Wait covers an event between its attempts. The retry blocks until the test lets it go, so
// "still pending" holds however slowly the machine gets to the first Wait: the retry is
// queued then, or running.
func TestWaitCoversQueuedRetries(t *testing.T) {
	const delay = 200 * time.Millisecond
	fake, c, _ := setup(t, lambdafake.WithRetryDelays(delay))
	release, open := gate(t)
	var calls atomic.Int32
	fake.Register("f", func(context.Context, []byte) ([]byte, error) {
		if calls.Add(1) == 1 {
			return nil, errors.New("first fails")
		}
		<-release
		return nil, nil
	})
	start := time.Now()
	if _, err := c.Invoke(ctxT(t, 5*time.Second), event("f", []byte(`{}`))); err != nil {
		t.Fatal(err)
	}
	if err := fake.Wait(ctxT(t, delay/4)); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait with a retry queued = %v, want DeadlineExceeded", err)
	}
	open()
	wait(t, fake)
	if el := time.Since(start); el < delay {
		t.Errorf("Wait returned after %v, before the retry could run", el)
	}
	if inv := fake.Invocations(); len(inv) != 2 || inv[1].End.IsZero() || inv[1].Error != "" {
		t.Errorf("after Wait: %+v, want the finished retry", inv)
	}
}

func TestFunctionARNForms(t *testing.T) {
	fake, c, _ := setup(t)
	arn := "arn:aws:lambda:us-east-1:123456789012:function:arnfn"
	fake.Register(arn, func(ctx context.Context, _ []byte) ([]byte, error) {
		lc, _ := lambdacontext.FromContext(ctx)
		return json.Marshal(lc.InvokedFunctionArn)
	})
	ctx := ctxT(t, 5*time.Second)
	for _, tc := range []struct{ name, qualifier, wantArn, wantQ string }{
		{"arnfn", "", arn, ""},
		{arn, "", arn, ""},
		{"123456789012:function:arnfn", "", arn, ""},
		{"arnfn:live", "", arn + ":live", "live"},
		{arn + ":live", "live", arn + ":live", "live"},
		{arn, "$LATEST", arn + ":$LATEST", "$LATEST"},
	} {
		in := invoke(tc.name, []byte(`{}`))
		if tc.qualifier != "" {
			in.Qualifier = aws.String(tc.qualifier)
		}
		out, err := c.Invoke(ctx, in)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if want, _ := json.Marshal(tc.wantArn); !bytes.Equal(out.Payload, want) {
			t.Errorf("%s: InvokedFunctionArn %s, want %s", tc.name, out.Payload, want)
		}
		inv := fake.Invocations()
		if last := inv[len(inv)-1]; last.Function != "arnfn" || last.Qualifier != tc.wantQ {
			t.Errorf("%s: recorded %q qualifier %q", tc.name, last.Function, last.Qualifier)
		}
	}
	if out, err := c.Invoke(ctx, event(arn, []byte(`{"x":1}`))); err != nil || out.StatusCode != 202 {
		t.Fatalf("Event by ARN: %v", err)
	}
	wait(t, fake)
	if inv := fake.Invocations(); len(inv) != 7 || inv[6].Type != "Event" || inv[6].Function != "arnfn" {
		t.Errorf("Event by ARN not run: %+v", inv)
	}
}

func TestConcurrentAsyncInvocations(t *testing.T) {
	const n = 40
	fake, c, _ := setup(t, lambdafake.WithRetryDelays(5*time.Millisecond))
	var mu sync.Mutex
	attempts := map[int]int{}
	fake.Register("fan", func(_ context.Context, p []byte) ([]byte, error) {
		var in struct{ I int }
		if err := json.Unmarshal(p, &in); err != nil {
			return nil, err
		}
		mu.Lock()
		attempts[in.I]++
		a := attempts[in.I]
		mu.Unlock()
		if in.I%2 == 0 && a == 1 {
			return nil, errors.New("even ones fail once")
		}
		return nil, nil
	})
	ctx := ctxT(t, 20*time.Second)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	go func() { // read concurrently with the writers
		for {
			select {
			case <-stop:
				return
			default:
				_ = fake.Invocations()
				time.Sleep(time.Millisecond)
			}
		}
	}()
	for i := range n {
		wg.Go(func() {
			if _, err := c.Invoke(ctx, event("fan", fmt.Appendf(nil, `{"I":%d}`, i))); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	wait(t, fake)
	close(stop)
	inv := fake.Invocations()
	if len(inv) != n+n/2 {
		t.Errorf("%d attempts, want %d", len(inv), n+n/2)
	}
	for i := range n {
		want := 1
		if i%2 == 0 {
			want = 2
		}
		if attempts[i] != want {
			t.Errorf("event %d ran %d times, want %d", i, attempts[i], want)
		}
	}
}

func TestCloseDropsQueuedRetriesAndWaitsForHandlers(t *testing.T) {
	fake, c, _ := setup(t, lambdafake.WithRetryDelays(time.Hour))
	fake.Register("f", func(context.Context, []byte) ([]byte, error) { return nil, errors.New("fails") })
	started := make(chan struct{})
	release, open := gate(t)
	var finished atomic.Bool
	fake.Register("blocks", func(context.Context, []byte) ([]byte, error) {
		close(started)
		<-release
		finished.Store(true)
		return nil, nil
	})
	ctx := ctxT(t, 5*time.Second)
	if _, err := c.Invoke(ctx, event("f", []byte(`{}`))); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Invoke(ctx, event("blocks", []byte(`{}`))); err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("handler not called")
	}
	for deadline := time.Now().Add(5 * time.Second); !slices.ContainsFunc(fake.Invocations(),
		func(i lambdafake.Invocation) bool { return i.Function == "f" && !i.End.IsZero() }); {
		if time.Now().After(deadline) {
			t.Fatal("first attempt of f did not end")
		}
		time.Sleep(time.Millisecond) // until f's first attempt has failed and its retry is queued
	}

	closed := make(chan struct{})
	go func() { fake.Close(); close(closed) }()
	select {
	case <-closed:
		t.Fatal("Close returned while a handler runs")
	case <-time.After(50 * time.Millisecond):
	}
	open()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return (an hour-long retry still queued?)")
	}
	if !finished.Load() {
		t.Error("Close returned before the handler finished")
	}
	if err := fake.Wait(ctxT(t, time.Second)); err != nil {
		t.Errorf("Wait after Close = %v", err)
	}
	if n := len(fake.Invocations()); n != 2 {
		t.Errorf("%d invocations, want 2 (the retry dropped)", n)
	}
	_, err := c.Invoke(ctx, event("f", []byte(`{}`)))
	var se *types.ServiceException
	if !errors.As(err, &se) {
		t.Errorf("Invoke after Close = %v, want *types.ServiceException", err)
	}
}

// GetFunctionConfiguration answers a registered function's ARN, as Lambda names it; a
// function not registered is ResourceNotFoundException.
func TestGetFunctionConfiguration(t *testing.T) {
	fake, c, _ := setup(t)
	fake.Register("cfgfn", func(context.Context, []byte) ([]byte, error) { return nil, nil })
	ctx := ctxT(t, 5*time.Second)
	out, err := c.GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String("cfgfn")})
	if err != nil || aws.ToString(out.FunctionArn) != lambdafake.FunctionARN("cfgfn") || aws.ToString(out.FunctionName) != "cfgfn" ||
		aws.ToString(out.Version) != "$LATEST" || out.State != types.StateActive {
		t.Fatalf("configuration: %+v %v", out, err)
	}
	out, err = c.GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String("cfgfn"), Qualifier: aws.String("$LATEST")})
	if err != nil || aws.ToString(out.FunctionArn) != lambdafake.FunctionARN("cfgfn")+":$LATEST" {
		t.Fatalf("configuration of $LATEST: %+v %v", out, err)
	}
	_, err = c.GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String("nofn")})
	if !errors.As(err, new(*types.ResourceNotFoundException)) {
		t.Fatalf("absent function: %v", err)
	}
}

// By default an ARN of another account, region or partition, or any qualifier, runs the
// registered function; WithStrictARNs refuses each as a function the fake does not have,
// and still runs the function by its name, its own ARN, and $LATEST.
func TestStrictARNs(t *testing.T) {
	others := []string{
		"arn:aws:lambda:us-east-1:210987654321:function:sfn",
		"arn:aws:lambda:eu-west-1:123456789012:function:sfn",
		"arn:aws-cn:lambda:us-east-1:123456789012:function:sfn",
		"210987654321:function:sfn",
		lambdafake.FunctionARN("sfn") + ":7",
		lambdafake.FunctionARN("sfn") + ":old",
		"sfn:live",
	}
	own := []string{"sfn", lambdafake.FunctionARN("sfn"), lambdafake.FunctionARN("sfn") + ":$LATEST", "123456789012:function:sfn"}
	h := func(context.Context, []byte) ([]byte, error) { return nil, nil }
	ctx := ctxT(t, 5*time.Second)

	lax, c, _ := setup(t)
	lax.Register("sfn", h)
	for _, name := range others {
		if _, err := c.Invoke(ctx, invoke(name, []byte(`{}`))); err != nil {
			t.Errorf("lax %s: %v", name, err)
		}
	}

	strict, c, _ := setup(t, lambdafake.WithStrictARNs())
	strict.Register("sfn", h)
	for _, name := range others {
		_, err := c.Invoke(ctx, event(name, []byte(`{}`)))
		var nf *types.ResourceNotFoundException
		if !errors.As(err, &nf) || !strings.Contains(aws.ToString(nf.Message), "Function not found: arn:") {
			t.Errorf("strict Invoke %s: %v", name, err)
		}
		_, err = c.GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String(name)})
		if !errors.As(err, new(*types.ResourceNotFoundException)) {
			t.Errorf("strict GetFunctionConfiguration %s: %v", name, err)
		}
	}
	if _, err := c.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("sfn"), Qualifier: aws.String("7"), Payload: []byte(`{}`)}); !errors.As(err, new(*types.ResourceNotFoundException)) {
		t.Errorf("strict ?Qualifier=7: %v", err)
	}
	for _, name := range own {
		if _, err := c.Invoke(ctx, invoke(name, []byte(`{}`))); err != nil {
			t.Errorf("strict own %s: %v", name, err)
		}
	}
	if n := len(strict.Invocations()); n != len(own) {
		t.Errorf("strict ran %d invocations, want %d", n, len(own))
	}
}
