package main

import (
	"slices"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/jsii-runtime-go"
)

// Access is what one function's code calls, and so all its role may do (besides writing its
// own log group). It is derived from the code, not from a template:
//
//   - DynamoDB (core/store/dynamodb): Acquire/Commit/Release are GetItem + BatchWriteItem +
//     UpdateItem, reads Query the table; the HTTP Idempotency-Key records and the EventBridge
//     start claims are PutItem (functions/handlers/httpapi, starts). The sweep queries the
//     byParkDue index (functions/wake), the listings byUpdated, byOwner and byParkDue's
//     decision queue (functions/sessions). Deleting a session (DELETE /v1/sessions/{id}
//     on the decide function, session.Sessions.Delete) removes its items with
//     BatchWriteItem and its head with DeleteItem: only decide has DeleteItem (RD22-7).
//   - S3 (core/store/s3): the authored tree is read (GetObject; HeadObject and the ETag
//     cache's conditional GET need no more) and listed (skills), session files, snapshots
//     and blobs are read, written and deleted (the file tools' remove/move). ListBucket makes
//     S3 answer 404 rather than 403 for a missing key, which the blob store's HeadObject and
//     the file tools' Stat rely on; it is granted only where s3:prefix lies under the spec
//     or session prefix the function reads.
//   - Bedrock (core/model/bedrock): Converse, whose IAM action is bedrock:InvokeModel, and
//     ConverseStream (streamed calls, the default), whose action is
//     bedrock:InvokeModelWithResponseStream — both on the same models.
//   - EventBridge Scheduler (core/scheduler/eventbridge): Create/Update/DeleteSchedule of
//     schedules named archmax-… in the stage's group, passing the Scheduler role.
//   - Lambda (functions/handlers/continuation): a turn that outlives its invocation
//     continues in an asynchronous Invoke of the function itself.
//   - The host file (core/host): the engines' host tools invoke functions, read secrets and
//     sign requests, and their mounts read S3 — what the deployed host file names (host.go).
type Access struct {
	TableActions []string // on the table
	Indexes      []string // Query on these indexes
	ReadSpecs    bool     // GetObject under the spec prefix
	ReadSessions bool     // GetObject under the session prefix
	// WriteSessions is PutObject and DeleteObject under the session prefix.
	WriteSessions bool
	ListBucket    bool
	Models        bool // bedrock:InvokeModel and InvokeModelWithResponseStream on the configured models
	Schedules     bool // the Scheduler actions and iam:PassRole of the Scheduler role
	InvokeSelf    bool // lambda:InvokeFunction on itself (continuations)
	// Host: the function runs engines, which read the host file (host.Engines): it gets the
	// grants the deployed workspace's host file names (HostGrants) and the file's digest
	// (ARCHMAX_HOST_FILE_SHA256).
	Host bool
}

// DynamoDB actions of the functions.
var (
	engineTable = []string{"dynamodb:BatchWriteItem", "dynamodb:GetItem", "dynamodb:Query", "dynamodb:UpdateItem"}
	httpTable   = append(append([]string(nil), engineTable...), "dynamodb:PutItem")    // + Idempotency-Key records / event claims
	deleteTable = append(append([]string(nil), httpTable...), "dynamodb:DeleteItem")   // + the head of a deleted session (RD22-7)
	wakeTable   = append(append([]string(nil), engineTable...), "dynamodb:DeleteItem") // + the heads of an expired session's children (RD22-9)
)

// AccessOf is each function's Access.
var AccessOf = map[string]Access{
	// HTTP starts and turns (Idempotency-Key), EventBridge starts (event claims), continuations
	FnTurn: {TableActions: httpTable, ReadSpecs: true, ReadSessions: true, WriteSessions: true, ListBucket: true, Models: true, Schedules: true, InvokeSelf: true, Host: true},
	// HTTP decisions (Idempotency-Key), continuations, and DELETE /v1/sessions/{id}: the
	// session's items, files and blobs (DeleteObject, under the session prefix), its timed
	// parks' schedules (DeleteSchedule) and its head (DeleteItem)
	FnDecide: {TableActions: deleteTable, ReadSpecs: true, ReadSessions: true, WriteSessions: true, ListBucket: true, Models: true, Schedules: true, InvokeSelf: true, Host: true},
	// HTTP deliveries (Idempotency-Key) and EventBridge deliveries (ids kept in the head), continuations
	FnDeliver: {TableActions: httpTable, ReadSpecs: true, ReadSessions: true, WriteSessions: true, ListBucket: true, Models: true, Schedules: true, InvokeSelf: true, Host: true},
	// scheduled wakes and the sweep over byParkDue, continuations; no HTTP, so no PutItem;
	// the table stream's expired heads, whose sessions it deletes (retention.go: the stream
	// read is granted there)
	FnWake: {TableActions: wakeTable, Indexes: []string{IndexByParkDue}, ReadSpecs: true, ReadSessions: true, WriteSessions: true, ListBucket: true, Models: true, Schedules: true, InvokeSelf: true, Host: true},
	// read-only: heads, items and the listing indexes (every session, an owner's, the decision
	// queue in byParkDue); blobs of large values, spec snapshots and the session files the
	// artifact and file routes serve — ListBucket under the session prefix, so a missing file
	// is S3's 404, not its 403
	FnSessions: {TableActions: []string{"dynamodb:GetItem", "dynamodb:Query"}, Indexes: []string{IndexByUpdated, IndexByOwner, IndexByParkDue}, ReadSessions: true, ListBucket: true},
	// streamed starts and turns (the turn function's work: Idempotency-Key records,
	// continuations of itself) and the durable follow of a session's events (heads, items)
	FnStream: {TableActions: httpTable, ReadSpecs: true, ReadSessions: true, WriteSessions: true, ListBucket: true, Models: true, Schedules: true, InvokeSelf: true, Host: true},
}

// SchedulerActions are the EventBridge Scheduler calls of core/scheduler/eventbridge.
var SchedulerActions = []string{"scheduler:CreateSchedule", "scheduler:DeleteSchedule", "scheduler:UpdateSchedule"}

// ScheduleNamePrefix starts every schedule name (core/scheduler/eventbridge.Name, DECISIONS Q-1).
const ScheduleNamePrefix = "archmax-"

// inferenceProfileGeos are the first labels of the system-defined cross-region inference
// profile ids (us.anthropic.…, global.anthropic.…).
var inferenceProfileGeos = []string{"us", "us-gov", "eu", "apac", "jp", "au", "ca", "global"}

// ModelActions are the IAM actions of a model call: Converse is bedrock:InvokeModel,
// ConverseStream bedrock:InvokeModelWithResponseStream (ARCHMAX_STREAMING switches between
// them at run time, so a function that calls a model has both).
var ModelActions = []string{"bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"}

// ModelStatements allow ModelActions on exactly the given model ids: a foundation model in this region; a cross-region inference profile of
// this account and region, plus its foundation model in every region that profile routes
// to, only when called through that profile (bedrock:InferenceProfileArn); an ARN as given.
func ModelStatements(stack awscdk.Stack, models []string) []awsiam.PolicyStatement {
	var direct []*string
	var out []awsiam.PolicyStatement
	for _, m := range models {
		if strings.HasPrefix(m, "arn:") {
			direct = append(direct, jsii.String(m))
			continue
		}
		geo, base, ok := strings.Cut(m, ".")
		if ok && strings.Contains(base, ".") && slices.Contains(inferenceProfileGeos, geo) {
			profile := stack.FormatArn(&awscdk.ArnComponents{Service: jsii.String("bedrock"), Resource: jsii.String("inference-profile"), ResourceName: jsii.String(m)})
			direct = append(direct, profile)
			out = append(out, awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Actions: jsii.Strings(ModelActions...),
				Resources: &[]*string{stack.FormatArn(&awscdk.ArnComponents{Service: jsii.String("bedrock"), Region: jsii.String("*"), Account: jsii.String(""),
					Resource: jsii.String("foundation-model"), ResourceName: jsii.String(base)})},
				Conditions: &map[string]any{"StringEquals": map[string]any{"bedrock:InferenceProfileArn": profile}},
			}))
			continue
		}
		direct = append(direct, stack.FormatArn(&awscdk.ArnComponents{Service: jsii.String("bedrock"), Account: jsii.String(""),
			Resource: jsii.String("foundation-model"), ResourceName: jsii.String(m)}))
	}
	return append([]awsiam.PolicyStatement{awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions: jsii.Strings(ModelActions...), Resources: &direct,
	})}, out...)
}

// FunctionArn is the ARN of the stage's function fn, built from its name so that a
// function's own policy and environment can name it (and the wake function) without a
// reference cycle.
func FunctionArn(stack awscdk.Stack, cfg Config, fn string) *string {
	return stack.FormatArn(&awscdk.ArnComponents{Service: jsii.String("lambda"), Resource: jsii.String("function"),
		ResourceName: jsii.String(cfg.FunctionName(fn)), ArnFormat: awscdk.ArnFormat_COLON_RESOURCE_NAME})
}
