package stream

import (
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// A request streams only when its Accept names text/event-stream acceptably: q=0 is a refusal.
func TestWantsStreamHonoursQuality(t *testing.T) {
	for accept, want := range map[string]bool{
		"text/event-stream":                          true,
		"Text/Event-Stream":                          true,
		"application/json, text/event-stream;q=0.5":  true,
		"text/event-stream;q=0":                      false,
		"text/event-stream; q=0.0, application/json": false,
		"application/json":                           false,
		"":                                           false,
		"text/event-stream;q=bogus":                  true,
	} {
		req := events.APIGatewayV2HTTPRequest{Headers: map[string]string{"accept": accept}}
		if got := wantsStream(req); got != want {
			t.Errorf("Accept %q: streams %v, want %v", accept, got, want)
		}
	}
}
