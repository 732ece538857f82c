package workspace

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/archmax-ai/archmax/core/store"
	fsstore "github.com/archmax-ai/archmax/core/store/fs"
	"github.com/archmax-ai/archmax/core/store/memory"
	s3store "github.com/archmax-ai/archmax/core/store/s3"
)

// storeKind opens an empty file tree of one store implementation for a test.
type storeKind struct {
	name string
	open func(t testing.TB) store.Files
}

// storeKinds are the stores the workspace's tool tables run on: the same tables, so every
// store gives the model the same answers (BR-49).
var storeKinds = []storeKind{
	{"memory", func(testing.TB) store.Files { return memory.NewFiles() }},
	{"fs", openFSFiles},
	{"s3", openS3Files},
}

// fixtureFunc builds a fixture over one store kind.
type fixtureFunc func(testing.TB) *fixture

// onEachStore runs test once per store kind, as a subtest named after it; newFixture builds
// fixtures over that kind.
func onEachStore(t *testing.T, test func(t *testing.T, newFixture fixtureFunc)) {
	t.Helper()
	for _, kind := range storeKinds {
		t.Run(kind.name, func(t *testing.T) {
			test(t, func(tb testing.TB) *fixture { return newFixtureOn(tb, kind) })
		})
	}
}

// openFSFiles opens a file tree in a fresh temp directory.
func openFSFiles(t testing.TB) store.Files {
	t.Helper()
	f, err := fsstore.OpenFiles(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// fakeBucket is the bucket of newFakeS3; openS3Files serves the objects under s3Prefix.
const (
	fakeBucket = "workspace-test"
	s3Prefix   = "tree/"
)

// openS3Files opens the tree under s3Prefix of fakeBucket on a fresh in-memory S3.
func openS3Files(t testing.TB) store.Files {
	t.Helper()
	return s3store.NewFiles(newFakeS3(t), fakeBucket, s3Prefix)
}

// newFakeS3 starts an in-memory S3 (gofakes3) holding an empty fakeBucket and returns a
// real S3 client to it.
func newFakeS3(t testing.TB) *s3.Client {
	t.Helper()
	srv := httptest.NewServer(gofakes3.New(s3mem.New(), gofakes3.WithLogger(gofakes3.DiscardLog())).Server())
	t.Cleanup(srv.Close)
	client := s3.New(s3.Options{
		Region:           "us-east-1",
		Credentials:      credentials.NewStaticCredentialsProvider("AKIDTEST", "SECRET", ""),
		BaseEndpoint:     aws.String(srv.URL),
		UsePathStyle:     true,
		RetryMaxAttempts: 1,
	})
	if _, err := client.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(fakeBucket)}); err != nil {
		t.Fatal(err)
	}
	return client
}

func TestListingOrderIsUTF8Bytes(t *testing.T) { // BR-42, BR-49: every store lists in one order
	onEachStore(t, func(t *testing.T, newFixture fixtureFunc) {
		f := newFixture(t)
		for _, name := range []string{"é.md", "a.md", "B.md", "z/x.md", "_.md", "A-b.md"} {
			f.file(t, "scratchpad/"+name, "x")
		}
		want := "/scratchpad/A-b.md (1 bytes)\n/scratchpad/B.md (1 bytes)\n/scratchpad/_.md (1 bytes)\n" +
			"/scratchpad/a.md (1 bytes)\n/scratchpad/z/ (directory)\n/scratchpad/é.md (1 bytes)"
		if got := f.text(t, "ls", `{"path":"/scratchpad"}`); got != want {
			t.Errorf("ls =\n%s\nwant\n%s", got, want)
		}
	})
}

func TestS3FolderMarker(t *testing.T) { // BR-49: a zero-byte key ending in "/" is no file
	client := newFakeS3(t)
	for key, body := range map[string]string{
		s3Prefix + sid + "/scratchpad/empty/": "", // a console "folder marker"
		s3Prefix + sid + "/scratchpad/a.txt":  "hello",
	} {
		if _, err := client.PutObject(t.Context(), &s3.PutObjectInput{
			Bucket: aws.String(fakeBucket), Key: aws.String(key), Body: strings.NewReader(body),
		}); err != nil {
			t.Fatal(err)
		}
	}
	f := &fixture{ws: New(s3store.NewFiles(client, fakeBucket, s3Prefix), sid, nil)}
	tests := []struct{ tool, args, want string }{
		{"ls", `{"path":"/scratchpad"}`, "/scratchpad/a.txt (5 bytes)\n/scratchpad/empty/ (directory)"},
		{"ls", `{"path":"/scratchpad/empty"}`, "No files found in /scratchpad/empty"},
		{"read_file", `{"file_path":"/scratchpad/empty"}`, "Error: File '/scratchpad/empty' not found"},
		{"write_file", `{"file_path":"/scratchpad/empty","content":"x"}`, "Error: Cannot write '/scratchpad/empty': it is a directory; this tool works on one file."},
		{"copy_file", `{"source":"/scratchpad/empty","destination":"/scratchpad/b.txt"}`, "Error: Cannot copy 'scratchpad/empty': it is a directory; this tool works on one file."},
		{"copy_file", `{"source":"/scratchpad/a.txt","destination":"/scratchpad/empty"}`, "Error: Cannot copy to 'scratchpad/empty': it is a directory; this tool works on one file."},
		{"remove_file", `{"file_path":"/scratchpad/empty"}`, "Error: Cannot remove 'scratchpad/empty': it is a directory; this tool works on one file."},
		{"glob", `{"pattern":"**/*"}`, "/scratchpad/a.txt"},
	}
	for _, tt := range tests {
		if got := f.text(t, tt.tool, tt.args); got != tt.want {
			t.Errorf("%s %s =\n%q\nwant\n%q", tt.tool, tt.args, got, tt.want)
		}
	}
}
