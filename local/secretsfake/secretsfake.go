// Package secretsfake is a local peer for AWS Secrets Manager's GetSecretValue: an
// http.Handler speaking the JSON 1.1 wire protocol of service/secretsmanager — POST / with
// X-Amz-Target: secretsmanager.GetSecretValue, Content-Type: application/x-amz-json-1.1, a
// SigV4 Authorization header for the secretsmanager service, and a body
// {"SecretId", "VersionId"?, "VersionStage"?} — holding secrets in memory. Point a real
// *secretsmanager.Client at it with BaseEndpoint; add secrets with PutString/PutBinary.
//
// Answers, as Secrets Manager gives them: 200 with {"ARN", "Name", "VersionId",
// "SecretString" | "SecretBinary" (base64), "VersionStages", "CreatedDate" (epoch seconds)};
// errors as 400 with an X-Amzn-Errortype header and a {"__type", "Message"} body, which the
// SDK decodes into its types:
//   - ResourceNotFoundException: no secret of that name or ARN, or no version with that id
//     or staging label;
//   - InvalidRequestException: a secret marked for deletion (Delete);
//   - InvalidParameterException: no SecretId, or both VersionId and VersionStage;
//   - AccessDeniedException: a secret the test denied (Deny);
//   - MissingAuthenticationTokenException / IncompleteSignatureException: no SigV4
//     Authorization header, or one not scoped to secretsmanager;
//   - UnknownOperationException: any other X-Amz-Target (only GetSecretValue is served),
//     SerializationException: a body that is not JSON.
//
// A secret is found by name, by its full ARN (…:secret:<name>-<6 characters>) or by its
// partial ARN (without the suffix). Each Put makes a new version labelled AWSCURRENT and moves
// AWSPREVIOUS to the version it replaced. One region and account (us-east-1, 123456789012).
// Every request is recorded (Requests), answered or refused.
package secretsfake

import (
	"cmp"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Region and Account of every secret.
const (
	Region  = "us-east-1"
	Account = "123456789012"
)

// Target is the X-Amz-Target of the one operation served.
const Target = "secretsmanager.GetSecretValue"

// Request is one request the fake received.
type Request struct {
	Target       string
	SecretID     string
	VersionID    string
	VersionStage string
	Status       int    // the HTTP status answered
	Error        string // the error code answered, "" on success
	Time         time.Time
}

type version struct {
	id      string
	str     *string
	bin     []byte
	created time.Time
}

type secret struct {
	name     string
	versions []*version // oldest first
	current  string     // version ids by stage
	previous string
	deleted  bool
	denied   bool
}

// Fake is the in-memory Secrets Manager. The zero value is not usable; call New. It is safe
// for concurrent use.
type Fake struct {
	mu       sync.Mutex
	secrets  map[string]*secret
	requests []Request
}

// New returns a Fake with no secrets.
func New() *Fake { return &Fake{secrets: map[string]*secret{}} }

// ARN is the full ARN of the secret name: arn:aws:secretsmanager:us-east-1:123456789012:secret:<name>-<6 characters>
// (the suffix derived from the name).
func ARN(name string) string {
	sum := sha256.Sum256([]byte(name))
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	suffix := make([]byte, 6)
	for i := range suffix {
		suffix[i] = letters[int(sum[i])%len(letters)]
	}
	return partialARN(name) + "-" + string(suffix)
}

func partialARN(name string) string {
	return "arn:aws:secretsmanager:" + Region + ":" + Account + ":secret:" + name
}

// PutString stores a new current version of secret name with a SecretString (creating the
// secret, or restoring one marked for deletion) and returns the version id.
func (f *Fake) PutString(name, value string) string { return f.put(name, &value, nil) }

// PutBinary stores a new current version with a SecretBinary.
func (f *Fake) PutBinary(name string, value []byte) string {
	return f.put(name, nil, slices.Clone(value))
}

func (f *Fake) put(name string, str *string, bin []byte) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.secrets[name]
	if s == nil {
		s = &secret{name: name}
		f.secrets[name] = s
	}
	v := &version{id: uuid.NewString(), str: str, bin: bin, created: time.Now()}
	s.versions = append(s.versions, v)
	s.previous, s.current = s.current, v.id
	s.deleted = false
	return v.id
}

// Delete marks secret name for deletion: reads of it answer InvalidRequestException.
func (f *Fake) Delete(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s := f.secrets[name]; s != nil {
		s.deleted = true
	}
}

// Deny makes reads of secret name answer AccessDeniedException (as a missing IAM grant).
func (f *Fake) Deny(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s := f.secrets[name]; s != nil {
		s.denied = true
	}
}

// Requests returns a copy of every request received, in order.
func (f *Fake) Requests() []Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.requests)
}

type input struct {
	SecretId     *string `json:"SecretId"`
	VersionId    *string `json:"VersionId"`
	VersionStage *string `json:"VersionStage"`
}

type output struct {
	ARN           string   `json:"ARN"`
	Name          string   `json:"Name"`
	VersionId     string   `json:"VersionId"`
	SecretString  *string  `json:"SecretString,omitempty"`
	SecretBinary  []byte   `json:"SecretBinary,omitempty"` // base64, as encoding/json writes []byte
	VersionStages []string `json:"VersionStages"`
	CreatedDate   float64  `json:"CreatedDate"`
}

// ServeHTTP serves the wire protocol.
func (f *Fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := Request{Target: r.Header.Get("X-Amz-Target"), Time: time.Now()}
	status, code, body := f.serve(r, &rec)
	rec.Status, rec.Error = status, code
	f.mu.Lock()
	f.requests = append(f.requests, rec)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("X-Amzn-Requestid", uuid.NewString())
	if code != "" {
		w.Header().Set("X-Amzn-Errortype", code)
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body) // a write error means the client went away
}

func errBody(code, msg string) map[string]string {
	return map[string]string{"__type": code, "Message": msg}
}

func (f *Fake) serve(r *http.Request, rec *Request) (int, string, any) {
	fail := func(code, msg string) (int, string, any) { return http.StatusBadRequest, code, errBody(code, msg) }
	if r.Method != http.MethodPost || r.URL.Path != "/" {
		return http.StatusNotFound, "UnknownOperationException", errBody("UnknownOperationException", "secretsfake serves POST / only")
	}
	auth := r.Header.Get("Authorization")
	switch {
	case auth == "":
		return fail("MissingAuthenticationTokenException", "Missing Authentication Token")
	case !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 ") || !strings.Contains(auth, "/secretsmanager/aws4_request"):
		return fail("IncompleteSignatureException", "The request signature is not a SigV4 signature for secretsmanager.")
	}
	if rec.Target != Target {
		return fail("UnknownOperationException", fmt.Sprintf("secretsfake serves %s only, not %q", Target, rec.Target))
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/x-amz-json-1.1" {
		return fail("SerializationException", fmt.Sprintf("Content-Type %q is not application/x-amz-json-1.1", ct))
	}
	var in input
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&in); err != nil {
		return fail("SerializationException", "Could not parse the request body as JSON: "+err.Error())
	}
	rec.SecretID, rec.VersionID, rec.VersionStage = deref(in.SecretId), deref(in.VersionId), deref(in.VersionStage)
	if rec.SecretID == "" {
		return fail("InvalidParameterException", "You must provide a SecretId.")
	}
	if in.VersionId != nil && in.VersionStage != nil {
		return fail("InvalidParameterException", "You can't specify both a VersionId and a VersionStage.")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.find(rec.SecretID)
	switch {
	case s == nil:
		return fail("ResourceNotFoundException", "Secrets Manager can't find the specified secret.")
	case s.denied:
		return fail("AccessDeniedException", fmt.Sprintf("User: arn:aws:iam::%s:user/test is not authorized to perform: secretsmanager:GetSecretValue on resource: %s because no identity-based policy allows the secretsmanager:GetSecretValue action", Account, rec.SecretID))
	case s.deleted:
		return fail("InvalidRequestException", "You can't perform this operation on the secret because it was marked for deletion.")
	}
	id := s.current
	switch {
	case in.VersionId != nil:
		id = *in.VersionId
	case rec.VersionStage == "AWSPREVIOUS":
		id = s.previous
	case rec.VersionStage != "" && rec.VersionStage != "AWSCURRENT":
		id = ""
	}
	var v *version
	for _, x := range s.versions {
		if x.id == id {
			v = x
		}
	}
	if v == nil {
		label := cmp.Or(rec.VersionStage, "AWSCURRENT")
		if in.VersionId != nil {
			return fail("ResourceNotFoundException", "Secrets Manager can't find the specified secret value for VersionId: "+id)
		}
		return fail("ResourceNotFoundException", "Secrets Manager can't find the specified secret value for staging label: "+label)
	}
	var stages []string
	if v.id == s.current {
		stages = append(stages, "AWSCURRENT")
	}
	if v.id == s.previous {
		stages = append(stages, "AWSPREVIOUS")
	}
	return http.StatusOK, "", output{ARN: ARN(s.name), Name: s.name, VersionId: v.id, SecretString: v.str, SecretBinary: v.bin,
		VersionStages: stages, CreatedDate: float64(v.created.UnixMilli()) / 1000}
}

// find is the secret a SecretId names: a name, a full ARN or a partial ARN. f.mu is held.
func (f *Fake) find(id string) *secret {
	if s := f.secrets[id]; s != nil {
		return s
	}
	for name, s := range f.secrets {
		if id == ARN(name) || id == partialARN(name) {
			return s
		}
	}
	return nil
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
