// Command wake is the wake Lambda of the archmax bundle (DESIGN.md §5): it takes the
// EventBridge Scheduler payload {sessionId, parkId} of a timed park's one-time schedule,
// and the EventBridge Scheduled Event of the 5-minute sweep rule, and wakes the parks that
// are due (functions/handlers/wakes); and the session table's stream records of the heads
// DynamoDB's TTL removed, whose sessions it deletes (functions/handlers/expiry, retention).
// A configuration that cannot work stops the function at init with a logged reason.
package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/archmax-ai/archmax/functions/handlers/assembly"
	"github.com/archmax-ai/archmax/functions/handlers/expiry"
	"github.com/archmax-ai/archmax/functions/handlers/metering"
	"github.com/archmax-ai/archmax/functions/handlers/wakes"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	a, err := assembly.FromEnv(context.Background(), os.Getenv, log)
	if err != nil {
		log.Error("functions/wake cannot start", "error", err.Error())
		os.Exit(1)
	}
	wake := wakes.New(a.Engines, a.Runner, log, nil).Handle
	images, _ := a.Engines.Log().(expiry.Images) // the DynamoDB store decodes the stream's images
	expired := expiry.New(a.Engines.Sessions(), images, log)
	lambda.Start(assembly.Traced(a, log, metering.Handler("wake", log, func(ctx context.Context, raw json.RawMessage) (any, error) {
		if images != nil && expiry.IsStreamEvent(raw) {
			var ev events.DynamoDBEvent
			if err := json.Unmarshal(raw, &ev); err != nil {
				return nil, err
			}
			return expired.Handle(ctx, ev)
		}
		return wake(ctx, raw)
	})))
}
