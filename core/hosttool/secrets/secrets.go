// Package secrets resolves the secrets a host tool authenticates with (hostconfig.Auth):
// an AWS Secrets Manager secret — its SecretString, or one key of a JSON secret — read with
// GetSecretValue and cached for a TTL, or, for local runs, an environment variable.
// Resolver.Resolve is hosttool.Deps.Secret. No error ever carries a secret's value.
package secrets

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/archmax-ai/archmax/core/hostconfig"
)

// DefaultTTL is how long a secret read from Secrets Manager is used before it is read
// again (a rotated secret reaches the tools within it).
const DefaultTTL = 5 * time.Minute

// API is the part of the AWS SDK's *secretsmanager.Client a Resolver uses.
type API interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// Option configures a Resolver.
type Option func(*Resolver)

// WithTTL sets how long a secret is cached (d <= 0: not cached).
func WithTTL(d time.Duration) Option { return func(r *Resolver) { r.ttl = d } }

// WithClock sets the clock the cache reads (tests).
func WithClock(now func() time.Time) Option { return func(r *Resolver) { r.now = now } }

// WithEnv sets how an Env secret is looked up (default os.LookupEnv).
func WithEnv(lookup func(string) (string, bool)) Option { return func(r *Resolver) { r.env = lookup } }

// Resolver resolves secrets; safe for concurrent use. Concurrent reads of one secret share
// one GetSecretValue.
type Resolver struct {
	api API
	ttl time.Duration
	now func() time.Time
	env func(string) (string, bool)

	mu    sync.Mutex
	cache map[string]*entry
}

type entry struct {
	value   string
	has     bool
	expires time.Time
	flight  chan struct{} // closed when the running read ends; nil when none runs
	err     error         // the last read's error
}

// New returns a Resolver reading Secrets Manager through api (nil: only Env secrets resolve).
func New(api API, opts ...Option) *Resolver {
	r := &Resolver{api: api, ttl: DefaultTTL, now: time.Now, env: os.LookupEnv, cache: map[string]*entry{}}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Resolve is the value of auth's secret: the environment variable auth.Env, or the Secrets
// Manager secret auth.Secret (its SecretString; with auth.SecretKey, that key's string value
// in the secret's JSON object).
func (r *Resolver) Resolve(ctx context.Context, auth *hostconfig.Auth) (string, error) {
	switch {
	case auth == nil:
		return "", errors.New("no auth")
	case auth.Env != "":
		v, ok := r.env(auth.Env)
		if !ok || v == "" {
			return "", fmt.Errorf("the environment variable %s is not set", auth.Env)
		}
		return v, nil
	case auth.Secret == "":
		return "", errors.New("auth names no secret")
	case r.api == nil:
		return "", fmt.Errorf("secret %s: this host has no Secrets Manager client", auth.Secret)
	}
	s, err := r.read(ctx, auth.Secret)
	if err != nil {
		return "", err
	}
	if auth.SecretKey == "" {
		return s, nil
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(s), &obj) != nil {
		return "", fmt.Errorf("secret %s is not a JSON object, so it has no key %q", auth.Secret, auth.SecretKey)
	}
	var v string
	if raw, ok := obj[auth.SecretKey]; !ok || json.Unmarshal(raw, &v) != nil {
		return "", fmt.Errorf("secret %s has no string value under the key %q", auth.Secret, auth.SecretKey)
	}
	return v, nil
}

// read is the secret's string, from the cache while fresh.
func (r *Resolver) read(ctx context.Context, id string) (string, error) {
	for {
		r.mu.Lock()
		e := r.cache[id]
		if e == nil {
			e = &entry{}
			r.cache[id] = e
		}
		if e.has && r.now().Before(e.expires) {
			v := e.value
			r.mu.Unlock()
			return v, nil
		}
		if ch := e.flight; ch != nil {
			r.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				return "", ctx.Err()
			}
			r.mu.Lock()
			v, has, err := e.value, e.has, e.err
			r.mu.Unlock()
			switch {
			case err == nil && has:
				return v, nil
			case err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded):
				return "", err
			}
			continue // the other reader was cut off: read it ourselves
		}
		ch := make(chan struct{})
		e.flight = ch
		r.mu.Unlock()

		v, err := r.get(ctx, id)

		r.mu.Lock()
		e.flight = nil
		close(ch)
		e.err = err
		if err == nil {
			e.value, e.has, e.expires = v, true, r.now().Add(r.ttl)
		} else {
			e.has = false
		}
		r.mu.Unlock()
		return v, err
	}
}

// get reads the secret's current version from Secrets Manager.
func (r *Resolver) get(ctx context.Context, id string) (string, error) {
	out, err := r.api.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(id)})
	if err != nil {
		return "", fmt.Errorf("secret %s: %w", id, err)
	}
	switch {
	case out.SecretString != nil:
		return *out.SecretString, nil
	case out.SecretBinary != nil && utf8.Valid(out.SecretBinary):
		return string(out.SecretBinary), nil
	}
	return "", fmt.Errorf("secret %s has no text value", id)
}
