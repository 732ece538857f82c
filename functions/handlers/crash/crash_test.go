package crash_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/archmax-ai/archmax/core/clock"
	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/store"
	ddbstore "github.com/archmax-ai/archmax/core/store/dynamodb"
	"github.com/archmax-ai/archmax/core/store/memory"
	"github.com/archmax-ai/archmax/core/store/storetest"
	"github.com/archmax-ai/archmax/core/transcript"
	"github.com/archmax-ai/archmax/functions/handlers/access"
	"github.com/archmax-ai/archmax/functions/handlers/continuation"
	"github.com/archmax-ai/archmax/functions/handlers/httpapi"
	"github.com/archmax-ai/archmax/functions/handlers/wakes"
	"github.com/archmax-ai/archmax/local/dynamotest"
)

// shop: charge, hand over for review, charge again and wait for the courier (a timed
// park), then — on the courier's delivery or the timer — charge once more and finish.
// Every request of the suite makes the session call the host tool `charge`.
const shop = `
title: Shop
states:
  work:
    triggers:
      manual:
    instructions: Charge the card once, then hand the order over for review.
    tools:
      allow: [charge]
    transitions:
      - to: review
        description: Charged; a person reviews the order.
  review:
    type: human
    title: Order review
    transitions:
      - to: ship
        description: Approved.
        type: approve
  ship:
    instructions: Charge the shipping, wait for the courier, then charge the delivery and finish.
    tools:
      allow: [charge]
    transitions:
      - to: done
        description: Delivered.
  done:
    instructions: Say that the order is done.
`

// The callers: the client starts sessions and delivers to them; the approver decides
// (four-eyes on: the decider is never the starter).
const (
	clientARN   = "arn:aws:sts::123456789012:assumed-role/client/c-1"
	approverARN = "arn:aws:sts::123456789012:assumed-role/approver/a-1"
)

var policy = access.Policy{IAMDeciders: []string{"arn:aws:iam::123456789012:role/approver"}, FourEyes: true}

// start is the suite's injected clock's origin: later than any real clock it runs beside,
// so nothing on the wall clock ever counts as due or expired by it.
var start = time.Date(2030, 1, 7, 9, 0, 0, 0, time.UTC)

// world is what outlives a process: the durable stores, the clock, the tool's effects and
// the asynchronous invocations (continuations) queued for later.
type world struct {
	t        *testing.T
	clock    *clock.Fake
	authored *memory.Files
	files    *memory.Files
	mem      *memory.Store // the memory world's log
	ddb      *dynamodb.Client
	table    string

	mu      sync.Mutex
	charges map[string]int    // charge calls by idempotency key (the tool does the work once per key)
	queue   []*invocation     // continuations invoked and not yet run
	wakeRef map[string]string // the wake scenario's Scheduler payload {sessionId, parkId}
	bus     *bus              // the outbound bus, when the world publishes notifications (outbound_test.go)
}

// invocation is one asynchronous Lambda invocation of a continuation and its attempts
// (Lambda retries a failed asynchronous invocation twice).
type invocation struct {
	ref      continuation.Ref
	attempts int
}

func newWorld(t *testing.T, dynamo bool) *world {
	t.Helper()
	w := &world{t: t, clock: clock.NewFake(start), authored: memory.NewFiles(), files: memory.NewFiles(), charges: map[string]int{}}
	if err := w.authored.Write(context.Background(), "workflows/shop/workflow.yaml", []byte(shop)); err != nil {
		t.Fatal(err)
	}
	if dynamo {
		w.ddb, w.table = dynamotest.NewTable(t) // skips without DynamoDB Local
	} else {
		w.mem = memory.New()
		w.mem.Clock = w.clock.Now
	}
	return w
}

// log is the durable log as a reader sees it (outside any process).
func (w *world) log() store.Log {
	if w.mem != nil {
		return w.mem
	}
	s := ddbstore.New(w.ddb, w.table, nil)
	s.Clock = w.clock.Now
	return s
}

// proc is one process (a Lambda container's one invocation): its own assembly over the
// world's stores, every write of it counted by p and none once it died.
type proc struct {
	p       *storetest.Process
	engines *session.Engines
	runner  *continuation.Runner
	http    *httpapi.Handler
	wake    *wakes.Handler
}

// boot starts a process that dies at its k-th write (0: never), before it or after it.
func (w *world) boot(k int, after bool) *proc {
	p := storetest.NewProcess(k, after)
	var log store.Log
	if w.mem != nil {
		log = &storetest.CrashLog{Log: w.mem, P: p}
	} else {
		// the DynamoDB store's own write requests are the kill points: a commit is its
		// BatchWriteItem and its UpdateItem, an Acquire or Release an UpdateItem, an
		// Idempotency record a PutItem
		labels := &labeller{}
		s := ddbstore.New(&crashAPI{API: w.ddb, p: p, labels: labels}, w.table, nil)
		s.Clock = w.clock.Now
		log = &labelLog{Log: s, labels: labels}
	}
	cfg := session.Config{
		Authored: w.authored, Log: log, Files: &storetest.CrashFiles{Files: w.files, P: p},
		Model: &shopModel{p: p}, ModelID: "shop-model", Clock: w.clock.Now, Owner: "proc",
		Tools: []session.HostTool{w.charge(p)}, Outbound: w.outbound(p),
	}
	engines := session.NewEngines(cfg)
	runner := continuation.NewRunner(engines, &invoker{w: w, p: p}, continuation.Budget{}, nil, continuation.WithClock(w.clock))
	return &proc{
		p: p, engines: engines, runner: runner,
		http: httpapi.New(engines, runner, nil, httpapi.WithPolicy(policy)),
		wake: wakes.New(engines, runner, nil, w.clock.Now),
	}
}

// charge is the host tool `charge` as the process pr sees it: idempotent on its key, as
// the contract asks of a host tool (session.HostCall.IdempotencyKey), and counted.
func (w *world) charge(p *storetest.Process) session.HostTool {
	return session.HostTool{Name: "charge", Description: "Charges the card.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"amount":{"type":"integer"}}}`),
		Handler: func(_ context.Context, call session.HostCall) (string, error) {
			if err := p.Alive(); err != nil {
				return "", err
			}
			w.mu.Lock()
			defer w.mu.Unlock()
			w.charges[call.IdempotencyKey]++
			return `{"charged":true}`, nil
		}}
}

// invoker is the process's Lambda client for continuations: an Event invocation queued in
// the world (a dead process invokes nothing).
type invoker struct {
	w *world
	p *storetest.Process
}

func (i *invoker) Start(_ context.Context, ref continuation.Ref) error {
	if err := i.p.Alive(); err != nil {
		return err
	}
	i.w.mu.Lock()
	defer i.w.mu.Unlock()
	i.w.queue = append(i.w.queue, &invocation{ref: ref})
	return nil
}

func (w *world) pop() *invocation {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.queue) == 0 {
		return nil
	}
	inv := w.queue[0]
	w.queue = w.queue[1:]
	return inv
}

func (w *world) requeue(inv *invocation) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.queue = append(w.queue, inv)
}

// shopModel is a deterministic model: its answer is a function of the request alone (the
// state, and what the conversation shows since its latest opening), so a request asked
// again after a crash gets the same answer, tool call ids included.
type shopModel struct{ p *storetest.Process }

var currentState = regexp.MustCompile(`# Current state: (\S+)`)

func (m *shopModel) Converse(_ context.Context, req *model.Request) (*model.Response, error) {
	if err := m.p.Alive(); err != nil {
		return nil, err
	}
	var system strings.Builder
	for _, b := range req.System {
		system.WriteString(b.Text)
	}
	// with the prompt cache on, the per-call content (the current state, its edges) is the
	// request's final block, after the conversation's cachePoint: system text, not user text
	var perCall *model.Block
	if n := len(req.Messages); n > 0 {
		c := req.Messages[n-1].Content
		if k := len(c); k >= 2 && c[k-2].Kind == model.BlockCachePoint && c[k-1].Kind == model.BlockText {
			perCall = &c[k-1]
			system.WriteString(perCall.Text)
		}
	}
	state := ""
	if ms := currentState.FindAllStringSubmatch(system.String(), -1); len(ms) > 0 {
		state = ms[len(ms)-1][1]
	}
	calls := 0
	opening, charged := "", false
	for i := len(req.Messages) - 1; i >= 0; i-- {
		msg := req.Messages[i]
		text := ""
		for _, b := range msg.Content {
			switch {
			case b.Kind == model.BlockToolUse:
				calls++
				if b.ToolUse.Name == "charge" && opening == "" {
					charged = true
				}
			case b.Kind == model.BlockText && msg.Role == model.RoleUser && (perCall == nil || b.Text != perCall.Text):
				text += b.Text + "\n"
			}
		}
		if text != "" && opening == "" {
			opening = text
			for _, older := range req.Messages[:i] {
				for _, b := range older.Content {
					if b.Kind == model.BlockToolUse {
						calls++
					}
				}
			}
			break
		}
	}
	id := "c" + strconv.Itoa(calls+1)
	switch {
	case strings.Contains(system.String(), "This turn has no tools"):
		return says("Over to " + state + "."), nil
	case state == "work" && !charged, state == "ship" && !charged:
		return uses(id, "charge", `{"amount":10}`), nil
	case state == "work":
		return uses(id, "archmax_advance", `{"to":"review","reason":"Charged."}`), nil
	case state == "ship" && strings.Contains(opening, "[decision]"):
		return uses(id, "archmax_wait", `{"reason":"the courier's scan","until":"1d"}`), nil
	case state == "ship":
		return uses(id, "archmax_advance", `{"to":"done","reason":"Delivered."}`), nil
	default:
		return says("Done."), nil
	}
}

func says(text string) *model.Response {
	return &model.Response{Message: model.Message{Role: model.RoleAssistant, Content: []model.Block{{Kind: model.BlockText, Text: text}}},
		StopReason: model.StopEndTurn, Usage: &model.Usage{InputTokens: 10, OutputTokens: 3}}
}

func uses(id, tool, input string) *model.Response {
	return &model.Response{Message: model.Message{Role: model.RoleAssistant, Content: []model.Block{
		{Kind: model.BlockToolUse, ToolUse: &model.ToolUse{ID: id, Name: tool, Input: json.RawMessage(input)}}}},
		StopReason: model.StopToolUse, Usage: &model.Usage{InputTokens: 10, OutputTokens: 3}}
}

// crashAPI is a DynamoDB client whose write requests are the process's writes.
type crashAPI struct {
	ddbstore.API
	p      *storetest.Process
	labels *labeller
}

func (c *crashAPI) name(op string) string { return c.labels.get() + "/" + op }

func (c *crashAPI) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (out *dynamodb.PutItemOutput, err error) {
	err = c.p.Write(c.name("PutItem"), func() error { out, err = c.API.PutItem(ctx, in, opts...); return err })
	return out, err
}

func (c *crashAPI) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (out *dynamodb.UpdateItemOutput, err error) {
	err = c.p.Write(c.name("UpdateItem"), func() error { out, err = c.API.UpdateItem(ctx, in, opts...); return err })
	return out, err
}

func (c *crashAPI) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (out *dynamodb.DeleteItemOutput, err error) {
	err = c.p.Write(c.name("DeleteItem"), func() error { out, err = c.API.DeleteItem(ctx, in, opts...); return err })
	return out, err
}

func (c *crashAPI) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, opts ...func(*dynamodb.Options)) (out *dynamodb.BatchWriteItemOutput, err error) {
	err = c.p.Write(c.name("BatchWriteItem"), func() error { out, err = c.API.BatchWriteItem(ctx, in, opts...); return err })
	return out, err
}

func (c *crashAPI) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if err := c.p.Alive(); err != nil {
		return nil, err
	}
	return c.API.GetItem(ctx, in, opts...)
}

func (c *crashAPI) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	if err := c.p.Alive(); err != nil {
		return nil, err
	}
	return c.API.Query(ctx, in, opts...)
}

// labeller names the store.Log call a DynamoDB request belongs to (for the report).
type labeller struct {
	mu    sync.Mutex
	label string
}

func (l *labeller) set(s string) { l.mu.Lock(); l.label = s; l.mu.Unlock() }
func (l *labeller) get() string  { l.mu.Lock(); defer l.mu.Unlock(); return l.label }

// labelLog labels each write call of its log for crashAPI.
type labelLog struct {
	store.Log
	labels *labeller
}

func (l *labelLog) Acquire(ctx context.Context, id, owner string, ttl time.Duration) (*store.Head, error) {
	l.labels.set("Acquire")
	return l.Log.Acquire(ctx, id, owner, ttl)
}

func (l *labelLog) Release(ctx context.Context, id, owner string) error {
	l.labels.set("Release")
	return l.Log.Release(ctx, id, owner)
}

func (l *labelLog) Commit(ctx context.Context, id, owner string, c *store.Commit) (*store.Head, error) {
	l.labels.set("Commit")
	return l.Log.Commit(ctx, id, owner, c)
}

func (l *labelLog) RememberIdempotent(ctx context.Context, key string, v []byte, ttl time.Duration) ([]byte, bool, error) {
	l.labels.set("RememberIdempotent")
	return l.Log.RememberIdempotent(ctx, key, v, ttl)
}

func (l *labelLog) PutIdempotent(ctx context.Context, key string, v []byte, ttl time.Duration) error {
	l.labels.set("PutIdempotent")
	return l.Log.PutIdempotent(ctx, key, v, ttl)
}

// request is an API Gateway HTTP API event of a write route, signed by IAM as caller.
func request(routeKey, path string, params map[string]string, body, caller, key string) events.APIGatewayV2HTTPRequest {
	return events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: routeKey, RawPath: path, Body: body, PathParameters: params,
		Headers: map[string]string{"content-type": "application/json", "idempotency-key": key},
		RequestContext: events.APIGatewayV2HTTPRequestContext{RequestID: "r", HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "POST", Path: path},
			Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
				IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{UserARN: caller, AccountID: "123456789012"}}},
	}
}

// A scenario is one request of the suite: the session it finds (setup, clean) and the
// request itself, served by a process (an HTTP request, or a Scheduler's wake event).
type scenario struct {
	name  string
	setup func(w *world) string // the session id, driven to the point the request applies to
	send  func(w *world, pr *proc, sid string) string
}

// answered reports whether a request's answer is its outcome: a 2xx for an HTTP request
// (not a refusal such as 404, 409 SessionNotParkedError or DuplicateDeliveryError), a wake
// that woke or says why it had nothing to do (not an error to retry).
func (sc scenario) answered(a string) bool {
	if sc.name == "wake" {
		return a != "error"
	}
	return strings.HasPrefix(a, "20")
}

func startReq(key string) events.APIGatewayV2HTTPRequest {
	return request(httpapi.RouteStart, "/v1/workflows/shop/sessions", map[string]string{"workflow": "shop"},
		`{"message":"Please charge my card for the order."}`, clientARN, key)
}

func decisionReq(sid, key string) events.APIGatewayV2HTTPRequest {
	return request(httpapi.RouteDecision, "/v1/sessions/"+sid+"/decision", map[string]string{"sessionId": sid},
		`{"to":"ship","comment":"Looks right."}`, approverARN, key)
}

func deliveryReq(sid, key string) events.APIGatewayV2HTTPRequest {
	return request(httpapi.RouteDelivery, "/v1/sessions/"+sid+"/deliveries", map[string]string{"sessionId": sid},
		`{"trigger":"courier","message":"The courier scanned it at the door."}`, clientARN, key)
}

// answer serves req in pr and sums up its answer (for the report).
func answer(pr *proc, req events.APIGatewayV2HTTPRequest) string {
	resp, err := pr.http.Handle(context.Background(), req)
	if err != nil {
		return "error " + err.Error()
	}
	var body struct {
		Kind  string `json:"kind"`
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal([]byte(resp.Body), &body)
	s := strconv.Itoa(resp.StatusCode)
	switch {
	case body.Error.Code != "":
		s += " " + body.Error.Code
	case body.Kind != "":
		s += " " + body.Kind
	}
	if resp.Headers["Idempotent-Replayed"] == "true" {
		s += " (replayed)"
	}
	return s
}

var scenarios = []scenario{
	{name: "turn",
		setup: func(*world) string { return "" },
		send:  func(_ *world, pr *proc, _ string) string { return answer(pr, startReq("order-1")) }},
	{name: "decide",
		setup: func(w *world) string { return w.started() },
		send:  func(_ *world, pr *proc, sid string) string { return answer(pr, decisionReq(sid, "approve-1")) }},
	{name: "deliver",
		setup: func(w *world) string { return w.waiting() },
		send:  func(_ *world, pr *proc, sid string) string { return answer(pr, deliveryReq(sid, "scan-1")) }},
	{name: "wake",
		setup: func(w *world) string {
			sid := w.waiting()
			sum, err := session.NewSessions(w.log(), w.files, nil).Get(context.Background(), sid)
			if err != nil || sum.Pending == nil || sum.ResumeAt == "" {
				w.t.Fatalf("wake setup: %v %+v", err, sum)
			}
			at, _ := time.Parse(time.RFC3339, sum.ResumeAt)
			w.clock.Advance(at.Sub(w.clock.Now()) + time.Second)
			w.wakeRef = map[string]string{"sessionId": sid, "parkId": sum.Pending.ParkID}
			return sid
		},
		send: func(w *world, pr *proc, _ string) string {
			raw, _ := json.Marshal(w.wakeRef)
			res, err := pr.wake.Handle(context.Background(), raw)
			if err != nil {
				return "error"
			}
			r, _ := res.(wakes.Result)
			if r.Skipped != "" {
				return "skipped"
			}
			return "woke " + string(r.Outcome)
		}},
}

// started is a session started cleanly and driven to its review park.
func (w *world) started() string {
	pr := w.boot(0, false)
	if got := answer(pr, startReq("setup-order")); !strings.HasPrefix(got, "202") && !strings.HasPrefix(got, "200") {
		w.t.Fatalf("setup start: %s", got)
	}
	sid := w.session()
	w.drive(sid)
	w.want(sid, session.StatusAwaitingDecision)
	return sid
}

// waiting is a started session approved cleanly and driven to its courier park.
func (w *world) waiting() string {
	sid := w.started()
	if got := answer(w.boot(0, false), decisionReq(sid, "setup-approve")); !strings.HasPrefix(got, "20") {
		w.t.Fatalf("setup decision: %s", got)
	}
	w.drive(sid)
	w.want(sid, session.StatusAwaitingInput)
	return sid
}

func (w *world) want(sid string, status session.Status) {
	h, err := w.log().Get(context.Background(), sid)
	if err != nil || session.Status(h.Status) != status {
		w.t.Fatalf("session %s: %v %+v, want %s", sid, err, h, status)
	}
}

// session is the id of the world's one session ("" when none).
func (w *world) session() string {
	heads, _, err := w.log().List(context.Background(), store.ListOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	if len(heads) != 1 {
		return ""
	}
	return heads[0].SessionID
}

// firstAttempt serves the request in a process that dies at the k-th write of the
// request's own handling — its invocation, then the continuations it handed the turn to, in
// order (their writes counted on from where the request's stopped) — and reports where it
// died ("" when every write was made: k is past the last kill point) and what the request
// was answered.
func (w *world) firstAttempt(sc scenario, sid string, k int, after bool) (died, answered string, writes int) {
	pr := w.boot(k, after)
	answered = sc.send(w, pr, sid)
	if pr.p.Dead() {
		answered = "lost (the process died)"
	}
	offset, where := 0, "request"
	for {
		if pr.p.Dead() {
			ops := pr.p.Ops()
			return fmt.Sprintf("%d %s (%s)", offset+len(ops), ops[len(ops)-1], where), answered, offset + pr.p.Writes()
		}
		where = "continuation"
		offset += pr.p.Writes()
		inv := w.pop()
		if inv == nil {
			return "", answered, offset
		}
		left := 0
		if k > 0 {
			left = k - offset
		}
		pr = w.boot(left, after)
		if _, err := pr.runner.Handle(context.Background(), inv.ref); err != nil || pr.p.Dead() {
			inv.attempts++
			w.requeue(inv) // Lambda retries a failed (or crashed) asynchronous invocation
		}
	}
}

// drive runs what a deployment runs until the session settles (and every queued
// invocation has run): queued continuations, each retried by Lambda (twice) after a minute
// when it fails; with none queued, the 5-minute sweep once a stranded session is due.
// Nothing runs on the wall clock.
func (w *world) drive(sid string) {
	ctx := context.Background()
	for range 40 {
		if inv := w.pop(); inv != nil {
			if inv.attempts > 0 {
				w.clock.Advance(session.DefaultLeaseTTL + time.Second) // Lambda's retry, once the dead writer's lease lapsed
			}
			if _, err := w.boot(0, false).runner.Handle(ctx, inv.ref); err != nil && inv.attempts < 2 {
				inv.attempts++
				w.requeue(inv)
			}
			continue
		}
		h, err := w.log().Get(ctx, sid)
		if err == nil && session.Status(h.Status) != session.StatusRunning {
			return
		}
		w.clock.Advance(session.StrandedAfter + session.DefaultLeaseTTL + time.Second)
		w.boot(0, false).wake.Sweep(ctx)
	}
	w.t.Fatalf("session %s never settled", sid)
}

// stored is a session normalised for comparison: ids, timestamps, leases and owners left
// out; messages by role, note, tool, call id, error and text; the trail by kind, target and
// reason; events by type, in order; and the charges (one per idempotency key).
type stored struct {
	Status, State string
	Messages      []string
	Trail         []string
	Events        []string
	Charges       int
}

var instant = regexp.MustCompile(`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z`)

func (w *world) stored(sid string) stored {
	ctx := context.Background()
	log := w.log()
	h, err := log.Get(ctx, sid)
	if err != nil {
		w.t.Fatal(err)
	}
	var rec struct {
		State string `json:"state"`
	}
	_ = json.Unmarshal(h.Body, &rec)
	s := stored{Status: h.Status, State: rec.State}
	msgs, err := log.Messages(ctx, sid, 0, h.Messages)
	if err != nil {
		w.t.Fatal(err)
	}
	for _, raw := range msgs {
		var m transcript.Message
		_ = json.Unmarshal(raw, &m)
		line := fmt.Sprintf("%s|%s|%s|%s|%v|%s", m.Role, m.Note, m.Tool, m.ToolCallID, m.Error, instant.ReplaceAllString(m.Text, "<t>"))
		for _, c := range m.ToolCalls {
			line += fmt.Sprintf("|call %s %s", c.ID, c.Name)
		}
		s.Messages = append(s.Messages, line)
	}
	steps, err := log.TrailSteps(ctx, sid, 0, h.Trail)
	if err != nil {
		w.t.Fatal(err)
	}
	for _, raw := range steps {
		var st transcript.TrailStep
		_ = json.Unmarshal(raw, &st)
		s.Trail = append(s.Trail, fmt.Sprintf("%s:%s:%s", st.Kind, st.To, st.Reason))
	}
	evs, err := log.Events(ctx, sid, 0, h.Events)
	if err != nil {
		w.t.Fatal(err)
	}
	for _, raw := range evs {
		var ev struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(raw, &ev)
		s.Events = append(s.Events, ev.Type)
	}
	w.mu.Lock()
	s.Charges = len(w.charges)
	w.mu.Unlock()
	return s
}

// repeats counts the charge calls made again under a key already charged (the tool's
// idempotency absorbs them: at-least-once calls, exactly-once effects).
func (w *world) repeats() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, c := range w.charges {
		n += c - 1
	}
	return n
}

func diff(a, b stored) string {
	ja, _ := json.MarshalIndent(a, "", " ")
	jb, _ := json.MarshalIndent(b, "", " ")
	if string(ja) == string(jb) {
		return ""
	}
	return fmt.Sprintf("got %s\nwant %s", ja, jb)
}

// TestCrashPoints is the crash-injection suite (docs/RELIABILITY.md): for each scenario, a
// clean run counts the writes of the request's handling (its kill points); then for every
// kill point, before and after the write, a fresh world is set up cleanly, the request is
// served by a process that dies there, the same request is retried at once and again once
// the dead process's claim and lease have lapsed, and the session is driven to its end.
// The stored session must equal the clean run's at every point: messages, trail, events
// in order, and charges — one per idempotency key. The memory store injects at the
// store.Log calls; the DynamoDB store (DynamoDB Local) at its own write requests.
func TestCrashPoints(t *testing.T) {
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
				t.Run(sc.name, func(t *testing.T) {
					t.Parallel() // each world is its own store (a table of its own on DynamoDB Local)
					crashPoints(t, sc, dynamo)
				})
			}
		})
	}
}

func crashPoints(t *testing.T, sc scenario, dynamo bool) {
	clean := newWorld(t, dynamo)
	sid := sc.setup(clean)
	charged := len(clean.charges)
	_, answered, n := clean.firstAttempt(sc, sid, 0, false)
	sid = orSession(clean, sid)
	clean.drive(sid)
	want := clean.stored(sid)
	if n < 3 || want.Charges <= charged {
		t.Fatalf("clean %s: %d writes, %d charges (answered %s)", sc.name, n, want.Charges, answered)
	}
	t.Logf("%s: %d kill points × before/after; clean answer %s, ends %s in %s", sc.name, n, answered, want.Status, want.State)
	passed := 0
	for k := 1; k <= n; k++ {
		for _, after := range []bool{false, true} {
			w := newWorld(t, dynamo)
			sid := sc.setup(w)
			died, first, _ := w.firstAttempt(sc, sid, k, after)
			if died == "" {
				t.Fatalf("kill point %d was never reached", k)
			}
			now := sc.send(w, w.boot(0, false), sid) // the same request, at once
			w.clock.Advance(session.DefaultLeaseTTL + time.Second)
			lapsed := sc.send(w, w.boot(0, false), sid) // and once the claim and the lease lapsed
			id := orSession(w, sid)
			if id == "" {
				t.Errorf("%s, kill %s (after %v): %d sessions, want 1", sc.name, died, after, sessionsIn(w))
				continue
			}
			when := "before"
			if after {
				when = "after"
			}
			// once the dead process's claim and lease have lapsed, the retry is answered as the
			// request (its outcome, replayed or read from the session), never refused
			if !sc.answered(lapsed) {
				t.Errorf("%s, kill %s %s: the retry after the lapse was answered %s", sc.name, when, died, lapsed)
				continue
			}
			w.drive(id)
			if d := diff(w.stored(id), want); d != "" {
				t.Errorf("%s, kill %s %s: first %s, retries %s / %s:\n%s", sc.name, when, died, first, now, lapsed, d)
				continue
			}
			passed++
			t.Logf("%s | %s %s | first: %s | retry: %s | after the lapse: %s | charge repeats: %d", sc.name, when, died, first, now, lapsed, w.repeats())
		}
	}
	t.Logf("%s: %d/%d kill points passed", sc.name, passed, 2*n)
}

// orSession is sid, or the world's one session when the scenario starts it.
func orSession(w *world, sid string) string {
	if sid != "" {
		return sid
	}
	return w.session()
}

func sessionsIn(w *world) int {
	heads, _, _ := w.log().List(context.Background(), store.ListOptions{})
	return len(heads)
}
