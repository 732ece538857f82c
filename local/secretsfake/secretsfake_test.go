package secretsfake

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"
	"github.com/aws/smithy-go"
)

func client(t *testing.T, f *Fake) *secretsmanager.Client {
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return secretsmanager.New(secretsmanager.Options{
		Region:       Region,
		BaseEndpoint: aws.String(srv.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""),
	})
}

// The real SDK client reads secrets by name, ARN and partial ARN, string and binary, by
// staging label and version id.
func TestGetSecretValueThroughTheSDK(t *testing.T) {
	f := New()
	c := client(t, f)
	ctx := context.Background()
	v1 := f.PutString("prod/orders-api", `{"token":"t-1"}`)
	v2 := f.PutString("prod/orders-api", `{"token":"t-2"}`)
	f.PutBinary("blob", []byte{0, 1, 2})
	for _, id := range []string{"prod/orders-api", ARN("prod/orders-api"), partialARN("prod/orders-api")} {
		out, err := c.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(id)})
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if aws.ToString(out.SecretString) != `{"token":"t-2"}` || aws.ToString(out.Name) != "prod/orders-api" || aws.ToString(out.ARN) != ARN("prod/orders-api") ||
			aws.ToString(out.VersionId) != v2 || strings.Join(out.VersionStages, ",") != "AWSCURRENT" || out.CreatedDate == nil || out.CreatedDate.IsZero() {
			t.Errorf("%s: %+v", id, out)
		}
	}
	out, err := c.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String("prod/orders-api"), VersionStage: aws.String("AWSPREVIOUS")})
	if err != nil || aws.ToString(out.SecretString) != `{"token":"t-1"}` || aws.ToString(out.VersionId) != v1 {
		t.Errorf("AWSPREVIOUS: %+v %v", out, err)
	}
	out, err = c.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String("prod/orders-api"), VersionId: aws.String(v1)})
	if err != nil || aws.ToString(out.SecretString) != `{"token":"t-1"}` {
		t.Errorf("by version id: %+v %v", out, err)
	}
	out, err = c.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String("blob")})
	if err != nil || out.SecretString != nil || string(out.SecretBinary) != "\x00\x01\x02" {
		t.Errorf("binary: %+v %v", out, err)
	}
	if n := len(f.Requests()); n != 6 || f.Requests()[0].SecretID != "prod/orders-api" || f.Requests()[0].Target != Target {
		t.Errorf("requests = %+v", f.Requests())
	}
}

// Errors decode into the SDK's types.
func TestErrorsAsTheSDKDecodesThem(t *testing.T) {
	f := New()
	c := client(t, f)
	ctx := context.Background()
	f.PutString("gone", "x")
	f.Delete("gone")
	f.PutString("locked", "x")
	f.Deny("locked")
	get := func(in *secretsmanager.GetSecretValueInput) error {
		_, err := c.GetSecretValue(ctx, in)
		return err
	}
	var nf *types.ResourceNotFoundException
	if err := get(&secretsmanager.GetSecretValueInput{SecretId: aws.String("nope")}); !errors.As(err, &nf) || !strings.Contains(err.Error(), "can't find the specified secret") {
		t.Errorf("missing: %v", err)
	}
	if err := get(&secretsmanager.GetSecretValueInput{SecretId: aws.String("gone"), VersionStage: aws.String("AWSPREVIOUS")}); err == nil {
		t.Errorf("a deleted secret was read")
	}
	var ir *types.InvalidRequestException
	if err := get(&secretsmanager.GetSecretValueInput{SecretId: aws.String("gone")}); !errors.As(err, &ir) {
		t.Errorf("deleted: %v", err)
	}
	var api smithy.APIError
	if err := get(&secretsmanager.GetSecretValueInput{SecretId: aws.String("locked")}); !errors.As(err, &api) || api.ErrorCode() != "AccessDeniedException" {
		t.Errorf("denied: %v", err)
	}
	var ip *types.InvalidParameterException
	if err := get(&secretsmanager.GetSecretValueInput{SecretId: aws.String("locked"), VersionId: aws.String("a"), VersionStage: aws.String("AWSCURRENT")}); !errors.As(err, &ip) {
		t.Errorf("both version id and stage: %v", err)
	}
	f.PutString("one", "x")
	if err := get(&secretsmanager.GetSecretValueInput{SecretId: aws.String("one"), VersionStage: aws.String("AWSPREVIOUS")}); !errors.As(err, &nf) {
		t.Errorf("no previous version: %v", err)
	}
	// unsigned and other operations
	srv := httptest.NewServer(f)
	defer srv.Close()
	for _, c := range []struct{ target, auth, code string }{
		{Target, "", "MissingAuthenticationTokenException"},
		{Target, "Bearer x", "IncompleteSignatureException"},
		{"secretsmanager.ListSecrets", "AWS4-HMAC-SHA256 Credential=AKID/20260101/us-east-1/secretsmanager/aws4_request", "UnknownOperationException"},
	} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/", strings.NewReader(`{"SecretId":"one"}`))
		req.Header.Set("X-Amz-Target", c.target)
		req.Header.Set("Content-Type", "application/x-amz-json-1.1")
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 400 || resp.Header.Get("X-Amzn-Errortype") != c.code {
			t.Errorf("%s %q: %d %s", c.target, c.auth, resp.StatusCode, resp.Header.Get("X-Amzn-Errortype"))
		}
	}
}
