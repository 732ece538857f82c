// Package outbound is what a session tells the world outside it: notifications built from
// its committed lifecycle events — a park for a decision or for input, a raise, and how a
// turn settled (completed, failed, rejected), and optionally every lifecycle event — handed
// to a Sink (on AWS an EventBridge bus: core/outbound/eventbridge) after the commit that
// stored them. The engine keeps the notifications a commit owes in the session's record,
// in that same commit, so a process that dies before it published them leaves them to the
// next writer of the session or to the sweep: delivery is at least once, never lost, and
// consumers deduplicate on the detail type and Notification.EventID
// (<sessionId>:<sessionSeq>).
//
// This package is pure: the detail types, the notification and its detail's size cap, the
// Sink port and Publisher, which counts and logs what failed.
package outbound

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/archmax-ai/archmax/core/metrics"
)

// Source is the EventBridge `source` of every notification. The stack's start and delivery
// rules exclude it, so a session's own notifications never start or resume a session.
const Source = "archmax.sessions"

// The detail types (EventBridge `detail-type`).
const (
	SessionParked        = "Session Parked"         // parked at a human state for a decision
	SessionAwaitingInput = "Session Awaiting Input" // parked by archmax_wait (or a quota wait)
	SessionCompleted     = "Session Completed"      // a turn settled completed
	SessionFailed        = "Session Failed"         // a turn settled failed (archmax_raise)
	SessionRaised        = "Session Raised"         // archmax_raise was called
	SessionRejected      = "Session Rejected"       // a turn settled rejected (governance)
	SessionEvent         = "Session Event"          // any lifecycle event, as stored (opt-in)
)

// DefaultTypes are the detail types published when the host file names none.
var DefaultTypes = []string{SessionParked, SessionAwaitingInput, SessionCompleted, SessionFailed, SessionRaised, SessionRejected}

// Types are every detail type, DefaultTypes then SessionEvent.
var Types = append(slices.Clone(DefaultTypes), SessionEvent)

// DefaultMaxDetailBytes caps a detail's JSON when the host file does not; MaxDetailBytes is
// the highest cap (EventBridge takes at most 256 KiB per PutEvents entry, envelope included).
// MinDetailBytes is the lowest cap: the required fields of every type at the longest
// session id (spec.MaxSessionIDBytes, 512 bytes of '<', which JSON escapes to 6 bytes each
// and the API path to 3, in sessionId, eventId and apiPath: 7.7 KiB), the longest status,
// sessionSeq and ts, the omitted list naming every other field, and 4 KiB left for the
// workflow and state slugs and the parkId (TestMinDetailBytesFitsTheRequiredFields).
const (
	DefaultMaxDetailBytes = 64 * 1024
	MinDetailBytes        = 12 * 1024
	MaxDetailBytes        = 240 * 1024
)

// Notification is one outbound event: its detail type, its id and its detail (a JSON
// object carrying eventId itself). Stored in the session's record until published.
type Notification struct {
	DetailType string          `json:"detailType"`
	EventID    string          `json:"eventId"`
	Detail     json.RawMessage `json:"detail"`
}

// EventID is a notification's id: the session and the sessionSeq of the lifecycle event it
// stands for (for a settle, the session's last sequence number when it settled).
func EventID(sessionID string, seq int64) string {
	return sessionID + ":" + strconv.FormatInt(seq, 10)
}

// APIPath is a session's path on the HTTP API (the session summary route).
func APIPath(sessionID string) string { return "/v1/sessions/" + url.PathEscape(sessionID) }

// Sink publishes notifications, in order. An error means some may not have been
// published: the caller keeps them all and tries again later (consumers deduplicate).
type Sink interface {
	Publish(ctx context.Context, ns []Notification) error
}

// Config is a deployment's outbound configuration: the sink, the detail types it wants and
// the detail size cap.
type Config struct {
	Sink           Sink
	Types          []string // nil: DefaultTypes
	MaxDetailBytes int      // 0: DefaultMaxDetailBytes
	// Logger receives the warning of a failed publish (nil: slog.Default()).
	Logger *slog.Logger

	failures, published atomic.Int64
}

// Wants reports whether detail type t is published.
func (c *Config) Wants(t string) bool {
	if c == nil || c.Sink == nil {
		return false
	}
	if c.Types == nil {
		return slices.Contains(DefaultTypes, t)
	}
	return slices.Contains(c.Types, t)
}

// Cap is the detail size cap in bytes.
func (c *Config) Cap() int {
	if c == nil || c.MaxDetailBytes <= 0 {
		return DefaultMaxDetailBytes
	}
	return c.MaxDetailBytes
}

// Publish hands ns to the sink. A failure is logged as a warning and counted (Failures),
// never returned as the session's: the caller keeps ns owed. It reports whether they were
// published.
func (c *Config) Publish(ctx context.Context, sessionID string, ns []Notification) bool {
	if c == nil || c.Sink == nil || len(ns) == 0 {
		return true
	}
	if err := c.Sink.Publish(ctx, ns); err != nil {
		n := c.failures.Add(1)
		metrics.From(ctx).Add(metrics.NotificationPublishFailures, 1) // by workflow and function too (MT22-1)
		log := c.Logger
		if log == nil {
			log = slog.Default()
		}
		log.WarnContext(ctx, "lifecycle notifications not published; the session keeps them owed and the next writer or the sweep publishes them",
			"sessionId", sessionID, "notifications", len(ns), "firstEventId", ns[0].EventID, "publishFailures", n, "error", err.Error(),
			// CloudWatch embedded metric format: the functions' JSON log line is also one data
			// point of the metric archmax/NotificationPublishFailures
			slog.Group("_aws", slog.Int64("Timestamp", time.Now().UnixMilli()), slog.Any("CloudWatchMetrics", []map[string]any{{
				"Namespace": MetricNamespace, "Dimensions": [][]string{{}},
				"Metrics": []map[string]string{{"Name": MetricPublishFailures, "Unit": "Count"}}}})),
			slog.Int(MetricPublishFailures, 1))
		return false
	}
	c.published.Add(int64(len(ns)))
	return true
}

// The metric a failed publish counts (CloudWatch embedded metric format, on its warning,
// without dimensions; core/metrics counts it by workflow and function as well).
const (
	MetricNamespace       = metrics.Namespace
	MetricPublishFailures = metrics.NotificationPublishFailures
)

// Failures is how many publishes failed in this process; Published how many notifications
// were published.
func (c *Config) Failures() int64  { return c.failures.Load() }
func (c *Config) Published() int64 { return c.published.Load() }

// Fit marshals a detail of detailType within limit bytes: as it is when it fits; else it
// drops whole fields, the largest first, naming each in detail.omitted, until it fits. It
// never drops a field the type's schema requires (Required), but for Session Event's event
// (the stored event, of any size): it goes last, replaced by "event" in omitted, which
// session-events.schema.json takes instead. With limit at least MinDetailBytes the required
// fields always fit (MinDetailBytes covers the longest session id); a detail whose required
// fields alone exceed limit (a workflow or state slug kilobytes long) is returned with
// them, over the cap, rather than invalid.
func Fit(detailType string, detail map[string]any, limit int) json.RawMessage {
	b, err := json.Marshal(detail)
	if err == nil && len(b) <= limit {
		return b
	}
	keep := map[string]bool{"omitted": true}
	for _, k := range Required(detailType) {
		keep[k] = true
	}
	d := make(map[string]any, len(detail)+1)
	for k, v := range detail {
		d[k] = v
	}
	var omitted []string
	drop := func(k string) {
		delete(d, k)
		omitted = append(omitted, k)
		slices.Sort(omitted)
		d["omitted"] = omitted
	}
	for {
		b, err = json.Marshal(d)
		if err == nil && len(b) <= limit {
			return b
		}
		// drop the largest value the schema does not require
		big, size := "", 0
		for k, v := range d {
			if keep[k] {
				continue
			}
			vb, _ := json.Marshal(v)
			if len(vb) > size {
				big, size = k, len(vb)
			}
		}
		if big == "" {
			if _, ok := d["event"]; ok && detailType == SessionEvent {
				drop("event")
				continue
			}
			return b // the required fields alone exceed limit: kept, over the cap
		}
		drop(big)
	}
}

// required are the fields session-events.schema.json requires in every detail, and per
// detail type the rest (the schema's test checks both against the file).
var (
	requiredCommon = []string{"eventId", "sessionId", "sessionSeq", "workflow", "status", "state", "ts", "apiPath"}
	requiredOf     = map[string][]string{SessionParked: {"parkId"}, SessionAwaitingInput: {"parkId"}, SessionEvent: {"event"}}
)

// Required are the fields the schema requires in a detail of detailType. Fit keeps them
// all, but Session Event's event, which a detail too large for its cap replaces with
// omitted: ["event"] (the schema requires one or the other).
func Required(detailType string) []string {
	return append(slices.Clone(requiredCommon), requiredOf[detailType]...)
}
