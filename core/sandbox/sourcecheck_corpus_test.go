//go:build corpus

// Built only with -tags corpus: a measurement over files found on the machine, not a check.
// SANDBOX_SOURCE_CORPUS=list.txt go test -tags corpus -run TestSourceBoundCorpus ./core/sandbox/

package sandbox

import (
	"os"
	"strings"
	"testing"
)

// TestSourceBoundCorpus measures false refusals (DECISIONS Q17-20, Q17-23): it scans every file
// listed, one path a line, in the file SANDBOX_SOURCE_CORPUS names — real JavaScript found on
// the machine, e.g. `find / -name '*.js' -size +20k -size -2048k` — and reports each refused.
func TestSourceBoundCorpus(t *testing.T) {
	list := os.Getenv("SANDBOX_SOURCE_CORPUS")
	if list == "" {
		t.Fatal("set SANDBOX_SOURCE_CORPUS to a file listing JavaScript files")
	}
	data, err := os.ReadFile(list)
	if err != nil {
		t.Fatal(err)
	}
	paths := strings.Fields(string(data))
	scanned, refused := 0, 0
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil || len(b) > maxSourceBytes {
			continue
		}
		scanned++
		if e := checkSource(string(b)); e != nil {
			refused++
			t.Logf("refused %s: %s at %d", p, e.msg, e.off)
		}
	}
	t.Logf("scanned %d files, refused %d", scanned, refused)
	if refused > 0 {
		t.Errorf("%d of %d refused", refused, scanned)
	}
}
