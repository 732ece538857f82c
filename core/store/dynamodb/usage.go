package dynamodb

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/archmax-ai/archmax/core/store"
)

// The daily usage counters (BU22-4) live in the session table on keys of their own:
//
//	pk = U#<workflow>#<day>   sk = U    one workflow's usage in one UTC day:
//	    tokens    N  input + output tokens
//	    microUsd  N  cost in micro-USD
//	    ttl       N  Unix s: the day's end + store.UsageTTL (DynamoDB deletes it after)
//
// No index projects them (they carry none of the GSI keys) and no session key starts with
// "U#", so neither a session's reads nor List or ListDueParks ever meet one.
const (
	attrTokens   = "tokens"
	attrMicroUSD = "microUsd"
	skUsage      = "U"
)

func usagePK(workflow, day string) string { return "U#" + workflow + "#" + day }

var _ store.UsageCounter = (*Store)(nil)

// AddUsage implements store.UsageCounter with ONE UpdateItem: ADD tokens and microUsd (an
// atomic increment DynamoDB serialises per item; an absent item starts at 0), SET the TTL,
// and ReturnValues UPDATED_NEW — the totals after this very addition. An SDK retry of an
// addition whose response was lost adds it twice (the counter over-counts, never under).
func (s *Store) AddUsage(ctx context.Context, workflow, day string, tokens, microUSD int64) (store.UsageTotals, error) {
	if err := store.CheckUsageKey(workflow, day, tokens, microUSD); err != nil {
		return store.UsageTotals{}, err
	}
	d, _ := time.Parse(time.DateOnly, day) // checked above
	ttl := d.Add(24 * time.Hour).Add(store.UsageTTL).Unix()
	out, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 &s.table,
		Key:                       map[string]types.AttributeValue{attrPK: str(usagePK(workflow, day)), attrSK: str(skUsage)},
		UpdateExpression:          aws.String("ADD #tokens :tokens, #usd :usd SET #ttl = :ttl"),
		ExpressionAttributeNames:  map[string]string{"#tokens": attrTokens, "#usd": attrMicroUSD, "#ttl": attrTTL},
		ExpressionAttributeValues: map[string]types.AttributeValue{":tokens": num(tokens), ":usd": num(microUSD), ":ttl": num(ttl)},
		ReturnValues:              types.ReturnValueUpdatedNew,
	})
	if err != nil {
		return store.UsageTotals{}, fmt.Errorf("add usage of %s on %s: %w", workflow, day, err)
	}
	var t store.UsageTotals
	for attr, dst := range map[string]*int64{attrTokens: &t.Tokens, attrMicroUSD: &t.MicroUSD} {
		n, ok := out.Attributes[attr].(*types.AttributeValueMemberN)
		if !ok {
			return store.UsageTotals{}, fmt.Errorf("add usage of %s on %s: the answer has no %s", workflow, day, attr)
		}
		v, err := strconv.ParseInt(n.Value, 10, 64)
		if err != nil {
			return store.UsageTotals{}, fmt.Errorf("add usage of %s on %s: %s %q: %w", workflow, day, attr, n.Value, err)
		}
		*dst = v
	}
	return t, nil
}
