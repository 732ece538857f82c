package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/core/artifacts"
	"github.com/archmax-ai/archmax/local/runner"
)

// cliProcessEnv, when set, makes this test binary the CLI: TestCLIProcess runs the
// arguments after "--" and exits with the CLI's status (the helper-process pattern), so a
// test can run each command in a process of its own.
const cliProcessEnv = "ARCHMAX_TEST_CLI_PROCESS"

func TestCLIProcess(t *testing.T) {
	if os.Getenv(cliProcessEnv) != "1" {
		return // not a test of its own: the entry point of the subprocesses other tests start
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	os.Exit(execute(context.Background(), args, os.Stdout, os.Stderr))
}

// cliProcess runs the CLI with args in a process of its own and returns its status and output.
func cliProcess(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestCLIProcess$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), cliProcessEnv+"=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

// A session parked by one process and decided by another: a third writes its artifacts with
// `archmax sessions ID --artifacts DIR`, each holding what both wrote, byte for byte what this
// process renders from the same store.
func TestSessionArtifactsFromTheCLIAcrossProcesses(t *testing.T) {
	wsDir, script := cliParkWorkspace(t)
	store := t.TempDir()
	common := []string{"--workspace", wsDir, "--store", store}
	if code, out, errs := cliProcess(t, append([]string{"run", "--session", "a1", "--model-script", script}, append(common, "desk", "file it")...)...); code != exitOK || out != "Sent to sign-off.\n" {
		t.Fatalf("run: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := cliProcess(t, append([]string{"decide", "--comment", "fine", "--model-script", script}, append(common, "a1", "done")...)...); code != exitOK || out != "Done.\n" {
		t.Fatalf("decide: exit %d\n%s%s", code, out, errs)
	}
	dir := filepath.Join(t.TempDir(), "out")
	code, out, errs := cliProcess(t, append([]string{"sessions", "a1", "--artifacts", dir}, common...)...)
	if code != exitOK || errs != "" {
		t.Fatalf("sessions --artifacts: exit %d\n%s%s", code, out, errs)
	}
	var want []string
	for _, name := range artifacts.Names {
		want = append(want, filepath.Join(dir, name))
	}
	if strings.TrimSpace(out) != strings.Join(want, "\n") {
		t.Errorf("printed %q, want the six paths", out)
	}
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var trail struct {
		Steps []struct{ To, Kind, Reason string } `json:"steps"`
	}
	if err := json.Unmarshal(read(artifacts.Trail), &trail); err != nil || len(trail.Steps) != 3 ||
		trail.Steps[0].Kind != "trigger" || trail.Steps[1].To != "signoff" || trail.Steps[2].Kind != "human" || trail.Steps[2].Reason != "fine" {
		t.Errorf("trail.json = %s", read(artifacts.Trail))
	}
	var traj artifacts.TrajectoryDoc
	if err := json.Unmarshal(read(artifacts.Trajectory), &traj); err != nil || traj.Prompt != "file it" || traj.FinalAnswer != "Done." || len(traj.Segments) != 3 {
		t.Errorf("trajectory.json = %s", read(artifacts.Trajectory))
	}
	if !strings.Contains(string(read(artifacts.GraphMermaid)), "signoff{{signoff}}") || !strings.Contains(string(read(artifacts.Variables)), `"trigger": {
      "value": "manual",
      "locked": true`) {
		t.Errorf("graph.mmd = %s\nvariables.json = %s", read(artifacts.GraphMermaid), read(artifacts.Variables))
	}
	var meta map[string]any
	if err := json.Unmarshal(read(artifacts.Metadata), &meta); err != nil || meta["runtimeContract"] != "archmax-harness@1" || meta["specHash"] == nil {
		t.Errorf("metadata.json = %s", read(artifacts.Metadata))
	}

	env, err := runner.Open(context.Background(), runner.Options{Workspace: wsDir, StoreDir: store, NoModel: true})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	sessions, err := env.Sessions()
	if err != nil {
		t.Fatal(err)
	}
	src, err := sessions.ArtifactSource(context.Background(), "a1")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range artifacts.Render(src) {
		if !bytes.Equal(f.Data, read(f.Name)) {
			t.Errorf("%s written by the CLI differs from this process's rendering:\n%s\n%s", f.Name, read(f.Name), f.Data)
		}
	}

	if code, _, errs := run(t, append([]string{"sessions", "--artifacts", dir}, common...)...); code != exitUsage || !strings.Contains(errs, "--artifacts DIR needs a SESSION") {
		t.Errorf("--artifacts without SESSION: exit %d %s", code, errs)
	}
	if code, _, errs := run(t, append([]string{"sessions", "nobody", "--artifacts", dir}, common...)...); code != exitFail || !strings.Contains(errs, "no session 'nobody'") {
		t.Errorf("an unknown session: exit %d %s", code, errs)
	}
}

// Four variables of 9,900 nested arrays each (the tester's: a 785 MB variables.json, 4 GB to
// write it) are written in size linear in them: ten levels indented, the rest compact.
func TestDeepVariablesAreWrittenInLinearSize(t *testing.T) {
	wsDir, script := cliParkWorkspace(t)
	store := t.TempDir()
	common := []string{"--workspace", wsDir, "--store", store}
	deep := strings.Repeat("[", 9900) + strings.Repeat("]", 9900)
	args := []string{"run", "--session", "deep", "--model-script", script}
	for _, v := range []string{"a", "b", "c", "d"} {
		args = append(args, "--var", v+"="+deep)
	}
	if code, out, errs := run(t, append(args, append(common, "desk", "file it")...)...); code != exitOK {
		t.Fatalf("run: exit %d\n%s%s", code, out, errs)
	}
	dir := filepath.Join(t.TempDir(), "out")
	if code, out, errs := run(t, append([]string{"sessions", "deep", "--artifacts", dir}, common...)...); code != exitOK || errs != "" {
		t.Fatalf("sessions --artifacts: exit %d\n%s%s", code, out, errs)
	}
	data, err := os.ReadFile(filepath.Join(dir, artifacts.Variables))
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > 4*len(deep)+4096 {
		t.Errorf("variables.json is %d bytes for four %d-byte values", len(data), len(deep))
	}
	var back struct {
		Variables map[string]struct{ Value any } `json:"variables"`
	}
	if err := json.Unmarshal(data, &back); err != nil || len(back.Variables) < 4 {
		t.Fatalf("variables.json does not read back: %v", err)
	}
}
