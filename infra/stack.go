package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2authorizers"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2integrations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3deployment"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsscheduler"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/archmax-ai/archmax/core/hostconfig"
	"github.com/archmax-ai/archmax/core/outbound"
)

// The session-log table's schema (core/store/dynamodb: table.go's CreateTable, the attr*
// and index* constants; docs/ARCHITECTURE.md "On AWS: DynamoDB").
const (
	AttrPK         = "pk"
	AttrSK         = "sk"
	AttrTTL        = "ttl"
	AttrParkKey    = "parkKey"
	AttrParkDue    = "parkDue"
	AttrListKey    = "listKey"
	AttrListSort   = "listSort"
	AttrOwnerKey   = "ownerKey"
	IndexByParkDue = "byParkDue" // due parks, for the wake sweep; the decision queue
	IndexByUpdated = "byUpdated" // the session listing
	IndexByOwner   = "byOwner"   // an owner's sessions
)

// The environment the functions read (functions/handlers/assembly.ConfigFromEnv,
// functions/handlers/starts.EnvEventRoutes).
const (
	EnvTable            = "ARCHMAX_TABLE"
	EnvBucket           = "ARCHMAX_BUCKET"
	EnvSpecPrefix       = "ARCHMAX_SPEC_PREFIX"
	EnvSessionPrefix    = "ARCHMAX_SESSION_PREFIX"
	EnvModel            = "ARCHMAX_MODEL"
	EnvSchedulerGroup   = "ARCHMAX_SCHEDULER_GROUP"
	EnvWakeTargetARN    = "ARCHMAX_WAKE_TARGET_ARN"
	EnvSchedulerRoleARN = "ARCHMAX_SCHEDULER_ROLE_ARN"
	EnvEventRoutes      = "ARCHMAX_EVENT_ROUTES"
	EnvJWTScopePrefix   = "ARCHMAX_JWT_SCOPE_PREFIX"
	EnvIAMAdmins        = "ARCHMAX_IAM_ADMINS"
	EnvIAMDeciders      = "ARCHMAX_IAM_DECIDERS"
	EnvFourEyes         = "ARCHMAX_FOUR_EYES"
	EnvHostFileSHA256   = "ARCHMAX_HOST_FILE_SHA256"
	// The endpoint overrides, declared empty (the AWS default) on every function so that
	// `sam local --env-vars` can set them (SAM replaces only declared variables; DECISIONS
	// SL22-1, local/samenv).
	EnvDynamoDBEndpoint = "ARCHMAX_DYNAMODB_ENDPOINT"
	EnvS3Endpoint       = "ARCHMAX_S3_ENDPOINT"
	EnvBedrockEndpoint  = "ARCHMAX_BEDROCK_ENDPOINT"
)

// EndpointVars are the endpoint overrides every function declares, empty.
var EndpointVars = []string{EnvDynamoDBEndpoint, EnvS3Endpoint, EnvBedrockEndpoint}

// HTTPFunctions serve API Gateway (or function URL) requests: they get the access settings.
var HTTPFunctions = []string{FnTurn, FnDecide, FnDeliver, FnSessions, FnStream}

// Route is one HTTP API route (docs/openapi.yaml) and the function serving it.
type Route struct {
	Method   awsapigatewayv2.HttpMethod
	Path     string
	Function string
}

// Routes are the HTTP API's routes.
var Routes = []Route{
	{awsapigatewayv2.HttpMethod_POST, "/v1/workflows/{workflow}/sessions", FnTurn},
	{awsapigatewayv2.HttpMethod_POST, "/v1/workflows/{workflow}/sessions/{sessionId}/turns", FnTurn},
	{awsapigatewayv2.HttpMethod_POST, "/v1/sessions/{sessionId}/decision", FnDecide},
	{awsapigatewayv2.HttpMethod_POST, "/v1/sessions/{sessionId}/deliveries", FnDeliver},
	{awsapigatewayv2.HttpMethod_DELETE, "/v1/sessions/{sessionId}", FnDecide}, // a writer; the sessions function stays read-only (RD22-7)
	{awsapigatewayv2.HttpMethod_GET, "/v1/sessions", FnSessions},
	{awsapigatewayv2.HttpMethod_GET, "/v1/sessions/{sessionId}", FnSessions},
	{awsapigatewayv2.HttpMethod_GET, "/v1/sessions/{sessionId}/messages", FnSessions},
	{awsapigatewayv2.HttpMethod_GET, "/v1/sessions/{sessionId}/events", FnSessions},
	{awsapigatewayv2.HttpMethod_GET, "/v1/sessions/{sessionId}/artifacts/{name}", FnSessions},
	{awsapigatewayv2.HttpMethod_GET, "/v1/sessions/{sessionId}/files/{path+}", FnSessions}, // greedy: the path may hold slashes
}

// SweepEvery is the period of the wake function's sweep rule (DESIGN.md §5).
var SweepEvery = awscdk.Duration_Minutes(jsii.Number(5))

// Stack is the archmax bundle of one stage: the session-log table, the data bucket, the five
// functions with their roles and log groups, the HTTP API, the stage's event bus with its
// resource policy, the EventBridge rules (starts and deliveries on that bus, the sweep), the
// Scheduler group and the role Scheduler assumes; with a workspace (Config.Workspace), the
// grants its host file names on the engine functions' roles and its upload under the spec
// prefix. The struct is
// not itself a construct: pass its embedded Stack (s.Stack) where jsii wants a scope or a
// stack (assertions.Template_FromStack).
type Stack struct {
	awscdk.Stack
	Config        Config
	Table         awsdynamodb.Table
	Bucket        awss3.Bucket
	Functions     map[string]awslambda.Function
	Roles         map[string]awsiam.Role
	LogGroups     map[string]awslogs.LogGroup
	API           awsapigatewayv2.HttpApi
	Bus           awsevents.EventBus
	ScheduleGroup awsscheduler.ScheduleGroup
	SchedulerRole awsiam.Role
	// Deployment uploads the workspace under the spec prefix (nil without a workspace).
	Deployment awss3deployment.BucketDeployment
	// StreamURL is the streaming function's URL (RESPONSE_STREAM; stream.go).
	StreamURL awslambda.FunctionUrl
	// Queues are the dead letter queues by AsyncFunctions name, QueueEvents and
	// QueueSchedules; AccessLogs the API's access log group; Alarms the alarms made
	// (operations.go).
	Queues     map[string]awssqs.Queue
	AccessLogs awslogs.LogGroup
	Alarms     []Alarm
}

// NewStack builds the stage's stack in scope (named cfg.StackName()). It is
// environment-agnostic: account and region are the deployment's, and nothing is looked up.
func NewStack(scope constructs.Construct, cfg Config) *Stack {
	st := awscdk.NewStack(scope, jsii.String(cfg.StackName()), &awscdk.StackProps{
		Description: jsii.String(fmt.Sprintf("archmax %s: governed LLM-agent workflows on Lambda, DynamoDB, S3 and Bedrock", cfg.Stage)),
	})
	s := &Stack{Stack: st, Config: cfg, Functions: map[string]awslambda.Function{}, Roles: map[string]awsiam.Role{}, LogGroups: map[string]awslogs.LogGroup{}}
	s.storage()
	s.scheduling()
	s.deadLetters() // operations.go
	for _, fn := range FunctionNames {
		s.function(fn)
	}
	s.onFailure()
	s.expiryConsumer() // retention.go
	s.schedulerTarget()
	s.workspace()
	s.httpAPI()
	s.apiStage()
	s.streamURL() // stream.go
	s.eventRules()
	s.notificationsBus()
	s.alarms()
	s.outputs()
	return s
}

// storage: the session-log table exactly as core/store/dynamodb.CreateTable makes it, plus
// point-in-time recovery; the data bucket (specs, session files, snapshots, blobs).
func (s *Stack) storage() {
	str := func(name string) *awsdynamodb.Attribute {
		return &awsdynamodb.Attribute{Name: jsii.String(name), Type: awsdynamodb.AttributeType_STRING}
	}
	s.Table = awsdynamodb.NewTable(s.Stack, jsii.String("SessionLog"), &awsdynamodb.TableProps{
		PartitionKey:                     str(AttrPK),
		SortKey:                          str(AttrSK),
		BillingMode:                      awsdynamodb.BillingMode_PAY_PER_REQUEST,
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{PointInTimeRecoveryEnabled: jsii.Bool(true)},
		TimeToLiveAttribute:              jsii.String(AttrTTL),
		// the retention consumer reads the TTL's head removals, with the heads' records (retention.go)
		Stream:        awsdynamodb.StreamViewType_OLD_IMAGE,
		RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
	})
	for _, ix := range []struct{ name, hash, rng string }{
		{IndexByParkDue, AttrParkKey, AttrParkDue},
		{IndexByUpdated, AttrListKey, AttrListSort},
		{IndexByOwner, AttrOwnerKey, AttrListSort},
	} {
		s.Table.AddGlobalSecondaryIndex(&awsdynamodb.GlobalSecondaryIndexProps{
			IndexName: jsii.String(ix.name), PartitionKey: str(ix.hash), SortKey: str(ix.rng),
			ProjectionType: awsdynamodb.ProjectionType_ALL,
		})
	}
	s.Bucket = awss3.NewBucket(s.Stack, jsii.String("Data"), &awss3.BucketProps{
		Versioned:         jsii.Bool(true),
		Encryption:        awss3.BucketEncryption_S3_MANAGED,
		BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
		EnforceSSL:        jsii.Bool(true),
		ObjectOwnership:   awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED,
		RemovalPolicy:     awscdk.RemovalPolicy_RETAIN,
		LifecycleRules: &[]*awss3.LifecycleRule{{
			Id:                                  jsii.String("old-versions"),
			NoncurrentVersionExpiration:         awscdk.Duration_Days(jsii.Number(30)),
			AbortIncompleteMultipartUploadAfter: awscdk.Duration_Days(jsii.Number(7)),
		}},
	})
}

// scheduling: the schedule group of timed parks and the role EventBridge Scheduler assumes
// to invoke the wake function (its policy is added by schedulerTarget).
func (s *Stack) scheduling() {
	s.ScheduleGroup = awsscheduler.NewScheduleGroup(s.Stack, jsii.String("Schedules"), &awsscheduler.ScheduleGroupProps{
		ScheduleGroupName: jsii.String(s.Config.StackName()),
		RemovalPolicy:     awscdk.RemovalPolicy_DESTROY,
	})
	s.SchedulerRole = awsiam.NewRole(s.Stack, jsii.String("SchedulerRole"), &awsiam.RoleProps{
		Description: jsii.String("EventBridge Scheduler invokes the wake function for timed parks"),
		AssumedBy: awsiam.NewServicePrincipal(jsii.String("scheduler.amazonaws.com"), &awsiam.ServicePrincipalOpts{
			Conditions: &map[string]any{
				"StringEquals": map[string]any{"aws:SourceAccount": awscdk.Aws_ACCOUNT_ID()},
				"ArnLike":      map[string]any{"aws:SourceArn": s.scheduleArn("*")},
			},
		}),
	})
}

// scheduleArn is the ARN of the schedules named name (a pattern) in the stage's group.
func (s *Stack) scheduleArn(name string) *string {
	return s.FormatArn(&awscdk.ArnComponents{Service: jsii.String("scheduler"), Resource: jsii.String("schedule"),
		ResourceName: jsii.String(s.Config.StackName() + "/" + name)})
}

// schedulerTarget lets the Scheduler role invoke the wake function, and nothing else.
func (s *Stack) schedulerTarget() {
	s.SchedulerRole.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("lambda:InvokeFunction"),
		Resources: &[]*string{s.Functions[FnWake].FunctionArn()},
	}))
}

// function builds fn: provided.al2023 on arm64 from <BuildDir>/<fn>/bootstrap, its log
// group with the configured retention, its role with exactly AccessOf[fn], its environment.
func (s *Stack) function(fn string) {
	cfg, acc := s.Config, AccessOf[fn]
	id := jsii.String(titleCase(fn))
	logs := awslogs.NewLogGroup(s.Stack, jsii.String(titleCase(fn)+"Logs"), &awslogs.LogGroupProps{
		LogGroupName:  jsii.String("/aws/lambda/" + cfg.FunctionName(fn)),
		Retention:     retention[cfg.LogRetentionDays],
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	role := awsiam.NewRole(s.Stack, jsii.String(titleCase(fn)+"Role"), &awsiam.RoleProps{
		Description: jsii.String("functions/" + fn + " of archmax " + cfg.Stage),
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
	})
	for _, st := range s.statements(fn, acc) {
		role.AddToPolicy(st)
	}
	logs.GrantWrite(role)

	env := map[string]*string{
		EnvTable:         s.Table.TableName(),
		EnvBucket:        s.Bucket.BucketName(),
		EnvSpecPrefix:    jsii.String(cfg.SpecPrefix),
		EnvSessionPrefix: jsii.String(cfg.SessionPrefix),
		EnvModel:         jsii.String(cfg.Model),
	}
	for _, v := range EndpointVars {
		env[v] = jsii.String("")
	}
	if acc.Schedules {
		env[EnvSchedulerGroup] = jsii.String(cfg.StackName())
		env[EnvWakeTargetARN] = FunctionArn(s.Stack, cfg, FnWake)
		env[EnvSchedulerRoleARN] = s.SchedulerRole.RoleArn()
		env[EnvSchedulerDLQARN] = s.Queues[QueueSchedules].QueueArn()
	}
	if acc.Host && cfg.SessionTTL != "" { // every function that commits sessions (retention.go)
		env[EnvSessionTTL] = jsii.String(cfg.SessionTTL)
	}
	if fn == FnTurn && len(cfg.EventRoutes) > 0 {
		env[EnvEventRoutes] = jsii.String(mustJSON(cfg.EventRoutes))
	}
	if slices.Contains(HTTPFunctions, fn) {
		if cfg.JWTIssuer != "" {
			env[EnvJWTScopePrefix] = jsii.String(cfg.JWTScopePrefix)
		}
		if len(cfg.IAMAdmins) > 0 {
			env[EnvIAMAdmins] = jsii.String(strings.Join(cfg.IAMAdmins, ","))
		}
		if len(cfg.IAMDeciders) > 0 {
			env[EnvIAMDeciders] = jsii.String(strings.Join(cfg.IAMDeciders, ","))
		}
	}
	if fn == FnStream && cfg.JWTIssuer != "" { // the function URL is NONE: the function verifies the tokens (stream.go)
		env[EnvJWTIssuer], env[EnvJWTAudience] = jsii.String(cfg.JWTIssuer), jsii.String(strings.Join(cfg.JWTAudience, ","))
	}
	if fn == FnDecide && cfg.FourEyes {
		env[EnvFourEyes] = jsii.String("1")
	}
	if acc.Host && cfg.Workspace != nil {
		env[EnvHostFileSHA256] = jsii.String(cfg.Workspace.Digest)
	}
	props := &awslambda.FunctionProps{
		FunctionName:  jsii.String(cfg.FunctionName(fn)),
		Description:   jsii.String("archmax functions/" + fn),
		Runtime:       awslambda.Runtime_PROVIDED_AL2023(),
		Architecture:  awslambda.Architecture_ARM_64(),
		Handler:       jsii.String("bootstrap"),
		Code:          awslambda.Code_FromAsset(jsii.String(filepath.Join(cfg.BuildDir, fn)), nil),
		Role:          role,
		LogGroup:      logs,
		LoggingFormat: awslambda.LoggingFormat_JSON,
		Environment:   &env,
		// The engine's goja sandbox bounds each script's heap only best-effort (DESIGN §8):
		// keep headroom. Writers may run a turn for the whole invocation and continue it.
		MemorySize: jsii.Number(1024),
		Timeout:    awscdk.Duration_Minutes(jsii.Number(15)),
		Tracing:    awslambda.Tracing_ACTIVE,
	}
	cfg.Tracing.apply(s, fn, props, env) // the trace export's layer and endpoint (tracing.go)
	if n, ok := cfg.Ops.ReservedConcurrency[fn]; ok {
		props.ReservedConcurrentExecutions = jsii.Number(float64(n))
	}
	if fn == FnSessions {
		props.MemorySize, props.Timeout = jsii.Number(512), awscdk.Duration_Seconds(jsii.Number(30))
	}
	if acc.InvokeSelf {
		// A long turn is a chain of asynchronous self-invocations by design.
		props.RecursiveLoop = awslambda.RecursiveLoop_ALLOW
	}
	s.Functions[fn] = awslambda.NewFunction(s.Stack, id, props)
	s.Roles[fn], s.LogGroups[fn] = role, logs
}

// statements are fn's policy: exactly acc, on this stack's resources.
func (s *Stack) statements(fn string, acc Access) []awsiam.PolicyStatement {
	stmt := func(actions []string, resources ...*string) awsiam.PolicyStatement {
		return awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{Actions: jsii.Strings(actions...), Resources: &resources})
	}
	var out []awsiam.PolicyStatement
	out = append(out, stmt(acc.TableActions, s.Table.TableArn()))
	if len(acc.Indexes) > 0 {
		var ix []*string
		for _, name := range acc.Indexes {
			ix = append(ix, jsii.String(*s.Table.TableArn()+"/index/"+name))
		}
		out = append(out, stmt([]string{"dynamodb:Query"}, ix...))
	}
	var read []*string
	if acc.ReadSpecs {
		read = append(read, s.Bucket.ArnForObjects(jsii.String(s.Config.SpecPrefix+"*")))
	}
	if acc.ReadSessions {
		read = append(read, s.Bucket.ArnForObjects(jsii.String(s.Config.SessionPrefix+"*")))
	}
	if len(read) > 0 {
		out = append(out, stmt([]string{"s3:GetObject"}, read...))
	}
	if acc.WriteSessions {
		out = append(out, stmt([]string{"s3:DeleteObject", "s3:PutObject"}, s.Bucket.ArnForObjects(jsii.String(s.Config.SessionPrefix+"*"))))
	}
	if acc.ListBucket {
		// only under the prefixes the function reads, never the rest of the bucket (S3 takes a
		// missing key's name as the s3:prefix of its 404-or-403 check, so the file tools'
		// Stat and the blobs' HeadObject still get their 404 there)
		var prefixes []string
		if acc.ReadSpecs {
			prefixes = append(prefixes, s.Config.SpecPrefix+"*")
		}
		if acc.ReadSessions {
			prefixes = append(prefixes, s.Config.SessionPrefix+"*")
		}
		out = append(out, awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:    jsii.Strings("s3:ListBucket"),
			Resources:  &[]*string{s.Bucket.BucketArn()},
			Conditions: &map[string]any{"StringLike": map[string]any{"s3:prefix": prefixes}},
		}))
	}
	if acc.Models {
		out = append(out, ModelStatements(s.Stack, s.Config.AllModels())...)
	}
	if acc.Schedules {
		out = append(out, stmt(SchedulerActions, s.scheduleArn(ScheduleNamePrefix+"*")))
		out = append(out, awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:    jsii.Strings("iam:PassRole"),
			Resources:  &[]*string{s.SchedulerRole.RoleArn()},
			Conditions: &map[string]any{"StringEquals": map[string]any{"iam:PassedToService": "scheduler.amazonaws.com"}},
		}))
	}
	if acc.InvokeSelf {
		out = append(out, stmt([]string{"lambda:InvokeFunction"}, FunctionArn(s.Stack, s.Config, fn)))
	}
	if acc.Host && s.Config.Workspace != nil {
		out = append(out, NewHostGrants(s.Stack, s.Config.Workspace.Host).Statements...)
	}
	return out
}

// workspace uploads the workspace's files (Workspace.Files: the authored tree, without
// secrets, local state or case files) under the spec prefix with a CDK bucket deployment,
// pruning what the prefix holds beyond them, after the functions and their grants are in
// place: the host file the functions read is the one their permissions came from. What the
// host file names but the stack cannot grant is a synth warning.
func (s *Stack) workspace() {
	w := s.Config.Workspace
	if w == nil {
		return
	}
	for i, msg := range NewHostGrants(s.Stack, w.Host).Warnings {
		awscdk.Annotations_Of(s.Stack).AddWarningV2(jsii.String(fmt.Sprintf("archmax:host-grant-%d", i)), jsii.String(hostconfig.File+": "+msg), nil)
	}
	s.Deployment = awss3deployment.NewBucketDeployment(s.Stack, jsii.String("Workspace"), &awss3deployment.BucketDeploymentProps{
		Sources:              &[]awss3deployment.ISource{awss3deployment.Source_Asset(jsii.String(w.Stage), nil)},
		DestinationBucket:    s.Bucket,
		DestinationKeyPrefix: jsii.String(s.Config.SpecPrefix),
		Prune:                jsii.Bool(true),
		RetainOnDelete:       jsii.Bool(true),
		MemoryLimit:          jsii.Number(512),
		OutputObjectKeys:     jsii.Bool(false), // a large workspace's key list would outgrow a custom resource's 4 KB response
	})
	for _, fn := range FunctionNames {
		s.Deployment.Node().AddDependency(s.Functions[fn])
	}
}

// httpAPI: the HTTP API (payload format 2.0) with every route of docs/openapi.yaml on its
// function, authorized by IAM (SigV4, execute-api:Invoke) or, when configured, by a JWT
// authorizer.
func (s *Stack) httpAPI() {
	var auth awsapigatewayv2.IHttpRouteAuthorizer = awsapigatewayv2authorizers.NewHttpIamAuthorizer()
	if s.Config.JWTIssuer != "" {
		auth = awsapigatewayv2authorizers.NewHttpJwtAuthorizer(jsii.String("Jwt"), jsii.String(s.Config.JWTIssuer),
			&awsapigatewayv2authorizers.HttpJwtAuthorizerProps{JwtAudience: jsii.Strings(s.Config.JWTAudience...)})
	}
	s.API = awsapigatewayv2.NewHttpApi(s.Stack, jsii.String("Api"), &awsapigatewayv2.HttpApiProps{
		ApiName:           jsii.String(s.Config.StackName()),
		Description:       jsii.String("archmax session API (docs/openapi.yaml)"),
		DefaultAuthorizer: auth,
	})
	integrations := map[string]awsapigatewayv2.HttpRouteIntegration{}
	for _, r := range Routes {
		in, ok := integrations[r.Function]
		if !ok {
			in = awsapigatewayv2integrations.NewHttpLambdaIntegration(jsii.String(titleCase(r.Function)+"Integration"), s.Functions[r.Function], nil)
			integrations[r.Function] = in
		}
		opts := &awsapigatewayv2.AddRoutesOptions{Path: jsii.String(r.Path), Methods: &[]awsapigatewayv2.HttpMethod{r.Method}, Integration: in}
		if s.Config.JWTIssuer != "" && r.Function == FnDecide && r.Method == awsapigatewayv2.HttpMethod_POST {
			// the gateway itself refuses a decision from a token without a role that may decide
			// (a DELETE on the same function is the owner's or an admin's: the function decides)
			opts.AuthorizationScopes = jsii.Strings(s.Config.JWTScopePrefix+"decide", s.Config.JWTScopePrefix+"admin")
		}
		s.API.AddRoutes(opts)
	}
}

// eventBus: the stage's own bus (not the default bus, where every service and principal of
// the account puts events) for starts and deliveries. Its resource policy accepts
// PutEvents from the configured other accounts and principals, and refuses anyone's event
// whose source is not one the stack routes: the source is the principal a start or delivery
// is recorded as (Issue 17), so only the sources routed here may be used on this bus.
func (s *Stack) eventBus() {
	s.Bus = awsevents.NewEventBus(s.Stack, jsii.String("Bus"), &awsevents.EventBusProps{
		EventBusName: jsii.String(s.Config.StackName()),
		Description:  jsii.String("archmax " + s.Config.Stage + ": event starts and deliveries"),
	})
	if len(s.Config.EventPutters) > 0 {
		var principals []awsiam.IPrincipal
		for _, p := range s.Config.EventPutters {
			if accountRe.MatchString(p) {
				principals = append(principals, awsiam.NewAccountPrincipal(jsii.String(p)))
			} else {
				principals = append(principals, awsiam.NewArnPrincipal(jsii.String(p)))
			}
		}
		s.Bus.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid: jsii.String("PutFromConfiguredPrincipals"), Effect: awsiam.Effect_ALLOW, Principals: &principals,
			Actions: jsii.Strings("events:PutEvents"), Resources: &[]*string{s.Bus.EventBusArn()},
			Conditions: &map[string]any{"ForAllValues:StringEquals": map[string]any{"events:source": s.Config.EventSources()}},
		}))
	}
	// events:source has a value per entry of a PutEvents call: one entry from elsewhere refuses the call
	s.Bus.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid: jsii.String("OnlyRoutedSources"), Effect: awsiam.Effect_DENY, Principals: &[]awsiam.IPrincipal{awsiam.NewAnyPrincipal()},
		Actions: jsii.Strings("events:PutEvents"), Resources: &[]*string{s.Bus.EventBusArn()},
		Conditions: &map[string]any{"ForAnyValue:StringNotEquals": map[string]any{"events:source": s.Config.EventSources()}},
	}))
}

// eventRules: on the stage's bus, one start rule per event route (→ turn) and the delivery
// rule (→ deliver: events of the delivery sources whose detail names a sessionId); on the
// default bus (scheduled rules live there only), the sweep (→ wake).
func (s *Stack) eventRules() {
	s.eventBus()
	seen := map[[2]string]bool{}
	n := 0
	for _, r := range s.Config.EventRoutes {
		key := [2]string{r.Source, r.DetailType}
		if seen[key] {
			continue
		}
		seen[key] = true
		p := &awsevents.EventPattern{}
		if r.Source != "" {
			p.Source = jsii.Strings(r.Source)
		} else {
			// a route by detail type alone: never a session's own notification (Config.Check
			// refuses that source as a routed one, so the other rules never match it either)
			p.Source = awsevents.Match_AnythingBut(outbound.Source)
		}
		if r.DetailType != "" {
			p.DetailType = jsii.Strings(r.DetailType)
		}
		awsevents.NewRule(s.Stack, jsii.String(fmt.Sprintf("Start%d", n)), &awsevents.RuleProps{
			Description:  jsii.String(fmt.Sprintf("starts: %q / %q → functions/turn (ARCHMAX_EVENT_ROUTES)", r.Source, r.DetailType)),
			EventBus:     s.Bus,
			EventPattern: p,
			Targets:      &[]awsevents.IRuleTarget{s.startTarget()},
		})
		n++
	}
	awsevents.NewRule(s.Stack, jsii.String("Deliveries"), &awsevents.RuleProps{
		Description: jsii.String("deliveries: {sessionId, trigger?, variables?, message?, parkId?} → functions/deliver"),
		EventBus:    s.Bus,
		EventPattern: &awsevents.EventPattern{
			Source: jsii.Strings(s.Config.DeliverySources...),
			Detail: &map[string]any{"sessionId": []any{map[string]any{"exists": true}}},
		},
		Targets: &[]awsevents.IRuleTarget{s.deliveryTarget()},
	})
	awsevents.NewRule(s.Stack, jsii.String("Sweep"), &awsevents.RuleProps{
		Description: jsii.String("the wake sweep: overdue timed parks and stranded turns → functions/wake"),
		Schedule:    awsevents.Schedule_Rate(SweepEvery),
		Targets:     &[]awsevents.IRuleTarget{s.sweepTarget()},
	})
}

// notificationsBus creates the host file's outbound bus when the file names it by name (an
// ARN names a bus someone else owns; "default" is the account's): the functions get
// events:PutEvents on it alone (HostGrants), and consumers put their rules on it.
func (s *Stack) notificationsBus() {
	bus := s.notificationsBusName()
	if bus == "" || strings.HasPrefix(bus, "arn:") || bus == "default" {
		return
	}
	b := awsevents.NewEventBus(s.Stack, jsii.String("NotificationsBus"), &awsevents.EventBusProps{
		EventBusName: jsii.String(bus),
		Description:  jsii.String("archmax " + s.Config.Stage + ": session notifications (source " + outbound.Source + ")"),
	})
	awscdk.NewCfnOutput(s.Stack, jsii.String("NotificationsBusName"), &awscdk.CfnOutputProps{Value: b.EventBusName(),
		Description: jsii.String("session notifications (" + strings.Join(outbound.DefaultTypes, ", ") + "): put your rules here")})
}

// notificationsBusName is the host file's events.eventBridge.bus ("" when none).
func (s *Stack) notificationsBusName() string {
	if s.Config.Workspace == nil || s.Config.Workspace.Host == nil {
		return ""
	}
	return s.Config.Workspace.Host.Resources().EventBus
}

func (s *Stack) outputs() {
	out := func(id string, value *string, desc string) {
		awscdk.NewCfnOutput(s.Stack, jsii.String(id), &awscdk.CfnOutputProps{Value: value, Description: jsii.String(desc)})
	}
	out("ApiUrl", s.API.ApiEndpoint(), "the HTTP API (IAM-signed requests unless a JWT authorizer is configured)")
	out("StreamUrl", s.StreamURL.Url(), "the streaming endpoint: Server-Sent Events of starts, turns and …/events ("+s.streamAuth()+")")
	out("TableName", s.Table.TableName(), "the session log")
	out("BucketName", s.Bucket.BucketName(), "specs and session files")
	out("SpecsUri", jsii.String("s3://"+*s.Bucket.BucketName()+"/"+s.Config.SpecPrefix),
		"the workspace's workflows/, skills/, .platform/, AGENTS.md and archmax.host.yaml (make deploy WORKSPACE=DIR uploads them)")
	out("ScheduleGroup", s.ScheduleGroup.ScheduleGroupName(), "EventBridge Scheduler group of timed parks")
	out("EventBusName", s.Bus.EventBusName(), "put event starts and deliveries here (sources: "+strings.Join(s.Config.EventSources(), ", ")+")")
}

// titleCase makes a construct id of a function name ("turn" → "Turn").
func titleCase(s string) string {
	if s == "" {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

// mustJSON encodes v (event routes: plain strings, cannot fail).
func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
