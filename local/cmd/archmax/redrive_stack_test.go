package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/archmax-ai/archmax/core/model/scripted"
	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/functions/handlers/assembly"
	"github.com/archmax-ai/archmax/functions/handlers/httpapi"
	"github.com/archmax-ai/archmax/functions/handlers/starts"
	"github.com/archmax-ai/archmax/local/conversefake"
	"github.com/archmax-ai/archmax/local/dynamotest"
	"github.com/archmax-ai/archmax/local/s3test"
)

// The turn function as the stack runs it — assembled from its environment over DynamoDB
// Local, gofakes3 and the Converse fake, as functions/turn's main assembles it — takes a
// start re-driven twice (from its on-failure queue, then from the bus's dead letter queue)
// and records it once: one session, one turn, one model call; the second answer is a
// duplicate. Skips without DynamoDB Local.
func TestRedriveAStartTwiceOnTheStack(t *testing.T) {
	_, table := dynamotest.NewTable(t) // skips without DYNAMODB_ENDPOINT
	const bucket = "archmax-redrive"
	s3c, s3URL := s3test.NewBucket(t, bucket)
	specs := t.TempDir()
	if err := os.MkdirAll(filepath.Join(specs, "workflows", "packing"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(specs, "workflows", "packing", "workflow.yaml"), []byte(packingWorkflow), 0o644); err != nil {
		t.Fatal(err)
	}
	s3test.Upload(t, s3c, bucket, specs, "specs/")
	script, err := scripted.Parse("packing.model.yaml", []byte("agent:\n  - when: { turn: 1, state: pack }\n    text: Packed.\n"))
	if err != nil {
		t.Fatal(err)
	}
	converse := conversefake.New(script)
	modelSrv := httptest.NewServer(converse)
	t.Cleanup(modelSrv.Close)
	env := map[string]string{
		assembly.EnvTable: table, assembly.EnvBucket: bucket, assembly.EnvModel: "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
		assembly.EnvDynamoDBEndpoint: os.Getenv(dynamotest.EndpointEnv), assembly.EnvS3Endpoint: s3URL, assembly.EnvBedrockEndpoint: modelSrv.URL,
		"AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local", "AWS_REGION": "us-east-1",
	}
	a, err := assembly.FromEnv(context.Background(), func(k string) string { return env[k] }, nil)
	if err != nil {
		t.Fatal(err)
	}
	turn := starts.New(a.Engines, a.Runner, []starts.Route{{Source: "orders.app", DetailType: "Order Placed", Workflow: "packing", Trigger: "order"}}, nil,
		httpapi.WithPolicy(a.Access))

	rig := newRedriveRig(t)
	rig.lambda.Register("archmax-dev-turn", rig.recording("turn", func(ctx context.Context, p []byte) (any, error) { return turn.Handle(ctx, p) }))

	rig.send(t, "turn-failed", record("archmax-dev-turn", startEvent), nil)
	if code, out, errs := rig.redrive(t, "--queue", "turn-failed"); code != exitOK {
		t.Fatalf("first: exit %d\n%s%s", code, out, errs)
	}
	rig.send(t, "events-dlq", startEvent, eventAttrs("archmax-dev-turn"))
	if code, out, errs := rig.redrive(t, "--queue", "events-dlq"); code != exitOK {
		t.Fatalf("second: exit %d\n%s%s", code, out, errs)
	}

	for _, inv := range rig.lambda.Invocations() {
		if inv.Error != "" {
			t.Errorf("invocation %d failed: %s", inv.Attempt, inv.Error)
		}
	}
	rig.mu.Lock()
	results := rig.results["turn"]
	rig.mu.Unlock()
	var first, second starts.Result
	if len(results) != 2 || json.Unmarshal([]byte(results[0]), &first) != nil || json.Unmarshal([]byte(results[1]), &second) != nil ||
		first.Duplicate || !second.Duplicate || first.SessionID != "o-17" || second.SessionID != "o-17" {
		t.Fatalf("answers = %v", results)
	}
	if n := len(converse.Requests()); n != 1 {
		t.Errorf("%d model calls for one start", n)
	}
	list, _, err := a.Engines.Sessions().List(context.Background(), session.ListOptions{})
	if err != nil || len(list) != 1 || list[0].SessionID != "o-17" || list[0].Turn != 1 {
		t.Errorf("sessions = %+v %v", list, err)
	}
}
