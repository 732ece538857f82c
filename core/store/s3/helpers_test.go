package s3store

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

const testBucket = "archmax-test"

// call is one HTTP exchange the S3 client made.
type call struct {
	op     string // get, head, put, delete, list, deleteObjects, …
	status int
	bytes  int64 // response Content-Length
}

// recorder is an http.RoundTripper that records every exchange.
type recorder struct {
	mu    sync.Mutex
	calls []call
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, call{op: opName(req), status: resp.StatusCode, bytes: resp.ContentLength})
	return resp, nil
}

func opName(req *http.Request) string {
	q := req.URL.Query()
	switch {
	case req.Method == http.MethodGet && q.Has("list-type"):
		return "list"
	case req.Method == http.MethodPost && q.Has("delete"):
		return "deleteObjects"
	default:
		return strings.ToLower(req.Method)
	}
}

// take returns the calls recorded since the last take.
func (r *recorder) take() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	calls := r.calls
	r.calls = nil
	return calls
}

// count returns how many of calls are op, and with status when status != 0.
func count(calls []call, op string, status int) int {
	n := 0
	for _, c := range calls {
		if c.op == op && (status == 0 || c.status == status) {
			n++
		}
	}
	return n
}

// newClient returns a real *s3.Client for the server at url, recording through rec.
func newClient(url string, rec *recorder) *s3.Client {
	return s3.New(s3.Options{
		Region:           "us-east-1",
		Credentials:      credentials.NewStaticCredentialsProvider("AKIDTEST", "SECRET", ""),
		BaseEndpoint:     aws.String(url),
		UsePathStyle:     true,
		RetryMaxAttempts: 1,
		HTTPClient:       &http.Client{Transport: rec},
	})
}

// newFake starts an in-memory gofakes3 server with testBucket and returns a client to it
// and the recorder of its requests (cleared after bucket creation).
func newFake(t testing.TB) (*s3.Client, *recorder) {
	t.Helper()
	srv := httptest.NewServer(gofakes3.New(s3mem.New(), gofakes3.WithLogger(gofakes3.DiscardLog())).Server())
	t.Cleanup(srv.Close)
	rec := &recorder{}
	client := newClient(srv.URL, rec)
	if _, err := client.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(testBucket)}); err != nil {
		t.Fatal(err)
	}
	rec.take()
	return client, rec
}
