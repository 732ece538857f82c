package main

import (
	"fmt"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"

	"github.com/archmax-ai/archmax/core/hostconfig"
)

// Retention (RD22-8…RD22-10): a root session's head carries its expiry in the table's TTL
// attribute (AttrTTL, refreshed by every commit); DynamoDB deletes the head after it, and
// the table's stream (old images) hands each such removal to the wake function, which
// deletes the rest of the session (functions/handlers/expiry).
const (
	// CtxSessionTTL is the stack parameter of the session retention, <n>d or <n>h
	// (ARCHMAX_SESSION_TTL on the functions that run engines); the deployed host file's
	// retention section replaces it. Unset: sessions are kept until deleted.
	CtxSessionTTL = "sessionTtl"
	EnvSessionTTL = "ARCHMAX_SESSION_TTL"
	// ExpiryBatchSize is how many stream records one wake invocation takes; a record that
	// fails is retried alone (bisect, batch item failures) up to ExpiryRetries times, then
	// goes to the wake function's on-failure queue.
	ExpiryBatchSize = 10
	ExpiryRetries   = 10
)

// ExpiryFilter is the event source mapping's filter: only the removals DynamoDB's TTL makes
// (userIdentity dynamodb.amazonaws.com) of session heads (sk HEAD) reach the function —
// the events' own TTL expiries, the API's deletes and every write are dropped by Lambda.
const ExpiryFilter = `{"eventName":["REMOVE"],"userIdentity":{"type":["Service"],"principalId":["dynamodb.amazonaws.com"]},"dynamodb":{"Keys":{"sk":{"S":["HEAD"]}}}}`

// sessionTTLFromContext reads CtxSessionTTL ("" = none), checked as the functions check
// ARCHMAX_SESSION_TTL so a value they would refuse stops the synth.
func sessionTTLFromContext(get func(key, def string) string) (string, error) {
	v := get(CtxSessionTTL, "")
	if v == "" {
		return "", nil
	}
	if _, err := hostconfig.ParseRetention(v); err != nil {
		return "", fmt.Errorf("context %s: %w", CtxSessionTTL, err)
	}
	return v, nil
}

// expiryConsumer maps the table's stream onto the wake function: records from the start of
// the stream's retention window (TRIM_HORIZON: none lost while the mapping is created),
// filtered by ExpiryFilter, ExpiryBatchSize at a time, a failing batch bisected and each
// failed record reported by the function, retried ExpiryRetries times and then sent to the
// wake function's on-failure queue. The wake role may read the stream and nothing else of
// it (CDK's grant would add dynamodb:ListStreams on "*").
func (s *Stack) expiryConsumer() {
	wake := s.Functions[FnWake]
	stream := s.Table.TableStreamArn()
	s.Roles[FnWake].AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"),
		Resources: &[]*string{stream},
	}))
	s.Roles[FnWake].AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("dynamodb:ListStreams"),
		Resources: &[]*string{jsii.String(*s.Table.TableArn() + "/stream/*")},
	}))
	m := awslambda.NewCfnEventSourceMapping(s.Stack, jsii.String("ExpiredSessions"), &awslambda.CfnEventSourceMappingProps{
		FunctionName:               wake.FunctionName(),
		EventSourceArn:             stream,
		StartingPosition:           jsii.String("TRIM_HORIZON"),
		BatchSize:                  jsii.Number(ExpiryBatchSize),
		BisectBatchOnFunctionError: jsii.Bool(true),
		MaximumRetryAttempts:       jsii.Number(ExpiryRetries),
		MaximumRecordAgeInSeconds:  jsii.Number((24 * time.Hour).Seconds()), // the stream keeps a record 24 hours
		FunctionResponseTypes:      jsii.Strings("ReportBatchItemFailures"),
		FilterCriteria: &awslambda.CfnEventSourceMapping_FilterCriteriaProperty{
			Filters: &[]any{&awslambda.CfnEventSourceMapping_FilterProperty{Pattern: jsii.String(ExpiryFilter)}},
		},
		DestinationConfig: &awslambda.CfnEventSourceMapping_DestinationConfigProperty{
			OnFailure: &awslambda.CfnEventSourceMapping_OnFailureProperty{Destination: s.Queues[FnWake].QueueArn()},
		},
	})
	m.Node().AddDependency(s.Roles[FnWake]) // Lambda checks the role may read the stream when the mapping is made
}
