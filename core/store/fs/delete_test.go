package fs

import (
	"testing"

	"github.com/archmax-ai/archmax/core/store"
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

func TestHeadExpiryConformance(t *testing.T) {
	storetest.TestHeadExpiry(t, func(t *testing.T) store.Log { return openStore(t, t.TempDir()) })
}
