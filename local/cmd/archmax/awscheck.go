package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/archmax-ai/archmax/local/runner"
)

// Before a command calls Amazon Bedrock it checks what a new user most often lacks, so the
// answer comes at once, with what to do, and before any session is touched: a region, AWS
// credentials, and a default model id that the region can call (a cross-region inference
// profile serves only the regions of its geography). Nothing goes to the network but the
// credential chain's own look-ups.

// The --json codes of what the check finds.
const (
	codeAWSConfig     = "AWSConfigError"
	codeNoRegion      = "NoRegionError"
	codeNoCredentials = "NoCredentialsError"
	codeProfileRegion = "InferenceProfileRegionError"
)

// credentialsTimeout bounds the credential chain's look-ups (SSO, IMDS, a container's).
const credentialsTimeout = 20 * time.Second

// profileGeographies maps a cross-region inference profile's prefix to the region prefixes
// that may call it, and one such region.
var profileGeographies = map[string]struct {
	regions []string
	example string
}{
	"us.":   {[]string{"us-east-", "us-west-"}, "us-east-1"},
	"eu.":   {[]string{"eu-"}, "eu-west-1"},
	"apac.": {[]string{"ap-"}, "ap-southeast-1"},
}

// bedrockPreflight checks the region (flag, else the AWS configuration), the default model id
// (modelID, else ARCHMAX_MODEL, else the runtime's default) against it, and that the
// credential chain yields credentials.
func bedrockPreflight(ctx context.Context, region, modelID string) error {
	var opts []func(*config.LoadOptions) error
	if region != "" {
		opts = append(opts, config.WithRegion(region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return codedHint(codeAWSConfig, fmt.Errorf("load the AWS configuration: %w", err),
			"check AWS_PROFILE and ~/.aws/config (`aws configure list` shows what is read)")
	}
	if cfg.Region == "" {
		return usageError{codedHint(codeNoRegion, errors.New("no AWS region for Amazon Bedrock"),
			"pass --region REGION (e.g. --region us-east-1) or set AWS_REGION, in the environment or the workspace's .env, or a region in your AWS profile")}
	}
	if modelID == "" {
		modelID = os.Getenv(envModel)
	}
	if modelID == "" {
		modelID = runner.DefaultModelID
	}
	if err := checkProfileRegion(modelID, cfg.Region); err != nil {
		return usageError{err}
	}
	return checkCredentials(ctx, cfg, "Amazon Bedrock")
}

// checkCredentials asks cfg's credential chain for credentials, for what (a service).
func checkCredentials(ctx context.Context, cfg aws.Config, what string) error {
	return checkCredentialsHint(ctx, cfg, what, credentialsHint)
}

// checkCredentialsHint is checkCredentials with the hint a command gives without them.
func checkCredentialsHint(ctx context.Context, cfg aws.Config, what, hint string) error {
	cctx, cancel := context.WithTimeout(ctx, credentialsTimeout)
	defer cancel()
	if cfg.Credentials == nil {
		return codedHint(codeNoCredentials, fmt.Errorf("no AWS credentials for %s", what), hint)
	}
	if _, err := cfg.Credentials.Retrieve(cctx); err != nil {
		return codedHint(codeNoCredentials, fmt.Errorf("no AWS credentials for %s: %w", what, err), hint)
	}
	return nil
}

// awsStorePreflight checks, for --aws, that the credential chain yields credentials before the
// session store on DynamoDB and S3 is opened (a missing region is the store's own usage error;
// an --endpoint-url peer takes the static keys as they are).
func awsStorePreflight(ctx context.Context, region, endpoint string) error {
	if endpoint != "" {
		return nil
	}
	var opts []func(*config.LoadOptions) error
	if region != "" {
		opts = append(opts, config.WithRegion(region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil || cfg.Region == "" {
		return nil // said by the store's own checks
	}
	return checkCredentials(ctx, cfg, "DynamoDB and S3 (--aws)")
}

// checkProfileRegion refuses a cross-region inference profile id (us., eu., apac.) in a
// region outside its geography, which Bedrock answers only with "invalid model identifier".
func checkProfileRegion(modelID, region string) error {
	for prefix, geo := range profileGeographies {
		if !strings.HasPrefix(modelID, prefix) {
			continue
		}
		for _, r := range geo.regions {
			if strings.HasPrefix(region, r) {
				return nil
			}
		}
		return codedHint(codeProfileRegion, fmt.Errorf("the model id '%s' is a '%s' cross-region inference profile, which region %s cannot call", modelID, prefix, region),
			fmt.Sprintf("name the profile of %s's geography (the same id with its prefix, e.g. 'eu.' for eu-west-1) or the model's own id, with --model or ARCHMAX_MODEL; or pass a region the profile serves, e.g. --region %s",
				region, geo.example))
	}
	return nil
}
