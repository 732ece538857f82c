// Command infra is the archmax CDK app (DESIGN.md §2): one stack per stage holding the
// session-log table, the data bucket, the five Lambda functions (provided.al2023, arm64,
// from build/<fn>/bootstrap), the HTTP API, the EventBridge rules, the Scheduler group and
// role, a least-privilege role per function, and — with a workspace — the grants its host
// file names and its upload under the spec prefix. cdk.json at the top level runs it
// (`make synth`, `make deploy`); the deployment parameters are CDK context values
// (config.go).
package main

import (
	"fmt"
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
)

func main() {
	defer jsii.Close()
	app := awscdk.NewApp(nil)
	cfg, err := ConfigFromContext(app)
	if err != nil {
		fmt.Fprintln(os.Stderr, "archmax infra:", err)
		os.Exit(1)
	}
	NewStack(app, cfg)
	app.Synth(nil)
	_ = cfg.Workspace.Close() // the assembly holds its own copy of the upload
}
