// Package samenv writes the environment file `sam local invoke` and `sam local start-api`
// read with --env-vars (DECISIONS SL22-*): one object per function of the synthesized
// template, keyed by its logical id, pointing the functions at local engines. SAM replaces
// only the variables a function declares in the template, so every variable written here
// is one that function declares, and a function that does not declare a required one is an
// error rather than a silent miss. It reads the template's JSON only (no AWS, no I/O).
package samenv

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// The variables the file sets (functions/handlers/assembly.ConfigFromEnv reads them).
const (
	EnvTable            = "ARCHMAX_TABLE"
	EnvBucket           = "ARCHMAX_BUCKET"
	EnvDynamoDBEndpoint = "ARCHMAX_DYNAMODB_ENDPOINT"
	EnvS3Endpoint       = "ARCHMAX_S3_ENDPOINT"
	EnvBedrockEndpoint  = "ARCHMAX_BEDROCK_ENDPOINT"
	EnvWakeTargetARN    = "ARCHMAX_WAKE_TARGET_ARN"
	EnvSchedulerRoleARN = "ARCHMAX_SCHEDULER_ROLE_ARN"
	EnvSchedulerDLQARN  = "ARCHMAX_SCHEDULER_DLQ_ARN"
)

// EndpointVars are the endpoint overrides every function declares (empty in the template:
// the AWS default).
var EndpointVars = []string{EnvDynamoDBEndpoint, EnvS3Endpoint, EnvBedrockEndpoint}

// Required are the variables the file sets on every function: the endpoints, the table and
// the bucket.
var Required = append(slices.Clone(EndpointVars), EnvTable, EnvBucket)

// Cleared are set to "" on a function that declares them: locally there is no EventBridge
// Scheduler, so timed parks get no schedule (the assembly schedules only with a wake target).
var Cleared = []string{EnvWakeTargetARN, EnvSchedulerRoleARN, EnvSchedulerDLQARN}

// Engines are the local engines' endpoints as the functions' containers reach them
// (http://host.docker.internal:<port>) and the table and bucket made in them.
type Engines struct {
	DynamoDB, S3, Bedrock string
	Table, Bucket         string
}

// File is the --env-vars file: logical id → variable → value.
type File map[string]map[string]string

// Functions are the template's archmax functions — the AWS::Lambda::Function resources
// that declare ARCHMAX_TABLE (every one of the stack's functions reads the session log; the
// CDK's own helpers, such as the workspace upload's handler, declare nothing of archmax's):
// logical id → the names of the variables it declares (sorted).
func Functions(template []byte) (map[string][]string, error) {
	var t struct {
		Resources map[string]struct {
			Type       string
			Properties struct {
				Environment struct {
					Variables map[string]any
				}
			}
		}
	}
	if err := json.Unmarshal(template, &t); err != nil {
		return nil, fmt.Errorf("read the template: %w", err)
	}
	fns := map[string][]string{}
	for id, r := range t.Resources {
		if r.Type != "AWS::Lambda::Function" {
			continue
		}
		var vars []string
		for k := range r.Properties.Environment.Variables {
			vars = append(vars, k)
		}
		if !slices.Contains(vars, EnvTable) {
			continue
		}
		sort.Strings(vars)
		fns[id] = vars
	}
	if len(fns) == 0 {
		return nil, fmt.Errorf("the template declares no archmax function (an AWS::Lambda::Function with %s)", EnvTable)
	}
	return fns, nil
}

// Generate is the file for template and e: on every function the Required variables set
// to e's values and the Cleared ones it declares set to "". It fails naming each function
// that does not declare a Required variable (SAM would ignore it there: re-synthesize with
// the current infra/), and when an endpoint or name in e is empty.
func Generate(template []byte, e Engines) (File, error) {
	values := map[string]string{
		EnvDynamoDBEndpoint: e.DynamoDB, EnvS3Endpoint: e.S3, EnvBedrockEndpoint: e.Bedrock,
		EnvTable: e.Table, EnvBucket: e.Bucket,
	}
	for _, k := range Required {
		if strings.TrimSpace(values[k]) == "" {
			return nil, fmt.Errorf("no value for %s", k)
		}
	}
	fns, err := Functions(template)
	if err != nil {
		return nil, err
	}
	out := File{}
	var missing []string
	for id, declared := range fns {
		env := map[string]string{}
		for _, k := range Required {
			if !slices.Contains(declared, k) {
				missing = append(missing, id+": "+k)
				continue
			}
			env[k] = values[k]
		}
		for _, k := range Cleared {
			if slices.Contains(declared, k) {
				env[k] = ""
			}
		}
		out[id] = env
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, fmt.Errorf("the template's functions do not declare what sam local must override (synthesize it again with the current infra/): %s", strings.Join(missing, ", "))
	}
	return out, nil
}
