package httptool

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// SigV4Signer is hosttool.Deps.Sign over an AWS configuration: it signs a request with
// Signature Version 4 (the SDK's v4 signer) for service in region ("" = cfg.Region), with
// cfg's credentials (cached as cfg.Credentials caches them; wrap a bare provider in
// aws.NewCredentialsCache). The payload's SHA-256 is signed too; an s3 request also gets
// X-Amz-Content-Sha256. It must be the last thing done to the request before it is sent.
func SigV4Signer(cfg aws.Config) func(ctx context.Context, req *http.Request, body []byte, service, region string) error {
	return sigV4Signer(cfg, time.Now)
}

func sigV4Signer(cfg aws.Config, now func() time.Time) func(ctx context.Context, req *http.Request, body []byte, service, region string) error {
	signer := v4.NewSigner()
	return func(ctx context.Context, req *http.Request, body []byte, service, region string) error {
		if region == "" {
			region = cfg.Region
		}
		if region == "" {
			return errors.New("sigv4: no region (set auth.sigv4.region or the host's AWS region)")
		}
		if cfg.Credentials == nil {
			return errors.New("sigv4: no AWS credentials")
		}
		creds, err := cfg.Credentials.Retrieve(ctx)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		hash := hex.EncodeToString(sum[:])
		if service == "s3" {
			req.Header.Set("X-Amz-Content-Sha256", hash)
		}
		return signer.SignHTTP(ctx, creds, req, hash, service, region, now())
	}
}
