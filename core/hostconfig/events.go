package hostconfig

import (
	"regexp"
	"slices"

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

// Enabled reports whether events of level are logged.
func (l EventLog) Enabled(level string) bool {
	switch level {
	case "warn":
		return l.Warn
	case "error":
		return l.Error
	default:
		return l.Info
	}
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

// busName is an EventBridge bus name; busARN a bus's ARN.
var (
	busName = regexp.MustCompile(`^[A-Za-z0-9._\-/]{1,256}$`)
	busARN  = regexp.MustCompile(`^arn:aws[a-z-]*:events:[a-z0-9-]+:[0-9]{12}:event-bus/[A-Za-z0-9._\-/]{1,256}$`)
)

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
				if !busName.MatchString(v) && !busARN.MatchString(v) {
					p.at(CodeEvents, f, e.Val, "%q is not an event bus name or ARN (arn:aws:events:<region>:<account>:event-bus/<name>)", v)
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
