package s3store

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/archmax-ai/archmax/core/store"
)

// Files is a store.Files over the objects <prefix><key> of one bucket. Keys are validated
// with store.CheckKey (store.ErrInvalidKey). Safe for concurrent use.
type Files struct {
	client   API
	bucket   string
	prefix   string
	readOnly bool
	cache    *etagCache // nil unless WithETagCache
}

var _ store.Files = (*Files)(nil)

// Option configures NewFiles.
type Option func(*Files)

// WithETagCache makes Read keep each body with its ETag for the life of the Files (one warm
// Lambda container, DESIGN.md §3 "Specs are … cached per warm container by ETag"). A cached
// key is re-read with If-None-Match: <etag>; S3's 304 serves the cached bytes without a body
// transfer, a changed object replaces the entry and a deleted one drops it. Since every hit
// is revalidated, writes by this or any other process never leave a stale read. The cache
// holds at most 32 MiB.
func WithETagCache() Option { return func(f *Files) { f.cache = newETagCache(cacheBudget) } }

// ReadOnly makes Write, WriteIfAbsent, Delete and DeleteFolder fail with store.ErrUnsupported
// (wrapped, with the key) before calling S3: the Lambda's view of authored specs.
func ReadOnly() Option { return func(f *Files) { f.readOnly = true } }

// NewFiles returns the tree of bucket's objects under prefix: "" for the whole bucket, or a
// folder such as "specs/" (a missing trailing slash is added). Key "a/b" is object
// <prefix>a/b.
func NewFiles(client API, bucket, prefix string, opts ...Option) *Files {
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	f := &Files{client: client, bucket: bucket, prefix: prefix}
	for _, opt := range opts {
		opt(f)
	}
	return f
}

// Read implements store.Files with GetObject: the bytes at key, or store.ErrNotFound.
func (f *Files) Read(ctx context.Context, key string) ([]byte, error) {
	if err := store.CheckKey(ctx, key); err != nil {
		return nil, err
	}
	in := &s3.GetObjectInput{Bucket: &f.bucket, Key: aws.String(f.prefix + key)}
	cached, hit := f.cache.get(*in.Key)
	if hit {
		in.IfNoneMatch = aws.String(cached.etag)
	}
	out, err := f.client.GetObject(ctx, in)
	if err != nil {
		if hit && httpStatus(err) == http.StatusNotModified {
			return bytes.Clone(cached.body), nil
		}
		f.cache.drop(*in.Key)
		return nil, fail("read", key, err)
	}
	defer out.Body.Close()
	buf := bytes.NewBuffer(make([]byte, 0, max(aws.ToInt64(out.ContentLength), 0)))
	if _, err := io.Copy(buf, out.Body); err != nil {
		return nil, fail("read", key, err)
	}
	data := buf.Bytes()
	if f.cache != nil && out.ETag != nil {
		f.cache.put(*in.Key, *out.ETag, bytes.Clone(data))
	}
	return data, nil
}

// Write implements store.Files with PutObject: it creates or replaces the file at key.
func (f *Files) Write(ctx context.Context, key string, data []byte) error {
	if err := f.writable(ctx, "write", key); err != nil {
		return err
	}
	if err := f.put(ctx, key, data, nil); err != nil {
		return fail("write", key, err)
	}
	return nil
}

// WriteIfAbsent implements store.Files with a conditional PutObject (If-None-Match: *): it
// reports false when S3 answers 412 because the key exists. S3's 409
// ConditionalRequestConflict (a concurrent conditional write in flight) is retried by the
// client's retryer.
func (f *Files) WriteIfAbsent(ctx context.Context, key string, data []byte) (bool, error) {
	if err := f.writable(ctx, "write", key); err != nil {
		return false, err
	}
	err := f.put(ctx, key, data, aws.String("*"), func(o *s3.Options) {
		o.Retryer = retry.AddWithErrorCodes(o.Retryer, "ConditionalRequestConflict")
	})
	switch {
	case err == nil:
		return true, nil
	case httpStatus(err) == http.StatusPreconditionFailed:
		return false, nil
	default:
		return false, fail("write", key, err)
	}
}

func (f *Files) put(ctx context.Context, key string, data []byte, ifNoneMatch *string, optFns ...func(*s3.Options)) error {
	_, err := f.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        &f.bucket,
		Key:           aws.String(f.prefix + key),
		Body:          bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data))),
		IfNoneMatch:   ifNoneMatch,
	}, optFns...)
	return err
}

// Delete implements store.Files: HeadObject (store.ErrNotFound when absent, S3's
// DeleteObject being silent on a missing key), then DeleteObject.
func (f *Files) Delete(ctx context.Context, key string) error {
	if err := f.writable(ctx, "delete", key); err != nil {
		return err
	}
	full := f.prefix + key
	if _, err := f.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &f.bucket, Key: &full}); err != nil {
		return fail("delete", key, err)
	}
	if _, err := f.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &f.bucket, Key: &full}); err != nil {
		return fail("delete", key, err)
	}
	return nil
}

// DeleteFolder removes every object under the folder (a non-empty key; a trailing slash is
// allowed), at any depth, with DeleteObjects in batches of at most 1000 keys (DeleteObject
// for a key XML cannot carry), and returns how many deletions S3 confirmed (0 for a missing
// folder): one listing pass instead of a Delete per file, for Sessions.Delete on
// <sessionId>/. The root is refused with store.ErrInvalidKey.
func (f *Files) DeleteFolder(ctx context.Context, folder string) (int, error) {
	name := strings.TrimSuffix(folder, "/")
	if err := f.writable(ctx, "delete", name); err != nil {
		return 0, err
	}
	n, err := deleteUnder(ctx, f.client, f.bucket, f.prefix+name+"/")
	if err != nil {
		return n, fail("delete", folder, err)
	}
	return n, nil
}

// List implements store.Files with ListObjectsV2 (delimiter "/", every page): the direct
// children of the folder prefix ("" = root; a trailing slash is allowed) sorted by name in
// UTF-8 byte order. A folder marker (a key ending in "/") lists as its folder, never as a
// file (BR-49).
func (f *Files) List(ctx context.Context, prefix string) ([]store.FileInfo, error) {
	dir := strings.TrimSuffix(prefix, "/")
	if dir != "" {
		if err := store.CheckKey(ctx, dir); err != nil {
			return nil, err
		}
		dir += "/"
	}
	full := f.prefix + dir
	pages := s3.NewListObjectsV2Paginator(f.client, &s3.ListObjectsV2Input{
		Bucket: &f.bucket, Prefix: &full, Delimiter: aws.String("/"), EncodingType: types.EncodingTypeUrl,
	})
	var out []store.FileInfo
	dirs := map[string]bool{}
	addDir := func(name string) {
		// "" is the listed folder's own marker or a run of slashes ("a//b"), which no
		// valid key reaches.
		if name != "" && !dirs[name] {
			dirs[name] = true
			out = append(out, store.FileInfo{Name: name, Dir: true})
		}
	}
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fail("list", prefix, err)
		}
		for _, cp := range page.CommonPrefixes {
			p, err := decodeKey(cp.Prefix)
			if err != nil {
				return nil, fail("list", prefix, err)
			}
			addDir(strings.TrimSuffix(strings.TrimPrefix(p, full), "/"))
		}
		for _, obj := range page.Contents {
			key, err := decodeKey(obj.Key)
			if err != nil {
				return nil, fail("list", prefix, err)
			}
			name := strings.TrimPrefix(key, full)
			if marker, ok := strings.CutSuffix(name, "/"); ok || name == "" {
				// A folder marker: the listed folder's own ("") or a child's (S3 groups
				// those into common prefixes; some fakes do not).
				addDir(marker)
				continue
			}
			out = append(out, store.FileInfo{Name: name, Size: aws.ToInt64(obj.Size)})
		}
	}
	slices.SortFunc(out, func(a, b store.FileInfo) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), compareBool(a.Dir, b.Dir))
	})
	return out, nil
}

// compareBool orders false before true.
func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	default:
		return -1
	}
}

// Stat implements store.Files: HeadObject for a file, else a one-key ListObjectsV2 under
// key/ for a folder (a trailing slash asks for a folder only), else store.ErrNotFound.
func (f *Files) Stat(ctx context.Context, key string) (*store.FileInfo, error) {
	name, wantDir := strings.CutSuffix(key, "/")
	if err := store.CheckKey(ctx, name); err != nil {
		return nil, err
	}
	base := path.Base(name)
	full := f.prefix + name
	if !wantDir {
		head, err := f.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &f.bucket, Key: &full})
		if err == nil {
			return &store.FileInfo{Name: base, Size: aws.ToInt64(head.ContentLength)}, nil
		}
		if !isNotFound(err) {
			return nil, fail("stat", key, err)
		}
	}
	page, err := f.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{
		Bucket: &f.bucket, Prefix: aws.String(full + "/"), MaxKeys: aws.Int32(1), EncodingType: types.EncodingTypeUrl,
	})
	if err != nil {
		return nil, fail("stat", key, err)
	}
	if len(page.Contents) == 0 {
		return nil, fmt.Errorf("stat %s: %w", key, store.ErrNotFound)
	}
	return &store.FileInfo{Name: base, Dir: true}, nil
}

// writable validates key for a write-side operation and refuses it on a read-only tree.
func (f *Files) writable(ctx context.Context, op, key string) error {
	if err := store.CheckKey(ctx, key); err != nil {
		return err
	}
	if f.readOnly {
		return fmt.Errorf("%s %s: read-only S3 tree: %w", op, key, store.ErrUnsupported)
	}
	return nil
}

// deleteUnder deletes every object whose key starts with prefix and returns how many S3
// confirmed deleted. Per listing page (at most 1000 keys) one DeleteObjects call removes the
// keys an XML request can carry; a key with a character XML 1.0 cannot (a control
// character such as U+0001, which the SDK's XML encoder would replace with U+FFFD and so
// name another key) is removed with its own DeleteObject, the key travelling in the URL.
func deleteUnder(ctx context.Context, client API, bucket, prefix string) (int, error) {
	pages := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{
		Bucket: &bucket, Prefix: &prefix, EncodingType: types.EncodingTypeUrl,
	})
	deleted := 0
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return deleted, err
		}
		var batch []types.ObjectIdentifier
		for _, obj := range page.Contents {
			key, err := decodeKey(obj.Key)
			if err != nil {
				return deleted, err
			}
			if xmlSafe(key) {
				batch = append(batch, types.ObjectIdentifier{Key: aws.String(key)})
				continue
			}
			if _, err := client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &bucket, Key: &key}); err != nil {
				return deleted, err
			}
			deleted++
		}
		n, err := deleteBatch(ctx, client, bucket, batch)
		deleted += n
		if err != nil {
			return deleted, err
		}
	}
	return deleted, nil
}

// deleteBatch removes keys (at most 1000) with one DeleteObjects call in verbose mode and
// counts the deletions S3 confirms for exactly these keys; the first per-key error is
// returned.
func deleteBatch(ctx context.Context, client API, bucket string, keys []types.ObjectIdentifier) (int, error) {
	if len(keys) == 0 {
		return 0, nil
	}
	out, err := client.DeleteObjects(ctx, &s3.DeleteObjectsInput{
		Bucket: &bucket, Delete: &types.Delete{Objects: keys, Quiet: aws.Bool(false)},
	})
	if err != nil {
		return 0, err
	}
	asked := make(map[string]bool, len(keys))
	for _, k := range keys {
		asked[*k.Key] = true
	}
	n := 0
	for _, d := range out.Deleted {
		if asked[aws.ToString(d.Key)] {
			delete(asked, aws.ToString(d.Key)) // each key counts once
			n++
		}
	}
	if len(out.Errors) > 0 {
		e := out.Errors[0]
		return n, &smithy.GenericAPIError{Code: aws.ToString(e.Code), Message: aws.ToString(e.Message)}
	}
	return n, nil
}

// decodeKey reverses the URL encoding of a key or prefix that ListObjectsV2 returns for
// EncodingType url ("+" is a space, %XX a byte): S3 encodes keys so that characters XML
// 1.0 cannot carry survive the response.
func decodeKey(s *string) (string, error) {
	return url.QueryUnescape(aws.ToString(s))
}

// xmlSafe reports whether every rune of key is a character XML 1.0 allows, so a
// DeleteObjects request body carries it unchanged.
func xmlSafe(key string) bool {
	for _, r := range key {
		switch {
		case r == '\t' || r == '\n' || r == '\r',
			r >= 0x20 && r <= 0xD7FF,
			r >= 0xE000 && r <= 0xFFFD,
			r >= 0x10000 && r <= utf8.MaxRune:
		default:
			return false
		}
	}
	return true
}
