package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/store"
	"github.com/archmax-ai/archmax/core/store/memory"
	"github.com/archmax-ai/archmax/functions/handlers/access"
)

// Issue 17: object-level authorization, tried from every side. The callers are IAM roles
// (an assumed role's session, as API Gateway reports it) and JWT subjects.
const (
	danaARN     = "arn:aws:sts::123456789012:assumed-role/dana/dana-laptop"
	eveARN      = "arn:aws:sts::123456789012:assumed-role/eve/eve-laptop"
	approverARN = "arn:aws:sts::123456789012:assumed-role/approvers/bob"
	adminARN    = "arn:aws:sts::123456789012:assumed-role/ops/alice"
)

var authzPolicy = access.Policy{
	IAMDeciders: []string{"arn:aws:iam::123456789012:role/approvers"},
	IAMAdmins:   []string{"arn:aws:iam::123456789012:role/ops"},
}

// authzEngines serves the desk workflow over a log the test may wrap.
type authzEngines struct {
	authored *memory.Files
	log      store.Log
	qm       *queueModel
}

func (e *authzEngines) Log() store.Log              { return e.log }
func (e *authzEngines) Sessions() *session.Sessions { return session.NewSessions(e.log, nil, nil) }
func (e *authzEngines) SessionWorkflow(ctx context.Context, id string) (string, error) {
	h, err := e.log.Get(ctx, id)
	if err != nil {
		return "", &session.SessionNotFoundError{SessionID: id}
	}
	return h.Workflow, nil
}
func (e *authzEngines) Engine(ctx context.Context, workflow string) (*session.Engine, error) {
	if _, err := e.authored.Stat(ctx, "workflows/"+workflow+"/workflow.yaml"); err != nil {
		return nil, &session.UnknownWorkflowError{Workflow: workflow}
	}
	return session.New(session.Config{Workflow: workflow, Authored: e.authored, Log: e.log,
		Files: memory.NewFiles(), Model: e.qm, ModelID: "test-model"})
}

type authzFixture struct {
	t   *testing.T
	h   *Handler
	e   *authzEngines
	log store.Log
}

func newAuthz(t *testing.T, p access.Policy, wrap func(store.Log) store.Log) *authzFixture {
	t.Helper()
	authored := memory.NewFiles()
	if err := authored.Write(context.Background(), "workflows/desk/workflow.yaml", []byte(desk)); err != nil {
		t.Fatal(err)
	}
	var log store.Log = memory.New()
	if wrap != nil {
		log = wrap(log)
	}
	e := &authzEngines{authored: authored, log: log, qm: &queueModel{}}
	return &authzFixture{t: t, h: New(e, nil, nil, WithPolicy(p)), e: e, log: log}
}

// as sends req signed as the IAM caller userARN.
func (f *authzFixture) as(userARN string, req events.APIGatewayV2HTTPRequest) (int, map[string]any) {
	f.t.Helper()
	return call(f.t, f.h, signedAs(req, userARN))
}

// parked makes a session of dana's parked for a decision at signoff.
func (f *authzFixture) parked(id string) {
	f.t.Helper()
	f.e.qm.push(tool("archmax_advance", map[string]any{"to": "signoff", "reason": "ready"}), *text("Sent to sign-off."))
	if status, body := f.as(danaARN, turn("desk", id, `{"message":"please file it"}`)); status != http.StatusOK || body["status"] != "awaiting_decision" {
		f.t.Fatalf("park %s: %d %v", id, status, body)
	}
}

// waiting makes a session of dana's parked awaiting input.
func (f *authzFixture) waiting(id string) {
	f.t.Helper()
	f.e.qm.push(tool("archmax_wait", map[string]any{"reason": "the courier"}), *text("Waiting."))
	if status, body := f.as(danaARN, turn("desk", id, `{"message":"track it"}`)); status != http.StatusOK || body["status"] != "awaiting_input" {
		f.t.Fatalf("wait %s: %d %v", id, status, body)
	}
}

func (f *authzFixture) version(id string) int64 {
	f.t.Helper()
	h, err := f.log.Get(context.Background(), id)
	if err != nil {
		f.t.Fatal(err)
	}
	return h.Version
}

func listed(body map[string]any) []string {
	var ids []string
	list, _ := body["sessions"].([]any)
	for _, s := range list {
		ids = append(ids, s.(map[string]any)["sessionId"].(string))
	}
	slices.Sort(ids) // the order is the store's (newest first): not what these tests check
	return ids
}

// A second principal tries every route on the first's sessions: each answers exactly as for
// a session that does not exist (the same status, code and message but for the id), and
// nothing is written; its listing holds none of them.
func TestSecondPrincipalTriesEveryRoute(t *testing.T) {
	f := newAuthz(t, authzPolicy, nil)
	f.parked("s-dana")
	f.waiting("w-dana")
	before := map[string]int64{"s-dana": f.version("s-dana"), "w-dana": f.version("w-dana")}
	routes := map[string]func(id string) events.APIGatewayV2HTTPRequest{
		"summary":  func(id string) events.APIGatewayV2HTTPRequest { return get("/v1/sessions/"+id, nil) },
		"messages": func(id string) events.APIGatewayV2HTTPRequest { return get("/v1/sessions/"+id+"/messages", nil) },
		"events":   func(id string) events.APIGatewayV2HTTPRequest { return get("/v1/sessions/"+id+"/events", nil) },
		"decision": func(id string) events.APIGatewayV2HTTPRequest { return decision(id, `{"to":"done"}`) },
		"delivery": func(id string) events.APIGatewayV2HTTPRequest { return delivery(id, `{"trigger":"courier"}`) },
	}
	for _, id := range []string{"s-dana", "w-dana"} {
		for name, req := range routes {
			status, body := f.as(eveARN, req(id))
			mStatus, mBody := f.as(eveARN, req("s-missing"))
			want := strings.ReplaceAll(mustJSON(t, mBody), "s-missing", id)
			if status != http.StatusNotFound || errCode(body) != "SessionNotFoundError" || mustJSON(t, body) != want || mStatus != status {
				t.Errorf("eve %s %s: %d %v; want the answer for a missing session: %d %s", name, id, status, body, mStatus, want)
			}
		}
		// a message to dana's session id is refused as not found, not run as eve's start
		if status, body := f.as(eveARN, turn("desk", id, `{"message":"mine now"}`)); status != http.StatusNotFound || errCode(body) != "SessionNotFoundError" {
			t.Errorf("eve's turn on %s: %d %v", id, status, body)
		}
		if v := f.version(id); v != before[id] {
			t.Errorf("%s: version %d → %d: eve's requests wrote", id, before[id], v)
		}
	}
	if status, body := f.as(eveARN, get("/v1/sessions", nil)); status != http.StatusOK || len(listed(body)) != 0 {
		t.Errorf("eve's listing: %d %v", status, body)
	}
	if status, body := f.as(eveARN, get("/v1/sessions", map[string]string{"status": "awaiting_decision", "includeChildren": "true"})); status != http.StatusOK || len(listed(body)) != 0 {
		t.Errorf("eve's listing of the decision queue: %d %v", status, body)
	}
	// dana sees both, and a session eve starts is eve's alone
	if _, body := f.as(danaARN, get("/v1/sessions", nil)); strings.Join(listed(body), ",") != "s-dana,w-dana" {
		t.Errorf("dana's listing: %v", listed(body))
	}
	if status, _ := f.as(eveARN, turn("desk", "e-1", `{"message":"hello"}`)); status != http.StatusOK {
		t.Fatalf("eve's start: %d", status)
	}
	if _, body := f.as(danaARN, get("/v1/sessions", nil)); strings.Join(listed(body), ",") != "s-dana,w-dana" {
		t.Errorf("dana's listing after eve's start: %v", listed(body))
	}
	if status, _ := f.as(danaARN, get("/v1/sessions/e-1", nil)); status != http.StatusNotFound {
		t.Errorf("dana reads eve's session: %d", status)
	}
	// another session of dana's role is dana: the same principal
	if status, _ := f.as("arn:aws:sts::123456789012:assumed-role/dana/ci-job", get("/v1/sessions/s-dana", nil)); status != http.StatusOK {
		t.Errorf("dana's role from another session: %d", status)
	}
}

// A decider reads and decides a session parked for a decision, evidence included, and may
// do nothing else: no message, no delivery; a session not parked for a decision is not
// theirs to see. The owner, without the role, may not decide their own request.
func TestDeciderMayReadAndDecideOnly(t *testing.T) {
	f := newAuthz(t, authzPolicy, nil)
	f.parked("s-dana")
	f.waiting("w-dana")
	v := f.version("s-dana")
	status, body := f.as(approverARN, get("/v1/sessions/s-dana", nil))
	if status != http.StatusOK || body["pending"] == nil {
		t.Fatalf("the decider reads the parked session: %d %v", status, body)
	}
	if status, _ := f.as(approverARN, get("/v1/sessions/s-dana/messages", nil)); status != http.StatusOK {
		t.Errorf("the decider reads its transcript: %d", status)
	}
	for name, req := range map[string]events.APIGatewayV2HTTPRequest{
		"send":    turn("desk", "s-dana", `{"message":"approve it yourself"}`),
		"deliver": delivery("s-dana", `{"trigger":"courier"}`),
	} {
		status, body := f.as(approverARN, req)
		if status != http.StatusForbidden || errCode(body) != access.CodeAccessDenied || details(body)["sessionId"] != "s-dana" {
			t.Errorf("the decider tries to %s: %d %v, want 403 AccessDeniedError", name, status, body)
		}
	}
	for name, req := range map[string]events.APIGatewayV2HTTPRequest{
		"read":    get("/v1/sessions/w-dana", nil),
		"deliver": delivery("w-dana", `{"trigger":"courier"}`),
		"decide":  decision("w-dana", `{"to":"done"}`),
	} {
		if status, body := f.as(approverARN, req); status != http.StatusNotFound || errCode(body) != "SessionNotFoundError" {
			t.Errorf("the decider on a session awaiting input (%s): %d %v, want 404", name, status, body)
		}
	}
	// the owner may not decide without the role
	if status, body := f.as(danaARN, decision("s-dana", `{"to":"done"}`)); status != http.StatusForbidden || errCode(body) != access.CodeAccessDenied {
		t.Errorf("the owner decides: %d %v, want 403", status, body)
	}
	if f.version("s-dana") != v {
		t.Fatal("a refused request wrote")
	}
	// the decider's listing: their own sessions, or the decision queue when asked for it
	if _, body := f.as(approverARN, get("/v1/sessions", nil)); len(listed(body)) != 0 {
		t.Errorf("the decider's own sessions: %v", listed(body))
	}
	if _, body := f.as(approverARN, get("/v1/sessions", map[string]string{"status": "awaiting_decision"})); strings.Join(listed(body), ",") != "s-dana" {
		t.Errorf("the decision queue: %v", listed(body))
	}
	f.e.qm.push(*text("Done."))
	status, body = f.as(approverARN, decision("s-dana", `{"to":"done","comment":"approved"}`))
	if status != http.StatusOK || body["kind"] != "completed" {
		t.Fatalf("the decider decides: %d %v", status, body)
	}
	// decided: no longer parked, so no longer the decider's to see
	if status, _ := f.as(approverARN, get("/v1/sessions/s-dana", nil)); status != http.StatusNotFound {
		t.Errorf("the decided session stays visible to the decider: %d", status)
	}
	if _, body := f.as(approverARN, get("/v1/sessions", map[string]string{"status": "awaiting_decision"})); len(listed(body)) != 0 {
		t.Errorf("the decision queue after the decision: %v", listed(body))
	}
}

// The summary and the events carry who started the session and who decided it.
func TestSummaryAndEventsCarryTheIdentities(t *testing.T) {
	f := newAuthz(t, authzPolicy, nil)
	f.parked("s-dana")
	f.e.qm.push(*text("Done."))
	if status, body := f.as(approverARN, decision("s-dana", `{"to":"done"}`)); status != http.StatusOK {
		t.Fatalf("decide: %d %v", status, body)
	}
	_, sum := f.as(danaARN, get("/v1/sessions/s-dana", nil))
	owner, _ := sum["owner"].(map[string]any)
	by, _ := sum["turnBy"].(map[string]any)
	if owner["kind"] != "iam" || owner["id"] != "arn:aws:iam::123456789012:role/dana" {
		t.Errorf("summary owner %v", sum["owner"])
	}
	if by["kind"] != "iam" || by["id"] != "arn:aws:iam::123456789012:role/approvers" {
		t.Errorf("summary turnBy %v", sum["turnBy"])
	}
	_, page := f.as(danaARN, get("/v1/sessions/s-dana/events", map[string]string{"limit": "500"}))
	found := map[string]string{}
	for _, raw := range page["events"].([]any) {
		ev := raw.(map[string]any)
		if b, ok := ev["by"].(map[string]any); ok {
			found[ev["type"].(string)] = b["id"].(string)
		}
	}
	if found["advance"] != "arn:aws:iam::123456789012:role/dana" || found["decided"] != "arn:aws:iam::123456789012:role/approvers" {
		t.Errorf("events carry callers %v", found)
	}
}

// Four-eyes (a host setting): a requester holding the decide role may not decide their own
// request, an admin neither; another decider may.
func TestFourEyes(t *testing.T) {
	p := authzPolicy
	p.FourEyes = true
	p.IAMDeciders = append(p.IAMDeciders, "arn:aws:iam::123456789012:role/dana") // dana may decide, just not her own
	f := newAuthz(t, p, nil)
	f.parked("s-dana")
	v := f.version("s-dana")
	status, body := f.as(danaARN, decision("s-dana", `{"to":"done"}`))
	if status != http.StatusForbidden || errCode(body) != access.CodeFourEyes {
		t.Fatalf("the requester decides her own request: %d %v, want 403 FourEyesError", status, body)
	}
	// an admin who started a session may not decide it either
	f.e.qm.push(tool("archmax_advance", map[string]any{"to": "signoff", "reason": "ready"}), *text("Sent."))
	if status, _ := f.as(adminARN, turn("desk", "s-admin", `{"message":"mine"}`)); status != http.StatusOK {
		t.Fatal("admin start")
	}
	if status, body := f.as(adminARN, decision("s-admin", `{"to":"done"}`)); status != http.StatusForbidden || errCode(body) != access.CodeFourEyes {
		t.Errorf("an admin decides their own: %d %v", status, body)
	}
	if f.version("s-dana") != v {
		t.Fatal("a refused decision wrote")
	}
	f.e.qm.push(*text("Done."))
	if status, body := f.as(approverARN, decision("s-dana", `{"to":"done"}`)); status != http.StatusOK {
		t.Fatalf("another decider: %d %v", status, body)
	}
	// the same over JWT: the scope makes a decider, sub of iss the person
	jf := newAuthz(t, access.Policy{FourEyes: true}, nil)
	jwt := func(sub string, req events.APIGatewayV2HTTPRequest, scopes ...string) events.APIGatewayV2HTTPRequest {
		req.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{
			Claims: map[string]string{"sub": sub, "iss": "https://issuer.example/"}, Scopes: scopes}}
		return req
	}
	jf.e.qm.push(tool("archmax_advance", map[string]any{"to": "signoff", "reason": "ready"}), *text("Sent."))
	if status, _ := call(t, jf.h, jwt("dana", turn("desk", "j-1", `{"message":"please"}`), "archmax/decide")); status != http.StatusOK {
		t.Fatal("jwt start")
	}
	if status, body := call(t, jf.h, jwt("dana", decision("j-1", `{"to":"done"}`), "archmax/decide")); status != http.StatusForbidden || errCode(body) != access.CodeFourEyes {
		t.Errorf("jwt: the requester decides: %d %v", status, body)
	}
	if status, body := call(t, jf.h, jwt("erin", decision("j-1", `{"to":"done"}`))); status != http.StatusNotFound {
		t.Errorf("jwt: a caller without the scope: %d %v", status, body)
	}
	jf.e.qm.push(*text("Done."))
	if status, body := call(t, jf.h, jwt("erin", decision("j-1", `{"to":"done"}`), "archmax/decide")); status != http.StatusOK {
		t.Errorf("jwt: another decider: %d %v", status, body)
	}
}

// An Idempotency-Key is scoped to its caller: another caller's request with the same key
// (and the same path and body) is theirs — never the first caller's recorded answer, nor
// refused as in use or reused — and on the first caller's session it is refused as any
// of that caller's requests would be.
func TestIdempotencyKeyReplayedByAnotherCaller(t *testing.T) {
	f := newAuthz(t, authzPolicy, nil)
	keyed := func(req events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPRequest {
		req.Headers["idempotency-key"] = "k-1"
		return req
	}
	f.e.qm.push(*text("Hello Dana."))
	first := signedAs(keyed(request(RouteStart, "POST", "/v1/workflows/desk/sessions", `{"message":"hi"}`)), danaARN)
	resp, _ := f.h.Handle(context.Background(), first)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("dana's start: %+v", resp)
	}
	var danaSum session.OutcomeSummary
	_ = json.Unmarshal([]byte(resp.Body), &danaSum)
	f.e.qm.push(*text("Hello Eve."))
	theirs, _ := f.h.Handle(context.Background(), signedAs(keyed(request(RouteStart, "POST", "/v1/workflows/desk/sessions", `{"message":"hi"}`)), eveARN))
	var eveSum session.OutcomeSummary
	_ = json.Unmarshal([]byte(theirs.Body), &eveSum)
	if theirs.StatusCode != http.StatusOK || theirs.Headers["Idempotent-Replayed"] != "" || eveSum.SessionID == danaSum.SessionID || eveSum.Reply != "Hello Eve." {
		t.Fatalf("eve replays dana's key: %+v, want her own start", theirs)
	}
	again, _ := f.h.Handle(context.Background(), first)
	if again.Headers["Idempotent-Replayed"] != "true" || again.Body != resp.Body {
		t.Errorf("dana's repeat: %+v, want her first answer", again)
	}
	// on dana's session: eve's keyed message is refused, not answered from dana's record
	f.e.qm.push(*text("Again."))
	onDana := keyed(turn("desk", danaSum.SessionID, `{"message":"more"}`))
	if status, _ := f.as(danaARN, onDana); status != http.StatusOK {
		t.Fatalf("dana's keyed turn: %d", status)
	}
	resp2, _ := f.h.Handle(context.Background(), signedAs(keyed(turn("desk", danaSum.SessionID, `{"message":"more"}`)), eveARN))
	if resp2.StatusCode != http.StatusNotFound || resp2.Headers["Idempotent-Replayed"] != "" {
		t.Errorf("eve replays dana's turn key: %d %s, want 404", resp2.StatusCode, resp2.Body)
	}
	// a delivery key of eve's does not make dana's delivery with the same key a duplicate
	f.waiting("w-dana")
	f.e.qm.push(*text("Arrived."))
	d := keyed(delivery("w-dana", `{"trigger":"courier"}`))
	if status, body := f.as(adminARN, d); status != http.StatusOK {
		t.Fatalf("admin's keyed delivery: %d %v", status, body)
	}
}

// A request with no caller identity — no authorizer context, or one this API does not
// accept — is refused on every route before anything runs or is remembered.
func TestNoIdentityIsRefused(t *testing.T) {
	f := newAuthz(t, authzPolicy, nil)
	f.parked("s-dana")
	v := f.version("s-dana")
	for name, req := range map[string]events.APIGatewayV2HTTPRequest{
		"list": get("/v1/sessions", nil), "summary": get("/v1/sessions/s-dana", nil),
		"start": start("desk", `{"message":"hi"}`), "turn": turn("desk", "s-dana", `{"message":"hi"}`),
		"decision": decision("s-dana", `{"to":"done"}`), "delivery": delivery("s-dana", `{"trigger":"x"}`),
	} {
		req.RequestContext.Authorizer = nil
		req.Headers["idempotency-key"] = "k-anon"
		status, body := call(t, f.h, req)
		if status != http.StatusForbidden || errCode(body) != access.CodeAccessDenied {
			t.Errorf("%s without identity: %d %v", name, status, body)
		}
		req.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{Lambda: map[string]any{"principalId": "admin"}}
		if status, _ := call(t, f.h, req); status != http.StatusForbidden {
			t.Errorf("%s with a Lambda authorizer's context: %d", name, status)
		}
	}
	if f.version("s-dana") != v {
		t.Fatal("an anonymous request wrote")
	}
	if _, body := f.as(danaARN, get("/v1/sessions", nil)); strings.Join(listed(body), ",") != "s-dana" {
		t.Errorf("an anonymous start made a session: %v", listed(body))
	}
}

// An admin reads, lists, sends to, delivers into and decides every session.
func TestAdminActsOnEverySession(t *testing.T) {
	f := newAuthz(t, authzPolicy, nil)
	f.parked("s-dana")
	f.waiting("w-dana")
	if _, body := f.as(adminARN, get("/v1/sessions", nil)); strings.Join(listed(body), ",") != "s-dana,w-dana" {
		t.Errorf("admin's listing: %v", listed(body))
	}
	f.e.qm.push(*text("Arrived."))
	if status, body := f.as(adminARN, delivery("w-dana", `{"trigger":"courier"}`)); status != http.StatusOK {
		t.Errorf("admin delivers: %d %v", status, body)
	}
	f.e.qm.push(*text("Done."))
	if status, body := f.as(adminARN, decision("s-dana", `{"to":"done"}`)); status != http.StatusOK {
		t.Errorf("admin decides: %d %v", status, body)
	}
	f.e.qm.push(*text("Noted."))
	if status, body := f.as(adminARN, turn("desk", "s-dana", `{"message":"a note from ops"}`)); status != http.StatusOK {
		t.Errorf("admin sends: %d %v", status, body)
	}
	_, sum := f.as(danaARN, get("/v1/sessions/s-dana", nil))
	if owner, _ := sum["owner"].(map[string]any); owner["id"] != "arn:aws:iam::123456789012:role/dana" {
		t.Errorf("an admin's message changed the owner: %v", sum["owner"])
	}
}

// firstAcquire runs before the first Acquire of one session id, once.
type firstAcquire struct {
	store.Log
	id     string
	done   atomic.Bool
	before func()
}

func (l *firstAcquire) Acquire(ctx context.Context, id, owner string, ttl time.Duration) (*store.Head, error) {
	if id == l.id && l.done.CompareAndSwap(false, true) {
		l.before() // its own Acquire of id passes straight through
	}
	return l.Log.Acquire(ctx, id, owner, ttl)
}

// Two callers race to start one new id: eve's request passes the check before the lease
// (the id is free), dana's start commits first, and eve's call — checked again on the
// leased head — is refused as not found; dana's session is untouched.
func TestStartRaceIsCheckedUnderTheLease(t *testing.T) {
	var f *authzFixture
	f = newAuthz(t, authzPolicy, func(l store.Log) store.Log {
		return &firstAcquire{Log: l, id: "race", before: func() {
			f.e.qm.push(*text("Dana's."))
			if status, _ := f.as(danaARN, turn("desk", "race", `{"message":"dana first"}`)); status != http.StatusOK {
				t.Errorf("dana's start")
			}
		}}
	})
	status, body := f.as(eveARN, turn("desk", "race", `{"message":"eve second"}`))
	if status != http.StatusNotFound || errCode(body) != "SessionNotFoundError" {
		t.Fatalf("eve's racing start: %d %v, want 404", status, body)
	}
	_, sum := f.as(danaARN, get("/v1/sessions/race", nil))
	if sum["messageCount"] != float64(2) || sum["turn"] != float64(1) {
		t.Errorf("dana's session after the race: %v", sum)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The answers of this layer conform to docs/openapi.yaml: the 403s (AccessDeniedError with
// and without a session, FourEyesError) on the routes that give them, and a summary with
// its owner and turnBy.
func TestAuthorizationAnswersConformToTheOpenAPIDocument(t *testing.T) {
	router, err := legacy.NewRouter(loadOpenAPI(t))
	if err != nil {
		t.Fatal(err)
	}
	p := authzPolicy
	p.FourEyes = true
	p.IAMDeciders = append(p.IAMDeciders, "arn:aws:iam::123456789012:role/dana")
	f := newAuthz(t, p, nil)
	f.parked("s-dana")
	conforms := func(name, method, path string, req events.APIGatewayV2HTTPRequest, status int, code string) {
		t.Helper()
		resp, _ := f.h.Handle(context.Background(), req)
		var body map[string]any
		_ = json.Unmarshal([]byte(resp.Body), &body)
		if resp.StatusCode != status || (code != "" && errCode(body) != code) {
			t.Fatalf("%s: %d %s, want %d %s", name, resp.StatusCode, resp.Body, status, code)
		}
		hreq, _ := http.NewRequest(method, "http://127.0.0.1:8080"+path, nil)
		rt, params, err := router.FindRoute(hreq)
		if err != nil {
			t.Fatalf("%s: not in the document: %v", name, err)
		}
		header := http.Header{}
		for k, v := range resp.Headers {
			header.Set(k, v)
		}
		out := &openapi3filter.ResponseValidationInput{RequestValidationInput: &openapi3filter.RequestValidationInput{Request: hreq, PathParams: params, Route: rt},
			Status: resp.StatusCode, Header: header, Body: io.NopCloser(strings.NewReader(resp.Body))}
		if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
			t.Errorf("%s → %d does not conform: %v\n%s", name, resp.StatusCode, err, resp.Body)
		}
	}
	conforms("a decider sends", "POST", "/v1/workflows/desk/sessions/s-dana/turns",
		signedAs(turn("desk", "s-dana", `{"message":"x"}`), approverARN), http.StatusForbidden, access.CodeAccessDenied)
	conforms("the starter decides", "POST", "/v1/sessions/s-dana/decision",
		signedAs(decision("s-dana", `{"to":"done"}`), danaARN), http.StatusForbidden, access.CodeFourEyes)
	anon := get("/v1/sessions", nil)
	anon.RequestContext.Authorizer = nil
	conforms("no identity", "GET", "/v1/sessions", anon, http.StatusForbidden, access.CodeAccessDenied)
	f.e.qm.push(*text("Done."))
	if status, _ := f.as(approverARN, decision("s-dana", `{"to":"done"}`)); status != http.StatusOK {
		t.Fatal("decide")
	}
	conforms("a summary with owner and turnBy", "GET", "/v1/sessions/s-dana", signedAs(get("/v1/sessions/s-dana", nil), danaARN), http.StatusOK, "")
	conforms("events with by", "GET", "/v1/sessions/s-dana/events", signedAs(get("/v1/sessions/s-dana/events", nil), danaARN), http.StatusOK, "")
}
