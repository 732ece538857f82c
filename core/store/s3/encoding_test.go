package s3store

import (
	"slices"
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/core/store"
)

// BR-49: keys with a control character (U+0001), "%", "+" or a space list and delete as
// themselves, and DeleteFolder counts only what S3 really deleted.
func TestKeysThatXMLCannotCarry(t *testing.T) {
	client, _ := newFake(t)
	ctx := t.Context()
	f := NewFiles(client, testBucket, "sessions/")
	names := []string{"a\x01b.txt", "100% + more.txt", "plain.txt"}
	dirs := []string{"ctl\x01dir", "p%2B+q"}
	for _, n := range names {
		if err := f.Write(ctx, "s1/"+n, []byte(n)); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range dirs {
		if err := f.Write(ctx, "s1/"+d+"/f", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}

	entries, err := f.List(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	var want []store.FileInfo
	for _, n := range names {
		want = append(want, store.FileInfo{Name: n, Size: int64(len(n))})
	}
	for _, d := range dirs {
		want = append(want, store.FileInfo{Name: d, Dir: true})
	}
	slices.SortFunc(want, func(a, b store.FileInfo) int { return strings.Compare(a.Name, b.Name) })
	if !slices.Equal(entries, want) {
		t.Fatalf("List = %+v\nwant %+v", entries, want)
	}
	if fi, err := f.Stat(ctx, "s1/ctl\x01dir"); err != nil || !fi.Dir {
		t.Fatalf("Stat of the control-character folder = %+v, %v", fi, err)
	}

	n, err := f.DeleteFolder(ctx, "s1")
	if err != nil || n != len(names)+len(dirs) {
		t.Fatalf("DeleteFolder = %d, %v; want %d", n, err, len(names)+len(dirs))
	}
	if left, err := NewFiles(client, testBucket, "").List(ctx, ""); err != nil || len(left) != 0 {
		t.Fatalf("after DeleteFolder the bucket holds %+v, %v; want nothing", left, err)
	}
}
