package hostconfig

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/archmax-ai/archmax/core/outbound"
	"github.com/archmax-ai/archmax/core/yamltree"
)

// Events is the `events:` section: where a session's lifecycle goes outside it — an
// EventBridge bus (outbound notifications) and the function's structured log.
type Events struct {
	// EventBridge is the outbound sink; nil publishes nothing.
	EventBridge *EventBridgeSink
	// Log says which levels of lifecycle events the functions write to their log.
	Log EventLog
}

// EventBridgeSink is `events.eventBridge`.
type EventBridgeSink struct {
	// Bus is the event bus's name or ARN. It is not the bus the stack's start and delivery
	// rules listen on, or those rules' exclusion of outbound.Source keeps its events out.
	Bus string
	// Types are the detail types published (outbound.Types); nil: outbound.DefaultTypes.
	Types []string
	// MaxDetailBytes caps a detail's JSON (outbound.Fit); 0: outbound.DefaultMaxDetailBytes.
	MaxDetailBytes int
	Line, Column   int
}

// EventLog is `events.log`: each level on (true, the default) or off.
type EventLog struct {
	Info, Warn, Error bool
}

// EventsOf is c's events section, the defaults (every level logged, no sink) when the
// file has none.
func (c *Config) EventsOf() Events {
	if c == nil || c.Events == nil {
		return Events{Log: EventLog{Info: true, Warn: true, Error: true}}
	}
	return *c.Events
}

var (
	eventsKeys      = []string{"eventBridge", "log"}
	eventBridgeKeys = []string{"bus", "types", "maxDetailBytes"}
	eventLogKeys    = []string{"info", "warn", "error"}
)

// busName is a custom EventBridge bus name (1–256 of [.-_A-Za-z0-9]: the name CreateEventBus
// takes); busARN a bus's ARN, whose name is a custom bus's, `default` or a partner bus's
// (aws.partner/<partner>/<name>, created by the partner's event source, never by the stack).
var (
	busName = regexp.MustCompile(`^[A-Za-z0-9._\-]{1,256}$`)
	busARN  = regexp.MustCompile(`^arn:aws[a-z-]*:events:[a-z0-9-]+:[0-9]{12}:event-bus/(?:[A-Za-z0-9._\-]{1,256}|aws\.partner/[A-Za-z0-9._\-/]{1,244})$`)
)

// busHint is the fix of a bus the stack could neither create nor name.
const busHint = "name a custom bus the stack creates (1–256 characters of letters, digits, '.', '-', '_'), `default` for the account's default bus, or give an existing bus's ARN (arn:aws:events:<region>:<account>:event-bus/<name>)"

// checkBus reports why v is not a bus the stack can create or publish to ("" when it is).
func checkBus(v string) string {
	switch {
	case strings.HasPrefix(v, "arn:"):
		if !busARN.MatchString(v) {
			return fmt.Sprintf("%q is not an event bus ARN (arn:aws:events:<region>:<account>:event-bus/<name>)", v)
		}
	case strings.HasPrefix(v, "aws.partner/"):
		return fmt.Sprintf("%q is a partner event bus: its partner's event source creates it, the stack cannot — give its ARN", v)
	case v == "default":
	case strings.HasPrefix(v, "aws."):
		return fmt.Sprintf("%q is not a custom event bus name: names starting with 'aws.' are AWS's", v)
	case !busName.MatchString(v):
		return fmt.Sprintf("%q is not an event bus name: a custom bus's name is 1–256 characters of letters, digits, '.', '-', '_'", v)
	}
	return ""
}

func (p *parser) events(n *node, field string) *Events {
	ev := &Events{Log: EventLog{Info: true, Warn: true, Error: true}}
	p.strict(n, field, eventsKeys, func(e *yamltree.Entry, f string) {
		switch e.Key {
		case "eventBridge":
			ev.EventBridge = p.eventBridge(e.Val, f)
		case "log":
			p.strict(e.Val, f, eventLogKeys, func(e *yamltree.Entry, f string) {
				on := p.boolean(e.Val, f)
				switch e.Key {
				case "info":
					ev.Log.Info = on
				case "warn":
					ev.Log.Warn = on
				case "error":
					ev.Log.Error = on
				}
			})
		}
	})
	return ev
}

func (p *parser) eventBridge(n *node, field string) *EventBridgeSink {
	s := &EventBridgeSink{Line: n.Line, Column: n.Col}
	if !p.strict(n, field, eventBridgeKeys, func(e *yamltree.Entry, f string) {
		switch e.Key {
		case "bus":
			if v, ok := p.str(e.Val, f); ok {
				s.Bus = v
				if msg := checkBus(v); msg != "" {
					p.hinted(CodeEvents, busHint, f, e.Val, "%s", msg)
				}
			}
		case "types":
			for i, t := range p.strings(e.Val, f) {
				if !slices.Contains(outbound.Types, t) {
					p.at(CodeEvents, idx(f, i), e.Val.Items[i], "%q is not a detail type (%s)", t, quoteKeys(outbound.Types))
					continue
				}
				if slices.Contains(s.Types, t) {
					p.at(CodeEvents, idx(f, i), e.Val.Items[i], "%q is listed twice", t)
					continue
				}
				s.Types = append(s.Types, t)
			}
		case "maxDetailBytes":
			s.MaxDetailBytes = p.integer(e.Val, f, outbound.MinDetailBytes, outbound.MaxDetailBytes)
		}
	}) {
		return s
	}
	p.required(n, field, "bus")
	return s
}
