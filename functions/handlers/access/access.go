// Package access is the object-level authorization of the HTTP API (Issue 17): who the
// caller of an API Gateway request is (Identify), and what that caller may do to a session
// (Check), as pure functions over the request context and the session's owner and status.
//
// The model:
//
//   - Every authenticated caller may start sessions; the session is then theirs (its owner).
//   - The owner may read their session, send to it (turns, replies, deliveries) and delete it.
//   - A decider (JWT scope <prefix>decide, or an IAM principal listed as a decider) may
//     read and decide any session parked for a decision (awaiting_decision), evidence
//     included — and nothing else of it.
//   - An admin (JWT scope <prefix>admin, or an IAM principal listed as an admin) may read
//     and act on every session.
//   - With the four-eyes rule on (Policy.FourEyes), the decider must not be the session's
//     starter — admins included; a session with no recorded starter cannot be decided.
//
// A session the caller may not see answers 404 exactly as a missing one does (no existence
// leak); an action on a visible session the caller may not take answers 403
// (*DeniedError). The engine runs the same Check under the session's lease
// (session.WithGuard), so a check made before the lease cannot be raced.
package access

import (
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/archmax-ai/archmax/core/identity"
	"github.com/archmax-ai/archmax/core/session"
)

// Action is what a request does to a session.
type Action string

const (
	Read    Action = "read"    // the GET routes
	Send    Action = "send"    // a start, or a message to a session (turn, reply, delivery into a wait)
	Decide  Action = "decide"  // POST …/decision
	Deliver Action = "deliver" // POST …/deliveries
	Delete  Action = "delete"  // DELETE /v1/sessions/{sessionId}: the owner's or an admin's (RD22-5)
)

// DefaultScopePrefix starts the JWT scopes of the roles: archmax/decide, archmax/admin
// (a Cognito resource server "archmax" with the custom scopes "decide" and "admin").
const DefaultScopePrefix = "archmax/"

// The JWT scope names after the prefix.
const (
	ScopeDecide = "decide"
	ScopeAdmin  = "admin"
)

// Policy is the host's access settings (ARCHMAX_* variables on the functions, flags of
// `archmax serve`). The zero value is usable: JWT scopes with DefaultScopePrefix, no IAM
// principal holding a role, four-eyes off.
type Policy struct {
	// ScopePrefix starts the JWT scopes of the roles ("" = DefaultScopePrefix).
	ScopePrefix string
	// IAMAdmins and IAMDeciders are the IAM principals holding a role, as NormalizeARN
	// makes them (role ARNs without path, user ARNs, account roots).
	IAMAdmins, IAMDeciders []string
	// FourEyes: the decider must differ from the session's starter.
	FourEyes bool
}

// Caller is one request's principal and the roles it holds.
type Caller struct {
	Principal identity.Principal
	Admin     bool // reads and acts on every session
	Decider   bool // reads and decides the sessions parked for a decision
}

// Code names of the 403 answers.
const (
	CodeAccessDenied = "AccessDeniedError"
	CodeFourEyes     = "FourEyesError"
)

// DeniedError is a request refused by this package (HTTP 403): no usable identity, or an
// action on a visible session the caller may not take (Code CodeAccessDenied), or a
// decision the four-eyes rule refuses (CodeFourEyes).
type DeniedError struct {
	Code      string
	SessionID string // "" when the request names none (or no identity was found)
	Action    Action
	Reason    string
}

func (e *DeniedError) Error() string { return e.Reason }

// Name returns the error name (the answer's code).
func (e *DeniedError) Name() string { return e.Code }

// ParseIAMPrincipals reads a comma-separated list of IAM principal ARNs into their
// normalised forms (identity.NormalizeARN); an entry that is not one is an error.
func ParseIAMPrincipals(list string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, ok := identity.NormalizeARN(f)
		if !ok {
			return nil, fmt.Errorf("%q is not an IAM role, user or account-root ARN", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func (p Policy) prefix() string {
	if p.ScopePrefix == "" {
		return DefaultScopePrefix
	}
	return p.ScopePrefix
}

// noIdentity refuses a request that names no principal this package accepts.
func noIdentity(why string) error {
	return &DeniedError{Code: CodeAccessDenied, Reason: "The request carries no caller identity this API accepts: " + why + "."}
}

// Identify returns the caller of an API Gateway HTTP API (payload 2.0) request from its
// authorizer context: a JWT authorizer's verified claims (the principal is `sub` of `iss`;
// the roles are the scopes, from `scopes` or else the `scope`/`scp` claims) or IAM
// authorization's caller (a Cognito identity-pool identity when the request carries one,
// else the user ARN normalised — an assumed role is its role). Anything else — no
// authorizer context, a Lambda authorizer, a claim or ARN missing — is a *DeniedError:
// the API never serves an anonymous request.
func (p Policy) Identify(req events.APIGatewayV2HTTPRequest) (Caller, error) {
	auth := req.RequestContext.Authorizer
	switch {
	case auth == nil:
		return Caller{}, noIdentity("no authorizer context")
	case auth.JWT != nil:
		sub, iss := strings.TrimSpace(auth.JWT.Claims["sub"]), strings.TrimSpace(auth.JWT.Claims["iss"])
		if sub == "" || iss == "" {
			return Caller{}, noIdentity("the token has no sub or iss claim")
		}
		scopes := jwtScopes(auth.JWT)
		return Caller{Principal: identity.Principal{Kind: identity.JWT, ID: sub, Issuer: iss},
			Admin: slices.Contains(scopes, p.prefix()+ScopeAdmin), Decider: slices.Contains(scopes, p.prefix()+ScopeDecide)}, nil
	case auth.IAM != nil:
		iam := auth.IAM
		if id := iam.CognitoIdentity.IdentityID; id != "" {
			// every user of an identity pool signs with the pool's role: the identity tells them apart
			return Caller{Principal: identity.Principal{Kind: identity.Cognito, ID: id, Issuer: iam.CognitoIdentity.IdentityPoolID}}, nil
		}
		arn, ok := identity.NormalizeARN(iam.UserARN)
		if !ok {
			return Caller{}, noIdentity(fmt.Sprintf("the IAM caller %q is not a principal ARN", iam.UserARN))
		}
		return Caller{Principal: identity.Principal{Kind: identity.IAM, ID: arn},
			Admin: slices.Contains(p.IAMAdmins, arn), Decider: slices.Contains(p.IAMDeciders, arn)}, nil
	}
	return Caller{}, noIdentity("only IAM and JWT authorizers are accepted")
}

// jwtScopes are a token's scopes: API Gateway's `scopes` (set when the route names
// authorization scopes), else the `scope` claim (space-separated, RFC 8693) and the `scp`
// claim (a list, which payload 2.0 flattens to "[a b]").
func jwtScopes(j *events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription) []string {
	if len(j.Scopes) > 0 {
		return j.Scopes
	}
	var out []string
	for _, claim := range []string{"scope", "scp"} {
		v := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(j.Claims[claim]), "["), "]")
		out = append(out, strings.FieldsFunc(v, func(r rune) bool { return r == ' ' || r == ',' || r == '\t' })...)
	}
	return out
}

// owns reports whether c owns the session s (a session with no recorded owner is nobody's).
func (c Caller) owns(s session.SessionAccess) bool {
	return s.Owner != "" && s.Owner == c.Principal.Key()
}

// Visible reports whether c may see session s at all: an admin sees every session, an
// owner theirs, a decider the sessions parked for a decision.
func (c Caller) Visible(s session.SessionAccess) bool {
	return s.Exists && (c.Admin || c.owns(s) || c.Decider && s.Status == session.StatusAwaitingDecision)
}

// Check decides whether c may take act on session s (as Sessions.Access or the engine's
// guard read it): nil when it may; *session.SessionNotFoundError when s does not exist or
// c may not see it (the same answer: no existence leak) — except a Send to a session that
// does not exist, which is a start, open to every caller; *DeniedError (403) for an action
// on a visible session c may not take, or a decision the four-eyes rule refuses.
func (p Policy) Check(c Caller, act Action, s session.SessionAccess) error {
	if !s.Exists && act == Send {
		return nil
	}
	if !c.Visible(s) {
		return &session.SessionNotFoundError{SessionID: s.SessionID}
	}
	deny := func(why string) error {
		return &DeniedError{Code: CodeAccessDenied, SessionID: s.SessionID, Action: act, Reason: why}
	}
	switch act {
	case Read:
		return nil
	case Send, Deliver, Delete:
		if c.Admin || c.owns(s) {
			return nil
		}
		what := map[Action]string{Send: "send to", Deliver: "deliver into", Delete: "delete"}[act]
		return deny(fmt.Sprintf("Only the owner of session '%s' (or an admin) may %s it.", s.SessionID, what))
	case Decide:
		if !c.Admin && !c.Decider {
			return deny(fmt.Sprintf("Deciding session '%s' needs the decide role (JWT scope %s%s, or an IAM principal listed as a decider) or admin.",
				s.SessionID, p.prefix(), ScopeDecide))
		}
		if p.FourEyes {
			if s.Owner == "" {
				return &DeniedError{Code: CodeFourEyes, SessionID: s.SessionID, Action: act,
					Reason: fmt.Sprintf("Four-eyes rule: session '%s' has no recorded starter, so no decision on it can be shown to come from someone else.", s.SessionID)}
			}
			if c.owns(s) {
				return &DeniedError{Code: CodeFourEyes, SessionID: s.SessionID, Action: act,
					Reason: fmt.Sprintf("Four-eyes rule: the decider must not be the one who started session '%s'.", s.SessionID)}
			}
		}
		return nil
	}
	return deny(fmt.Sprintf("Unknown action %q.", act))
}

// Guard is Check as the engine's guard for c's act (session.WithGuard).
func (p Policy) Guard(c Caller, act Action) session.Guard {
	return func(s session.SessionAccess) error { return p.Check(c, act, s) }
}

// ListOwner is the owner a listing by c asking for status is restricted to: "" (every
// session the listing selects) for an admin, and for a decider asking for the decision
// queue (awaiting_decision); else c's own key — so a listing returns only what c may see,
// each through an index (the owner's, or the decision queue).
func ListOwner(c Caller, status session.Status) string {
	if c.Admin || c.Decider && status == session.StatusAwaitingDecision {
		return ""
	}
	return c.Principal.Key()
}
