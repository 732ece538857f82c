// Package dynamotest gives tests a DynamoDB to talk to: the engine started by
// local/scripts/dynamodb-local.sh (DynamoDB Local, DESIGN.md §7) or any endpoint named by
// DYNAMODB_ENDPOINT. Without one, tests that need it are skipped, not failed.
package dynamotest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	ddbstore "github.com/archmax-ai/archmax/core/store/dynamodb"
)

// EndpointEnv names the environment variable holding the engine's URL.
const EndpointEnv = "DYNAMODB_ENDPOINT"

// Endpoint returns $DYNAMODB_ENDPOINT, or skips t when it is unset.
func Endpoint(t testing.TB) string {
	t.Helper()
	ep := os.Getenv(EndpointEnv)
	if ep == "" {
		t.Skip("DynamoDB Local not running: run `make test` or set " + EndpointEnv)
	}
	return ep
}

// Client returns a client for the engine at Endpoint(t): static credentials, region
// us-east-1, at most 3 attempts per request.
func Client(t testing.TB) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:           "us-east-1",
		BaseEndpoint:     aws.String(Endpoint(t)),
		Credentials:      credentials.NewStaticCredentialsProvider("local", "local", ""),
		RetryMaxAttempts: 3,
	})
}

// NewTable creates a uniquely named session-log table (store/dynamodb.CreateTable) on the
// engine at Endpoint(t) and deletes it when t ends. It returns the client and the name.
func NewTable(t testing.TB) (*dynamodb.Client, string) {
	t.Helper()
	client := Client(t)
	suffix := make([]byte, 6)
	rand.Read(suffix)
	table := "archmax-test-" + hex.EncodeToString(suffix)
	if err := ddbstore.CreateTable(t.Context(), client, table); err != nil {
		t.Fatalf("create table %s: %v", table, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: &table}); err != nil {
			t.Errorf("delete table %s: %v", table, err)
		}
	})
	return client, table
}
