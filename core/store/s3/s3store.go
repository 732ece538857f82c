// Package s3store implements the file ports of core/store over Amazon S3 (DESIGN.md §3):
// Files (authored specs under the spec prefix, session files under the session prefix,
// spec snapshots) and Blobs (content-addressed large values of a session).
//
// Folders are key prefixes only (BR-49): listings use ListObjectsV2 with delimiter "/" over
// every page, common prefixes are folders, and a zero-byte key ending in "/" (a console
// "folder marker") is no file. Every listing asks for EncodingType url and decodes Key and
// CommonPrefixes, so keys with characters XML 1.0 cannot carry (control characters such as
// U+0001) list, and delete, as themselves.
//
// No S3 error text reaches a caller (BR-49). Every failure is an error whose message names
// only the operation, the caller's key and one of the kinds store.ErrNotFound (NoSuchKey,
// NotFound), ErrAccessDenied (HTTP 403), ErrRefused (anything else) or the context's
// error; errors.Is matches the kind. The S3 cause stays reachable with errors.As (for
// example to a smithy.APIError) for operators' logs. A HEAD answer carries no error body, so
// Stat and Delete, which start with HeadObject, report a missing bucket as store.ErrNotFound.
package s3store

import (
	"context"
	"errors"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/archmax-ai/archmax/core/store"
)

// API is the subset of *s3.Client the stores call; tests may wrap a real client.
type API interface {
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	HeadObject(ctx context.Context, in *s3.HeadObjectInput, optFns ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
	DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, optFns ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
	DeleteObjects(ctx context.Context, in *s3.DeleteObjectsInput, optFns ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error)
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
}

var _ API = (*s3.Client)(nil)

var (
	// ErrAccessDenied: S3 answered 403 (AccessDenied and the like). BR-49's text for it is
	// "permission was denied".
	ErrAccessDenied = errors.New("permission was denied")
	// ErrRefused: any other S3 or transport failure. BR-49's text for it is "the store refused it".
	ErrRefused = errors.New("the store refused it")
)

// opError is a failed S3 call as callers see it: the operation, the caller's key and the
// kind; the S3 cause is unwrapped but never printed.
type opError struct {
	op, key string
	kind    error
	cause   error
}

func (e *opError) Error() string   { return "s3store: " + e.op + " " + e.key + ": " + e.kind.Error() }
func (e *opError) Unwrap() []error { return []error{e.kind, e.cause} }

// fail classifies an S3 failure of op on the caller's key.
func fail(op, key string, err error) error {
	return &opError{op: op, key: key, kind: classify(err), cause: err}
}

// classify maps an S3 or transport error to its kind (see the package comment).
func classify(err error) error {
	switch {
	case errors.Is(err, context.Canceled):
		return context.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return context.DeadlineExceeded
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode() {
		case "NoSuchKey", "NotFound":
			return store.ErrNotFound
		case "AccessDenied":
			return ErrAccessDenied
		}
	}
	if httpStatus(err) == http.StatusForbidden {
		return ErrAccessDenied
	}
	return ErrRefused
}

// httpStatus is the HTTP status of an S3 error response, or 0 when err carries none.
func httpStatus(err error) int {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// isNotFound reports whether err is S3's answer that the key does not exist.
func isNotFound(err error) bool { return classify(err) == store.ErrNotFound }
