package continuation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/archmax-ai/archmax/core/clock"
)

// Invoker is the part of *lambda.Client a LambdaStarter uses.
type Invoker interface {
	Invoke(ctx context.Context, in *lambda.InvokeInput, optFns ...func(*lambda.Options)) (*lambda.InvokeOutput, error)
}

// LambdaStarter starts a continuation as an asynchronous invocation (InvocationType Event)
// of Function — in the bundle, the function itself (AWS_LAMBDA_FUNCTION_NAME), which needs
// lambda:InvokeFunction on its own ARN. Lambda queues the event and retries a failed
// invocation twice.
type LambdaStarter struct {
	client   Invoker
	function string
}

// NewLambdaStarter returns a LambdaStarter invoking function (a name or ARN).
func NewLambdaStarter(client Invoker, function string) *LambdaStarter {
	return &LambdaStarter{client: client, function: function}
}

// Start implements Starter with one Invoke call; Lambda answers 202 when it queued the event.
func (s *LambdaStarter) Start(ctx context.Context, ref Ref) error {
	payload, err := json.Marshal(Event{Continue: &ref})
	if err != nil {
		return err
	}
	out, err := s.client.Invoke(ctx, &lambda.InvokeInput{
		FunctionName:   aws.String(s.function),
		InvocationType: types.InvocationTypeEvent,
		Payload:        payload,
	})
	if err != nil {
		return fmt.Errorf("invoke %s asynchronously: %w", s.function, err)
	}
	if out.StatusCode != 202 {
		return fmt.Errorf("invoke %s asynchronously: status %d, want 202", s.function, out.StatusCode)
	}
	return nil
}

// InProcess starts continuations as goroutines of this process (`archmax serve`, tests):
// each runs Runner.Handle under a fresh deadline of Timeout, and a failed one is retried
// after each of RetryDelays, as Lambda retries asynchronous invocations. Bind it to its
// Runner before the first Start.
type InProcess struct {
	Timeout     time.Duration   // one invocation's time (default 15 min, Lambda's maximum)
	RetryDelays []time.Duration // default 1 s, 5 s
	Log         *slog.Logger
	// Clock is nil in `archmax serve`: each invocation's context has the real deadline
	// now+Timeout. A test sets it to the Runner's fake clock (WithClock): each invocation then
	// carries the virtual deadline Clock.Now()+Timeout (WithInvocationDeadline) and no real
	// one, and the retry delays pass on Clock.
	Clock clock.Clock

	mu      sync.Mutex
	runner  *Runner
	wg      sync.WaitGroup
	started int
	stopped bool
	base    context.Context    // cancelled by Stop
	cancel  context.CancelFunc // cancels base
}

// ErrStopped: Start after Stop.
var ErrStopped = errors.New("in-process continuations are stopped")

// Bind sets the Runner whose Handle serves the continuations.
func (p *InProcess) Bind(r *Runner) {
	p.mu.Lock()
	p.runner = r
	p.mu.Unlock()
}

// Start implements Starter: the continuation runs in a new goroutine.
func (p *InProcess) Start(_ context.Context, ref Ref) error {
	p.mu.Lock()
	r, stopped := p.runner, p.stopped
	if p.base == nil {
		p.base, p.cancel = context.WithCancel(context.Background())
	}
	base := p.base
	if !stopped && r != nil {
		p.started++
		p.wg.Add(1)
	}
	p.mu.Unlock()
	switch {
	case stopped:
		return ErrStopped
	case r == nil:
		return fmt.Errorf("in-process continuations are not bound to a runner")
	}
	timeout, delays := p.Timeout, p.RetryDelays
	if timeout <= 0 {
		timeout = 15 * time.Minute
	}
	if delays == nil {
		delays = []time.Duration{time.Second, 5 * time.Second}
	}
	virtual := p.Clock
	go func() {
		defer p.wg.Done()
		for attempt := 0; ; attempt++ {
			var ctx context.Context
			cancel := func() {}
			if virtual != nil {
				ctx = WithInvocationDeadline(base, virtual.Now().Add(timeout))
			} else {
				ctx, cancel = context.WithTimeout(base, timeout)
			}
			_, err := r.Handle(ctx, ref)
			cancel()
			if err == nil || base.Err() != nil {
				return // done, or stopped: the turn is left interrupted for the next process
			}
			if attempt >= len(delays) {
				if p.Log != nil {
					p.Log.Error("continuation dropped after its retries", "sessionId", ref.SessionID, "turnId", ref.TurnID, "error", err.Error())
				}
				return
			}
			retry := make(chan struct{})
			t := clock.OrReal(virtual).AfterFunc(delays[attempt], func() { close(retry) })
			select {
			case <-retry:
			case <-base.Done():
				t.Stop()
				return
			}
		}
	}()
	return nil
}

// Stop cancels every running continuation — each commits what ran and releases its lease,
// leaving its turn interrupted for the next process (or the next message) to continue —
// drops pending retries, refuses new starts, and waits for them to end.
func (p *InProcess) Stop() {
	p.mu.Lock()
	p.stopped = true
	if p.cancel != nil {
		p.cancel()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// Started is how many continuations Start has accepted.
func (p *InProcess) Started() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.started
}

// Wait blocks until every started continuation (and those they started) has finished.
func (p *InProcess) Wait() { p.wg.Wait() }
