// Command deliver is the deliver Lambda of the archmax bundle (DESIGN.md §1): it resumes a
// session parked by archmax_wait (spec 02 §4.3) from API Gateway HTTP API requests on
//
//	POST /v1/sessions/{sessionId}/deliveries    {trigger, variables?, message?, files?, parkId?}
//
// and from EventBridge events routed by a rule (functions/handlers/deliveries). A
// configuration that cannot work stops the function at init with a logged reason.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/archmax-ai/archmax/functions/handlers/assembly"
	"github.com/archmax-ai/archmax/functions/handlers/deliveries"
	"github.com/archmax-ai/archmax/functions/handlers/httpapi"
	"github.com/archmax-ai/archmax/functions/handlers/metering"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	a, err := assembly.FromEnv(context.Background(), os.Getenv, log)
	if err != nil {
		log.Error("functions/deliver cannot start", "error", err.Error())
		os.Exit(1)
	}
	lambda.Start(assembly.Traced(a, log, metering.Handler("deliver", log, deliveries.New(a.Engines, a.Runner, log, httpapi.WithPolicy(a.Access)).Handle)))
}
