package golden_test

import (
	"context"
	"encoding/json"
	"net/http"
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
	fsstore "github.com/archmax-ai/archmax/core/store/fs"
	"github.com/archmax-ai/archmax/core/store/memory"
	"github.com/archmax-ai/archmax/core/store/storetest"
	"github.com/archmax-ai/archmax/functions/handlers/access"
	"github.com/archmax-ai/archmax/functions/handlers/continuation"
	"github.com/archmax-ai/archmax/functions/handlers/httpapi"
	"github.com/archmax-ai/archmax/functions/handlers/wakes"
)

// The suite's workflows. shop: charge, hand over for review, charge again and wait for the
// courier (a timed park), then charge once more and finish. desk delegates a sign-off to
// the signoff sub-workflow, which stops for a person and returns whether it was approved.
// The golden sessions carry their own spec snapshots, so these texts may change without
// changing what a restored session runs.
var workflows = map[string]string{
	"shop": `
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
`,
	"desk": `
title: Desk
states:
  desk:
    triggers:
      manual:
    instructions: Hand the request to the signoff workflow, then say what came back.
    tools:
      allow: [archmax_workflow_signoff]
`,
	"signoff": `
title: Sign-off
states:
  prepare:
    triggers:
      manual:
        description: Ask the area owner to sign off one area.
        requires:
          - { name: area, type: string, description: The area }
        returns:
          - { name: approved, type: boolean, description: true when the owner approved }
    instructions: Hand the request to the owner.
    transitions:
      - to: sign
        description: Ready for the owner.
  sign:
    type: human
    title: Owner sign-off
    transitions:
      - to: granted
        description: The owner approves.
        type: approve
  granted:
    instructions: Record approved as true, then say that the owner approved.
`,
}

// The callers: the client starts sessions and delivers to them; the approver decides
// (four-eyes on: the decider is never the starter).
const (
	clientARN   = "arn:aws:sts::123456789012:assumed-role/client/c-1"
	approverARN = "arn:aws:sts::123456789012:assumed-role/approver/a-1"
)

var policy = access.Policy{IAMDeciders: []string{"arn:aws:iam::123456789012:role/approver"}, FourEyes: true}

// origin is where a fresh world's clock starts: later than the wall clock it runs beside,
// so nothing counts as due or expired by the wall clock.
var origin = time.Date(2030, 1, 7, 9, 0, 0, 0, time.UTC)

type backend string

const (
	fsBackend  backend = "fs"       // the file store: a directory (log/ and files/)
	ddbBackend backend = "dynamodb" // a DynamoDB Local table, its session files in memory
)

// world is what outlives a process: the durable stores, the clock, the charge tool's
// effects and the continuations queued for later.
type world struct {
	t        *testing.T
	kind     backend
	clock    *clock.Fake
	authored *memory.Files

	dir     string // fs: the store's directory
	fsLog   *fsstore.Store
	fsFiles *fsstore.Files

	ddb      *dynamodb.Client
	table    string
	memFiles *memory.Files // dynamodb: the session files

	mu      sync.Mutex
	queue   []continuation.Ref
	charges map[string]int // charge calls by idempotency key
}

// newWorld opens a world on kind's stores: the file store in dir, or a DynamoDB Local
// table (ddb, table), with its clock at now.
func newWorld(t *testing.T, kind backend, dir string, ddb *dynamodb.Client, table string, now time.Time) *world {
	t.Helper()
	w := &world{t: t, kind: kind, clock: clock.NewFake(now), authored: memory.NewFiles(), charges: map[string]int{}}
	for slug, text := range workflows {
		if err := w.authored.Write(context.Background(), "workflows/"+slug+"/workflow.yaml", []byte(text)); err != nil {
			t.Fatal(err)
		}
	}
	switch kind {
	case fsBackend:
		var err error
		w.dir = dir
		if w.fsLog, err = fsstore.Open(dir + "/log"); err != nil {
			t.Fatal(err)
		}
		w.fsLog.Clock = w.clock.Now
		if w.fsFiles, err = fsstore.OpenFiles(dir + "/files"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.fsLog.Close(); w.fsFiles.Close() })
	case ddbBackend:
		w.ddb, w.table, w.memFiles = ddb, table, memory.NewFiles()
	}
	return w
}

func (w *world) log() store.Log {
	if w.kind == fsBackend {
		return w.fsLog
	}
	s := ddbstore.New(w.ddb, w.table, nil)
	s.Clock = w.clock.Now
	return s
}

func (w *world) files() store.Files {
	if w.kind == fsBackend {
		return w.fsFiles
	}
	return w.memFiles
}

// proc is one process (a Lambda container's invocation) over the world's stores.
type proc struct {
	p      *storetest.Process
	runner *continuation.Runner
	http   *httpapi.Handler
	wake   *wakes.Handler
}

// boot starts a process; when dies is set, the process dies at its first write after a
// commit dies reports true for (the write is not made).
func (w *world) boot(dies func(*store.Commit) bool) *proc {
	p := storetest.NewProcess(0, false)
	var log store.Log = &storetest.CrashLog{Log: w.log(), P: p}
	if dies != nil {
		log = &dieAfter{Log: log, p: p, when: dies}
	}
	cfg := session.Config{
		Authored: w.authored, Log: log, Files: &storetest.CrashFiles{Files: w.files(), P: p},
		Model: &goldenModel{p: p}, ModelID: "golden-model", Clock: w.clock.Now, Owner: "proc",
		Tools: []session.HostTool{w.charge(p)},
	}
	engines := session.NewEngines(cfg)
	runner := continuation.NewRunner(engines, &invoker{w: w, p: p}, continuation.Budget{}, nil, continuation.WithClock(w.clock))
	return &proc{p: p, runner: runner,
		http: httpapi.New(engines, runner, nil, httpapi.WithPolicy(policy)),
		wake: wakes.New(engines, runner, nil, w.clock.Now)}
}

// dieAfter kills its process right after a commit when says so: the process's next write
// is its last, and is not made.
type dieAfter struct {
	store.Log
	p    *storetest.Process
	when func(*store.Commit) bool
}

func (d *dieAfter) Commit(ctx context.Context, id, owner string, c *store.Commit) (*store.Head, error) {
	h, err := d.Log.Commit(ctx, id, owner, c)
	if err == nil && d.when(c) {
		d.p.K = d.p.Writes() + 1
	}
	return h, err
}

// charge is the host tool `charge`: idempotent on its key and counted.
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

// invoker queues a process's asynchronous continuation invocations in the world.
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
	i.w.queue = append(i.w.queue, ref)
	return nil
}

// drive runs what a deployment runs until the session settles: the queued continuations,
// then — with none queued and the session still running — the sweep once it is due.
func (w *world) drive(sid string) {
	w.t.Helper()
	ctx := context.Background()
	for range 40 {
		w.mu.Lock()
		var ref *continuation.Ref
		if len(w.queue) > 0 {
			ref = &w.queue[0]
			w.queue = w.queue[1:]
		}
		w.mu.Unlock()
		if ref != nil {
			if _, err := w.boot(nil).runner.Handle(ctx, *ref); err != nil {
				w.t.Fatalf("continuation of %s: %v", ref.SessionID, err)
			}
			continue
		}
		h, err := w.log().Get(ctx, sid)
		if err == nil && session.Status(h.Status) != session.StatusRunning {
			return
		}
		w.clock.Advance(session.StrandedAfter + session.DefaultLeaseTTL + time.Second)
		w.boot(nil).wake.Sweep(ctx)
	}
	w.t.Fatalf("session %s never settled", sid)
}

// head is a session's committed head.
func (w *world) head(sid string) *store.Head {
	w.t.Helper()
	h, err := w.log().Get(context.Background(), sid)
	if err != nil {
		w.t.Fatalf("session %s: %v", sid, err)
	}
	return h
}

func (w *world) want(sid string, status session.Status) {
	w.t.Helper()
	if h := w.head(sid); session.Status(h.Status) != status {
		w.t.Fatalf("session %s is %s, want %s", sid, h.Status, status)
	}
}

// summary is the session as the read API sums it up.
func (w *world) summary(sid string) *session.SessionSummary {
	w.t.Helper()
	sum, err := session.NewSessions(w.log(), w.files(), nil).Get(context.Background(), sid)
	if err != nil {
		w.t.Fatalf("summary of %s: %v", sid, err)
	}
	return sum
}

// messages are a session's stored messages, decoded.
func (w *world) messages(sid string) []map[string]any {
	w.t.Helper()
	h := w.head(sid)
	raws, err := w.log().Messages(context.Background(), sid, 0, h.Messages)
	if err != nil {
		w.t.Fatal(err)
	}
	out := make([]map[string]any, len(raws))
	for i, raw := range raws {
		if err := json.Unmarshal(raw, &out[i]); err != nil {
			w.t.Fatalf("message %d of %s: %s", i, sid, raw)
		}
	}
	return out
}

// toolResults counts a session's stored results of tool.
func (w *world) toolResults(sid, tool string) int {
	n := 0
	for _, m := range w.messages(sid) {
		if m["role"] == "tool" && m["tool"] == tool {
			n++
		}
	}
	return n
}

// sessions is how many sessions the log lists.
func (w *world) sessions() int {
	heads, _, err := w.log().List(context.Background(), store.ListOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	return len(heads)
}

// answer is an HTTP answer: its status and decoded body.
type answer struct {
	status   int
	body     map[string]any
	replayed bool
}

func (a answer) code() string {
	e, _ := a.body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func (pr *proc) serve(t *testing.T, req events.APIGatewayV2HTTPRequest) answer {
	t.Helper()
	var resp events.APIGatewayV2HTTPResponse
	var err error
	if req.RequestContext.HTTP.Method == http.MethodGet {
		resp, err = pr.http.HandleRead(context.Background(), req)
	} else {
		resp, err = pr.http.Handle(context.Background(), req)
	}
	if err != nil {
		t.Fatalf("%s: %v", req.RouteKey, err)
	}
	a := answer{status: resp.StatusCode, replayed: resp.Headers["Idempotent-Replayed"] == "true"}
	_ = json.Unmarshal([]byte(resp.Body), &a.body)
	return a
}

// request is an API Gateway HTTP API event, signed by IAM as caller.
func request(method, routeKey, path string, params map[string]string, body, caller, key string) events.APIGatewayV2HTTPRequest {
	h := map[string]string{"content-type": "application/json"}
	if key != "" {
		h["idempotency-key"] = key
	}
	return events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: routeKey, RawPath: path, Body: body, PathParameters: params, Headers: h,
		RequestContext: events.APIGatewayV2HTTPRequestContext{RequestID: "r", RouteKey: routeKey,
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path},
			Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
				IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{UserARN: caller, AccountID: "123456789012"}}},
	}
}

func startReq(workflow, message, key string) events.APIGatewayV2HTTPRequest {
	body, _ := json.Marshal(map[string]string{"message": message})
	return request(http.MethodPost, httpapi.RouteStart, "/v1/workflows/"+workflow+"/sessions",
		map[string]string{"workflow": workflow}, string(body), clientARN, key)
}

func turnReq(workflow, sid, message, key string) events.APIGatewayV2HTTPRequest {
	body, _ := json.Marshal(map[string]string{"message": message})
	return request(http.MethodPost, httpapi.RouteTurn, "/v1/workflows/"+workflow+"/sessions/"+sid+"/turns",
		map[string]string{"workflow": workflow, "sessionId": sid}, string(body), clientARN, key)
}

func decisionReq(sid, to, key string) events.APIGatewayV2HTTPRequest {
	body, _ := json.Marshal(map[string]string{"to": to, "comment": "Looks right."})
	return request(http.MethodPost, httpapi.RouteDecision, "/v1/sessions/"+sid+"/decision",
		map[string]string{"sessionId": sid}, string(body), approverARN, key)
}

func deliveryReq(sid, key string) events.APIGatewayV2HTTPRequest {
	return request(http.MethodPost, httpapi.RouteDelivery, "/v1/sessions/"+sid+"/deliveries", map[string]string{"sessionId": sid},
		`{"trigger":"courier","message":"The courier scanned it at the door."}`, clientARN, key)
}

func sessionGet(sid string) events.APIGatewayV2HTTPRequest {
	return request(http.MethodGet, httpapi.RouteSession, "/v1/sessions/"+sid, map[string]string{"sessionId": sid}, "", clientARN, "")
}

func messagesGet(sid string) events.APIGatewayV2HTTPRequest {
	r := request(http.MethodGet, httpapi.RouteMessages, "/v1/sessions/"+sid+"/messages", map[string]string{"sessionId": sid}, "", clientARN, "")
	r.QueryStringParameters = map[string]string{"after": "0", "limit": "500"}
	return r
}

// goldenModel answers as a function of the request alone — the current state and the
// tools used since the conversation's latest opening — so a restored session gets the
// answers the session it was written by would have.
type goldenModel struct{ p *storetest.Process }

var currentState = regexp.MustCompile(`# Current state: (\S+)`)

func (m *goldenModel) Converse(_ context.Context, req *model.Request) (*model.Response, error) {
	if err := m.p.Alive(); err != nil {
		return nil, err
	}
	var system strings.Builder
	for _, b := range req.System {
		system.WriteString(b.Text)
	}
	// with the prompt cache on, the per-call content (the current state, its edges) is the
	// request's final block, after the conversation's cachePoint: system text, not an opening
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
	calls, opening, used := 0, "", map[string]bool{}
	for _, msg := range req.Messages {
		for _, b := range msg.Content {
			switch {
			case b.Kind == model.BlockToolUse:
				calls++
				used[b.ToolUse.Name] = true
			case b.Kind == model.BlockText && msg.Role == model.RoleUser && (perCall == nil || b.Text != perCall.Text):
				opening, used = b.Text, map[string]bool{}
			}
		}
	}
	id := "c" + strconv.Itoa(calls+1)
	switch {
	case strings.Contains(system.String(), "This turn has no tools"):
		return says("Over to " + state + "."), nil
	case (state == "work" || state == "ship") && !used["charge"]:
		return uses(id, "charge", `{"amount":10}`), nil
	case state == "work":
		return uses(id, "archmax_advance", `{"to":"review","reason":"Charged."}`), nil
	case state == "ship" && strings.Contains(opening, "[decision]"):
		return uses(id, "archmax_wait", `{"reason":"the courier's scan","until":"1d"}`), nil
	case state == "ship":
		return uses(id, "archmax_advance", `{"to":"done","reason":"Delivered."}`), nil
	case state == "desk" && !used["archmax_workflow_signoff"] && !strings.Contains(opening, "[sub-workflow: signoff]"):
		return uses(id, "archmax_workflow_signoff", `{"area":"east-lab"}`), nil
	case state == "desk":
		return says("The owner signed off the east lab."), nil
	case state == "prepare":
		return uses(id, "archmax_advance", `{"to":"sign","reason":"Ready."}`), nil
	case state == "granted" && !used["archmax_set_variables"]:
		return uses(id, "archmax_set_variables", `{"variables":{"approved":true}}`), nil
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
