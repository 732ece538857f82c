package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/core/model"
)

// errorLine decodes a --json error record.
func errorLine(t *testing.T, line string) (code, message string, details map[string]any) {
	t.Helper()
	var rec struct {
		Error struct {
			Code    string         `json:"code"`
			Message string         `json:"message"`
			Details map[string]any `json:"details"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(line), &rec); err != nil || rec.Error.Code == "" || rec.Error.Details == nil {
		t.Fatalf("not an error record (%v): %s", err, line)
	}
	return rec.Error.Code, rec.Error.Message, rec.Error.Details
}

// With --json every failure is one typed record on stdout — a usage error, a refusal with
// the HTTP API's code and details, a failure the CLI finds itself — and the stderr line stays.
func TestJSONFailuresAreTypedRecords(t *testing.T) {
	store := t.TempDir()
	for _, c := range []struct {
		name, code string
		exit       int
		args       []string
		details    map[string]any
	}{
		{"usage", "UsageError", exitUsage, []string{"run", "--json", "--bogus"}, nil},
		{"no such session", "SessionNotFoundError", exitFail, []string{"sessions", "--json", "--store", store, "--workspace", ws, "nope"},
			map[string]any{"sessionId": "nope"}},
		{"decide an unknown session", "SessionNotFoundError", exitFail, []string{"decide", "--json", "--store", store, "--workspace", ws,
			"--model-script", ws + "/model-scripts/happy.model.yaml", "nobody", "--to", "x"}, nil},
		{"unknown workflow", "UnknownWorkflowError", exitFail, []string{"run", "--json", "--store", store, "--workspace", ws,
			"--model-script", ws + "/model-scripts/happy.model.yaml", "no-such-flow", "hi"}, map[string]any{"workflow": "no-such-flow"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := run(t, c.args...)
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if code != c.exit || len(lines) != 1 || !strings.HasPrefix(errs, "archmax: ") {
				t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errs)
			}
			got, msg, details := errorLine(t, lines[0])
			if got != c.code || msg == "" || details["exitCode"] != float64(c.exit) {
				t.Errorf("record %s", lines[0])
			}
			for k, v := range c.details {
				if details[k] != v {
					t.Errorf("details.%s = %v, want %v", k, details[k], v)
				}
			}
		})
	}
}

// A model call that fails mid-turn: the error record, then the session's outcome as stored
// after it is the stream's last line.
func TestJSONFailedModelCallEndsWithTheOutcome(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "fail.model.yaml")
	if err := os.WriteFile(script, []byte("agent:\n  - text: hi\nerrors:\n  - { role: agent, call: 0, error: ValidationException, times: 5 }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ := run(t, "run", "--json", "--workspace", ws, "--store", dir, "--session", "f-1", "--model-script", script,
		"access-request", "Hi, I'm Dana from the platform team. I need badge access to the east lab, please.")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != exitFail || len(lines) < 3 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	ecode, _, details := errorLine(t, lines[len(lines)-2])
	if ecode != "ModelCallError" || details["providerCode"] != "ValidationException" {
		t.Errorf("error record %s", lines[len(lines)-2])
	}
	var last map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last["type"] != "outcome" || last["sessionId"] != "f-1" ||
		last["state"] != "check-grants" || last["interrupted"] != true || last["lastError"] == nil {
		t.Errorf("last line %s (%v)", lines[len(lines)-1], err)
	}
}

// noAWS leaves the process with no AWS region, profile or credentials to find.
func noAWS(t *testing.T) {
	for _, k := range []string{"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
		"AWS_SESSION_TOKEN", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_WEB_IDENTITY_TOKEN_FILE",
		"AWS_ROLE_ARN", envModel, envModelScript} {
		t.Setenv(k, "")
	}
	dir := t.TempDir()
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

// What a new user lacks before Bedrock answers anything — a region, a model id the region
// can call, credentials — is said at once, with what to do, and no session is started.
func TestBedrockPreflightHints(t *testing.T) {
	noAWS(t)
	store := t.TempDir()
	for _, c := range []struct {
		name     string
		flags    []string
		exit     int
		code     string
		say, fix string
	}{
		{"no region", nil, exitUsage, codeNoRegion, "no AWS region for Amazon Bedrock", "pass --region REGION (e.g. --region us-east-1) or set AWS_REGION"},
		{"us. profile elsewhere", []string{"--region", "eu-west-1"}, exitUsage, codeProfileRegion,
			"is a 'us.' cross-region inference profile, which region eu-west-1 cannot call", "e.g. 'eu.' for eu-west-1"},
		{"eu. profile in the US", []string{"--region", "us-west-2", "--model", "eu.anthropic.claude-sonnet-4-5-20250929-v1:0"}, exitUsage, codeProfileRegion,
			"which region us-west-2 cannot call", "--region eu-west-1"},
		{"no credentials", []string{"--region", "us-east-1"}, exitFail, codeNoCredentials, "no AWS credentials for Amazon Bedrock",
			"set AWS_PROFILE to a profile of ~/.aws/config (`aws configure` writes one"},
		{"a model's own id anywhere", []string{"--region", "eu-west-1", "--model", "anthropic.claude-3-haiku-20240307-v1:0"}, exitFail, codeNoCredentials,
			"no AWS credentials", "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"run", "--workspace", ws, "--store", store, "--bedrock"}, c.flags...)
			code, out, errs := run(t, append(args, "access-request", "hi")...)
			if code != c.exit || out != "" || !strings.Contains(errs, c.say) || !strings.Contains(errs, "\n  hint: ") || !strings.Contains(errs, c.fix) ||
				strings.Contains(errs, "session ") {
				t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errs)
			}
			code, out, _ = run(t, append(append(args, "--json"), "access-request", "hi")...)
			got, _, details := errorLine(t, strings.TrimSpace(out))
			if code != c.exit || got != c.code || !strings.Contains(details["hint"].(string), c.fix) {
				t.Errorf("--json: exit %d %s", code, out)
			}
		})
	}
	if entries, _ := os.ReadDir(filepath.Join(store, "log", "sessions")); len(entries) != 0 {
		t.Errorf("a refused preflight started %d session(s)", len(entries))
	}
}

// A failed model call whose text names the cause gets its hint too (a call that the
// preflight could not foresee: a per-state model id, credentials that expired mid-turn).
func TestModelCallHints(t *testing.T) {
	for msg, want := range map[string]string{
		"operation error Bedrock Runtime: Converse, get identity: get credentials: failed to refresh cached credentials": credentialsHint,
		"The provided model identifier is invalid.": "cross-region inference profile",
	} {
		code := "RequestError"
		if strings.Contains(msg, "identifier") {
			code = "ValidationException"
		}
		if got := modelCallHint(&model.CallError{Code: code, Message: msg}); !strings.Contains(got, want) {
			t.Errorf("%q: hint %q", msg, got)
		}
	}
}

// A session id used again after the README's demo — its scripted model has nothing for a
// session that goes on, and again on the next run (the failed turn left it interrupted, not
// held: SS21-12) — is told to start a new one.
func TestReusedSessionIDHint(t *testing.T) {
	store := t.TempDir()
	args := func(msg string) []string {
		return []string{"run", "--workspace", ws, "--store", store, "--model-script", ws + "/model-scripts/two-turn.model.yaml",
			"--session", "demo-1", "access-request", msg}
	}
	for _, msg := range []string{"Hi, I need a new badge please.", "The print room — I'm on the finance team."} {
		if code, _, errs := run(t, args(msg)...); code != exitOK {
			t.Fatalf("demo: exit %d %s", code, errs)
		}
	}
	for i, want := range []string{"no remaining entry matches", "no remaining entry matches"} {
		code, _, errs := run(t, args("Hi, I need a new badge please.")...)
		if code != exitFail || !strings.Contains(errs, want) ||
			!strings.Contains(errs, "  hint: session 'demo-1' was used before (turn ") ||
			!strings.Contains(errs, "start a new one (another --session id, or none for a new session-<uuid>)") ||
			!strings.Contains(errs, "or remove the store "+store+" (`make clean` in this repository removes the demos' stores)") {
			t.Errorf("run %d again: exit %d\n%s", i+3, code, errs)
		}
	}
}

// --aws asks for credentials before it opens the store: one line and the hint, not the
// store's every failed call.
func TestAWSStoreWithoutCredentials(t *testing.T) {
	noAWS(t)
	t.Setenv("AWS_REGION", "us-east-1")
	code, out, errs := run(t, "sessions", "--aws", "--table", "t", "--bucket", "b", "--workspace", ws)
	if code != exitFail || out != "" || strings.Count(errs, "\n") != 2 ||
		!strings.HasPrefix(errs, "archmax: no AWS credentials for DynamoDB and S3 (--aws)") || !strings.Contains(errs, "  hint: "+credentialsHint) {
		t.Errorf("exit %d\n%s", code, errs)
	}
	if got := distinctLines("a\nb\na\nb\nc"); got != "a\nb\nc" {
		t.Errorf("distinctLines = %q", got)
	}
}

// A turn stopped on a model failure no retry fixes (mid-answer, or before any of it) leaves
// the session interrupted, not held: the next run on it starts a new turn from where it
// stopped, as serve's new message does (SS21-12).
func TestRunAfterAFailedModelCallGoesOn(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "ok.model.yaml")
	if err := os.WriteFile(ok, []byte("agent:\n  - text: Retried, here it is.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, fault := range []string{"afterChunks: 2", "times: 1"} {
		script := filepath.Join(dir, fmt.Sprintf("fail-%d.model.yaml", i))
		if err := os.WriteFile(script, []byte("agent:\n  - text: Here is a long answer that breaks off.\nerrors:\n  - { role: agent, call: 0, error: ValidationException, "+fault+" }\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		id := fmt.Sprintf("tf-%d", i)
		args := func(script, msg string) []string {
			return []string{"run", "--workspace", ws, "--store", dir, "--session", id, "--model-script", script, "access-request", msg}
		}
		if code, _, errs := run(t, args(script, "Hi, I'm Dana from the platform team. I need badge access to the east lab, please.")...); code != exitFail ||
			!strings.Contains(errs, "ValidationException") {
			t.Fatalf("%s: the failing run: exit %d\n%s", fault, code, errs)
		}
		code, out, errs := run(t, args(ok, "please retry")...)
		if code == exitFail || strings.Contains(errs, "has a turn in progress") || !strings.Contains(out+errs, "Retried, here it is.") {
			t.Errorf("%s: the run after it: exit %d\nstdout %s\nstderr %s", fault, code, out, errs)
		}
	}
}
