package secrets

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/archmax-ai/archmax/core/hostconfig"
	"github.com/archmax-ai/archmax/local/secretsfake"
)

func sdk(t *testing.T, h http.Handler) *secretsmanager.Client {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return secretsmanager.New(secretsmanager.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", "")})
}

// A secret is read through the real SDK from the wire fake, cached for the TTL (a rotation
// shows after it), a key picked out of a JSON secret; failures are not cached and never
// carry the value.
func TestResolveFromSecretsManager(t *testing.T) {
	fake := secretsfake.New()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := New(sdk(t, fake), WithClock(func() time.Time { return now }))
	ctx := context.Background()
	fake.PutString("orders/token", "s3cr3t-value-1")
	fake.PutString("orders/json", `{"apiKey":"k-123","n":7}`)

	read := func(a hostconfig.Auth) (string, error) { return r.Resolve(ctx, &a) }
	if v, err := read(hostconfig.Auth{Header: "Authorization", Secret: "orders/token"}); err != nil || v != "s3cr3t-value-1" {
		t.Fatalf("Resolve = %q, %v", v, err)
	}
	fake.PutString("orders/token", "s3cr3t-value-2") // rotated
	now = now.Add(DefaultTTL - time.Second)
	if v, _ := read(hostconfig.Auth{Secret: "orders/token"}); v != "s3cr3t-value-1" {
		t.Errorf("within the TTL: %q", v)
	}
	if n := len(fake.Requests()); n != 1 {
		t.Errorf("%d GetSecretValue within the TTL, want 1", n)
	}
	now = now.Add(2 * time.Second)
	if v, _ := read(hostconfig.Auth{Secret: secretsfake.ARN("orders/token")}); v != "s3cr3t-value-2" {
		t.Errorf("by ARN after the TTL: %q", v)
	}
	if v, err := read(hostconfig.Auth{Secret: "orders/json", SecretKey: "apiKey"}); err != nil || v != "k-123" {
		t.Errorf("a key of a JSON secret: %q %v", v, err)
	}
	for key, secret := range map[string]string{"n": "orders/json", "missing": "orders/json", "apiKey": "orders/token"} {
		_, err := read(hostconfig.Auth{Secret: secret, SecretKey: key})
		if err == nil || strings.Contains(err.Error(), "k-123") || strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("key %q of %s: %v", key, secret, err)
		}
	}
	if _, err := read(hostconfig.Auth{Secret: "later"}); err == nil || !strings.Contains(err.Error(), "ResourceNotFoundException") {
		t.Errorf("a missing secret: %v", err)
	}
	fake.PutString("later", "now-here")
	if v, err := read(hostconfig.Auth{Secret: "later"}); err != nil || v != "now-here" {
		t.Errorf("a failure is not cached: %q %v", v, err)
	}
}

// Concurrent reads of one secret share one GetSecretValue.
func TestConcurrentReadsShareOneRequest(t *testing.T) {
	fake := secretsfake.New()
	fake.PutString("s", "v")
	gate := make(chan struct{})
	r := New(sdk(t, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		<-gate
		fake.ServeHTTP(w, req)
	})))
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			v, err := r.Resolve(context.Background(), &hostconfig.Auth{Secret: "s"})
			if err == nil && v != "v" {
				err = context.Canceled
			}
			errs <- err
		})
	}
	time.Sleep(50 * time.Millisecond)
	close(gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if n := len(fake.Requests()); n != 1 {
		t.Errorf("%d requests for 8 concurrent reads", n)
	}
}

// Env secrets resolve from the environment (local runs); without a client only they do.
func TestEnvSecrets(t *testing.T) {
	env := map[string]string{"ORDERS_TOKEN": "tok"}
	r := New(nil, WithEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok }))
	if v, err := r.Resolve(context.Background(), &hostconfig.Auth{Env: "ORDERS_TOKEN"}); err != nil || v != "tok" {
		t.Errorf("env: %q %v", v, err)
	}
	if _, err := r.Resolve(context.Background(), &hostconfig.Auth{Env: "NOPE"}); err == nil || !strings.Contains(err.Error(), "NOPE is not set") {
		t.Errorf("unset env: %v", err)
	}
	if _, err := r.Resolve(context.Background(), &hostconfig.Auth{Secret: "x"}); err == nil || !strings.Contains(err.Error(), "no Secrets Manager client") {
		t.Errorf("no client: %v", err)
	}
	t.Setenv("ARCHMAX_TEST_SECRET", "from-os")
	if v, err := New(nil).Resolve(context.Background(), &hostconfig.Auth{Env: "ARCHMAX_TEST_SECRET"}); err != nil || v != "from-os" {
		t.Errorf("os env: %q %v", v, err)
	}
}
