// Package eventbridgefake is a local peer for Amazon EventBridge's PutEvents: an
// http.Handler speaking the service's JSON 1.1 wire protocol (POST /, X-Amz-Target
// AWSEvents.PutEvents, Content-Type application/x-amz-json-1.1), holding the events it
// accepted in memory, with EventBridge's request limits (1 to 10 entries, 256 KiB,
// Source, DetailType and a JSON object Detail on each) and its answers: per-entry EventId or
// ErrorCode/ErrorMessage with FailedEntryCount, and errors as the SDK decodes them (an
// __type and message body). Point a real *eventbridge.Client at it with BaseEndpoint.
//
// A test makes it fail: Down answers every request with a 500 InternalException (the
// SDK retries it, then gives up); FailEntries refuses the next n entries one by one.
package eventbridgefake

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
)

// Event is one accepted entry.
type Event struct {
	ID           string
	EventBusName string
	Source       string
	DetailType   string
	Detail       json.RawMessage
	Resources    []string
}

// Fake is the in-memory EventBridge. Safe for concurrent use; the zero value is usable.
type Fake struct {
	mu       sync.Mutex
	events   []Event
	requests int
	down     bool
	failN    int
	seq      int
}

// New returns an empty fake.
func New() *Fake { return &Fake{} }

// Events returns the accepted events in the order they arrived.
func (f *Fake) Events() []Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Event(nil), f.events...)
}

// Requests is how many PutEvents requests arrived (failed ones included).
func (f *Fake) Requests() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests
}

// Down makes every request fail with a 500 (true) or be served again (false).
func (f *Fake) Down(down bool) {
	f.mu.Lock()
	f.down = down
	f.mu.Unlock()
}

// FailEntries refuses the next n entries (ErrorCode InternalFailure), accepting the rest.
func (f *Fake) FailEntries(n int) {
	f.mu.Lock()
	f.failN = n
	f.mu.Unlock()
}

type entry struct {
	EventBusName string
	Source       string
	DetailType   string
	Detail       string
	Resources    []string
}

type result struct {
	EventId      string `json:",omitempty"`
	ErrorCode    string `json:",omitempty"`
	ErrorMessage string `json:",omitempty"`
}

// ServeHTTP implements http.Handler.
func (f *Fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.Header.Get("X-Amz-Target") != "AWSEvents.PutEvents" {
		fail(w, http.StatusBadRequest, "UnknownOperationException", "only AWSEvents.PutEvents is served, got "+strconv.Quote(r.Header.Get("X-Amz-Target")))
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 2<<20))
	if err != nil {
		fail(w, http.StatusBadRequest, "SerializationException", err.Error())
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests++
	if f.down {
		fail(w, http.StatusInternalServerError, "InternalException", "the fake is down")
		return
	}
	var in struct{ Entries []entry }
	if err := json.Unmarshal(body, &in); err != nil {
		fail(w, http.StatusBadRequest, "SerializationException", err.Error())
		return
	}
	if len(in.Entries) == 0 || len(in.Entries) > 10 {
		fail(w, http.StatusBadRequest, "ValidationException", fmt.Sprintf("1 validation error detected: Value at 'entries' failed to satisfy constraint: Member must have length between 1 and 10 (got %d)", len(in.Entries)))
		return
	}
	size := 0
	for _, e := range in.Entries {
		size += len(e.Source) + len(e.DetailType) + len(e.Detail)
	}
	if size > 256*1024 {
		fail(w, http.StatusBadRequest, "ValidationException", "Total size of the entries in the request is over the limit.")
		return
	}
	out := struct {
		Entries          []result
		FailedEntryCount int
	}{}
	for _, e := range in.Entries {
		var obj map[string]any
		switch {
		case e.Source == "" || e.DetailType == "" || e.Detail == "":
			out.Entries = append(out.Entries, result{ErrorCode: "InvalidArgument", ErrorMessage: "Parameter(s) Source, DetailType and Detail are required."})
		case json.Unmarshal([]byte(e.Detail), &obj) != nil:
			out.Entries = append(out.Entries, result{ErrorCode: "MalformedDetail", ErrorMessage: "Detail is malformed."})
		case f.failN > 0:
			f.failN--
			out.Entries = append(out.Entries, result{ErrorCode: "InternalFailure", ErrorMessage: "the fake refused this entry"})
		default:
			f.seq++
			id := fmt.Sprintf("00000000-0000-4000-8000-%012d", f.seq)
			f.events = append(f.events, Event{ID: id, EventBusName: e.EventBusName, Source: e.Source, DetailType: e.DetailType,
				Detail: json.RawMessage(e.Detail), Resources: e.Resources})
			out.Entries = append(out.Entries, result{EventId: id})
			continue
		}
		out.FailedEntryCount++
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_ = json.NewEncoder(w).Encode(out)
}

func fail(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("X-Amzn-Errortype", typ)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": typ, "message": msg})
}
