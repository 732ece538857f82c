package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/archmax-ai/archmax/core/clock"
	"github.com/archmax-ai/archmax/core/model/scripted"
	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/store"
	ddbstore "github.com/archmax-ai/archmax/core/store/dynamodb"
	s3store "github.com/archmax-ai/archmax/core/store/s3"
	"github.com/archmax-ai/archmax/core/transcript"
	"github.com/archmax-ai/archmax/functions/handlers/assembly"
	"github.com/archmax-ai/archmax/functions/handlers/deliveries"
	"github.com/archmax-ai/archmax/functions/handlers/httpapi"
	"github.com/archmax-ai/archmax/functions/handlers/wakes"
	"github.com/archmax-ai/archmax/local/conversefake"
	"github.com/archmax-ai/archmax/local/dynamotest"
	"github.com/archmax-ai/archmax/local/s3test"
	"github.com/archmax-ai/archmax/local/schedulerfake"
)

// The deployment the stack's environment describes.
const (
	bucket         = "archmax-e2e"
	modelID        = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
	wakeTargetARN  = "arn:aws:lambda:us-east-1:123456789012:function:archmax-wake"
	schedulerRole  = "arn:aws:iam::123456789012:role/archmax-scheduler"
	schedulerGroup = "archmax"
)

// stack is one deployment over real-protocol peers: a fresh DynamoDB Local table, gofakes3
// over HTTP holding testdata/specs under specs/, the Converse fake serving one model script,
// and the EventBridge Scheduler fake. Its Lambdas come from boot; its own readers (log,
// sessions) look at what they committed.
type stack struct {
	env      map[string]string
	ddb      *dynamodb.Client
	table    string
	log      *ddbstore.Store
	sessions *session.Sessions
	sched    *schedulerfake.Fake

	mu          sync.Mutex
	beforeModel func() // run before each Converse call is answered (nil: nothing)

	// clock is the functions' clock once virtualTime was called (nil: real time): every
	// Lambda booted after that reads it — its engines, its Scheduler adapter, its Runner.
	clock *clock.Fake
}

// virtualTime puts the Lambdas booted from now on on a fake clock that moves only as the
// test advances it (DECISIONS T18-3): parks fall due, invocations run out and schedules are
// set by the test's own steps, never by how fast the machine is.
func (s *stack) virtualTime() *clock.Fake {
	if s.clock == nil {
		s.clock = clock.NewFake(time.Now())
	}
	return s.clock
}

// advanceTo moves the stack's fake clock to at (nothing when it is there already).
func (s *stack) advanceTo(at time.Time) {
	if d := at.Sub(s.clock.Now()); d > 0 {
		s.clock.Advance(d)
	}
}

// assemble starts a function as its main does (assembly.FromEnv), on the stack's clock.
func (s *stack) assemble(t *testing.T) *assembly.Assembly {
	t.Helper()
	cfg, err := assembly.ConfigFromEnv(func(k string) string { return s.env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if s.clock != nil {
		cfg.Clock = s.clock
	}
	a, err := assembly.Open(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// now is the stack's clock for the handlers that take one (nil: real time).
func (s *stack) now() func() time.Time {
	if s.clock == nil {
		return nil
	}
	return s.clock.Now
}

func newStack(t *testing.T, modelScript string) *stack {
	t.Helper()
	ddb, table := dynamotest.NewTable(t) // skips without DYNAMODB_ENDPOINT

	s3c, s3URL := s3test.NewBucket(t, bucket)
	s3test.Upload(t, s3c, bucket, "testdata/specs", "specs/")

	file := filepath.Join("testdata", modelScript)
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	script, err := scripted.Parse(file, src)
	if err != nil {
		t.Fatal(err)
	}
	s := &stack{ddb: ddb, table: table, sched: schedulerfake.New()}
	converse := conversefake.New(script)
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		hook := s.beforeModel
		s.mu.Unlock()
		if hook != nil {
			hook()
		}
		converse.ServeHTTP(w, r)
	}))
	t.Cleanup(model.Close)
	sched := httptest.NewServer(s.sched)
	t.Cleanup(sched.Close)

	s.env = map[string]string{
		assembly.EnvTable:             table,
		assembly.EnvBucket:            bucket,
		assembly.EnvModel:             modelID,
		assembly.EnvDynamoDBEndpoint:  os.Getenv(dynamotest.EndpointEnv),
		assembly.EnvS3Endpoint:        s3URL,
		assembly.EnvBedrockEndpoint:   model.URL,
		assembly.EnvSchedulerEndpoint: sched.URL,
		assembly.EnvWakeTargetARN:     wakeTargetARN,
		assembly.EnvSchedulerRoleARN:  schedulerRole,
		assembly.EnvSchedulerGroup:    schedulerGroup,
		assembly.EnvIAMDeciders:       clientRole, // the one caller of these tests decides its own parks too
		"AWS_ACCESS_KEY_ID":           "local",
		"AWS_SECRET_ACCESS_KEY":       "local",
		"AWS_REGION":                  "us-east-1",
	}
	blobs := s3store.NewBlobs(s3c, bucket, assembly.DefaultSessionPrefix)
	s.log = ddbstore.New(ddb, table, blobs)
	s.sessions = session.NewSessions(s.log, s3store.NewFiles(s3c, bucket, assembly.DefaultSessionPrefix), blobs)
	return s
}

// onModelCall runs hook before each later Converse call is answered.
func (s *stack) onModelCall(hook func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.beforeModel = hook
}

// lambdas are the four functions of the bundle, each started as its main starts it: its
// own assembly (its own clients and engine cache), then its handler.
type lambdas struct {
	turn, decide *httpapi.Handler
	deliver      *deliveries.Handler
	wake         *wakes.Handler
}

// boot cold-starts the four Lambdas on the stack's environment. Two boots share nothing
// in memory: only DynamoDB, S3 and the peers.
func (s *stack) boot(t *testing.T) *lambdas {
	t.Helper()
	turn, decide, deliver, wake := s.assemble(t), s.assemble(t), s.assemble(t), s.assemble(t)
	return &lambdas{
		turn:    httpapi.New(turn.Engines, turn.Runner, nil, httpapi.WithPolicy(turn.Access)),
		decide:  httpapi.New(decide.Engines, decide.Runner, nil, httpapi.WithPolicy(decide.Access)),
		deliver: deliveries.New(deliver.Engines, deliver.Runner, nil, httpapi.WithPolicy(deliver.Access)),
		wake:    wakes.New(wake.Engines, wake.Runner, nil, s.now()),
	}
}

// answer is an HTTP answer: the status and the decoded JSON body.
type answer struct {
	status int
	body   map[string]any
}

// code is the error answer's error.code ("" on success).
func (a answer) code() string {
	e, _ := a.body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// detail is the error answer's error.details[key].
func (a answer) detail(key string) any {
	e, _ := a.body["error"].(map[string]any)
	d, _ := e["details"].(map[string]any)
	return d[key]
}

// parkID is the outcome summary's pending.parkId ("" when not parked).
func (a answer) parkID() string {
	p, _ := a.body["pending"].(map[string]any)
	id, _ := p["parkId"].(string)
	return id
}

// resumeAt is the outcome summary's pending.input.resumeAt.
func (a answer) resumeAt() string {
	p, _ := a.body["pending"].(map[string]any)
	in, _ := p["input"].(map[string]any)
	at, _ := in["resumeAt"].(string)
	return at
}

// decodeAnswer reads an API Gateway response. It reports with t.Errorf, so it may run on
// any goroutine.
func decodeAnswer(t *testing.T, resp events.APIGatewayV2HTTPResponse) answer {
	a := answer{status: resp.StatusCode}
	if err := json.Unmarshal([]byte(resp.Body), &a.body); err != nil {
		t.Errorf("answer %d is not JSON: %q", resp.StatusCode, resp.Body)
	}
	return a
}

// call serves an API Gateway request on an HTTP Lambda; safe on any goroutine.
func call(t *testing.T, h *httpapi.Handler, req events.APIGatewayV2HTTPRequest) answer {
	resp, err := h.Handle(context.Background(), req)
	if err != nil {
		t.Errorf("Handle returned a Go error (every failure must be an HTTP answer): %v", err)
	}
	return decodeAnswer(t, resp)
}

// invoke runs a Lambda body as the Lambda runtime does: the event goes in as JSON, the
// answer comes back as JSON.
func invoke[R any](handle func(context.Context, json.RawMessage) (R, error), event any) ([]byte, error) {
	in, err := json.Marshal(event)
	if err != nil {
		return nil, err
	}
	out, err := handle(context.Background(), in)
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

// deliverHTTP sends an API Gateway request to the deliver Lambda; safe on any goroutine.
func (l *lambdas) deliverHTTP(t *testing.T, req events.APIGatewayV2HTTPRequest) answer {
	out, err := invoke(l.deliver.Handle, req)
	if err != nil {
		t.Errorf("the deliver Lambda failed an HTTP request (it must answer it): %v", err)
		return answer{}
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Errorf("the deliver Lambda's answer is not an API Gateway response: %s", out)
	}
	return decodeAnswer(t, resp)
}

// deliverEvent sends an EventBridge event to the deliver Lambda.
func (l *lambdas) deliverEvent(ev events.EventBridgeEvent) (deliveries.Result, error) {
	var res deliveries.Result
	out, err := invoke(l.deliver.Handle, ev)
	if err == nil {
		err = json.Unmarshal(out, &res)
	}
	return res, err
}

// wakeWith sends a scheduled wake's input (the schedule target's Input text) to the wake
// Lambda.
func (l *lambdas) wakeWith(input string) (wakes.Result, error) {
	var res wakes.Result
	out, err := invoke(l.wake.Handle, json.RawMessage(input))
	if err == nil {
		err = json.Unmarshal(out, &res)
	}
	return res, err
}

// clientRole is the IAM role every request of these tests is signed with (clientARN, a
// session of it), listed as a decider in the functions' environment.
const (
	clientRole = "arn:aws:iam::123456789012:role/e2e-client"
	clientARN  = "arn:aws:sts::123456789012:assumed-role/e2e-client/e2e"
)

// iamAuthorizer is the authorizer context API Gateway's IAM authorization gives clientARN.
func iamAuthorizer() *events.APIGatewayV2HTTPRequestContextAuthorizerDescription {
	return &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
		IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{UserARN: clientARN, AccountID: "123456789012"}}
}

// request builds an API Gateway HTTP API (payload 2.0) event for one of our routes.
func request(routeKey, path string, params map[string]string, body string) events.APIGatewayV2HTTPRequest {
	return events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: routeKey, RawPath: path, PathParameters: params, Body: body,
		Headers: map[string]string{"content-type": "application/json"},
		RequestContext: events.APIGatewayV2HTTPRequestContext{RequestID: "e2e", RouteKey: routeKey, Authorizer: iamAuthorizer(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: http.MethodPost, Path: path}},
	}
}

func startReq(workflow, body string) events.APIGatewayV2HTTPRequest {
	return request(httpapi.RouteStart, "/v1/workflows/"+workflow+"/sessions", map[string]string{"workflow": workflow}, body)
}

func turnReq(workflow, id, body string) events.APIGatewayV2HTTPRequest {
	return request(httpapi.RouteTurn, "/v1/workflows/"+workflow+"/sessions/"+id+"/turns",
		map[string]string{"workflow": workflow, "sessionId": id}, body)
}

func decisionReq(id, body string) events.APIGatewayV2HTTPRequest {
	return request(httpapi.RouteDecision, "/v1/sessions/"+id+"/decision", map[string]string{"sessionId": id}, body)
}

func deliveryReq(id, body string) events.APIGatewayV2HTTPRequest {
	return request(httpapi.RouteDelivery, "/v1/sessions/"+id+"/deliveries", map[string]string{"sessionId": id}, body)
}

// jsonText marshals v for a request body.
func jsonText(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// head reads a session's committed head through the DynamoDB store.
func (s *stack) head(t *testing.T, id string) *store.Head {
	t.Helper()
	h, err := s.log.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("head of %s: %v", id, err)
	}
	return h
}

// parkRecord is the raw "park" field of the session record in the stored head body.
func (s *stack) parkRecord(t *testing.T, id string) json.RawMessage {
	t.Helper()
	var body struct {
		Park json.RawMessage `json:"park"`
	}
	if err := json.Unmarshal(s.head(t, id).Body, &body); err != nil {
		t.Fatalf("head body of %s: %v", id, err)
	}
	return body.Park
}

// summary reads a session's summary (spec 02 §9.6).
func (s *stack) summary(t *testing.T, id string) *session.SessionSummary {
	t.Helper()
	sum, err := s.sessions.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("summary of %s: %v", id, err)
	}
	return sum
}

// trail renders a session's audit trail as "kind:to" steps.
func (s *stack) trail(t *testing.T, id string) string {
	t.Helper()
	steps, err := s.sessions.Trail(context.Background(), id)
	if err != nil {
		t.Fatalf("trail of %s: %v", id, err)
	}
	parts := make([]string, len(steps))
	for i, st := range steps {
		parts[i] = string(st.Kind) + ":" + st.To
	}
	return strings.Join(parts, " ")
}

// callers renders who opened each trail step ("-" for the loop's own steps).
func (s *stack) callers(t *testing.T, id string) string {
	t.Helper()
	var parts []string
	for _, st := range s.trailSteps(t, id) {
		by := "-"
		if st.By != nil {
			by = st.By.Key()
		}
		parts = append(parts, string(st.Kind)+":"+by)
	}
	return strings.Join(parts, " ")
}

// trailSteps reads a session's audit trail.
func (s *stack) trailSteps(t *testing.T, id string) []transcript.TrailStep {
	t.Helper()
	steps, err := s.sessions.Trail(context.Background(), id)
	if err != nil {
		t.Fatalf("trail of %s: %v", id, err)
	}
	return steps
}

// messages reads the page of up to limit messages after the cursor.
func (s *stack) messages(t *testing.T, id string, after int64, limit int) []transcript.Message {
	t.Helper()
	page, _, err := s.sessions.Messages(context.Background(), id, after, limit)
	if err != nil {
		t.Fatalf("messages of %s: %v", id, err)
	}
	return page
}

// items counts a session's DynamoDB items by kind (HEAD, M, T, E), read consistently.
func (s *stack) items(t *testing.T, id string) map[string]int {
	t.Helper()
	counts := map[string]int{}
	p := dynamodb.NewQueryPaginator(s.ddb, &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":pk": &ddbtypes.AttributeValueMemberS{Value: "S#" + id}},
		ConsistentRead:            aws.Bool(true),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			sk := it["sk"].(*ddbtypes.AttributeValueMemberS).Value
			kind, _, _ := strings.Cut(sk, "#")
			counts[kind]++
		}
	}
	return counts
}
