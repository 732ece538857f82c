package main

import (
	"cmp"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/archmax-ai/archmax/core/metrics"
	"github.com/archmax-ai/archmax/core/outbound"
)

// Nothing asynchronous fails silently (docs/operations.md): what Lambda, EventBridge and
// Scheduler give up on lands in a dead letter queue, and every queue, function and the API
// has an alarm.

// EnvSchedulerDLQARN is the queue the scheduler adapter names as every schedule's dead
// letter queue (functions/handlers/assembly.EnvSchedulerDLQARN).
const EnvSchedulerDLQARN = "ARCHMAX_SCHEDULER_DLQ_ARN"

// AsyncFunctions are invoked asynchronously (EventBridge starts and deliveries, Scheduler
// wakes and the sweep, and every writer's own continuations): each gets an on-failure
// destination, its own queue, where an invocation lands after Lambda's retries.
var AsyncFunctions = []string{FnTurn, FnDecide, FnDeliver, FnWake, FnStream}

// Defaults of the operations parameters.
const (
	DefaultAPIThrottleRate  = 100 // requests per second, steady, on the API's default stage
	DefaultAPIThrottleBurst = 200
	// AsyncRetries is Lambda's retries of a failed asynchronous invocation before it goes
	// to the function's on-failure destination (Lambda's own default, stated).
	AsyncRetries = 2
	// EventRetries and EventMaxAge bound EventBridge's retries of a start or delivery it
	// cannot invoke the function with (throttled, function missing) before the events DLQ.
	EventRetries       = 185
	EventMaxAgeHours   = 24
	SweepRetries       = 2
	SweepMaxAgeMinutes = 5 // a late sweep is replaced by the next one
	// QueueRetentionDays is how long a dead letter stays in its queue (SQS's maximum).
	QueueRetentionDays = 14
	// DefaultModelThrottleRate is the model-throttling alarm's threshold: throttled model
	// attempts per model call in 5 minutes (MT22-5).
	DefaultModelThrottleRate = 0.05
)

// ModelFunctions are the functions that run turns and so call the model: the throttling
// and budget alarms add their metrics up (sessions only reads).
var ModelFunctions = []string{FnTurn, FnDecide, FnDeliver, FnWake, FnStream}

// Context keys of the operations parameters.
const (
	CtxAlarmTopic          = "alarmTopic"          // SNS topic ARN every alarm notifies (alarm and OK); unset: none
	CtxReservedConcurrency = "reservedConcurrency" // "turn=20,wake=5": reserved concurrency per function; unset: unreserved
	CtxAPIThrottleRate     = "apiThrottleRate"     // the API stage's steady requests per second
	CtxAPIThrottleBurst    = "apiThrottleBurst"    // … and its burst
	CtxModelThrottleRate   = "modelThrottleRate"   // the model-throttling alarm's threshold (throttles per call)
)

var snsTopicRe = regexp.MustCompile(`^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}(\.fifo)?$`)

// Operations are the operations parameters of a Config. A zero throttle is the default.
type Operations struct {
	AlarmTopicARN       string
	ReservedConcurrency map[string]int
	APIThrottleRate     float64
	APIThrottleBurst    int
	// ModelThrottleRate is the model-throttling alarm's threshold (0: DefaultModelThrottleRate).
	ModelThrottleRate float64
}

// operationsFromContext reads the operations parameters (get as in ConfigFromContext).
func operationsFromContext(get func(key, def string) string) (Operations, error) {
	o := Operations{AlarmTopicARN: get(CtxAlarmTopic, "")}
	var err error
	if o.APIThrottleRate, err = strconv.ParseFloat(get(CtxAPIThrottleRate, strconv.Itoa(DefaultAPIThrottleRate)), 64); err != nil || o.APIThrottleRate <= 0 {
		return o, fmt.Errorf("context %s: not a positive number of requests per second", CtxAPIThrottleRate)
	}
	if o.APIThrottleBurst, err = strconv.Atoi(get(CtxAPIThrottleBurst, strconv.Itoa(DefaultAPIThrottleBurst))); err != nil || o.APIThrottleBurst <= 0 {
		return o, fmt.Errorf("context %s: not a positive whole number of requests", CtxAPIThrottleBurst)
	}
	if o.ModelThrottleRate, err = strconv.ParseFloat(get(CtxModelThrottleRate, strconv.FormatFloat(DefaultModelThrottleRate, 'g', -1, 64)), 64); err != nil ||
		!(o.ModelThrottleRate > 0) || math.IsInf(o.ModelThrottleRate, 0) {
		return o, fmt.Errorf("context %s: not a positive number of throttled attempts per model call", CtxModelThrottleRate)
	}
	for _, kv := range list(get(CtxReservedConcurrency, "")) {
		fn, n, ok := strings.Cut(kv, "=")
		v, err := strconv.Atoi(strings.TrimSpace(n))
		if !ok || err != nil {
			return o, fmt.Errorf("context %s: %q is not <function>=<number>", CtxReservedConcurrency, kv)
		}
		if o.ReservedConcurrency == nil {
			o.ReservedConcurrency = map[string]int{}
		}
		o.ReservedConcurrency[strings.TrimSpace(fn)] = v
	}
	return o, nil
}

// check reports the first operations parameter the stack cannot be built with.
func (o Operations) check() error {
	if o.AlarmTopicARN != "" && !snsTopicRe.MatchString(o.AlarmTopicARN) {
		return fmt.Errorf("alarm topic %q: want an SNS topic ARN (arn:aws:sns:<region>:<account>:<name>)", o.AlarmTopicARN)
	}
	if o.ModelThrottleRate < 0 {
		return fmt.Errorf("model throttle rate %v: must be positive", o.ModelThrottleRate)
	}
	if o.APIThrottleRate < 0 || o.APIThrottleBurst < 0 {
		return fmt.Errorf("API throttling %v requests per second, burst %d: both must be positive", o.APIThrottleRate, o.APIThrottleBurst)
	}
	for fn, n := range o.ReservedConcurrency {
		if !slices.Contains(FunctionNames, fn) {
			return fmt.Errorf("reserved concurrency for %q: not a function (%s)", fn, strings.Join(FunctionNames, ", "))
		}
		if n < 1 {
			return fmt.Errorf("reserved concurrency %s=%d: want at least 1 (0 would stop the function)", fn, n)
		}
	}
	return nil
}

// deadLetters creates the queues: one per asynchronously invoked function (its on-failure
// destination), one for the EventBridge rules' targets and one for Scheduler's schedules.
// They exist before the functions, which name the schedules' queue in their environment.
func (s *Stack) deadLetters() {
	s.Queues = map[string]awssqs.Queue{}
	queue := func(key string) {
		s.Queues[key] = awssqs.NewQueue(s.Stack, jsii.String("DLQ"+titleCase(key)), &awssqs.QueueProps{
			QueueName:       jsii.String(s.Config.StackName() + "-" + queueName(key)),
			RetentionPeriod: awscdk.Duration_Days(jsii.Number(QueueRetentionDays)),
			Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
			EnforceSSL:      jsii.Bool(true),
			RemovalPolicy:   awscdk.RemovalPolicy_RETAIN, // a dead letter is evidence: keep it past the stack
		})
	}
	for _, fn := range AsyncFunctions {
		queue(fn)
	}
	queue(QueueEvents)
	queue(QueueSchedules)
	s.SchedulerRole.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("sqs:SendMessage"),
		Resources: &[]*string{s.Queues[QueueSchedules].QueueArn()},
	}))
}

// Keys of the non-function queues in Stack.Queues.
const (
	QueueEvents    = "events"
	QueueSchedules = "schedules"
)

// onFailure gives every asynchronously invoked function its on-failure destination: its
// event-invoke config (on $LATEST, where the functions' invocations go) names its queue,
// and its role may send there (sqs:SendMessage only; CDK's destination would also grant
// GetQueueAttributes and GetQueueUrl, which Lambda does not use).
func (s *Stack) onFailure() {
	for _, fn := range AsyncFunctions {
		s.Roles[fn].AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("sqs:SendMessage"),
			Resources: &[]*string{s.Queues[fn].QueueArn()},
		}))
		c := awslambda.NewCfnEventInvokeConfig(s.Stack, jsii.String(titleCase(fn)+"OnFailure"), &awslambda.CfnEventInvokeConfigProps{
			FunctionName:         s.Functions[fn].FunctionName(),
			Qualifier:            jsii.String("$LATEST"),
			MaximumRetryAttempts: jsii.Number(AsyncRetries),
			DestinationConfig: &awslambda.CfnEventInvokeConfig_DestinationConfigProperty{
				OnFailure: &awslambda.CfnEventInvokeConfig_OnFailureProperty{Destination: s.Queues[fn].QueueArn()},
			},
		})
		c.Node().AddDependency(s.Roles[fn]) // Lambda checks the role may send when the config is made
	}
}

// ruleTarget is fn as an EventBridge target with the events DLQ and a retry policy.
func (s *Stack) ruleTarget(fn string, retries float64, maxAge awscdk.Duration) awsevents.IRuleTarget {
	return awseventstargets.NewLambdaFunction(s.Functions[fn], &awseventstargets.LambdaFunctionProps{
		DeadLetterQueue: s.Queues[QueueEvents],
		RetryAttempts:   jsii.Number(retries),
		MaxEventAge:     maxAge,
	})
}

func (s *Stack) startTarget() awsevents.IRuleTarget {
	return s.ruleTarget(FnTurn, EventRetries, awscdk.Duration_Hours(jsii.Number(EventMaxAgeHours)))
}
func (s *Stack) deliveryTarget() awsevents.IRuleTarget {
	return s.ruleTarget(FnDeliver, EventRetries, awscdk.Duration_Hours(jsii.Number(EventMaxAgeHours)))
}
func (s *Stack) sweepTarget() awsevents.IRuleTarget {
	return s.ruleTarget(FnWake, SweepRetries, awscdk.Duration_Minutes(jsii.Number(SweepMaxAgeMinutes)))
}

// accessLogFormat is one JSON line per API request in the access log group.
var accessLogFormat = map[string]string{
	"requestId": "$context.requestId", "requestTime": "$context.requestTime", "ip": "$context.identity.sourceIp",
	"caller": "$context.identity.userArn", "httpMethod": "$context.httpMethod", "routeKey": "$context.routeKey",
	"path": "$context.path", "status": "$context.status", "protocol": "$context.protocol",
	"responseLength": "$context.responseLength", "responseLatency": "$context.responseLatency",
	"integrationStatus": "$context.integrationStatus", "integrationLatency": "$context.integrationLatency",
	"integrationError": "$context.integrationErrorMessage", "error": "$context.error.message",
}

// apiStage throttles the API's default stage and logs its requests to their own log group.
func (s *Stack) apiStage() {
	s.AccessLogs = awslogs.NewLogGroup(s.Stack, jsii.String("ApiAccessLogs"), &awslogs.LogGroupProps{
		LogGroupName:  jsii.String("/aws/apigateway/" + s.Config.StackName() + "/access"),
		Retention:     retention[s.Config.LogRetentionDays],
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	stage := s.API.DefaultStage().Node().DefaultChild().(awsapigatewayv2.CfnStage)
	stage.SetDefaultRouteSettings(&awsapigatewayv2.CfnStage_RouteSettingsProperty{
		ThrottlingRateLimit:  jsii.Number(cmp.Or(s.Config.Ops.APIThrottleRate, DefaultAPIThrottleRate)),
		ThrottlingBurstLimit: jsii.Number(float64(cmp.Or(s.Config.Ops.APIThrottleBurst, DefaultAPIThrottleBurst))),
	})
	stage.SetAccessLogSettings(&awsapigatewayv2.CfnStage_AccessLogSettingsProperty{
		DestinationArn: s.AccessLogs.LogGroupArn(),
		Format:         jsii.String(mustJSON(accessLogFormat)),
	})
}

// Alarm is one alarm of the stack: its name (archmax-<stage>-<Name>) and what it means.
type Alarm struct {
	Name    string
	Meaning string
}

// alarms: every function's errors and throttles, every dead letter queue holding a
// message, the API's and the streaming URL's 5xx answers (a failed request through either
// is an answer, not a function error), with a notifications bus the failed publishes
// (archmax/NotificationPublishFailures), and on the functions' own metrics (core/metrics,
// MT22-5) what the sweep found, the model's throttling rate and budget breaches; each
// notifies the alarm topic when one is configured.
func (s *Stack) alarms() {
	var topic awssns.ITopic
	if arn := s.Config.Ops.AlarmTopicARN; arn != "" {
		topic = awssns.Topic_FromTopicArn(s.Stack, jsii.String("AlarmTopic"), jsii.String(arn))
	}
	five := awscdk.Duration_Minutes(jsii.Number(5))
	alarmAt := func(name, desc string, m awscloudwatch.IMetric, threshold float64) {
		a := awscloudwatch.NewAlarm(s.Stack, jsii.String("Alarm"+name), &awscloudwatch.AlarmProps{
			AlarmName:          jsii.String(s.Config.StackName() + "-" + name),
			AlarmDescription:   jsii.String(desc + " (docs/operations.md)"),
			Metric:             m,
			Threshold:          jsii.Number(threshold),
			EvaluationPeriods:  jsii.Number(1),
			DatapointsToAlarm:  jsii.Number(1),
			ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
			TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
		})
		if topic != nil {
			a.AddAlarmAction(awscloudwatchactions.NewSnsAction(topic))
			a.AddOkAction(awscloudwatchactions.NewSnsAction(topic))
		}
		s.Alarms = append(s.Alarms, Alarm{Name: name, Meaning: desc})
	}
	alarm := func(name, desc string, m awscloudwatch.IMetric) { alarmAt(name, desc, m, 1) }
	sum := &awscloudwatch.MetricOptions{Period: five, Statistic: jsii.String("Sum")}
	for _, fn := range FunctionNames {
		f := s.Functions[fn]
		alarm(fn+"-errors", "functions/"+fn+" returned errors or crashed", f.MetricErrors(sum))
		alarm(fn+"-throttles", "functions/"+fn+" invocations were throttled", f.MetricThrottles(sum))
	}
	keys := make([]string, 0, len(s.Queues))
	for k := range s.Queues {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		q := s.Queues[k]
		alarm("dlq-"+k, "a message is waiting in "+s.Config.StackName()+"-"+queueName(k),
			q.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{Period: five, Statistic: jsii.String("Maximum")}))
	}
	alarm("api-5xx", "the HTTP API answered 5xx", s.API.MetricServerError(sum))
	// a failed streamed request is an answer, not a function error: the URL's own 5xx count
	alarm("stream-5xx", "the streaming function URL answered 5xx",
		awscloudwatch.NewMetric(&awscloudwatch.MetricProps{Namespace: jsii.String("AWS/Lambda"), MetricName: jsii.String("Url5xxCount"),
			DimensionsMap: &map[string]*string{"FunctionName": s.Functions[FnStream].FunctionName()}, Period: five, Statistic: jsii.String("Sum")}))
	if s.notificationsBusName() != "" { // the host file sends lifecycle notifications
		alarm("notification-publish-failures", "lifecycle notifications could not be published (they stay owed)",
			awscloudwatch.NewMetric(&awscloudwatch.MetricProps{Namespace: jsii.String(outbound.MetricNamespace),
				MetricName: jsii.String(outbound.MetricPublishFailures), Period: five, Statistic: jsii.String("Sum")}))
	}
	// the functions' own metrics, by the `function` rollup
	fnMetric := func(name, fn string) awscloudwatch.IMetric {
		return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{Namespace: jsii.String(metrics.Namespace), MetricName: jsii.String(name),
			DimensionsMap: &map[string]*string{metrics.DimFunction: jsii.String(fn)}, Period: five, Statistic: jsii.String("Sum")})
	}
	alarm("sweep-finds", "the sweep found overdue timed parks or stranded running sessions (a lost schedule or continuation)",
		fnMetric(metrics.SweepFinds, FnWake))
	// sum of one metric over the model functions, missing data as 0
	total := func(prefix, name string, using map[string]awscloudwatch.IMetric) string {
		var terms []string
		for _, fn := range ModelFunctions {
			id := prefix + "_" + fn
			using[id] = fnMetric(name, fn)
			terms = append(terms, "FILL("+id+", 0)")
		}
		return "(" + strings.Join(terms, " + ") + ")"
	}
	using := map[string]awscloudwatch.IMetric{}
	throttles, calls := total("t", metrics.ModelThrottles, using), total("c", metrics.ModelCalls, using)
	alarmAt("model-throttling", fmt.Sprintf("Bedrock throttled %g or more model attempts per model call", cmp.Or(s.Config.Ops.ModelThrottleRate, DefaultModelThrottleRate)),
		awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
			Expression: jsii.String("IF(" + calls + " > 0, " + throttles + " / " + calls + ", 0)"), UsingMetrics: &using,
			Label: jsii.String("throttled attempts per model call"), Period: five}),
		cmp.Or(s.Config.Ops.ModelThrottleRate, DefaultModelThrottleRate))
	using = map[string]awscloudwatch.IMetric{}
	alarm("budget-breaches", "a turn stopped because a budget ran out",
		awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
			Expression: jsii.String(total("b", metrics.BudgetBreaches, using)), UsingMetrics: &using,
			Label: jsii.String("budget breaches"), Period: five}))
}

// queueName is the queue name of a Stack.Queues key, without the stack name.
func queueName(key string) string {
	switch key {
	case QueueEvents:
		return "events-dlq"
	case QueueSchedules:
		return "schedules-dlq"
	}
	return key + "-failed"
}
