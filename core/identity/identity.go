// Package identity names who made a call on a session (Issue 17): a Principal is the
// authenticated caller of an HTTP request (a JWT subject of an issuer, an IAM principal,
// a Cognito identity, the local principal of `archmax serve`), an EventBridge event source,
// or the system itself (the wake function). The engine records the principal that started a
// session as its owner and the caller of every call on the trail and in the events; the
// HTTP layer decides what each caller may do (functions/handlers/access).
//
// Everything here is pure: no I/O, no AWS SDK.
package identity

import (
	"strings"
)

// Kind is how a principal was authenticated.
type Kind string

const (
	// JWT: the `sub` claim of a token an API Gateway JWT authorizer verified; Issuer is its `iss`.
	JWT Kind = "jwt"
	// IAM: a SigV4 caller API Gateway's IAM authorization admitted, as NormalizeARN makes it.
	IAM Kind = "iam"
	// Cognito: an identity of a Cognito identity pool calling through IAM (its shared role
	// would make every user of the pool one principal); Issuer is the identity pool id.
	Cognito Kind = "cognito"
	// Event: an EventBridge event's source; Issuer is the account the event came from.
	Event Kind = "event"
	// System: the runtime itself (the wake function's timer deliveries).
	System Kind = "system"
	// Local: the one principal of `archmax serve`.
	Local Kind = "local"
)

// Principal is one caller. The zero value is no principal (IsZero).
type Principal struct {
	Kind   Kind   `json:"kind"`
	ID     string `json:"id"`
	Issuer string `json:"issuer,omitempty"`
}

// IsZero reports whether p names nobody.
func (p Principal) IsZero() bool { return p.ID == "" }

// Key is p's stable, unambiguous string form — what the store indexes a session's owner
// by and what access rules compare: "<kind>:<id>", or "<kind>:<issuer>#<id>" with an
// issuer (in which '%' and '#' are percent-encoded, so the first '#' ends it). "" for the
// zero principal.
func (p Principal) Key() string {
	if p.IsZero() {
		return ""
	}
	if p.Issuer == "" {
		return string(p.Kind) + ":" + p.ID
	}
	iss := strings.NewReplacer("%", "%25", "#", "%23").Replace(p.Issuer)
	return string(p.Kind) + ":" + iss + "#" + p.ID
}

// String is Key.
func (p Principal) String() string { return p.Key() }

// Same reports whether p and q are the same non-zero principal.
func (p Principal) Same(q Principal) bool { return !p.IsZero() && p.Key() == q.Key() }

// Wake is the principal of the wake function's deliveries (a timed park's timer trigger).
var Wake = Principal{Kind: System, ID: "wake"}

// DefaultLocal is the name of `archmax serve`'s principal when none is given.
const DefaultLocal = "local"

// LocalPrincipal is `archmax serve`'s principal called name ("" = DefaultLocal).
func LocalPrincipal(name string) Principal {
	name = strings.TrimSpace(name)
	if name == "" {
		name = DefaultLocal
	}
	return Principal{Kind: Local, ID: name}
}

// EventSource is the principal of an EventBridge event: its source, from account.
func EventSource(source, account string) Principal {
	return Principal{Kind: Event, ID: source, Issuer: account}
}

// NormalizeARN makes an IAM caller ARN stable across its sessions: an assumed role
// (arn:<partition>:sts::<account>:assumed-role/<role>/<session>) is its role,
// arn:<partition>:iam::<account>:role/<role>; a role or user ARN loses its path
// (arn:…:role/team/app → arn:…:role/app) — the ARN STS reports for an assumed role carries
// no path, and a role or user name is unique in its account whatever its path; anything
// else (the account root, a federated user) is kept as it is. ok is false for a string that
// is not an IAM or STS principal ARN.
func NormalizeARN(arn string) (string, bool) {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" || parts[1] == "" || parts[4] == "" || parts[5] == "" {
		return "", false
	}
	partition, service, account, resource := parts[1], parts[2], parts[4], parts[5]
	iam := func(res string) string { return "arn:" + partition + ":iam::" + account + ":" + res }
	kind, rest, _ := strings.Cut(resource, "/")
	switch {
	case service == "sts" && kind == "assumed-role":
		role, session, ok := strings.Cut(rest, "/")
		if !ok || role == "" || session == "" {
			return "", false
		}
		return iam("role/" + role), true
	case service == "sts" && kind == "federated-user" && rest != "":
		return arn, true
	case service == "iam" && (kind == "role" || kind == "user") && rest != "":
		name := rest[strings.LastIndexByte(rest, '/')+1:]
		if name == "" {
			return "", false
		}
		return iam(kind + "/" + name), true
	case service == "iam" && resource == "root":
		return arn, true
	}
	return "", false
}
