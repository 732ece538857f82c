package s3store

import (
	"encoding/base64"
	"encoding/xml"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
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

// listResult is the ListObjectsV2 answer of listURLEncoded.
type listResult struct {
	XMLName               xml.Name `xml:"http://s3.amazonaws.com/doc/2006-03-01/ ListBucketResult"`
	Name                  string
	Prefix                string
	Delimiter             string `xml:",omitempty"`
	EncodingType          string
	KeyCount              int
	MaxKeys               int64
	IsTruncated           bool
	NextContinuationToken string `xml:",omitempty"`
	Contents              []listObject
	CommonPrefixes        []listPrefix
}

type listObject struct {
	Key  string
	Size int64
}

type listPrefix struct{ Prefix string }

// s3URLEncode encodes a key as S3 does for EncodingType url: form encoding ("+" for a
// space), slashes kept.
func s3URLEncode(s string) string { return strings.ReplaceAll(url.QueryEscape(s), "%2F", "/") }

// listURLEncoded answers a ListObjectsV2 request with encoding-type=url from backend, as S3
// does (gofakes3 ignores the parameter, and its encoding/xml turns U+0001 into U+FFFD):
// every key and prefix URL-encoded; max-keys and continuation tokens honoured.
func listURLEncoded(backend gofakes3.Backend, w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	bucket := strings.Trim(r.URL.Path, "/")
	p := &gofakes3.Prefix{HasPrefix: q.Has("prefix"), Prefix: q.Get("prefix"), HasDelimiter: q.Has("delimiter"), Delimiter: q.Get("delimiter")}
	page := gofakes3.ListBucketPage{MaxKeys: 1000}
	if mk := q.Get("max-keys"); mk != "" {
		n, err := strconv.ParseInt(mk, 10, 64)
		if err != nil {
			return err
		}
		page.MaxKeys = min(n, 1000)
	}
	if tok := q.Get("continuation-token"); tok != "" {
		marker, err := base64.URLEncoding.DecodeString(tok)
		if err != nil {
			return err
		}
		page.Marker, page.HasMarker = string(marker), true
	}
	objs, err := backend.ListBucket(bucket, p, page)
	if err != nil {
		return err
	}
	res := listResult{Name: bucket, Prefix: s3URLEncode(p.Prefix), Delimiter: s3URLEncode(p.Delimiter), EncodingType: "url",
		MaxKeys: page.MaxKeys, IsTruncated: objs.IsTruncated}
	if objs.NextMarker != "" {
		res.NextContinuationToken = base64.URLEncoding.EncodeToString([]byte(objs.NextMarker))
	}
	for _, c := range objs.Contents {
		res.Contents = append(res.Contents, listObject{Key: s3URLEncode(c.Key), Size: c.Size})
	}
	for _, cp := range objs.CommonPrefixes {
		res.CommonPrefixes = append(res.CommonPrefixes, listPrefix{Prefix: s3URLEncode(cp.Prefix)})
	}
	res.KeyCount = len(res.Contents) + len(res.CommonPrefixes)
	w.Header().Set("Content-Type", "application/xml")
	return xml.NewEncoder(w).Encode(res)
}

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
// and the recorder of its requests (cleared after bucket creation). ListObjectsV2 with
// encoding-type=url is answered by listURLEncoded.
func newFake(t testing.TB) (*s3.Client, *recorder) {
	t.Helper()
	backend := s3mem.New()
	fake := gofakes3.New(backend, gofakes3.WithLogger(gofakes3.DiscardLog())).Server()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if r.Method != http.MethodGet || q.Get("list-type") != "2" || q.Get("encoding-type") != "url" {
			fake.ServeHTTP(w, r)
			return
		}
		if err := listURLEncoded(backend, w, r); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
		}
	}))
	t.Cleanup(srv.Close)
	rec := &recorder{}
	client := newClient(srv.URL, rec)
	if _, err := client.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(testBucket)}); err != nil {
		t.Fatal(err)
	}
	rec.take()
	return client, rec
}
