package dynamodb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// CreateTable creates the session-log table (schema in the package doc: pk/sk strings,
// PAY_PER_REQUEST, GSIs byParkDue, byUpdated and byOwner with projection ALL), waits up to two
// minutes until it is ACTIVE, then enables TTL on ttl. An engine without
// UpdateTimeToLive (dynalite answers UnknownOperationException) keeps the table without
// TTL. It fails if the table already exists.
func CreateTable(ctx context.Context, client API, table string) error {
	s := func(name string) types.AttributeDefinition {
		return types.AttributeDefinition{AttributeName: aws.String(name), AttributeType: types.ScalarAttributeTypeS}
	}
	key := func(hash, rng string) []types.KeySchemaElement {
		return []types.KeySchemaElement{
			{AttributeName: aws.String(hash), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(rng), KeyType: types.KeyTypeRange},
		}
	}
	all := &types.Projection{ProjectionType: types.ProjectionTypeAll}
	_, err := client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:   &table,
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			s(attrPK), s(attrSK), s(attrParkKey), s(attrParkDue), s(attrListKey), s(attrListSort), s(attrOwnerKey),
		},
		KeySchema: key(attrPK, attrSK),
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{
			{IndexName: aws.String(indexByParkDue), KeySchema: key(attrParkKey, attrParkDue), Projection: all},
			{IndexName: aws.String(indexByUpdated), KeySchema: key(attrListKey, attrListSort), Projection: all},
			{IndexName: aws.String(indexByOwner), KeySchema: key(attrOwnerKey, attrListSort), Projection: all},
		},
	})
	if err != nil {
		return fmt.Errorf("create table %s: %w", table, err)
	}
	if err := dynamodb.NewTableExistsWaiter(client).Wait(ctx, &dynamodb.DescribeTableInput{TableName: &table}, 2*time.Minute); err != nil {
		return fmt.Errorf("create table %s: wait for ACTIVE: %w", table, err)
	}
	_, err = client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: &table,
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(attrTTL),
			Enabled:       aws.Bool(true),
		},
	})
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode() == "UnknownOperationException" {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create table %s: enable TTL: %w", table, err)
	}
	return nil
}
