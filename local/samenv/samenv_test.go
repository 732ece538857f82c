package samenv

import (
	"strings"
	"testing"
)

const template = `{"Resources": {
  "Turn1A2B": {"Type": "AWS::Lambda::Function", "Properties": {"Environment": {"Variables": {
    "ARCHMAX_TABLE": {"Ref": "Table"}, "ARCHMAX_BUCKET": {"Ref": "Bucket"}, "ARCHMAX_MODEL": "m",
    "ARCHMAX_DYNAMODB_ENDPOINT": "", "ARCHMAX_S3_ENDPOINT": "", "ARCHMAX_BEDROCK_ENDPOINT": "",
    "ARCHMAX_WAKE_TARGET_ARN": "arn", "ARCHMAX_SCHEDULER_ROLE_ARN": "arn"}}}},
  "Sessions9F": {"Type": "AWS::Lambda::Function", "Properties": {"Environment": {"Variables": {
    "ARCHMAX_TABLE": {"Ref": "Table"}, "ARCHMAX_BUCKET": {"Ref": "Bucket"},
    "ARCHMAX_DYNAMODB_ENDPOINT": "", "ARCHMAX_S3_ENDPOINT": "", "ARCHMAX_BEDROCK_ENDPOINT": ""}}}},
  "CustomCDKBucketDeployment8693": {"Type": "AWS::Lambda::Function", "Properties": {"Handler": "index.handler"}},
  "Table": {"Type": "AWS::DynamoDB::Table"}
}}`

var engines = Engines{DynamoDB: "http://host.docker.internal:8000", S3: "http://host.docker.internal:9000",
	Bedrock: "http://host.docker.internal:9100", Table: "archmax-local", Bucket: "archmax-local"}

func TestGenerate(t *testing.T) {
	f, err := Generate([]byte(template), engines)
	if err != nil {
		t.Fatal(err)
	}
	if len(f) != 2 {
		t.Fatalf("functions %v, want Turn1A2B and Sessions9F only (not the CDK's helper)", f)
	}
	turn := f["Turn1A2B"]
	if turn[EnvDynamoDBEndpoint] != engines.DynamoDB || turn[EnvS3Endpoint] != engines.S3 || turn[EnvBedrockEndpoint] != engines.Bedrock ||
		turn[EnvTable] != "archmax-local" || turn[EnvBucket] != "archmax-local" {
		t.Errorf("turn: %v", turn)
	}
	if v, ok := turn[EnvWakeTargetARN]; !ok || v != "" {
		t.Errorf("turn: the wake target is not cleared: %v", turn)
	}
	if _, ok := turn["ARCHMAX_MODEL"]; ok {
		t.Errorf("turn: the model is overridden: %v", turn)
	}
	if _, ok := f["Sessions9F"][EnvWakeTargetARN]; ok {
		t.Errorf("sessions: a variable it does not declare is written: %v", f["Sessions9F"])
	}
}

func TestGenerateRefuses(t *testing.T) {
	undeclared := strings.Replace(template, `"ARCHMAX_S3_ENDPOINT": "", "ARCHMAX_BEDROCK_ENDPOINT": ""}}}},
  "Custom`, `"ARCHMAX_BEDROCK_ENDPOINT": ""}}}},
  "Custom`, 1)
	if _, err := Generate([]byte(undeclared), engines); err == nil || !strings.Contains(err.Error(), "Sessions9F: ARCHMAX_S3_ENDPOINT") {
		t.Errorf("a function without the S3 endpoint variable: %v", err)
	}
	noBedrock := engines
	noBedrock.Bedrock = ""
	if _, err := Generate([]byte(template), noBedrock); err == nil || !strings.Contains(err.Error(), EnvBedrockEndpoint) {
		t.Errorf("no Bedrock endpoint: %v", err)
	}
	if _, err := Generate([]byte(`{"Resources": {}}`), engines); err == nil {
		t.Error("a template without functions")
	}
	if _, err := Generate([]byte(`{`), engines); err == nil {
		t.Error("a template that is no JSON")
	}
}
