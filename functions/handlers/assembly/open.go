package assembly

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"

	"github.com/archmax-ai/archmax/core/host"
	"github.com/archmax-ai/archmax/core/metrics"
	"github.com/archmax-ai/archmax/core/model/bedrock"
	"github.com/archmax-ai/archmax/core/scheduler/eventbridge"
	"github.com/archmax-ai/archmax/core/session"
	ddbstore "github.com/archmax-ai/archmax/core/store/dynamodb"
	s3store "github.com/archmax-ai/archmax/core/store/s3"
	"github.com/archmax-ai/archmax/functions/handlers/access"
	"github.com/archmax-ai/archmax/functions/handlers/continuation"
	"github.com/archmax-ai/archmax/functions/handlers/tracing"
)

// Open builds the AWS assembly of cfg (DESIGN.md §3): the session log in DynamoDB table
// cfg.Table with large values as S3 blobs under <SessionPrefix><sessionId>/_blobs/, the
// authored tree read-only from <SpecPrefix> with the per-container ETag cache (and the host
// file <SpecPrefix>archmax.host.yaml read through it at every engine lookup, applied when it
// changes: host.Engines), session files and spec snapshots under <SessionPrefix>, and the
// Bedrock Converse client with
// cfg.ModelID as the default model, and — when cfg.Schedules() — the EventBridge
// Scheduler adapter for timed parks, and the continuation Runner (DESIGN.md §4) invoking
// cfg.ContinueFunction asynchronously (none when it is ""). It makes no AWS call; log
// receives the Runner's records (nil discards).
func Open(ctx context.Context, cfg Config, log *slog.Logger) (*Assembly, error) {
	var loadOpts []func(*config.LoadOptions) error
	if cfg.Region != "" {
		loadOpts = append(loadOpts, config.WithRegion(cfg.Region))
	}
	if cfg.Local() {
		loadOpts = append(loadOpts, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(cfg.AccessKeyID, cfg.SecretAccessKey, cfg.SessionToken)))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return nil, fmt.Errorf("load AWS configuration: %w", err)
	}
	ddb := dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) {
		if cfg.DynamoDBEndpoint != "" {
			o.BaseEndpoint = aws.String(cfg.DynamoDBEndpoint)
		}
	})
	s3c := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		// Objects written without a checksum (the console, older tools) are normal for
		// specs; do not log a line for each read of one.
		o.DisableLogOutputChecksumValidationSkipped = true
		if cfg.S3Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.S3Endpoint)
			o.UsePathStyle = true
		}
	})
	bc := bedrock.Config{Region: awsCfg.Region, Endpoint: cfg.BedrockEndpoint, Timeout: cmp.Or(cfg.ModelTimeout, continuation.DefaultModelTimeout),
		NoStreaming: cfg.NoStreaming, OnCall: metrics.ModelCall, OnThrottle: metrics.ModelThrottle}
	if cfg.Local() {
		bc.AccessKeyID, bc.SecretAccessKey, bc.SessionToken = cfg.AccessKeyID, cfg.SecretAccessKey, cfg.SessionToken
	}
	mdl, err := bedrock.New(ctx, bc)
	if err != nil {
		return nil, fmt.Errorf("bedrock client: %w", err)
	}
	blobs := s3store.NewBlobs(s3c, cfg.Bucket, cfg.SessionPrefix)
	var now func() time.Time // nil: the engine's and the adapter's default, time.Now
	if cfg.Clock != nil {
		now = cfg.Clock.Now
	}
	var sched session.Scheduler
	if cfg.Schedules() {
		sc := scheduler.NewFromConfig(awsCfg, func(o *scheduler.Options) {
			if cfg.SchedulerEndpoint != "" {
				o.BaseEndpoint = aws.String(cfg.SchedulerEndpoint)
			}
		})
		sched = eventbridge.New(sc, eventbridge.Config{Group: cfg.SchedulerGroup, TargetARN: cfg.WakeTargetARN, RoleARN: cfg.SchedulerRoleARN, DeadLetterARN: cfg.SchedulerDLQARN, Now: now})
	}
	for _, w := range cfg.PricingWarnings {
		if log != nil {
			log.Warn(w)
		}
	}
	engines := NewEngines(session.Config{
		Authored:  s3store.NewFiles(s3c, cfg.Bucket, cfg.SpecPrefix, s3store.WithETagCache(), s3store.ReadOnly()),
		Log:       ddbstore.New(ddb, cfg.Table, blobs),
		Files:     s3store.NewFiles(s3c, cfg.Bucket, cfg.SessionPrefix),
		Blobs:     blobs,
		Model:     mdl,
		ModelID:   cfg.ModelID,
		Pricing:   cfg.Pricing,
		Scheduler: sched,
		// retention from the last activity; the host file's section replaces it (host.Apply)
		SessionTTL: cfg.SessionTTL,
		Clock:      now,
		// spans of every call (nil: off); a flush ends each invocation (Assembly.Tracing)
		TracerProvider: cfg.Tracing.TracerProvider(),
	}, hostEnv(cfg, awsCfg, s3c, log))
	var starter continuation.Starter
	if cfg.ContinueFunction != "" {
		lc := lambda.NewFromConfig(awsCfg, func(o *lambda.Options) {
			if cfg.LambdaEndpoint != "" {
				o.BaseEndpoint = aws.String(cfg.LambdaEndpoint)
			}
		})
		starter = continuation.NewLambdaStarter(lc, cfg.ContinueFunction)
	}
	runner := continuation.NewRunner(engines, starter, continuation.Budget{ModelTimeout: bc.Timeout, Margin: cfg.ContinueMargin}, log,
		continuation.WithClock(cfg.Clock))
	return &Assembly{Engines: engines, Runner: runner, Access: cfg.Access, Tracing: cfg.Tracing}, nil
}

// Assembly is what a function builds once per warm container: the engine cache and the
// Runner its writing entry points run engine calls under.
type Assembly struct {
	Engines *host.Engines
	Runner  *continuation.Runner
	// Access is the HTTP API's access policy (httpapi.WithPolicy).
	Access access.Policy
	// Tracing is the trace export (nil: off); main wraps its handler in Traced.
	Tracing *tracing.Provider
}

// FromEnv is ConfigFromEnv then Open: the whole start-up of a function. It makes no AWS
// call. It also sets the process's Go memory limit (MemoryLimit). Errors: *ConfigError, or Open's.
func FromEnv(ctx context.Context, getenv func(string) string, log *slog.Logger) (*Assembly, error) {
	applyMemoryLimit(getenv)
	cfg, err := ConfigFromEnv(getenv)
	if err != nil {
		return nil, err
	}
	return Open(ctx, cfg, log)
}
