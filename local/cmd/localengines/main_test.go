package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/archmax-ai/archmax/core/upload"
)

// The S3 fake is seeded with what a deployment uploads (upload.Files, as infra's
// ReadWorkspace stages it): the fixture's workflows, skills and host file under the
// prefix, never its model scripts or its workflows' tests/.
func TestUploadDirIsTheDeploymentsSelection(t *testing.T) {
	const dir = "../../../fixtures/access-desk"
	b := s3mem.New()
	if err := b.CreateBucket("bk"); err != nil {
		t.Fatal(err)
	}
	if err := uploadDir(b, "bk", dir, "specs"); err != nil {
		t.Fatal(err)
	}
	list, err := b.ListBucket("bk", nil, gofakes3.ListBucketPage{})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, c := range list.Contents {
		keys = append(keys, c.Key)
	}
	files, err := upload.Files(dir)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, f := range files {
		want = append(want, "specs/"+f)
	}
	slices.Sort(keys)
	slices.Sort(want)
	if !slices.Equal(keys, want) {
		t.Errorf("seeded %q, want the deployment's %q", keys, want)
	}
	for _, k := range []string{"specs/archmax.host.yaml", "specs/workflows/access-request/workflow.yaml", "specs/skills/access-policy/SKILL.md"} {
		if !slices.Contains(keys, k) {
			t.Errorf("%s not seeded", k)
		}
	}
	for _, k := range keys {
		if strings.Contains(k, "/model-scripts/") || strings.Contains(k, "/tests/") || strings.Contains(k, ".archmax") {
			t.Errorf("seeded %s, which a deployment never uploads", k)
		}
	}
}
