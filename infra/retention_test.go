package main

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/aws/jsii-runtime-go"
)

// RD22-8, RD22-9: the table's TTL is on the heads' ttl attribute and its stream carries the
// old images; one event source mapping puts the stream on the wake function, filtered to
// the TTL's head removals, bisecting, reporting failed records, retrying, then the wake
// function's on-failure queue; the session TTL reaches exactly the functions that commit.
func TestRetention(t *testing.T) {
	table := only(t, "AWS::DynamoDB::Table")
	check(t, "table TTL and stream", func() {
		tmpl.HasResourceProperties(jsii.String("AWS::DynamoDB::Table"), map[string]any{
			"TimeToLiveSpecification": map[string]any{"AttributeName": AttrTTL, "Enabled": true},
			"StreamSpecification":     map[string]any{"StreamViewType": "OLD_IMAGE"},
		})
	})
	maps := resources("AWS::Lambda::EventSourceMapping")
	if len(maps) != 1 {
		t.Fatalf("%d event source mappings, want 1", len(maps))
	}
	ids := functionIDs(t)
	for _, m := range maps {
		p := props(m)
		if got := render(p["FunctionName"]); got != "${"+ids[FnWake]+"}" {
			t.Errorf("mapping onto %s, want the wake function", got)
		}
		if got := render(p["EventSourceArn"]); got != "${"+table+".StreamArn}" {
			t.Errorf("mapping source %s, want the table's stream", got)
		}
		if p["StartingPosition"] != "TRIM_HORIZON" || p["BisectBatchOnFunctionError"] != true || p["BatchSize"] != float64(ExpiryBatchSize) ||
			p["MaximumRetryAttempts"] != float64(ExpiryRetries) || !reflect.DeepEqual(p["FunctionResponseTypes"], []any{"ReportBatchItemFailures"}) {
			t.Errorf("mapping settings %v", p)
		}
		filters := p["FilterCriteria"].(map[string]any)["Filters"].([]any)
		if len(filters) != 1 {
			t.Fatalf("filters %v", filters)
		}
		var got, want any
		if err := json.Unmarshal([]byte(filters[0].(map[string]any)["Pattern"].(string)), &got); err != nil {
			t.Fatal(err)
		}
		_ = json.Unmarshal([]byte(`{"eventName":["REMOVE"],"userIdentity":{"type":["Service"],"principalId":["dynamodb.amazonaws.com"]},"dynamodb":{"Keys":{"sk":{"S":["HEAD"]}}}}`), &want)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("filter %v, want the TTL's head removals", got)
		}
		dest := render(p["DestinationConfig"].(map[string]any)["OnFailure"].(map[string]any)["Destination"])
		wakeQueue := ""
		for id, q := range resources("AWS::SQS::Queue") {
			if props(q)["QueueName"] == "archmax-test-wake-failed" {
				wakeQueue = id
			}
		}
		if wakeQueue == "" || dest != "${"+wakeQueue+".Arn}" {
			t.Errorf("on-failure destination %s, want the wake function's queue (%s)", dest, wakeQueue)
		}
	}
	fns := resources("AWS::Lambda::Function")
	for fn, id := range ids {
		vars := props(fns[id])["Environment"].(map[string]any)["Variables"].(map[string]any)
		v, has := vars[EnvSessionTTL]
		if AccessOf[fn].Host != has || has && v != "30d" {
			t.Errorf("%s: %s = %v (set: %v)", fn, EnvSessionTTL, v, has)
		}
	}
}
