package runner

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/logging"

	"github.com/archmax-ai/archmax/core/store"
	ddbstore "github.com/archmax-ai/archmax/core/store/dynamodb"
	s3store "github.com/archmax-ai/archmax/core/store/s3"
)

// Environment variables that default the AWS settings (the same names the Lambda reads).
const (
	EnvTable         = "ARCHMAX_TABLE"
	EnvBucket        = "ARCHMAX_BUCKET"
	EnvSessionPrefix = "ARCHMAX_SESSION_PREFIX"
)

// DefaultSessionPrefix is the key prefix of session files and blobs when neither
// AWS.SessionPrefix nor ARCHMAX_SESSION_PREFIX names one.
const DefaultSessionPrefix = "sessions/"

// AWS keeps the sessions in real AWS services ("Durable on AWS", DESIGN.md §3): the session
// log in a DynamoDB table (large values as S3 blobs under <SessionPrefix><sessionId>/_blobs/)
// and the session files under <SessionPrefix> in an S3 bucket. The authored tree still
// comes from Options.Workspace.
type AWS struct {
	Table         string // DynamoDB table of the session log (default ARCHMAX_TABLE)
	Bucket        string // S3 bucket of session files and blobs (default ARCHMAX_BUCKET)
	SessionPrefix string // key prefix, "/" appended if missing (default ARCHMAX_SESSION_PREFIX, else "sessions/")
	// Endpoint is one http(s) URL for DynamoDB and S3 (a local peer such as LocalStack). With
	// it the clients use the static credentials AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY
	// (/ AWS_SESSION_TOKEN), S3 is addressed path-style and the region defaults to
	// us-east-1. Without it the standard credential chain and endpoints are used.
	Endpoint string
	// CreateTable creates Table (store/dynamodb.CreateTable) when it does not exist.
	CreateTable bool
}

// SettingError is an AWS setting that is missing or malformed; nothing was called. The
// CLI reports it as a usage error.
type SettingError struct{ Msg string }

func (e *SettingError) Error() string { return e.Msg }

// resolve fills the defaults of a from the environment and checks it: a missing table or
// bucket, a malformed endpoint, or an endpoint without static credentials is a *SettingError.
func (a AWS) resolve() (AWS, error) {
	a.Table = firstSet(a.Table, os.Getenv(EnvTable))
	a.Bucket = firstSet(a.Bucket, os.Getenv(EnvBucket))
	a.SessionPrefix = firstSet(a.SessionPrefix, os.Getenv(EnvSessionPrefix), DefaultSessionPrefix)
	if !strings.HasSuffix(a.SessionPrefix, "/") {
		a.SessionPrefix += "/"
	}
	switch {
	case a.Table == "":
		return a, &SettingError{"--aws needs the DynamoDB table: set --table or " + EnvTable}
	case a.Bucket == "":
		return a, &SettingError{"--aws needs the S3 bucket: set --bucket or " + EnvBucket}
	case a.Endpoint == "":
		return a, nil
	}
	if u, err := url.Parse(a.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return a, &SettingError{fmt.Sprintf("--endpoint-url %q is not an http(s) URL", a.Endpoint)}
	}
	if os.Getenv("AWS_ACCESS_KEY_ID") == "" || os.Getenv("AWS_SECRET_ACCESS_KEY") == "" {
		return a, &SettingError{"--endpoint-url needs static credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"}
	}
	return a, nil
}

func firstSet(vals ...string) string {
	for _, v := range vals {
		if v = strings.TrimSpace(v); v != "" {
			return v
		}
	}
	return ""
}

// openAWS builds the DynamoDB session log and the S3 session files of a (resolved) in
// region ("" = the SDK's chain). Only with a.CreateTable does it call AWS (DescribeTable,
// then CreateTable if the table is missing).
func openAWS(ctx context.Context, a AWS, region string) (store.Log, store.Files, store.Blobs, error) {
	var loadOpts []func(*config.LoadOptions) error
	if region != "" {
		loadOpts = append(loadOpts, config.WithRegion(region))
	}
	if a.Endpoint != "" {
		loadOpts = append(loadOpts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(
			os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY"), os.Getenv("AWS_SESSION_TOKEN"))))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("load AWS configuration: %w", err)
	}
	if awsCfg.Region == "" {
		if a.Endpoint == "" {
			return nil, nil, nil, &SettingError{"--aws needs an AWS region: set --region or AWS_REGION"}
		}
		awsCfg.Region = "us-east-1"
	}
	ddb := dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) {
		if a.Endpoint != "" {
			o.BaseEndpoint = aws.String(a.Endpoint)
		}
	})
	s3c := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if a.Endpoint != "" {
			o.BaseEndpoint = aws.String(a.Endpoint)
			o.UsePathStyle = true
		}
	})
	if a.CreateTable {
		if err := ensureTable(ctx, ddb, a.Table); err != nil {
			return nil, nil, nil, err
		}
	}
	blobs := s3store.NewBlobs(s3c, a.Bucket, a.SessionPrefix)
	return ddbstore.New(ddb, a.Table, blobs), s3store.NewFiles(s3c, a.Bucket, a.SessionPrefix), blobs, nil
}

// ensureTable creates the session-log table unless it exists.
func ensureTable(ctx context.Context, client *dynamodb.Client, table string) error {
	// The SDK logs a checksum warning when it closes the unread body of the expected
	// ResourceNotFoundException; keep that noise off the user's terminal.
	quiet := func(o *dynamodb.Options) { o.Logger = logging.Nop{} }
	_, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &table}, quiet)
	var missing *types.ResourceNotFoundException
	if errors.As(err, &missing) {
		return ddbstore.CreateTable(ctx, client, table)
	}
	if err != nil {
		return fmt.Errorf("describe table %s: %w", table, err)
	}
	return nil
}
