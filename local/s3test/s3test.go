// Package s3test gives tests an S3 to talk to: gofakes3 over HTTP (DESIGN.md §7), reached
// through the real aws-sdk-go-v2 client, and a way to copy a workspace into it.
package s3test

import (
	"bytes"
	"context"
	"io/fs"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// NewBucket starts an in-memory gofakes3 server for t's lifetime, creates bucket in it and
// returns a client (path-style, static "local" credentials, us-east-1) and the server's URL.
func NewBucket(t testing.TB, bucket string) (*s3.Client, string) {
	t.Helper()
	srv := httptest.NewServer(gofakes3.New(s3mem.New(), gofakes3.WithLogger(gofakes3.DiscardLog())).Server())
	t.Cleanup(srv.Close)
	c := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
	if _, err := c.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	return c, srv.URL
}

// Upload copies every file under dir into bucket, each at prefix + its slash-separated path
// relative to dir.
func Upload(t testing.TB, c *s3.Client, bucket, dir, prefix string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		_, err = c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket),
			Key: aws.String(prefix + filepath.ToSlash(rel)), Body: bytes.NewReader(data)})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
