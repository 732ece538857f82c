//go:build linux

// Package rie runs the Lambda functions' real `bootstrap` binaries locally, without Docker,
// under AWS's Lambda Runtime Interface Emulator (aws-lambda-rie): the same binary `make
// build` packages, started by the emulator as Lambda starts it (the Runtime API, the
// function's environment, START/END/REPORT lines), invoked over the emulator's HTTP API
// POST /2015-03-31/functions/function/invocations.
//
// The emulator is a tool, not a dependency of the module: Install puts the pinned version
// (Version) into a cache directory with `go install`. It runs binaries of the host's
// architecture only, so tests build linux/<host arch> bootstraps with Build (the flags of
// `make build` otherwise) and start one Emulator per function on free loopback ports.
//
// MeasureInit times a bootstrap's init phase as Lambda counts it — process start until the
// runtime asks for its first invocation — against a stub of the Runtime API (the
// emulator's own "Init Duration" stops before the process has started, so it is not
// used).
//
// The package's test, TestLambdasUnderEmulator, invokes every function with its event of
// fixtures/events against the local test engines (DynamoDB Local, gofakes3, the Converse
// fake, the Scheduler fake and the Lambda Invoke fake); BenchmarkInit reports each
// bootstrap's init time. Linux only, as the emulator.
package rie

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The emulator pinned for the tests: the module has no tagged versions, so a pseudo-version.
const (
	Module  = "github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie"
	Version = "v0.0.0-20261030222936-bef5c4ba774d"
)

// EnvBinary names an environment variable that, when set, is the emulator binary to use
// instead of installing one.
const EnvBinary = "ARCHMAX_RIE"

// Functions are the Lambda functions of the bundle: functions/<name>, packaged as
// build/<name>/bootstrap.
var Functions = []string{"turn", "decide", "deliver", "wake", "sessions"}

// BuildFlags are the flags of `make build` (with GOOS=linux CGO_ENABLED=0) but -trimpath,
// which changes no behaviour and would share no compiled package with the test build's
// cache (measured: 45 s instead of 91 s for the five on a cold 2-core machine).
var BuildFlags = []string{"-tags", "lambda.norpc", "-ldflags=-s -w"}

// InvokePath is the emulator's invoke route (the Lambda Invoke API's, for the one function).
const InvokePath = "/2015-03-31/functions/function/invocations"

// UnreachableError is an install that failed because the Go module proxy (or the module's
// origin) cannot be reached: tests skip on it, and fail on any other install error.
type UnreachableError struct{ Output string }

func (e *UnreachableError) Error() string {
	return "go install " + Module + "@" + Version + ": the module proxy is unreachable:\n" + e.Output
}

var unreachable = regexp.MustCompile(`dial tcp|no such host|connection refused|i/o timeout|TLS handshake timeout|network is unreachable|proxyconnect|GOPROXY=off|module lookup disabled|server misbehaving|temporary failure in name resolution`)

// CacheDir is where Install keeps emulators: <user cache dir>/archmax/aws-lambda-rie.
func CacheDir() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "archmax", "aws-lambda-rie"), nil
}

// Install returns the path of the pinned emulator: $ARCHMAX_RIE when set, else
// <dir>/<Version>/aws-lambda-rie, installed there with `go install Module@Version` when
// absent (into a temporary directory first, then renamed, so concurrent installs never see
// a partial binary). An install that fails because the module proxy is unreachable is an
// *UnreachableError.
func Install(ctx context.Context, dir string) (string, error) {
	if p := os.Getenv(EnvBinary); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s: %w", EnvBinary, err)
		}
		return p, nil
	}
	final := filepath.Join(dir, Version, "aws-lambda-rie")
	if fi, err := os.Stat(final); err == nil && fi.Mode().IsRegular() {
		return final, nil
	}
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(final), ".install-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	cmd := exec.CommandContext(ctx, goCommand(), "install", Module+"@"+Version)
	cmd.Dir = tmp // outside any module: `go install pkg@version` builds the module as published
	cmd.Env = append(os.Environ(), "GOBIN="+tmp, "CGO_ENABLED=0", "GOWORK=off", "GOOS=", "GOARCH=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		if unreachable.Match(out) {
			return "", &UnreachableError{Output: strings.TrimSpace(string(out))}
		}
		return "", fmt.Errorf("go install %s@%s: %w\n%s", Module, Version, err, out)
	}
	if err := os.Rename(filepath.Join(tmp, "aws-lambda-rie"), final); err != nil {
		return "", err
	}
	return final, nil
}

// Build builds linux/goarch bootstraps of the named functions of the module at root, with
// BuildFlags, in one `go build` (the packages are compiled once), into
// <out>/<name>/bootstrap. It returns the paths by function name.
func Build(ctx context.Context, root, out, goarch string, names ...string) (map[string]string, error) {
	stage, err := os.MkdirTemp(out, ".stage-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(stage)
	args := append([]string{"build"}, BuildFlags...)
	args = append(args, "-o", stage+string(filepath.Separator))
	for _, n := range names {
		args = append(args, "./functions/"+n)
	}
	cmd := exec.CommandContext(ctx, goCommand(), args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+goarch, "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build of the functions (GOARCH=%s): %w\n%s", goarch, err, b)
	}
	paths := map[string]string{}
	for _, n := range names {
		dst := filepath.Join(out, n, "bootstrap")
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return nil, err
		}
		if err := os.Rename(filepath.Join(stage, n), dst); err != nil {
			return nil, err
		}
		paths[n] = dst
	}
	return paths, nil
}

// goCommand is the go command: the one on PATH, else the running toolchain's.
func goCommand() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}

// Emulator is one running aws-lambda-rie serving one bootstrap, like one Lambda execution
// environment: it runs the function's init at its first invocation and then one
// invocation at a time.
type Emulator struct {
	URL string // http://127.0.0.1:<port>

	cmd  *exec.Cmd
	out  *logBuffer
	done chan struct{}
	err  error // the process's exit, once done is closed
	stop sync.Once
}

// Start starts the emulator rie serving bootstrap with exactly the environment env (the
// emulator hands its own environment to the function, as Lambda hands the function's
// configuration), on two free loopback ports (its invoke API and the Runtime API), with
// the bootstrap's directory as working directory, and waits until the invoke API accepts
// connections. Stop it with Stop.
func Start(ctx context.Context, rie, bootstrap string, env []string) (*Emulator, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(ports[0])
	// Every argument that is not a flag is the command to exec: only flags, then the bootstrap.
	cmd := exec.Command(rie,
		"--runtime-interface-emulator-address="+addr,
		"--runtime-api-address=127.0.0.1:"+strconv.Itoa(ports[1]),
		"--log-level=warn",
		bootstrap)
	cmd.Dir = filepath.Dir(bootstrap)
	cmd.Env = env
	out := &logBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	e := &Emulator{URL: "http://" + addr, cmd: cmd, out: out, done: make(chan struct{})}
	go func() { e.err = cmd.Wait(); close(e.done) }()
	deadline := time.Now().Add(time.Minute) // a hang guard: a loaded machine starts it slowly
	for {
		c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err == nil {
			c.Close()
			return e, nil
		}
		select {
		case <-e.done:
			return nil, fmt.Errorf("aws-lambda-rie exited at start (%v):\n%s", e.err, out.String())
		case <-ctx.Done():
			e.Stop()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			e.Stop()
			return nil, fmt.Errorf("aws-lambda-rie did not listen on %s within a minute:\n%s", addr, out.String())
		}
	}
}

// Invoke sends one event and returns the emulator's HTTP status and body: 200 with the
// handler's response, or 200 with the Go runtime's {"errorMessage", "errorType"} for a
// handler error.
func (e *Emulator) Invoke(ctx context.Context, event []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.URL+InvokePath, bytes.NewReader(event))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// Output is everything the emulator and the function wrote so far: the emulator's
// START/END/REPORT lines and the function's own logs.
func (e *Emulator) Output() string { return e.out.String() }

// Stop ends the emulator and the bootstrap it started, by their pids: SIGTERM to the
// emulator (which then shuts its runtime down), SIGKILL to both if that has not ended it
// within 3 s; it waits for the emulator to exit. Safe to call more than once.
func (e *Emulator) Stop() {
	e.stop.Do(func() {
		kids := children(e.cmd.Process.Pid) // the bootstrap runs in its own process group
		_ = e.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-e.done:
		case <-time.After(3 * time.Second):
			_ = e.cmd.Process.Kill()
			<-e.done
		}
		for _, pid := range kids {
			if syscall.Kill(pid, 0) == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
}

// children lists the pids of the direct children of pid (from /proc).
func children(pid int) []int {
	var out []int
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, field := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(field); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// MeasureInit runs bootstrap with env against a stub of the Lambda Runtime API and returns
// its init duration: from starting the process until its first GET
// /2018-06-01/runtime/invocation/next, the moment Lambda ends the init phase. The process
// is killed (by its pid) once measured.
func MeasureInit(ctx context.Context, bootstrap string, env []string) (time.Duration, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	ready := make(chan time.Time, 1)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/2018-06-01/runtime/invocation/next" {
			select {
			case ready <- time.Now():
			default:
			}
			<-r.Context().Done() // no invocation ever comes
			return
		}
		http.NotFound(w, r)
	})}
	go srv.Serve(l)
	defer srv.Close()
	cmd := exec.Command(bootstrap)
	cmd.Dir = filepath.Dir(bootstrap)
	cmd.Env = append(slices.Clone(env), "AWS_LAMBDA_RUNTIME_API="+l.Addr().String())
	out := &logBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	exited := make(chan error, 1)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Kill()
		<-exited
	}()
	select {
	case at := <-ready:
		return at.Sub(start), nil
	case err := <-exited:
		exited <- err // for the deferred wait
		return 0, fmt.Errorf("%s exited during init (%v):\n%s", bootstrap, err, out.String())
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-time.After(30 * time.Second):
		return 0, fmt.Errorf("%s did not ask for an invocation within 30 s:\n%s", bootstrap, out.String())
	}
}

// freePorts reserves n distinct free loopback ports and releases them for the caller.
func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// logBuffer collects a process's output; safe for concurrent use.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// IsUnreachable reports whether err is an install that could not reach the module proxy.
func IsUnreachable(err error) bool {
	var u *UnreachableError
	return errors.As(err, &u)
}
