package fs

import (
	"testing"

	"github.com/archmax-ai/archmax/core/store/storetest"
)

func TestSessionDeleteConformance(t *testing.T) {
	storetest.TestSessionDelete(t, func(t *testing.T) storetest.Stores {
		f, err := OpenFiles(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return storetest.Stores{Log: openStore(t, t.TempDir()), Files: f}
	})
}
