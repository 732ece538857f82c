//go:build linux

package lambdatool

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/hostconfig"
	"github.com/archmax-ai/archmax/core/hosttool"
	"github.com/archmax-ai/archmax/local/rie"
)

// A lambda tool through the AWS SDK against a real Go function (testdata/toolfn, built with
// the flags of `make build`) under the Lambda Runtime Interface Emulator: the emulator
// serves the Invoke API for its one function, named "function".
func TestUnderTheEmulator(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a function and starts the emulator")
	}
	dir, err := rie.CacheDir()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin, err := rie.Install(ctx, dir)
	if rie.IsUnreachable(err) {
		t.Skipf("SKIPPED: cannot install aws-lambda-rie %s because the Go module proxy is unreachable (set %s to an installed one): %v", rie.Version, rie.EnvBinary, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	bootstrap := filepath.Join(out, "bootstrap")
	gobuild := exec.CommandContext(ctx, "go", append(append([]string{"build"}, rie.BuildFlags...), "-o", bootstrap, "./testdata/toolfn")...)
	gobuild.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+runtime.GOARCH, "CGO_ENABLED=0")
	if b, err := gobuild.CombinedOutput(); err != nil {
		t.Fatalf("go build testdata/toolfn: %v\n%s", err, b)
	}
	emu, err := rie.Start(ctx, bin, bootstrap, []string{"AWS_LAMBDA_FUNCTION_NAME=toolfn", "AWS_LAMBDA_FUNCTION_TIMEOUT=10",
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=AKIDTEST", "AWS_SECRET_ACCESS_KEY=secret"})
	if err != nil {
		t.Fatal(err)
	}
	defer emu.Stop()

	d := hostconfig.ToolDecl{Kind: hostconfig.KindLambda, Name: "get_order", Description: "Gets an order.",
		Input: []byte(`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`), Timeout: 20 * time.Second,
		Lambda: &hostconfig.LambdaTool{Function: "function"}}
	tools := build(t, hosttool.Deps{Lambda: SDKInvoker(sdkClient(t, emu.URL))}, d)
	h := tools[0].Handler
	text, err := h(ctx, call(map[string]any{"id": "ORD-1"}))
	if err != nil || text != "get_order: order ORD-1 (session s-1, state work, key s-1/t-1/tooluse_7)" {
		t.Fatalf("result = %q, %v\n%s", text, err, emu.Output())
	}
	for id, want := range map[string]string{
		"refuse":  "Error: refuse is not yours.",
		"raise":   "Error: the function behind 'get_order' failed (Unhandled): errorString: database unreachable. It may have acted before failing.",
		"garbage": `Error: the function behind 'get_order' answered something that is not JSON (<html>not json</html>), not {"text": "…"} or {"error": "…"}; it may have acted, but its answer cannot be used.`,
	} {
		text, err := h(ctx, call(map[string]any{"id": id}))
		if err == nil || err.Error() != want || text != "" {
			t.Errorf("%s: %q, %v\nwant %s", id, text, err, want)
		}
	}
	if !strings.Contains(emu.Output(), "REPORT RequestId") {
		t.Errorf("the emulator ran no invocation:\n%s", emu.Output())
	}
}
