package main

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
)

const testAlarmTopic = "arn:aws:sns:eu-west-1:123456789012:oncall"

// queueID is the logical id of the queue named archmax-test-<name>.
func queueID(t *testing.T, name string) string {
	t.Helper()
	for id, r := range resources("AWS::SQS::Queue") {
		if props(r)["QueueName"] == "archmax-test-"+name {
			return id
		}
	}
	t.Fatalf("no queue archmax-test-%s", name)
	return ""
}

// TestDeadLetters: nothing asynchronous fails silently. Every asynchronously invoked
// function has an on-failure destination (its own queue, after Lambda's two retries),
// every EventBridge rule target a retry policy and the events DLQ (whose policy admits
// exactly those rules), and the schedules' DLQ is the one the functions name to the
// scheduler adapter (TestEnvironment) and the Scheduler role may send to (TestScheduler).
func TestDeadLetters(t *testing.T) {
	queues := resources("AWS::SQS::Queue")
	var names []string
	for id, q := range queues {
		p := props(q)
		names = append(names, p["QueueName"].(string))
		if p["MessageRetentionPeriod"] != 14.0*24*3600 || p["SqsManagedSseEnabled"] != true {
			t.Errorf("queue %s: retention %v, SSE %v; want 14 days, SQS-managed", id, p["MessageRetentionPeriod"], p["SqsManagedSseEnabled"])
		}
		if q["DeletionPolicy"] != "Retain" {
			t.Errorf("queue %s: deletion policy %v, want Retain", id, q["DeletionPolicy"])
		}
	}
	sort.Strings(names)
	want := []string{"archmax-test-decide-failed", "archmax-test-deliver-failed", "archmax-test-events-dlq", "archmax-test-schedules-dlq",
		"archmax-test-stream-failed", "archmax-test-turn-failed", "archmax-test-wake-failed"}
	if !slices.Equal(names, want) {
		t.Errorf("queues %v, want %v", names, want)
	}

	ids := functionIDs(t)
	configs := resources("AWS::Lambda::EventInvokeConfig")
	got := map[string]string{}
	for id, c := range configs {
		p := props(c)
		fn := ""
		for name, fid := range ids {
			if render(p["FunctionName"]) == "${"+fid+"}" {
				fn = name
			}
		}
		if p["Qualifier"] != "$LATEST" || p["MaximumRetryAttempts"] != float64(AsyncRetries) {
			t.Errorf("event-invoke config %s (%s): qualifier %v, retries %v", id, fn, p["Qualifier"], p["MaximumRetryAttempts"])
		}
		dc, _ := p["DestinationConfig"].(map[string]any)
		of, _ := dc["OnFailure"].(map[string]any)
		got[fn] = render(of["Destination"])
	}
	for _, fn := range []string{FnTurn, FnDeliver, FnWake, FnDecide, FnStream} {
		if want := "${" + queueID(t, fn+"-failed") + ".Arn}"; got[fn] != want {
			t.Errorf("%s: on-failure destination %q, want %s", fn, got[fn], want)
		}
	}
	if len(configs) != len(AsyncFunctions) {
		t.Errorf("%d event-invoke configs, want %d (one per asynchronously invoked function)", len(configs), len(AsyncFunctions))
	}

	events := "${" + queueID(t, "events-dlq") + ".Arn}"
	var rules []string
	for id, r := range resources("AWS::Events::Rule") {
		rules = append(rules, "${"+id+".Arn}")
		for _, tg := range props(r)["Targets"].([]any) {
			tg := tg.(map[string]any)
			dlq, _ := tg["DeadLetterConfig"].(map[string]any)
			retry, _ := tg["RetryPolicy"].(map[string]any)
			if render(dlq["Arn"]) != events {
				t.Errorf("rule %s: target %v has dead letter queue %v, want %s", id, tg["Id"], dlq["Arn"], events)
			}
			wantRetry := map[string]any{"MaximumRetryAttempts": float64(EventRetries), "MaximumEventAgeInSeconds": float64(EventMaxAgeHours * 3600)}
			if props(r)["ScheduleExpression"] != nil { // the sweep: a late one is replaced by the next
				wantRetry = map[string]any{"MaximumRetryAttempts": float64(SweepRetries), "MaximumEventAgeInSeconds": float64(SweepMaxAgeMinutes * 60)}
			}
			if renderDeep(retry) != renderDeep(wantRetry) {
				t.Errorf("rule %s: retry policy %v, want %v", id, retry, wantRetry)
			}
		}
	}
	// the events DLQ's policy: EventBridge may send, for these rules only
	var sources []string
	for _, p := range resources("AWS::SQS::QueuePolicy") {
		for _, q := range props(p)["Queues"].([]any) {
			if "${"+strings.TrimPrefix(strings.TrimSuffix(render(q), "}"), "${")+".Arn}" != events {
				continue
			}
			for _, st := range props(p)["PolicyDocument"].(map[string]any)["Statement"].([]any) {
				st := st.(map[string]any)
				if renderDeep(st["Principal"]) != `{"Service":"events.amazonaws.com"}` {
					continue
				}
				if st["Action"] != "sqs:SendMessage" || render(st["Resource"]) != events {
					t.Errorf("events DLQ policy statement %s", renderDeep(st))
				}
				cond := st["Condition"].(map[string]any)["ArnEquals"].(map[string]any)["aws:SourceArn"]
				sources = append(sources, render(cond))
			}
		}
	}
	sort.Strings(sources)
	sort.Strings(rules)
	if !slices.Equal(sources, rules) {
		t.Errorf("events DLQ admits EventBridge from %v, want the rules %v", sources, rules)
	}
}

// TestAlarms: errors and throttles of every function, every queue holding a message, the
// API's 5xx, the streaming URL's 5xx (Url5xxCount by FunctionName); all notify the alarm topic when one is configured, none without.
func TestAlarms(t *testing.T) {
	alarms := resources("AWS::CloudWatch::Alarm")
	byName := map[string]map[string]any{}
	for _, a := range alarms {
		byName[props(a)["AlarmName"].(string)] = props(a)
	}
	ids := functionIDs(t)
	want := map[string][3]string{} // name → namespace, metric, dimension value
	// the functions' own metrics (TestMetricAlarms): the sweep's on the wake function, two by metric math
	want["archmax-test-sweep-finds"] = [3]string{"archmax", "SweepFinds", "wake"}
	math := []string{"archmax-test-model-throttling", "archmax-test-budget-breaches"}
	for _, fn := range FunctionNames {
		want["archmax-test-"+fn+"-errors"] = [3]string{"AWS/Lambda", "Errors", "${" + ids[fn] + "}"}
		want["archmax-test-"+fn+"-throttles"] = [3]string{"AWS/Lambda", "Throttles", "${" + ids[fn] + "}"}
	}
	for _, q := range []string{"turn-failed", "decide-failed", "deliver-failed", "wake-failed", "stream-failed", "events-dlq", "schedules-dlq"} {
		want["archmax-test-dlq-"+strings.TrimSuffix(strings.TrimSuffix(q, "-failed"), "-dlq")] = [3]string{"AWS/SQS", "ApproximateNumberOfMessagesVisible", "${" + queueID(t, q) + ".QueueName}"}
	}
	want["archmax-test-api-5xx"] = [3]string{"AWS/ApiGateway", "5xx", "${" + only(t, "AWS::ApiGatewayV2::Api") + "}"}
	// a failed streamed request is the URL's 5xx answer, not the function's Errors
	want["archmax-test-stream-5xx"] = [3]string{"AWS/Lambda", "Url5xxCount", "${" + ids[FnStream] + "}"}
	withoutNotifications := len(want)
	// the test workspace's host file sends notifications: their failed publishes (no dimension)
	want["archmax-test-notification-publish-failures"] = [3]string{"archmax", "NotificationPublishFailures", ""}
	if len(alarms) != len(want)+len(math) {
		t.Errorf("%d alarms, want %d", len(alarms), len(want)+len(math))
	}
	for name, w := range want {
		p := byName[name]
		if p == nil {
			t.Errorf("no alarm %s", name)
			continue
		}
		dims, _ := p["Dimensions"].([]any)
		if p["Namespace"] != w[0] || p["MetricName"] != w[1] || (w[2] == "") != (len(dims) == 0) ||
			(w[2] != "" && (len(dims) != 1 || !strings.Contains(renderDeep(dims), `"Value":"`+w[2]+`"`))) {
			t.Errorf("alarm %s watches %v %v %v, want %v", name, p["Namespace"], p["MetricName"], dims, w)
		}
		if p["Threshold"] != 1.0 || p["ComparisonOperator"] != "GreaterThanOrEqualToThreshold" || p["EvaluationPeriods"] != 1.0 ||
			p["Period"] != 300.0 || p["TreatMissingData"] != "notBreaching" {
			t.Errorf("alarm %s: %v %v %v period %v missing %v, want ≥ 1 in one 5-minute period, missing data not breaching",
				name, p["ComparisonOperator"], p["Threshold"], p["EvaluationPeriods"], p["Period"], p["TreatMissingData"])
		}
		if !slices.Equal(strs(p["AlarmActions"]), []string{testAlarmTopic}) || !slices.Equal(strs(p["OKActions"]), []string{testAlarmTopic}) {
			t.Errorf("alarm %s notifies %v / %v, want %s", name, p["AlarmActions"], p["OKActions"], testAlarmTopic)
		}
	}
	// the streaming URL's alarm: the Sum of Url5xxCount on the stream function's name
	if a := byName["archmax-test-stream-5xx"]; a != nil &&
		(a["Statistic"] != "Sum" || renderDeep(a["Dimensions"]) != `[{"Name":"FunctionName","Value":"${`+ids[FnStream]+`}"}]`) {
		t.Errorf("stream-5xx: statistic %v, dimensions %s; want Sum by FunctionName of %s", a["Statistic"], renderDeep(a["Dimensions"]), ids[FnStream])
	}
	n := 0
	for _, r := range jwtJSON["Resources"].(map[string]any) {
		r := r.(map[string]any)
		if r["Type"] != "AWS::CloudWatch::Alarm" {
			continue
		}
		n++
		if p := props(r); p["AlarmActions"] != nil || p["OKActions"] != nil {
			t.Errorf("no alarm topic, yet alarm %v notifies %v", p["AlarmName"], p["AlarmActions"])
		}
	}
	if n != withoutNotifications+len(math) {
		t.Errorf("without an alarm topic and a workspace: %d alarms, want %d", n, withoutNotifications+len(math))
	}
}

// TestMetricAlarms (MT22-5): on the functions' own metrics (core/metrics), by their
// `function` rollup — the throttling rate is the model functions' ModelThrottles over their
// ModelCalls in 5 minutes, at or over the modelThrottleRate threshold (default 0.05); a
// budget breach is one BudgetBreaches in any of them — each with at most the 10 metrics an
// alarm's math may use, missing data as 0 and not breaching, on the alarm topic.
func TestMetricAlarms(t *testing.T) {
	byName := map[string]map[string]any{}
	for _, a := range resources("AWS::CloudWatch::Alarm") {
		byName[props(a)["AlarmName"].(string)] = props(a)
	}
	for _, c := range []struct {
		name, expr string
		metrics    []string
		threshold  float64
	}{
		{"model-throttling", "IF((FILL(c_turn, 0) + FILL(c_decide, 0) + FILL(c_deliver, 0) + FILL(c_wake, 0) + FILL(c_stream, 0)) > 0, " +
			"(FILL(t_turn, 0) + FILL(t_decide, 0) + FILL(t_deliver, 0) + FILL(t_wake, 0) + FILL(t_stream, 0)) / " +
			"(FILL(c_turn, 0) + FILL(c_decide, 0) + FILL(c_deliver, 0) + FILL(c_wake, 0) + FILL(c_stream, 0)), 0)",
			[]string{"ModelCalls", "ModelThrottles"}, DefaultModelThrottleRate},
		{"budget-breaches", "(FILL(b_turn, 0) + FILL(b_decide, 0) + FILL(b_deliver, 0) + FILL(b_wake, 0) + FILL(b_stream, 0))",
			[]string{"BudgetBreaches"}, 1},
	} {
		p := byName["archmax-test-"+c.name]
		if p == nil {
			t.Errorf("no alarm %s", c.name)
			continue
		}
		if p["Threshold"] != c.threshold || p["ComparisonOperator"] != "GreaterThanOrEqualToThreshold" || p["EvaluationPeriods"] != 1.0 ||
			p["TreatMissingData"] != "notBreaching" || p["MetricName"] != nil {
			t.Errorf("alarm %s: %v %v %v missing %v", c.name, p["ComparisonOperator"], p["Threshold"], p["EvaluationPeriods"], p["TreatMissingData"])
		}
		if !slices.Equal(strs(p["AlarmActions"]), []string{testAlarmTopic}) || !slices.Equal(strs(p["OKActions"]), []string{testAlarmTopic}) {
			t.Errorf("alarm %s notifies %v / %v", c.name, p["AlarmActions"], p["OKActions"])
		}
		var exprs, ids []string
		stats := map[string]string{} // id → metric/function
		for _, q := range p["Metrics"].([]any) {
			q := q.(map[string]any)
			if e, ok := q["Expression"].(string); ok {
				if q["ReturnData"] != true {
					t.Errorf("%s: expression %s does not return data", c.name, e)
				}
				exprs = append(exprs, e)
				continue
			}
			ms := q["MetricStat"].(map[string]any)
			m := ms["Metric"].(map[string]any)
			dims := m["Dimensions"].([]any)
			d := dims[0].(map[string]any)
			if m["Namespace"] != "archmax" || len(dims) != 1 || d["Name"] != "function" || ms["Period"] != 300.0 || ms["Stat"] != "Sum" || q["ReturnData"] != false {
				t.Errorf("%s: metric %v", c.name, q)
			}
			stats[q["Id"].(string)] = m["MetricName"].(string) + "/" + d["Value"].(string)
			ids = append(ids, q["Id"].(string))
		}
		if len(exprs) != 1 || exprs[0] != c.expr {
			t.Errorf("%s watches %q, want %q", c.name, exprs, c.expr)
		}
		var want []string
		for _, m := range c.metrics {
			for _, fn := range ModelFunctions {
				want = append(want, m+"/"+fn)
			}
		}
		got := slices.Sorted(maps.Values(stats))
		slices.Sort(want)
		if !slices.Equal(got, want) || len(stats) > 10 {
			t.Errorf("%s uses %v, want %v (at most 10)", c.name, stats, want)
		}
		if !slices.IsSorted(ids) { // the template is the same at every synth
			t.Errorf("%s lists its metrics in the order %v", c.name, ids)
		}
	}
}

// TestThrottlingTracingLogs: the API's default stage is throttled and logs each request
// to its own log group; every function traces actively; reserved concurrency is set where
// configured only.
func TestThrottlingTracingLogs(t *testing.T) {
	stage := props(resources("AWS::ApiGatewayV2::Stage")[only(t, "AWS::ApiGatewayV2::Stage")])
	rs, _ := stage["DefaultRouteSettings"].(map[string]any)
	if rs["ThrottlingRateLimit"] != 25.0 || rs["ThrottlingBurstLimit"] != 50.0 {
		t.Errorf("stage throttling %v, want 25/s, burst 50", rs)
	}
	logs := ""
	for id, r := range resources("AWS::Logs::LogGroup") {
		if props(r)["LogGroupName"] == "/aws/apigateway/archmax-test/access" {
			logs = id
			if props(r)["RetentionInDays"] != 30.0 {
				t.Errorf("access logs keep %v days", props(r)["RetentionInDays"])
			}
		}
	}
	al, _ := stage["AccessLogSettings"].(map[string]any)
	if render(al["DestinationArn"]) != "${"+logs+".Arn}" {
		t.Errorf("access logs go to %v, want the log group %s", al["DestinationArn"], logs)
	}
	var format map[string]string
	if err := json.Unmarshal([]byte(al["Format"].(string)), &format); err != nil || format["requestId"] != "$context.requestId" ||
		format["status"] != "$context.status" || format["routeKey"] != "$context.routeKey" || format["caller"] != "$context.identity.userArn" {
		t.Errorf("access log format %v (%v)", al["Format"], err)
	}
	check(t, "default throttling without parameters", func() {
		jwtTmpl.HasResourceProperties(jsii.String("AWS::ApiGatewayV2::Stage"), map[string]any{
			"DefaultRouteSettings": map[string]any{"ThrottlingRateLimit": DefaultAPIThrottleRate, "ThrottlingBurstLimit": DefaultAPIThrottleBurst}})
	})
	fns := resources("AWS::Lambda::Function")
	for fn, id := range functionIDs(t) {
		p := props(fns[id])
		if renderDeep(p["TracingConfig"]) != `{"Mode":"Active"}` {
			t.Errorf("%s: tracing %v, want Active", fn, p["TracingConfig"])
		}
		want := map[string]any{FnTurn: 20.0, FnWake: 5.0}[fn]
		if p["ReservedConcurrentExecutions"] != want {
			t.Errorf("%s: reserved concurrency %v, want %v", fn, p["ReservedConcurrentExecutions"], want)
		}
	}
}

// TestOperationsFromContext: the operations parameters and their refusals.
func TestOperationsFromContext(t *testing.T) {
	get := func(kv map[string]string) func(key, def string) string {
		return func(key, def string) string {
			if v, ok := kv[key]; ok {
				return v
			}
			return def
		}
	}
	o, err := operationsFromContext(get(nil))
	if err != nil || o.AlarmTopicARN != "" || o.ReservedConcurrency != nil || o.APIThrottleRate != DefaultAPIThrottleRate || o.APIThrottleBurst != DefaultAPIThrottleBurst ||
		o.ModelThrottleRate != DefaultModelThrottleRate {
		t.Errorf("defaults: %+v %v", o, err)
	}
	o, err = operationsFromContext(get(map[string]string{CtxAlarmTopic: testAlarmTopic, CtxReservedConcurrency: "turn=20, wake = 5",
		CtxAPIThrottleRate: "12.5", CtxAPIThrottleBurst: "30", CtxModelThrottleRate: "0.2"}))
	if err != nil || o.check() != nil || o.AlarmTopicARN != testAlarmTopic || o.ReservedConcurrency[FnTurn] != 20 || o.ReservedConcurrency[FnWake] != 5 ||
		o.APIThrottleRate != 12.5 || o.APIThrottleBurst != 30 || o.ModelThrottleRate != 0.2 {
		t.Errorf("parameters: %+v %v", o, err)
	}
	for name, kv := range map[string]map[string]string{
		"topic":          {CtxAlarmTopic: "oncall"},
		"unknown fn":     {CtxReservedConcurrency: "turns=2"},
		"zero":           {CtxReservedConcurrency: "turn=0"},
		"not a number":   {CtxReservedConcurrency: "turn=x"},
		"no =":           {CtxReservedConcurrency: "turn"},
		"rate":           {CtxAPIThrottleRate: "0"},
		"burst":          {CtxAPIThrottleBurst: "-1"},
		"burst fraction": {CtxAPIThrottleBurst: "1.5"},
		"throttle rate":  {CtxModelThrottleRate: "0"},
		"rate not a num": {CtxModelThrottleRate: "NaN"},
	} {
		o, err := operationsFromContext(get(kv))
		if err == nil {
			err = o.check()
		}
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	// through the CDK context too
	build := t.TempDir()
	for _, fn := range FunctionNames {
		must(os.MkdirAll(filepath.Join(build, fn), 0o755))
		must(os.WriteFile(filepath.Join(build, fn, "bootstrap"), nil, 0o755))
	}
	kv := map[string]any{CtxBuildDir: build, CtxAlarmTopic: testAlarmTopic, CtxReservedConcurrency: "deliver=3"}
	c, err := ConfigFromContext(awscdk.NewApp(&awscdk.AppProps{Context: &kv}))
	if err != nil || c.Ops.AlarmTopicARN != testAlarmTopic || c.Ops.ReservedConcurrency[FnDeliver] != 3 {
		t.Errorf("context: %+v %v", c.Ops, err)
	}
	kv[CtxReservedConcurrency] = "sessions=0"
	if _, err := ConfigFromContext(awscdk.NewApp(&awscdk.AppProps{Context: &kv})); err == nil {
		t.Error("reserved concurrency 0 through the context: no error")
	}
}
