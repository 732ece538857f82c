// Command turn is the turn Lambda of the archmax bundle (DESIGN.md §1): API Gateway HTTP API
// (payload format 2.0) requests on
//
//	POST /v1/workflows/{workflow}/sessions
//	POST /v1/workflows/{workflow}/sessions/{sessionId}/turns
//
// are served by functions/handlers/httpapi, and EventBridge events routed by
// ARCHMAX_EVENT_ROUTES start sessions (functions/handlers/starts), over the AWS assembly of
// functions/handlers/assembly (configuration from ARCHMAX_* environment variables). A
// configuration that cannot work stops the function at init with a logged reason.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/archmax-ai/archmax/functions/handlers/assembly"
	"github.com/archmax-ai/archmax/functions/handlers/httpapi"
	"github.com/archmax-ai/archmax/functions/handlers/metering"
	"github.com/archmax-ai/archmax/functions/handlers/starts"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	h, a, err := newHandler(context.Background(), os.Getenv, log)
	if err != nil {
		log.Error("functions/turn cannot start", "error", err.Error())
		os.Exit(1)
	}
	lambda.Start(assembly.Traced(a, log, metering.Handler("turn", log, h.Handle)))
}

// newHandler reads the configuration through getenv and assembles the handler (and the
// assembly, whose trace export main flushes after each invocation); it makes no AWS call,
// so a cold start costs no round trip.
func newHandler(ctx context.Context, getenv func(string) string, log *slog.Logger) (*starts.Handler, *assembly.Assembly, error) {
	routes, err := starts.ParseRoutes(getenv(starts.EnvEventRoutes))
	if err != nil {
		return nil, nil, err
	}
	a, err := assembly.FromEnv(ctx, getenv, log)
	if err != nil {
		return nil, nil, err
	}
	return starts.New(a.Engines, a.Runner, routes, log, httpapi.WithPolicy(a.Access)), a, nil
}
