package stream_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/store/fs"
	"github.com/archmax-ai/archmax/functions/handlers/stream"
)

// issuer is an OpenID issuer on loopback: its discovery document, its JWKS (one RSA key),
// and tokens signed by that key or by another.
type issuer struct {
	url        string
	key, rogue *rsa.PrivateKey
	fetches    int
}

func newIssuer(t *testing.T) *issuer {
	t.Helper()
	iss := &issuer{}
	var err error
	if iss.key, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		t.Fatal(err)
	}
	if iss.rogue, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/openid-configuration":
			_ = json.NewEncoder(w).Encode(map[string]string{"issuer": iss.url, "jwks_uri": iss.url + "/jwks"})
		case "/jwks":
			iss.fetches++
			pub := iss.key.PublicKey
			_ = json.NewEncoder(w).Encode(map[string]any{"keys": []map[string]string{{"kty": "RSA", "kid": "k1", "use": "sig", "alg": "RS256",
				"n": base64.RawURLEncoding.EncodeToString(pub.N.Bytes()), "e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(pub.E)).Bytes())}}})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	iss.url = srv.URL
	return iss
}

func (iss *issuer) token(t *testing.T, key *rsa.PrivateKey, kid string, claims map[string]any) string {
	t.Helper()
	seg := func(v any) string { b, _ := json.Marshal(v); return base64.RawURLEncoding.EncodeToString(b) }
	head := seg(map[string]string{"alg": "RS256", "kid": kid, "typ": "JWT"}) + "." + seg(claims)
	sum := sha256.Sum256([]byte(head))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	return head + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// The JWT verifier accepts what API Gateway's JWT authorizer would and nothing else, and
// hands the claims on as that authorizer's context (the principal access.Identify reads).
func TestJWTVerification(t *testing.T) {
	iss := newIssuer(t)
	now := time.Unix(1_800_000_000, 0)
	j := &stream.JWT{Issuer: iss.url, Audience: []string{"app-client", "archmax-api"}, Now: func() time.Time { return now }}
	good := map[string]any{"iss": iss.url, "sub": "user-1", "aud": "archmax-api", "exp": now.Add(time.Hour).Unix(), "scope": "openid archmax/decide"}
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for a, b := range good {
			m[a] = b
		}
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	claims, err := j.Verify(context.Background(), iss.token(t, iss.key, "k1", good))
	if err != nil || claims["sub"] != "user-1" || claims["iss"] != iss.url || claims["scope"] != "openid archmax/decide" {
		t.Fatalf("a good token: %v %v", claims, err)
	}
	// an access token with client_id and no aud (Cognito's), a list audience
	for name, c := range map[string]map[string]any{"client_id": with("aud", nil), "aud list": with("aud", []any{"other", "archmax-api"})} {
		if name == "client_id" {
			c["client_id"] = "app-client"
		}
		if _, err := j.Verify(context.Background(), iss.token(t, iss.key, "k1", c)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for name, tok := range map[string]string{
		"another key":     iss.token(t, iss.rogue, "k1", good),
		"an unknown kid":  iss.token(t, iss.key, "k9", good),
		"another issuer":  iss.token(t, iss.key, "k1", with("iss", "https://evil.example/")),
		"another aud":     iss.token(t, iss.key, "k1", with("aud", "someone-else")),
		"expired":         iss.token(t, iss.key, "k1", with("exp", now.Add(-2*time.Minute).Unix())),
		"no exp":          iss.token(t, iss.key, "k1", with("exp", nil)),
		"not yet":         iss.token(t, iss.key, "k1", with("nbf", now.Add(5*time.Minute).Unix())),
		"alg none":        base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none"}`)) + "." + strings.Split(iss.token(t, iss.key, "k1", good), ".")[1] + ".",
		"garbage":         "not.a.token",
		"two segments":    "a.b",
		"tampered claims": strings.Split(iss.token(t, iss.key, "k1", good), ".")[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(`{"iss":"`+iss.url+`","sub":"admin","aud":"archmax-api","exp":1900000000}`)) + "." + strings.Split(iss.token(t, iss.key, "k1", good), ".")[2],
	} {
		if _, err := j.Verify(context.Background(), tok); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if iss.fetches > 2 {
		t.Errorf("the JWKS was fetched %d times: an unknown kid refetches at most once a minute", iss.fetches)
	}
}

// With JWT settings the streaming function answers 401 before anything without a valid
// bearer token — whatever authorizer context the request itself claims — and serves the
// token's subject otherwise.
func TestFunctionWithJWT(t *testing.T) {
	iss := newIssuer(t)
	dir := t.TempDir()
	log, err := fs.Open(filepath.Join(dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := fs.OpenFiles(filepath.Join(dir, "files"))
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, log, files)
	close(f.model.gate)
	go func() {
		for range f.model.entered {
		}
	}()
	jwt := &stream.JWT{Issuer: iss.url, Audience: []string{"archmax-api"}}
	fn := stream.Function(stream.New(f.api, nil, stream.WithPoll(5*time.Millisecond)), nil, jwt)
	f.arn += "-jwt"
	f.register(fn)

	// signed by IAM (the URL would be NONE: that context is not Lambda's), no token
	if s := f.invoke(urlRequest("POST", "/v1/workflows/desk/sessions", "", `{"message":"hi"}`, owner, nil)); s.status != http.StatusUnauthorized ||
		!strings.Contains(string(s.body), stream.CodeUnauthorized) {
		t.Fatalf("no token: %d %s", s.status, s.body)
	}
	bad := iss.token(t, iss.rogue, "k1", map[string]any{"iss": iss.url, "sub": "mallory", "aud": "archmax-api", "exp": time.Now().Add(time.Hour).Unix()})
	if s := f.invoke(urlRequest("POST", "/v1/workflows/desk/sessions", "", `{"message":"hi"}`, owner, map[string]string{"authorization": "Bearer " + bad})); s.status != http.StatusUnauthorized {
		t.Fatalf("a forged token: %d %s", s.status, s.body)
	}
	tok := iss.token(t, iss.key, "k1", map[string]any{"iss": iss.url, "sub": "user-1", "aud": "archmax-api", "exp": time.Now().Add(time.Hour).Unix()})
	s := f.invoke(urlRequest("POST", "/v1/workflows/desk/sessions", "", `{"message":"hi"}`, owner, map[string]string{"authorization": "Bearer " + tok}))
	if s.status != http.StatusOK {
		t.Fatalf("a good token: %d %s", s.status, s.body)
	}
	all := s.rest()
	var advance struct {
		By struct{ Kind, ID, Issuer string } `json:"by"`
	}
	for _, fr := range all {
		if fr.Event == "advance" {
			_ = json.Unmarshal(fr.Data, &advance)
			break
		}
	}
	if advance.By.Kind != "jwt" || advance.By.ID != "user-1" || advance.By.Issuer != iss.url {
		t.Errorf("the call was made by %+v, want the token's subject", advance.By)
	}
	if sum := outcomeOf(t, all[len(all)-1]); sum.Kind != "completed" {
		t.Errorf("outcome %+v", sum)
	}
}
