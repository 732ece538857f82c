package wakes

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/store"
	"github.com/archmax-ai/archmax/functions/handlers/internal/handlertest"
)

const courier = `
title: Courier
states:
  watch:
    triggers:
      manual:
    instructions: Wait for the courier, then report.
`

// In order: the wait, the closing reply of the parking turn, the answer after the wake.
const script = `
agent:
  - toolCalls:
      - name: archmax_wait
        input: { reason: "the courier's scan", until: "30m" }
  - text: Waiting for the scan.
  - text: The timer fired; checking again.
`

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

type fixture struct {
	h       *Handler
	engines *session.Engines
	clock   *clock
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	c := &clock{now: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}
	engines := handlertest.Engines(t, map[string]string{"workflows/courier/workflow.yaml": courier}, script, c.Now)
	return &fixture{h: New(engines, nil, nil, c.Now), engines: engines, clock: c}
}

func (f *fixture) park(t *testing.T, id string) string {
	t.Helper()
	eng, err := f.engines.Engine(context.Background(), "courier")
	if err != nil {
		t.Fatal(err)
	}
	out, err := eng.Send(context.Background(), id, session.SendInput{Message: "track parcel 7"})
	if err != nil || out.Kind != session.KindParked || out.Pending == nil {
		t.Fatalf("park: %v %+v", err, out)
	}
	return out.Pending.ParkID
}

func (f *fixture) handle(t *testing.T, event string) (Result, error) {
	t.Helper()
	out, err := f.h.Handle(context.Background(), json.RawMessage(event))
	res, _ := out.(Result)
	return res, err
}

// DESIGN §5: the Scheduler's {sessionId, parkId} wakes that park when due; an early, a
// stale or a duplicate wake is a no-op that says why.
func TestScheduledWake(t *testing.T) {
	f := newFixture(t)
	parkID := f.park(t, "p7")
	ev := `{"sessionId":"p7","parkId":"` + parkID + `"}`

	if res, err := f.handle(t, ev); err != nil || !strings.Contains(res.Skipped, "not due until 2026-11-30T09:30:00.000Z") {
		t.Fatalf("early wake: %+v %v", res, err)
	}
	if res, err := f.handle(t, `{"sessionId":"p7","parkId":"p-stale"}`); err != nil || !strings.Contains(res.Skipped, "not the live park") {
		t.Fatalf("stale wake: %+v %v", res, err)
	}
	f.clock.Add(31 * time.Minute)
	res, err := f.handle(t, ev)
	if err != nil || res.Outcome != session.KindCompleted || res.Skipped != "" {
		t.Fatalf("due wake: %+v %v", res, err)
	}
	if res, err := f.handle(t, ev); err != nil || res.Skipped == "" || res.Outcome != "" {
		t.Fatalf("duplicate wake: %+v %v", res, err)
	}
	if res, err := f.handle(t, `{"sessionId":"gone","parkId":"p1"}`); err != nil || res.Skipped != "the session no longer exists" {
		t.Errorf("deleted session: %+v %v", res, err)
	}
}

// DESIGN §5: the 5-minute EventBridge rule's Scheduled Event sweeps overdue parks.
func TestSweepEvent(t *testing.T) {
	f := newFixture(t)
	f.park(t, "a")
	f.clock.Add(45 * time.Minute)
	ev := `{"version":"0","id":"53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa","detail-type":"Scheduled Event","source":"aws.events",
	  "account":"123456789012","time":"2026-11-30T09:45:00Z","region":"eu-west-1",
	  "resources":["arn:aws:events:eu-west-1:123456789012:rule/archmax-sweep"],"detail":{}}`
	res, err := f.handle(t, ev)
	if err != nil || res.Action != "sweep" || res.Sweep == nil || res.Sweep.Due != 1 || res.Sweep.Woken != 1 {
		t.Fatalf("sweep: %+v %v", res, err)
	}
	if res, _ := f.handle(t, ev); res.Sweep.Due != 0 {
		t.Errorf("second sweep found %d", res.Sweep.Due)
	}
}

func TestUnrecognisedEvents(t *testing.T) {
	f := newFixture(t)
	for _, ev := range []string{`[]`, `{"detail-type":"Object Created","source":"aws.s3"}`, `{"sessionId":"a"}`} {
		var bad *EventError
		if _, err := f.handle(t, ev); !errors.As(err, &bad) {
			t.Errorf("%s: err = %v, want *EventError", ev, err)
		}
	}
}

// The sample events of fixtures/events (also for `sam local invoke`) are the two shapes the
// wake function takes: the Scheduler's payload and the sweep rule's Scheduled Event.
func TestFixtureEvents(t *testing.T) {
	f := newFixture(t)
	for name, want := range map[string]string{"wake-schedule.json": "wake", "wake-sweep.json": "sweep"} {
		data, err := os.ReadFile(filepath.Join("../../../fixtures/events", name))
		if err != nil {
			t.Fatal(err)
		}
		res, err := f.handle(t, string(data))
		if err != nil || res.Action != want {
			t.Errorf("%s: %+v %v, want a %s", name, res, err, want)
		}
	}
}

// RD22-2: a wake of a session whose deletion began (and stopped part-way) is a skip, not a
// failure to retry into the dead letter queue: the park goes with the session.
func TestWakeOfASessionBeingDeleted(t *testing.T) {
	f := newFixture(t)
	parkID := f.park(t, "d7")
	f.clock.Add(31 * time.Minute)
	log := f.engines.Log()
	h, err := log.Acquire(context.Background(), "d7", "deleter", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	nh := *h
	nh.Status, nh.Lease = string(session.StatusDeleting), nil
	if _, err := log.Commit(context.Background(), "d7", "deleter", &store.Commit{ExpectedVersion: h.Version, Head: nh}); err != nil {
		t.Fatal(err)
	}
	if err := log.Release(context.Background(), "d7", "deleter"); err != nil {
		t.Fatal(err)
	}
	if res, err := f.handle(t, `{"sessionId":"d7","parkId":"`+parkID+`"}`); err != nil || res.Skipped != "the session is being deleted" {
		t.Errorf("wake of a session being deleted: %+v %v", res, err)
	}
}
