// Command decide is the decide Lambda of the archmax bundle (DESIGN.md §1): API Gateway
// HTTP API (payload format 2.0) requests on
//
//	POST /v1/sessions/{sessionId}/decision    {to, comment?, parkId?}
//	DELETE /v1/sessions/{sessionId}           the session and everything of it: 204
//
// resume a session parked at a human state (spec 02 §3.4), or delete a session (its owner's
// or an admin's: session.Sessions.Delete), through functions/handlers/httpapi
// over the AWS assembly (configuration from ARCHMAX_* environment variables). A
// configuration that cannot work stops the function at init with a logged reason.
package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/archmax-ai/archmax/functions/handlers/assembly"
	"github.com/archmax-ai/archmax/functions/handlers/httpapi"
	"github.com/archmax-ai/archmax/functions/handlers/metering"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	a, err := assembly.FromEnv(context.Background(), os.Getenv, log)
	if err != nil {
		log.Error("functions/decide cannot start", "error", err.Error())
		os.Exit(1)
	}
	h := httpapi.New(a.Engines, a.Runner, log, httpapi.WithPolicy(a.Access))
	// API Gateway requests, and the function's own continuation events
	lambda.Start(assembly.Traced(a, log, metering.Handler("decide", log, func(ctx context.Context, raw json.RawMessage) (any, error) {
		return h.HandleOrEvent(ctx, raw, "decide", nil)
	})))
}
