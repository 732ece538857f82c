package s3store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/archmax-ai/archmax/core/store"
	"github.com/archmax-ai/archmax/core/store/storetest"
)

func TestFilesConformance(t *testing.T) {
	for _, tc := range []struct {
		name   string
		prefix string
		opts   []Option
	}{
		{"NoPrefix", "", nil},
		{"SessionPrefix", "sessions/", nil},
		{"SpecPrefixETagCache", "specs/", []Option{WithETagCache()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			storetest.TestFiles(t, func(t *testing.T) store.Files {
				client, _ := newFake(t)
				return NewFiles(client, testBucket, tc.prefix, tc.opts...)
			})
		})
	}
}

func TestFilesKeysLiveUnderThePrefix(t *testing.T) {
	client, _ := newFake(t)
	ctx := t.Context()
	specs := NewFiles(client, testBucket, "specs") // the missing slash is added
	if err := specs.Write(ctx, "workflows/w/workflow.yaml", []byte("name: w")); err != nil {
		t.Fatal(err)
	}
	root := NewFiles(client, testBucket, "")
	got, err := root.Read(ctx, "specs/workflows/w/workflow.yaml")
	if err != nil || string(got) != "name: w" {
		t.Fatalf("raw object = %q, %v; want the file under specs/", got, err)
	}
	sessions := NewFiles(client, testBucket, "sessions/")
	if entries, err := sessions.List(ctx, ""); err != nil || len(entries) != 0 {
		t.Fatalf("another prefix lists %+v, %v; want nothing", entries, err)
	}
}

// DESIGN.md §3: specs are cached per warm container by ETag.
func TestETagCacheServesNotModifiedWithoutBody(t *testing.T) {
	client, rec := newFake(t)
	ctx := t.Context()
	spec := bytes.Repeat([]byte("steps: []\n"), 1000)
	writer := NewFiles(client, testBucket, "specs/")
	if err := writer.Write(ctx, "workflows/w/workflow.yaml", spec); err != nil {
		t.Fatal(err)
	}
	cached := NewFiles(client, testBucket, "specs/", WithETagCache())
	rec.take()

	for i := range 3 {
		got, err := cached.Read(ctx, "workflows/w/workflow.yaml")
		if err != nil || !bytes.Equal(got, spec) {
			t.Fatalf("read %d = %d bytes, %v; want the spec", i, len(got), err)
		}
		got[0] = 'X' // the caller's copy; the cache must not see it
	}
	calls := rec.take()
	if n200, n304 := count(calls, "get", http.StatusOK), count(calls, "get", http.StatusNotModified); n200 != 1 || n304 != 2 {
		t.Fatalf("GETs: %d × 200 and %d × 304, want 1 and 2 (%+v)", n200, n304, calls)
	}
	for _, c := range calls {
		if c.status == http.StatusNotModified && c.bytes > 0 {
			t.Fatalf("a 304 carried %d body bytes", c.bytes)
		}
	}

	// Another writer (another Lambda) replaces the object: the next read sees it.
	changed := []byte("steps: [changed]\n")
	if err := writer.Write(ctx, "workflows/w/workflow.yaml", changed); err != nil {
		t.Fatal(err)
	}
	rec.take()
	if got, err := cached.Read(ctx, "workflows/w/workflow.yaml"); err != nil || !bytes.Equal(got, changed) {
		t.Fatalf("read after overwrite = %q, %v; want %q", got, err, changed)
	}
	if calls := rec.take(); count(calls, "get", http.StatusOK) != 1 {
		t.Fatalf("read after overwrite: %+v, want one 200 GET", calls)
	}
	if got, err := cached.Read(ctx, "workflows/w/workflow.yaml"); err != nil || !bytes.Equal(got, changed) {
		t.Fatalf("cached read after overwrite = %q, %v; want %q", got, err, changed)
	}
	if calls := rec.take(); count(calls, "get", http.StatusNotModified) != 1 {
		t.Fatalf("second read after overwrite: %+v, want one 304 GET", calls)
	}

	// Deleted by another writer: not found, never the stale cached bytes.
	if err := writer.Delete(ctx, "workflows/w/workflow.yaml"); err != nil {
		t.Fatal(err)
	}
	if _, err := cached.Read(ctx, "workflows/w/workflow.yaml"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("read after delete: err = %v, want ErrNotFound", err)
	}
}

func TestETagCacheStaysWithinBudget(t *testing.T) {
	c := newETagCache(10)
	c.put("a", `"1"`, []byte("aaaa"))
	c.put("b", `"2"`, []byte("bbbb"))
	c.put("c", `"3"`, []byte("cccc")) // evicts a or b
	c.put("huge", `"4"`, make([]byte, 11))
	if c.size > 10 || len(c.entries) != 2 {
		t.Fatalf("cache holds %d bytes in %d entries, want ≤10 bytes in 2", c.size, len(c.entries))
	}
	if _, ok := c.get("c"); !ok {
		t.Fatal("the newest entry was evicted")
	}
	if _, ok := c.get("huge"); ok {
		t.Fatal("a body over the budget was cached")
	}
	c.put("c", `"5"`, []byte("cc")) // a replacement frees the old body's bytes
	c.drop("c")
	if c.size != len(c.entries["a"].body)+len(c.entries["b"].body) || len(c.entries) != 1 {
		t.Fatalf("after replace and drop: %d bytes in %d entries", c.size, len(c.entries))
	}
}

func TestReadOnlyRefusesWritesWithoutCallingS3(t *testing.T) {
	client, rec := newFake(t)
	ctx := t.Context()
	if err := NewFiles(client, testBucket, "specs/").Write(ctx, "AGENTS.md", []byte("# agents")); err != nil {
		t.Fatal(err)
	}
	ro := NewFiles(client, testBucket, "specs/", ReadOnly())
	rec.take()
	checks := map[string]error{
		"Write":  ro.Write(ctx, "AGENTS.md", []byte("x")),
		"Delete": ro.Delete(ctx, "AGENTS.md"),
	}
	_, checks["WriteIfAbsent"] = ro.WriteIfAbsent(ctx, "new.md", []byte("x"))
	_, checks["DeleteFolder"] = ro.DeleteFolder(ctx, "workflows")
	for op, err := range checks {
		if !errors.Is(err, store.ErrUnsupported) {
			t.Errorf("%s: err = %v, want ErrUnsupported", op, err)
		}
	}
	if calls := rec.take(); len(calls) != 0 {
		t.Fatalf("refused writes made S3 calls: %+v", calls)
	}
	if got, err := ro.Read(ctx, "AGENTS.md"); err != nil || string(got) != "# agents" {
		t.Fatalf("read-only Read = %q, %v", got, err)
	}
}

// BR-49: a zero-byte key ending in "/" is no file; its folder shows only through its keys.
func TestFolderMarkersAreNotFiles(t *testing.T) {
	client, _ := newFake(t)
	ctx := t.Context()
	for _, key := range []string{"s1/", "s1/empty/", "s1/sub/", "s1/sub/x.txt"} {
		if _, err := client.PutObject(ctx, &s3.PutObjectInput{
			Bucket: aws.String(testBucket), Key: aws.String(key), Body: strings.NewReader(strings.Repeat("x", strings.Count(key, ".")*3)),
		}); err != nil {
			t.Fatal(err)
		}
	}
	f := NewFiles(client, testBucket, "")
	for _, tc := range []struct {
		prefix string
		want   []store.FileInfo
	}{
		{"", []store.FileInfo{{Name: "s1", Dir: true}}},
		{"s1", []store.FileInfo{{Name: "empty", Dir: true}, {Name: "sub", Dir: true}}},
		{"s1/empty", nil},
		{"s1/sub", []store.FileInfo{{Name: "x.txt", Size: 3}}},
	} {
		got, err := f.List(ctx, tc.prefix)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("List(%q) = %+v, %v; want %+v", tc.prefix, got, err, tc.want)
		}
	}
	if info, err := f.Stat(ctx, "s1/empty"); err != nil || !info.Dir {
		t.Errorf("Stat(s1/empty) = %+v, %v; want the folder its parent lists", info, err)
	}
	if _, err := f.Read(ctx, "s1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Read(s1) of a marker-only folder: err = %v, want ErrNotFound", err)
	}
}

func TestListPagesBeyondOneThousandKeys(t *testing.T) {
	client, rec := newFake(t)
	ctx := t.Context()
	f := NewFiles(client, testBucket, "sessions/")
	const n = 1003
	var want []string
	for i := range n {
		want = append(want, fmt.Sprintf("f%04d.txt", i))
	}
	want = append(want, "sub") // a folder among the files
	writeAll(t, f, append(namesUnder("big/", want[:n]), "big/sub/deep.txt"))
	rec.take()

	got, err := f.List(ctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(got))
	for i, e := range got {
		names[i] = e.Name
		if e.Dir != (e.Name == "sub") {
			t.Fatalf("entry %+v: wrong kind", e)
		}
	}
	if !slices.Equal(names, want) {
		t.Fatalf("List(big) returned %d entries, want %d in name order", len(names), len(want))
	}
	if pages := count(rec.take(), "list", http.StatusOK); pages < 2 {
		t.Fatalf("List used %d ListObjectsV2 page(s), want every page (≥2)", pages)
	}
}

func TestDeleteFolderRemovesOnlyThatFolder(t *testing.T) {
	client, rec := newFake(t)
	ctx := t.Context()
	f := NewFiles(client, testBucket, "sessions/")
	var under []string
	for i := range 1001 {
		under = append(under, fmt.Sprintf("s1/scratchpad/n%04d", i))
	}
	under = append(under, "s1/trigger.json", "s1/_blobs/abc", "s1/a/b/c/d.md")
	writeAll(t, f, append(slices.Clone(under), "s10/x", "s1.txt", "s2/s1/y"))
	rec.take()

	n, err := f.DeleteFolder(ctx, "s1/")
	if err != nil || n != len(under) {
		t.Fatalf("DeleteFolder(s1/) = %d, %v; want %d", n, err, len(under))
	}
	if batches := count(rec.take(), "deleteObjects", http.StatusOK); batches != 2 {
		t.Fatalf("DeleteObjects calls = %d, want 2 (≤1000 keys each)", batches)
	}
	root, err := f.List(ctx, "")
	if err != nil || fmt.Sprint(root) != fmt.Sprint([]store.FileInfo{{Name: "s1.txt", Size: 6}, {Name: "s10", Dir: true}, {Name: "s2", Dir: true}}) {
		t.Fatalf("root after DeleteFolder = %+v, %v", root, err)
	}
	if n, err := f.DeleteFolder(ctx, "s1"); err != nil || n != 0 {
		t.Fatalf("DeleteFolder of a missing folder = %d, %v; want 0, nil", n, err)
	}
	for _, bad := range []string{"", "/", "../x", "a//b"} {
		if _, err := f.DeleteFolder(ctx, bad); !errors.Is(err, store.ErrInvalidKey) {
			t.Fatalf("DeleteFolder(%q): err = %v, want ErrInvalidKey", bad, err)
		}
	}
}

func TestKeysWithSpacesUnicodeAndDotfiles(t *testing.T) {
	client, _ := newFake(t)
	ctx := t.Context()
	f := NewFiles(client, testBucket, "sessions/")
	keys := []string{"a b/c d.txt", "ünï/文件 名.md", ".hidden/.env", "x/.dot", "plus+and%25&=?#.txt", "emoji/🚀.json"}
	for _, key := range keys {
		data := []byte("content of " + key)
		if err := f.Write(ctx, key, data); err != nil {
			t.Fatalf("Write(%q): %v", key, err)
		}
		if got, err := f.Read(ctx, key); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("Read(%q) = %q, %v", key, got, err)
		}
		info, err := f.Stat(ctx, key)
		if err != nil || info.Size != int64(len(data)) || info.Dir {
			t.Fatalf("Stat(%q) = %+v, %v", key, info, err)
		}
		dir, name := "", key
		if i := strings.LastIndexByte(key, '/'); i >= 0 {
			dir, name = key[:i], key[i+1:]
		}
		entries, err := f.List(ctx, dir)
		if err != nil || !slices.ContainsFunc(entries, func(e store.FileInfo) bool { return e.Name == name && !e.Dir }) {
			t.Fatalf("List(%q) = %+v, %v; want %q", dir, entries, err, name)
		}
	}
	for _, key := range keys {
		if err := f.Delete(ctx, key); err != nil {
			t.Fatalf("Delete(%q): %v", key, err)
		}
	}
	if entries, err := f.List(ctx, ""); err != nil || len(entries) != 0 {
		t.Fatalf("after deleting every key: %+v, %v", entries, err)
	}
}

// BR-49: no S3 error text reaches a caller; AccessDenied and the rest are classified.
func TestErrorsAreClassifiedWithoutS3Text(t *testing.T) {
	const secret = "internal S3 detail 7f3a"
	respond := func(status int, code string) *s3.Client {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(status)
			fmt.Fprintf(w, "<Error><Code>%s</Code><Message>%s</Message></Error>", code, secret)
		}))
		t.Cleanup(srv.Close)
		return newClient(srv.URL, &recorder{})
	}
	fake, _ := newFake(t)
	for _, tc := range []struct {
		name   string
		client *s3.Client
		bucket string
		want   error
	}{
		{"AccessDenied", respond(http.StatusForbidden, "AccessDenied"), testBucket, ErrAccessDenied},
		{"ServerError", respond(http.StatusInternalServerError, "InternalError"), testBucket, ErrRefused},
		// A HEAD answer has no body, so Delete and Stat cannot tell a missing bucket from
		// a missing key; every call with a body can.
		{"NoSuchBucket", fake, "no-such-bucket", ErrRefused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			f := NewFiles(tc.client, tc.bucket, "sessions/")
			b := NewBlobs(tc.client, tc.bucket, "sessions/")
			_, readErr := f.Read(ctx, "s1/a.txt")
			_, wiaErr := f.WriteIfAbsent(ctx, "s1/a.txt", []byte("x"))
			_, listErr := f.List(ctx, "s1")
			_, statErr := f.Stat(ctx, "s1/a.txt")
			_, putErr := b.Put(ctx, "s1", []byte("x"))
			errs := map[string]error{
				"Read": readErr, "Write": f.Write(ctx, "s1/a.txt", []byte("x")), "WriteIfAbsent": wiaErr,
				"List": listErr, "Blobs.Put": putErr, "Blobs.DeleteSession": b.DeleteSession(ctx, "s1"),
			}
			if tc.client != fake {
				errs["Delete"], errs["Stat"] = f.Delete(ctx, "s1/a.txt"), statErr
			}
			for op, err := range errs {
				if !errors.Is(err, tc.want) || errors.Is(err, store.ErrNotFound) {
					t.Errorf("%s: err = %v, want %v", op, err, tc.want)
					continue
				}
				if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), tc.bucket) {
					t.Errorf("%s: message %q leaks S3 text", op, err)
				}
				var apiErr smithy.APIError
				if !errors.As(err, &apiErr) {
					t.Errorf("%s: the S3 cause is not reachable with errors.As (%v)", op, err)
				}
			}
		})
	}
	t.Run("Canceled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := NewFiles(fake, testBucket, "").List(ctx, "")
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("List with a cancelled context: err = %v, want context.Canceled", err)
		}
	})
}

func namesUnder(dir string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = dir + n
	}
	return out
}

// writeAll writes each key (its own name as content) with a few writers in parallel.
func writeAll(t *testing.T, f *Files, keys []string) {
	t.Helper()
	work := make(chan string)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for key := range work {
				if err := f.Write(t.Context(), key, []byte(key)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	for _, key := range keys {
		work <- key
	}
	close(work)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
}

func BenchmarkFilesRead(b *testing.B) {
	for _, tc := range []struct {
		name string
		opts []Option
	}{{"Uncached", nil}, {"ETagCache304", []Option{WithETagCache()}}} {
		b.Run(tc.name, func(b *testing.B) {
			client, _ := newFake(b)
			f := NewFiles(client, testBucket, "specs/", tc.opts...)
			spec := bytes.Repeat([]byte("x"), 16<<10)
			if err := f.Write(b.Context(), "workflows/w/workflow.yaml", spec); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := f.Read(b.Context(), "workflows/w/workflow.yaml"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkFilesWriteIfAbsent(b *testing.B) {
	client, _ := newFake(b)
	f := NewFiles(client, testBucket, "sessions/")
	data := bytes.Repeat([]byte("x"), 1<<10)
	i := 0
	for b.Loop() {
		i++
		if _, err := f.WriteIfAbsent(b.Context(), fmt.Sprintf("_specs/%d.json", i), data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFilesList(b *testing.B) {
	client, _ := newFake(b)
	f := NewFiles(client, testBucket, "sessions/")
	for i := range 100 {
		if err := f.Write(b.Context(), fmt.Sprintf("s1/scratchpad/f%03d.md", i), []byte("x")); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		if _, err := f.List(b.Context(), "s1/scratchpad"); err != nil {
			b.Fatal(err)
		}
	}
}
