package main

import (
	"encoding/json"
	"fmt"
	"github.com/archmax-ai/archmax/core/hostconfig"
	"github.com/archmax-ai/archmax/core/outbound"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"
)

// FunctionNames are the functions of the bundle, in the order the stack creates them. Each
// is built to <BuildDir>/<name>/bootstrap (`make build`).
var FunctionNames = []string{FnTurn, FnDecide, FnDeliver, FnWake, FnSessions, FnStream}

// Function names (also the build directories and the last part of the Lambda names).
const (
	FnTurn     = "turn"
	FnDecide   = "decide"
	FnDeliver  = "deliver"
	FnWake     = "wake"
	FnSessions = "sessions"
	FnStream   = "stream" // Server-Sent Events behind its function URL (stream.go)
)

// Defaults of the deployment parameters.
const (
	DefaultStage            = "dev"
	DefaultModel            = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
	DefaultSpecPrefix       = "specs/"
	DefaultSessionPrefix    = "sessions/"
	DefaultDeliverySource   = "archmax.delivery"
	DefaultLogRetentionDays = 30
	DefaultBuildDir         = "build" // relative to the top level, where cdk.json runs the app
	DefaultJWTScopePrefix   = "archmax/"
)

// Context keys: `cdk synth -c stage=prod -c model=…` or cdk.json's "context" (`make deploy`
// passes the Makefile variables STAGE, MODEL, MODELS, SPEC_PREFIX, … as these).
const (
	CtxStage            = "stage"            // names the stack (archmax-<stage>), functions, API, schedule group
	CtxModel            = "model"            // ARCHMAX_MODEL: the default Bedrock model id
	CtxModels           = "models"           // more model ids the workflows name (comma-separated); the functions may call these and CtxModel only
	CtxSpecPrefix       = "specPrefix"       // ARCHMAX_SPEC_PREFIX
	CtxSessionPrefix    = "sessionPrefix"    // ARCHMAX_SESSION_PREFIX
	CtxEventRoutes      = "eventRoutes"      // ARCHMAX_EVENT_ROUTES (JSON array): one EventBridge start rule per route
	CtxDeliverySources  = "deliverySources"  // event sources the delivery rule takes (comma-separated)
	CtxJWTIssuer        = "jwtIssuer"        // with CtxJWTAudience: a JWT authorizer on every route instead of IAM
	CtxJWTAudience      = "jwtAudience"      // comma-separated
	CtxLogRetentionDays = "logRetentionDays" // retention of the functions' log groups
	// Who may do what on the HTTP API (functions/handlers/access, Issue 17).
	CtxJWTScopePrefix = "jwtScopePrefix" // ARCHMAX_JWT_SCOPE_PREFIX (JWT only): the roles' scopes are <prefix>decide and <prefix>admin
	CtxIAMAdmins      = "iamAdmins"      // ARCHMAX_IAM_ADMINS (IAM only): comma-separated role or user ARNs that read and act on every session
	CtxIAMDeciders    = "iamDeciders"    // ARCHMAX_IAM_DECIDERS (IAM only): … that read and decide sessions parked for a decision
	CtxFourEyes       = "fourEyes"       // true: ARCHMAX_FOUR_EYES on the decide function (the decider must not be the starter)
	// CtxEventPutters are the other AWS accounts (12 digits) or IAM principal ARNs whose
	// PutEvents the stage's event bus accepts (comma-separated); this account's principals
	// need only their own IAM permission.
	CtxEventPutters = "eventPutters"
	CtxBuildDir     = "buildDir" // where <fn>/bootstrap are (relative to the top level)
	// CtxWorkspace is the workspace deployed with the stack (relative to the top level; the
	// Makefile's WORKSPACE): its host file's grants on the functions' roles, and its files
	// uploaded under the spec prefix. Unset: no host grants, no upload.
	CtxWorkspace = "workspace"
)

// EventRoute is one entry of ARCHMAX_EVENT_ROUTES (functions/handlers/starts.Route): events
// of Source and DetailType (empty = any) start Workflow at Trigger.
type EventRoute struct {
	Source     string `json:"source,omitempty"`
	DetailType string `json:"detailType,omitempty"`
	Workflow   string `json:"workflow"`
	Trigger    string `json:"trigger,omitempty"`
}

// Config is what one deployment of the bundle varies. ConfigFromContext reads it from the
// CDK context; tests build it directly.
type Config struct {
	Stage string
	// Model is the default model id (ARCHMAX_MODEL); Models are the other model ids the
	// workflows name (settings.model, a state's model, a grader's or judge's model). The
	// functions may invoke exactly these: a foundation-model id in this region, a
	// cross-region inference profile (us.…, eu.…, apac.…, global.…; its foundation model in
	// any region, only through that profile), or a full ARN as given.
	Model  string
	Models []string
	// SpecPrefix and SessionPrefix end in "/".
	SpecPrefix, SessionPrefix string
	EventRoutes               []EventRoute
	DeliverySources           []string
	// JWTIssuer and JWTAudience, when set, put a JWT authorizer on every route instead of
	// IAM authorization.
	JWTIssuer   string
	JWTAudience []string
	// JWTScopePrefix starts the JWT scopes of the roles (JWT only; the decision route
	// requires <prefix>decide or <prefix>admin). IAMAdmins and IAMDeciders hold the roles
	// under IAM authorization. FourEyes: the decider must not be the session's starter.
	JWTScopePrefix         string
	IAMAdmins, IAMDeciders []string
	FourEyes               bool
	// SessionTTL is the session retention from the last activity, <n>d or <n>h ("" = none):
	// ARCHMAX_SESSION_TTL on the functions that run engines (retention.go).
	SessionTTL string
	// EventPutters are the other accounts or principals whose PutEvents the stage's bus
	// accepts (its resource policy); every event on it must come from an event source the
	// stack routes (DeliverySources and the EventRoutes' sources).
	EventPutters     []string
	LogRetentionDays int
	// BuildDir holds <fn>/bootstrap for every function (linux/arm64 builds).
	BuildDir string
	// Workspace is the workspace deployed with the stack (ReadWorkspace); nil: none.
	Workspace *Workspace
	// Ops are the alarm topic, the reserved concurrency and the API throttling (operations.go).
	Ops Operations
	// Tracing is the functions' trace export (tracing.go); zero: off.
	Tracing Tracing
}

// AllModels is Model followed by the other Models, without repeats.
func (c Config) AllModels() []string {
	out := []string{c.Model}
	for _, m := range c.Models {
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

// StackName is the CloudFormation stack of the stage.
func (c Config) StackName() string { return "archmax-" + c.Stage }

// FunctionName is the Lambda name of fn in the stage: archmax-<stage>-<fn>.
func (c Config) FunctionName(fn string) string { return c.StackName() + "-" + fn }

var (
	stageRe        = regexp.MustCompile(`^[a-z][a-z0-9-]{0,19}$`)
	accountRe      = regexp.MustCompile(`^\d{12}$`)
	iamPrincipalRe = regexp.MustCompile(`^arn:aws[a-z-]*:(iam::\d{12}:(role|user)/.+|iam::\d{12}:root|sts::\d{12}:assumed-role/.+)$`)
)

// EventSources are the sources the stage's bus takes events from: the delivery sources
// and the event routes' sources, sorted, without repeats.
func (c Config) EventSources() []string {
	out := slices.Clone(c.DeliverySources)
	for _, r := range c.EventRoutes {
		if r.Source != "" {
			out = append(out, r.Source)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ConfigFromContext reads the deployment parameters from the CDK context (defaults above)
// and checks them, including that every function's bootstrap is built.
func ConfigFromContext(scope constructs.Construct) (Config, error) {
	get := func(key, def string) string {
		v := scope.Node().TryGetContext(&key)
		if v == nil {
			return def
		}
		var s string
		switch t := v.(type) {
		case string:
			s = t
		case float64:
			s = strconv.FormatFloat(t, 'f', -1, 64)
		default: // a JSON value in cdk.json (e.g. eventRoutes as an array)
			b, _ := json.Marshal(t)
			s = string(b)
		}
		if s = strings.TrimSpace(s); s == "" {
			return def
		}
		return s
	}
	c := Config{
		Stage:           get(CtxStage, DefaultStage),
		Model:           get(CtxModel, DefaultModel),
		Models:          list(get(CtxModels, "")),
		SpecPrefix:      prefix(get(CtxSpecPrefix, DefaultSpecPrefix)),
		SessionPrefix:   prefix(get(CtxSessionPrefix, DefaultSessionPrefix)),
		DeliverySources: list(get(CtxDeliverySources, DefaultDeliverySource)),
		JWTIssuer:       get(CtxJWTIssuer, ""),
		JWTAudience:     list(get(CtxJWTAudience, "")),
		JWTScopePrefix:  get(CtxJWTScopePrefix, DefaultJWTScopePrefix),
		IAMAdmins:       list(get(CtxIAMAdmins, "")),
		IAMDeciders:     list(get(CtxIAMDeciders, "")),
		EventPutters:    list(get(CtxEventPutters, "")),
		BuildDir:        get(CtxBuildDir, DefaultBuildDir),
	}
	switch v := strings.ToLower(get(CtxFourEyes, "false")); v {
	case "true", "1":
		c.FourEyes = true
	case "false", "0":
	default:
		return Config{}, fmt.Errorf("context %s: %q is not true or false", CtxFourEyes, v)
	}
	days, err := strconv.Atoi(get(CtxLogRetentionDays, strconv.Itoa(DefaultLogRetentionDays)))
	if err != nil {
		return Config{}, fmt.Errorf("context %s: not a number of days", CtxLogRetentionDays)
	}
	c.LogRetentionDays = days
	if c.Ops, err = operationsFromContext(get); err != nil {
		return Config{}, err
	}
	if c.Tracing, err = tracingFromContext(get); err != nil {
		return Config{}, err
	}
	if c.SessionTTL, err = sessionTTLFromContext(get); err != nil {
		return Config{}, err
	}
	if routes := get(CtxEventRoutes, ""); routes != "" {
		dec := json.NewDecoder(strings.NewReader(routes))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c.EventRoutes); err != nil {
			return Config{}, fmt.Errorf("context %s: not a JSON array of {source, detailType, workflow, trigger}: %w", CtxEventRoutes, err)
		}
	}
	if err := c.Check(); err != nil {
		return Config{}, err
	}
	for _, fn := range FunctionNames {
		if _, err := os.Stat(filepath.Join(c.BuildDir, fn, "bootstrap")); err != nil {
			return Config{}, fmt.Errorf("%s/%s/bootstrap is not built (run `make build`, or set -c %s=DIR): %w", c.BuildDir, fn, CtxBuildDir, err)
		}
	}
	if dir := get(CtxWorkspace, ""); dir != "" {
		if c.Workspace, err = ReadWorkspace(dir); err != nil {
			return Config{}, err
		}
	}
	return c, nil
}

// Check reports the first parameter the stack cannot be built with.
func (c Config) Check() error {
	switch {
	case !stageRe.MatchString(c.Stage):
		return fmt.Errorf("stage %q: want 1–20 of [a-z0-9-], starting with a letter (it names the functions)", c.Stage)
	case c.Model == "":
		return fmt.Errorf("no model id (context %s)", CtxModel)
	case c.SpecPrefix == c.SessionPrefix || strings.HasPrefix(c.SpecPrefix, c.SessionPrefix) || strings.HasPrefix(c.SessionPrefix, c.SpecPrefix):
		return fmt.Errorf("spec prefix %q and session prefix %q overlap: the functions may write session files only", c.SpecPrefix, c.SessionPrefix)
	case len(c.DeliverySources) == 0:
		return fmt.Errorf("no delivery event source (context %s)", CtxDeliverySources)
	case (c.JWTIssuer == "") != (len(c.JWTAudience) == 0):
		return fmt.Errorf("context %s and %s are set together or not at all", CtxJWTIssuer, CtxJWTAudience)
	case c.JWTIssuer != "" && len(c.IAMAdmins)+len(c.IAMDeciders) > 0:
		return fmt.Errorf("context %s and %s name IAM principals, but the API uses a JWT authorizer: give the roles as scopes (%sdecide, %sadmin)",
			CtxIAMAdmins, CtxIAMDeciders, c.JWTScopePrefix, c.JWTScopePrefix)
	}
	for _, arn := range append(slices.Clone(c.IAMAdmins), c.IAMDeciders...) {
		if !iamPrincipalRe.MatchString(arn) {
			return fmt.Errorf("IAM role holder %q: want an IAM role, user or account-root ARN (arn:aws:iam::<account>:role/<name>)", arn)
		}
	}
	for _, p := range c.EventPutters {
		if !accountRe.MatchString(p) && !iamPrincipalRe.MatchString(p) {
			return fmt.Errorf("event putter %q: want a 12-digit account id or an IAM principal ARN", p)
		}
	}
	if err := c.Ops.check(); err != nil {
		return err
	}
	if err := c.Tracing.check(); err != nil {
		return err
	}
	if _, ok := retention[c.LogRetentionDays]; !ok {
		return fmt.Errorf("log retention %d days: CloudWatch Logs takes 1, 3, 5, 7, 14, 30, 60, 90, 180, 365, 731 or 3653", c.LogRetentionDays)
	}
	for _, src := range c.EventSources() {
		if src == outbound.Source {
			return fmt.Errorf("event source %q is the sessions' own notifications: a session's notification must never start or resume a session; route other sources", src)
		}
	}
	if c.Workspace != nil && c.Workspace.Host != nil {
		if bus := c.Workspace.Host.Resources().EventBus; bus == c.StackName() || strings.HasSuffix(bus, ":event-bus/"+c.StackName()) {
			return fmt.Errorf("%s: events.eventBridge.bus %q is the stage's bus for starts and deliveries: name another bus for the notifications", hostconfig.File, bus)
		}
	}
	for i, r := range c.EventRoutes {
		if r.Workflow == "" {
			return fmt.Errorf("event route %d names no workflow", i)
		}
		if r.Source == "" && r.DetailType == "" {
			return fmt.Errorf("event route %d matches every event on the bus: give it a source or a detailType", i)
		}
	}
	return nil
}

// retention maps the accepted log retentions (days) onto CDK's enum.
var retention = map[int]awslogs.RetentionDays{
	1: awslogs.RetentionDays_ONE_DAY, 3: awslogs.RetentionDays_THREE_DAYS, 5: awslogs.RetentionDays_FIVE_DAYS,
	7: awslogs.RetentionDays_ONE_WEEK, 14: awslogs.RetentionDays_TWO_WEEKS, 30: awslogs.RetentionDays_ONE_MONTH,
	60: awslogs.RetentionDays_TWO_MONTHS, 90: awslogs.RetentionDays_THREE_MONTHS, 180: awslogs.RetentionDays_SIX_MONTHS,
	365: awslogs.RetentionDays_ONE_YEAR, 731: awslogs.RetentionDays_TWO_YEARS, 3653: awslogs.RetentionDays_TEN_YEARS,
}

// list splits a comma-separated value, dropping blanks.
func list(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// prefix adds the trailing "/" ConfigFromEnv would add ("specs" → "specs/").
func prefix(p string) string {
	if strings.HasSuffix(p, "/") {
		return p
	}
	return p + "/"
}
