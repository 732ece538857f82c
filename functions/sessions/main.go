// Command sessions is the read-only sessions Lambda of the archmax bundle (DESIGN.md §1):
// API Gateway HTTP API (payload format 2.0) requests on
//
//	GET /v1/sessions                              summaries, newest first (?workflow, status, limit, cursor, includeChildren)
//	GET /v1/sessions/{sessionId}                  the summary, with the pending decision or input
//	GET /v1/sessions/{sessionId}/messages?after=N the transcript page after the message count N
//	GET /v1/sessions/{sessionId}/events?after=N   the stored lifecycle events after N
//
// served by functions/handlers/httpapi over the AWS assembly. It writes nothing; grant it
// read access only. A configuration that cannot work stops the function at init.
package main

import (
	"context"
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
		log.Error("functions/sessions cannot start", "error", err.Error())
		os.Exit(1)
	}
	lambda.Start(metering.Handler("sessions", log, httpapi.New(a.Engines, nil, log, httpapi.WithPolicy(a.Access)).HandleRead))
}
