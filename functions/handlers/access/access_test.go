package access

import (
	"errors"
	"fmt"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/archmax-ai/archmax/core/identity"
	"github.com/archmax-ai/archmax/core/session"
)

const iss = "https://issuer.example/"

func jwtReq(sub string, claims map[string]string, scopes ...string) events.APIGatewayV2HTTPRequest {
	c := map[string]string{"sub": sub, "iss": iss}
	for k, v := range claims {
		c[k] = v
	}
	return events.APIGatewayV2HTTPRequest{RequestContext: events.APIGatewayV2HTTPRequestContext{
		Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: c, Scopes: scopes}}}}
}

func iamReq(userArn string) events.APIGatewayV2HTTPRequest {
	return events.APIGatewayV2HTTPRequest{RequestContext: events.APIGatewayV2HTTPRequestContext{
		Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{UserARN: userArn, AccountID: "123456789012"}}}}
}

func TestIdentify(t *testing.T) {
	p := Policy{IAMAdmins: []string{"arn:aws:iam::123456789012:role/ops"}, IAMDeciders: []string{"arn:aws:iam::123456789012:role/approvers"}}
	jwt := func(sub string) identity.Principal {
		return identity.Principal{Kind: identity.JWT, ID: sub, Issuer: iss}
	}
	role := func(name string) identity.Principal {
		return identity.Principal{Kind: identity.IAM, ID: "arn:aws:iam::123456789012:role/" + name}
	}
	cognito := iamReq("arn:aws:sts::123456789012:assumed-role/Cognito_PoolAuth_Role/CognitoIdentityCredentials")
	cognito.RequestContext.Authorizer.IAM.CognitoIdentity = events.APIGatewayV2HTTPRequestContextAuthorizerCognitoIdentity{
		IdentityID: "eu-west-1:7f1c", IdentityPoolID: "eu-west-1:pool"}
	lambda := events.APIGatewayV2HTTPRequest{RequestContext: events.APIGatewayV2HTTPRequestContext{
		Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{Lambda: map[string]any{"principalId": "admin"}}}}
	for _, tc := range []struct {
		name string
		req  events.APIGatewayV2HTTPRequest
		want Caller
		err  bool
	}{
		{"jwt, no scope", jwtReq("dana", nil), Caller{Principal: jwt("dana")}, false},
		{"jwt scopes from the route", jwtReq("dana", nil, "archmax/decide"), Caller{Principal: jwt("dana"), Decider: true}, false},
		{"jwt scope claim", jwtReq("dana", map[string]string{"scope": "openid archmax/admin archmax/decide"}), Caller{Principal: jwt("dana"), Admin: true, Decider: true}, false},
		{"jwt scp claim, flattened list", jwtReq("dana", map[string]string{"scp": "[archmax/decide profile]"}), Caller{Principal: jwt("dana"), Decider: true}, false},
		{"jwt: another prefix's scope is no role", jwtReq("dana", map[string]string{"scope": "other/admin decide admin"}), Caller{Principal: jwt("dana")}, false},
		{"jwt without sub", jwtReq("", nil), Caller{}, true},
		{"iam: an assumed role is its role", iamReq("arn:aws:sts::123456789012:assumed-role/app/session-1"), Caller{Principal: role("app")}, false},
		{"iam: another session, the same principal", iamReq("arn:aws:sts::123456789012:assumed-role/app/session-2"), Caller{Principal: role("app")}, false},
		{"iam admin", iamReq("arn:aws:sts::123456789012:assumed-role/ops/alice"), Caller{Principal: role("ops"), Admin: true}, false},
		{"iam decider", iamReq("arn:aws:sts::123456789012:assumed-role/approvers/bob"), Caller{Principal: role("approvers"), Decider: true}, false},
		{"iam: a role of the same name in another account holds none", iamReq("arn:aws:sts::999999999999:assumed-role/ops/x"),
			Caller{Principal: identity.Principal{Kind: identity.IAM, ID: "arn:aws:iam::999999999999:role/ops"}}, false},
		{"iam user", iamReq("arn:aws:iam::123456789012:user/ops/carol"), Caller{Principal: identity.Principal{Kind: identity.IAM, ID: "arn:aws:iam::123456789012:user/carol"}}, false},
		{"cognito identity, not the pool's shared role", cognito, Caller{Principal: identity.Principal{Kind: identity.Cognito, ID: "eu-west-1:7f1c", Issuer: "eu-west-1:pool"}}, false},
		{"iam without a principal ARN", iamReq(""), Caller{}, true},
		{"no authorizer", events.APIGatewayV2HTTPRequest{}, Caller{}, true},
		{"a lambda authorizer's context is not trusted", lambda, Caller{}, true},
	} {
		got, err := p.Identify(tc.req)
		var denied *DeniedError
		if tc.err != (err != nil) || (err != nil && (!errors.As(err, &denied) || denied.Code != CodeAccessDenied)) || got != tc.want {
			t.Errorf("%s: Identify = %+v, %v; want %+v (error %v)", tc.name, got, err, tc.want, tc.err)
		}
	}
	if c, _ := (Policy{ScopePrefix: "https://api.example.com/"}).Identify(jwtReq("x", map[string]string{"scope": "https://api.example.com/decide"})); !c.Decider {
		t.Error("a configured scope prefix is honoured")
	}
}

func TestParseIAMPrincipals(t *testing.T) {
	got, err := ParseIAMPrincipals(" arn:aws:iam::1:role/team/ops, arn:aws:sts::1:assumed-role/approvers/x ,,")
	if err != nil || fmt.Sprint(got) != "[arn:aws:iam::1:role/ops arn:aws:iam::1:role/approvers]" {
		t.Fatalf("ParseIAMPrincipals = %v, %v", got, err)
	}
	if _, err := ParseIAMPrincipals("arn:aws:iam::1:role/ok,ops"); err == nil {
		t.Fatal("a bad entry was accepted")
	}
}

// TestCheck is the whole permission table: every caller against every action on sessions
// in every relevant state.
func TestCheck(t *testing.T) {
	owner := identity.Principal{Kind: identity.JWT, ID: "dana", Issuer: iss}
	other := identity.Principal{Kind: identity.JWT, ID: "eve", Issuer: iss}
	callers := map[string]Caller{
		"owner":         {Principal: owner},
		"other":         {Principal: other},
		"decider":       {Principal: other, Decider: true},
		"decider-owner": {Principal: owner, Decider: true},
		"admin":         {Principal: other, Admin: true},
		"admin-owner":   {Principal: owner, Admin: true},
	}
	parked := session.SessionAccess{SessionID: "s", Exists: true, Status: session.StatusAwaitingDecision, Owner: owner.Key()}
	waiting := session.SessionAccess{SessionID: "s", Exists: true, Status: session.StatusAwaitingInput, Owner: owner.Key()}
	done := session.SessionAccess{SessionID: "s", Exists: true, Status: session.StatusCompleted, Owner: owner.Key()}
	legacy := session.SessionAccess{SessionID: "s", Exists: true, Status: session.StatusAwaitingDecision} // no owner recorded
	legacyDone := session.SessionAccess{SessionID: "s", Exists: true, Status: session.StatusCompleted}
	missing := session.SessionAccess{SessionID: "s"}
	const ok, hidden, denied, fourEyes = "ok", "404", "403", "4eyes"
	type row struct {
		caller string
		s      session.SessionAccess
		act    Action
		want   string // plain, four-eyes on
		want4  string
	}
	rows := []row{
		// the owner reads, sends, delivers; never decides without the role
		{"owner", parked, Read, ok, ok}, {"owner", parked, Send, ok, ok}, {"owner", waiting, Deliver, ok, ok},
		{"owner", parked, Decide, denied, denied}, {"owner", done, Read, ok, ok},
		// anyone else sees nothing of it
		{"other", parked, Read, hidden, hidden}, {"other", parked, Send, hidden, hidden}, {"other", waiting, Deliver, hidden, hidden},
		{"other", parked, Decide, hidden, hidden}, {"other", done, Read, hidden, hidden},
		// a decider reads and decides a parked session, and may do nothing else with it
		{"decider", parked, Read, ok, ok}, {"decider", parked, Decide, ok, ok},
		{"decider", parked, Send, denied, denied}, {"decider", parked, Deliver, denied, denied},
		// … and sees nothing of a session not parked for a decision
		{"decider", waiting, Read, hidden, hidden}, {"decider", waiting, Deliver, hidden, hidden},
		{"decider", done, Read, hidden, hidden}, {"decider", done, Decide, hidden, hidden},
		// a requester with the role may decide their own request, unless four-eyes
		{"decider-owner", parked, Decide, ok, fourEyes}, {"decider-owner", done, Decide, ok, fourEyes},
		// an admin reads and acts on everything; four-eyes binds admins too
		{"admin", parked, Read, ok, ok}, {"admin", parked, Send, ok, ok}, {"admin", waiting, Deliver, ok, ok},
		{"admin", parked, Decide, ok, ok}, {"admin", done, Read, ok, ok},
		{"admin-owner", parked, Decide, ok, fourEyes},
		// sessions written before owners were: an admin's, and a decider's while parked
		{"owner", legacy, Read, hidden, hidden}, {"owner", legacyDone, Send, hidden, hidden},
		{"decider", legacy, Read, ok, ok}, {"decider", legacy, Decide, ok, fourEyes},
		{"admin", legacyDone, Read, ok, ok}, {"admin", legacy, Decide, ok, fourEyes},
		// no session: a send is a start (anyone's); everything else is 404
		{"other", missing, Send, ok, ok}, {"owner", missing, Read, hidden, hidden},
		{"admin", missing, Decide, hidden, hidden}, {"admin", missing, Deliver, hidden, hidden},
	}
	for _, r := range rows {
		for _, four := range []bool{false, true} {
			p := Policy{FourEyes: four}
			want := r.want
			if four {
				want = r.want4
			}
			err := p.Check(callers[r.caller], r.act, r.s)
			var got string
			var nf *session.SessionNotFoundError
			var de *DeniedError
			switch {
			case err == nil:
				got = ok
			case errors.As(err, &nf) && nf.SessionID == "s" && nf.Error() == (&session.SessionNotFoundError{SessionID: "s"}).Error():
				got = hidden
			case errors.As(err, &de) && de.Code == CodeAccessDenied && de.SessionID == "s" && de.Action == r.act:
				got = denied
			case errors.As(err, &de) && de.Code == CodeFourEyes:
				got = fourEyes
			default:
				got = err.Error()
			}
			if got != want {
				t.Errorf("%s %s on %s (owner %q, exists %v), four-eyes %v: %s, want %s", r.caller, r.act, r.s.Status, r.s.Owner, r.s.Exists, four, got, want)
			}
			// the guard the engine runs is the same check
			if gerr := p.Guard(callers[r.caller], r.act)(r.s); fmt.Sprint(gerr) != fmt.Sprint(err) {
				t.Errorf("guard and check disagree: %v / %v", gerr, err)
			}
		}
	}
}

func TestListOwner(t *testing.T) {
	p := identity.Principal{Kind: identity.IAM, ID: "arn:aws:iam::1:role/app"}
	for _, tc := range []struct {
		c      Caller
		status session.Status
		want   string
	}{
		{Caller{Principal: p}, "", p.Key()},
		{Caller{Principal: p}, session.StatusAwaitingDecision, p.Key()},
		{Caller{Principal: p, Decider: true}, "", p.Key()}, // a decider's own sessions, unless they ask for the queue
		{Caller{Principal: p, Decider: true}, session.StatusAwaitingDecision, ""},
		{Caller{Principal: p, Decider: true}, session.StatusAwaitingInput, p.Key()},
		{Caller{Principal: p, Admin: true}, "", ""},
		{Caller{Principal: p, Admin: true}, session.StatusCompleted, ""},
	} {
		if got := ListOwner(tc.c, tc.status); got != tc.want {
			t.Errorf("ListOwner(%+v, %q) = %q, want %q", tc.c, tc.status, got, tc.want)
		}
	}
}
