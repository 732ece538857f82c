package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/archmax-ai/archmax/local/samenv"
)

// TestSAMLocalEnvFile holds the env file `make local-engines` writes for `sam local
// --env-vars` (local/scripts/local-engines.sh, through local/cmd/localengines' env, which is
// local/samenv.Generate) to the synthesized template (SL22-1, SL22-2): every endpoint
// variable is declared, empty, on every function; the file has one entry per function and
// none for the CDK's helpers; every variable in an entry is declared on that function (SAM
// drops the others); the endpoints, table and bucket are set on all. It checks the file the
// script itself prints (its env mode starts nothing), then the generator's for both
// template variants.
func TestSAMLocalEnvFile(t *testing.T) {
	engines := samenv.Engines{DynamoDB: "http://host.docker.internal:8000", S3: "http://host.docker.internal:9000",
		Bedrock: "http://host.docker.internal:9100", Table: "archmax-local", Bucket: "archmax-local"}
	if slices.Compare(EndpointVars, samenv.EndpointVars) != 0 {
		t.Fatalf("the stack declares %v, the generator sets %v", EndpointVars, samenv.EndpointVars)
	}
	checkFile := func(t *testing.T, doc map[string]any, file samenv.File) {
		t.Helper()
		fns := map[string]map[string]any{}
		for id, r := range doc["Resources"].(map[string]any) {
			if r := r.(map[string]any); r["Type"] == "AWS::Lambda::Function" && !cdkHelper(id) {
				env, _ := props(r)["Environment"].(map[string]any)
				vars, _ := env["Variables"].(map[string]any)
				fns[id] = vars
			}
		}
		if len(fns) != len(FunctionNames) {
			t.Fatalf("%d functions in the template, want %d", len(fns), len(FunctionNames))
		}
		for id, vars := range fns {
			for _, v := range EndpointVars {
				if val, ok := vars[v]; !ok || val != "" {
					t.Errorf("%s: %s is %v (declared %v), want declared empty", id, v, val, ok)
				}
			}
			entry, ok := file[id]
			if !ok {
				t.Errorf("%s: no entry in the env file", id)
				continue
			}
			for k := range entry {
				if _, declared := vars[k]; !declared {
					t.Errorf("%s: the env file sets %s, which the function does not declare (SAM would drop it)", id, k)
				}
			}
			for k, want := range map[string]string{samenv.EnvDynamoDBEndpoint: engines.DynamoDB, samenv.EnvS3Endpoint: engines.S3,
				samenv.EnvBedrockEndpoint: engines.Bedrock, samenv.EnvTable: engines.Table, samenv.EnvBucket: engines.Bucket} {
				if entry[k] != want {
					t.Errorf("%s: %s = %q, want %q", id, k, entry[k], want)
				}
			}
			if _, schedules := vars[EnvWakeTargetARN]; schedules && (entry[EnvWakeTargetARN] != "" || entry[EnvSchedulerRoleARN] != "") {
				t.Errorf("%s: the Scheduler target is not cleared: %v", id, entry)
			}
		}
		for id := range file {
			if _, ok := fns[id]; !ok {
				t.Errorf("the env file names %s, which is no archmax function of the template", id)
			}
		}
	}

	t.Run("script", func(t *testing.T) {
		dir := t.TempDir()
		tmplFile := filepath.Join(dir, "template.json")
		b, err := json.Marshal(tmplJSON)
		must(err)
		must(os.WriteFile(tmplFile, b, 0o644))
		cmd := exec.Command("../local/scripts/local-engines.sh", "env")
		cmd.Env = append(os.Environ(), "TEMPLATE="+tmplFile, "LOCAL_ENGINES_STATE="+dir)
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("local-engines.sh env: %v", err)
		}
		var file samenv.File
		if err := json.Unmarshal(out, &file); err != nil {
			t.Fatalf("the env file is not JSON of objects by logical id: %v\n%s", err, out)
		}
		checkFile(t, tmplJSON, file)
	})
	for name, doc := range map[string]map[string]any{"workspace and IAM": tmplJSON, "JWT": jwtJSON} {
		t.Run(name, func(t *testing.T) {
			b, err := json.Marshal(doc)
			must(err)
			file, err := samenv.Generate(b, engines)
			if err != nil {
				t.Fatal(err)
			}
			checkFile(t, doc, file)
		})
	}
}
