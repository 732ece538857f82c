// Package bedrock implements model.Client on Amazon Bedrock's Converse API
// (bedrockruntime.Converse, DESIGN.md §6), and model.StreamClient on ConverseStream.
package bedrock

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/archmax-ai/archmax/core/model"
)

// DefaultMaxAttempts is the attempts per call (first try included) when Config.MaxAttempts is 0.
const DefaultMaxAttempts = 4

// Config configures a Client.
type Config struct {
	// Region is the AWS region; required with static credentials, otherwise it may come
	// from the default chain (AWS_REGION, shared config).
	Region string
	// Endpoint overrides the service URL (e.g. a local Converse fake); "" uses the
	// region's Bedrock runtime endpoint.
	Endpoint string
	// AccessKeyID, SecretAccessKey and SessionToken are static credentials. With
	// AccessKeyID set the default credential chain is never consulted, so nothing is
	// probed (no IMDS, no shared files).
	AccessKeyID, SecretAccessKey, SessionToken string
	// MaxAttempts bounds the attempts per call, first try included (default 4).
	MaxAttempts int
	// MaxBackoff caps the jittered exponential delay between attempts (default 20s).
	MaxBackoff time.Duration
	// HTTPClient sends the requests; nil uses the SDK's default.
	HTTPClient *http.Client
	// Timeout bounds one Converse call, every attempt and backoff included (0 = none): the
	// "one model call's timeout" a host keeps free before its deadline (DESIGN.md §4).
	Timeout time.Duration
	// NoStreaming makes ConverseStream answer through Converse: the answer arrives whole
	// (ARCHMAX_STREAMING=0, StreamingFromEnv). Streaming is on by default.
	NoStreaming bool
	// OnCall, when set, is called once at the end of every Converse and ConverseStream call
	// with the call's context, its duration (every attempt and backoff included) and its
	// error (nil on success; also a request refused before sending). A host meters its model
	// calls with it (core/metrics.ModelCall, MT22-3).
	OnCall func(ctx context.Context, took time.Duration, err error)
	// OnThrottle, when set, is called with the call's context for every attempt Bedrock
	// answered with ThrottlingException or HTTP 429 — retried ones included, and a
	// throttlingException inside a ConverseStream answer (core/metrics.ModelThrottle).
	OnThrottle func(ctx context.Context)
}

// retryableCodes are the Bedrock errors worth another attempt (research D.6); every other
// error code (ValidationException, AccessDeniedException, ResourceNotFoundException, …)
// fails at once.
var retryableCodes = map[string]struct{}{
	"ThrottlingException":         {},
	"ModelNotReadyException":      {},
	"ModelTimeoutException":       {},
	"InternalServerException":     {},
	"ServiceUnavailableException": {},
}

// retryableStatuses are the 5xx statuses retried whatever their error code.
var retryableStatuses = map[int]struct{}{500: {}, 502: {}, 503: {}, 504: {}}

// Client calls Bedrock Converse. It is safe for concurrent use.
type Client struct {
	api         *bedrockruntime.Client
	retryer     aws.Retryer
	timeout     time.Duration
	maxAttempts int
	noStreaming bool
	onCall      func(context.Context, time.Duration, error)
	onThrottle  func(context.Context)
}

var _ model.StreamClient = (*Client)(nil)

// New builds a Client. With static credentials it assembles the aws.Config itself (no
// shared-config or credential probing, no network); otherwise it loads the default chain
// with config.LoadDefaultConfig, whose credential lookup is lazy. Endpoint, when set, is the
// explicit BaseEndpoint. The SDK's standard retryer is configured with our policy and is the
// only retry layer: MaxAttempts attempts, jittered exponential backoff capped at
// MaxBackoff, retrying the codes in retryableCodes, 5xx statuses and connection errors,
// with no client-side retry quota.
func New(ctx context.Context, cfg Config) (*Client, error) {
	if cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	if cfg.MaxBackoff == 0 {
		cfg.MaxBackoff = retry.DefaultMaxBackoff
	}
	if cfg.MaxAttempts < 1 || cfg.MaxBackoff < 0 {
		return nil, fmt.Errorf("bedrock: MaxAttempts %d and MaxBackoff %s must be positive", cfg.MaxAttempts, cfg.MaxBackoff)
	}
	var awsCfg aws.Config
	if cfg.AccessKeyID != "" {
		awsCfg = aws.Config{
			Region:      cfg.Region,
			Credentials: credentials.NewStaticCredentialsProvider(cfg.AccessKeyID, cfg.SecretAccessKey, cfg.SessionToken),
		}
		if cfg.HTTPClient != nil {
			awsCfg.HTTPClient = cfg.HTTPClient
		}
	} else {
		var opts []func(*config.LoadOptions) error
		if cfg.Region != "" {
			opts = append(opts, config.WithRegion(cfg.Region))
		}
		if cfg.HTTPClient != nil {
			opts = append(opts, config.WithHTTPClient(cfg.HTTPClient))
		}
		var err error
		if awsCfg, err = config.LoadDefaultConfig(ctx, opts...); err != nil {
			return nil, fmt.Errorf("bedrock: load AWS config: %w", err)
		}
	}
	if awsCfg.Region == "" {
		return nil, errors.New("bedrock: no region: set Config.Region or AWS_REGION")
	}
	if cfg.Endpoint != "" {
		awsCfg.BaseEndpoint = aws.String(cfg.Endpoint)
	}
	if awsCfg.HTTPClient == nil {
		awsCfg.HTTPClient = awshttp.NewBuildableClient()
	}
	awsCfg.HTTPClient = ownBody{awsCfg.HTTPClient}
	retryer := retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = cfg.MaxAttempts
		o.MaxBackoff = cfg.MaxBackoff
		o.RateLimiter = ratelimit.None
		o.Retryables = []retry.IsErrorRetryable{
			retry.NoRetryCanceledError{},
			noRetryQuota{},
			retry.RetryableConnectionError{},
			retry.RetryableHTTPStatusCode{Codes: retryableStatuses},
			retry.RetryableErrorCode{Codes: retryableCodes},
		}
		o.Throttles = []retry.IsErrorThrottle{
			retry.ThrottleErrorCode{Codes: map[string]struct{}{"ThrottlingException": {}}},
		}
	})
	awsCfg.Retryer = func() aws.Retryer { return retryer }
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("bedrock: Timeout %s must not be negative", cfg.Timeout)
	}
	return &Client{api: bedrockruntime.NewFromConfig(awsCfg), retryer: retryer, timeout: cfg.Timeout,
		maxAttempts: cfg.MaxAttempts, noStreaming: cfg.NoStreaming, onCall: cfg.OnCall, onThrottle: cfg.OnThrottle}, nil
}

// Converse sends req to Bedrock Converse and maps the answer (DESIGN.md §6). With
// Config.Timeout the call (all attempts) is bounded; running out is a retryable
// *model.CallError with Code "ModelCallTimeout".
//
// req.Metadata keys and values are sanitised (model.SanitizeMetadataValue) before anything
// else; the request is then checked with model.ValidateRequest and a refusal is returned as
// the *model.InvalidRequestError without calling the service. Failures after the retry
// policy are *model.CallError with the Bedrock error code, HTTP status, message, whether the
// error was retryable, and the attempts made.
//
// Response.Usage.InputTokens is the inclusive total (spec 02 §11.1): Bedrock's inputTokens
// excludes prompt-cache reads and writes, so both are added back. A "max_tokens" stop whose
// last block is a half-written toolUse is returned as is; the engine drops that call and
// never executes or checkpoints it. Content blocks other than text and toolUse (e.g.
// reasoning) are not mapped.
func (c *Client) Converse(ctx context.Context, req *model.Request) (resp *model.Response, err error) {
	defer c.called(ctx, time.Now())(&err)
	r, in, err := prepare(req)
	if err != nil {
		return nil, err
	}
	callCtx, cancel := c.bound(ctx)
	defer cancel()
	var attempts atomic.Int32
	out, err := c.api.Converse(callCtx, in, func(o *bedrockruntime.Options) {
		o.APIOptions = append(o.APIOptions, countAttempts(&attempts), c.observeThrottles)
	})
	if err != nil {
		return nil, c.failed(ctx, callCtx, err, int(attempts.Load()))
	}
	resp, err = fromOutput(out)
	if err != nil {
		return nil, err
	}
	resp.ModelID = r.ModelID
	return resp, nil
}

// prepare sanitises req's metadata, checks the request (model.ValidateRequest: a refusal is
// the *model.InvalidRequestError, and nothing is sent) and maps it onto ConverseInput.
func prepare(req *model.Request) (*model.Request, *bedrockruntime.ConverseInput, error) {
	r := *req
	if len(req.Metadata) > 0 {
		r.Metadata = make(map[string]string, len(req.Metadata))
		for k, v := range req.Metadata {
			r.Metadata[model.SanitizeMetadataValue(k)] = model.SanitizeMetadataValue(v)
		}
	}
	if err := model.ValidateRequest(&r); err != nil {
		return nil, nil, err
	}
	in, err := toInput(&r)
	if err != nil {
		return nil, nil, err
	}
	return &r, in, nil
}

// bound is ctx with the call's Config.Timeout, when there is one.
func (c *Client) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if c.timeout > 0 {
		return context.WithTimeout(ctx, c.timeout)
	}
	return ctx, func() {}
}

// failed maps a call's error onto *model.CallError; running out of the client's own bound
// (callCtx, not the caller's ctx) is a retryable "ModelCallTimeout".
func (c *Client) failed(ctx, callCtx context.Context, err error, attempts int) *model.CallError {
	ce := c.callError(err, attempts)
	if ctx.Err() == nil && callCtx.Err() != nil { // our own bound, not the caller's
		ce.Code, ce.Message, ce.Retryable = "ModelCallTimeout", fmt.Sprintf("the model call did not finish within %s", c.timeout), true
	}
	return ce
}

// countAttempts adds a finalize-step middleware, inside the retry loop, that counts the
// attempts of one call.
func countAttempts(n *atomic.Int32) func(*middleware.Stack) error {
	return func(stack *middleware.Stack) error {
		return stack.Finalize.Insert(middleware.FinalizeMiddlewareFunc("archmaxCountAttempts",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				n.Add(1)
				return next.HandleFinalize(ctx, in)
			}), "Retry", middleware.After)
	}
}

// called returns what reports one call to Config.OnCall when it ends (deferred with the
// call's start and its named error).
func (c *Client) called(ctx context.Context, start time.Time) func(*error) {
	return func(err *error) {
		if c.onCall != nil {
			c.onCall(ctx, time.Since(start), *err)
		}
	}
}

// observeThrottles adds a finalize-step middleware, inside the retry loop, that reports
// each attempt answered ThrottlingException or HTTP 429 to Config.OnThrottle.
func (c *Client) observeThrottles(stack *middleware.Stack) error {
	if c.onThrottle == nil {
		return nil
	}
	return stack.Finalize.Insert(middleware.FinalizeMiddlewareFunc("archmaxObserveThrottles",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			out, md, err := next.HandleFinalize(ctx, in)
			if err != nil && throttled(err) {
				c.onThrottle(ctx)
			}
			return out, md, err
		}), "Retry", middleware.After)
}

// throttled reports whether err is Bedrock's ThrottlingException or an HTTP 429.
func throttled(err error) bool {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) && strings.EqualFold(apiErr.ErrorCode(), "ThrottlingException") {
		return true
	}
	var respErr *smithyhttp.ResponseError
	return errors.As(err, &respErr) && respErr.HTTPStatusCode() == http.StatusTooManyRequests
}

func (c *Client) callError(err error, attempts int) *model.CallError {
	ce := &model.CallError{Code: "RequestError", Message: err.Error(), Attempts: attempts, Err: err}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		ce.Code, ce.Message = apiErr.ErrorCode(), apiErr.ErrorMessage()
	}
	var respErr *smithyhttp.ResponseError
	if errors.As(err, &respErr) {
		ce.Status = respErr.HTTPStatusCode()
	}
	ce.Retryable = c.retryer.IsErrorRetryable(err)
	if model.IsQuotaExhausted(ce.Code, ce.Message) {
		ce.Quota, ce.Retryable = true, false
	}
	return ce
}

// noRetryQuota stops the retryer on a quota used up for a long while (a daily token quota
// answers ThrottlingException like a burst does): retrying it only spends attempts
// (docs/DECISIONS.md R18-5).
type noRetryQuota struct{}

func (noRetryQuota) IsErrorRetryable(err error) aws.Ternary {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) && model.IsQuotaExhausted(apiErr.ErrorCode(), apiErr.ErrorMessage()) {
		return aws.FalseTernary
	}
	return aws.UnknownTernary
}

// ownBody gives the transport a request body of its own. The SDK closes the body it built
// as soon as the response headers are in; when the transport still reads it then (the
// check for bytes past Content-Length), the read fails and the transport closes the
// connection — under a ConverseStream answer still arriving ("use of closed network
// connection", aws/aws-sdk-go-v2#2737). The body is in memory already (it was signed).
type ownBody struct{ c aws.HTTPClient }

func (o ownBody) Do(r *http.Request) (*http.Response, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return o.c.Do(r)
	}
	b, err := io.ReadAll(r.Body)
	_ = r.Body.Close()
	if err != nil {
		return nil, err
	}
	own := r.Clone(r.Context())
	own.Body = io.NopCloser(bytes.NewReader(b))
	own.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	return o.c.Do(own)
}
