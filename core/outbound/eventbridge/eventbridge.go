// Package eventbridge is the outbound.Sink on Amazon EventBridge: PutEvents to one bus,
// source outbound.Source, the notification's detail type and detail, at most 10 entries
// and 256 KiB per request, in order. A request EventBridge answers with failed entries is
// retried for those entries alone (with the SDK's own retries below it), and what still
// fails is an error: the engine keeps the notifications owed and publishes them again.
package eventbridge

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"

	"github.com/archmax-ai/archmax/core/outbound"
)

// API is the part of the EventBridge client the sink calls.
type API interface {
	PutEvents(ctx context.Context, in *eventbridge.PutEventsInput, opts ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error)
}

// Sink publishes to Bus (a name or an ARN).
type Sink struct {
	Client API
	Bus    string
	// Attempts is how many times an entry EventBridge refused is sent (default 3).
	Attempts int
}

// New returns a sink publishing to bus through client.
func New(client API, bus string) *Sink { return &Sink{Client: client, Bus: bus} }

// Limits of one PutEvents request.
const (
	maxEntries      = 10
	maxRequestBytes = 256 * 1024
)

// Publish implements outbound.Sink.
func (s *Sink) Publish(ctx context.Context, ns []outbound.Notification) error {
	var batch []types.PutEventsRequestEntry
	size := 0
	for _, n := range ns {
		e := types.PutEventsRequestEntry{EventBusName: aws.String(s.Bus), Source: aws.String(outbound.Source),
			DetailType: aws.String(n.DetailType), Detail: aws.String(string(n.Detail))}
		es := entrySize(e)
		if len(batch) == maxEntries || (len(batch) > 0 && size+es > maxRequestBytes) {
			if err := s.put(ctx, batch); err != nil {
				return err
			}
			batch, size = nil, 0
		}
		batch, size = append(batch, e), size+es
	}
	if len(batch) > 0 {
		return s.put(ctx, batch)
	}
	return nil
}

// entrySize is an entry's size as EventBridge counts it (source, detail type, detail).
func entrySize(e types.PutEventsRequestEntry) int {
	return len(*e.Source) + len(*e.DetailType) + len(*e.Detail)
}

func (s *Sink) put(ctx context.Context, entries []types.PutEventsRequestEntry) error {
	attempts := s.Attempts
	if attempts <= 0 {
		attempts = 3
	}
	for attempt := 1; ; attempt++ {
		out, err := s.Client.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: entries})
		if err != nil {
			return fmt.Errorf("eventbridge PutEvents to %s: %w", s.Bus, err)
		}
		if out.FailedEntryCount == 0 {
			return nil
		}
		var again []types.PutEventsRequestEntry
		var why []string
		for i, r := range out.Entries {
			if r.ErrorCode != nil && i < len(entries) {
				again = append(again, entries[i])
				why = append(why, aws.ToString(r.ErrorCode)+": "+aws.ToString(r.ErrorMessage))
			}
		}
		if len(again) == 0 || attempt == attempts {
			return fmt.Errorf("eventbridge PutEvents to %s: %d entries failed (%s)", s.Bus, out.FailedEntryCount, strings.Join(why, "; "))
		}
		entries = again
	}
}
