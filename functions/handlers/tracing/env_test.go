package tracing

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Every OTEL_* setting FromEnv honours is checked before anything is built: a value that
// cannot work is a *ConfigError naming the variable, quoting the value as the user gave it
// (a URL's password masked, a header never) and saying what is accepted.
func TestCheckEnvRefusesEverySettingThatCannotWork(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.txt")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	on := map[string]string{EnvEndpoint: "http://localhost:4318"}
	with := func(k, v string) map[string]string {
		m := map[string]string{EnvEndpoint: "http://localhost:4318"}
		m[k] = v
		return m
	}
	for name, c := range map[string]struct {
		vars            map[string]string
		variable, shown string // the variable named; the value quoted ("" none)
		hidden          string // must not appear
	}{
		"ftp with a password":   {map[string]string{EnvEndpoint: "ftp://user:S3CRETPW@collector"}, EnvEndpoint, `"ftp://user:xxxxx@collector"`, "S3CRETPW"},
		"no host":               {map[string]string{EnvEndpoint: "http://"}, EnvEndpoint, `"http://"`, "/v1/traces"},
		"no scheme":             {map[string]string{EnvEndpoint: "localhost:4318"}, EnvEndpoint, `"localhost:4318"`, "/v1/traces"},
		"no scheme, a password": {map[string]string{EnvEndpoint: "user:S3CRETPW@collector:4318"}, EnvEndpoint, `"user:xxxxx@collector:4318"`, "S3CRETPW"},
		"credentials in a URL":  {map[string]string{EnvTracesEndpoint: "https://user:S3CRETPW@collector/v1/traces"}, EnvTracesEndpoint, `"https://user:xxxxx@collector/v1/traces"`, "S3CRETPW"},
		"a bad base beside a good traces one": {map[string]string{EnvTracesEndpoint: "http://localhost:4318/v1/traces", EnvEndpoint: "http://[::1"},
			EnvEndpoint, `"http://[::1"`, ""},
		"disabled 1":        {map[string]string{EnvDisabled: "1", EnvEndpoint: "http://localhost:4318"}, EnvDisabled, `"1"`, ""},
		"zipkin":            {with(EnvExporter, "zipkin"), EnvExporter, `"zipkin"`, ""},
		"grpc":              {with(EnvBaseProtocol, "grpc"), EnvBaseProtocol, `"grpc"`, ""},
		"traces http/json":  {with(EnvProtocol, "http/json"), EnvProtocol, `"http/json"`, ""},
		"sampler":           {with(EnvSampler, "bogus"), EnvSampler, `"bogus"`, ""},
		"sampler ratio":     {map[string]string{EnvEndpoint: "http://localhost:4318", EnvSampler: "parentbased_traceidratio", EnvSamplerArg: "half"}, EnvSamplerArg, `"half"`, ""},
		"ratio above one":   {map[string]string{EnvEndpoint: "http://localhost:4318", EnvSampler: "traceidratio", EnvSamplerArg: "1.5"}, EnvSamplerArg, `"1.5"`, ""},
		"timeout":           {with(EnvTimeout, "abc"), EnvTimeout, `"abc"`, ""},
		"negative timeout":  {with(EnvTracesTimeout, "-5"), EnvTracesTimeout, `"-5"`, ""},
		"compression":       {with(EnvCompression, "zstd"), EnvCompression, `"zstd"`, ""},
		"header without =":  {with(EnvHeaders, "api-key=1,Bearer S3CRETPW"), EnvHeaders, "", "S3CRETPW"},
		"header bad name":   {with(EnvTracesHeaders, "x S3CRETPW=1"), EnvTracesHeaders, "", "S3CRETPW"},
		"header bad escape": {with(EnvHeaders, "Authorization=Bearer%zzS3CRETPW"), EnvHeaders, "", "S3CRETPW"},
		"resource entry":    {with(EnvResourceAttributes, "team=desk,oops"), EnvResourceAttributes, `"team=desk,oops"`, ""},
		"resource escape":   {with(EnvResourceAttributes, "team=%zz"), EnvResourceAttributes, `"team=%zz"`, ""},
		"no CA file":        {with(EnvCertificate, filepath.Join(dir, "missing.pem")), EnvCertificate, "missing.pem", ""},
		"CA not PEM":        {with(EnvTracesCertificate, notPEM), EnvTracesCertificate, "ca.txt", ""},
		"client cert alone": {with(EnvClientCertificate, notPEM), EnvClientCertificate, "ca.txt", ""},
		"client key alone":  {with(EnvTracesClientKey, notPEM), EnvTracesClientKey, "ca.txt", ""},
		"client pair bad":   {map[string]string{EnvEndpoint: "http://localhost:4318", EnvClientCertificate: notPEM, EnvClientKey: notPEM}, EnvClientCertificate, "ca.txt", ""},
	} {
		_, err := FromEnv(context.Background(), env(c.vars), "archmax")
		var ce *ConfigError
		if !errors.As(err, &ce) {
			t.Errorf("%s: %v, want a *ConfigError", name, err)
			continue
		}
		msg := err.Error()
		if ce.Variable != c.variable || !strings.Contains(msg, c.variable) {
			t.Errorf("%s: names %s (%s), want %s", name, ce.Variable, msg, c.variable)
		}
		if c.shown != "" && !strings.Contains(msg, c.shown) {
			t.Errorf("%s: %s does not show %s", name, msg, c.shown)
		}
		if c.hidden != "" && strings.Contains(msg, c.hidden) {
			t.Errorf("%s: %s shows %q", name, msg, c.hidden)
		}
		if ce.Reason == "" {
			t.Errorf("%s: no reason", name)
		}
	}
	if _, err := FromEnv(context.Background(), env(on), "archmax"); err != nil {
		t.Errorf("the plain endpoint: %v", err)
	}
}

// Settings that can work are taken, in any documented form; without an endpoint (or with
// tracing turned off) the settings that only matter with it are not read at all.
func TestCheckEnvAcceptsWhatCanWork(t *testing.T) {
	dir := t.TempDir()
	certPEM, keyPEM := selfSigned(t)
	cert, key := filepath.Join(dir, "client.pem"), filepath.Join(dir, "client.key")
	for p, b := range map[string][]byte{cert: certPEM, key: keyPEM} {
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for name, vars := range map[string]map[string]string{
		"everything": {EnvEndpoint: "https://collector.example:4318/", EnvDisabled: "FALSE", EnvExporter: "otlp",
			EnvBaseProtocol: "http/protobuf", EnvHeaders: "Authorization=Bearer%20abc, x-team = desk", EnvTimeout: "0", EnvTracesTimeout: "+2500",
			EnvCompression: "gzip", EnvTracesCompression: "none", EnvCertificate: cert, EnvClientCertificate: cert, EnvClientKey: key,
			EnvResourceAttributes: "deployment.environment=dev, team=desk%20a", EnvSampler: "ParentBased_TraceIdRatio", EnvSamplerArg: "0.25"},
		"a sampler's ignored arg": {EnvTracesEndpoint: "http://localhost:4318/v1/traces", EnvSampler: "always_on", EnvSamplerArg: "ignored"},
	} {
		endpoint, on, err := CheckEnv(env(vars))
		if err != nil || !on || endpoint == "" {
			t.Errorf("%s: %q %v %v", name, endpoint, on, err)
		}
	}
	for name, vars := range map[string]map[string]string{
		"no endpoint":  {EnvSampler: "bogus", EnvTimeout: "abc"},
		"disabled":     {EnvDisabled: "true", EnvEndpoint: "ftp://x", EnvSampler: "bogus"},
		"exporter off": {EnvExporter: "none", EnvEndpoint: "http://", EnvHeaders: "garbage"},
	} {
		if _, on, err := CheckEnv(env(vars)); err != nil || on {
			t.Errorf("%s: on %v, %v; want off", name, on, err)
		}
	}
	if endpoint, _, _ := CheckEnv(env(map[string]string{EnvEndpoint: "http://localhost:4318/"})); endpoint != "http://localhost:4318/v1/traces" {
		t.Errorf("the base endpoint's traces URL = %s", endpoint)
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"http://user:pw@host:4318/x": "http://user:xxxxx@host:4318/x",
		"user:pw@host:4318":          "user:xxxxx@host:4318",
		"http://[::1":                "http://[::1",
		"http://token@host":          "http://token@host",
		"http://host/a@b":            "http://host/a@b",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// selfSigned is a PEM certificate and its key.
func selfSigned(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), NotAfter: time.Date(2999, 1, 1, 0, 0, 0, 0, time.UTC)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
}
