package runner

import (
	"testing"
	"context"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/credentials"
	ddbstore "github.com/archmax-ai/archmax/core/store/dynamodb"
)

func TestZZProbe(t *testing.T) {
	peer := newAWSPeer(t)
	c := dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String(peer.endpoint), Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
	t.Log("proxy create")
	t.Log(ddbstore.CreateTable(context.Background(), c, "zz1"))
	t.Log("direct create")
	t.Log(ddbstore.CreateTable(context.Background(), peer.ddb, "zz2"))
}
