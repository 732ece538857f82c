// Command toolfn is a Lambda function answering the lambda tool's contract, run under the
// Lambda Runtime Interface Emulator by the package's test: {"text"} for an order id, a
// handler error for "raise", bytes that are not JSON for "garbage".
package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-lambda-go/lambda"
)

type payload struct {
	Tool           string         `json:"tool"`
	Input          map[string]any `json:"input"`
	Session        string         `json:"session"`
	State          string         `json:"state"`
	CallID         string         `json:"callId"`
	IdempotencyKey string         `json:"idempotencyKey"`
}

func handle(_ context.Context, p payload) (any, error) {
	switch id, _ := p.Input["id"].(string); id {
	case "raise":
		return nil, errors.New("database unreachable")
	case "garbage":
		return strings.NewReader("<html>not json</html>"), nil // written as it is
	case "refuse":
		return map[string]string{"error": "Error: " + id + " is not yours."}, nil
	default:
		return map[string]string{"text": fmt.Sprintf("%s: order %s (session %s, state %s, key %s)", p.Tool, id, p.Session, p.State, p.IdempotencyKey)}, nil
	}
}

func main() { lambda.Start(handle) }
