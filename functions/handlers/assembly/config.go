// Package assembly builds the engine of the Lambda functions from their configuration
// (DESIGN.md §3): the AWS clients, the session log in DynamoDB (large values as S3 blobs
// under the session prefix), the authored tree and the session files in S3, the Bedrock
// model client, and one *session.Engine per workflow per warm container.
package assembly

import (
	"cmp"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/archmax-ai/archmax/core/clock"
	"github.com/archmax-ai/archmax/core/hostconfig"
	"github.com/archmax-ai/archmax/core/model/bedrock"
	"github.com/archmax-ai/archmax/core/pricing"
	"github.com/archmax-ai/archmax/functions/handlers/access"
	"github.com/archmax-ai/archmax/functions/handlers/tracing"
)

// Environment variables read by ConfigFromEnv.
const (
	EnvTable            = "ARCHMAX_TABLE"             // DynamoDB table of the session log (required)
	EnvBucket           = "ARCHMAX_BUCKET"            // S3 bucket of specs and session files (required)
	EnvSpecPrefix       = "ARCHMAX_SPEC_PREFIX"       // key prefix of the authored tree (default "specs/")
	EnvSessionPrefix    = "ARCHMAX_SESSION_PREFIX"    // key prefix of session files and blobs (default "sessions/")
	EnvModel            = "ARCHMAX_MODEL"             // default Bedrock model id (required)
	EnvDynamoDBEndpoint = "ARCHMAX_DYNAMODB_ENDPOINT" // local/test only: e.g. DynamoDB Local
	EnvS3Endpoint       = "ARCHMAX_S3_ENDPOINT"       // local/test only: e.g. gofakes3 (path-style)
	EnvBedrockEndpoint  = "ARCHMAX_BEDROCK_ENDPOINT"  // local/test only: e.g. the Converse fake
	// Timed parks (DESIGN.md §5): with EnvWakeTargetARN and EnvSchedulerRoleARN set, every
	// park with a resumeAt gets an EventBridge Scheduler one-time schedule invoking the wake
	// function; without them only the sweep wakes parks.
	EnvSchedulerGroup    = "ARCHMAX_SCHEDULER_GROUP"    // schedule group ("" = "default")
	EnvWakeTargetARN     = "ARCHMAX_WAKE_TARGET_ARN"    // ARN of functions/wake
	EnvSchedulerRoleARN  = "ARCHMAX_SCHEDULER_ROLE_ARN" // role EventBridge Scheduler assumes to invoke it
	EnvSchedulerDLQARN   = "ARCHMAX_SCHEDULER_DLQ_ARN"  // SQS queue every schedule names as its dead letter queue (optional)
	EnvSchedulerEndpoint = "ARCHMAX_SCHEDULER_ENDPOINT" // local/test only: e.g. local/schedulerfake
	// EnvSessionTTL is the retention of a session from its last activity, <n>d or <n>h
	// (hostconfig.ParseRetention; the stack's sessionTtl): the host file's retention section
	// replaces it (RD22-10). Unset: sessions are kept until deleted.
	EnvSessionTTL = "ARCHMAX_SESSION_TTL"
	// Continuation past the invocation's deadline (DESIGN.md §4): a turn stops between
	// steps once less than EnvModelTimeout + EnvContinueMargin remains, and continues in an
	// asynchronous invocation of EnvContinueFunction (default: the function itself,
	// AWS_LAMBDA_FUNCTION_NAME). With no function to invoke (outside Lambda) every call
	// runs to its end and every request is answered when its work has settled.
	EnvModelTimeout     = "ARCHMAX_MODEL_TIMEOUT"     // one model call's bound incl. retries, Go duration (default 4m)
	EnvContinueMargin   = "ARCHMAX_CONTINUE_MARGIN"   // kept beyond it, Go duration (default 20s)
	EnvContinueFunction = "ARCHMAX_CONTINUE_FUNCTION" // name or ARN of the function continuations invoke
	EnvLambdaEndpoint   = "ARCHMAX_LAMBDA_ENDPOINT"   // local/test only: e.g. local/lambdafake
	// Model calls stream their text (ConverseStream, agent-text-delta events as it arrives)
	// unless EnvStreaming is "0" or "false": then every call is one Converse.
	EnvStreaming = bedrock.EnvStreaming
	// Who may do what on the HTTP API (functions/handlers/access, Issue 17): the roles'
	// JWT scopes are <prefix>decide and <prefix>admin; with IAM authorization the roles are
	// held by the principals listed (comma-separated role, user or account-root ARNs; an
	// assumed role is matched by its role, paths ignored); four-eyes makes the decider
	// differ from the session's starter.
	EnvJWTScopePrefix = "ARCHMAX_JWT_SCOPE_PREFIX" // default "archmax/"
	EnvIAMAdmins      = "ARCHMAX_IAM_ADMINS"       // IAM principals that read and act on every session
	EnvIAMDeciders    = "ARCHMAX_IAM_DECIDERS"     // IAM principals that read and decide sessions parked for a decision
	EnvFourEyes       = "ARCHMAX_FOUR_EYES"        // "1" or "true": the four-eyes rule on decisions (default off)
	// The host file the stack granted and uploaded (`make deploy WORKSPACE=…`): its
	// hostconfig.Digest, "none" for a workspace without one. A function that reads another
	// logs a warning (host.DeployedMismatch); unset, nothing is compared.
	EnvHostFileSHA256 = "ARCHMAX_HOST_FILE_SHA256"
)

// Defaults of the optional settings.
const (
	DefaultSpecPrefix    = "specs/"
	DefaultSessionPrefix = "sessions/"
	// DefaultLocalRegion is the region used with an endpoint override when the environment names none.
	DefaultLocalRegion = "us-east-1"
)

// Config is the assembly's configuration. Prefixes end in "/".
type Config struct {
	Table         string
	Bucket        string
	SpecPrefix    string
	SessionPrefix string
	ModelID       string
	// Pricing is the ARCHMAX_PRICE_* table (its default entry; nil when unset): the host
	// file's pricing section replaces it. PricingWarnings name the values ignored.
	Pricing         pricing.Table
	PricingWarnings []string
	// SessionTTL is ARCHMAX_SESSION_TTL (0 when unset): session.Config.SessionTTL unless
	// the host file has a retention section.
	SessionTTL time.Duration
	// Region is the AWS region ("" = the SDK's default chain; Lambda sets AWS_REGION).
	Region string
	// Endpoint overrides for local and test use. With any of them set the assembly is
	// local: every client uses the static credentials below (nothing is probed) and S3 is
	// addressed path-style.
	DynamoDBEndpoint, S3Endpoint, BedrockEndpoint, SchedulerEndpoint string
	// Scheduled wakes: all three empty, or WakeTargetARN and SchedulerRoleARN both set.
	SchedulerGroup, WakeTargetARN, SchedulerRoleARN string
	// SchedulerDLQARN is the dead letter queue of every schedule's target ("" = none).
	SchedulerDLQARN                            string
	AccessKeyID, SecretAccessKey, SessionToken string
	// ModelTimeout bounds one model call, retries included (0 = DefaultModelTimeout);
	// ContinueMargin is kept beyond it before the deadline (0 = continuation.DefaultMargin).
	ModelTimeout, ContinueMargin time.Duration
	// ContinueFunction is invoked asynchronously to continue a turn ("" = no continuation).
	ContinueFunction string
	LambdaEndpoint   string // local/test only
	// NoStreaming answers every model call through Converse (EnvStreaming=0).
	NoStreaming bool
	// Access is who may do what on the HTTP API (EnvJWTScopePrefix, EnvIAMAdmins,
	// EnvIAMDeciders, EnvFourEyes).
	Access access.Policy
	// HostFileSHA256 is the digest of the deployed host file (EnvHostFileSHA256; "" = no
	// check).
	HostFileSHA256 string
	// Clock is nil on AWS (the system clock; never from the environment). A test sets a
	// fake one: the engines, the Scheduler adapter's MinLead and the Runner's budget then
	// read it, and its invocations carry continuation.WithInvocationDeadline.
	Clock clock.Clock
	// Tracing is the trace export the OTEL_* variables ask for (tracing.FromEnv; nil: off):
	// the engines trace through it and every invocation flushes it.
	Tracing *tracing.Provider
}

// Local reports whether an endpoint override is set.
func (c Config) Local() bool {
	return c.DynamoDBEndpoint != "" || c.S3Endpoint != "" || c.BedrockEndpoint != "" || c.SchedulerEndpoint != "" || c.LambdaEndpoint != ""
}

// Schedules reports whether timed parks get an EventBridge Scheduler schedule.
func (c Config) Schedules() bool { return c.WakeTargetARN != "" }

// ConfigError is a configuration the functions cannot start with: Missing lists the unset
// required variables, Invalid one line per malformed value.
type ConfigError struct {
	Missing []string
	Invalid []string
}

func (e *ConfigError) Error() string {
	var parts []string
	if len(e.Missing) > 0 {
		parts = append(parts, "missing "+strings.Join(e.Missing, ", "))
	}
	parts = append(parts, e.Invalid...)
	return "archmax configuration: " + strings.Join(parts, "; ")
}

// ConfigFromEnv reads the configuration through getenv (os.Getenv in main). It fails with
// *ConfigError naming every unset required variable (ARCHMAX_TABLE, ARCHMAX_BUCKET,
// ARCHMAX_MODEL; and with an endpoint override AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY), every endpoint that is not an absolute http(s) URL, and a wake
// target without a scheduler role (or the reverse).
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	get := func(k string) string { return strings.TrimSpace(getenv(k)) }
	c := Config{
		Table:             get(EnvTable),
		Bucket:            get(EnvBucket),
		SpecPrefix:        prefix(getenv, EnvSpecPrefix, DefaultSpecPrefix),
		SessionPrefix:     prefix(getenv, EnvSessionPrefix, DefaultSessionPrefix),
		ModelID:           get(EnvModel),
		Region:            get("AWS_REGION"),
		DynamoDBEndpoint:  get(EnvDynamoDBEndpoint),
		S3Endpoint:        get(EnvS3Endpoint),
		BedrockEndpoint:   get(EnvBedrockEndpoint),
		SchedulerEndpoint: get(EnvSchedulerEndpoint),
		SchedulerGroup:    get(EnvSchedulerGroup),
		WakeTargetARN:     get(EnvWakeTargetARN),
		SchedulerRoleARN:  get(EnvSchedulerRoleARN),
		SchedulerDLQARN:   get(EnvSchedulerDLQARN),
		ContinueFunction:  cmp.Or(get(EnvContinueFunction), get("AWS_LAMBDA_FUNCTION_NAME")),
		LambdaEndpoint:    get(EnvLambdaEndpoint),
		Access:            access.Policy{ScopePrefix: get(EnvJWTScopePrefix)},
		HostFileSHA256:    get(EnvHostFileSHA256),
	}
	if c.Region == "" {
		c.Region = get("AWS_DEFAULT_REGION")
	}
	c.Pricing, c.PricingWarnings = pricing.FromEnv(getenv)
	cerr := &ConfigError{}
	c.Tracing, cerr.Invalid = tracingFromEnv(getenv, cerr.Invalid)
	required := []string{EnvTable, EnvBucket, EnvModel}
	if c.Local() {
		c.AccessKeyID, c.SecretAccessKey, c.SessionToken = get("AWS_ACCESS_KEY_ID"), get("AWS_SECRET_ACCESS_KEY"), get("AWS_SESSION_TOKEN")
		required = append(required, "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
		if c.Region == "" {
			c.Region = DefaultLocalRegion
		}
	}
	for _, k := range required {
		if get(k) == "" {
			cerr.Missing = append(cerr.Missing, k)
		}
	}
	for _, l := range []struct {
		name string
		into *[]string
	}{{EnvIAMAdmins, &c.Access.IAMAdmins}, {EnvIAMDeciders, &c.Access.IAMDeciders}} {
		list, err := access.ParseIAMPrincipals(get(l.name))
		if err != nil {
			cerr.Invalid = append(cerr.Invalid, fmt.Sprintf("%s: %v", l.name, err))
		}
		*l.into = list
	}
	switch v := strings.ToLower(get(EnvFourEyes)); v {
	case "", "0", "false":
	case "1", "true":
		c.Access.FourEyes = true
	default:
		cerr.Invalid = append(cerr.Invalid, fmt.Sprintf("%s=%q is not 1, true, 0 or false", EnvFourEyes, v))
	}
	if h := c.HostFileSHA256; h != "" && h != hostconfig.NoFile && !sha256Hex.MatchString(h) {
		cerr.Invalid = append(cerr.Invalid, fmt.Sprintf("%s=%q is not a SHA-256 in hex (64 of 0-9a-f) or %q", EnvHostFileSHA256, h, hostconfig.NoFile))
	}
	if on, err := bedrock.StreamingFromEnv(get); err != nil {
		cerr.Invalid = append(cerr.Invalid, err.Error())
	} else {
		c.NoStreaming = !on
	}
	if v := get(EnvSessionTTL); v != "" {
		if d, err := hostconfig.ParseRetention(v); err != nil {
			cerr.Invalid = append(cerr.Invalid, fmt.Sprintf("%s: %v", EnvSessionTTL, err))
		} else {
			c.SessionTTL = d
		}
	}
	if (c.WakeTargetARN == "") != (c.SchedulerRoleARN == "") {
		cerr.Invalid = append(cerr.Invalid, fmt.Sprintf("%s and %s are set together or not at all", EnvWakeTargetARN, EnvSchedulerRoleARN))
	}
	for _, d := range []struct {
		name string
		into *time.Duration
	}{{EnvModelTimeout, &c.ModelTimeout}, {EnvContinueMargin, &c.ContinueMargin}} {
		v := get(d.name)
		if v == "" {
			continue
		}
		if n, err := time.ParseDuration(v); err != nil || n <= 0 {
			cerr.Invalid = append(cerr.Invalid, fmt.Sprintf("%s=%q is not a positive duration (e.g. 4m, 20s)", d.name, v))
		} else {
			*d.into = n
		}
	}
	for _, ep := range []struct{ name, value string }{
		{EnvDynamoDBEndpoint, c.DynamoDBEndpoint}, {EnvS3Endpoint, c.S3Endpoint}, {EnvBedrockEndpoint, c.BedrockEndpoint},
		{EnvSchedulerEndpoint, c.SchedulerEndpoint}, {EnvLambdaEndpoint, c.LambdaEndpoint},
	} {
		if ep.value == "" {
			continue
		}
		if u, err := url.Parse(ep.value); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			cerr.Invalid = append(cerr.Invalid, fmt.Sprintf("%s=%q is not an http(s) URL", ep.name, ep.value))
		}
	}
	if len(cerr.Missing) > 0 || len(cerr.Invalid) > 0 {
		return Config{}, cerr
	}
	return c, nil
}

// sha256Hex is hostconfig.Digest's form of a file's digest.
var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// prefix reads a key prefix: unset or blank means def, and a missing trailing "/" is
// added ("specs" → "specs/").
func prefix(getenv func(string) string, key, def string) string {
	p := strings.TrimSpace(getenv(key))
	switch {
	case p == "":
		return def
	case strings.HasSuffix(p, "/"):
		return p
	default:
		return p + "/"
	}
}
