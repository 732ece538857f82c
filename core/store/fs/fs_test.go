package fs

import (
	"testing"

	"github.com/archmax-ai/archmax/core/store"
	"github.com/archmax-ai/archmax/core/store/storetest"
)

func openStore(t testing.TB, dir string) *Store {
	t.Helper()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestLogConformance(t *testing.T) {
	storetest.TestLog(t, func(t *testing.T) store.Log { return openStore(t, t.TempDir()) })
}

func TestFilesConformance(t *testing.T) {
	storetest.TestFiles(t, func(t *testing.T) store.Files {
		f, err := OpenFiles(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	})
}

func BenchmarkCommit(b *testing.B) { storetest.BenchCommit(b, openStore(b, b.TempDir())) }
