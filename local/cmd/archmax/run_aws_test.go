package main

import (
	"net"
	"strings"
	"testing"
)

// `run --aws` settings are checked before anything runs: a missing table or bucket names
// both the flag and the environment variable; AWS-only flags need --aws.
func TestRunAWSUsageErrors(t *testing.T) {
	t.Setenv("ARCHMAX_TABLE", "")
	t.Setenv("ARCHMAX_BUCKET", "")
	t.Setenv("AWS_ACCESS_KEY_ID", "local")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "local")
	happy := ws + "/model-scripts/happy.model.yaml"
	cases := []struct {
		name, msg string
		flags     []string
	}{
		{"no table", "--table or ARCHMAX_TABLE", []string{"--aws", "--bucket", "b"}},
		{"no bucket", "--bucket or ARCHMAX_BUCKET", []string{"--aws", "--table", "t"}},
		{"bad endpoint", `--endpoint-url "localhost:4566" is not an http(s) URL`, []string{"--aws", "--table", "t", "--bucket", "b", "--endpoint-url", "localhost:4566"}},
		{"table without aws", "--table needs --aws", []string{"--table", "t"}},
		{"create-table without aws", "--create-table needs --aws", []string{"--create-table"}},
		{"store with aws", "--store and --aws are mutually exclusive", []string{"--aws", "--store", t.TempDir(), "--table", "t", "--bucket", "b"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"run", "--workspace", ws, "--model-script", happy}, c.flags...)
			code, _, errs := run(t, append(args, "access-request", "hi")...)
			if code != exitUsage || !strings.Contains(errs, c.msg) || !strings.Contains(errs, "archmax run --help") {
				t.Errorf("exit %d (want %d), stderr %q (want %q)", code, exitUsage, errs, c.msg)
			}
		})
	}
}

// With --aws the session log is DynamoDB at --endpoint-url, the table coming from
// ARCHMAX_TABLE: an endpoint nobody answers fails the run (exit 1) in a DynamoDB call.
func TestRunAWSReachesDynamoDB(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there any more
	t.Setenv("ARCHMAX_TABLE", "sessions")
	t.Setenv("AWS_ACCESS_KEY_ID", "local")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "local")
	code, _, errs := run(t, "run", "--workspace", ws, "--model-script", ws+"/model-scripts/happy.model.yaml",
		"--aws", "--bucket", "b", "--endpoint-url", endpoint, "--create-table", "access-request", "hi")
	if code != exitFail || !strings.Contains(errs, "DynamoDB: DescribeTable") || !strings.Contains(errs, endpoint) {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
}
