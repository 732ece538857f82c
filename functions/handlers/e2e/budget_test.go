package e2e

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/archmax-ai/archmax/core/hostconfig"
	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/store"
	"github.com/archmax-ai/archmax/functions/handlers/assembly"
)

// A workflow's daily budget across sessions through the turn Lambda, on DynamoDB Local and
// gofakes3 (BU22-4, BU22-5): A spends 610 of 1000 tokens; B's first step reaches 1120 and B
// is rejected before its next model call, budget_exceeded on its summary; a third start is
// refused with 429 budget_exceeded before any session exists; the day's counter is one
// item on its own key with a TTL, holding the exact sum.
func TestDailyBudgetAcrossSessionsOnDynamoDB(t *testing.T) {
	s := newStack(t, "budget.model.yaml")
	clk := s.virtualTime()
	s3c := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(s.env[assembly.EnvS3Endpoint]), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
	if _, err := s3c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("specs/" + hostconfig.File),
		Body: strings.NewReader("budgets:\n  workflows:\n    parcel:\n      daily: { tokens: 1000 }\n")}); err != nil {
		t.Fatal(err)
	}
	l := s.boot(t)
	day := store.UsageDay(clk.Now())

	a := call(t, l.turn, startReq("parcel", `{"message":"Track parcel 1, please."}`))
	if a.status != http.StatusOK || a.body["kind"] != "completed" {
		t.Fatalf("A: %d %v", a.status, a.body)
	}
	b := call(t, l.turn, startReq("parcel", `{"message":"Track parcel 2, please."}`))
	idB, _ := b.body["sessionId"].(string)
	if b.status != http.StatusOK || b.body["kind"] != "rejected" || !strings.Contains(b.body["rejected"].(string), "reached its daily budget for "+day) {
		t.Fatalf("B: %d %v", b.status, b.body)
	}
	sum, err := s.sessions.Get(context.Background(), idB)
	if err != nil || sum.LastError == nil || sum.LastError.Code != session.BudgetExceededCode || sum.Status != session.StatusRejected {
		t.Fatalf("B's summary: %+v %v", sum, err)
	}
	if v := sum.Variables["parcel"]; v.Value != "2" {
		t.Errorf("the step that reached the budget is not committed: parcel = %v", v.Value)
	}

	c := call(t, l.turn, startReq("parcel", `{"message":"Track parcel 3, please."}`))
	if c.status != http.StatusTooManyRequests || c.code() != "budget_exceeded" || c.detail("kind") != "daily" || c.detail("unit") != "tokens" ||
		c.detail("scope") != "workflow" || c.detail("day") != day || c.detail("limit") != 1000.0 || c.detail("used") != 1120.0 ||
		c.detail("field") != "budgets.workflows.parcel.daily.tokens" {
		t.Fatalf("C: %d %v", c.status, c.body)
	}
	if heads, _, err := s.log.List(context.Background(), store.ListOptions{}); err != nil || len(heads) != 2 {
		t.Errorf("sessions after the refusal: %d %v", len(heads), err)
	}

	out, err := s.ddb.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: &s.table, ConsistentRead: aws.Bool(true),
		Key: map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "U#parcel#" + day}, "sk": &ddbtypes.AttributeValueMemberS{Value: "U"}}})
	if err != nil || out.Item == nil {
		t.Fatalf("the counter item: %v", err)
	}
	tok, _ := out.Item["tokens"].(*ddbtypes.AttributeValueMemberN)
	ttl, _ := out.Item["ttl"].(*ddbtypes.AttributeValueMemberN)
	if tok == nil || tok.Value != "1120" || ttl == nil {
		t.Fatalf("the counter item: %v", out.Item)
	}
	if at, _ := strconv.ParseInt(ttl.Value, 10, 64); at <= clk.Now().Unix() {
		t.Errorf("the counter's ttl %d is not in the future", at)
	}
}

// Hostile: eight sessions of one workflow start at once on two turn Lambdas (each its own
// assembly, sharing only DynamoDB and S3), every step 220 tokens, the day's budget 2000. The
// guarantee (BU22-7): every session stops on the daily budget, and the day's counter — the
// exact sum of what the sessions spent — ends at the limit or over it by less than one step
// per session.
func TestDailyBudgetConcurrentSessionsOnDynamoDB(t *testing.T) {
	const sessions, limit, stepTokens = 8, 2000, 220
	s := newStack(t, "budget-rush.model.yaml")
	clk := s.virtualTime()
	s3c := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(s.env[assembly.EnvS3Endpoint]), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
	if _, err := s3c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("specs/" + hostconfig.File),
		Body: strings.NewReader("budgets:\n  workflows:\n    parcel:\n      daily: { tokens: " + strconv.Itoa(limit) + " }\n")}); err != nil {
		t.Fatal(err)
	}
	one, two := s.boot(t), s.boot(t)
	answers := make([]answer, sessions)
	var wg sync.WaitGroup
	for i := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := one
			if i%2 == 1 {
				l = two
			}
			answers[i] = call(t, l.turn, startReq("parcel", `{"message":"Track it."}`))
		}()
	}
	wg.Wait()
	var spent int64
	for i, a := range answers {
		r, _ := a.body["rejected"].(string)
		if a.status != http.StatusOK || a.body["kind"] != "rejected" || !strings.Contains(r, "daily budget") {
			t.Errorf("session %d: %d %v", i, a.status, a.body)
			continue
		}
		u, _ := a.body["usage"].(map[string]any)
		in, _ := u["inputTokens"].(float64)
		out, _ := u["outputTokens"].(float64)
		spent += int64(in + out)
	}
	tot, err := s.log.AddUsage(context.Background(), "parcel", store.UsageDay(clk.Now()), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if tot.Tokens != spent || spent%stepTokens != 0 {
		t.Errorf("counter %d tokens, the sessions spent %d", tot.Tokens, spent)
	}
	t.Logf("the day: %d tokens of %d, %d steps", tot.Tokens, limit, tot.Tokens/stepTokens)
	if tot.Tokens < limit || tot.Tokens >= limit+sessions*stepTokens {
		t.Errorf("the day's total %d: want at least %d and under %d + %d sessions × %d", tot.Tokens, limit, limit, sessions, stepTokens)
	}
}
