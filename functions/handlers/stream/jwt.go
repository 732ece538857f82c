package stream

import (
	"context"
	"crypto"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// JWT verifies the bearer tokens of a function URL whose auth type is NONE the way an API
// Gateway JWT authorizer does for the HTTP API: an RS256/RS384/RS512 signature by a key of
// the issuer's JWKS (found through its OpenID discovery document), `iss` the configured
// issuer, `aud` — or, for an access token without one, `client_id` — one of the configured
// audiences, `exp` in the future and `nbf` (if any) past, with a minute of leeway. The
// verified claims become the request's JWT authorizer context, flattened to strings as API
// Gateway does, so access.Identify reads the same principal and scopes on both endpoints.
type JWT struct {
	Issuer   string
	Audience []string
	Client   *http.Client     // nil: a client with a 5 s timeout
	Now      func() time.Time // nil: time.Now

	mu      sync.Mutex
	keys    map[string]*rsa.PublicKey
	fetched time.Time
}

// jwksTTL is how long fetched keys are used before they are fetched again; an unknown key
// id refetches at most once per jwksRetry.
const (
	jwksTTL   = time.Hour
	jwksRetry = time.Minute
	leeway    = time.Minute
)

// TokenError is a bearer token the JWT refuses (401 UnauthorizedError).
type TokenError struct{ Reason string }

func (e *TokenError) Error() string { return "the bearer token is refused: " + e.Reason }

func (j *JWT) now() time.Time {
	if j.Now != nil {
		return j.Now()
	}
	return time.Now()
}

// Authorize verifies req's bearer token and sets req's JWT authorizer context from it.
func (j *JWT) Authorize(ctx context.Context, req *events.APIGatewayV2HTTPRequest) error {
	auth := header(*req, "authorization")
	token, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok || strings.TrimSpace(token) == "" {
		return &TokenError{Reason: "the request has no 'Authorization: Bearer <token>' header"}
	}
	claims, err := j.Verify(ctx, strings.TrimSpace(token))
	if err != nil {
		return err
	}
	req.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
		JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: claims},
	}
	return nil
}

// Verify checks token and returns its claims flattened to strings.
func (j *JWT) Verify(ctx context.Context, token string) (map[string]string, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, &TokenError{Reason: "not a JWS compact token"}
	}
	var hd struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
	}
	if err := decodeSegment(parts[0], &hd); err != nil {
		return nil, &TokenError{Reason: "malformed header"}
	}
	hash, ok := map[string]crypto.Hash{"RS256": crypto.SHA256, "RS384": crypto.SHA384, "RS512": crypto.SHA512}[hd.Alg]
	if !ok {
		return nil, &TokenError{Reason: fmt.Sprintf("algorithm %q is not accepted (RS256, RS384, RS512)", hd.Alg)}
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return nil, &TokenError{Reason: "malformed signature"}
	}
	key, err := j.key(ctx, hd.Kid)
	if err != nil {
		return nil, err
	}
	h := hash.New()
	h.Write([]byte(parts[0] + "." + parts[1]))
	if rsa.VerifyPKCS1v15(key, hash, h.Sum(nil), sig) != nil {
		return nil, &TokenError{Reason: "the signature does not verify"}
	}
	var claims map[string]any
	if err := decodeSegment(parts[1], &claims); err != nil {
		return nil, &TokenError{Reason: "malformed claims"}
	}
	if iss, _ := claims["iss"].(string); iss != j.Issuer {
		return nil, &TokenError{Reason: fmt.Sprintf("issuer %q is not this API's", iss)}
	}
	if !j.audienceOK(claims) {
		return nil, &TokenError{Reason: "the token is not for this API's audience"}
	}
	now := j.now()
	exp, ok := numeric(claims["exp"])
	if !ok || now.After(time.Unix(exp, 0).Add(leeway)) {
		return nil, &TokenError{Reason: "the token has expired (or has no exp)"}
	}
	if nbf, ok := numeric(claims["nbf"]); ok && now.Add(leeway).Before(time.Unix(nbf, 0)) {
		return nil, &TokenError{Reason: "the token is not valid yet"}
	}
	return flatten(claims), nil
}

// audienceOK: aud (a string or a list) names a configured audience, else client_id does.
func (j *JWT) audienceOK(claims map[string]any) bool {
	switch aud := claims["aud"].(type) {
	case string:
		if slices.Contains(j.Audience, aud) {
			return true
		}
	case []any:
		for _, a := range aud {
			if s, ok := a.(string); ok && slices.Contains(j.Audience, s) {
				return true
			}
		}
	}
	id, _ := claims["client_id"].(string)
	return id != "" && slices.Contains(j.Audience, id)
}

func decodeSegment(seg string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

func numeric(v any) (int64, bool) {
	f, ok := v.(float64)
	return int64(f), ok
}

// flatten renders claims as API Gateway's JWT authorizer context does: strings as they
// are, numbers and booleans as text, lists as "[a b]", objects as JSON.
func flatten(claims map[string]any) map[string]string {
	out := make(map[string]string, len(claims))
	for k, v := range claims {
		switch x := v.(type) {
		case string:
			out[k] = x
		case float64:
			out[k] = strconv.FormatFloat(x, 'f', -1, 64)
		case bool:
			out[k] = strconv.FormatBool(x)
		case []any:
			parts := make([]string, 0, len(x))
			for _, e := range x {
				parts = append(parts, fmt.Sprint(e))
			}
			out[k] = "[" + strings.Join(parts, " ") + "]"
		default:
			b, _ := json.Marshal(x)
			out[k] = string(b)
		}
	}
	return out
}

// key is the issuer's signing key kid, fetched when absent or stale.
func (j *JWT) key(ctx context.Context, kid string) (*rsa.PublicKey, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	now := j.now()
	if k, ok := j.keys[kid]; ok && now.Sub(j.fetched) < jwksTTL {
		return k, nil
	}
	if j.keys == nil || now.Sub(j.fetched) >= jwksRetry {
		keys, err := j.fetch(ctx)
		if err != nil {
			if k, ok := j.keys[kid]; ok { // a stale key beats no key while the issuer is away
				return k, nil
			}
			return nil, fmt.Errorf("fetch the signing keys of %s: %w", j.Issuer, err)
		}
		j.keys, j.fetched = keys, now
	}
	if k, ok := j.keys[kid]; ok {
		return k, nil
	}
	return nil, &TokenError{Reason: fmt.Sprintf("no signing key %q at the issuer", kid)}
}

// fetch reads the issuer's discovery document, then its JWKS.
func (j *JWT) fetch(ctx context.Context) (map[string]*rsa.PublicKey, error) {
	client := j.Client
	if client == nil {
		client = &http.Client{Timeout: 5 * time.Second}
	}
	get := func(url string, v any) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: status %d", url, resp.StatusCode)
		}
		return json.NewDecoder(http.MaxBytesReader(nil, resp.Body, 1<<20)).Decode(v)
	}
	var disc struct {
		JWKSURI string `json:"jwks_uri"`
	}
	if err := get(strings.TrimSuffix(j.Issuer, "/")+"/.well-known/openid-configuration", &disc); err != nil {
		return nil, err
	}
	if disc.JWKSURI == "" {
		return nil, errors.New("the discovery document names no jwks_uri")
	}
	var set struct {
		Keys []struct {
			Kty, Kid, N, E, Use string
		} `json:"keys"`
	}
	if err := get(disc.JWKSURI, &set); err != nil {
		return nil, err
	}
	keys := map[string]*rsa.PublicKey{}
	for _, k := range set.Keys {
		if k.Kty != "RSA" || k.Use != "" && k.Use != "sig" {
			continue
		}
		n, err1 := base64.RawURLEncoding.DecodeString(k.N)
		e, err2 := base64.RawURLEncoding.DecodeString(k.E)
		if err1 != nil || err2 != nil || len(e) > 4 {
			continue
		}
		keys[k.Kid] = &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
	}
	return keys, nil
}
