// Package schedulerfake is a local peer for Amazon EventBridge Scheduler (DESIGN.md §5,
// research/aws-local.md §6): an http.Handler speaking the REST-JSON wire protocol of
// service/scheduler for CreateSchedule (POST /schedules/{Name}), UpdateSchedule (PUT),
// GetSchedule (GET ?groupName=) and DeleteSchedule (DELETE ?groupName=), holding schedules in
// memory, with errors as the SDK decodes them: an X-Amzn-Errortype header
// (ConflictException 409, ResourceNotFoundException 404, ValidationException 400) and a
// {"Message": …} body. Point a real *scheduler.Client at it with BaseEndpoint.
//
// Only one-time `at(yyyy-mm-ddThh:mm:ss)` schedules are served. Nothing fires by itself: a
// test calls Due to take the schedules whose time has come and deliver their target Input to
// the wake handler. Schedule groups are not modelled (any group name is accepted, "" is
// "default"), ClientToken is ignored, and past at() times are accepted.
package schedulerfake

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"sync"
	"time"
)

// Target is a schedule's target as created.
type Target struct {
	Arn     string
	RoleArn string
	Input   string // the JSON text the target receives
	// DeadLetterArn is the target's DeadLetterConfig.Arn ("" when it names none).
	DeadLetterArn string
}

// Schedule is a stored schedule as created or last updated.
type Schedule struct {
	Name                  string
	Group                 string // "default" when the request named none
	Expression            string // as sent, e.g. "at(2030-01-02T03:04:05)"
	Timezone              string // as sent; "" means UTC
	At                    time.Time
	FlexibleTimeWindow    string // Mode: "OFF" or "FLEXIBLE"
	ActionAfterCompletion string // "NONE" (the default) or "DELETE"
	State                 string // "ENABLED" (the default) or "DISABLED"
	Target                Target
	Created               time.Time
	fired                 bool // a completed NONE schedule stays but never fires again
}

// Fired is one invocation Due performed.
type Fired struct {
	Name   string
	Group  string
	At     time.Time // the schedule's time
	Target Target
}

// Fake is the in-memory EventBridge Scheduler. The zero value is not usable; call New.
// It is safe for concurrent use.
type Fake struct {
	mux       *http.ServeMux
	mu        sync.Mutex
	schedules map[key]*Schedule
}

type key struct{ group, name string }

// New returns an empty Fake.
func New() *Fake {
	f := &Fake{mux: http.NewServeMux(), schedules: map[key]*Schedule{}}
	f.mux.HandleFunc("POST /schedules/{name}", f.create)
	f.mux.HandleFunc("PUT /schedules/{name}", f.update)
	f.mux.HandleFunc("GET /schedules/{name}", f.get)
	f.mux.HandleFunc("DELETE /schedules/{name}", f.delete)
	return f
}

// ServeHTTP serves the wire protocol.
func (f *Fake) ServeHTTP(w http.ResponseWriter, r *http.Request) { f.mux.ServeHTTP(w, r) }

// Schedules returns a copy of the stored schedules, ordered by group then name.
func (f *Fake) Schedules() []Schedule {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]Schedule, 0, len(f.schedules))
	for _, s := range f.schedules {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b Schedule) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// Due fires every enabled schedule whose time is at or before now, once, as EventBridge would
// have by then: it returns them ordered by time (then group, name) and removes those with
// ActionAfterCompletion DELETE; a NONE schedule stays, completed.
func (f *Fake) Due(now time.Time) []Fired {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Fired
	for k, s := range f.schedules {
		if s.fired || s.State != "ENABLED" || s.At.After(now) {
			continue
		}
		out = append(out, Fired{Name: s.Name, Group: s.Group, At: s.At, Target: s.Target})
		if s.ActionAfterCompletion == "DELETE" {
			delete(f.schedules, k)
		} else {
			s.fired = true
		}
	}
	slices.SortFunc(out, func(a, b Fired) int {
		return cmp.Or(a.At.Compare(b.At), cmp.Compare(a.Group, b.Group), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// wireSchedule is the body of CreateSchedule/UpdateSchedule and the answer of GetSchedule.
type wireSchedule struct {
	Arn                        string      `json:"Arn,omitempty"`
	Name                       string      `json:"Name,omitempty"`
	GroupName                  string      `json:"GroupName,omitempty"`
	ScheduleExpression         string      `json:"ScheduleExpression"`
	ScheduleExpressionTimezone string      `json:"ScheduleExpressionTimezone,omitempty"`
	FlexibleTimeWindow         *wireWindow `json:"FlexibleTimeWindow"`
	ActionAfterCompletion      string      `json:"ActionAfterCompletion,omitempty"`
	State                      string      `json:"State,omitempty"`
	Target                     *wireTarget `json:"Target"`
	CreationDate               float64     `json:"CreationDate,omitempty"`
	LastModificationDate       float64     `json:"LastModificationDate,omitempty"`
}

type wireWindow struct {
	Mode                   string `json:"Mode"`
	MaximumWindowInMinutes *int   `json:"MaximumWindowInMinutes,omitempty"`
}

type wireTarget struct {
	Arn              string          `json:"Arn"`
	RoleArn          string          `json:"RoleArn"`
	Input            string          `json:"Input,omitempty"`
	DeadLetterConfig *wireDeadLetter `json:"DeadLetterConfig,omitempty"`
}

type wireDeadLetter struct {
	Arn string `json:"Arn,omitempty"`
}

var (
	validName = regexp.MustCompile(`^[0-9A-Za-z_.-]{1,64}$`)
	sqsArn    = regexp.MustCompile(`^arn:aws(-[a-z]+)?:sqs:[a-z0-9-]+:\d{12}:[a-zA-Z0-9_-]+$`) // a standard queue: Scheduler takes no FIFO queue
	atExpr    = regexp.MustCompile(`^at\((\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\)$`)
)

// parse decodes and validates a create/update body into a Schedule named name.
func parse(r *http.Request, name string) (*Schedule, error) {
	if !validName.MatchString(name) {
		return nil, fmt.Errorf("1 validation error detected: Value '%s' at 'name' failed to satisfy constraint: Member must satisfy regular expression pattern: [0-9a-zA-Z-_.]+ and length 1-64", name)
	}
	var body wireSchedule
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("invalid request body: %v", err)
	}
	switch {
	case body.FlexibleTimeWindow == nil || body.FlexibleTimeWindow.Mode == "":
		return nil, fmt.Errorf("FlexibleTimeWindow is required")
	case body.Target == nil || body.Target.Arn == "" || body.Target.RoleArn == "":
		return nil, fmt.Errorf("Target.Arn and Target.RoleArn are required")
	}
	m := atExpr.FindStringSubmatch(body.ScheduleExpression)
	if m == nil {
		return nil, fmt.Errorf("Invalid Schedule Expression %s (this fake serves only at(yyyy-mm-ddThh:mm:ss))", body.ScheduleExpression)
	}
	loc := time.UTC
	if tz := body.ScheduleExpressionTimezone; tz != "" && tz != "UTC" {
		var err error
		if loc, err = time.LoadLocation(tz); err != nil {
			return nil, fmt.Errorf("Invalid ScheduleExpressionTimezone %s", tz)
		}
	}
	at, err := time.ParseInLocation("2006-01-02T15:04:05", m[1], loc)
	if err != nil {
		return nil, fmt.Errorf("Invalid Schedule Expression %s: %v", body.ScheduleExpression, err)
	}
	dlq := ""
	if d := body.Target.DeadLetterConfig; d != nil {
		if !sqsArn.MatchString(d.Arn) {
			return nil, fmt.Errorf("Target.DeadLetterConfig.Arn %q is not an SQS queue ARN", d.Arn)
		}
		dlq = d.Arn
	}
	return &Schedule{
		Name:                  name,
		Group:                 cmp.Or(body.GroupName, "default"),
		Expression:            body.ScheduleExpression,
		Timezone:              body.ScheduleExpressionTimezone,
		At:                    at,
		FlexibleTimeWindow:    body.FlexibleTimeWindow.Mode,
		ActionAfterCompletion: cmp.Or(body.ActionAfterCompletion, "NONE"),
		State:                 cmp.Or(body.State, "ENABLED"),
		Target:                Target{Arn: body.Target.Arn, RoleArn: body.Target.RoleArn, Input: body.Target.Input, DeadLetterArn: dlq},
	}, nil
}

func (f *Fake) create(w http.ResponseWriter, r *http.Request) {
	s, err := parse(r, r.PathValue("name"))
	if err != nil {
		writeError(w, http.StatusBadRequest, "ValidationException", err.Error())
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	k := key{s.Group, s.Name}
	if _, ok := f.schedules[k]; ok {
		writeError(w, http.StatusConflict, "ConflictException", fmt.Sprintf("Schedule %s already exists.", s.Name))
		return
	}
	s.Created = time.Now()
	f.schedules[k] = s
	writeJSON(w, map[string]string{"ScheduleArn": arn(s.Group, s.Name)})
}

func (f *Fake) update(w http.ResponseWriter, r *http.Request) {
	s, err := parse(r, r.PathValue("name"))
	if err != nil {
		writeError(w, http.StatusBadRequest, "ValidationException", err.Error())
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	k := key{s.Group, s.Name}
	old, ok := f.schedules[k]
	if !ok {
		writeError(w, http.StatusNotFound, "ResourceNotFoundException", notFound(s.Group, s.Name))
		return
	}
	s.Created = old.Created
	f.schedules[k] = s
	writeJSON(w, map[string]string{"ScheduleArn": arn(s.Group, s.Name)})
}

func (f *Fake) get(w http.ResponseWriter, r *http.Request) {
	group, name := groupOf(r), r.PathValue("name")
	f.mu.Lock()
	s, ok := f.schedules[key{group, name}]
	var copied Schedule
	if ok {
		copied = *s
	}
	f.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, "ResourceNotFoundException", notFound(group, name))
		return
	}
	writeJSON(w, wireSchedule{
		Arn:                        arn(group, name),
		Name:                       name,
		GroupName:                  group,
		ScheduleExpression:         copied.Expression,
		ScheduleExpressionTimezone: copied.Timezone,
		FlexibleTimeWindow:         &wireWindow{Mode: copied.FlexibleTimeWindow},
		ActionAfterCompletion:      copied.ActionAfterCompletion,
		State:                      copied.State,
		Target:                     copied.Target.wire(),
		CreationDate:               epoch(copied.Created),
		LastModificationDate:       epoch(copied.Created),
	})
}

func (f *Fake) delete(w http.ResponseWriter, r *http.Request) {
	group, name := groupOf(r), r.PathValue("name")
	f.mu.Lock()
	_, ok := f.schedules[key{group, name}]
	delete(f.schedules, key{group, name})
	f.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, "ResourceNotFoundException", notFound(group, name))
		return
	}
	writeJSON(w, struct{}{})
}

func groupOf(r *http.Request) string { return cmp.Or(r.URL.Query().Get("groupName"), "default") }

func arn(group, name string) string {
	return "arn:aws:scheduler:us-east-1:000000000000:schedule/" + group + "/" + name
}

func notFound(group, name string) string {
	return fmt.Sprintf("Schedule %s does not exist in group %s.", name, group)
}

func epoch(t time.Time) float64 { return float64(t.UnixMilli()) / 1000 }

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v) // a write error means the client went away
}

func writeError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-Errortype", code)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"Message": message})
}

// wire is the target as the API answers it.
func (t Target) wire() *wireTarget {
	w := &wireTarget{Arn: t.Arn, RoleArn: t.RoleArn, Input: t.Input}
	if t.DeadLetterArn != "" {
		w.DeadLetterConfig = &wireDeadLetter{Arn: t.DeadLetterArn}
	}
	return w
}
