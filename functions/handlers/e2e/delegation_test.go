package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/transcript"
	"github.com/archmax-ai/archmax/functions/handlers/assembly"
	"github.com/archmax-ai/archmax/functions/handlers/continuation"
	"github.com/archmax-ai/archmax/functions/handlers/httpapi"
	"github.com/archmax-ai/archmax/local/lambdafake"
	"github.com/archmax-ai/archmax/local/s3test"
)

// Sub-workflows end to end (spec 02 §8, §3.7; DESIGN.md §4) on the example workspace's badge
// desk: workflows/badge-desk delegates a standard area to workflows/badge-check and a
// restricted one to workflows/badge-approval, which stops for the area owner.

// fixtureWorkspace is the example workspace, relative to this package.
const fixtureWorkspace = "../../../fixtures/access-desk"

// The fixture's messages (the model scripts name them in their headers).
const (
	danaMessage = "Hi, I'm Dana from the platform team. I need a badge for the east lab, please."
	samMessage  = "Sam from hardware here: I need the server room to replace a failed disk."
)

// newDelegationStack is a stack whose bucket also holds the example workspace under specs/
// (its workflows, skills and AGENTS.md) and whose Converse fake serves the workspace's
// model-scripts/<script>.
func newDelegationStack(t *testing.T, script string) *stack {
	t.Helper()
	// newStack reads testdata/<name>: step out of testdata to the workspace's script
	s := newStack(t, filepath.Join("..", fixtureWorkspace, "model-scripts", script))
	c := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(s.env[assembly.EnvS3Endpoint]), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
	s3test.Upload(t, c, bucket, fixtureWorkspace, "specs/")
	return s
}

// readLambda cold-starts the read-only sessions Lambda as functions/sessions does.
func (s *stack) readLambda(t *testing.T) func(events.APIGatewayV2HTTPRequest) answer {
	t.Helper()
	a, err := assembly.FromEnv(context.Background(), func(k string) string { return s.env[k] }, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := httpapi.New(a.Engines, nil, nil, httpapi.WithPolicy(a.Access))
	return func(req events.APIGatewayV2HTTPRequest) answer {
		resp, err := h.HandleRead(context.Background(), req)
		if err != nil {
			t.Errorf("HandleRead returned a Go error: %v", err)
		}
		return decodeAnswer(t, resp)
	}
}

// getReq builds an API Gateway GET request for a read route.
func getReq(routeKey, path string, params, query map[string]string) events.APIGatewayV2HTTPRequest {
	return events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: routeKey, RawPath: path, PathParameters: params, QueryStringParameters: query,
		RequestContext: events.APIGatewayV2HTTPRequestContext{RequestID: "e2e", RouteKey: routeKey, Authorizer: iamAuthorizer(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: http.MethodGet, Path: path}},
	}
}

func sessionGet(id string) events.APIGatewayV2HTTPRequest {
	return getReq(httpapi.RouteSession, "/v1/sessions/"+id, map[string]string{"sessionId": id}, nil)
}

func listGet(query map[string]string) events.APIGatewayV2HTTPRequest {
	return getReq(httpapi.RouteList, "/v1/sessions", nil, query)
}

func messagesGet(id string) events.APIGatewayV2HTTPRequest {
	return getReq(httpapi.RouteMessages, "/v1/sessions/"+id+"/messages", map[string]string{"sessionId": id},
		map[string]string{"after": "0", "limit": "500"})
}

// listed returns the session ids of a GET /v1/sessions answer.
func listed(t *testing.T, a answer) []string {
	t.Helper()
	if a.status != http.StatusOK {
		t.Fatalf("list: %d %v", a.status, a.body)
	}
	list, _ := a.body["sessions"].([]any)
	var ids []string
	for _, s := range list {
		m, _ := s.(map[string]any)
		id, _ := m["sessionId"].(string)
		ids = append(ids, id)
	}
	return ids
}

// obj reads a value nested in a decoded JSON body by keys (nil when absent).
func obj(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// storedEvents reads a session's stored lifecycle events as JSON objects.
func (s *stack) storedEvents(t *testing.T, id string) []map[string]any {
	t.Helper()
	raws, _, err := s.sessions.Events(context.Background(), id, 0, 1000)
	if err != nil {
		t.Fatalf("events of %s: %v", id, err)
	}
	out := make([]map[string]any, 0, len(raws))
	for _, raw := range raws {
		var e map[string]any
		if err := json.Unmarshal(raw, &e); err != nil {
			t.Fatalf("event of %s: %s", id, raw)
		}
		out = append(out, e)
	}
	return out
}

// eventsOfType filters events by their type.
func eventsOfType(evs []map[string]any, typ string) []map[string]any {
	var out []map[string]any
	for _, e := range evs {
		if e["type"] == typ {
			out = append(out, e)
		}
	}
	return out
}

// toolAnswers returns the tool results for tool in a transcript.
func toolAnswers(msgs []transcript.Message, tool string) []transcript.Message {
	var out []transcript.Message
	for _, m := range msgs {
		if m.Role == transcript.RoleTool && m.Tool == tool {
			out = append(out, m)
		}
	}
	return out
}

// notesOf returns the runtime notes of kind in a transcript.
func notesOf(msgs []transcript.Message, kind transcript.NoteKind) []transcript.Message {
	var out []transcript.Message
	for _, m := range msgs {
		if m.Note == kind {
			out = append(out, m)
		}
	}
	return out
}

// itemEpochs returns, for one kind of a session's DynamoDB items (M, T, E), how many items
// there are and how many distinct lease epochs they were written under.
func (s *stack) itemEpochs(t *testing.T, id, kind string) (items, epochs int) {
	t.Helper()
	seen := map[string]bool{}
	p := dynamodb.NewQueryPaginator(s.ddb, &dynamodb.QueryInput{
		TableName:              aws.String(s.table),
		KeyConditionExpression: aws.String("pk = :pk AND begins_with(sk, :k)"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{
			":pk": &ddbtypes.AttributeValueMemberS{Value: "S#" + id}, ":k": &ddbtypes.AttributeValueMemberS{Value: kind + "#"}},
		ConsistentRead: aws.Bool(true),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			sk := it["sk"].(*ddbtypes.AttributeValueMemberS).Value // <kind>#<seq>#<epoch>
			items++
			seen[sk[strings.LastIndexByte(sk, '#')+1:]] = true
		}
	}
	return items, len(seen)
}

// checkCommittedOnce asserts every committed message, trail step and event of a session is
// one DynamoDB item: nothing was written again under a later lease.
func (s *stack) checkCommittedOnce(t *testing.T, id string) {
	t.Helper()
	h := s.head(t, id)
	counters := map[string]int64{"M": h.Messages, "T": h.Trail, "E": h.Events}
	for kind, n := range counters {
		if items, _ := s.itemEpochs(t, id, kind); int64(items) != n {
			t.Errorf("%s: %d %s items for a counter of %d (a step was written twice)", id, items, kind, n)
		}
	}
}

// Spec 02 §8.1–§8.4, §8.7, §9.6 through the Lambdas: the desk's model delegates Dana's East
// Lab request to badge-check; the child <id>~1 runs, its closing message and typed return come
// back as the tool result, the start answers the completed turn, the sessions Lambda reads the
// child with its parentSessionId, and the default listing shows roots only.
func TestDelegatedCheckCompletesThroughTheTurnLambda(t *testing.T) {
	s := newDelegationStack(t, "badge-desk.model.yaml")
	l := s.boot(t)
	read := s.readLambda(t)

	a := call(t, l.turn, startReq("badge-desk", jsonText(t, map[string]string{"message": danaMessage})))
	if a.status != http.StatusOK || a.body["kind"] != "completed" || a.body["status"] != "completed" || a.body["state"] != "desk" ||
		a.body["reply"] != "You're cleared, Dana — your badge will open the East Lab." || a.body["delegation"] != nil {
		t.Fatalf("start: %d %v", a.status, a.body)
	}
	id, _ := a.body["sessionId"].(string)
	child := id + "~1"

	// the parent: the call answered with {message, returns}, a sub-workflow trail step
	msgs := s.messages(t, id, 0, 100)
	answers := toolAnswers(msgs, "archmax_workflow_badge-check")
	if len(answers) != 1 || answers[0].Error ||
		answers[0].Text != `{"message":"Dana (platform) is cleared for the East Lab.","returns":{"cleared":true}}` {
		t.Fatalf("the delegation call's answers = %+v", answers)
	}
	if got := s.trail(t, id); got != "trigger:desk sub-workflow:desk" {
		t.Errorf("parent trail = %s", got)
	}
	if steps := s.trailSteps(t, id); steps[1].Workflow != "badge-check" || steps[1].Status != "ok" {
		t.Errorf("the sub-workflow step = %+v", steps[1])
	}
	evs := s.storedEvents(t, id)
	startEvs, resultEvs := eventsOfType(evs, "sub-workflow-start"), eventsOfType(evs, "sub-workflow-result")
	if len(startEvs) != 1 || len(resultEvs) != 1 {
		t.Fatalf("%d sub-workflow-start and %d sub-workflow-result events, want one each", len(startEvs), len(resultEvs))
	}
	// the stored event names the child by its dispatchId only: the data's own "sessionId" (the
	// child id, in the engine's in-memory event) is overwritten by the envelope's in the
	// flattened JSON, so a reader of the stored events sees the parent's id there
	if st := startEvs[0]; st["workflow"] != "badge-check" || st["dispatchId"] != "1" || st["depth"] != 1.0 ||
		st["state"] != "desk" || st["toolCallId"] != answers[0].ToolCallID {
		t.Errorf("sub-workflow-start = %v", st)
	}
	if r := resultEvs[0]; r["status"] != "ok" || r["dispatchId"] != "1" || !slices.Equal(anyList(r["returns"]), []string{"cleared"}) {
		t.Errorf("sub-workflow-result = %v", r)
	}

	// the child through the sessions Lambda: its own completed session under the parent
	c := read(sessionGet(child))
	if c.status != http.StatusOK || c.body["sessionId"] != child || c.body["workflow"] != "badge-check" ||
		c.body["status"] != "completed" || c.body["parentSessionId"] != id || c.body["workflowState"] != "verify-grants" {
		t.Fatalf("GET the child: %d %v", c.status, c.body)
	}
	if obj(c.body, "variables", "cleared", "value") != true || obj(c.body, "variables", "person", "value") != "Dana" ||
		obj(c.body, "variables", "person", "locked") != true || obj(c.body, "variables", "area", "value") != "east-lab" {
		t.Errorf("the child's variables = %v", c.body["variables"])
	}
	if p := read(sessionGet(id)); p.status != http.StatusOK || p.body["parentSessionId"] != nil || p.body["status"] != "completed" {
		t.Errorf("GET the parent: %d %v", p.status, p.body)
	}
	// usage (02 §8.7): the child's on its own summary, and rolled into the parent's once —
	// desk 1000+1100+1200 / 20+30+25, badge-check 800+850+900 / 10+10+15
	checkUsage(t, "the start answer", a.body, 5850, 110)
	checkUsage(t, "the parent", read(sessionGet(id)).body, 5850, 110)
	checkUsage(t, "the child", c.body, 2550, 35)
	cm := read(messagesGet(child))
	page, _ := obj(cm.body, "messages").([]any)
	if cm.status != http.StatusOK || len(page) == 0 {
		t.Fatalf("GET the child's messages: %d %v", cm.status, cm.body)
	}
	if text, _ := obj(page[0], "text").(string); obj(page[0], "note") != "opening" || !strings.Contains(text, `- person: "Dana"`) {
		t.Errorf("the child's transcript opens with %v", page[0])
	}
	for _, e := range s.storedEvents(t, child) {
		if e["subWorkflowDispatchId"] != "1" || e["sessionId"] != child {
			t.Errorf("a child event without its dispatch: %v", e)
			break
		}
	}

	// the listing: roots only unless asked for children
	roots := listed(t, read(listGet(nil)))
	if !slices.Contains(roots, id) || slices.Contains(roots, child) {
		t.Errorf("GET /v1/sessions = %v, want %s and not its child", roots, id)
	}
	for _, r := range roots {
		if strings.Contains(r, "~") {
			t.Errorf("the default listing holds the child %s", r)
		}
	}
	if all := listed(t, read(listGet(map[string]string{"includeChildren": "true"}))); !slices.Contains(all, child) || !slices.Contains(all, id) {
		t.Errorf("GET /v1/sessions?includeChildren=true = %v, want %s and %s", all, id, child)
	}
	for _, sid := range []string{id, child} {
		if h := s.head(t, sid); h.Lease != nil {
			t.Errorf("%s keeps a lease: %+v", sid, h.Lease)
		}
	}
}

// checkUsage asserts the input and output tokens of a decoded summary's usage.
func checkUsage(t *testing.T, what string, body map[string]any, in, out float64) {
	t.Helper()
	if gi, go_ := obj(body, "usage", "inputTokens"), obj(body, "usage", "outputTokens"); gi != in || go_ != out {
		t.Errorf("%s: usage %v, want %v in / %v out", what, body["usage"], in, out)
	}
}

// anyList converts a decoded JSON list of strings.
func anyList(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, x := range l {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

// Spec 02 §3.7 through the Lambdas: badge-approval stops at its human state owner-sign-off;
// the desk parks with it (the answer's delegation, the summary's pending.delegation). Writes
// addressed to the child are refused 409 ChildSessionError and change nothing; the owner's
// decision POSTed to the desk's decision route is routed to the child, which completes, and
// its closing message reaches the desk as a [sub-workflow] note before the desk answers.
func TestDelegatedParkIsDecidedThroughTheParent(t *testing.T) {
	s := newDelegationStack(t, "badge-approval.model.yaml")
	l := s.boot(t)
	read := s.readLambda(t)

	a := call(t, l.turn, startReq("badge-desk", jsonText(t, map[string]string{"message": samMessage})))
	if a.status != http.StatusOK || a.body["kind"] != "parked" || a.body["status"] != "awaiting_decision" || a.body["state"] != "desk" ||
		a.body["reply"] != "The Server Room is restricted, Sam — its owner has your request and decides next." {
		t.Fatalf("start: %d %v", a.status, a.body)
	}
	id, _ := a.body["sessionId"].(string)
	child := id + "~1"
	parkID := a.parkID()
	dp, _ := a.body["delegation"].(map[string]any)
	if dp["workflow"] != "badge-approval" || dp["sessionId"] != child || dp["identity"] != 1.0 || dp["dispatchId"] != "1" ||
		dp["state"] != "desk" || dp["toolCallId"] == "" {
		t.Errorf("the answer's delegation = %v", a.body["delegation"])
	}
	if obj(a.body, "pending", "channel") != "decision" || obj(a.body, "pending", "decision", "state") != "owner-sign-off" || parkID == "" {
		t.Errorf("the answer's pending = %v", a.body["pending"])
	}
	if ts := obj(a.body, "pending", "decision", "transitions"); len(ts.([]any)) != 2 {
		t.Errorf("the presented transitions = %v", ts)
	}

	// the parent's summary carries the delegated park; the child is parked on its own record
	p := read(sessionGet(id))
	childPark, _ := obj(p.body, "pending", "delegation", "childParkId").(string)
	if p.status != http.StatusOK || p.body["status"] != "awaiting_decision" || p.body["state"] != "desk" ||
		obj(p.body, "pending", "parkId") != parkID || obj(p.body, "pending", "delegation", "sessionId") != child ||
		obj(p.body, "pending", "delegation", "workflow") != "badge-approval" || childPark == "" {
		t.Fatalf("GET the parent: %d %v", p.status, p.body)
	}
	c := read(sessionGet(child))
	if c.status != http.StatusOK || c.body["status"] != "awaiting_decision" || c.body["parentSessionId"] != id ||
		c.body["state"] != "owner-sign-off" || obj(c.body, "pending", "parkId") != childPark {
		t.Fatalf("GET the child: %d %v", c.status, c.body)
	}
	if ev := anyList(obj(c.body, "pending", "decision", "evidence")); !slices.Equal(ev, []string{"scratchpad/approval.md"}) {
		t.Errorf("the child's evidence = %v", ev)
	}
	// the child's decision is presented unchanged (its evidence is a path of the child's files)
	if ev := anyList(obj(p.body, "pending", "decision", "evidence")); !slices.Equal(ev, []string{"scratchpad/approval.md"}) {
		t.Errorf("the parent's presented evidence = %v", ev)
	}
	if dp["childParkId"] != childPark {
		t.Errorf("the answer's delegation.childParkId = %v, want the child's park %s", dp["childParkId"], childPark)
	}
	if roots := listed(t, read(listGet(map[string]string{"status": "awaiting_decision"}))); !slices.Equal(roots, []string{id}) {
		t.Errorf("parked roots = %v, want only %s", roots, id)
	}

	// writes addressed to the child are refused, nothing written
	parentBefore, childBefore := s.head(t, id), s.head(t, child)
	refusals := map[string]answer{
		"decision": call(t, l.decide, decisionReq(child, jsonText(t, map[string]string{"to": "badge-granted", "parkId": childPark}))),
		"turn":     call(t, l.turn, turnReq("badge-approval", child, `{"message":"Is it approved yet?"}`)),
		"delivery": l.deliverHTTP(t, deliveryReq(child, `{"trigger":"owner","variables":{"ok":true}}`)),
	}
	for route, r := range refusals {
		if r.status != http.StatusConflict || r.code() != "ChildSessionError" || r.detail("parentSessionId") != id || r.detail("sessionId") != child {
			t.Errorf("a %s addressed to the child: %d %v, want 409 ChildSessionError naming %s", route, r.status, r.body, id)
		}
	}
	// a target the child's human state does not offer is refused on the parent, with the child's choices
	bad := call(t, l.decide, decisionReq(id, `{"to":"nowhere","parkId":"`+parkID+`"}`))
	if bad.status != http.StatusUnprocessableEntity || bad.code() != "InvalidDecisionTargetError" ||
		!slices.Equal(anyList(bad.detail("validTargets")), []string{"badge-granted", "badge-refused"}) {
		t.Errorf("a wrong target: %d %v", bad.status, bad.body)
	}
	if ph, ch := s.head(t, id), s.head(t, child); ph.Version != parentBefore.Version || ch.Version != childBefore.Version ||
		ph.Messages != parentBefore.Messages || ch.Messages != childBefore.Messages {
		t.Errorf("refused writes changed the sessions: parent v%d → v%d, child v%d → v%d",
			parentBefore.Version, ph.Version, childBefore.Version, ch.Version)
	}

	// usage so far: desk 1000+1050 / 20+20 and the child's until its park, 700+750 / 40+15
	checkUsage(t, "the parked parent", p.body, 3500, 95)
	checkUsage(t, "the parked child", c.body, 1450, 55)

	// the owner's decision, sent to the parent
	d := call(t, l.decide, decisionReq(id, jsonText(t, map[string]string{"to": "badge-granted", "comment": "Disk swap approved", "parkId": parkID})))
	if d.status != http.StatusOK || d.body["kind"] != "completed" || d.body["status"] != "completed" || d.body["state"] != "desk" ||
		d.body["disposition"] != "decide" || d.body["turn"] != 2.0 || d.body["pending"] != nil || d.body["delegation"] != nil ||
		d.body["reply"] != "Good news, Sam — the Server Room's owner approved your badge." {
		t.Fatalf("decide on the parent: %d %v", d.status, d.body)
	}
	msgs := s.messages(t, id, 0, 100)
	notes := notesOf(msgs, transcript.NoteSubWorkflow)
	// the returns travel with the note (docs/DECISIONS.md D8-6): the call was answered at the park
	wantNote := "[sub-workflow: badge-approval] The Server Room's owner approved Sam's badge.\nReturns: {\"approved\":true}"
	if len(notes) != 1 || notes[0].Text != wantNote || notes[0].State != "desk" {
		t.Errorf("the parent's sub-workflow notes = %+v", notes)
	}
	if last := msgs[len(msgs)-1]; last.Role != transcript.RoleAssistant || !strings.HasPrefix(last.Text, "Good news, Sam") {
		t.Errorf("the parent's last message = %+v", last)
	}
	if answers := toolAnswers(msgs, "archmax_workflow_badge-approval"); len(answers) != 1 || !answers[0].Error ||
		!strings.Contains(answers[0].Text, "stopped for a person at 'owner-sign-off'") {
		t.Errorf("the delegation call's answers = %+v", answers)
	}
	if got := s.trail(t, id); got != "trigger:desk sub-workflow:desk" {
		t.Errorf("parent trail = %s", got)
	}
	if steps := s.trailSteps(t, id); steps[len(steps)-1].Workflow != "badge-approval" || steps[len(steps)-1].Status != "ok" {
		t.Errorf("the parent's sub-workflow step = %+v", steps[len(steps)-1])
	}
	results := eventsOfType(s.storedEvents(t, id), "sub-workflow-result")
	if len(results) != 2 || results[0]["status"] != "parked" || results[1]["status"] != "ok" {
		t.Errorf("sub-workflow-result events = %v, want parked then ok", results)
	}

	// the child: the person's step is its own, its return set
	c = read(sessionGet(child))
	if c.status != http.StatusOK || c.body["status"] != "completed" || c.body["pending"] != nil ||
		obj(c.body, "variables", "approved", "value") != true || c.body["workflowState"] != "badge-granted" {
		t.Errorf("GET the child after the decision: %d %v", c.status, c.body)
	}
	if got := s.trail(t, child); got != "trigger:prepare-approval agent:owner-sign-off human:badge-granted" {
		t.Errorf("child trail = %s", got)
	}
	// the child's whole usage (700+750+800+820 / 40+15+10+12) is in the parent's once, beside
	// the desk's own (1000+1050+1300 / 20+20+18): the part rolled at the park is not added again
	checkUsage(t, "the child after the decision", c.body, 3070, 77)
	checkUsage(t, "the decision's answer", d.body, 6420, 135)
	checkUsage(t, "the parent after the decision", read(sessionGet(id)).body, 6420, 135)
	if steps := s.trailSteps(t, child); steps[len(steps)-1].Reason != "Disk swap approved" {
		t.Errorf("the child's human step = %+v", steps[len(steps)-1])
	}
	if n := len(notesOf(s.messages(t, child, 0, 100), transcript.NoteDecision)); n != 1 {
		t.Errorf("the child has %d [decision] notes, want 1", n)
	}
	decided := eventsOfType(s.storedEvents(t, id), "decided")
	if len(decided) != 1 || decided[0]["state"] != "desk" || decided[0]["to"] != "badge-granted" {
		t.Errorf("the parent's decided events = %v", decided)
	}

	// the park is answered: deciding again is refused
	again := call(t, l.decide, decisionReq(id, jsonText(t, map[string]string{"to": "badge-granted", "parkId": parkID})))
	if again.status != http.StatusConflict || again.code() != "SessionNotParkedError" {
		t.Errorf("deciding again: %d %v", again.status, again.body)
	}
	for _, sid := range []string{id, child} {
		if h := s.head(t, sid); h.Lease != nil || h.Status != "completed" {
			t.Errorf("%s: status %s, lease %+v", sid, h.Status, h.Lease)
		}
	}
}

// DESIGN.md §4 and spec 02 §8.3 on the real protocols: the turn function answers the start
// 202 and continues by invoking itself through the Lambda API (in virtual time: 15-minute
// invocations that make six 2-minute model calls, as TestTurnContinuesAcrossLambdaInvocations
// says). The badge-check child's ten steps do not fit one invocation: it stops between two
// committed steps with its parent, and the next invocation carries both on from their own
// checkpoints. The turn completes with every parent and child step committed exactly once,
// and a duplicated continuation changes nothing.
func TestDelegatedChildContinuesAcrossLambdaInvocations(t *testing.T) {
	s := newDelegationStack(t, "badge-desk-slow.model.yaml")
	clk := s.virtualTime()
	var modelCalls atomic.Int64
	s.onModelCall(func() { modelCalls.Add(1); clk.Advance(modelCall) })

	fake, fn := continuingTurnFunction(t, s)

	id, turn := startRunning(t, s, fn, "badge-desk", jsonText(t, map[string]string{"message": danaMessage}))
	child := id + "~1"

	wait, stop := context.WithTimeout(context.Background(), 30*time.Second)
	defer stop()
	if err := fake.Wait(wait); err != nil {
		t.Fatalf("the continuations did not finish: %v", err)
	}
	sum := s.summary(t, id)
	if sum.Status != session.StatusCompleted || sum.TurnID != turn || sum.Turn != 1 {
		t.Fatalf("after the continuations: %s turn %q (#%d), want completed in %q", sum.Status, sum.TurnID, sum.Turn, turn)
	}
	invs := fake.Invocations()
	for _, inv := range invs {
		ref, isCont, err := continuation.Parse(inv.Payload)
		if inv.Type != lambdafake.Event || inv.Attempt != 1 || inv.Error != "" || inv.TimedOut ||
			!isCont || err != nil || ref != (continuation.Ref{SessionID: id, TurnID: turn}) {
			t.Errorf("invocation %+v: want first-attempt continuations of the parent's turn that ended cleanly", inv)
		}
	}
	// the first continuation makes the desk's call and five of the child's, the second the
	// child's last five and the desk's closing call
	if len(invs) != 2 {
		t.Errorf("%d continuations, want 2 (six model calls fit one)", len(invs))
	}
	if got := modelCalls.Load(); got != 12 {
		t.Errorf("the model was called %d times, want 12 (each step once: desk 2, child 10)", got)
	}

	// the child: completed, each of its steps once, written across more than one invocation
	csum := s.summary(t, child)
	if csum.Status != session.StatusCompleted || csum.ParentID != id || csum.Interrupted ||
		csum.Variables["cleared"].Value != true || csum.Variables["step"].Value != float64(8) {
		t.Fatalf("child: %s parent %q interrupted=%v variables %v", csum.Status, csum.ParentID, csum.Interrupted, csum.Variables)
	}
	cmsgs := s.messages(t, child, 0, 100)
	checkChildSteps(t, cmsgs)
	if _, epochs := s.itemEpochs(t, child, "M"); epochs != 2 {
		t.Errorf("the child's messages were written under %d lease(s), want 2 (one per continuation)", epochs)
	}
	s.checkCommittedOnce(t, child)
	s.checkCommittedOnce(t, id)
	// usage (02 §8.7): 100 in / 1 out per call; the child's ten calls, rolled up in parts as
	// each invocation stopped it, are in the parent's exactly once
	if u := csum.Usage; u == nil || u.InputTokens != 1000 || u.OutputTokens != 10 {
		t.Errorf("child usage %+v, want 1000 in / 10 out", u)
	}
	if u := sum.Usage; u == nil || u.InputTokens != 1200 || u.OutputTokens != 12 {
		t.Errorf("parent usage %+v, want 1200 in / 12 out (its 2 calls and the child's 10, once)", u)
	}

	// the parent: one answer to its one call, one dispatch
	msgs := s.messages(t, id, 0, 100)
	answers := toolAnswers(msgs, "archmax_workflow_badge-check")
	if len(answers) != 1 || answers[0].Text != `{"message":"Dana (platform) is cleared for the East Lab.","returns":{"cleared":true}}` {
		t.Errorf("the delegation call's answers = %+v", answers)
	}
	if last := msgs[len(msgs)-1]; last.Text != "You're cleared, Dana — your badge will open the East Lab." {
		t.Errorf("the parent's last message = %+v", last)
	}
	evs := s.storedEvents(t, id)
	if n, m := len(eventsOfType(evs, "sub-workflow-start")), len(eventsOfType(evs, "sub-workflow-result")); n != 1 || m != 1 {
		t.Errorf("%d sub-workflow-start and %d sub-workflow-result events, want one each", n, m)
	}
	if got := s.trail(t, id); got != "trigger:desk sub-workflow:desk" {
		t.Errorf("parent trail = %s", got)
	}

	// a duplicated continuation changes nothing
	lc := lambda.New(lambda.Options{Region: "us-east-1", BaseEndpoint: aws.String(s.env[assembly.EnvLambdaEndpoint]),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
	if _, err := lc.Invoke(context.Background(), &lambda.InvokeInput{FunctionName: aws.String(turnFunction),
		InvocationType: lambdatypes.InvocationTypeEvent, Payload: invs[0].Payload}); err != nil {
		t.Fatal(err)
	}
	if err := fake.Wait(wait); err != nil {
		t.Fatal(err)
	}
	if after := fake.Invocations(); len(after) != len(invs)+1 || after[len(after)-1].Error != "" {
		t.Fatalf("the duplicate invocation: %+v", after[len(after)-1])
	}
	if got := modelCalls.Load(); got != 12 {
		t.Errorf("the duplicate made %d more model calls", got-12)
	}
	if n, m := len(s.messages(t, id, 0, 100)), len(s.messages(t, child, 0, 100)); n != len(msgs) || m != len(cmsgs) {
		t.Errorf("the duplicate wrote messages: parent %d → %d, child %d → %d", len(msgs), n, len(cmsgs), m)
	}
}

// checkChildSteps asserts the slow child's transcript is its opening note, eight `step`
// writes and the `cleared` write (each an assistant call and its result), then its closing
// message — each stored once, in order.
func checkChildSteps(t *testing.T, msgs []transcript.Message) {
	t.Helper()
	const calls = 9
	if len(msgs) != 2+2*calls {
		t.Fatalf("the child stored %d messages, want %d", len(msgs), 2+2*calls)
	}
	if msgs[0].Role != transcript.RoleUser || msgs[0].Note != transcript.NoteOpening {
		t.Errorf("the child's first message = %+v, want its opening note", msgs[0])
	}
	seen := map[string]bool{}
	for i, m := range msgs {
		if seen[m.ID] {
			t.Errorf("child message %d (%s) stored twice", i, m.ID)
		}
		seen[m.ID] = true
	}
	for i := range calls {
		a, r := msgs[1+2*i], msgs[2+2*i]
		if a.Role != transcript.RoleAssistant || len(a.ToolCalls) != 1 || r.Role != transcript.RoleTool || r.ToolCallID != a.ToolCalls[0].ID {
			t.Fatalf("child step %d stored as %s/%s", i+1, a.Role, r.Role)
		}
		vars, _ := a.ToolCalls[0].Args["variables"].(map[string]any)
		if i < 8 && vars["step"] != float64(i+1) || i == 8 && vars["cleared"] != true {
			t.Errorf("child step %d's call is %v", i+1, a.ToolCalls[0].Args)
		}
	}
	if last := msgs[len(msgs)-1]; last.Role != transcript.RoleAssistant || last.Text != "Dana (platform) is cleared for the East Lab." {
		t.Errorf("the child's last message = %+v", last)
	}
}

// DESIGN.md §1, §4 with spec 02 §3.7: the decide function, continuing its own turns, answers
// a decision on a delegated park 202 once the routed decision is committed; its continuation
// applies the decision to the child exactly once, runs the child to its end and the parent
// after it.
func TestDelegatedDecisionIsAcceptedAndContinued(t *testing.T) {
	s := newDelegationStack(t, "badge-approval.model.yaml")
	l := s.boot(t) // synchronous functions for the setup
	a := call(t, l.turn, startReq("badge-desk", jsonText(t, map[string]string{"message": samMessage})))
	if a.status != http.StatusOK || a.body["kind"] != "parked" || a.body["delegation"] == nil {
		t.Fatalf("start: %d %v", a.status, a.body)
	}
	id, _ := a.body["sessionId"].(string)
	child := id + "~1"
	var modelCalls atomic.Int64
	s.onModelCall(func() { modelCalls.Add(1) })

	fake, decide := continuingDecideFunction(t, s)

	ans := call(t, decide, decisionReq(id, jsonText(t, map[string]string{"to": "badge-granted", "parkId": a.parkID()})))
	if ans.status != http.StatusAccepted || ans.body["kind"] != "running" || ans.body["disposition"] != "decide" {
		t.Fatalf("decision = %d %v, want 202 running", ans.status, ans.body)
	}
	wait, stop := context.WithTimeout(context.Background(), 30*time.Second)
	defer stop()
	if err := fake.Wait(wait); err != nil {
		t.Fatal(err)
	}
	invs := fake.Invocations()
	if len(invs) == 0 {
		t.Fatal("no continuation was started: the decision's 202 was not carried on")
	}
	t.Logf("the decision answered %v; %d continuation(s)", ans.body, len(invs))
	for _, inv := range invs {
		if inv.Error != "" || inv.TimedOut || inv.Attempt != 1 {
			t.Errorf("invocation %+v: want first-attempt continuations that ended cleanly", inv)
		}
	}
	sum := s.summary(t, id)
	if sum.Status != session.StatusCompleted || sum.TurnID != ans.body["turnId"] || sum.Pending != nil || sum.Turn != 2 {
		t.Fatalf("after the continuation: %s turn %q (#%d) pending %+v, want completed in %v", sum.Status, sum.TurnID, sum.Turn, sum.Pending, ans.body["turnId"])
	}
	if got := modelCalls.Load(); got != 3 {
		t.Errorf("the model was called %d times after the decision, want 3 (child 2, desk 1)", got)
	}
	csum := s.summary(t, child)
	if csum.Status != session.StatusCompleted || csum.Variables["approved"].Value != true {
		t.Errorf("child: %s %v", csum.Status, csum.Variables)
	}
	if got := s.trail(t, child); got != "trigger:prepare-approval agent:owner-sign-off human:badge-granted" {
		t.Errorf("child trail = %s (the decision applied more than once?)", got)
	}
	if n := len(notesOf(s.messages(t, child, 0, 100), transcript.NoteDecision)); n != 1 {
		t.Errorf("the child has %d [decision] notes, want 1", n)
	}
	msgs := s.messages(t, id, 0, 100)
	if n := len(notesOf(msgs, transcript.NoteSubWorkflow)); n != 1 {
		t.Errorf("the parent has %d [sub-workflow] notes, want 1", n)
	}
	if last := msgs[len(msgs)-1]; last.Text != "Good news, Sam — the Server Room's owner approved your badge." {
		t.Errorf("the parent's last message = %+v", last)
	}
	s.checkCommittedOnce(t, id)
	s.checkCommittedOnce(t, child)
	if u := sum.Usage; u == nil || u.InputTokens != 6420 || u.OutputTokens != 135 {
		t.Errorf("parent usage %+v, want 6420 in / 135 out (as on the synchronous path)", u)
	}
	if u := csum.Usage; u == nil || u.InputTokens != 3070 || u.OutputTokens != 77 {
		t.Errorf("child usage %+v, want 3070 in / 77 out", u)
	}
}
