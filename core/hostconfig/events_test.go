package hostconfig

import (
	"slices"
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/core/outbound"
)

func TestEventsSection(t *testing.T) {
	cfg, err := Load([]byte(`
events:
  eventBridge:
    bus: arn:aws:events:eu-west-1:123456789012:event-bus/approvals
    types: [Session Parked, Session Completed, Session Event]
    maxDetailBytes: 16384
  log: { info: false }
`))
	if err != nil {
		t.Fatal(err)
	}
	ev := cfg.EventsOf()
	if ev.EventBridge == nil || ev.EventBridge.Bus != "arn:aws:events:eu-west-1:123456789012:event-bus/approvals" ||
		!slices.Equal(ev.EventBridge.Types, []string{outbound.SessionParked, outbound.SessionCompleted, outbound.SessionEvent}) || ev.EventBridge.MaxDetailBytes != 16384 {
		t.Errorf("eventBridge = %+v", ev.EventBridge)
	}
	if ev.Log.Info || !ev.Log.Warn || !ev.Log.Error {
		t.Errorf("log = %+v", ev.Log)
	}
	if r := cfg.Resources(); r.EventBus != ev.EventBridge.Bus {
		t.Errorf("resources bus = %q", r.EventBus)
	}
	// no section: every level logged, nothing published
	none, _ := Load([]byte("version: 1\n"))
	if d := none.EventsOf(); d.EventBridge != nil || !d.Log.Info || !d.Log.Warn || !d.Log.Error {
		t.Errorf("defaults = %+v", d)
	}
}

func TestEventsSectionRefusals(t *testing.T) {
	for src, want := range map[string]string{
		"events: { eventBridge: {} }":                                                             "is required",
		"events: { eventBridge: { bus: 'no spaces' } }":                                           "not an event bus name",
		"events: { eventBridge: { bus: a/b } }":                                                   "not an event bus name",
		"events: { eventBridge: { bus: aws.partner/saas.com/123/x } }":                            "is a partner event bus",
		"events: { eventBridge: { bus: aws.mine } }":                                              "are AWS's",
		"events: { eventBridge: { bus: 'arn:aws:events:eu-west-1:1:event-bus/b' } }":              "not an event bus ARN",
		"events: { eventBridge: { bus: 'arn:aws:events:eu-west-1:123456789012:event-bus/a/b' } }": "not an event bus ARN",
		"events: { eventBridge: { bus: b, types: [Session Started] } }":                           "not a detail type",
		"events: { eventBridge: { bus: b, types: [Session Parked, Session Parked] } }":            "listed twice",
		"events: { eventBridge: { bus: b, maxDetailBytes: 4096 } }":                               "must be an integer from 12288 to 245760",
		"events: { eventBridge: { bus: b, maxDetailBytes: 10 } }":                                 "'events.eventBridge.maxDetailBytes' must be an integer",
		"events: { log: { debug: true } }":                                                        "unknown key 'debug'",
		"events: { log: { info: yes } }":                                                          "must be true or false",
	} {
		_, diags := Parse([]byte(src + "\n"))
		found := false
		for _, d := range diags {
			found = found || strings.Contains(d.Message, want)
		}
		if !found {
			t.Errorf("%s: want %q in %v", src, want, diags)
		}
	}
}

func TestEventBusNames(t *testing.T) {
	for _, ok := range []string{"approvals", "default", "a.b-c_D9", strings.Repeat("b", 256),
		"arn:aws:events:eu-west-1:123456789012:event-bus/default",
		"arn:aws-us-gov:events:us-gov-west-1:123456789012:event-bus/approvals",
		"arn:aws:events:eu-west-1:123456789012:event-bus/aws.partner/saas.com/123/x"} {
		if msg := checkBus(ok); msg != "" {
			t.Errorf("%s: %s", ok, msg)
		}
	}
	for _, bad := range []string{"a/b", "", strings.Repeat("b", 257), "a b", "aws.partner/x/y", "aws.events",
		"arn:aws:events:eu-west-1:123456789012:event-bus/", "arn:aws:sns:eu-west-1:123456789012:event-bus/b"} {
		if checkBus(bad) == "" {
			t.Errorf("%q accepted", bad)
		}
	}
	_, diags := Parse([]byte("events: { eventBridge: { bus: a/b } }\n"))
	if len(diags) != 1 || diags[0].Hint != busHint {
		t.Errorf("diags = %+v", diags)
	}
}
