// Command stream is the streaming Lambda of the archmax bundle, behind a Lambda function
// URL in RESPONSE_STREAM mode: Server-Sent Events on
//
//	POST /v1/workflows/{workflow}/sessions                      a start: its events as they happen, then `outcome`
//	POST /v1/workflows/{workflow}/sessions/{sessionId}/turns    a turn: the same
//	GET  /v1/sessions/{sessionId}/events?after=N                the stored events, followed until the session settles
//
// with `Accept: text/event-stream`, served by functions/handlers/stream through
// functions/handlers/httpapi (the same bodies, errors, Idempotency-Keys and authorization
// as the HTTP API) over the AWS assembly. The URL's auth is AWS_IAM, or — with
// ARCHMAX_JWT_ISSUER and ARCHMAX_JWT_AUDIENCE — NONE, the function verifying the bearer
// token itself. A turn that outlives the invocation continues in an asynchronous
// invocation of this function. A configuration that cannot work stops it at init.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/archmax-ai/archmax/functions/handlers/assembly"
	"github.com/archmax-ai/archmax/functions/handlers/httpapi"
	"github.com/archmax-ai/archmax/functions/handlers/metering"
	"github.com/archmax-ai/archmax/functions/handlers/stream"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	jwt, err := stream.JWTFromEnv(os.Getenv)
	if err != nil {
		log.Error("functions/stream cannot start", "error", err.Error())
		os.Exit(1)
	}
	a, err := assembly.FromEnv(context.Background(), os.Getenv, log)
	if err != nil {
		log.Error("functions/stream cannot start", "error", err.Error())
		os.Exit(1)
	}
	api := httpapi.New(a.Engines, a.Runner, log, httpapi.WithPolicy(a.Access))
	lambda.Start(assembly.Traced(a, log, metering.Handler("stream", log, stream.Function(stream.New(api, log), a.Runner, jwt))))
}
