package s3store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/archmax-ai/archmax/core/store"
)

// Blobs is a store.Blobs over S3: the blob ref of a session is the object
// <sessionPrefix><sessionId>/_blobs/<ref>, ref being the lowercase hex SHA-256 of the bytes
// (DESIGN.md §3). Session ids must be one clean key segment and refs 64 lowercase hex
// digits (store.ErrInvalidKey otherwise). Safe for concurrent use.
type Blobs struct {
	client API
	bucket string
	prefix string
}

var _ store.Blobs = (*Blobs)(nil)

// NewBlobs returns the blobs of the sessions stored under sessionPrefix ("" or a folder such
// as "sessions/"; a missing trailing slash is added) in bucket.
func NewBlobs(client API, bucket, sessionPrefix string) *Blobs {
	if sessionPrefix != "" && !strings.HasSuffix(sessionPrefix, "/") {
		sessionPrefix += "/"
	}
	return &Blobs{client: client, bucket: bucket, prefix: sessionPrefix}
}

// Put implements store.Blobs: it returns the SHA-256 ref of data, uploading it with PutObject
// only when HeadObject does not find it already (so a repeated Put transfers no bytes).
func (b *Blobs) Put(ctx context.Context, sessionID string, data []byte) (string, error) {
	if err := checkSessionID(ctx, sessionID); err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	ref := hex.EncodeToString(sum[:])
	key := b.key(sessionID, ref)
	_, err := b.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &b.bucket, Key: &key})
	if err == nil {
		return ref, nil
	}
	if !isNotFound(err) {
		return "", fail("put blob", sessionID+"/"+ref, err)
	}
	if _, err := b.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        &b.bucket,
		Key:           &key,
		Body:          bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data))),
	}); err != nil {
		return "", fail("put blob", sessionID+"/"+ref, err)
	}
	return ref, nil
}

// Get implements store.Blobs: the bytes of ref in the session, or store.ErrNotFound.
func (b *Blobs) Get(ctx context.Context, sessionID, ref string) ([]byte, error) {
	if err := checkSessionID(ctx, sessionID); err != nil {
		return nil, err
	}
	if !isRef(ref) {
		return nil, fmt.Errorf("%w %q: not a lowercase hex SHA-256", store.ErrInvalidKey, ref)
	}
	out, err := b.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &b.bucket, Key: aws.String(b.key(sessionID, ref))})
	if err != nil {
		return nil, fail("get blob", sessionID+"/"+ref, err)
	}
	defer out.Body.Close()
	data, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, fail("get blob", sessionID+"/"+ref, err)
	}
	return data, nil
}

// DeleteSession implements store.Blobs: it lists <sessionPrefix><sessionId>/_blobs/ and
// removes the keys with DeleteObjects, at most 1000 per call. No other key is touched.
func (b *Blobs) DeleteSession(ctx context.Context, sessionID string) error {
	if err := checkSessionID(ctx, sessionID); err != nil {
		return err
	}
	if _, err := deleteUnder(ctx, b.client, b.bucket, b.prefix+sessionID+"/_blobs/"); err != nil {
		return fail("delete blobs", sessionID, err)
	}
	return nil
}

func (b *Blobs) key(sessionID, ref string) string {
	return b.prefix + sessionID + "/_blobs/" + ref
}

// checkSessionID refuses a session id that is not a single clean key segment.
func checkSessionID(ctx context.Context, sessionID string) error {
	if strings.Contains(sessionID, "/") {
		return fmt.Errorf("%w %q: a session id is one segment", store.ErrInvalidKey, sessionID)
	}
	return store.CheckKey(ctx, sessionID)
}

// isRef reports whether ref is 64 lowercase hex digits.
func isRef(ref string) bool {
	if len(ref) != 2*sha256.Size {
		return false
	}
	for _, c := range []byte(ref) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
