package httpapi

import (
	"context"
	"testing"
	"time"
)

// DESIGN §4: the work ends commitMargin before the nearer of the Lambda deadline and API
// Gateway's limit.
func TestWorkContextDeadline(t *testing.T) {
	lambda, cancel := context.WithDeadline(context.Background(), time.Now().Add(10*time.Second))
	defer cancel()
	work, stop := workContext(lambda)
	defer stop()
	d, ok := work.Deadline()
	if !ok || time.Until(d) > 10*time.Second-commitMargin+time.Second || time.Until(d) < 10*time.Second-commitMargin-time.Second {
		t.Errorf("deadline in %v, want about %v", time.Until(d), 10*time.Second-commitMargin)
	}
	work2, stop2 := workContext(context.Background())
	defer stop2()
	d2, _ := work2.Deadline()
	if time.Until(d2) > gatewayLimit-commitMargin+time.Second {
		t.Errorf("without a Lambda deadline the gateway limit applies: %v", time.Until(d2))
	}
}
