package crash_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awseb "github.com/aws/aws-sdk-go-v2/service/eventbridge"

	"github.com/archmax-ai/archmax/core/outbound"
	ebsink "github.com/archmax-ai/archmax/core/outbound/eventbridge"
	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/store/storetest"
	"github.com/archmax-ai/archmax/local/dynamotest"
	"github.com/archmax-ai/archmax/local/eventbridgefake"
)

// bus is a world's event bus: the PutEvents wire fake behind a real EventBridge client.
type bus struct {
	fake   *eventbridgefake.Fake
	client *awseb.Client
}

func (w *world) withBus() *world {
	fake := eventbridgefake.New()
	srv := httptest.NewServer(fake)
	w.t.Cleanup(srv.Close)
	w.bus = &bus{fake: fake, client: awseb.NewFromConfig(aws.Config{Region: "eu-west-1",
		Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""),
		Retryer:     func() aws.Retryer { return retry.AddWithMaxAttempts(retry.NewStandard(), 1) }},
		func(o *awseb.Options) { o.BaseEndpoint = aws.String(srv.URL) })}
	return w
}

// outbound is the process's sink: each PutEvents is one of its writes (a kill point).
func (w *world) outbound(p *storetest.Process) *outbound.Config {
	if w.bus == nil {
		return nil
	}
	return &outbound.Config{Sink: &crashSink{p: p, inner: ebsink.New(w.bus.client, "approvals")},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

type crashSink struct {
	p     *storetest.Process
	inner outbound.Sink
}

func (s *crashSink) Publish(ctx context.Context, ns []outbound.Notification) error {
	return s.p.Write("PutEvents", func() error { return s.inner.Publish(ctx, ns) })
}

// published are the distinct notifications the bus received, "<detail-type> <eventId>" in
// the order of their first arrival; a repeat must carry the same detail.
func (w *world) published() []string {
	w.t.Helper()
	var out []string
	first := map[string]string{}
	for _, e := range w.bus.fake.Events() {
		var d struct {
			EventID string `json:"eventId"`
		}
		if err := json.Unmarshal(e.Detail, &d); err != nil || e.Source != outbound.Source || e.EventBusName != "approvals" {
			w.t.Errorf("event %+v: %v", e, err)
		}
		key := e.DetailType + " " + d.EventID
		if prev, seen := first[key]; seen {
			if prev != string(e.Detail) {
				w.t.Errorf("%s published twice with different details:\n%s\n%s", key, prev, e.Detail)
			}
			continue
		}
		first[key] = string(e.Detail)
		out = append(out, key)
	}
	return out
}

// settle runs the sweep once every dead writer's lease lapsed: it publishes what a
// crashed process left owed.
func (w *world) settle() {
	w.clock.Advance(session.DefaultLeaseTTL + time.Second)
	w.boot(0, false).wake.Sweep(context.Background())
}

// TestOutboundCrashPoints: with a bus, every kill point of every scenario — the commits,
// the outbox hint, the PutEvents itself, the clear after it — ends, once the sweep ran,
// with the clean run's notifications published (each at least once, a repeat identical),
// and a clean run publishes each exactly once: one Session Parked per park.
func TestOutboundCrashPoints(t *testing.T) {
	for _, dynamo := range []bool{false, true} {
		backend := "memory"
		if dynamo {
			backend = "dynamodb"
		}
		t.Run(backend, func(t *testing.T) {
			if dynamo {
				dynamotest.Endpoint(t) // skips without DynamoDB Local
			}
			for _, sc := range scenarios {
				if dynamo && sc.name != "turn" && sc.name != "decide" {
					continue // on DynamoDB Local a park's and a wait's (the memory store runs all four)
				}
				t.Run(sc.name, func(t *testing.T) {
					t.Parallel()
					outboundCrashPoints(t, sc, dynamo)
				})
			}
		})
	}
}

// wantPublished is what each scenario's request adds to the bus.
var wantPublished = map[string][]string{
	"turn":    {outbound.SessionParked},
	"decide":  {outbound.SessionAwaitingInput},
	"deliver": {outbound.SessionCompleted},
	"wake":    {outbound.SessionCompleted},
}

func outboundCrashPoints(t *testing.T, sc scenario, dynamo bool) {
	clean := newWorld(t, dynamo).withBus()
	sid := sc.setup(clean)
	before := len(clean.published())
	_, answered, n := clean.firstAttempt(sc, sid, 0, false)
	sid = orSession(clean, sid)
	clean.drive(sid)
	clean.settle()
	want := clean.published()
	if len(clean.bus.fake.Events()) != len(want) {
		t.Errorf("a clean run published %d events for %d notifications", len(clean.bus.fake.Events()), len(want))
	}
	var added []string
	for _, k := range want[before:] {
		added = append(added, strings.SplitN(k, " s", 2)[0])
	}
	if !slices.Equal(added, wantPublished[sc.name]) {
		t.Fatalf("clean %s published %v, want %v (answered %s)", sc.name, want[before:], wantPublished[sc.name], answered)
	}
	checkParked(t, clean)
	passed := 0
	for k := 1; k <= n; k++ {
		for _, after := range []bool{false, true} {
			w := newWorld(t, dynamo).withBus()
			sid := sc.setup(w)
			died, _, _ := w.firstAttempt(sc, sid, k, after)
			if died == "" {
				t.Fatalf("kill point %d was never reached", k)
			}
			w.clock.Advance(session.DefaultLeaseTTL + time.Second)
			sc.send(w, w.boot(0, false), sid) // the retry
			id := orSession(w, sid)
			if id == "" {
				continue // killed before the session existed, and the retry is its first start
			}
			w.drive(id)
			w.settle()
			if got := w.published(); !slices.Equal(got, want) {
				t.Errorf("%s, kill %s (after %v): published %v, want %v", sc.name, died, after, got, want)
				continue
			}
			passed++
		}
	}
	t.Logf("%s: %d/%d kill points publish what the clean run does", sc.name, passed, 2*n)
}

// checkParked: the Session Parked detail as documented.
func checkParked(t *testing.T, w *world) {
	t.Helper()
	for _, e := range w.bus.fake.Events() {
		if e.DetailType != outbound.SessionParked {
			continue
		}
		var d map[string]any
		_ = json.Unmarshal(e.Detail, &d)
		tg, _ := json.Marshal(d["targets"])
		if d["state"] != "review" || d["status"] != "awaiting_decision" || d["parkId"] == "" || d["stateTitle"] != "Order review" ||
			!strings.HasPrefix(d["apiPath"].(string), "/v1/sessions/") || string(tg) != `[{"description":"Approved.","to":"ship","type":"approve"}]` ||
			d["eventId"] != fmt.Sprintf("%s:%d", d["sessionId"], int64(d["sessionSeq"].(float64))) {
			t.Errorf("Session Parked detail = %s", e.Detail)
		}
	}
}

// A bus that is down never fails the turn: the park is answered, the notification stays
// owed, and the sweep publishes it once the bus is back — once.
func TestOutboundBusDown(t *testing.T) {
	for _, dynamo := range []bool{false, true} {
		name := map[bool]string{false: "memory", true: "dynamodb"}[dynamo]
		t.Run(name, func(t *testing.T) {
			if dynamo {
				dynamotest.Endpoint(t)
			}
			w := newWorld(t, dynamo).withBus()
			w.bus.fake.Down(true)
			if got := answer(w.boot(0, false), startReq("order-down")); !strings.HasPrefix(got, "20") {
				t.Fatalf("start with the bus down: %s", got)
			}
			sid := w.session()
			w.drive(sid)
			w.want(sid, session.StatusAwaitingDecision)
			w.settle() // still down: nothing
			if len(w.bus.fake.Events()) != 0 {
				t.Fatal("published while down")
			}
			w.bus.fake.Down(false)
			w.settle()
			w.settle()
			if got := w.published(); len(got) != 1 || !strings.HasPrefix(got[0], outbound.SessionParked+" "+sid+":") || len(w.bus.fake.Events()) != 1 {
				t.Errorf("published %v (%d events)", got, len(w.bus.fake.Events()))
			}
		})
	}
}
