package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/archmax-ai/archmax/core/session"
	ddbstore "github.com/archmax-ai/archmax/core/store/dynamodb"
	s3store "github.com/archmax-ai/archmax/core/store/s3"
	"github.com/archmax-ai/archmax/local/dynamotest"
)

const testBucket = "archmax-local-test"

// awsPeer is one endpoint serving both DynamoDB (DynamoDB Local, reached through a reverse
// proxy for requests carrying X-Amz-Target) and S3 (in-memory gofakes3), as a local peer
// like LocalStack does. It sets the static credentials --endpoint-url needs.
type awsPeer struct {
	endpoint string
	ddb      *dynamodb.Client
	s3       *s3.Client
}

func newAWSPeer(t *testing.T) *awsPeer {
	t.Helper()
	ddbURL, err := url.Parse(dynamotest.Endpoint(t))
	if err != nil {
		t.Fatal(err)
	}
	toDynamo := httputil.NewSingleHostReverseProxy(ddbURL)
	fakeS3 := gofakes3.New(s3mem.New(), gofakes3.WithLogger(gofakes3.DiscardLog())).Server()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Amz-Target") != "" {
			toDynamo.ServeHTTP(w, r)
			return
		}
		fakeS3.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	t.Setenv("AWS_ACCESS_KEY_ID", "local")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "local")
	p := &awsPeer{
		endpoint: srv.URL,
		ddb:      dynamotest.Client(t),
		s3: s3.New(s3.Options{
			Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), UsePathStyle: true,
			Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""),
		}),
	}
	if _, err := p.s3.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(testBucket)}); err != nil {
		t.Fatal(err)
	}
	return p
}

func (p *awsPeer) object(t *testing.T, key string) string {
	t.Helper()
	out, err := p.s3.GetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String(testBucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("get s3://%s/%s: %v", testBucket, key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// options are the runner options of `archmax run --aws --endpoint-url <peer> --table
// <table> --bucket <bucket> --model-script <script>`.
func (p *awsPeer) options(table, modelScript string) Options {
	return Options{Workspace: workspace, ModelScript: modelScript,
		AWS: &AWS{Table: table, Bucket: testBucket, Endpoint: p.endpoint}}
}

// "Durable on AWS": the fixture's happy path runs end to end with the session log in
// DynamoDB and the session files in S3 under the default prefix.
func TestAWSHappyPathEndToEnd(t *testing.T) {
	peer := newAWSPeer(t)
	_, table := dynamotest.NewTable(t)
	t.Setenv(EnvSessionPrefix, "")
	out, _ := runTurnWith(t, peer.options(table, script("happy")), "s-aws-happy", dana)
	if out.Kind != session.KindCompleted || out.State != "approve" {
		t.Fatalf("outcome %s in %s: %q", out.Kind, out.State, out.Rejected)
	}
	if got := trail(out); got != "trigger:screen code:check-grants agent:approve" {
		t.Errorf("trail = %s", got)
	}
	if note := peer.object(t, "sessions/s-aws-happy/grants/east-lab.md"); !strings.Contains(note, "team: platform") {
		t.Errorf("grant note = %q", note)
	}
	log := ddbstore.New(peer.ddb, table, s3store.NewBlobs(peer.s3, testBucket, DefaultSessionPrefix))
	head, err := log.Get(t.Context(), "s-aws-happy")
	if err != nil || head.Status != "completed" || head.Messages != int64(len(out.Messages)) {
		t.Errorf("head in DynamoDB = %+v, %v", head, err)
	}
}

// Two runs on one session id, each with its own clients (as two processes): turn 2 reads
// the head turn 1 committed to DynamoDB and continues in the state it ended in.
func TestAWSTwoTurnsContinueTheSession(t *testing.T) {
	peer := newAWSPeer(t)
	_, table := dynamotest.NewTable(t)
	opts := peer.options(table, script("two-turn"))
	opts.AWS.SessionPrefix = "tenant-a" // "/" is appended
	first, _ := runTurnWith(t, opts, "aws-demo", "Hi, I need a new badge please.")
	if first.State != "clarify" || first.Turn != 1 || first.Kind != session.KindCompleted {
		t.Fatalf("turn 1: %s in %s (turn %d)", first.Kind, first.State, first.Turn)
	}
	second, _ := runTurnWith(t, opts, "aws-demo", "The print room — I'm on the finance team.")
	if second.Turn != 2 || second.State != "approve" || second.Kind != session.KindCompleted {
		t.Fatalf("turn 2: %s in %s (turn %d): %q", second.Kind, second.State, second.Turn, second.Rejected)
	}
	if got := trail(second); got != "trigger:screen code:clarify trigger:clarify reset:screen code:check-grants agent:approve" {
		t.Errorf("trail = %s", got)
	}
	list, err := peer.s3.ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: aws.String(testBucket)})
	if err != nil || len(list.Contents) == 0 {
		t.Fatalf("no objects written: %v", err)
	}
	for _, o := range list.Contents {
		if !strings.HasPrefix(*o.Key, "tenant-a/") {
			t.Errorf("object %s is outside the session prefix", *o.Key)
		}
	}
}

// --create-table makes a missing table and leaves an existing one alone.
func TestAWSCreateTableWhenMissing(t *testing.T) {
	peer := newAWSPeer(t)
	suffix := make([]byte, 6)
	rand.Read(suffix)
	table := "archmax-create-" + hex.EncodeToString(suffix)
	t.Cleanup(func() {
		_, _ = peer.ddb.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: &table})
	})
	opts := peer.options(table, script("happy"))
	opts.AWS.CreateTable = true
	out, _ := runTurnWith(t, opts, "s-created", dana)
	if out.Kind != session.KindCompleted {
		t.Fatalf("outcome %s", out.Kind)
	}
	// the second Open finds the table and does not try to create it again
	out, _ = runTurnWith(t, opts, "s-created-2", dana)
	if out.Kind != session.KindCompleted {
		t.Fatalf("second run on the existing table: %s", out.Kind)
	}
}

// Missing or malformed AWS settings are refused before any call, naming flag and variable.
func TestAWSSettingsRefused(t *testing.T) {
	t.Setenv(EnvTable, "")
	t.Setenv(EnvBucket, "")
	cases := []struct {
		name  string
		aws   AWS
		creds bool
		want  string
	}{
		{"no table", AWS{Bucket: "b"}, true, "--table or ARCHMAX_TABLE"},
		{"no bucket", AWS{Table: "t"}, true, "--bucket or ARCHMAX_BUCKET"},
		{"bad endpoint", AWS{Table: "t", Bucket: "b", Endpoint: "localhost:4566"}, true, "is not an http(s) URL"},
		{"endpoint without credentials", AWS{Table: "t", Bucket: "b", Endpoint: "http://localhost:4566"}, false, "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			key := ""
			if c.creds {
				key = "local"
			}
			t.Setenv("AWS_ACCESS_KEY_ID", key)
			t.Setenv("AWS_SECRET_ACCESS_KEY", key)
			_, err := Open(context.Background(), Options{Workspace: workspace, ModelScript: script("happy"), AWS: &c.aws})
			var se *SettingError
			if !errors.As(err, &se) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want a SettingError containing %q", err, c.want)
			}
		})
	}
}

// The environment defaults the table, bucket and prefix; flags win over it.
func TestAWSSettingsFromEnvironment(t *testing.T) {
	t.Setenv(EnvTable, "env-table")
	t.Setenv(EnvBucket, "env-bucket")
	t.Setenv(EnvSessionPrefix, "env/")
	got, err := AWS{Table: "flag-table"}.resolve()
	if err != nil {
		t.Fatal(err)
	}
	if want := (AWS{Table: "flag-table", Bucket: "env-bucket", SessionPrefix: "env/"}); got != want {
		t.Errorf("resolved %+v, want %+v", got, want)
	}
}
