package assembly

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/pricing"
)

func env(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

func TestConfigFromEnv(t *testing.T) {
	base := map[string]string{EnvTable: "archmax", EnvBucket: "archmax-data", EnvModel: "us.anthropic.claude-sonnet-4-5-20250929-v1:0"}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	cases := []struct {
		name string
		env  map[string]string
		want Config
	}{
		{"production defaults", with(map[string]string{"AWS_REGION": "eu-west-1"}), Config{
			Table: "archmax", Bucket: "archmax-data", SpecPrefix: "specs/", SessionPrefix: "sessions/",
			ModelID: base[EnvModel], Region: "eu-west-1"}},
		{"prefixes get a trailing slash", with(map[string]string{EnvSpecPrefix: "authored", EnvSessionPrefix: "runs/v1/"}), Config{
			Table: "archmax", Bucket: "archmax-data", SpecPrefix: "authored/", SessionPrefix: "runs/v1/", ModelID: base[EnvModel]}},
		{"AWS_DEFAULT_REGION is a fallback", with(map[string]string{"AWS_DEFAULT_REGION": "us-west-2"}), Config{
			Table: "archmax", Bucket: "archmax-data", SpecPrefix: "specs/", SessionPrefix: "sessions/", ModelID: base[EnvModel], Region: "us-west-2"}},
		{"local endpoints take static credentials and a default region", with(map[string]string{
			EnvDynamoDBEndpoint: "http://127.0.0.1:8000", EnvS3Endpoint: "http://127.0.0.1:9000", EnvBedrockEndpoint: "http://127.0.0.1:9100",
			"AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_SESSION_TOKEN": "tok"}), Config{
			Table: "archmax", Bucket: "archmax-data", SpecPrefix: "specs/", SessionPrefix: "sessions/", ModelID: base[EnvModel],
			Region: DefaultLocalRegion, DynamoDBEndpoint: "http://127.0.0.1:8000", S3Endpoint: "http://127.0.0.1:9000",
			BedrockEndpoint: "http://127.0.0.1:9100", AccessKeyID: "local", SecretAccessKey: "secret", SessionToken: "tok"}},
		{"scheduled wakes", with(map[string]string{EnvWakeTargetARN: "arn:aws:lambda:eu-west-1:1:function:wake",
			EnvSchedulerRoleARN: "arn:aws:iam::1:role/sched", EnvSchedulerGroup: "archmax",
			EnvSchedulerDLQARN: "arn:aws:sqs:eu-west-1:1:archmax-schedules-dlq"}), Config{
			Table: "archmax", Bucket: "archmax-data", SpecPrefix: "specs/", SessionPrefix: "sessions/", ModelID: base[EnvModel],
			WakeTargetARN: "arn:aws:lambda:eu-west-1:1:function:wake", SchedulerRoleARN: "arn:aws:iam::1:role/sched", SchedulerGroup: "archmax",
			SchedulerDLQARN: "arn:aws:sqs:eu-west-1:1:archmax-schedules-dlq"}},
		{"continuation: the function itself, with its time budget (DESIGN.md §4)", with(map[string]string{
			"AWS_LAMBDA_FUNCTION_NAME": "archmax-turn", EnvModelTimeout: "90s", EnvContinueMargin: "15s"}), Config{
			Table: "archmax", Bucket: "archmax-data", SpecPrefix: "specs/", SessionPrefix: "sessions/", ModelID: base[EnvModel],
			ContinueFunction: "archmax-turn", ModelTimeout: 90 * time.Second, ContinueMargin: 15 * time.Second}},
		{"an explicit continuation function wins", with(map[string]string{
			"AWS_LAMBDA_FUNCTION_NAME": "archmax-turn", EnvContinueFunction: "arn:aws:lambda:eu-west-1:1:function:worker"}), Config{
			Table: "archmax", Bucket: "archmax-data", SpecPrefix: "specs/", SessionPrefix: "sessions/", ModelID: base[EnvModel],
			ContinueFunction: "arn:aws:lambda:eu-west-1:1:function:worker"}},
		{"the deployed host file's digest (the stack's)", with(map[string]string{EnvHostFileSHA256: strings.Repeat("0a", 32)}), Config{
			Table: "archmax", Bucket: "archmax-data", SpecPrefix: "specs/", SessionPrefix: "sessions/", ModelID: base[EnvModel],
			HostFileSHA256: strings.Repeat("0a", 32)}},
		{"deployed without a host file", with(map[string]string{EnvHostFileSHA256: "none"}), Config{
			Table: "archmax", Bucket: "archmax-data", SpecPrefix: "specs/", SessionPrefix: "sessions/", ModelID: base[EnvModel],
			HostFileSHA256: "none"}},
		{"streaming switched off", with(map[string]string{EnvStreaming: "0"}), Config{
			Table: "archmax", Bucket: "archmax-data", SpecPrefix: "specs/", SessionPrefix: "sessions/", ModelID: base[EnvModel],
			NoStreaming: true}},
		{"streaming on, as by default", with(map[string]string{EnvStreaming: "true"}), Config{
			Table: "archmax", Bucket: "archmax-data", SpecPrefix: "specs/", SessionPrefix: "sessions/", ModelID: base[EnvModel]}},
		{"credentials are ignored without an endpoint", with(map[string]string{"AWS_ACCESS_KEY_ID": "AKIA", "AWS_SECRET_ACCESS_KEY": "s"}), Config{
			Table: "archmax", Bucket: "archmax-data", SpecPrefix: "specs/", SessionPrefix: "sessions/", ModelID: base[EnvModel]}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ConfigFromEnv(env(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestConfigFromEnvRefusesUnusableConfiguration(t *testing.T) {
	cases := []struct {
		name    string
		env     map[string]string
		missing []string
		invalid string
	}{
		{"nothing set", map[string]string{}, []string{EnvTable, EnvBucket, EnvModel}, ""},
		{"blank values count as unset", map[string]string{EnvTable: " ", EnvBucket: "b", EnvModel: "m"}, []string{EnvTable}, ""},
		{"an endpoint needs static credentials", map[string]string{EnvTable: "t", EnvBucket: "b", EnvModel: "m",
			EnvS3Endpoint: "http://127.0.0.1:9000"}, []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"}, ""},
		{"an endpoint must be a URL", map[string]string{EnvTable: "t", EnvBucket: "b", EnvModel: "m",
			EnvDynamoDBEndpoint: "127.0.0.1:8000", "AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "s"}, nil, EnvDynamoDBEndpoint},
		{"a model timeout must be a positive duration", map[string]string{EnvTable: "t", EnvBucket: "b", EnvModel: "m",
			EnvModelTimeout: "90"}, nil, EnvModelTimeout},
		{"a continue margin must be positive", map[string]string{EnvTable: "t", EnvBucket: "b", EnvModel: "m",
			EnvContinueMargin: "-5s"}, nil, EnvContinueMargin},
		{"a wake target needs the scheduler role", map[string]string{EnvTable: "t", EnvBucket: "b", EnvModel: "m",
			EnvWakeTargetARN: "arn:aws:lambda:eu-west-1:1:function:wake"}, nil, EnvSchedulerRoleARN},
		{"an IAM role holder must be a principal ARN", map[string]string{EnvTable: "t", EnvBucket: "b", EnvModel: "m",
			EnvIAMDeciders: "arn:aws:iam::1:role/ok, approvers"}, nil, EnvIAMDeciders},
		{"streaming is a boolean", map[string]string{EnvTable: "t", EnvBucket: "b", EnvModel: "m", EnvStreaming: "sometimes"}, nil, EnvStreaming},
		{"four-eyes is a boolean", map[string]string{EnvTable: "t", EnvBucket: "b", EnvModel: "m", EnvFourEyes: "yes please"}, nil, EnvFourEyes},
		{"a session TTL is <n>d or <n>h", map[string]string{EnvTable: "t", EnvBucket: "b", EnvModel: "m", EnvSessionTTL: "30 days"}, nil, EnvSessionTTL},
		{"the host file's digest is a SHA-256 in hex", map[string]string{EnvTable: "t", EnvBucket: "b", EnvModel: "m",
			EnvHostFileSHA256: strings.Repeat("0A", 32)}, nil, EnvHostFileSHA256},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ConfigFromEnv(env(tc.env))
			var cerr *ConfigError
			if !errors.As(err, &cerr) {
				t.Fatalf("err = %v, want *ConfigError", err)
			}
			if !reflect.DeepEqual(cerr.Missing, tc.missing) {
				t.Errorf("missing = %v, want %v", cerr.Missing, tc.missing)
			}
			if tc.invalid != "" && (len(cerr.Invalid) != 1 || !strings.Contains(cerr.Invalid[0], tc.invalid)) {
				t.Errorf("invalid = %v, want one naming %s", cerr.Invalid, tc.invalid)
			}
			for _, m := range tc.missing {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("message %q does not name %s", err, m)
				}
			}
		})
	}
}

// Issue 17: the access settings: JWT scope prefix, IAM role holders (normalised), four-eyes.
func TestConfigFromEnvAccess(t *testing.T) {
	c, err := ConfigFromEnv(env(map[string]string{EnvTable: "t", EnvBucket: "b", EnvModel: "m"}))
	if err != nil || c.Access.ScopePrefix != "" || c.Access.FourEyes || c.Access.IAMAdmins != nil || c.Access.IAMDeciders != nil {
		t.Fatalf("defaults: %+v, %v", c.Access, err)
	}
	c, err = ConfigFromEnv(env(map[string]string{EnvTable: "t", EnvBucket: "b", EnvModel: "m",
		EnvJWTScopePrefix: "https://api.example.com/", EnvFourEyes: "TRUE",
		EnvIAMAdmins:   "arn:aws:iam::123456789012:role/platform/ops",
		EnvIAMDeciders: "arn:aws:iam::123456789012:role/approvers, arn:aws:iam::123456789012:user/bob"}))
	if err != nil {
		t.Fatal(err)
	}
	if a := c.Access; a.ScopePrefix != "https://api.example.com/" || !a.FourEyes ||
		!reflect.DeepEqual(a.IAMAdmins, []string{"arn:aws:iam::123456789012:role/ops"}) ||
		!reflect.DeepEqual(a.IAMDeciders, []string{"arn:aws:iam::123456789012:role/approvers", "arn:aws:iam::123456789012:user/bob"}) {
		t.Errorf("access = %+v", a)
	}
}

// ARCHMAX_PRICE_* make the default entry of the pricing table; a value that is not a price is
// ignored with a warning, never a refusal of the configuration.
func TestConfigFromEnvPricing(t *testing.T) {
	env := map[string]string{EnvTable: "archmax", EnvBucket: "archmax-data", EnvModel: "m",
		pricing.EnvInput: "3", pricing.EnvOutput: "15", pricing.EnvCacheRead: "cheap"}
	c, err := ConfigFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if cost, ok := c.Pricing.Cost("any", pricing.Usage{Input: 1000, Output: 100, CacheRead: 1000}); !ok || cost != 0.0045 {
		t.Errorf("cost %v %v, want 0.0045 (the cache read at the input rate)", cost, ok)
	}
	if len(c.PricingWarnings) != 1 || !strings.Contains(c.PricingWarnings[0], pricing.EnvCacheRead) {
		t.Errorf("warnings %v", c.PricingWarnings)
	}
	delete(env, pricing.EnvInput)
	delete(env, pricing.EnvOutput)
	if c, _ := ConfigFromEnv(func(k string) string { return env[k] }); c.Pricing != nil {
		t.Errorf("no price set: a table %v", c.Pricing)
	}
}

// RD22-10: ARCHMAX_SESSION_TTL is the session retention the engines get (the host file's
// section replaces it in host.Apply); unset, none.
func TestConfigFromEnvSessionTTL(t *testing.T) {
	base := map[string]string{EnvTable: "t", EnvBucket: "b", EnvModel: "m"}
	if c, err := ConfigFromEnv(env(base)); err != nil || c.SessionTTL != 0 {
		t.Errorf("unset: %v, %v", c.SessionTTL, err)
	}
	base[EnvSessionTTL] = "30d"
	if c, err := ConfigFromEnv(env(base)); err != nil || c.SessionTTL != 30*24*time.Hour {
		t.Errorf("30d: %v, %v", c.SessionTTL, err)
	}
}
